"""
Synthetic indoor rooms: primitives, seeded room generation and exact top-down truth.

A :class:`Scene` lives in a WORLD frame: x and y on the floor, z up, the floor is the plane
z = 0. The room is a simple polygon (rectangular or L-shaped) of vertical walls from the floor
up to ``wall_height`` (with a ceiling there, or open above); ``outline=None`` gives an endless
floor without walls. Obstacles are :class:`Box` (oriented about z) and :class:`Cylinder`
(vertical) primitives. A primitive whose ``bottom`` is 0 stands on the floor and has a
footprint; a raised one (a tabletop, a chair seat) has none, and the floor under it stays free.
A glass pane is a thin standing :class:`Box` of a ``glass`` :class:`Material`; the renderer
shows what lies behind it (see :func:`glass_partition`, which also builds its frame). Steps,
curbs and raised platforms are standing boxes labelled :data:`STEP_LABEL` (see
:func:`random_steps`). Things on the walls are either flat :class:`WallDecal` (posters,
pictures, whiteboards, switches, sockets: part of the wall) or raised boxes labelled
:data:`WALL_CLUTTER_LABEL` (radiators, shelves, screens; see :func:`random_wall_clutter`).

Ground-truth rule: a pixel is free (1) iff its ray first hits the floor plane (z = 0) inside
the room at a point not covered by any obstacle footprint. Rugs, mats and floor markings
(:class:`Decal`) are floor and thus free, and so is a glossy floor that mirrors walls and
objects (the reflection of an obstacle is still free floor). Everything else (walls, doors,
obstacles, glass panes and their frames, rails and bands although the camera sees through the
glass, anything above the floor, the ceiling or the sky) is blocked (0). The height threshold
is 0: a step or platform, however low, is blocked, its top too (even when it is made of the
floor's own material: it is not at z = 0), and so is its footprint. Things on the walls are
blocked (flat ones are wall; radiators, shelves and screens are above the floor); they have
a footprint only where they reach the floor (the feet and pipes of a floor-standing
radiator), so the floor under a wall-hung radiator or a shelf is free where it is seen, like
the floor under a tabletop.
:meth:`Scene.blocked_top_down` is the same rule on the floor: True outside the room, in the
walls and on footprints (glass panes and their frames, steps and platforms included).
"""

from dataclasses import dataclass, field, replace
import math

import cv2
from freespace_seg.sim.photos import texture_names
from freespace_seg.sim.randomization import RandomizationConfig, side_rng
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

#: Floor and wall material kinds that only the ``shifted`` style draws.
SHIFTED_FLOOR_KINDS = ('terrazzo', 'herringbone', 'studded')
SHIFTED_WALL_KINDS = ('brick', 'terrazzo')


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
    the more the farther the reflected point is from the floor.
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


def glass_partition(start, end, height, panes=1, glass=DEFAULT_GLASS, frame=DEFAULT_GLASS_FRAME,
                    thickness=0.01, profile=0.05, depth=0.05, bottom_rail=0.08, top_rail=0.05,
                    stiles=True, band=None, handle=False):
    """
    Return the Box parts of a straight glass partition standing on the floor.

    The pane (``thickness`` thick, made of ``glass``) runs from ``start`` to ``end`` (x, y)
    and is ``height`` high. Its frame, of material ``frame`` and ``depth`` deep across the
    pane, has a bottom rail (a floor channel or a kick plate) ``bottom_rail`` high and a top
    rail ``top_rail`` high (0: none); with ``stiles``, vertical members ``profile`` wide at
    both ends and between the ``panes`` equal panes. ``band`` = (centre height, band height,
    material) adds an opaque frosted band across the glass; ``handle`` a horizontal push bar
    at 1 m on the middle pane. Every part is labelled :data:`GLASS_LABEL`; the pane, the
    bottom rail and the stiles stand on the floor (their footprints are blocked).
    """
    x0, y0 = (float(v) for v in start)
    x1, y1 = (float(v) for v in end)
    length = math.hypot(x1 - x0, y1 - y0)
    if length <= 0.0 or height <= 0.0:
        raise ValueError('a glass partition needs a positive length and height')
    yaw = math.atan2(y1 - y0, x1 - x0)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    height = float(height)

    def at(s):
        return x0 + ux * s, y0 + uy * s

    parts = [Box(cx, cy, length, thickness, height, yaw, 0.0, glass)]
    if bottom_rail > 0.0:
        parts.append(Box(cx, cy, length, depth, min(bottom_rail, height), yaw, 0.0, frame))
    if 0.0 < top_rail < height:
        parts.append(Box(cx, cy, length, depth, height, yaw, height - top_rail, frame))
    if stiles and profile > 0.0:
        panes = max(1, int(panes))
        stations = [profile / 2.0] + [k * length / panes for k in range(1, panes)]
        stations.append(length - profile / 2.0)
        for st in stations:
            parts.append(Box(*at(st), profile, depth, height, yaw, 0.0, frame))
    if band is not None:
        zc, bh, mat = band
        lo, hi = max(float(zc) - bh / 2.0, 0.01), min(float(zc) + bh / 2.0, height)
        if hi > lo:
            parts.append(Box(cx, cy, length, thickness + 0.002, hi, yaw, lo, mat))
    if handle and height > 1.2:
        pane_w = length / max(1, int(panes))
        mid = (max(1, int(panes)) // 2 + 0.5) * pane_w
        parts.append(Box(*at(mid), 0.6 * pane_w, depth + 0.08, 1.02, yaw, 0.98, frame))
    return [replace(p, label=GLASS_LABEL) for p in parts]


# --- random scenes ----------------------------------------------------------------------

def _srgb_to_linear(c):
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lin(rgb):
    return _tuple3(np.clip(_srgb_to_linear(rgb), 0.0, 1.0))


def _hsv(rng, h, s, v):
    """Draw a linear RGB colour from HSV ranges (each a (lo, hi) pair), uniformly."""
    hue = rng.uniform(*h) % 1.0
    sat = rng.uniform(*s)
    val = rng.uniform(*v)
    k = (np.array([5.0, 3.0, 1.0]) + hue * 6.0) % 6.0
    rgb = val - val * sat * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return _lin(rgb)


def _jitter_color(rng, color, amount):
    return _tuple3(np.clip(np.asarray(color) * np.exp(rng.normal(0.0, amount, 3)), 0.0, 1.0))


def _kelvin_rgb(kelvin):
    """Approximate linear RGB of a light of colour temperature ``kelvin``, luminance 1."""
    table_k = [2500.0, 3000.0, 3500.0, 4000.0, 5000.0, 6500.0, 8000.0]
    table = np.array([[1.00, 0.62, 0.30], [1.00, 0.70, 0.42], [1.00, 0.77, 0.54],
                      [1.00, 0.82, 0.64], [1.00, 0.90, 0.81], [1.00, 1.00, 1.00],
                      [0.88, 0.93, 1.00]])
    rgb = np.array([np.interp(kelvin, table_k, table[:, i]) for i in range(3)])
    rgb = _srgb_to_linear(rgb)
    return _tuple3(rgb / (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]))


def random_floor_material(rng, config):
    """Draw a floor material: wood, tiles, checker, carpet, concrete or vinyl."""
    if not config.floor_materials:
        return DEFAULT_FLOOR
    kind = rng.choice(['wood', 'tile', 'checker', 'carpet', 'concrete', 'vinyl', 'plain'],
                      p=[0.27, 0.2, 0.05, 0.18, 0.12, 0.1, 0.08])
    spec = config.specular
    seed = int(rng.integers(1 << 30))
    angle = float(rng.choice([0.0, math.pi / 2])) + float(rng.normal(0.0, 0.02))
    off = (float(rng.uniform(0, 50)), float(rng.uniform(0, 50)))
    if kind == 'wood':
        base = _hsv(rng, (0.05, 0.1), (0.2, 0.7), (0.3, 0.85))
        second = _tuple3(np.clip(np.asarray(base) * rng.uniform(0.5, 0.85)
                                 * np.exp(rng.normal(0.0, 0.04, 3)), 0.0, 1.0))
        return Material('wood', base, second,
                        scale=float(rng.uniform(0.08, 0.25)), scale2=float(rng.uniform(0.6, 2.2)),
                        angle=angle, variation=float(rng.uniform(0.05, 0.3)),
                        specular=float(rng.uniform(0.0, 0.35)) if spec else 0.0,
                        shininess=float(rng.uniform(10, 80)), offset=off, seed=seed)
    if kind in ('tile', 'checker'):
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.3), (0.35, 0.95))
        if kind == 'checker':
            second = _hsv(rng, (0.0, 1.0), (0.0, 0.4), (0.05, 0.5))
        else:
            second = _hsv(rng, (0.0, 1.0), (0.0, 0.15), (0.2, 0.8))
        if rng.random() < 0.2:
            angle += math.pi / 4
        return Material(kind, base, second, scale=float(rng.uniform(0.15, 0.7)),
                        scale2=float(rng.uniform(0.002, 0.008)), angle=angle,
                        variation=float(rng.uniform(0.02, 0.2)),
                        specular=float(rng.uniform(0.05, 0.6)) if spec else 0.0,
                        shininess=float(rng.uniform(20, 150)), offset=off, seed=seed)
    if kind == 'carpet':
        base = _hsv(rng, (0.0, 1.0), (0.05, 0.5), (0.1, 0.7))
        return Material('noise', base, _jitter_color(rng, base, 0.1),
                        scale=float(rng.uniform(0.003, 0.02)), scale2=float(rng.uniform(0.2, 1.0)),
                        variation=float(rng.uniform(0.1, 0.4)), offset=off, seed=seed)
    if kind == 'concrete':
        base = _hsv(rng, (0.05, 0.15), (0.0, 0.12), (0.35, 0.75))
        return Material('noise', base, _jitter_color(rng, base, 0.1),
                        scale=float(rng.uniform(0.005, 0.03)), scale2=float(rng.uniform(0.3, 2.0)),
                        variation=float(rng.uniform(0.05, 0.2)),
                        specular=float(rng.uniform(0.0, 0.4)) if spec else 0.0,
                        shininess=float(rng.uniform(5, 40)), offset=off, seed=seed)
    base = _hsv(rng, (0.0, 1.0), (0.0, 0.3) if rng.random() < 0.8 else (0.3, 0.6), (0.15, 0.9))
    return Material('plain', base, base, scale=0.05, scale2=float(rng.uniform(0.5, 3.0)),
                    variation=float(rng.uniform(0.0, 0.12)) if kind == 'vinyl' else 0.02,
                    specular=float(rng.uniform(0.0, 0.5)) if spec else 0.0,
                    shininess=float(rng.uniform(10, 100)), offset=off, seed=seed)


def random_object_material(rng, config, floor=None):
    """Draw a material for furniture and clutter (sometimes the floor's own, a hard case)."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    seed = int(rng.integers(1 << 30))
    if floor is not None and rng.random() < 0.08:
        return replace(floor, seed=seed)
    spec = float(rng.uniform(0.0, 0.5)) if config.specular and rng.random() < 0.5 else 0.0
    kind = rng.choice(['plain', 'wood', 'noise', 'stripes'], p=[0.5, 0.2, 0.22, 0.08])
    palette = rng.random()
    if palette < 0.35:  # neutrals: white, grey, black
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.05, 0.95))
    elif palette < 0.65:  # wood and cardboard browns
        base = _hsv(rng, (0.04, 0.12), (0.3, 0.8), (0.2, 0.85))
    else:  # painted and plastic colours
        base = _hsv(rng, (0.0, 1.0), (0.3, 1.0), (0.2, 1.0))
    return Material(str(kind), base, _jitter_color(rng, base, 0.2),
                    scale=float(rng.uniform(0.02, 0.3)), scale2=float(rng.uniform(0.3, 1.5)),
                    angle=float(rng.choice([0.0, math.pi / 2])),
                    variation=float(rng.uniform(0.02, 0.25)), specular=spec,
                    shininess=float(rng.uniform(10, 120)), seed=seed)


def random_appearance(rng, config, outline, wall_height, floor=None):
    """Walls, baseboard, ceiling and lights for a room (inside ``outline``)."""
    wall = DEFAULT_WALL
    baseboard = DEFAULT_BASEBOARD
    bb_height = 0.08
    if config.wall_textures:
        if rng.random() < 0.7:  # paint: mostly light neutrals
            wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.25), (0.55, 0.97))
        else:
            wcol = _hsv(rng, (0.0, 1.0), (0.1, 0.7), (0.25, 0.9))
        kind = rng.choice(['plain', 'noise', 'stripes', 'tile'], p=[0.55, 0.25, 0.1, 0.1])
        wall = Material(str(kind), wcol, _jitter_color(rng, wcol, 0.2),
                        scale=float(rng.uniform(0.05, 0.4)), scale2=0.004,
                        variation=float(rng.uniform(0.01, 0.1)), seed=int(rng.integers(1 << 30)),
                        specular=float(rng.uniform(0, 0.15)) if config.specular else 0.0)
        bcol = rng.choice(3)
        if bcol == 0:
            bcolor = _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.8, 0.98))
        elif bcol == 1:
            bcolor = _hsv(rng, (0.04, 0.1), (0.4, 0.8), (0.2, 0.6))
        else:
            bcolor = _hsv(rng, (0.0, 1.0), (0.0, 0.2), (0.05, 0.4))
        baseboard = Material('plain', bcolor, variation=0.01,
                             specular=0.1 if config.specular else 0.0, shininess=20.0)
        bb_height = float(rng.uniform(0.0, 0.15)) if rng.random() < 0.85 else 0.0
    lights = []
    poly = np.asarray(outline)
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    z = wall_height - 0.05
    if config.lighting:
        n = int(rng.integers(1, 4))
        ambient = float(rng.uniform(0.08, 0.4))
        for _ in range(n):
            x, y = rng.uniform(lo, hi)
            kelvin = rng.uniform(2700, 7000) if config.color_temperature else 6500.0
            color = _kelvin_rgb(kelvin) if config.color_temperature else (1.0, 1.0, 1.0)
            radius = 0.0
            if config.shadows and rng.random() < 0.6:
                radius = float(rng.uniform(0.1, 0.6))
            lights.append(Light((float(x), float(y), float(z - rng.uniform(0.0, 0.6))),
                                float(rng.uniform(0.3, 1.5)), color, radius))
    else:
        ambient = 0.35
        lights.append(Light((float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, z), 1.0))
    ceiling = _hsv(rng, (0.0, 1.0), (0.0, 0.08), (0.7, 0.95)) if config.wall_textures \
        else (0.75, 0.75, 0.75)
    return Appearance(floor=floor if floor is not None else DEFAULT_FLOOR, wall=wall,
                      baseboard=baseboard, baseboard_height=bb_height, ceiling_color=ceiling,
                      lights=tuple(lights), ambient=ambient, shadows=config.shadows,
                      contact_shadows=float(rng.uniform(0.2, 0.6)) if config.shadows else 0.0,
                      lamp_radius=float(rng.uniform(0.1, 0.3)))


def shifted_floor_material(rng, config):
    """Draw a ``shifted`` style floor: terrazzo, herringbone parquet or studded rubber."""
    if not config.floor_materials:
        return DEFAULT_FLOOR
    kind = str(rng.choice(SHIFTED_FLOOR_KINDS, p=[0.4, 0.35, 0.25]))
    spec = config.specular
    seed = int(rng.integers(1 << 30))
    angle = float(rng.uniform(-math.pi, math.pi))
    off = (float(rng.uniform(0, 50)), float(rng.uniform(0, 50)))
    if kind == 'terrazzo':
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.25), (0.45, 0.92))
        chips = _hsv(rng, (0.0, 1.0), (0.2, 0.9), (0.05, 0.6))
        return Material(kind, base, chips, scale=float(rng.uniform(0.012, 0.04)),
                        scale2=float(rng.uniform(0.35, 0.75)), angle=angle,
                        variation=float(rng.uniform(0.05, 0.2)),
                        specular=float(rng.uniform(0.2, 0.7)) if spec else 0.0,
                        shininess=float(rng.uniform(40, 150)), offset=off, seed=seed)
    if kind == 'herringbone':
        base = _hsv(rng, (0.0, 1.0), (0.15, 0.75), (0.2, 0.85))
        second = _tuple3(np.clip(np.asarray(base) * rng.uniform(0.4, 0.8), 0.0, 1.0))
        width = float(rng.uniform(0.06, 0.12))
        return Material(kind, base, second, scale=width,
                        scale2=width * float(rng.integers(3, 7)), angle=angle,
                        variation=float(rng.uniform(0.1, 0.35)),
                        specular=float(rng.uniform(0.0, 0.4)) if spec else 0.0,
                        shininess=float(rng.uniform(10, 80)), offset=off, seed=seed)
    base = _hsv(rng, (0.0, 1.0), (0.75, 1.0), (0.25, 0.85))
    studs = _tuple3(np.clip(np.asarray(base) * rng.uniform(1.2, 1.8), 0.0, 1.0))
    return Material(kind, base, studs, scale=float(rng.uniform(0.03, 0.08)),
                    scale2=float(rng.uniform(0.2, 0.35)), angle=angle,
                    variation=float(rng.uniform(0.02, 0.1)),
                    specular=float(rng.uniform(0.0, 0.3)) if spec else 0.0,
                    shininess=float(rng.uniform(10, 40)), offset=off, seed=seed)


def shifted_appearance(rng, config, outline, wall_height, floor, like):
    """
    Redraw the look of a room in the ``shifted`` style; ``like`` is its default appearance.

    Walls become brick or stone, the baseboard a saturated colour, the ceiling darker; the
    lights become one strong low-angle light near a wall (long shadows), often coloured, plus
    sometimes a dim coloured ceiling light, with very little ambient light.
    """
    app = replace(like, floor=floor)
    if config.wall_textures:
        kind = str(rng.choice(SHIFTED_WALL_KINDS, p=[0.65, 0.35]))
        if kind == 'brick':
            palette = rng.random()
            if palette < 0.5:  # clay
                wcol = _hsv(rng, (0.0, 0.07), (0.45, 0.85), (0.25, 0.65))
            elif palette < 0.8:  # painted
                wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.7, 0.95))
            else:  # dark block
                wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.2), (0.1, 0.35))
            mortar = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.4, 0.9))
            wall = Material(kind, wcol, mortar, scale=float(rng.uniform(0.06, 0.2)),
                            scale2=float(rng.uniform(0.008, 0.015)),
                            variation=float(rng.uniform(0.1, 0.3)),
                            seed=int(rng.integers(1 << 30)))
        else:
            wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.3), (0.2, 0.8))
            wall = Material(kind, wcol, _hsv(rng, (0.0, 1.0), (0.0, 0.6), (0.05, 0.9)),
                            scale=float(rng.uniform(0.01, 0.03)),
                            scale2=float(rng.uniform(0.3, 0.7)),
                            variation=float(rng.uniform(0.05, 0.2)),
                            seed=int(rng.integers(1 << 30)),
                            specular=float(rng.uniform(0.1, 0.4)) if config.specular else 0.0)
        baseboard = Material('plain', _hsv(rng, (0.0, 1.0), (0.7, 1.0), (0.2, 0.8)),
                             variation=0.01, specular=0.2 if config.specular else 0.0)
        app = replace(app, wall=wall, baseboard=baseboard,
                      baseboard_height=float(rng.uniform(0.05, 0.2)),
                      ceiling_color=_hsv(rng, (0.0, 1.0), (0.05, 0.4), (0.25, 0.6)))
    if config.lighting:
        poly = np.asarray(outline)
        lo, hi = poly.min(axis=0), poly.max(axis=0)
        # One strong light low on a side of the room, shining across it.
        side = int(rng.integers(4))
        x, y = (float(v) for v in rng.uniform(lo + 0.15, hi - 0.15))
        if side == 0:
            x = float(lo[0]) + 0.15
        elif side == 1:
            x = float(hi[0]) - 0.15
        elif side == 2:
            y = float(lo[1]) + 0.15
        else:
            y = float(hi[1]) - 0.15
        if config.color_temperature and rng.random() < 0.6:
            color = _unit_luminance(_hsv(rng, (0.0, 1.0), (0.5, 0.9), (1.0, 1.0)))
        else:
            color = (1.0, 1.0, 1.0)
        lights = [Light((x, y, float(rng.uniform(0.3, 1.0))), float(rng.uniform(2.0, 5.0)),
                        color, float(rng.uniform(0.0, 0.05)) if config.shadows else 0.0)]
        if rng.random() < 0.5:
            x2, y2 = (float(v) for v in rng.uniform(lo, hi))
            color2 = _unit_luminance(_hsv(rng, (0.0, 1.0), (0.4, 0.9), (1.0, 1.0))) \
                if config.color_temperature else (1.0, 1.0, 1.0)
            lights.append(Light((x2, y2, wall_height - 0.05), float(rng.uniform(0.1, 0.4)),
                                color2, 0.0))
        app = replace(app, lights=tuple(lights), ambient=float(rng.uniform(0.0, 0.05)),
                      lamp_radius=0.0)
    return app


def _unit_luminance(rgb):
    rgb = np.asarray(rgb, dtype=np.float64)
    return _tuple3(rgb / max(0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2], 1e-3))


def _side_rng(rng, salt):
    """Return a generator seeded from ``rng``'s state without advancing ``rng``."""
    return side_rng(rng, salt)


def _restyle(rng, scene, config, floor):
    """Give a finished default-style scene the ``shifted`` look; ``rng`` is not advanced."""
    side = _side_rng(rng, 0x5e1f7ed)
    new_floor = shifted_floor_material(side, config)
    scene.appearance = shifted_appearance(side, config, scene.outline, scene.wall_height,
                                          new_floor, scene.appearance)
    if config.floor_materials:
        # Objects made of the floor's own material (a hard case) follow the new floor; steps
        # whose top is the floor itself get the new floor itself.
        same = replace(floor, seed=0)
        scene.obstacles = [replace(o, material=new_floor) if o.material == floor
                           else replace(o, material=replace(new_floor, seed=o.material.seed))
                           if replace(o.material, seed=0) == same else o
                           for o in scene.obstacles]


def _random_outline(rng, config):
    lo, hi = config.room_size
    sx, sy = rng.uniform(lo, hi, 2)
    hx, hy = sx / 2.0, sy / 2.0
    rect = [(-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy)]
    if config.l_shaped_rooms and min(sx, sy) >= 3.5 and rng.random() < 0.35:
        nx = float(rng.uniform(0.3, 0.55)) * sx
        ny = float(rng.uniform(0.3, 0.55)) * sy
        # Cut the notch out of the (+x, +y) corner, then rotate the room by k quarter turns.
        outline = [(-hx, -hy), (hx, -hy), (hx, hy - ny), (hx - nx, hy - ny), (hx - nx, hy),
                   (-hx, hy)]
    else:
        outline = rect
    k = int(rng.integers(4))
    c, s = round(math.cos(k * math.pi / 2)), round(math.sin(k * math.pi / 2))
    return tuple((float(c * x - s * y), float(s * x + c * y)) for x, y in outline)


class _Placer:
    """Rejection sampling of obstacle positions inside a room."""

    def __init__(self, rng, scene):
        self.rng = rng
        self.scene = scene
        self.x0, self.y0, self.x1, self.y1 = scene.bounds()
        self.a, self.b = scene.walls()

    def free_point(self, margin):
        """Find a point inside the room at least ``margin`` from walls and obstacles, or None."""
        xs = self.rng.uniform(self.x0, self.x1, 64)
        ys = self.rng.uniform(self.y0, self.y1, 64)
        ok = np.flatnonzero(self.scene.clearance(xs, ys) > margin)
        return (float(xs[ok[0]]), float(ys[ok[0]])) if ok.size else None

    def wall_spot(self, depth, length, gap):
        """
        Find a spot against a random wall for an object of ``depth`` x ``length``.

        Returns (x, y, yaw) with the object's local x axis across the wall, or None.
        """
        i = int(self.rng.integers(len(self.a)))
        a, b = self.a[i], self.b[i]
        e = b - a
        wall_len = float(np.hypot(*e))
        if wall_len < length + 0.1:
            return None
        t = self.rng.uniform(length / 2 + 0.05, wall_len - length / 2 - 0.05)
        u = e / wall_len
        inward = np.array([-u[1], u[0]])
        p = a + u * t + inward * (depth / 2 + gap)
        return float(p[0]), float(p[1]), float(math.atan2(inward[1], inward[0]))

    def fits(self, obstacles, margin=0.02):
        """Check that the standing parts of ``obstacles`` stay in the room, clear of others."""
        for o in obstacles:
            if not o.standing:
                continue
            pts = o.outline()
            if not np.all(self.scene.inside(pts[:, 0], pts[:, 1])):
                return False
            cx, cy = float(np.mean(pts[:, 0])), float(np.mean(pts[:, 1]))
            r = float(np.max(np.hypot(pts[:, 0] - cx, pts[:, 1] - cy)))
            others = self.scene.footprints()
            for p in others:
                if p.distance_xy(cx, cy) < r + margin:
                    return False
        return True


def _table(rng, x, y, yaw, top_mat, leg_mat):
    sx, sy = rng.uniform(0.6, 1.8), rng.uniform(0.5, 1.0)
    h = rng.uniform(0.45, 0.8)
    th = rng.uniform(0.02, 0.06)
    parts = []
    c, s = math.cos(yaw), math.sin(yaw)
    if rng.random() < 0.2:  # round pedestal table
        r = rng.uniform(0.3, 0.6)
        parts.append(Cylinder(x, y, r, h, h - th, top_mat))
        parts.append(Cylinder(x, y, rng.uniform(0.03, 0.07), h - th, 0.0, leg_mat))
        parts.append(Cylinder(x, y, rng.uniform(0.15, 0.3), rng.uniform(0.02, 0.05), 0.0,
                              leg_mat))
        return parts
    parts.append(Box(x, y, sx, sy, h, yaw, h - th, top_mat))
    inset = rng.uniform(0.03, 0.12)
    square = rng.random() < 0.4
    lr = rng.uniform(0.012, 0.035)
    for lx, ly in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        px = lx * (sx / 2 - inset)
        py = ly * (sy / 2 - inset)
        wx, wy = x + c * px - s * py, y + s * px + c * py
        if square:
            parts.append(Box(wx, wy, 2 * lr, 2 * lr, h - th, yaw, 0.0, leg_mat))
        else:
            parts.append(Cylinder(wx, wy, lr, h - th, 0.0, leg_mat))
    return parts


def _chair(rng, x, y, yaw, mat, leg_mat):
    c, s = math.cos(yaw), math.sin(yaw)
    seat_h = rng.uniform(0.38, 0.5)
    size = rng.uniform(0.38, 0.5)
    th = rng.uniform(0.03, 0.08)
    parts = [Box(x, y, size, size, seat_h, yaw, seat_h - th, mat)]
    back_h = seat_h + rng.uniform(0.3, 0.5)
    bx, by = x - c * (size / 2 - 0.02), y - s * (size / 2 - 0.02)
    if rng.random() < 0.85:
        parts.append(Box(bx, by, 0.03, size, back_h, yaw, seat_h, mat))
    if rng.random() < 0.3:  # office chair: a pole and a five-star base of low spokes
        parts.append(Cylinder(x, y, rng.uniform(0.025, 0.04), seat_h - th, 0.0, leg_mat))
        a0 = rng.uniform(0, 2 * math.pi)
        spoke = rng.uniform(0.25, 0.33)
        for k in range(5):
            a = a0 + k * 2 * math.pi / 5
            parts.append(Box(x + math.cos(a) * spoke / 2, y + math.sin(a) * spoke / 2, spoke,
                             0.04, rng.uniform(0.04, 0.09), a, 0.0, leg_mat))
        return parts
    inset = 0.02
    lr = rng.uniform(0.01, 0.025)
    for lx, ly in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        px, py = lx * (size / 2 - inset), ly * (size / 2 - inset)
        wx, wy = x + c * px - s * py, y + s * px + c * py
        parts.append(Cylinder(wx, wy, lr, seat_h - th, 0.0, leg_mat))
    return parts


def _random_group(rng, placer, config, wall_height, floor_mat):
    """One obstacle group (a list of primitives, labelled by kind) or None."""
    kind, parts = _random_parts(rng, placer, config, wall_height, floor_mat)
    return [replace(p, label=kind) for p in parts] if parts else None


def _random_parts(rng, placer, config, wall_height, floor_mat):
    kinds = ['box', 'bin', 'pole', 'table', 'chair', 'low', 'cable']
    p = np.array([0.3, 0.12, 0.05, 0.1, 0.13, 0.22, 0.08])
    if not config.furniture:
        p[3:5] = 0.0
    if not config.low_objects:
        p[5:7] = 0.0
    kind = str(rng.choice(kinds, p=p / p.sum()))
    mat = random_object_material(rng, config, floor_mat)
    if kind == 'box':
        depth, length = rng.uniform(0.2, 1.0), rng.uniform(0.2, 2.0)
        height = rng.uniform(0.15, 1.8) if rng.random() < 0.8 else rng.uniform(0.05, 0.2)
        if rng.random() < 0.5:
            spot = placer.wall_spot(depth, length, float(rng.uniform(0.0, 0.06)))
            if spot is None:
                return kind, None
            x, y, yaw = spot
        else:
            pt = placer.free_point(0.3)
            if pt is None:
                return kind, None
            x, y = pt
            yaw = float(rng.uniform(-math.pi, math.pi))
        parts = [Box(x, y, depth, length, height, yaw, 0.0, mat)]
        if rng.random() < 0.15 and height < 0.6:  # a sofa-like backrest
            c, s = math.cos(yaw), math.sin(yaw)
            parts.append(Box(x - c * (depth / 2 - 0.08), y - s * (depth / 2 - 0.08), 0.16,
                             length, height + rng.uniform(0.2, 0.5), yaw, 0.0, mat))
        return kind, parts
    if kind == 'bin':
        pt = placer.free_point(0.3)
        if pt is None:
            return kind, None
        return kind, [Cylinder(pt[0], pt[1], rng.uniform(0.08, 0.3), rng.uniform(0.2, 1.0),
                               0.0, mat)]
    if kind == 'pole':
        pt = placer.free_point(0.3)
        if pt is None:
            return kind, None
        top = wall_height if rng.random() < 0.5 else rng.uniform(0.8, 1.8)
        return kind, [Cylinder(pt[0], pt[1], rng.uniform(0.015, 0.1), top, 0.0, mat)]
    if kind in ('table', 'chair'):
        pt = placer.free_point(0.6)
        if pt is None:
            return kind, None
        leg = random_object_material(rng, config) if rng.random() < 0.6 else mat
        yaw = float(rng.uniform(-math.pi, math.pi)) if rng.random() < 0.5 \
            else float(rng.choice([0.0, math.pi / 2]))
        if kind == 'table':
            return kind, _table(rng, pt[0], pt[1], yaw, mat, leg)
        return kind, _chair(rng, pt[0], pt[1], yaw, mat, leg)
    pt = placer.free_point(0.2)
    if pt is None:
        return kind, None
    yaw = float(rng.uniform(-math.pi, math.pi))
    if kind == 'cable':
        return kind, [Box(pt[0], pt[1], rng.uniform(0.5, 2.0), rng.uniform(0.01, 0.03),
                          rng.uniform(0.01, 0.025), yaw, 0.0, mat)]
    parts = []
    for _ in range(int(rng.integers(1, 4))):  # books, shoes, toys
        ox, oy = rng.normal(0.0, 0.15, 2)
        if rng.random() < 0.25:
            parts.append(Cylinder(pt[0] + ox, pt[1] + oy, rng.uniform(0.02, 0.08),
                                  rng.uniform(0.03, 0.15), 0.0, mat))
        else:
            parts.append(Box(pt[0] + ox, pt[1] + oy, rng.uniform(0.08, 0.4),
                             rng.uniform(0.05, 0.3), rng.uniform(0.02, 0.12),
                             yaw + rng.normal(0.0, 0.4), 0.0, mat))
    return kind, parts


def _random_decals(rng, scene, config, floor_mat):
    decals = []
    x0, y0, x1, y1 = scene.bounds()
    for _ in range(int(rng.poisson(0.8))):  # rugs and mats
        x, y = rng.uniform((x0, y0), (x1, y1))
        sx, sy = rng.uniform(0.4, min(3.0, x1 - x0)), rng.uniform(0.4, min(2.5, y1 - y0))
        mat = random_object_material(rng, replace(config, specular=False), None)
        if mat.kind == 'wood':
            mat = replace(mat, kind='noise', scale=float(rng.uniform(0.003, 0.02)))
        border = float(rng.uniform(0.03, 0.15)) if rng.random() < 0.5 else 0.0
        decals.append(Decal(float(x), float(y), float(sx), float(sy),
                            float(rng.choice([0.0, rng.uniform(-math.pi, math.pi)])),
                            'ellipse' if rng.random() < 0.2 else 'rect', mat, border,
                            _hsv(rng, (0.0, 1.0), (0.0, 0.8), (0.1, 0.9))))
    for _ in range(int(rng.poisson(0.35))):  # tape markings
        x, y = rng.uniform((x0, y0), (x1, y1))
        color = _lin(rng.choice([[0.95, 0.8, 0.1], [0.95, 0.95, 0.95], [0.1, 0.6, 0.2],
                                 [0.8, 0.15, 0.1], [0.1, 0.3, 0.8]]))
        mat = Material('stripes' if rng.random() < 0.3 else 'plain', color, (0.05, 0.05, 0.05),
                       scale=0.1, angle=math.pi / 4, variation=0.02)
        decals.append(Decal(float(x), float(y), float(rng.uniform(0.5, 6.0)),
                            float(rng.uniform(0.03, 0.1)),
                            float(rng.choice([0.0, math.pi / 2, rng.uniform(-math.pi, math.pi)])),
                            'rect', mat))
    return decals


def _random_doors(rng, scene):
    doors = []
    a, b = scene.walls()
    for i in range(len(a)):
        wall_len = float(np.hypot(*(b[i] - a[i])))
        if wall_len > 1.4 and rng.random() < 0.3:
            width = float(rng.uniform(0.75, 1.0))
            start = float(rng.uniform(0.15, wall_len - width - 0.15))
            mat = Material('plain' if rng.random() < 0.6 else 'wood',
                           _hsv(rng, (0.0, 1.0), (0.0, 0.6), (0.1, 0.95)),
                           _hsv(rng, (0.05, 0.1), (0.4, 0.7), (0.2, 0.5)), scale=0.2,
                           scale2=2.5, angle=math.pi / 2, variation=0.05)
            doors.append(Door(i, start, width, float(rng.uniform(1.95, 2.2)), mat,
                              _hsv(rng, (0.0, 1.0), (0.0, 0.2), (0.2, 0.98))))
    return doors


#: Salts of the side streams (see :func:`_side_rng`) of the reflection and glass draws.
_REFLECTION_SALT = 0x2ef1ec7
_GLASS_SALT = 0x6a55


def random_floor_reflection(rng, config, appearance):
    """
    Make the floor of ``appearance`` a glossy mirror in 40 % of the rooms.

    Draws the reflectivity (0.1-0.5) and, for half of those floors, a roughness (0.3-1) that
    blurs the reflection; returns ``appearance`` unchanged when ``config.reflections`` is off
    or the room is not drawn glossy.
    """
    if not config.reflections or rng.random() >= 0.4:
        return appearance
    reflectivity = float(rng.uniform(0.1, 0.5))
    roughness = 0.0 if rng.random() < 0.5 else float(rng.uniform(0.3, 1.0))
    return replace(appearance, floor_reflectivity=reflectivity, floor_roughness=roughness)


def random_glass_material(rng, config):
    """Draw a glass pane: clear, blue-grey or bronze tint, a faint streaky sheen."""
    r = rng.random()
    if r < 0.6:  # clear float glass, a little green or blue
        tint = _hsv(rng, (0.35, 0.55), (0.02, 0.12), (0.88, 0.97))
    elif r < 0.85:
        tint = _hsv(rng, (0.5, 0.62), (0.08, 0.25), (0.75, 0.92))
    else:  # bronze or smoked
        tint = _hsv(rng, (0.05, 0.12), (0.1, 0.35), (0.55, 0.8))
    return Material('glass', tint, scale=float(rng.uniform(0.5, 1.5)),
                    scale2=float(rng.uniform(0.03, 0.12)),
                    angle=float(rng.choice([-1.0, 1.0]) * rng.uniform(0.3, 1.2)), variation=0.0,
                    specular=float(rng.uniform(0.3, 1.0)) if config.specular else 0.0,
                    shininess=float(rng.uniform(150, 600)), seed=int(rng.integers(1 << 30)))


def _glass_frame_material(rng, config):
    if not config.object_textures:
        return DEFAULT_OBJECT
    spec = config.specular
    r = rng.random()
    if r < 0.55:  # aluminium or steel
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.45, 0.9)), variation=0.02,
                        specular=float(rng.uniform(0.3, 0.7)) if spec else 0.0,
                        shininess=float(rng.uniform(40, 120)), seed=int(rng.integers(1 << 30)))
    if r < 0.8:  # black or anthracite powder coat
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.05, 0.25)),
                        variation=0.02, specular=float(rng.uniform(0.1, 0.4)) if spec else 0.0,
                        shininess=float(rng.uniform(20, 60)), seed=int(rng.integers(1 << 30)))
    base = _hsv(rng, (0.05, 0.1), (0.3, 0.7), (0.25, 0.7))
    return Material('wood', base, _jitter_color(rng, base, 0.2), scale=0.05, scale2=2.0,
                    angle=math.pi / 2, variation=float(rng.uniform(0.05, 0.2)),
                    seed=int(rng.integers(1 << 30)))


def _random_glass_group(rng, scene, config):
    """One glass partition, screen or door (Box parts) that fits in the room, or None."""
    panes = int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))
    length = panes * float(rng.uniform(0.7, 1.2))
    h = rng.random()
    if h < 0.35:  # floor to ceiling
        height = scene.wall_height
    elif h < 0.8:  # door height
        height = float(rng.uniform(1.95, 2.3))
    else:  # a low screen or balustrade
        height = float(rng.uniform(0.9, 1.4))
    x0, y0, x1, y1 = scene.bounds()
    a, b = scene.walls()
    for _ in range(12):
        if rng.random() < 0.7 and len(a):  # from a wall into the room
            i = int(rng.integers(len(a)))
            e = b[i] - a[i]
            wall_len = float(np.hypot(*e))
            if wall_len < 1.2:
                continue
            u = e / wall_len
            yaw = math.atan2(u[0], -u[1]) + float(rng.normal(0.0, 0.03))
            along = float(rng.uniform(0.5, wall_len - 0.5))
            if any(d.wall == i and d.start - 0.1 <= along <= d.start + d.width + 0.1
                   for d in scene.doors):
                continue  # not in front of a door
            start = a[i] + u * along
            direction = np.array([math.cos(yaw), math.sin(yaw)])
            start = start + direction * 0.002
            end = start + direction * length
            ends = (end,)
        else:  # free-standing
            centre = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
            yaw = float(rng.uniform(-math.pi, math.pi))
            direction = np.array([math.cos(yaw), math.sin(yaw)])
            start, end = centre - direction * length / 2.0, centre + direction * length / 2.0
            ends = (start, end)
        f = np.linspace(0.0, 1.0, max(2, int(length / 0.05) + 1))
        xs, ys = start[0] + f * (end[0] - start[0]), start[1] + f * (end[1] - start[1])
        if not scene.inside(xs, ys).all():
            continue
        if any(np.min(o.distance_xy(xs, ys)) < 0.3 for o in scene.footprints()):
            continue
        # Leave a passage beside a free end.
        if any(scene.clearance(p[0], p[1]) < 0.8 for p in ends):
            continue
        break
    else:
        return None
    r = rng.random()
    if r < 0.5:  # a full frame
        stiles, top = True, float(rng.uniform(0.04, 0.1))
    elif r < 0.75:  # top and bottom rails, butt-jointed panes
        stiles, top = False, float(rng.uniform(0.04, 0.1))
    else:  # frameless glass in a floor channel
        stiles, top = False, 0.0
    door = 1.9 < height < 2.4 and rng.random() < 0.5
    bottom = float(rng.uniform(0.1, 0.3)) if door else float(rng.uniform(0.02, 0.08))
    band = None
    if height > 1.2 and rng.random() < 0.5:  # a frosted safety band
        band_mat = DEFAULT_OBJECT
        if config.object_textures:
            band_mat = Material('plain' if rng.random() < 0.6 else 'stripes',
                                _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.75, 0.95)),
                                _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.4, 0.7)),
                                scale=float(rng.uniform(0.02, 0.06)), angle=math.pi / 2,
                                variation=0.01)
        band = (float(rng.uniform(0.9, 1.6)), float(rng.uniform(0.04, 0.2)), band_mat)
    return glass_partition(start, end, height, panes, random_glass_material(rng, config),
                           _glass_frame_material(rng, config),
                           thickness=float(rng.uniform(0.006, 0.012)),
                           profile=float(rng.uniform(0.03, 0.08)),
                           depth=float(rng.uniform(0.035, 0.07)), bottom_rail=bottom,
                           top_rail=top, stiles=stiles or door, band=band, handle=door)


def random_glass(rng, scene, config):
    """
    Put glass partitions, screens or doors into 30 % of the rooms (into ``scene.obstacles``).

    One (sometimes two) straight partitions of one to three panes, from a wall into the room
    (not in front of a door) or free-standing, floor-to-ceiling, door-high or low, 0.3 m clear
    of other glass, with a passage of at least 0.8 m beside each free end; a room where none
    fits gets none. Door-high ones are glass doors half of the time: kick plate, stiles and a
    push bar. Nothing when ``config.glass`` is off. Call it before the obstacles are placed,
    so that they keep clear of the glass.
    """
    if not config.glass or scene.outline is None or rng.random() >= 0.3:
        return
    for _ in range(1 if rng.random() < 0.8 else 2):
        group = _random_glass_group(rng, scene, config)
        if group:
            scene.obstacles.extend(group)


# --- steps, curbs and platforms ---------------------------------------------------------

#: Salts of the side streams of the step and wall clutter draws.
_STEPS_SALT = 0x57e95
_WALL_CLUTTER_SALT = 0xc1077e2

#: Steps and platforms leave passages at least this wide (metres) between blocked floor.
STEP_PASSAGE = 0.7
#: How far (metres) a step or platform along a wall reaches into it (no slit at the wall).
_INSET = 0.01


def _wall_frame(scene, i):
    """Wall ``i``: its first vertex, unit vector along it, inward normal and length."""
    a, b = scene.walls()
    e = b[i] - a[i]
    length = float(np.hypot(*e))
    u = e / length
    return a[i], u, np.array([-u[1], u[0]]), length


def _wall_box(p, u, n, along, length, off, depth, height, bottom=0.0, material=DEFAULT_OBJECT,
              label=''):
    """
    Return a box against a wall: its local x axis along the inward normal ``n``.

    It spans ``along`` to ``along + length`` along the wall (from ``p`` in direction ``u``)
    and ``off`` to ``off + depth`` into the room, as :meth:`_Placer.wall_spot` does.
    """
    c = p + u * (along + length / 2.0) + n * (off + depth / 2.0)
    return Box(float(c[0]), float(c[1]), float(depth), float(length), float(height),
               math.atan2(float(n[1]), float(n[0])), float(bottom), material, label)


def _step_material(rng, config, floor):
    """Top and riser of a step: the floor's own material in 40 % (the hard case)."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    r = rng.random()
    if r < 0.4:
        return floor
    if r < 0.7:  # another floor: a carpeted stage, a tiled or wooden platform
        return replace(random_floor_material(rng, config), offset=(0.0, 0.0))
    return random_object_material(rng, config)


def _edge_strip_material(rng, config):
    """Draw a contrasting nosing: yellow and black tape, aluminium or dark rubber."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    r = rng.random()
    if r < 0.35:
        return Material('stripes', _lin((0.95, 0.78, 0.08)), (0.02, 0.02, 0.02),
                        scale=float(rng.uniform(0.05, 0.12)), angle=math.pi / 4,
                        variation=0.02)
    if r < 0.7:
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.55, 0.85)),
                        variation=0.02, specular=0.5 if config.specular else 0.0,
                        shininess=60.0)
    return Material('noise', _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.03, 0.12)), (0.05, 0.05, 0.05),
                    scale=0.004, scale2=0.3, variation=0.2)


def _front_extras(rng, config, p, u, n, along, length, depth, height, mat):
    """Return a lower step in front (sometimes) and an edge strip on the front (sometimes)."""
    parts = []
    front, top = depth, height
    if height >= 0.08 and rng.random() < 0.35:  # a lower step in front
        tread = float(rng.uniform(0.25, 0.4))
        top = height / 2.0
        parts.append(_wall_box(p, u, n, along, length, depth - 0.01, tread + 0.01, top,
                               material=mat))
        front = depth + tread
    if rng.random() < 0.25:
        strip = float(rng.uniform(0.03, 0.05))
        parts.append(_wall_box(p, u, n, along, length, front - strip, strip + 0.002,
                               top + 0.002, top - 0.02, _edge_strip_material(rng, config)))
    return parts


#: Kinds of steps and how often :func:`random_steps` draws them.
STEP_KINDS = ('platform', 'stage', 'section', 'curb', 'threshold')
_STEP_KIND_P = (0.3, 0.15, 0.2, 0.25, 0.1)


def _step_parts(rng, scene, config, floor, kind):
    """Draw a step of ``kind`` (see :data:`STEP_KINDS`): its Box parts (unchecked) or None."""
    mat = _step_material(rng, config, floor)
    a, _ = scene.walls()
    if kind == 'threshold':
        if not scene.doors:
            return None
        door = scene.doors[int(rng.integers(len(scene.doors)))]
        p, u, n, _ = _wall_frame(scene, door.wall)
        extra = float(rng.uniform(0.0, 0.1))
        return [_wall_box(p, u, n, door.start - extra / 2.0, door.width + extra, -_INSET,
                          float(rng.uniform(0.06, 0.14)) + _INSET,
                          float(rng.uniform(0.03, 0.05)), material=mat)]
    if kind == 'platform':
        i = int(rng.integers(len(a)))
        p, u, n, wall_len = _wall_frame(scene, i)
        if wall_len < 1.2:
            return None
        length = float(rng.uniform(1.0, min(4.0, wall_len)))
        depth = float(rng.uniform(0.4, 1.6))
        height = float(rng.uniform(0.05, 0.2))
        r = rng.random()
        along = 0.0 if r < 0.25 else wall_len - length if r < 0.5 else \
            float(rng.uniform(0.0, wall_len - length))
        parts = [_wall_box(p, u, n, along, length, -_INSET, depth + _INSET, height,
                           material=mat)]
        return parts + _front_extras(rng, config, p, u, n, along, length, depth, height,
                                     mat)
    if kind == 'stage':
        k = int(rng.integers(len(a)))
        p, u, n, len_k = _wall_frame(scene, k)
        _, u_prev, _, len_prev = _wall_frame(scene, k - 1)
        if u_prev[0] * u[1] - u_prev[1] * u[0] <= 0.0:  # a reflex corner
            return None
        length = float(rng.uniform(1.0, max(1.0, min(3.0, len_k - 0.5))))
        depth = float(rng.uniform(1.0, max(1.0, min(2.5, len_prev - 0.5))))
        height = float(rng.uniform(0.1, 0.2))
        parts = [_wall_box(p, u, n, -_INSET, length + _INSET, -_INSET, depth + _INSET, height,
                           material=mat)]
        return parts + _front_extras(rng, config, p, u, n, -_INSET, length + _INSET,
                                     depth, height, mat)
    if kind == 'curb' and rng.random() < 0.7:  # from a wall into the room
        i = int(rng.integers(len(a)))
        p, u, n, wall_len = _wall_frame(scene, i)
        if wall_len < 1.0:
            return None
        width = float(rng.uniform(0.1, 0.3))
        along = float(rng.uniform(0.3, wall_len - 0.3 - width))
        reach = float(rng.uniform(0.8, 3.0))
        return [_wall_box(p, u, n, along, width, -_INSET, reach + _INSET,
                          float(rng.uniform(0.06, 0.2)), material=mat)]
    # Free-standing: a curb-like ridge or a raised section of the floor.
    x0, y0, x1, y1 = scene.bounds()
    cx, cy = (float(v) for v in rng.uniform((x0, y0), (x1, y1)))
    yaw = float(rng.choice([0.0, math.pi / 2])) if rng.random() < 0.8 \
        else float(rng.uniform(-math.pi, math.pi))
    if kind == 'curb':
        return [Box(cx, cy, float(rng.uniform(0.8, 2.5)), float(rng.uniform(0.1, 0.3)),
                    float(rng.uniform(0.06, 0.2)), yaw, 0.0, mat)]
    sx = float(rng.uniform(1.0, max(1.0, min(3.0, 0.5 * (x1 - x0)))))
    sy = float(rng.uniform(1.0, max(1.0, min(2.5, 0.5 * (y1 - y0)))))
    return [Box(cx, cy, sx, sy, float(rng.uniform(0.03, 0.12)), yaw, 0.0, mat)]


def _footprint_samples(box, inset=0.02, step=0.1):
    """Points (N, 2) on a grid over the footprint of ``box``, ``inset`` inside its edges."""
    nx = max(2, int(math.ceil(box.size_x / step)) + 1)
    ny = max(2, int(math.ceil(box.size_y / step)) + 1)
    hx, hy = max(box.size_x / 2.0 - inset, 0.0), max(box.size_y / 2.0 - inset, 0.0)
    lx, ly = np.meshgrid(np.linspace(-hx, hx, nx), np.linspace(-hy, hy, ny))
    c, s = math.cos(box.yaw), math.sin(box.yaw)
    return np.stack([box.x + c * lx.ravel() - s * ly.ravel(),
                     box.y + s * lx.ravel() + c * ly.ravel()], axis=1)


def _free_components(free, min_cells):
    """Count the 8-connected components of ``free`` (bool grid) of at least ``min_cells``."""
    n, _, stats, _ = cv2.connectedComponentsWithStats(free.astype(np.uint8), connectivity=8)
    return int(np.count_nonzero(stats[1:, cv2.CC_STAT_AREA] >= min_cells))


def keeps_passages(scene, parts, width=STEP_PASSAGE, cell=0.05, min_area=0.25):
    """
    Check that adding the standing ``parts`` to ``scene`` closes no passage ``width`` wide.

    On a ``cell`` grid, the floor where a disc of diameter ``width`` fits (clear of walls and
    footprints) must not fall into more pieces of at least ``min_area`` square metres than
    before: every such piece of the room stays reachable.
    """
    x0, y0, x1, y1 = scene.bounds()
    xs = np.arange(x0 + cell / 2.0, x1, cell)
    ys = np.arange(y0 + cell / 2.0, y1, cell)
    gx, gy = np.meshgrid(xs, ys)
    before = scene.clearance(gx, gy) > width / 2.0
    after = before.copy()
    for part in parts:
        if part.standing:
            after &= part.distance_xy(gx, gy) > width / 2.0
    min_cells = max(1, int(min_area / (cell * cell)))
    return _free_components(after, min_cells) <= _free_components(before, min_cells)


def _door_fronts(scene, depth=0.8):
    """Points (N, 2) on the floor in front of every door, ``depth`` into the room."""
    pts = []
    for door in scene.doors:
        p, u, n, _ = _wall_frame(scene, door.wall)
        s, t = np.meshgrid(np.linspace(door.start, door.start + door.width, 6),
                           np.linspace(0.02, depth, 5))
        pts.append(p + u * s.reshape(-1, 1) + n * t.reshape(-1, 1))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def _step_fits(scene, parts, threshold=False):
    """Check a step: in the room, clear of footprints and doors, passages kept."""
    base = [o for o in parts if o.standing]
    for part in base:
        pts = _footprint_samples(part, inset=_INSET + 0.01)
        if not scene.inside(pts[:, 0], pts[:, 1]).all():
            return False
        if any(np.min(o.distance_xy(pts[:, 0], pts[:, 1])) < 0.3 for o in scene.footprints()):
            return False
        if not threshold:
            fronts = _door_fronts(scene)
            if fronts.size and part.contains_xy(fronts[:, 0], fronts[:, 1]).any():
                return False
    return keeps_passages(scene, base)


def random_steps(rng, scene, config, floor):
    """
    Put low steps, curbs or raised platforms into 35 % of the rooms (into ``scene.obstacles``).

    One (a quarter of the time two) of: a platform 0.4-1.6 m deep and 1-4 m long along a
    wall, 5-20 cm high (30 %); a stage 1-3 by 1-2.5 m in a corner, 10-20 cm high (15 %); a
    raised section of the floor 1-3 by 1-2.5 m in the room, 3-12 cm high (20 %); a curb-like
    ridge 10-30 cm wide, 6-20 cm high, from a wall 0.8-3 m into the room or free-standing
    (25 %); a threshold ridge 3-5 cm high at a door (10 %; none without a door). Platforms
    and stages sometimes have a lower step in front of them (35 % of those at least 8 cm
    high) and an edge strip (25 %). The top is of the floor's own material in 40 % (see
    :func:`_step_material`). Every part is a standing :class:`Box` labelled
    :data:`STEP_LABEL`, so its footprint is blocked. A step stays in the room, 0.3 m clear of
    other footprints, off the floor in front of doors (but a threshold) and closes no passage
    narrower than :data:`STEP_PASSAGE` (see :func:`keeps_passages`); up to 12 tries of the
    drawn kind, else none.
    Nothing when ``config.steps`` is off. Call it before the obstacles are placed, so that
    they keep clear of the steps.
    """
    if not config.steps or scene.outline is None or rng.random() >= 0.35:
        return
    for _ in range(1 if rng.random() < 0.75 else 2):
        kind = str(rng.choice(STEP_KINDS, p=_STEP_KIND_P))
        for _ in range(12):
            parts = _step_parts(rng, scene, config, floor, kind)
            if parts and _step_fits(scene, parts, kind == 'threshold'):
                scene.obstacles.extend(replace(o, label=STEP_LABEL) for o in parts)
                break


# --- things on the walls ----------------------------------------------------------------

def _plate_color(rng):
    """Draw the colour of a switch or socket plate: white, cream, black, steel or grey."""
    r = rng.random()
    if r < 0.55:
        return _hsv(rng, (0.0, 1.0), (0.0, 0.03), (0.85, 0.97))
    if r < 0.7:
        return _hsv(rng, (0.1, 0.16), (0.08, 0.2), (0.8, 0.92))
    if r < 0.85:
        return _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.05, 0.15))
    return _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.45, 0.7))


def _photo_colors(rng):
    """Three colours of a photo-like picture: two grounds and a sky."""
    ground = _hsv(rng, (0.0, 1.0), (0.2, 0.9), (0.1, 0.8))
    other = _hsv(rng, (0.0, 1.0), (0.1, 1.0), (0.1, 0.95))
    sky = _hsv(rng, (0.0, 1.0), (0.0, 0.6), (0.4, 0.98))
    return ground, other, sky


def _wall_decal(rng, scene, kind, i, wall_len, config):
    """Draw a flat :class:`WallDecal` of ``kind`` on wall ``i`` (at ``start`` 0, unchecked)."""
    seed = int(rng.integers(1 << 30))
    if kind in ('poster', 'picture'):
        width = float(rng.uniform(0.3, 0.9) if kind == 'poster' else rng.uniform(0.25, 1.2))
        aspect = float(rng.uniform(1.2, 1.5)) if rng.random() < 0.7 else \
            float(rng.uniform(0.6, 0.8))
        height = width * aspect
        bottom = float(rng.uniform(0.8, 1.6) if kind == 'poster' else rng.uniform(1.0, 1.7)) \
            - height / 2.0
        ground, other, sky = _photo_colors(rng)
        if kind == 'poster':  # a picture (ground and sky) above lines of text on paper
            paper = _hsv(rng, (0.0, 1.0), (0.0, 0.7), (0.1, 0.95))
            border = float(rng.uniform(0.015, 0.04)) if rng.random() < 0.5 else 0.0
            frame = _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.85, 0.95))
            return WallDecal(i, 0.0, width, bottom, height, kind, ground, sky, paper,
                             border, frame, 0.3 if config.specular and rng.random() < 0.3
                             else 0.0, seed)
        r = rng.random()
        if r < 0.35:  # black
            frame = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.03, 0.12))
        elif r < 0.65:  # wood
            frame = _hsv(rng, (0.05, 0.1), (0.4, 0.8), (0.2, 0.6))
        elif r < 0.8:  # gilt
            frame = _hsv(rng, (0.1, 0.14), (0.5, 0.8), (0.5, 0.8))
        else:
            frame = _hsv(rng, (0.0, 1.0), (0.0, 0.04), (0.8, 0.95))
        return WallDecal(i, 0.0, width, bottom, height, kind, ground, other, sky,
                         float(rng.uniform(0.02, 0.07)), frame,
                         0.4 if config.specular and rng.random() < 0.4 else 0.0, seed)
    if kind == 'board':
        width = float(rng.uniform(0.9, min(2.4, wall_len - 0.2)))
        height = float(rng.uniform(0.6, 1.2))
        board = _hsv(rng, (0.5, 0.7), (0.0, 0.04), (0.82, 0.95))
        marker = _hsv(rng, (0.0, 1.0), (0.6, 1.0), (0.1, 0.6)) if rng.random() < 0.6 \
            else (0.02, 0.02, 0.03)
        return WallDecal(i, 0.0, width, float(rng.uniform(0.75, 1.0)), height, kind, board,
                         marker, board, float(rng.uniform(0.015, 0.03)),
                         _hsv(rng, (0.0, 1.0), (0.0, 0.04), (0.5, 0.75)),
                         float(rng.uniform(0.2, 0.5)) if config.specular else 0.0, seed)
    plate = _plate_color(rng)
    width = 0.08 if rng.random() < 0.7 else 0.15
    if kind == 'switch':
        bottom = float(rng.uniform(0.95, 1.15))
        rocker = _jitter_color(rng, plate, 0.1)
        return WallDecal(i, 0.0, width, bottom, 0.08, kind, plate, rocker, plate, 0.0,
                         plate, 0.0, seed)
    bottom = float(rng.uniform(0.1, 0.35)) if rng.random() < 0.75 \
        else float(rng.uniform(0.95, 1.1))
    recess = _tuple3(np.asarray(plate) * float(rng.uniform(0.7, 0.9)))
    return WallDecal(i, 0.0, width, bottom, 0.08, kind, plate, recess, (0.01, 0.01, 0.01), 0.0,
                     plate, 0.0, seed)


def _clutter_material(rng, config, kind):
    """Radiator fins, shelf boards, screens and books."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    spec = config.specular
    if kind == 'radiator':
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.75, 0.95)) if rng.random() < 0.75 \
            else _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.05, 0.3))
        return Material('stripes', base, _tuple3(np.asarray(base) * 0.6),
                        scale=float(rng.uniform(0.04, 0.08)), angle=math.pi / 2,
                        variation=0.02, specular=0.3 if spec else 0.0, shininess=40.0,
                        seed=int(rng.integers(1 << 30)))
    if kind == 'screen':
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.01, 0.05)),
                        variation=0.0, specular=float(rng.uniform(0.4, 0.9)) if spec else 0.0,
                        shininess=float(rng.uniform(100, 400)))
    if kind == 'display':  # a screen that is on: a blurry coloured picture
        ground, other, _ = _photo_colors(rng)
        return Material('noise', _tuple3(np.asarray(ground) * 2.5),
                        _tuple3(np.asarray(other) * 2.5), scale=0.05, scale2=0.25,
                        variation=0.3, seed=int(rng.integers(1 << 30)))
    return random_object_material(rng, config)


def _wall_clutter_parts(rng, scene, kind, i, config):
    """Draw a radiator, shelf or screen on wall ``i`` at ``along`` 0: (width, parts)."""
    p, u, n, _ = _wall_frame(scene, i)
    label = WALL_CLUTTER_LABEL
    if kind == 'radiator':
        length = float(rng.uniform(0.5, 1.6))
        bottom, top = float(rng.uniform(0.1, 0.2)), float(rng.uniform(0.45, 0.9))
        gap, depth = float(rng.uniform(0.02, 0.05)), float(rng.uniform(0.05, 0.12))
        mat = _clutter_material(rng, config, kind)
        parts = [_wall_box(p, u, n, 0.0, length, gap, depth, top, bottom, mat, label)]
        if rng.random() < 0.4:  # on feet, with pipes down into the floor
            for s in (0.1, length - 0.14):
                parts.append(_wall_box(p, u, n, s, 0.04, gap + depth / 2.0 - 0.015, 0.03,
                                       bottom, 0.0, mat, label))
            pipe = p + u * (-0.04 if rng.random() < 0.5 else length + 0.04) + n * 0.03
            parts.append(Cylinder(float(pipe[0]), float(pipe[1]),
                                  float(rng.uniform(0.008, 0.012)), bottom + 0.1, 0.0,
                                  _clutter_material(rng, config, 'pipe'), label))
        return length, parts
    if kind == 'shelf':
        length = float(rng.uniform(0.5, 1.5))
        bottom = float(rng.uniform(0.6, 1.9))
        thick, depth = float(rng.uniform(0.02, 0.04)), float(rng.uniform(0.15, 0.3))
        mat = _clutter_material(rng, config, kind)
        parts = [_wall_box(p, u, n, 0.0, length, 0.0, depth, bottom + thick, bottom, mat,
                           label)]
        if rng.random() < 0.5:  # a row of books
            s = float(rng.uniform(0.02, 0.3))
            for _ in range(int(rng.integers(2, 9))):
                w = float(rng.uniform(0.02, 0.05))
                if s + w > length - 0.02:
                    break
                d = float(rng.uniform(0.12, min(0.22, depth - 0.01)))
                parts.append(_wall_box(p, u, n, s, w, 0.005, d,
                                       bottom + thick + float(rng.uniform(0.15, 0.3)),
                                       bottom + thick, _clutter_material(rng, config, 'book'),
                                       label))
                s += w + float(rng.uniform(0.0, 0.01))
        return length, parts
    width = float(rng.uniform(0.6, 1.4))
    height = width * 9.0 / 16.0
    bottom = float(rng.uniform(0.9, 1.5))
    gap, depth = float(rng.uniform(0.01, 0.04)), float(rng.uniform(0.03, 0.06))
    parts = [_wall_box(p, u, n, 0.0, width, gap, depth, bottom + height, bottom,
                       _clutter_material(rng, config, 'screen'), label)]
    if rng.random() < 0.35:  # switched on: the picture 1 mm in front, inside a bezel
        bezel = float(rng.uniform(0.01, 0.03))
        parts.append(_wall_box(p, u, n, bezel, width - 2 * bezel, gap + depth, 0.001,
                               bottom + height - bezel, bottom + bezel,
                               _clutter_material(rng, config, 'display'), label))
    return width, parts


def _shift_along(obj, u, along):
    """Move ``obj`` (a Box or Cylinder part) by ``along`` metres in the wall direction u."""
    return replace(obj, x=float(obj.x + u[0] * along), y=float(obj.y + u[1] * along))


def _clear_in_3d(scene, parts, margin=0.03):
    """Check that ``parts`` keep ``margin`` from every obstacle whose heights they share."""
    for part in parts:
        if isinstance(part, Box):
            pts = _footprint_samples(part, inset=0.0, step=0.05)
        else:
            pts = np.array([[part.x, part.y]])
        for o in scene.obstacles:
            if o.bottom > part.height + margin or part.bottom > o.height + margin:
                continue
            if np.min(o.distance_xy(pts[:, 0], pts[:, 1])) < margin + (
                    part.radius if isinstance(part, Cylinder) else 0.0):
                return False
    return True


_WALL_KINDS = ('poster', 'picture', 'board', 'switch', 'socket', 'radiator', 'shelf', 'screen')
_WALL_KIND_P = (0.2, 0.16, 0.07, 0.14, 0.17, 0.1, 0.09, 0.07)


def random_wall_clutter(rng, scene, config):
    """
    Hang things on the walls of 70 % of the rooms (``scene.wall_decals``, ``scene.obstacles``).

    1 + Poisson(0.25 per metre of wall) items, at most 14, each one of: a poster (20 %) or a
    framed picture (16 %) with a photo-like procedural picture, centred 0.8-1.6 m (poster)
    or 1-1.7 m (picture) high; a whiteboard 0.9-2.4 m wide (7 %); a light switch 0.95-1.15 m
    high (14 %, next to a door when there is one, more often than not); a socket (17 %),
    0.1-0.35 m above the floor (a quarter of them at desk height); all flat
    :class:`WallDecal`. And, as raised boxes labelled :data:`WALL_CLUTTER_LABEL`, a radiator
    10-20 cm above the floor, 2-5 cm off the wall (10 %; 40 % of them on two feet with a
    pipe into the floor: those have footprints), a shelf 0.6-1.9 m high, sometimes with books
    (9 %), or a wall-mounted screen, sometimes on (7 %). Items stay on their wall (off doors,
    5 cm from its ends, under the ceiling), do not overlap each other and keep 3 cm from
    obstacles at their heights; an item that does not fit in 6 tries is left out. Nothing
    when ``config.wall_clutter`` is off.
    """
    if not config.wall_clutter or scene.outline is None or rng.random() >= 0.7:
        return
    a, _ = scene.walls()
    lengths = np.array([_wall_frame(scene, i)[3] for i in range(len(a))])
    taken = []  # (wall, s0, s1, z0, z1) of what is already there
    for door in scene.doors:
        taken.append((door.wall, door.start, door.start + door.width, 0.0, door.height))
    count = min(14, 1 + int(rng.poisson(0.25 * float(lengths.sum()))))
    for _ in range(count):
        kind = str(rng.choice(_WALL_KINDS, p=_WALL_KIND_P))
        for _ in range(6):
            i = int(rng.choice(len(a), p=lengths / lengths.sum()))
            _, u, _, wall_len = _wall_frame(scene, i)
            if kind in ('radiator', 'shelf', 'screen'):
                width, parts = _wall_clutter_parts(rng, scene, kind, i, config)
                z0 = min(o.bottom for o in parts)
                z1 = max(o.height for o in parts)
                decal = None
            else:
                decal = _wall_decal(rng, scene, kind, i, wall_len, config)
                width, parts = decal.width, []
                z0, z1 = decal.bottom, decal.bottom + decal.height
            if wall_len < width + 0.1 or z1 > scene.wall_height - 0.1:
                continue
            near_door = [d for d in scene.doors if d.wall == i]
            if kind == 'switch' and near_door and rng.random() < 0.6:
                door = near_door[int(rng.integers(len(near_door)))]
                gap = float(rng.uniform(0.08, 0.2))
                start = door.start + door.width + gap if rng.random() < 0.5 \
                    else door.start - gap - width
            else:
                start = float(rng.uniform(0.05, wall_len - width - 0.05))
            if start < 0.05 or start + width > wall_len - 0.05:
                continue
            if any(w == i and s0 - 0.03 < start + width and start < s1 + 0.03
                   and q0 - 0.03 < z1 and z0 < q1 + 0.03 for w, s0, s1, q0, q1 in taken):
                continue
            parts = [_shift_along(o, u, start) for o in parts]
            if parts and not (_clear_in_3d(scene, parts) and all(
                    scene.inside(*_footprint_samples(o, 0.005).T).all()
                    for o in parts if isinstance(o, Box))):
                continue
            taken.append((i, start, start + width, z0, z1))
            if decal is not None:
                scene.wall_decals.append(replace(decal, start=start))
            scene.obstacles.extend(parts)
            break


# --- photo textures ---------------------------------------------------------------------

#: Salt of the side stream of the photo texture draws.
_PHOTO_SALT = 0x9407e
#: How often the walls of a room, an obstacle material and a poster or picture get a photo.
PHOTO_WALL_P = 0.3
PHOTO_OBJECT_P = 0.35
PHOTO_PICTURE_P = 0.5
#: Salt of the side stream of the floor photo draws, and how often a room gets a photo floor.
_FLOOR_PHOTO_SALT = 0xf1009
PHOTO_FLOOR_P = 0.2


def _photo_rng(key, part, values=()):
    """Return a generator for ``part`` of a room (``key`` from its side stream) and ``values``."""
    return np.random.default_rng([_PHOTO_SALT, part] + list(key) + [int(v) for v in values])


def _material_key(mat):
    """Non-negative integers that tell materials apart (their seed, colours and scales)."""
    numbers = tuple(mat.color) + tuple(mat.color2) + (mat.scale, mat.scale2, mat.variation)
    return [int(mat.seed) & 0xFFFFFFFF] + [int(round(abs(float(c)) * 1e6)) for c in numbers]


def photo_material(rng, like, scale=(0.3, 1.5), upright=False):
    """
    Draw a ``photo`` material in place of ``like`` (whose specularity it keeps).

    A random texture of the bank, ``scale`` metres per repeat (uniform range), a random
    offset, a rotation (a small tilt when ``upright``, else any quarter turn plus a tilt) and
    a colour gain 0.6-1.1 with a slight tint.
    """
    index = int(rng.integers(len(texture_names())))
    size = float(rng.uniform(*scale))
    angle = float(rng.normal(0.0, 0.03))
    if not upright:
        angle += float(rng.integers(4)) * math.pi / 2.0
    gain = float(rng.uniform(0.6, 1.1))
    tint = np.clip(gain * np.exp(rng.normal(0.0, 0.08, 3)), 0.0, 1.5)
    offset = (float(rng.uniform(0.0, 10.0)), float(rng.uniform(0.0, 10.0)))
    return Material('photo', _tuple3(tint), tuple(like.color), scale=size, angle=angle,
                    variation=0.0, specular=like.specular, shininess=like.shininess,
                    offset=offset, seed=index)


def random_photo_textures(key, scene, config, floor):
    """
    Put photos of the texture bank on the walls, obstacles and pictures of ``scene``.

    ``key`` (integers from a side stream of the room's generator) seeds every draw, each
    from the thing it is about (the walls, an obstacle's material, a picture's seed), so a
    thing gets the same photo whatever else the room holds. Walls become a tiled photo in
    :data:`PHOTO_WALL_P` of the rooms (with ``config.wall_textures``, not in the ``shifted``
    style), an obstacle material in :data:`PHOTO_OBJECT_P` (with ``config.object_textures``;
    never glass, its frame or the floor's own material; parts of one material change
    together) and posters and pictures in :data:`PHOTO_PICTURE_P`. Geometry and labels do not
    change. Nothing when ``config.photo_textures`` is off or the bank is empty.
    """
    if not config.photo_textures or not texture_names():
        return
    gen = _photo_rng(key, 0)
    if gen.random() < PHOTO_WALL_P and config.wall_textures and config.style != 'shifted':
        wall = photo_material(gen, scene.appearance.wall, (0.5, 1.5), upright=True)
        scene.appearance = replace(scene.appearance, wall=wall)
    if config.object_textures:
        same_as_floor = replace(floor, seed=0)
        chosen = {}
        out = []
        for o in scene.obstacles:
            mat = o.material
            if (is_glass(o) or o.label == GLASS_LABEL or mat.kind == 'photo'
                    or replace(mat, seed=0) == same_as_floor):
                out.append(o)
                continue
            if mat not in chosen:
                gen = _photo_rng(key, 1, _material_key(mat))
                chosen[mat] = photo_material(gen, mat) if gen.random() < PHOTO_OBJECT_P \
                    else mat
            out.append(replace(o, material=chosen[mat]) if chosen[mat] is not mat else o)
        scene.obstacles = out
    decals = []
    for d in scene.wall_decals:
        if d.kind in ('poster', 'picture'):
            gen = _photo_rng(key, 2, [d.seed])
            if gen.random() < PHOTO_PICTURE_P:
                d = replace(d, photo=int(gen.integers(len(texture_names()))))
        decals.append(d)
    scene.wall_decals = decals


def random_floor_photo(rng, scene, config, floor):
    """
    Make the floor of ``scene`` a tiled photo of the texture bank in :data:`PHOTO_FLOOR_P`.

    ``rng`` is the room's floor-photo side stream. The photo (any rotation, 0.5-2 m per
    repeat) keeps the floor's specularity; obstacles of the floor's own material (step tops
    and look-alike objects, ``floor`` before the photo) follow it, so they still look like the
    floor. Rugs, mats and floor markings stay. The floor stays free: only the look changes.
    Nothing with ``config.floor_photos`` or ``config.floor_materials`` off, in the ``shifted``
    style or when the bank is empty.
    """
    if (not config.floor_photos or not config.floor_materials or config.style == 'shifted'
            or not texture_names() or rng.random() >= PHOTO_FLOOR_P):
        return
    new_floor = photo_material(rng, scene.appearance.floor, (0.5, 2.0))
    scene.appearance = replace(scene.appearance, floor=new_floor)
    same = replace(floor, seed=0)
    out = []
    for o in scene.obstacles:
        if o.material == floor:
            o = replace(o, material=new_floor)
        elif replace(o.material, seed=0) == same:  # the same floor, another pattern phase
            shift = (float(rng.uniform(0.0, 10.0)), float(rng.uniform(0.0, 10.0)))
            o = replace(o, material=replace(new_floor, offset=shift))
        out.append(o)
    scene.obstacles = out


def make_scene(rng, randomization=None):
    """
    Make a random room seeded by ``rng`` (a numpy Generator), in the WORLD frame.

    ``randomization`` is a :class:`RandomizationConfig` (default: everything on). The room
    outline is centred near the origin; obstacles are placed inside it.
    """
    config = randomization if randomization is not None else RandomizationConfig()
    outline = _random_outline(rng, config)
    wall_height = float(rng.uniform(2.4, 3.2))
    floor = random_floor_material(rng, config)
    appearance = random_appearance(rng, config, outline, wall_height, floor)
    # Photo textures draw from a side stream taken here, where the generator does not depend
    # on the factors drawn later (steps, glass, clutter move the obstacle draws).
    photo_key = [int(v) for v in _side_rng(rng, _PHOTO_SALT).integers(0, 1 << 32, 4)] \
        if config.photo_textures else None
    floor_photo_rng = _side_rng(rng, _FLOOR_PHOTO_SALT)
    # Reflections and glass draw from side streams: the rest of the room stays what it is
    # without them (and a room that gets neither is the same as with both switched off).
    if config.reflections:
        appearance = random_floor_reflection(_side_rng(rng, _REFLECTION_SALT), config,
                                             appearance)
    scene = Scene(outline=outline, wall_height=wall_height, ceiling=True, appearance=appearance)
    if config.doors:
        scene.doors = _random_doors(rng, scene)
    if config.decals:
        scene.decals = _random_decals(rng, scene, config, floor)
    if config.glass:
        random_glass(_side_rng(rng, _GLASS_SALT), scene, config)
    # Steps and wall clutter too: a room that gets none is the same as with them off.
    if config.steps:
        random_steps(_side_rng(rng, _STEPS_SALT), scene, config, floor)
    if config.obstacles and config.max_obstacles > 0:
        area = scene.area()
        if rng.random() < 0.08:
            n = 0
        else:
            n = int(min(config.max_obstacles, rng.poisson(area * rng.uniform(0.1, 0.5)) + 1))
        placer = _Placer(rng, scene)
        covered = 0.0
        for _ in range(n):
            group = _random_group(rng, placer, config, wall_height, floor)
            if not group or not placer.fits(group):
                continue
            g_area = sum(o.size_x * o.size_y if isinstance(o, Box) else math.pi * o.radius ** 2
                         for o in group if o.standing)
            if covered + g_area > 0.4 * area:
                continue
            covered += g_area
            scene.obstacles.extend(group)
    if config.wall_clutter:
        random_wall_clutter(_side_rng(rng, _WALL_CLUTTER_SALT), scene, config)
    if photo_key is not None:
        random_photo_textures(photo_key, scene, config, floor)
    random_floor_photo(floor_photo_rng, scene, config, floor)
    if config.style == 'shifted':
        _restyle(rng, scene, config, floor)
    return scene
