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

"""The room's data model: materials, boxes, cylinders, doors, decals, lights, the scene."""

from dataclasses import dataclass, field, replace
import math

from freespace_seg.sim.randomization import side_rng
import numpy as np


#: A primitive whose bottom is at most this high (metres) stands on the floor.
FOOTPRINT_EPS = 1e-6


def _tuple3(values):
    return tuple(float(v) for v in values)


@dataclass(frozen=True)
class Material:
    """
    Procedural surface appearance, evaluated from surface coordinates in metres.

    ``kind`` is one of ``plain``, ``noise`` (carpet, fabric, concrete), ``wood`` (planks of
    width ``scale`` and length ``scale2``), ``tile`` (tiles of size ``scale``, grout of width
    ``scale2`` in ``color2``), ``checker`` (tiles alternating ``color`` and ``color2``) or
    ``stripes`` (bands of period ``scale``). The ``shifted`` style adds ``terrazzo`` (chips
    of ``color2`` on a cell grid of ``scale``, a fraction ``scale2`` of the cells), ``herringbone``
    (planks of width ``scale`` and length ``scale2``), ``studded`` (round studs of ``color2``
    every ``scale``, radius ``scale2`` times that) and ``brick`` (courses ``scale`` high, mortar
    ``scale2`` wide in ``color2``). Colours are linear RGB albedos in [0, 1].
    ``variation`` scales the noise and per-element colour variation; ``specular`` and
    ``shininess`` set Blinn-Phong highlights.

    ``photo`` maps a real photo of the texture bank (see :mod:`.photos`): ``seed`` is the
    texture's index, ``scale`` the metres per repeat of its longer side (tiled, wrapping
    around), ``angle`` and ``offset`` place it, ``color`` is a colour gain that multiplies
    it; ``color2`` keeps the colour of the material it replaced.

    ``glass`` is a transparent pane: ``color`` is its transmittance (the tint of what is seen
    through it), ``scale2`` the reflectance of its faint sheen (added to a Fresnel term) and
    ``scale`` the period in metres of the soft diagonal streaks of that sheen, at ``angle``.
    """

    kind: str = 'plain'
    color: tuple = (0.5, 0.5, 0.5)
    color2: tuple = (0.25, 0.25, 0.25)
    scale: float = 0.3
    scale2: float = 0.005
    angle: float = 0.0
    variation: float = 0.05
    specular: float = 0.0
    shininess: float = 30.0
    offset: tuple = (0.0, 0.0)
    seed: int = 0


DEFAULT_FLOOR = Material('plain', (0.30, 0.30, 0.30), variation=0.0)


DEFAULT_WALL = Material('plain', (0.60, 0.60, 0.60), variation=0.0)


DEFAULT_OBJECT = Material('plain', (0.20, 0.20, 0.20), variation=0.0)


DEFAULT_BASEBOARD = Material('plain', (0.75, 0.75, 0.75), variation=0.0)


DEFAULT_GLASS = Material('glass', (0.82, 0.9, 0.87), scale=0.9, scale2=0.06, angle=0.6,
                         variation=0.0, specular=0.6, shininess=300.0)


DEFAULT_GLASS_FRAME = Material('plain', (0.55, 0.56, 0.58), variation=0.02)


#: Obstacle label of glass panes and of every part of their frames.
GLASS_LABEL = 'glass'


#: Obstacle label of steps, curbs and raised platforms (and their edge strips).
STEP_LABEL = 'step'


#: Obstacle label of radiators, shelves (and what stands on them) and screens on the walls.
WALL_CLUTTER_LABEL = 'wall_clutter'


@dataclass(frozen=True)
class Box:
    """
    A box with vertical sides, yawed about z, spanning z in [bottom, height].

    ``(x, y)`` is the centre of the footprint, ``size_x``/``size_y`` are the full side lengths
    along the box's own axes (rotated by ``yaw`` from the world axes) and ``height`` is the z of
    the top face. A box with ``bottom`` > 0 is raised and has no footprint.
    """

    x: float
    y: float
    size_x: float
    size_y: float
    height: float
    yaw: float = 0.0
    bottom: float = 0.0
    material: Material = DEFAULT_OBJECT
    label: str = ''

    @property
    def standing(self):
        """Return True when the box stands on the floor (it has a footprint)."""
        return self.bottom <= FOOTPRINT_EPS

    def corners(self):
        """Return the 8 corners in the world frame, shape (8, 3)."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        hx, hy = self.size_x / 2.0, self.size_y / 2.0
        out = []
        for lz in (self.bottom, self.height):
            for lx, ly in ((-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy)):
                out.append((self.x + c * lx - s * ly, self.y + s * lx + c * ly, lz))
        return np.array(out)

    def outline(self):
        """Return the footprint polygon (4, 2), counter-clockwise."""
        return self.corners()[:4, :2]

    def _local(self, xs, ys):
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        dx, dy = xs - self.x, ys - self.y
        return c * dx + s * dy, -s * dx + c * dy

    def contains_xy(self, xs, ys):
        """Return True where (x, y) lies in the box's footprint rectangle (edges included)."""
        lx, ly = self._local(xs, ys)
        return (np.abs(lx) <= self.size_x / 2.0) & (np.abs(ly) <= self.size_y / 2.0)

    def distance_xy(self, xs, ys):
        """Distance on the floor from (x, y) to the footprint rectangle (0 inside)."""
        lx, ly = self._local(xs, ys)
        qx = np.maximum(np.abs(lx) - self.size_x / 2.0, 0.0)
        qy = np.maximum(np.abs(ly) - self.size_y / 2.0, 0.0)
        return np.hypot(qx, qy)


@dataclass(frozen=True)
class Cylinder:
    """A vertical cylinder (pole, bin, table leg) of ``radius`` spanning z in [bottom, height]."""

    x: float
    y: float
    radius: float
    height: float
    bottom: float = 0.0
    material: Material = DEFAULT_OBJECT
    label: str = ''

    @property
    def standing(self):
        """Return True when the cylinder stands on the floor (it has a footprint)."""
        return self.bottom <= FOOTPRINT_EPS

    def corners(self):
        """Return the 8 corners of the bounding box in the world frame, shape (8, 3)."""
        r = self.radius
        out = []
        for lz in (self.bottom, self.height):
            for lx, ly in ((-r, -r), (r, -r), (r, r), (-r, r)):
                out.append((self.x + lx, self.y + ly, lz))
        return np.array(out)

    def ring(self, n=16):
        """Points on the top and bottom rims, shape (2 n, 3), slightly outside the circle."""
        a = np.arange(n) * (2.0 * np.pi / n)
        r = self.radius / math.cos(math.pi / n)
        pts = []
        for lz in (self.bottom, self.height):
            pts.append(np.stack([self.x + r * np.cos(a), self.y + r * np.sin(a),
                                 np.full(n, lz)], axis=1))
        return np.concatenate(pts)

    def outline(self, n=16):
        """Return the footprint as a polygon (n, 2), circumscribing the circle."""
        return self.ring(n)[:n, :2]

    def contains_xy(self, xs, ys):
        """Return True where (x, y) lies in the footprint disc (edge included)."""
        return (xs - self.x) ** 2 + (ys - self.y) ** 2 <= self.radius ** 2

    def distance_xy(self, xs, ys):
        """Distance on the floor from (x, y) to the footprint disc (0 inside)."""
        return np.maximum(np.hypot(xs - self.x, ys - self.y) - self.radius, 0.0)


@dataclass(frozen=True)
class Door:
    """
    A closed door drawn on wall ``wall`` (index of the outline edge from vertex ``wall``).

    ``start`` is the distance along the edge from its first vertex, ``width`` and ``height`` the
    door size. Doors are part of the wall: blocked.
    """

    wall: int
    start: float
    width: float = 0.9
    height: float = 2.05
    material: Material = Material('plain', (0.45, 0.30, 0.18))
    frame_color: tuple = (0.8, 0.8, 0.8)


@dataclass(frozen=True)
class WallDecal:
    """
    A flat thing drawn on wall ``wall``: a poster, a picture, a whiteboard, a switch, a socket.

    It spans ``start`` to ``start + width`` along the wall edge (from the edge's first
    vertex) and ``bottom`` to ``bottom + height`` above the floor. ``kind`` is ``poster``
    (a photo-like picture above lines of text on a ``color3`` ground), ``picture`` (a
    photo-like picture), ``board`` (a whiteboard with a few marker strokes in ``color2``),
    ``switch`` (a plate with a rocker) or ``socket`` (a plate with a round recess and two
    holes). A ``border`` wider than 0 draws a frame of ``border_color`` inside the edge;
    ``specular`` makes it glossy. ``photo`` >= 0 replaces the procedural picture of a poster
    or a picture by that photo of the texture bank (see :mod:`.photos`), cropped to fill it.
    Like doors it is part of the wall: blocked.
    """

    wall: int
    start: float
    width: float
    bottom: float
    height: float
    kind: str = 'picture'
    color: tuple = (0.5, 0.5, 0.5)
    color2: tuple = (0.2, 0.3, 0.5)
    color3: tuple = (0.8, 0.8, 0.7)
    border: float = 0.0
    border_color: tuple = (0.1, 0.1, 0.1)
    specular: float = 0.0
    seed: int = 0
    photo: int = -1


@dataclass(frozen=True)
class Decal:
    """
    A rug, mat or tape marking lying flat on the floor; it is floor, hence free.

    ``shape`` is ``rect`` or ``ellipse``; ``size_x``/``size_y`` the full extents along its axes
    (rotated by ``yaw``). A ``border`` wider than 0 draws a band of ``border_color`` inside the
    edge.
    """

    x: float
    y: float
    size_x: float
    size_y: float
    yaw: float = 0.0
    shape: str = 'rect'
    material: Material = Material('plain', (0.5, 0.1, 0.1))
    border: float = 0.0
    border_color: tuple = (0.8, 0.7, 0.5)


@dataclass(frozen=True)
class Light:
    """
    A point light (world position, metres) with an RGB colour and a power.

    ``radius`` > 0 makes it an area light with soft shadows.
    """

    position: tuple
    intensity: float = 1.0
    color: tuple = (1.0, 1.0, 1.0)
    radius: float = 0.0


@dataclass(frozen=True)
class Appearance:
    """
    Surfaces and lighting of a scene (everything that is not geometry).

    ``floor_reflectivity`` > 0 makes the floor a glossy mirror: the renderer blends the
    reflected room into the floor with this weight at grazing angles (a fifth of it looking
    straight down); ``floor_roughness`` (0 = a sharp mirror, up to 1) blurs the reflection,
    the more the farther the reflected point is from the floor. ``exposure`` multiplies the
    camera's auto-exposure target: above 1 a bright room comes out bright, as a camera that
    meters for it shows it, instead of being pulled down to mid grey.
    """

    floor: Material = DEFAULT_FLOOR
    wall: Material = DEFAULT_WALL
    baseboard: Material = DEFAULT_BASEBOARD
    baseboard_height: float = 0.08
    ceiling_color: tuple = (0.75, 0.75, 0.75)
    sky_color: tuple = (0.55, 0.6, 0.7)
    lights: tuple = ()
    ambient: float = 0.35
    shadows: bool = True
    contact_shadows: float = 0.4
    lamp_radius: float = 0.2
    floor_reflectivity: float = 0.0
    floor_roughness: float = 0.0
    exposure: float = 1.0


def _polygon_area(poly):
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


@dataclass
class Scene:
    """
    A room (or an endless floor) with obstacles, decals and an appearance.

    ``outline``: the room polygon as ((x, y), ...) in the world frame (stored
    counter-clockwise), or None for an endless floor without walls or ceiling. ``ceiling``:
    whether a ceiling closes the room at ``wall_height``. ``wall_decals``: flat
    :class:`WallDecal` things on the walls (posters, switches, sockets).
    """

    outline: tuple = None
    obstacles: list = field(default_factory=list)
    wall_height: float = 2.6
    ceiling: bool = True
    doors: list = field(default_factory=list)
    decals: list = field(default_factory=list)
    appearance: Appearance = field(default_factory=Appearance)
    wall_decals: list = field(default_factory=list)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.outline is not None:
            poly = np.asarray(self.outline, dtype=np.float64).reshape(-1, 2)
            if len(poly) < 3:
                raise ValueError('a room outline needs at least 3 vertices')
            if _polygon_area(poly) < 0.0:
                poly = poly[::-1]
            self.outline = tuple((float(x), float(y)) for x, y in poly)
        self.obstacles = list(self.obstacles)
        self.doors = list(self.doors)
        self.decals = list(self.decals)
        self.wall_decals = list(self.wall_decals)
        if not self.appearance.lights:
            self.appearance = replace(self.appearance, lights=(self.default_light(),))

    @classmethod
    def empty(cls, size=(6.0, 6.0), center=(0.0, 0.0), obstacles=(), wall_height=2.6,
              ceiling=True, **kwargs):
        """
        Make a rectangular room of ``size`` (x, y metres) centred on ``center``.

        ``obstacles`` are Box/Cylinder primitives; ``size=None`` gives an endless floor without
        walls or ceiling. Uses the plain default appearance and one light above the centre, so
        hand-built test scenes render deterministically.
        """
        if size is None:
            outline = None
        else:
            hx, hy = size[0] / 2.0, size[1] / 2.0
            cx, cy = center
            outline = ((cx - hx, cy - hy), (cx + hx, cy - hy), (cx + hx, cy + hy),
                       (cx - hx, cy + hy))
        return cls(outline=outline, obstacles=list(obstacles), wall_height=wall_height,
                   ceiling=ceiling and size is not None, **kwargs)

    # --- geometry helpers -------------------------------------------------------------

    @property
    def polygon(self):
        """Return the outline as an (N, 2) float array (None without walls)."""
        if self.outline is None:
            return None
        return np.asarray(self.outline, dtype=np.float64)

    def walls(self):
        """Wall segments as (a, b): two (N, 2) arrays of edge start and end points."""
        poly = self.polygon
        if poly is None:
            return np.zeros((0, 2)), np.zeros((0, 2))
        return poly, np.roll(poly, -1, axis=0)

    def area(self):
        """Floor area of the room in square metres (inf without walls)."""
        poly = self.polygon
        return math.inf if poly is None else _polygon_area(poly)

    def bounds(self):
        """(xmin, ymin, xmax, ymax) of the room, or of the obstacles for an endless floor."""
        poly = self.polygon
        if poly is None:
            pts = [np.zeros((1, 2))] + [o.corners()[:, :2] for o in self.obstacles]
            pts = np.concatenate(pts)
            lo, hi = pts.min(axis=0) - 3.0, pts.max(axis=0) + 3.0
        else:
            lo, hi = poly.min(axis=0), poly.max(axis=0)
        return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])

    def default_light(self):
        """One white light near the ceiling above the middle of the room."""
        x0, y0, x1, y1 = self.bounds() if self.outline is not None else (-1, -1, 1, 1)
        z = self.wall_height - 0.05 if self.outline is not None else 3.0
        return Light(((x0 + x1) / 2.0, (y0 + y1) / 2.0, z), 1.0)

    def inside(self, xs, ys):
        """Return True where (x, y) is inside the room polygon (even-odd rule)."""
        xs, ys = np.broadcast_arrays(np.asarray(xs, dtype=np.float64),
                                     np.asarray(ys, dtype=np.float64))
        if self.outline is None:
            return np.ones(xs.shape, dtype=bool)
        a, b = self.walls()
        inside = np.zeros(xs.shape, dtype=bool)
        for (x1, y1), (x2, y2) in zip(a, b):
            if y1 == y2:
                continue
            crosses = (y1 > ys) != (y2 > ys)
            x_cross = x1 + (ys - y1) * (x2 - x1) / (y2 - y1)
            inside ^= crosses & (xs < x_cross)
        return inside

    def footprints(self):
        """Return the obstacles that stand on the floor."""
        return [o for o in self.obstacles if o.standing]

    def blocked_top_down(self, xs, ys):
        """
        Exact top-down truth: True where the floor point (x, y) is not free.

        That is outside the room (or in its walls) or on an obstacle footprint; rugs and
        markings are free. ``xs`` and ``ys`` may be any broadcastable shapes.
        """
        xs, ys = np.broadcast_arrays(np.asarray(xs, dtype=np.float64),
                                     np.asarray(ys, dtype=np.float64))
        blocked = ~self.inside(xs, ys)
        for o in self.footprints():
            blocked |= o.contains_xy(xs, ys)
        return blocked

    def clearance(self, xs, ys):
        """Distance from (x, y) to the nearest blocked floor (0 where blocked)."""
        xs, ys = np.broadcast_arrays(np.asarray(xs, dtype=np.float64),
                                     np.asarray(ys, dtype=np.float64))
        dist = np.full(xs.shape, np.inf)
        a, b = self.walls()
        for (x1, y1), (x2, y2) in zip(a, b):
            ex, ey = x2 - x1, y2 - y1
            s = np.clip(((xs - x1) * ex + (ys - y1) * ey) / (ex * ex + ey * ey), 0.0, 1.0)
            dist = np.minimum(dist, np.hypot(xs - x1 - s * ex, ys - y1 - s * ey))
        for o in self.footprints():
            dist = np.minimum(dist, o.distance_xy(xs, ys))
        return np.where(self.inside(xs, ys), dist, 0.0)

    def collides(self, x, y, radius):
        """Return True when a disc of ``radius`` centred on (x, y) touches anything blocked."""
        return bool(self.clearance(float(x), float(y)) <= radius)

    def sample_free_pose(self, rng, clearance=0.3, attempts=4096):
        """
        Draw a random robot pose (x, y, yaw) whose disc of ``clearance`` touches nothing.

        Raises RuntimeError when no such place is found.
        """
        x0, y0, x1, y1 = self.bounds()
        if self.outline is None:
            x0, y0, x1, y1 = x0 + 2.0, y0 + 2.0, x1 - 2.0, y1 - 2.0
        batch = 256
        for _ in range(max(1, attempts // batch)):
            xs = rng.uniform(x0, x1, batch)
            ys = rng.uniform(y0, y1, batch)
            ok = np.flatnonzero(self.clearance(xs, ys) > clearance)
            if ok.size:
                i = ok[0]
                return float(xs[i]), float(ys[i]), float(rng.uniform(-math.pi, math.pi))
        raise RuntimeError(f'no free pose with clearance {clearance} m in this scene')


def is_glass(obj):
    """Return True when the primitive ``obj`` is a transparent glass pane."""
    return obj.material.kind == 'glass'


def _side_rng(rng, salt):
    """Return a generator seeded from ``rng``'s state without advancing ``rng``."""
    return side_rng(rng, salt)
