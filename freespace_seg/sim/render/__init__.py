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
A vectorized numpy ray caster for :class:`~freespace_seg.sim.scene.Scene`.

Every pixel's ray (from :mod:`freespace_seg.ground.geometry`) is intersected analytically with the
floor plane, the ceiling, the vertical walls of the room outline, oriented boxes (slab test in
the box frame) and vertical finite cylinders; the nearest hit wins. Obstacles are only tested
in the image rectangle that their bounding box projects to. The ground-truth mask comes from
the same casting: a pixel is free (1) iff its ray first hits the floor plane inside the room
at a point not covered by an obstacle footprint (rugs and markings are floor, so free); walls,
doors, obstacles, glass panes and their frames, steps and platforms (their tops too), things
on the walls, anything above the floor, the ceiling and the sky are 0. With lens distortion
(plumb_bob, as CameraInfo D) each pixel centre is undistorted exactly (Newton steps on the
model) to give its ray, and the screen rectangles are mapped through the lens, so the labels
stay exact for the distorted image.

Glass panes (boxes of a ``glass`` material) are transparent: where a ray first hits one (the
pixel stays blocked, its depth is the pane's), the ray is cast again without the panes and
what it finds is shaded, tinted by the glass and overlaid with a faint Fresnel sheen and
highlights. A glossy floor (``Appearance.floor_reflectivity``) mirrors the room: for floor
pixels the mirrored ray (from the mirrored camera below the floor, which is the reflected
ray from the floor point) is cast through the same scene code (glass panes are left out of
reflections) and shaded, optionally blurred by roughness, and blended into the floor with a
Fresnel-like weight; rugs and mats do not reflect. Labels do not change: a reflection is on
free floor.

Flat things on the walls (:class:`~freespace_seg.sim.scene.WallDecal`: posters with a
photo-like procedural picture and lines of text, framed pictures, whiteboards with marker
strokes, switches and sockets) are drawn on the wall like doors. The tread of a step continues
the floor's pattern (it is shaded from world coordinates, without the darkening near the floor
that other low surfaces get), so a step of the floor's own material shows only by its edge,
its shading and its shadow.

Shading (linear RGB): procedural materials from world or surface coordinates with a simple
pixel-footprint filter against aliasing (``photo`` materials and photo pictures sample a real
photo of the texture bank, :mod:`.photos`, bilinearly from the mip level that fits the
footprint), Lambert and Blinn-Phong lighting from point lights
plus ambient, shadows cast by obstacles on the floor (from top-down shadow maps, soft for area
lights), contact darkening near the floor; then a camera model: auto exposure with error,
white balance, vignetting, blur, shot and read noise, gamma and JPEG artefacts.
"""

from dataclasses import dataclass
import math

from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
from freespace_seg.sim.randomization import (default_intrinsics, default_mount, jitter_camera,
                                             RandomizationConfig)
from freespace_seg.sim.render.cast import (_cast, _object_points, ID_CEILING, ID_FLOOR, ID_NONE,
                                           ID_WALL0)
from freespace_seg.sim.render.glass import (_composite_glass, _glass_flags, _reflect_floor,
                                            _see_through)
from freespace_seg.sim.render.rays import _screen_rects, camera_in_world, world_rays
from freespace_seg.sim.render.sensor import _camera
from freespace_seg.sim.render.shading import _shade
from freespace_seg.sim.render.textures import material_albedo
from freespace_seg.sim.scene import make_scene, Scene
import numpy as np

__all__ = [
    'camera_in_world', 'Frame', 'free_mask', 'ID_CEILING', 'ID_FLOOR', 'ID_NONE', 'ID_WALL0',
    'material_albedo', 'random_sample', 'render', 'world_rays'
]


@dataclass
class Frame:
    """
    One rendered camera frame with its exact labels.

    ``image``: (H, W, 3) uint8 RGB. ``free``: (H, W) uint8, 1 where the pixel's ray first hits
    free floor. ``depth``: (H, W) float32 ray length to the first hit in metres (inf for
    nothing). ``robot_pose``: (x, y, yaw) of base_link in the world; ``mount``: the camera in
    base_link. ``scene``: the scene it was rendered from (for exact top-down truth).
    """

    image: np.ndarray
    free: np.ndarray
    depth: np.ndarray
    intrinsics: CameraIntrinsics
    mount: CameraMount
    robot_pose: tuple
    scene: Scene = None


# --- public API ------------------------------------------------------------------------

def render(scene, intrinsics, mount, robot_pose=(0.0, 0.0, 0.0), rng=None, randomization=None):
    """
    Render ``scene`` seen by a camera ``mount``-ed on a robot at ``robot_pose``.

    ``robot_pose`` is (x, y, yaw) of base_link in the world; ``mount`` is the camera pose in
    base_link. ``rng`` (a numpy Generator) draws the camera effects (exposure error, white
    balance, vignetting, blur, noise, JPEG) that ``randomization`` enables; without an ``rng``
    the image is clean and deterministic. A glossy floor (``Appearance.floor_reflectivity``)
    reflects only while ``randomization.reflections`` is on. Returns a :class:`Frame`.
    """
    config = randomization if randomization is not None else RandomizationConfig()
    origin, r_wo = camera_in_world(mount, robot_pose)
    _, dx, dy, dz = world_rays(intrinsics, mount, robot_pose)
    rects = _screen_rects(_object_points(scene), origin, r_wo, intrinsics)
    t, ids = _cast(scene, origin, dx, dy, dz, rects)
    free = (ids == ID_FLOOR).astype(np.uint8)
    glass = _glass_flags(scene)
    t_seen, ids_seen, pane = t, ids, None
    if glass is not None:
        t_seen, ids_seen, pane = _see_through(scene, origin, dx, dy, dz, t, ids, rects, glass)
    rad = _shade(scene, intrinsics, origin, dx, dy, dz, t_seen, ids_seen, rects, config)
    if config.reflections and scene.appearance.floor_reflectivity > 0.0:
        _reflect_floor(rad, scene, intrinsics, origin, r_wo, dx, dy, dz, t_seen, ids_seen,
                       config, glass)
    if pane is not None and pane.any():
        _composite_glass(rad, scene, origin, dx, dy, dz, t, ids, pane, config)
    image = _camera(rad, scene, rng, config)
    pose = tuple(float(v) for v in robot_pose)
    return Frame(image, free, t, intrinsics, mount, pose, scene)


def free_mask(scene, intrinsics, mount, robot_pose=(0.0, 0.0, 0.0)):
    """
    Return only the exact free-floor mask of :func:`render` ((H, W) uint8, 1 = free).

    The same rays and the same casting as ``render``'s ``Frame.free``, without shading (about
    a tenth of the time): for label checks that need no image.
    """
    origin, r_wo = camera_in_world(mount, robot_pose)
    _, dx, dy, dz = world_rays(intrinsics, mount, robot_pose)
    rects = _screen_rects(_object_points(scene), origin, r_wo, intrinsics)
    _, ids = _cast(scene, origin, dx, dy, dz, rects)
    return (ids == ID_FLOOR).astype(np.uint8)


def _camera_is_clear(scene, mount, pose, margin=0.05):
    """Check that the camera centre is not inside or just under a raised object's top."""
    origin, _ = camera_in_world(mount, pose)
    for obj in scene.obstacles:
        if obj.standing:
            continue
        if obj.distance_xy(origin[0], origin[1]) <= margin and origin[2] > obj.bottom - margin:
            return False
    return True


def _pick_heading(rng, scene, x, y):
    """
    Pick a heading for the robot at (x, y).

    40 % of the time towards the most open floor, 40 % towards something blocked about
    1-3 m ahead (so that obstacles and walls are in view, not filling it), else any.
    """
    yaws = rng.uniform(-math.pi, math.pi, 12)
    choice = rng.random()
    if choice >= 0.8:
        return float(yaws[0])
    steps = np.linspace(0.25, 5.0, 20)
    xs = x + np.cos(yaws)[:, None] * steps
    ys = y + np.sin(yaws)[:, None] * steps
    blocked = scene.blocked_top_down(xs, ys)
    reach = np.where(blocked.any(axis=1), steps[np.argmax(blocked, axis=1)], 1e3)
    if choice < 0.4:
        return float(yaws[int(np.argmax(reach))])
    target = float(rng.uniform(1.0, 3.0))
    return float(yaws[int(np.argmin(np.abs(reach - target)))])


def random_sample(rng, intrinsics=None, randomization=None):
    """
    One training sample: a new random scene, a free robot pose and a jittered camera.

    ``intrinsics`` defaults to :func:`default_intrinsics` (640x360); with ``pose_jitter`` the
    camera height, pitch, roll, yaw and field of view vary within the config's ranges around
    :func:`default_mount` and ``intrinsics``.
    """
    config = randomization if randomization is not None else RandomizationConfig()
    base_intrinsics = intrinsics if intrinsics is not None else default_intrinsics()
    # Drawn only when the factor is on: with it off every seed gives the frames it always gave.
    close = config.close_views > 0.0 and rng.random() < config.close_views
    for _ in range(20):
        scene = make_scene(rng, config)
        cam_intrinsics, mount = jitter_camera(rng, base_intrinsics, default_mount(), config)
        for _ in range(10):
            try:
                if close:
                    x, y, yaw = _close_pose(rng, scene, config.robot_clearance)
                else:
                    x, y, _yaw = scene.sample_free_pose(rng, clearance=config.robot_clearance)
                    yaw = _pick_heading(rng, scene, x, y)
            except RuntimeError:
                break
            pose = (x, y, yaw)
            if _camera_is_clear(scene, mount, pose):
                return render(scene, cam_intrinsics, mount, pose, rng, config)
    raise RuntimeError('could not place a robot in 20 random scenes')


#: how much farther than ``robot_clearance`` the nearest blocked thing of a close view may be
CLOSE_VIEW_BAND = 0.15


def _close_pose(rng, scene, clearance, attempts=64):
    """
    Return a robot pose close to a wall or an obstacle, facing it (``close_views``).

    The nearest blocked thing is ``clearance`` to ``clearance`` + :data:`CLOSE_VIEW_BAND` m
    from the robot centre; the heading points at it, within 0.3 rad. Raises RuntimeError
    when no such place is found.
    """
    yaws = np.linspace(-math.pi, math.pi, 72, endpoint=False)
    steps = np.linspace(0.05, 1.0, 39)
    for _ in range(attempts):
        x, y, _ = scene.sample_free_pose(rng, clearance=clearance)
        if scene.clearance(x, y) > clearance + CLOSE_VIEW_BAND:
            continue
        blocked = scene.blocked_top_down(x + np.cos(yaws)[:, None] * steps,
                                         y + np.sin(yaws)[:, None] * steps)
        reach = np.where(blocked.any(axis=1), steps[np.argmax(blocked, axis=1)], np.inf)
        if not np.isfinite(reach).any():
            continue
        yaw = float(yaws[int(np.argmin(reach))] + rng.uniform(-0.3, 0.3))
        return x, y, float(math.atan2(math.sin(yaw), math.cos(yaw)))
    raise RuntimeError(f'no place within {clearance + CLOSE_VIEW_BAND:g} m of a wall or obstacle')
