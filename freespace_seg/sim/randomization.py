# Copyright 2026 freespace_seg maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Domain-randomization settings and the default (TurtleBot 4 like) camera.

Every randomized factor is a boolean switch in :class:`RandomizationConfig`; all are on by
default. Switching a factor off does not remove the effect altogether but replaces the random
draw by a fixed, neutral choice (for example ``lighting=False`` gives one white light above the
room centre, ``floor_materials=False`` a plain grey floor, ``pose_jitter=False`` the nominal
camera). Scene-level factors are drawn by :func:`freespace_seg.sim.make_scene`, camera
(image-level) factors by :func:`freespace_seg.sim.render` when it is given an ``rng``.
"""

import copy
from dataclasses import asdict, dataclass, fields, replace
import math

from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
import numpy as np

DEFAULT_HFOV_DEG = 69.0

#: Appearance styles: the training one, a held-out one for evaluation, and the held-out one
#: with one floor in every room (a user's own floor, for the own-floor loop).
STYLES = ('default', 'shifted', 'one_floor')

#: The styles with the held-out (shifted) look.
SHIFTED_STYLES = ('shifted', 'one_floor')

# Allowed camera ranges (metres above the floor; radians, positive tilts down, REP 103). The
# rooms are 2.6 m high; the camera must look at the floor's side of the horizon at least a bit.
CAMERA_HEIGHT_LIMITS = (0.05, 2.0)
CAMERA_PITCH_LIMITS = (-0.5, 1.4)


def check_range(value, low, high, name):
    """Return ``value`` as a float ``(min, max)`` inside ``[low, high]``; ValueError if not."""
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f'{name}: expected two numbers (min, max), got {value!r}') from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f'{name}: expected min <= max, got {lo:g}, {hi:g}')
    if lo < low or hi > high:
        raise ValueError(f'{name}: {lo:g}..{hi:g} is outside the allowed {low:g}..{high:g}')
    return lo, hi


@dataclass(frozen=True)
class RandomizationConfig:
    """
    Switches and ranges for the synthetic data.

    Scene content (drawn in ``make_scene``):

    * ``obstacles``: boxes, cylinders, furniture and low objects (off: an empty room).
    * ``furniture``: tables and chairs, i.e. groups of thin legs with raised tops.
    * ``low_objects``: thin, low things on the floor (books, shoes, cables, toys).
    * ``l_shaped_rooms``: some rooms are L-shaped instead of rectangular.
    * ``doors``: closed doors in the walls.
    * ``decals``: rugs, mats and tape markings; they are floor, hence free.
    * ``glass``: in some rooms (30 %) a glass partition, screen or door standing on the floor:
      one to three panes with a frame (stiles, top rail), always a bottom rail or kick plate,
      sometimes a frosted band or a push bar. It is blocked, although the renderer shows what
      lies behind it, tinted, with a faint sheen (off: no glass).
    * ``steps``: in some rooms (35 %) one or two low steps, curbs or raised platforms standing
      on the floor, 3-20 cm high: a platform along part of a wall (sometimes with a lower
      step in front of it), a low stage in a corner, a raised floor section in the room, a
      curb-like ridge from a wall into the room or a threshold ridge at a door. Their top is
      of the floor's own material in 40 % of them (only the edge, its shading and the shadow
      tell it apart), else of another floor or object material, sometimes with a contrasting
      edge strip. Blocked, the top too: it is not at z = 0. They keep passages of 0.7 m
      open (off: no steps).
    * ``wall_clutter``: in most rooms (70 %) things on the walls: posters, framed pictures,
      whiteboards, light switches and sockets drawn on the wall, and radiators, shelves
      (sometimes with books) and wall-mounted screens in front of it. All are blocked (they
      are wall or above the floor); none of them reaches the floor except a radiator on
      feet and pipes (their footprints are blocked), so the floor under a radiator or a
      shelf is free where it is seen (off: bare walls).
    * ``photo_textures``: real photos (a small bank of CC0 and public-domain photos shipped
      in ``freespace_seg/sim/textures``) as textures: on 35 % of the obstacle
      materials (not glass, not the floor's own material; with ``object_textures``), on the
      walls of 30 % of the rooms, tiled (with ``wall_textures``; not in the ``shifted``
      style) and in half of the posters and pictures on the walls, each with a random scale
      (metres per repeat), rotation, offset and colour gain. The floor (see
      ``floor_photos``) and rugs stay procedural. Drawn from a side stream: geometry and
      labels are the same on and off (off: procedural textures only).
    * ``floor_photos``: in 20 % of the rooms the floor itself is a tiled photo of the same
      bank (0.5-2 m per repeat, any rotation; with ``floor_materials``, not in the
      ``shifted`` style), and objects of the floor's own material follow it. Still free: a
      busy texture alone must not read as an obstacle (patterned carpet, printed mats,
      stained concrete). Rugs and markings stay. Drawn from a side stream: geometry and labels
      are the same on and off (off: procedural floors only).
    * ``object_floor_photos``: the floor photos may be any photo of the bank, objects and
      scenes too (an astronaut, a rocket, a cat, a coffee cup, text). Off: only the
      texture-like crops (brick, gravel, grass, fur, wood), as real floors look; an
      ImageNet-pretrained encoder learns from photos of objects on the floor that real objects
      at the bottom of a picture can be floor. Drawn from the same side stream: the same rooms
      get a photo floor on and off (off: texture-like floor photos only).
    * ``stone_floors``: in 15 % of the rooms (19 % of those without a photo floor; with
      ``floor_materials``) the floor is polished stone: veined marble (veins along the zero
      lines of smooth noise, 0.15-0.8 m apart; light in 70 %) or speckled granite (grains
      2-8 mm), as one slab or as tiles 0.3-1 m wide with thin joints; glossy, and half of
      those not glossy yet mirror the room (reflectivity 0.1-0.4, with ``reflections``).
      Objects of the floor's material follow it. Drawn from a side stream: geometry and
      labels are the same on and off (off: no stone floors).
    * ``pale_rooms``: about 15 % of the rooms (55 % of the corridor-like ones, at least 2.5
      times as long as wide and at most 3.5 m wide, 14 % of the others; not on a photo floor;
      with ``wall_textures`` and ``floor_materials``) are pale: white or off-white walls,
      a white or light grey baseboard or none, a white ceiling, the floor's pattern in light,
      low-contrast colours and glossy, a mirror in 70 % of them (with ``reflections``),
      2-5 bright neutral or cool lights along the room (with ``lighting``) and a camera that
      meters for the bright room. The bright corridor look. Drawn from a side stream:
      geometry and labels are the same on and off (off: no pale rooms).
    * ``floorlike_tops``: in half of the rooms, 80 % of the raised tops (tabletops, chair
      seats, boxes up to 1.2 m: benches, beds, sofa seats; books, shoe boxes and toy boxes on
      the floor; steps and platforms; shelf boards) take the floor's material and gloss
      (steps the floor itself, the rest in a phase and direction of their own; with
      ``object_textures``). Only geometry and shading tell them from the floor; they stay
      blocked. Drawn from a side stream: geometry and labels are the same on and off (off:
      tops keep their materials).

    The three factors above act in the default style only, and each after the floor photos:
    a room with a photo floor gets neither stone nor pale colours.

    Scene appearance (drawn in ``make_scene``):

    * ``floor_materials``: wood, tiles, carpet, concrete, vinyl (off: plain grey).
    * ``wall_textures``: wall paint colours, textures, baseboards (off: light grey walls).
    * ``object_textures``: obstacle colours and textures (off: mid grey).
    * ``lighting``: 1-3 lights of random position and power plus ambient (off: one light).
    * ``shadows``: hard or soft shadows and contact darkening on the floor (off: none).
    * ``specular``: glossy floors and objects (off: matte everything).
    * ``reflections``: in some rooms (40 %) the floor is glossy and mirrors the room (walls,
      doors, objects, lamps) with a reflectivity of 0.1-0.5 that grows towards grazing angles,
      sharp or blurred by roughness; the floor stays free (off: no mirror reflections).
    * ``color_temperature``: warm or cool light colours and white-balance error (off: white).

    Camera (drawn in ``render`` when it gets an ``rng``; in ``random_sample``):

    * ``exposure``: exposure error and gamma (off: auto exposure to mid grey, gamma 2.2).
    * ``noise``: shot and read noise.
    * ``blur``: defocus or motion blur.
    * ``vignetting``: darker image corners.
    * ``compression``: JPEG artefacts.
    * ``pose_jitter``: camera height, pitch, roll, yaw and field of view around the
      nominal ones (``random_sample`` only).
    * ``lens_distortion``: plumb_bob lens distortion in 65 % of the frames: k1 in
      [-0.3, 0.1] (barrel for wide lenses, mild pincushion), k2 = -k1 times [0, 0.4], small
      tangential p1, p2 (sd 0.001), k3 = 0; a draw that would fold the image (the radial map
      not monotonic out past the image corners) is shrunk towards no distortion. It ends up
      in the frame's ``intrinsics.distortion`` (CameraInfo D); rays, hence labels, follow it
      exactly. A camera that already has distortion keeps it (off: the pinhole camera).

    Ranges: ``room_size`` (metres, each side), ``max_obstacles`` (object groups per room),
    ``camera_height`` and ``camera_pitch`` (uniform ranges, metres and radians),
    ``camera_roll`` and ``camera_yaw`` (half ranges, radians), ``hfov_jitter_deg`` (half range)
    and ``robot_clearance`` (metres from the robot centre to anything blocked).

    ``close_views`` (a share in [0, 1], default 0: off, so that every seed draws the frames it
    always drew): that share of the frames puts the robot close to a wall or an obstacle,
    facing it: a place where the nearest blocked thing is ``robot_clearance`` to
    ``robot_clearance`` + 0.15 m from the robot centre, the heading towards it (within
    ±0.3 rad). The camera then sees little or no floor: the view of a robot that has driven up
    to a wall, which the default headings (open floor, or something 1-3 m ahead) leave out.

    ``style`` picks the appearance families: ``'default'`` (what training uses) or
    ``'shifted'``, a held-out look for evaluation that training never sees: terrazzo,
    herringbone parquet and saturated studded rubber floors, brick and stone walls, and one
    strong low-angle light (often coloured) with little ambient light. The style changes
    appearance only: with the same seed a ``'shifted'`` scene has the same room, obstacles,
    camera and pose, hence the same ground truth, as the ``'default'`` one. ``'one_floor'``
    is the ``'shifted'`` look with one floor in every room, a matte crimson studded rubber
    (:data:`freespace_seg.sim.scene.materials.ONE_FLOOR`): a user's own floor that the
    default model handles badly, for the own-floor loop in simulation.
    """

    obstacles: bool = True
    furniture: bool = True
    low_objects: bool = True
    l_shaped_rooms: bool = True
    doors: bool = True
    decals: bool = True
    glass: bool = True
    steps: bool = True
    wall_clutter: bool = True
    photo_textures: bool = True
    floor_photos: bool = True
    object_floor_photos: bool = True
    stone_floors: bool = True
    pale_rooms: bool = True
    floorlike_tops: bool = True
    floor_materials: bool = True
    wall_textures: bool = True
    object_textures: bool = True
    lighting: bool = True
    shadows: bool = True
    specular: bool = True
    reflections: bool = True
    color_temperature: bool = True
    exposure: bool = True
    noise: bool = True
    blur: bool = True
    vignetting: bool = True
    compression: bool = True
    pose_jitter: bool = True
    lens_distortion: bool = True
    room_size: tuple = (2.0, 10.0)
    max_obstacles: int = 20
    camera_height: tuple = (0.1, 0.5)
    camera_pitch: tuple = (0.0, 0.6)
    camera_roll: float = 0.05
    camera_yaw: float = 0.05
    hfov_jitter_deg: float = 10.0
    robot_clearance: float = 0.25
    close_views: float = 0.0
    style: str = 'default'

    def __post_init__(self):
        """Check ``style`` and the camera ranges."""
        if self.style not in STYLES:
            raise ValueError(f'unknown randomization style {self.style!r}; '
                             f'expected one of {", ".join(STYLES)}')
        for name, (low, high) in (('camera_height', CAMERA_HEIGHT_LIMITS),
                                  ('camera_pitch', CAMERA_PITCH_LIMITS)):
            check_range(getattr(self, name), low, high, name)
        share = self.close_views
        if isinstance(share, bool) or not isinstance(share, (int, float)) or \
                not 0.0 <= share <= 1.0:
            raise ValueError(f'close_views must be a share in [0, 1], got {share!r}')

    @classmethod
    def switches(cls):
        """Names of the boolean factors, in declaration order."""
        return tuple(f.name for f in fields(cls) if f.type in (bool, 'bool'))

    @classmethod
    def none(cls, **overrides):
        """Return a config with every factor off (a fixed, neutral world), then ``overrides``."""
        values = dict.fromkeys(cls.switches(), False)
        values.update(overrides)
        return cls(**values)

    def without(self, *names):
        """Return a copy with the named factors switched off."""
        unknown = set(names) - set(self.switches())
        if unknown:
            raise ValueError(f'unknown randomization factors: {sorted(unknown)}')
        return replace(self, **dict.fromkeys(names, False))

    def to_dict(self):
        """Return a JSON-friendly dict (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f'unknown randomization keys: {sorted(unknown)}')
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def default_intrinsics(width=640, height=360):
    """Return an OAK-D-like colour camera: HFOV 69 deg, square pixels, centred principal point."""
    return CameraIntrinsics.from_fov(int(width), int(height), math.radians(DEFAULT_HFOV_DEG))


def default_mount():
    """Return the TurtleBot 4 like front camera: 0.25 m above the floor, pitched 0.3 rad down."""
    return CameraMount(x=0.0, y=0.0, z=0.25, roll=0.0, pitch=0.3, yaw=0.0)


#: Salt of the side stream (see :func:`side_rng`) of the lens distortion draw.
LENS_SALT = 0x1e25


def side_rng(rng, salt):
    """Return a generator seeded from ``rng``'s state and ``salt`` without advancing ``rng``."""
    words = copy.deepcopy(rng).integers(0, 1 << 32, 4)
    return np.random.default_rng([int(salt)] + [int(w) for w in words])


def radial_fold(distortion, limit=4.0):
    """
    Return the normalized radius where the radial part of plumb_bob ``distortion`` folds.

    That is the first r > 0 where d/dr [r (1 + k1 r^2 + k2 r^4 + k3 r^6)] drops to 0 (inf
    when it does not before ``limit``): beyond it the distortion is not invertible.
    """
    d = tuple(float(v) for v in distortion) + (0.0,) * 5
    k1, k2, k3 = d[0], d[1], d[4]
    r = np.linspace(0.0, limit, 4001)
    r2 = r * r
    slope = 1.0 + r2 * (3.0 * k1 + r2 * (5.0 * k2 + 7.0 * k3 * r2))
    bad = np.flatnonzero(slope <= 0.0)
    return float(r[bad[0]]) if bad.size else math.inf


def lens_is_valid(intrinsics, distortion, margin=1.2, max_radius=math.tan(math.radians(65.0))):
    """
    Check that ``distortion`` on ``intrinsics`` maps the whole image one to one.

    The radial map r -> r (1 + k1 r^2 + k2 r^4 + k3 r^6) must rise steeply (slope above 0.3)
    until it reaches ``margin`` times the distorted radius of the farthest image corner, and
    the undistorted corners must stay within ``max_radius`` (65 degrees off the axis).
    """
    k = intrinsics
    d = tuple(float(v) for v in distortion) + (0.0,) * 5
    k1, k2, k3 = d[0], d[1], d[4]
    corner = max(math.hypot((u - k.cx) / k.fx, (v - k.cy) / k.fy)
                 for u in (-0.5, k.width - 0.5) for v in (-0.5, k.height - 0.5))
    r = np.linspace(0.0, max_radius, 2001)
    r2 = r * r
    f = r * (1.0 + r2 * (k1 + r2 * (k2 + k3 * r2)))
    slope = 1.0 + r2 * (3.0 * k1 + r2 * (5.0 * k2 + 7.0 * k3 * r2))
    steep = slope > 0.3
    end = int(np.argmin(steep)) if not steep.all() else r.size
    return bool(end > 0 and f[:end].max() >= margin * corner)


def random_lens_distortion(rng, intrinsics):
    """
    Draw plumb_bob distortion (k1, k2, p1, p2, k3) for ``intrinsics``, or () for none (35 %).

    k1 in [-0.3, 0.1] (barrel for wide lenses, mild pincushion), k2 = -k1 times [0, 0.4],
    p1 and p2 normal with sd 0.001 (clipped to 0.003), k3 = 0; a draw that would fold the
    image (see :func:`lens_is_valid`) is halved, up to six times, then dropped.
    """
    if rng.random() >= 0.65:
        return ()
    k1 = float(rng.uniform(-0.3, 0.1))
    k2 = -k1 * float(rng.uniform(0.0, 0.4))
    p1, p2 = (float(v) for v in np.clip(rng.normal(0.0, 0.001, 2), -0.003, 0.003))
    for _ in range(7):
        d = (k1, k2, p1, p2, 0.0)
        if lens_is_valid(intrinsics, d):
            return d
        k1, k2 = k1 / 2.0, k2 / 2.0
    return ()


def jitter_camera(rng, intrinsics, mount, config):
    """
    Draw a camera around ``intrinsics`` and ``mount`` within the config's ranges.

    Returns ``(intrinsics, mount)``. ``config.pose_jitter`` varies the pose and the field of
    view, ``config.lens_distortion`` adds lens distortion to a camera that has none (drawn
    from a side stream of ``rng``, so that the other draws do not depend on it); unchanged
    when both are off.
    """
    lens = side_rng(rng, LENS_SALT) if config.lens_distortion else None
    if config.pose_jitter:
        intrinsics, mount = _jitter_pose(rng, intrinsics, mount, config)
    if lens is not None and not intrinsics.has_distortion:
        distortion = random_lens_distortion(lens, intrinsics)
        if distortion:
            intrinsics = replace(intrinsics, distortion=distortion)
    return intrinsics, mount


def _jitter_pose(rng, intrinsics, mount, config):
    height = float(rng.uniform(*config.camera_height))
    pitch = float(rng.uniform(*config.camera_pitch))
    roll = float(rng.uniform(-config.camera_roll, config.camera_roll))
    yaw = float(rng.uniform(-config.camera_yaw, config.camera_yaw))
    new_mount = replace(mount, z=height, pitch=pitch, roll=roll, yaw=yaw)
    hfov = 2.0 * math.atan(intrinsics.width / (2.0 * intrinsics.fx))
    hfov += math.radians(float(rng.uniform(-config.hfov_jitter_deg, config.hfov_jitter_deg)))
    hfov = min(max(hfov, math.radians(30.0)), math.radians(120.0))
    scale = (intrinsics.width / 2.0) / math.tan(hfov / 2.0) / intrinsics.fx
    cx = intrinsics.cx + float(rng.normal(0.0, 0.01)) * intrinsics.width
    cy = intrinsics.cy + float(rng.normal(0.0, 0.01)) * intrinsics.height
    new_intrinsics = CameraIntrinsics(intrinsics.width, intrinsics.height,
                                      intrinsics.fx * scale, intrinsics.fy * scale, cx, cy,
                                      intrinsics.distortion)
    return new_intrinsics, new_mount
