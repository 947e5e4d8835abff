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
Steering from a free-space occupancy grid in the robot base frame: the ROS-free driver core.

:class:`DriverLogic` turns the newest grid (nav_msgs/OccupancyGrid layout: int8 cells, 0 free,
100 occupied, -1 unknown, row-major, ``origin`` = base-frame corner of cell (0, 0)) into a
velocity command ``(v, w)`` for a circular differential-drive robot (Create 3: radius 0.17 m).
It drives forward: the camera looks forward, so nothing behind the robot is known. The one
exception is a recovery (step 9), which backs up over the path the robot drove, and only there.

The algorithm, once per grid and once per control step:

1. **Blocked cells** (once per grid). A cell is blocked when it is occupied
   (``>= occupied_threshold``) or unknown (``< 0``); the area outside the grid counts as
   unknown. The one exception is the *blind zone*: a forward camera never sees the floor under
   and beside the robot (nor, for the default camera, the first 0.31 m ahead), so without an
   exception the robot's own footprint would always be blocked. Unknown cells closer than
   ``blind_distance`` to the base origin that no grid so far has shown (the driver keeps the
   union of the known cells of every grid with the same layout) are therefore not blocked:
   that floor was in view while the robot approached it, a circular robot turning in place
   sweeps no new floor, and the bumper (hazard input) covers the rest. Unknown cells the
   camera can see (known in some earlier grid) and occupied cells always count, so an
   unknown patch ahead never becomes free by coming close.
2. **Clearance map** (once per grid). A Euclidean distance transform of the blocked cells,
   minus one cell diagonal, is a lower bound of the distance from any point of a cell to any
   blocked floor (the true boundary may lie anywhere inside the blocked cell, the point
   anywhere inside its own).
   **Obstacle memory.** Given the odometry pose of each grid, the occupied cells are also
   remembered (in the odometry frame, for ``memory_time`` seconds, within ``memory_range``)
   and drawn into later grids, so an obstacle that left the view (beside the robot after a
   turn in place, or below the image's lower edge) still blocks. By default only age and
   distance forget a remembered obstacle, not later grids that show its cell free: a
   segmentation model most often misses an obstacle when it fills the view from close by
   (a box face taken for floor), which is exactly when the memory matters.
   ``memory_free_hits`` > 0 forgets a cell after that many grids showed it free (for scenes
   with people or other moving obstacles, and against a model's passing false obstacles,
   which otherwise pile up while the robot turns); with ``memory_free_min_range`` only
   grids that show the cell free from at least that far count. ``memory_min_sightings`` > 1
   draws a remembered cell into later grids only once that many grids showed it occupied
   (within ``memory_time``): an obstacle is seen again and again as the robot comes closer,
   a speck of a single frame is not. The grid it is seen in blocks either way.
3. **Where the robot is now.** The grid shows the world at the image's stamp; since then the
   robot has moved: by the odometry between the grid's stamp and now when it is given, else
   by the last command ``(v, w)`` held for ``grid_age`` seconds. Candidate paths start at
   that pose.
4. **Candidate arcs.** ``num_arcs`` constant-curvature paths with curvatures evenly spread over
   ``[-max_curvature, max_curvature]``, each sampled every half cell up to ``lookahead`` metres
   or a quarter turn, whichever is shorter. The free length ``L`` of an arc is the distance
   travelled before the first sample whose clearance is below ``robot_radius +
   safety_margin``: the footprint plus the margin would touch an occupied or unknown cell.
   (When the robot is already inside that margin, samples pass while their clearance stays at
   or above the current one and above ``robot_radius``, so the robot can leave.)
5. **The most open direction.** Each arc scores ``L / lookahead`` plus a bonus for the room
   left beside it (the smallest clearance beyond the margin along its free part, up to 0.5 m)
   minus small penalties for turning (``|k|``) and for changing the previous choice; the best
   score wins. In an open room the straight arc wins; an obstacle on the left makes the left
   arcs short, so a right arc wins.
   **Exploration.** With odometry the driver remembers the floor its footprint swept (cells
   of ``0.1`` m in the odometry frame). Among the drivable arcs with at least as much room
   beside them as the best one, each gets ``explore_weight`` times the share of its free part
   (centre line and both footprint edges) not swept yet, and the best total wins: the robot
   prefers new floor, and never gives up room beside its path for it.
   **Frontier target** (``frontier_weight`` > 0, with odometry). The driver also keeps a
   floor map (:class:`~freespace_seg.driving.exploration.FloorMap`: 0.1 m cells of the
   odometry frame in a ``frontier_map_size`` window that follows the robot) of what grids
   showed free or blocked and what the footprint swept. Every ``frontier_replan`` seconds
   without a target, when no arc of ``resume_distance`` leads mostly over floor not swept yet
   (or at once after a dead end), it picks the nearest reachable goal: seen-free floor not
   swept, with mostly new floor around it (never-seen floor counts: a frontier); reachable
   over seen-free cells that keep ``robot_radius + safety_margin`` + 0.15 m from cells seen
   blocked; nearest by path length plus turning (``max_linear / rotate_speed`` m per rad).
   Each drivable arc (``L >= stop_distance`` + 5 mm; no other arc is ever chosen) then scores
   ``frontier_weight`` times the path length to the target it gains along its free part, over
   ``lookahead``. When no drivable arc gains 0.1 m and the path's waypoint (within 0.6 m)
   lies more than a quarter turn off the heading, the robot turns in place towards it (a
   rotate plan with reason ``frontier``) until it faces it or an arc gains; blocked turns
   (step 7) and recovery turns go towards its side. A target is kept until swept (or no
   goal) or given up: no 0.2 m closer within ``frontier_timeout``, a dead end, or a full
   turn; then it is skipped for 60 s. The map's blocked cells also take their floor out of
   the blind zone of step 1, so that a table leg seen earlier blocks beside the robot after
   the obstacle memory forgot it. With ``frontier_narrow_room`` under 0.15 m (0.03 by
   default), when no goal is reachable at that clearance, the plan runs again with that room
   instead (a *narrow* target). With ``tight_path_speed`` > 0 (0.15 m/s by default), when no
   goal is reachable at either, the cells the robot's centre passed through are passable
   too (a *tight* target), and where the path of a narrow or tight target within 1 m holds
   a cell only that plan made passable, the robot follows the path by pure pursuit instead
   of scoring arcs (:meth:`DriverLogic._path_plan`, reason ``path``).
6. **Speed.** ``v`` falls linearly from ``max_linear`` at ``L >= slow_distance`` to
   ``min_linear`` (at most ``max_linear``) at ``L = stop_distance`` (so it never creeps
   towards the stop point for ever), and ``v <= sqrt(2 * max_linear_decel * (L -
   stop_distance))`` so the robot can always stop within the free length it has.
   ``w = v * k``; if ``|w|`` would exceed ``max_angular`` both are scaled down, keeping the
   curvature.
7. **Blocked ahead: rotate in place.** When the best ``L`` is less than ``stop_distance``
   plus 5 mm (so the speed limit of step 6 never leaves it standing on an arc), the
   robot stops and turns in place at ``rotate_speed`` towards the side (left, y > 0, or right)
   with more free cells within ``lookahead`` (or of the frontier waypoint); it keeps that
   direction and keeps turning until an arc has ``L >= resume_distance`` (hysteresis, so it
   never dithers at the threshold).
8. **Acceleration limits.** Each output moves towards its target by at most
   ``max_linear_accel * dt`` when speeding up, ``max_linear_decel * dt`` when slowing down and
   ``max_angular_accel * dt`` for the turn rate. Safety stops (stale grid, hazard, e-stop) do
   not go through here: :meth:`DriverLogic.stop` zeroes the output at once.
9. **Recovery.** With odometry the driver keeps the path it drove (a point every 2 cm, the
   last 10 m). A recovery starts after a bump (:meth:`DriverLogic.escape`: the grid evidently
   missed what the robot hit) or in a dead end (turning in place for ``recovery_after``
   seconds without an arc of ``resume_distance``). It backs up along that path: first it
   turns in place until its back points at the path 0.1 m behind it, then it reverses at
   ``backup_speed`` along it (pure pursuit backwards), for ``backup_distance`` metres. It
   stops early at the path's first point, after ``recovery_timeout`` seconds, when it is
   more than ``backup_tolerance`` from the path, or when a remembered obstacle lies on it.
   Without odometry, or off its path, it does not back up at all (and a dead end just turns
   on, as in step 7). Then it turns in place
   towards the side with more free cells, at least by the escape angle (``hazard_turn`` in
   the node) or ``recovery_turn``, and on until an arc has ``resume_distance``, as in step 7.

Outputs always satisfy ``-backup_speed <= v <= max_linear`` and ``|w| <= max_angular``; ``v``
is negative only while backing up.
"""

import collections
from dataclasses import dataclass, fields, replace
import math

import cv2
from freespace_seg.driving.exploration import CELL as _FLOOR_CELL, FloorMap
# The cell values and the grid description (GridSpec) are the ground's, one for the package.
from freespace_seg.ground.grid import UNKNOWN
import numpy as np

#: largest clearance bonus counted, metres
_CLEARANCE_BONUS_CAP = 0.5
#: each grid cell is split into this many squares a side for the clearance bound
_CLEARANCE_SUBCELLS = 4
#: an arc is drivable only with this much room beyond stop_distance (m): the speed limit
#: sqrt(2 * decel * room) keeps the robot moving (0.1 m/s at 1 m/s^2), so it never stands
#: in 'drive' on an arc one float rounding longer than stop_distance (a float32 grid
#: resolution made 0.1 m arcs 0.1000000015 m long)
_MIN_ROOM = 0.005
#: the path driven (odometry): one point each time the robot moved this far (m) ...
_TRAIL_STEP = 0.02
#: ... and at most this many points (10 m); a jump of more than _TRAIL_JUMP (m) between two
#: steps starts it afresh
_TRAIL_POINTS = 500
_TRAIL_JUMP = 0.25
#: a backup steers for the point of the path driven this far (m) behind the robot
_BACKUP_REACH = 0.1
#: ... and checks that it stays on the path driven by the last points it passed; the path's
#: first point counts as reached this close (m)
_BACKUP_PASSED = 10
_BACKUP_ARRIVED = 0.01
#: a backup first turns in place until its back points within this angle (rad) of that point
_BACKUP_ALIGN = 0.3
#: cell size (m) of the memory of the floor the footprint swept, and its size in cells
_VISIT_CELL = 0.1
_VISIT_CELLS = 100_000
#: visited-cell keys: (ix + _KEY_OFFSET) * _KEY_SCALE + (iy + _KEY_OFFSET)
_KEY_OFFSET = 1 << 20
_KEY_SCALE = 1 << 21
#: frontier target: arcs are looked up in its distance field every this many metres
_FRONTIER_STEP = 0.1
#: a tight path (see DriverLogic._path_plan): how far it is looked at, the pursuit point,
#: the bearing that turns in place and the clearance beyond robot_radius
_PATH_REACH = 1.0
_PATH_LOOKAHEAD = 0.3
_PATH_TURN = 0.4
_PATH_MARGIN = 0.01
#: a turn in place towards the target starts when no drivable arc gets this much closer (m)
#: and the waypoint lies more than _FRONTIER_TURN_BEARING (rad) off the heading ...
_FRONTIER_TURN_PROGRESS = 0.1
_FRONTIER_TURN_BEARING = 0.5 * math.pi
#: ... and ends when the waypoint is within _FRONTIER_TURN_DONE (rad) of the heading, an arc
#: of resume_distance gets _FRONTIER_TURN_GOOD (m) closer, or after a full turn (a give-up)
_FRONTIER_TURN_DONE = 0.35
_FRONTIER_TURN_GOOD = 0.25
#: a path to a frontier target keeps this much (m) more than the inflated radius from every
#: cell seen blocked (centre to centre, 0.1 m cells), room the arcs need to pass
_FRONTIER_ROOM = 0.15
#: the robot must get this much (m) closer to its target within frontier_timeout
_FRONTIER_MIN_GAIN = 0.2
#: a target given up on (timeout, dead end, a full turn) is skipped for this long (s)
_FRONTIER_GIVE_UP_TIME = 60.0


@dataclass(frozen=True)
class DriverConfig:
    """
    Limits and tuning of :class:`DriverLogic`; metres, seconds and radians.

    Defaults fit an iRobot Create 3 (radius 0.17 m; 0.306 m/s cap with safety on) with the
    package's default camera and 4 m x 4 m grid ahead of the robot.
    """

    max_linear: float = 0.3
    min_linear: float = 0.05
    max_angular: float = 1.0
    max_linear_accel: float = 0.5
    max_linear_decel: float = 1.0
    max_angular_accel: float = 3.0
    robot_radius: float = 0.17
    safety_margin: float = 0.05
    stop_distance: float = 0.1
    slow_distance: float = 0.5
    resume_distance: float = 0.4
    lookahead: float = 2.0
    blind_distance: float = 0.45
    rotate_speed: float = 1.0
    num_arcs: int = 15
    max_curvature: float = 2.0
    turn_weight: float = 0.1
    change_weight: float = 0.05
    clearance_weight: float = 0.2
    occupied_threshold: int = 50
    memory_time: float = 10.0
    memory_range: float = 2.0
    memory_free_hits: int = 0
    memory_free_min_range: float = 0.0
    memory_min_sightings: int = 3
    recovery_after: float = 5.0
    recovery_turn: float = 1.57
    backup_distance: float = 0.3
    backup_speed: float = 0.1
    backup_tolerance: float = 0.05
    recovery_timeout: float = 10.0
    explore_weight: float = 0.3
    frontier_weight: float = 1.0
    frontier_replan: float = 1.0
    frontier_timeout: float = 20.0
    frontier_map_size: float = 20.0
    tight_path_speed: float = 0.15
    frontier_narrow_room: float = 0.03

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value):
                raise ValueError(f'{f.name} must be a finite number, got {value!r}')
            if value < 0:
                raise ValueError(f'{f.name} must be >= 0, got {value!r}')
        positive = ('max_linear_accel', 'max_linear_decel', 'max_angular_accel',
                    'robot_radius', 'lookahead', 'max_curvature', 'memory_range',
                    'backup_speed', 'backup_tolerance', 'recovery_timeout',
                    'frontier_replan', 'frontier_timeout')
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f'{name} must be > 0, got {getattr(self, name)!r}')
        if int(self.memory_free_hits) != self.memory_free_hits:
            raise ValueError('memory_free_hits must be an integer, got '
                             f'{self.memory_free_hits!r}')
        if int(self.memory_min_sightings) != self.memory_min_sightings or \
                self.memory_min_sightings < 1:
            raise ValueError('memory_min_sightings must be a positive integer, got '
                             f'{self.memory_min_sightings!r}')
        if int(self.num_arcs) != self.num_arcs or self.num_arcs < 1:
            raise ValueError(f'num_arcs must be a positive integer, got {self.num_arcs!r}')
        if not 1 <= self.occupied_threshold <= 100:
            raise ValueError('occupied_threshold must be in [1, 100], got '
                             f'{self.occupied_threshold!r}')
        if not self.stop_distance < self.slow_distance:
            raise ValueError(f'slow_distance ({self.slow_distance}) must be greater than '
                             f'stop_distance ({self.stop_distance})')
        if not self.stop_distance <= self.resume_distance:
            raise ValueError(f'resume_distance ({self.resume_distance}) must be at least '
                             f'stop_distance ({self.stop_distance})')
        if not self.resume_distance < self.lookahead:
            raise ValueError(f'lookahead ({self.lookahead}) must be greater than '
                             f'resume_distance ({self.resume_distance})')
        if self.frontier_map_size < 4.0 * self.lookahead:
            raise ValueError(f'frontier_map_size ({self.frontier_map_size}) must be at least '
                             f'4 x lookahead ({4.0 * self.lookahead})')
        if self.frontier_narrow_room > _FRONTIER_ROOM:
            raise ValueError(f'frontier_narrow_room ({self.frontier_narrow_room}) must not '
                             f'exceed {_FRONTIER_ROOM} (the room of the first plan)')
        if self.rotate_speed > self.max_angular:
            raise ValueError(f'rotate_speed ({self.rotate_speed}) must not exceed '
                             f'max_angular ({self.max_angular})')

    @property
    def inflated_radius(self):
        """Return the robot radius plus the safety margin."""
        return self.robot_radius + self.safety_margin

    def with_values(self, **values):
        """Return a copy with some fields changed (validated again)."""
        return replace(self, **values)


@dataclass(frozen=True)
class Plan:
    """
    One decision before acceleration limits.

    ``mode`` is ``drive``, ``rotate`` or ``backup`` (a recovery: back along the path driven);
    ``free_distance`` is the free length of the chosen arc (``L``), ``ahead_distance`` that of
    the straight one, ``curvature`` the chosen arc's; ``reason`` says why a backup runs
    (``dead end`` or ``hazard``), ``frontier`` for a turn in place towards the frontier
    target, ``path`` while the robot follows a tight path to it, empty otherwise.
    """

    linear: float
    angular: float
    mode: str
    curvature: float
    free_distance: float
    ahead_distance: float
    reason: str = ''


class ClearanceMap:
    """
    The blocked cells of one grid and a lower bound of each point's distance to them.

    ``grid`` is an int8-like (rows, cols) array laid out by ``layout`` (a
    :class:`freespace_seg.ground.grid.GridSpec`).
    ``observed`` (bool, same shape) marks the cells some grid has shown; unknown cells never
    shown within ``blind_distance`` of the robot are the blind zone, not blocked (default: the
    known cells of ``grid`` itself). ``extra_occupied`` ((N, 2) base-frame points, e.g.
    obstacles remembered from earlier grids) marks more cells occupied. ``not_blind`` ((N, 2)
    base-frame points, e.g. floor the frontier layer's map holds as seen blocked) takes their
    cells out of the blind zone: unknown there, they block. The map is padded with unknown,
    never shown cells so that it always covers the robot's neighbourhood.
    """

    def __init__(self, grid, layout, config, observed=None, extra_occupied=None,
                 not_blind=None):
        grid = np.asarray(grid)
        if grid.ndim != 2 or grid.size == 0:
            raise ValueError(f'grid must be a non-empty 2-D array, got shape {grid.shape}')
        if not layout.resolution > 0 or not math.isfinite(layout.resolution):
            raise ValueError(f'grid resolution must be > 0, got {layout.resolution!r}')
        self.layout = layout
        res = float(layout.resolution)
        self._res = res
        self._cos, self._sin = math.cos(layout.origin_yaw), math.sin(layout.origin_yaw)
        rows, cols = grid.shape
        # Pad so the canvas holds every cell within reach of the robot at the origin.
        reach = config.blind_distance + config.inflated_radius + 2.0 * res
        gx, gy = self._to_grid(np.array([-reach, reach, -reach, reach]),
                               np.array([-reach, -reach, reach, reach]))
        pad_l = max(0, int(math.ceil(-gx.min() / res)) + 1)
        pad_r = max(0, int(math.ceil((gx.max() - cols * res) / res)) + 1)
        pad_b = max(0, int(math.ceil(-gy.min() / res)) + 1)
        pad_t = max(0, int(math.ceil((gy.max() - rows * res) / res)) + 1)
        canvas = np.full((rows + pad_b + pad_t, cols + pad_l + pad_r), UNKNOWN, dtype=np.int16)
        canvas[pad_b:pad_b + rows, pad_l:pad_l + cols] = grid
        seen = np.zeros(canvas.shape, dtype=bool)
        seen[pad_b:pad_b + rows, pad_l:pad_l + cols] = grid >= 0 if observed is None \
            else np.asarray(observed, dtype=bool)
        self._col0, self._row0 = pad_l, pad_b
        self.shape = canvas.shape

        # Cell centres in the base frame.
        cc = (np.arange(canvas.shape[1]) - pad_l + 0.5) * res
        rr = (np.arange(canvas.shape[0]) - pad_b + 0.5) * res
        cgx, cgy = np.meshgrid(cc, rr)
        bx, by = self._to_base(cgx, cgy)
        occupied = canvas >= config.occupied_threshold
        self._mark(occupied, extra_occupied, True)
        unknown = canvas < 0
        blind = (np.hypot(bx, by) < config.blind_distance) & ~seen
        self._mark(blind, not_blind, False)
        self.blocked = occupied | (unknown & ~blind)
        self.free = (~occupied) & (~unknown)
        self.occupied = occupied
        self._bx, self._by = bx, by

        # The clearance lives on a finer raster (each cell split into _CLEARANCE_SUBCELLS^2
        # squares), so the bound gives away h * sqrt(2) (h = res / subcells: 0.018 m for
        # 0.05 m cells) instead of res * sqrt(2) (0.071 m): a point lies within h / sqrt(2)
        # of its square's centre, and so does any point of a blocked square of its own.
        # Blocked squares are 0 in the transform, so they stay 0 after the subtraction.
        sub = _CLEARANCE_SUBCELLS
        h = res / sub
        self._fine = h
        fine_shape = (canvas.shape[0] * sub, canvas.shape[1] * sub)
        if self.blocked.any():
            src = np.where(self.blocked, 0, 255).astype(np.uint8)
            src = np.repeat(np.repeat(src, sub, axis=0), sub, axis=1)
            dist = cv2.distanceTransform(src, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
            dist *= h
            dist -= h * math.sqrt(2.0)
            self.clearance = np.maximum(dist, 0.0, out=dist)
        else:
            self.clearance = np.full(fine_shape, np.inf, dtype=np.float32)

    def _mark(self, cells, points, value):
        """Set ``cells`` (canvas-shaped) to ``value`` where base-frame ``points`` ((N, 2)) fall."""
        if points is None or not len(points):
            return
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        px, py = self._to_grid(pts[:, 0], pts[:, 1])
        col = np.floor(px / self._res).astype(np.int64) + self._col0
        row = np.floor(py / self._res).astype(np.int64) + self._row0
        ok = (col >= 0) & (col < cells.shape[1]) & (row >= 0) & (row < cells.shape[0])
        cells[row[ok], col[ok]] = value

    def _to_grid(self, x, y):
        """Base-frame points -> grid-frame metres (from cell (0, 0)'s corner)."""
        dx, dy = x - self.layout.origin_x, y - self.layout.origin_y
        return self._cos * dx + self._sin * dy, -self._sin * dx + self._cos * dy

    def _to_base(self, gx, gy):
        return (self.layout.origin_x + self._cos * gx - self._sin * gy,
                self.layout.origin_y + self._sin * gx + self._cos * gy)

    def at(self, x, y):
        """Clearance (m) at base-frame points; 0 outside the padded canvas."""
        gx, gy = self._to_grid(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        with np.errstate(invalid='ignore'):
            col = np.floor(gx / self._fine).astype(np.int64) + self._col0 * _CLEARANCE_SUBCELLS
            row = np.floor(gy / self._fine).astype(np.int64) + self._row0 * _CLEARANCE_SUBCELLS
        rows, cols = self.clearance.shape
        inside = (col >= 0) & (col < cols) & (row >= 0) & (row < rows)
        out = np.zeros(np.shape(gx), dtype=np.float64)
        out[inside] = self.clearance[row[inside], col[inside]]
        return out

    def free_cells_by_side(self, x, y, yaw, radius):
        """Count free cells within ``radius`` of (x, y) to the left and right of heading yaw."""
        dx, dy = self._bx - x, self._by - y
        near = self.free & (dx * dx + dy * dy <= radius * radius)
        side = -math.sin(yaw) * dx + math.cos(yaw) * dy
        return int(np.count_nonzero(near & (side > 0))), int(np.count_nonzero(near & (side < 0)))


def arc_points(curvature, lengths, x0=0.0, y0=0.0, yaw0=0.0):
    """Points (x, y) after travelling ``lengths`` along an arc of ``curvature`` from a pose."""
    s = np.asarray(lengths, dtype=np.float64)
    if abs(curvature) < 1e-9:
        lx, ly = s, np.zeros_like(s)
    else:
        lx = np.sin(curvature * s) / curvature
        ly = (1.0 - np.cos(curvature * s)) / curvature
    c, si = math.cos(yaw0), math.sin(yaw0)
    return x0 + c * lx - si * ly, y0 + si * lx + c * ly


def pose_after(v, w, t):
    """Pose (x, y, yaw) after driving ``v`` m/s and ``w`` rad/s for ``t`` s from the origin."""
    yaw = w * t
    if abs(w) < 1e-9:
        return v * t, 0.0, yaw
    return v / w * math.sin(yaw), v / w * (1.0 - math.cos(yaw)), yaw


def _approach(current, target, up, down, dt):
    """Move ``current`` towards ``target``: at most ``up * dt`` away from 0, ``down * dt`` in."""
    if target == current:
        return target
    # Moving away from zero (same sign, bigger) is an acceleration; everything else slows.
    speeding_up = abs(target) > abs(current) and target * current >= 0.0
    step = (up if speeding_up else down) * dt
    if abs(target - current) <= step:
        return target
    return current + math.copysign(step, target - current)


def compose(pose, local):
    """Return ``local`` (x, y, yaw in the frame of ``pose``) in the frame ``pose`` is in."""
    x0, y0, t0 = pose
    x, y, t = local
    c, s = math.cos(t0), math.sin(t0)
    return x0 + c * x - s * y, y0 + s * x + c * y, t0 + t


def _wrap(angle):
    """Return ``angle`` in [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def _segment_distance(p, a, b):
    """Distance from point ``p`` to the segment ``a``-``b`` (2-D tuples)."""
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    n = dx * dx + dy * dy
    t = 0.0 if n == 0.0 else min(max(((p[0] - ax) * dx + (p[1] - ay) * dy) / n, 0.0), 1.0)
    return math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy)


def _visit_keys(x, y):
    """Keys of the visited-memory cells holding odometry points ``x``, ``y`` (arrays)."""
    ix = np.floor(np.asarray(x) / _VISIT_CELL).astype(np.int64)
    iy = np.floor(np.asarray(y) / _VISIT_CELL).astype(np.int64)
    return (ix + _KEY_OFFSET) * _KEY_SCALE + (iy + _KEY_OFFSET)


class DriverLogic:
    """
    The stateful driver: set a grid, then call :meth:`step` at the control rate.

    State kept between steps: the last output (for acceleration limits and for where the robot
    is now), the last chosen curvature (to smooth the choice), the turning direction while
    blocked and, with odometry, the path driven (for backing up), the floor the footprint
    swept (for the exploration preference) and the floor map with its frontier target.
    """

    def __init__(self, config=None):
        self.config = config if config is not None else DriverConfig()
        self.linear = 0.0
        self.angular = 0.0
        self._map = None
        self._grid = None
        self._grid_pose = None
        self._extra = None
        self._not_blind = None
        self._observed = None
        self._observed_key = None
        #: remembered obstacle cells: (N, 2) odom-frame points and the stamp each was seen
        self._mem_xy = np.zeros((0, 2))
        self._mem_t = np.zeros(0)
        self._mem_free = np.zeros(0, dtype=np.int64)
        #: grids that showed each remembered cell occupied (memory_min_sightings)
        self._mem_seen = np.zeros(0, dtype=np.int64)
        self._prev_k = 0.0
        self._rotating = False
        self._rotate_dir = 1.0
        self._escape_left = 0.0
        #: odometry pose now, when the last plan had odometry
        self._odom_now = None
        #: the path driven, odometry (x, y), oldest first
        self._trail = collections.deque(maxlen=_TRAIL_POINTS)
        #: the visited-memory cells (keys, oldest first) and their sorted array, when current
        self._visited = {}
        self._visited_sorted = None
        self._visit_last = None
        #: seconds turned in place without an open path (a dead end after recovery_after)
        self._blocked_time = 0.0
        #: a recovery asked for, (reason, turn), started at the next plan
        self._pending = None
        #: the backup under way: reason, distance and time left, turn after, last pose...
        self._backup = None
        self.recoveries = 0
        self.last_plan = None
        #: seconds of control steps so far (the frontier layer's clock)
        self._clock = 0.0
        #: the frontier layer: the floor map (with odometry and frontier_weight > 0), when
        #: to plan next, the best distance to the target and when it was reached, and the
        #: turn left of a turn in place towards the target (rad; 0: none) and its direction
        self._floor = None
        self._next_replan = 0.0
        self._target_best = (math.inf, 0.0)
        self._frontier_turn = 0.0
        self._frontier_dir = 1.0
        #: choose a target at the next plan even with new floor ahead (after a dead end)
        self._frontier_force = False
        self.frontier_give_ups = 0

    # -- inputs -------------------------------------------------------------------------------
    def set_config(self, config):
        """Use new limits from the next step on (the grid's clearance map is rebuilt)."""
        old = self.config
        self.config = config
        if self._floor is not None and (
                config.frontier_weight <= 0.0 or
                (config.frontier_map_size, config.robot_radius, config.safety_margin,
                 config.frontier_narrow_room) !=
                (old.frontier_map_size, old.robot_radius, old.safety_margin,
                 old.frontier_narrow_room)):
            self._floor = None
            self._frontier_turn = 0.0
        if self._map is not None:
            self._map = ClearanceMap(self._grid, self._map.layout, config, self._observed,
                                     self._extra, self._not_blind)

    def set_grid(self, grid, layout, pose=None, stamp=None):
        """
        Use this grid (array + its :class:`~freespace_seg.ground.grid.GridSpec`) from now on.

        Also adds its known cells to the cells ever observed (reset when the grid's shape or
        layout changes), which decides the blind zone. ``pose`` is the robot's odometry pose
        ``(x, y, yaw)`` at the grid's stamp (``stamp``, seconds): with it the occupied cells
        are remembered for ``memory_time`` seconds within ``memory_range`` metres, and a
        remembered obstacle keeps blocking after it left the camera's view (beside the robot
        after a turn, under the camera's lower edge), until a grid shows its cell free. With
        it, and the motion since given to :meth:`step`, the driver also keeps the path driven
        and the floor swept.
        """
        self._grid = np.asarray(grid)
        key = (self._grid.shape, layout)
        if key != self._observed_key:
            self._observed = np.zeros(self._grid.shape, dtype=bool)
            self._observed_key = key
        self._observed |= self._grid >= 0
        self._extra = None
        self._grid_pose = None if pose is None else tuple(float(v) for v in pose)
        if pose is not None and self.config.memory_time > 0:
            self._extra = self._remember(self._grid, layout, pose, stamp)
        self._not_blind = None
        if pose is not None and self.config.frontier_weight > 0.0:
            floor = self._floor_map()
            floor.add_grid(self._grid, layout, self._grid_pose, self.config.occupied_threshold)
            # Floor seen blocked some time ago, now in the blind zone (beside the robot, out
            # of view, possibly forgotten by the obstacle memory): it blocks.
            self._not_blind = floor.blocked_near(self._grid_pose,
                                                 self.config.blind_distance + _FLOOR_CELL)
        self._map = ClearanceMap(self._grid, layout, self.config, self._observed, self._extra,
                                 self._not_blind)

    def _remember(self, grid, layout, pose, stamp):
        """Update the obstacle memory with a grid seen at odometry ``pose``; return it in base."""
        cfg = self.config
        res = layout.resolution
        x0, y0, th = (float(v) for v in pose)
        c, s_ = math.cos(th), math.sin(th)
        t = float(stamp) if stamp is not None else 0.0
        lc, ls = math.cos(layout.origin_yaw), math.sin(layout.origin_yaw)
        # Memory into this grid's base frame; forget old, far, and what the grid shows free.
        keep = (t - self._mem_t <= cfg.memory_time) & (self._mem_t <= t + 1.0)
        dx, dy = self._mem_xy[:, 0] - x0, self._mem_xy[:, 1] - y0
        bx, by = c * dx + s_ * dy, -s_ * dx + c * dy
        keep &= np.hypot(bx, by) <= cfg.memory_range
        gx, gy = bx - layout.origin_x, by - layout.origin_y
        col = np.floor((lc * gx + ls * gy) / res).astype(np.int64)
        row = np.floor((-ls * gx + lc * gy) / res).astype(np.int64)
        inside = (col >= 0) & (col < grid.shape[1]) & (row >= 0) & (row < grid.shape[0])
        value = np.full(col.shape, UNKNOWN, dtype=np.int16)
        value[inside] = grid[row[inside], col[inside]]
        free_now = (value >= 0) & (value < cfg.occupied_threshold)
        if cfg.memory_free_min_range > 0:
            free_now &= np.hypot(bx, by) >= cfg.memory_free_min_range
        hits = self._mem_free + free_now
        if cfg.memory_free_hits > 0:
            keep &= hits < cfg.memory_free_hits
        mem_xy, mem_t, mem_free = self._mem_xy[keep], self._mem_t[keep], hits[keep]
        mem_seen = self._mem_seen[keep]
        # This grid's occupied cells, into odometry.
        rows, cols = np.nonzero(grid >= cfg.occupied_threshold)
        gx, gy = (cols + 0.5) * res, (rows + 0.5) * res
        nbx = layout.origin_x + lc * gx - ls * gy
        nby = layout.origin_y + ls * gx + lc * gy
        near = np.hypot(nbx, nby) <= cfg.memory_range
        nbx, nby = nbx[near], nby[near]
        new_xy = np.stack([x0 + c * nbx - s_ * nby, y0 + s_ * nbx + c * nby], axis=1)
        xy = np.concatenate([mem_xy, new_xy])
        ts = np.concatenate([mem_t, np.full(len(new_xy), t)])
        free = np.concatenate([mem_free, np.zeros(len(new_xy), dtype=np.int64)])
        # sightings: the old count, and one for this grid (once per cell, below)
        seen = np.concatenate([mem_seen, np.ones(len(new_xy), dtype=np.int64)])
        is_new = np.concatenate([np.zeros(len(mem_xy), bool), np.ones(len(new_xy), bool)])
        if len(xy):
            # One point per odometry cell, the newest sighting (which resets the free count).
            cells = np.floor(xy / res).astype(np.int64)
            order = np.lexsort((free, -ts, cells[:, 1], cells[:, 0]))
            cells, xy, ts, free = cells[order], xy[order], ts[order], free[order]
            seen, is_new = seen[order], is_new[order]
            first = np.ones(len(cells), dtype=bool)
            first[1:] = np.any(cells[1:] != cells[:-1], axis=1)
            starts = np.flatnonzero(first)
            # per cell: the remembered count plus one if this grid shows it occupied
            seen = np.maximum.reduceat(np.where(is_new, 0, seen), starts) + \
                np.maximum.reduceat(is_new.astype(np.int64), starts)
            xy, ts, free = (np.floor(xy[first] / res) + 0.5) * res, ts[first], free[first]
        self._mem_xy, self._mem_t, self._mem_free = xy.reshape(-1, 2), ts, free
        self._mem_seen = np.asarray(seen, dtype=np.int64)
        confirmed = self._mem_seen >= cfg.memory_min_sightings
        dx, dy = self._mem_xy[confirmed, 0] - x0, self._mem_xy[confirmed, 1] - y0
        return np.stack([c * dx + s_ * dy, -s_ * dx + c * dy], axis=1)

    def _floor_map(self):
        """Return the frontier layer's :class:`FloorMap`, made on first use."""
        if self._floor is None:
            cfg = self.config
            self._floor = FloorMap(int(round(cfg.frontier_map_size / _FLOOR_CELL)),
                                   cfg.inflated_radius + _FRONTIER_ROOM, cfg.robot_radius,
                                   cfg.inflated_radius + cfg.frontier_narrow_room)
        return self._floor

    @property
    def floor_map(self):
        """Return the frontier layer's :class:`FloorMap` (None before a grid with a pose)."""
        return self._floor

    @property
    def frontier_target(self):
        """Return the odometry (x, y) of the frontier target, None without one."""
        f = self._floor
        return f.target if f is not None and f.has_target else None

    @property
    def memory(self):
        """Return the remembered obstacle points, (N, 2) in the odometry frame."""
        return self._mem_xy[self._mem_seen >= self.config.memory_min_sightings].copy()

    @property
    def trail(self):
        """Return the path driven that a backup may use, (N, 2) odometry points, oldest first."""
        return np.array(self._trail, dtype=np.float64).reshape(-1, 2)

    @property
    def visited(self):
        """Return the centres of the floor cells the footprint swept, (N, 2) in odometry."""
        keys = np.fromiter(self._visited, dtype=np.int64, count=len(self._visited))
        ix, iy = keys // _KEY_SCALE - _KEY_OFFSET, keys % _KEY_SCALE - _KEY_OFFSET
        return np.stack([(ix + 0.5) * _VISIT_CELL, (iy + 0.5) * _VISIT_CELL], axis=1)

    @property
    def observed(self):
        """Return the cells some grid with the current layout has shown (None before any)."""
        return self._observed

    @property
    def has_grid(self):
        """Return True once a grid has been set."""
        return self._map is not None

    @property
    def clearance_map(self):
        """Return the :class:`ClearanceMap` of the current grid (None before the first)."""
        return self._map

    # -- decisions ------------------------------------------------------------------------------
    def free_lengths(self, curvatures, start=(0.0, 0.0, 0.0), inflated=None):
        """
        Free length and smallest spare clearance of arcs from ``start`` in the current grid.

        Returns two arrays: ``L`` (m) per curvature and the smallest clearance beyond the
        inflated radius (``inflated``, by default ``robot_radius + safety_margin``) along each
        arc's free part (m, >= 0).
        """
        cfg = self.config
        m = self._map
        step = 0.5 * m.layout.resolution
        x0, y0, yaw0 = start
        here = float(m.at(x0, y0))
        inflated = cfg.inflated_radius if inflated is None else float(inflated)
        if here < inflated:
            # Already inside the margin: let the robot move as long as it does not get closer.
            threshold = max(cfg.robot_radius, here - 1e-9)
        else:
            threshold = inflated
        lengths, spare = [], []
        for k in curvatures:
            s_max = cfg.lookahead
            if abs(k) > 1e-9:
                s_max = min(s_max, 0.5 * math.pi / abs(k))
            s = np.arange(0.0, s_max + 0.5 * step, step)
            xs, ys = arc_points(k, s, x0, y0, yaw0)
            clear = m.at(xs, ys)
            bad = np.flatnonzero(clear < threshold)
            if bad.size:
                free_len = float(s[bad[0] - 1]) if bad[0] > 0 else 0.0
                part = clear[:bad[0]]
            else:
                free_len = float(s_max)
                part = clear
            lengths.append(free_len)
            spare.append(float(np.min(part)) - inflated if part.size else 0.0)
        return np.array(lengths), np.maximum(np.array(spare), 0.0)

    def unvisited_fractions(self, curvatures, lengths, start=(0.0, 0.0, 0.0)):
        """
        Share of each arc's free part whose floor the footprint has not swept yet.

        Samples every cell along the arc (``lengths`` each, from ``start`` in the grid's base
        frame) on three lines: the centre and both edges of the footprint; returns one value in
        [0, 1] per arc (0 for an arc shorter than a cell), or None without the grid's odometry
        pose or before anything was visited.
        """
        if self._grid_pose is None or not self._visited:
            return None
        if self._visited_sorted is None:
            self._visited_sorted = np.sort(np.fromiter(self._visited, dtype=np.int64,
                                                       count=len(self._visited)))
        visited = self._visited_sorted
        res = self._map.layout.resolution
        r = self.config.robot_radius
        gx, gy, gyaw = self._grid_pose
        c, s_ = math.cos(gyaw), math.sin(gyaw)
        x0, y0, yaw0 = start
        out = np.zeros(len(curvatures))
        for i, (k, length) in enumerate(zip(curvatures, lengths)):
            s = np.arange(res, length + 1e-9, res)
            if not s.size:
                continue
            xs, ys = arc_points(k, s, x0, y0, yaw0)
            heading = yaw0 + k * s
            ox, oy = -np.sin(heading) * r, np.cos(heading) * r
            bx = np.concatenate([xs, xs + ox, xs - ox])
            by = np.concatenate([ys, ys + oy, ys - oy])
            keys = _visit_keys(gx + c * bx - s_ * by, gy + s_ * bx + c * by)
            pos = np.minimum(np.searchsorted(visited, keys), len(visited) - 1)
            out[i] = 1.0 - float(np.mean(visited[pos] == keys))
        return out

    def plan(self, grid_age=0.0, motion=None):
        """
        Decide the target ``(v, w)`` for now, ``grid_age`` seconds after the grid's image.

        ``motion`` is the robot's pose now in the grid's base frame ``(x, y, yaw)`` as
        odometry measured it; without it the last command held for ``grid_age`` is assumed.
        Updates the chosen curvature, the blocked/rotating state and a recovery under way.
        Without a grid the plan is to stand still.
        """
        cfg = self.config
        if self._map is None:
            self.last_plan = Plan(0.0, 0.0, 'rotate', 0.0, 0.0, 0.0)
            return self.last_plan
        if motion is not None:
            start = tuple(float(v) for v in motion)
        else:
            age = min(max(float(grid_age), 0.0), 1.0)
            start = pose_after(self.linear, self.angular, age)
        self._odom_now = None if motion is None or self._grid_pose is None \
            else compose(self._grid_pose, start)
        if self._pending is not None:
            reason, turn = self._pending
            self._pending = None
            self._start_recovery(reason, turn, start)
        if self._backup is not None:
            p = self._plan_backup(start)
            if p is not None:
                self._prev_k = 0.0
                self.last_plan = p
                return p
        ks = np.linspace(-cfg.max_curvature, cfg.max_curvature, int(cfg.num_arcs)) \
            if cfg.num_arcs > 1 else np.zeros(1)
        ks = np.union1d(ks, [0.0])
        lengths, spare = self.free_lengths(ks, start)
        kmax = cfg.max_curvature
        side_room = np.minimum(spare, _CLEARANCE_BONUS_CAP)
        score = (lengths / cfg.lookahead
                 + cfg.clearance_weight * side_room / _CLEARANCE_BONUS_CAP
                 - cfg.turn_weight * np.abs(ks) / kmax
                 - cfg.change_weight * np.abs(ks - self._prev_k) / (2.0 * kmax))
        # An arc that cannot be driven scores by its length only; never prefer it for room.
        stop = cfg.stop_distance + _MIN_ROOM
        drivable = lengths >= stop
        score = np.where(drivable, score, lengths / cfg.lookahead - 1.0)
        unvisited = None
        if cfg.explore_weight > 0.0:
            unvisited = self.unvisited_fractions(ks, lengths, start)
        progress = None
        if cfg.frontier_weight > 0.0:
            self._update_frontier(ks, lengths, unvisited, start)
            progress = self._frontier_progress(ks, lengths, start)
            if progress is not None:
                # Towards the frontier target: drivable arcs only, by the metres they gain.
                gain = np.minimum(progress, cfg.lookahead) / cfg.lookahead
                score = np.where(drivable, score + cfg.frontier_weight * gain, score)
        if progress is not None:
            p = self._path_plan(start)
            if p is not None:
                self.last_plan = p
                return p
        best = int(np.argmax(score))
        if cfg.explore_weight > 0.0 and drivable[best] and unvisited is not None:
            # Towards floor not swept yet, among the arcs with at least the best one's room.
            fair = drivable & (side_room >= side_room[best] - 1e-9)
            best = int(np.argmax(np.where(fair, score + cfg.explore_weight * unvisited,
                                          -np.inf)))
        k, free_len = float(ks[best]), float(lengths[best])
        ahead = float(lengths[int(np.argmin(np.abs(ks)))])
        best_len = float(lengths.max())

        if progress is not None and self._frontier_turning(start, lengths, progress):
            self._prev_k = 0.0
            self._rotate_dir = self._frontier_dir
            self.last_plan = Plan(0.0, self._frontier_dir * cfg.rotate_speed, 'rotate', k,
                                  free_len, ahead, 'frontier')
            return self.last_plan

        if self._escape_left > 0.0:
            self._rotating = True
        elif self._rotating:
            if best_len >= cfg.resume_distance:
                self._rotating = False
        elif free_len < stop:
            self._rotating = True
            self._turn_to_open_side(start)

        if self._rotating:
            self._prev_k = 0.0
            self.last_plan = Plan(0.0, self._rotate_dir * cfg.rotate_speed, 'rotate', k,
                                  free_len, ahead)
            return self.last_plan

        if free_len < stop:
            # Just resumed on another arc than the best-scoring one: take the longest.
            best = int(np.argmax(lengths))
            k, free_len = float(ks[best]), float(lengths[best])
        v, w = self._speeds(free_len, k)
        self._prev_k = k
        if k != 0.0:
            self._rotate_dir = math.copysign(1.0, k)
        self.last_plan = Plan(v, w, 'drive', k, free_len, ahead)
        return self.last_plan

    def _speeds(self, free_len, k, cap=None):
        """
        Return ``(v, w)`` on the arc of curvature ``k`` with ``free_len`` m of room (step 6).

        ``v`` ramps from ``min_linear`` at ``stop_distance`` to ``max_linear`` (or ``cap``)
        at ``slow_distance``, never faster than a stop within the room allows; both scale
        down together when ``|w|`` would exceed ``max_angular``.
        """
        cfg = self.config
        room = free_len - cfg.stop_distance
        ramp = min(max(room / (cfg.slow_distance - cfg.stop_distance), 0.0), 1.0)
        v_min = min(cfg.min_linear, cfg.max_linear)
        v = v_min + (cfg.max_linear - v_min) * ramp
        if cap is not None:
            v = min(v, cap)
        v = min(v, math.sqrt(2.0 * cfg.max_linear_decel * max(room, 0.0)))
        w = v * k
        if abs(w) > cfg.max_angular:
            scale = cfg.max_angular / abs(w)
            v, w = v * scale, w * scale
        return v, w

    def _turn_to_open_side(self, start):
        """
        Turn towards the frontier waypoint, else the side with more free cells.

        Left or right of the robot at ``start``; the free cells are counted within
        ``lookahead``.
        """
        bearing = self._waypoint_bearing(start)
        if bearing is not None:
            self._rotate_dir = 1.0 if bearing >= 0.0 else -1.0
            return
        left, right = self._map.free_cells_by_side(*start, self.config.lookahead)
        if left != right:
            self._rotate_dir = 1.0 if left > right else -1.0

    # -- the frontier layer ---------------------------------------------------------------------
    def _update_frontier(self, curvatures, lengths, unvisited, start):
        """
        Plan the frontier target when due, every ``frontier_replan`` seconds.

        A target stays until it is no goal any more (swept, seen blocked, unreachable) or
        given up: when the robot got no closer to it by _FRONTIER_MIN_GAIN within
        ``frontier_timeout`` seconds. A new one is chosen only when no arc of
        ``resume_distance`` leads mostly over floor not swept yet (while there is new floor
        ahead, the exploration preference of step 5b leads), or after a dead end.
        """
        cfg = self.config
        f, odom = self._floor, self._odom_now
        if f is None or odom is None:
            return
        now = self._clock
        if now < self._next_replan:
            return
        self._next_replan = now + cfg.frontier_replan
        if f.target is not None:
            f.plan(odom[0], odom[1], now, keep=True, choose=False)
            if f.has_target:
                d = f.robot_distance
                if d < self._target_best[0] - _FRONTIER_MIN_GAIN:
                    self._target_best = (d, now)
                    return
                elif now - self._target_best[1] > cfg.frontier_timeout:
                    self._give_up_target()
                else:
                    return
        if not self._frontier_force:
            if unvisited is None:
                unvisited = self.unvisited_fractions(curvatures, lengths, start)
            if unvisited is None:
                unvisited = np.ones(len(lengths))        # nothing swept yet
            if np.any((lengths >= cfg.resume_distance) & (unvisited >= 0.5)):
                return                # new floor ahead: the preference of step 5b leads
        self._frontier_force = False
        f.plan(odom[0], odom[1], now, keep=False, heading=odom[2],
               turn_cost=cfg.max_linear / cfg.rotate_speed, tight=cfg.tight_path_speed > 0)
        self._target_best = (f.robot_distance if f.has_target else math.inf, now)

    def _give_up_target(self):
        """Skip the frontier target (and goals near it) for _FRONTIER_GIVE_UP_TIME."""
        f = self._floor
        if f is not None and f.target is not None:
            f.give_up(*f.target, self._clock + _FRONTIER_GIVE_UP_TIME)
            self.frontier_give_ups += 1
        self._frontier_turn = 0.0
        self._next_replan = self._clock

    def _frontier_progress(self, curvatures, lengths, start):
        """
        How much closer (m, >= 0) each arc's free part gets to the frontier target.

        The geodesic distance (:meth:`FloorMap.distance_at`) at the start minus the least
        one along the arc's free part, sampled every _FRONTIER_STEP m; None without a target.
        """
        f = self._floor
        if f is None or not f.has_target or self._grid_pose is None:
            return None
        gx, gy, gyaw = self._grid_pose
        c, s_ = math.cos(gyaw), math.sin(gyaw)
        x0, y0, yaw0 = start
        # All arcs at once: (arcs, samples) points from the start pose, cut at each free length.
        k = np.asarray(curvatures, dtype=np.float64)[:, None]
        s = np.arange(0.0, float(np.max(lengths)) + 1e-9, _FRONTIER_STEP)[None, :]
        straight = np.abs(k) < 1e-9
        ks = np.where(straight, 1.0, k)
        lx = np.where(straight, s, np.sin(ks * s) / ks)
        ly = np.where(straight, 0.0, (1.0 - np.cos(ks * s)) / ks)
        ca, sa = math.cos(yaw0), math.sin(yaw0)
        bx, by = x0 + ca * lx - sa * ly, y0 + sa * lx + ca * ly
        dist = f.distance_at(gx + c * bx - s_ * by, gy + s_ * bx + c * by)
        dist[s > np.asarray(lengths)[:, None] + 1e-9] = np.inf
        here = float(dist[0, 0])
        least = dist.min(axis=1)
        finite = np.isfinite(least)
        if not finite.any():
            return None
        if not math.isfinite(here):
            here = float(np.max(least[finite]))
        return np.where(finite, np.maximum(here - least, 0.0), 0.0)

    def _path_plan(self, start):
        """
        Follow the frontier target's path where it is tight (narrow, or the centre's trail).

        Pure pursuit to the path point _PATH_LOOKAHEAD ahead: a turn in place while it lies
        more than _PATH_TURN off the heading, else the arc through it, with ``robot_radius`` +
        _PATH_MARGIN as the clearance and at most ``tight_path_speed``. None (the arcs decide)
        when that is 0, when the path within _PATH_REACH has no tight cell, or when its arc is
        blocked.
        """
        f, odom = self._floor, self._odom_now
        if self.config.tight_path_speed <= 0.0 or f is None or not (f.tight or f.narrow) or \
                odom is None or \
                self._grid_pose is None or self._escape_left > 0.0:
            return None
        pts, tight = f.path(odom[0], odom[1], _PATH_REACH)
        if not tight.any():
            return None
        cfg = self.config
        gx, gy, gyaw = self._grid_pose
        c, s_ = math.cos(gyaw), math.sin(gyaw)
        dx, dy = pts[:, 0] - gx, pts[:, 1] - gy
        x0, y0, yaw0 = start
        bx, by = c * dx + s_ * dy - x0, -s_ * dx + c * dy - y0
        ca, sa = math.cos(yaw0), math.sin(yaw0)
        lx, ly = ca * bx + sa * by, -sa * bx + ca * by
        far = np.flatnonzero(np.hypot(lx, ly) >= _PATH_LOOKAHEAD)
        i = int(far[0]) if far.size else len(lx) - 1
        px, py = float(lx[i]), float(ly[i])
        d2 = px * px + py * py
        if d2 < 1e-6:
            return None
        bearing = math.atan2(py, px)
        self._frontier_turn = 0.0
        if abs(bearing) > _PATH_TURN:
            self._prev_k = 0.0
            self._rotating = False
            direction = 1.0 if bearing >= 0.0 else -1.0
            self._rotate_dir = direction
            return Plan(0.0, direction * cfg.rotate_speed, 'rotate', 0.0, 0.0, 0.0, 'path')
        k = 2.0 * py / d2
        lengths, _ = self.free_lengths([k], start, cfg.robot_radius + _PATH_MARGIN)
        free_len = float(lengths[0])
        if free_len < cfg.stop_distance + _MIN_ROOM:
            return None
        v, w = self._speeds(free_len, k, cfg.tight_path_speed)
        self._prev_k = k
        self._rotating = False
        return Plan(v, w, 'drive', k, free_len, free_len, 'path')

    def _waypoint_bearing(self, start):
        """Return the bearing (rad, left > 0) of the frontier waypoint from ``start``, or None."""
        f = self._floor
        if f is None or not f.has_target or f.waypoint is None or self._grid_pose is None:
            return None
        gx, gy, gyaw = self._grid_pose
        c, s_ = math.cos(gyaw), math.sin(gyaw)
        dx, dy = f.waypoint[0] - gx, f.waypoint[1] - gy
        bx, by = c * dx + s_ * dy - start[0], -s_ * dx + c * dy - start[1]
        if math.hypot(bx, by) < 0.5 * _FLOOR_CELL:
            return None
        return _wrap(math.atan2(by, bx) - start[2])

    def _frontier_turning(self, start, lengths, progress):
        """
        Return True while the robot turns in place towards the frontier waypoint.

        Such a turn starts when no drivable arc gets _FRONTIER_TURN_PROGRESS closer and the
        waypoint lies more than _FRONTIER_TURN_BEARING off the heading (not while blocked or
        recovering), and ends when the waypoint is within _FRONTIER_TURN_DONE of the heading
        or an arc of ``resume_distance`` gets _FRONTIER_TURN_GOOD closer; after a full turn
        without that the target is given up (in :meth:`step`).
        """
        cfg = self.config
        bearing = self._waypoint_bearing(start)
        if self._frontier_turn > 0.0:
            good = (lengths >= cfg.resume_distance) & (progress >= _FRONTIER_TURN_GOOD)
            if bearing is None or abs(bearing) < _FRONTIER_TURN_DONE or np.any(good):
                self._frontier_turn = 0.0
            elif abs(bearing) < 0.8 * math.pi:
                self._frontier_dir = 1.0 if bearing >= 0.0 else -1.0   # the waypoint moved
            return self._frontier_turn > 0.0
        if bearing is None or self._rotating or self._escape_left > 0.0 or \
                abs(bearing) <= _FRONTIER_TURN_BEARING:
            return False
        if np.any((lengths >= cfg.stop_distance + _MIN_ROOM)
                  & (progress >= _FRONTIER_TURN_PROGRESS)):
            return False
        self._frontier_turn = 2.0 * math.pi
        self._frontier_dir = 1.0 if bearing >= 0.0 else -1.0
        return True

    # -- recovery -----------------------------------------------------------------------------
    def _start_recovery(self, reason, turn, start):
        """
        Back up along the path driven if the robot is on it, then turn by ``turn``.

        Without a path to back up on, a hazard still turns by ``turn``; a dead end just turns
        on (a forced turn would only pass by a path that opens meanwhile).
        """
        cfg = self.config
        self._blocked_time = 0.0
        self._backup = None
        self._frontier_turn = 0.0
        if reason == 'dead end':
            if self.frontier_target is not None:
                self._give_up_target()    # the way to it led here
            self._frontier_force = True   # and a new target as soon as the backup is over
        self._next_replan = self._clock
        odom, trail = self._odom_now, self._trail
        if cfg.backup_distance > 0.0 and odom is not None and len(trail) >= 2 and \
                math.hypot(odom[0] - trail[-1][0], odom[1] - trail[-1][1]) <= \
                cfg.backup_tolerance + _TRAIL_STEP:
            self._backup = {'reason': reason, 'left': cfg.backup_distance,
                            'time': cfg.recovery_timeout, 'turn': turn,
                            'last': odom[:2], 'passed': [odom[:2]]}
            self._escape_left = 0.0
            self._rotating = False
            self.recoveries += 1
        elif reason == 'hazard':
            self._begin_turn(turn, start)

    def _begin_turn(self, turn, start):
        """Turn in place by at least ``turn`` rad towards the side with more free cells."""
        self._escape_left = max(0.0, float(turn))
        self._blocked_time = 0.0
        self._turn_to_open_side(start)

    def _plan_backup(self, start):
        """
        Return the backup's command now, or None when it is over (the turn after it begins).

        It ends after ``backup_distance`` (odometry) or ``recovery_timeout``, at the end of
        the path driven, without odometry, when the robot is more than ``backup_tolerance``
        from the path driven, or when a remembered obstacle lies on it.
        """
        cfg = self.config
        b = self._backup
        odom = self._odom_now
        if odom is None:
            return self._end_backup(start)
        b['left'] -= math.hypot(odom[0] - b['last'][0], odom[1] - b['last'][1])
        b['last'] = odom[:2]
        if b['left'] <= 0.0 or b['time'] <= 0.0:
            return self._end_backup(start)
        trail = self._trail
        passed = b['passed']
        while len(trail) > 1 and \
                math.hypot(odom[0] - trail[-1][0], odom[1] - trail[-1][1]) < _BACKUP_REACH:
            passed.append(trail.pop())
        del passed[:-_BACKUP_PASSED]
        tx, ty = trail[-1]
        if math.hypot(odom[0] - tx, odom[1] - ty) < _BACKUP_ARRIVED:
            return self._end_backup(start)          # at the start of the path driven
        # Off the path driven: farther than backup_tolerance from it (the points just passed
        # and the target).
        path = passed + [(tx, ty)]
        if min(_segment_distance(odom, a, b_) for a, b_ in zip(path, path[1:])) > \
                cfg.backup_tolerance:
            return self._end_backup(start)
        mem = self.memory
        if len(mem):
            near = cfg.robot_radius - 0.5 * math.sqrt(2.0) * self._map.layout.resolution
            if float(np.min(np.hypot(mem[:, 0] - tx, mem[:, 1] - ty))) < near:
                return self._end_backup(start)
        c, s_ = math.cos(odom[2]), math.sin(odom[2])
        dx, dy = tx - odom[0], ty - odom[1]
        xt, yt = c * dx + s_ * dy, -s_ * dx + c * dy
        # How far the back is from pointing at the target: turn in place first if too far.
        err = _wrap(math.atan2(yt, xt) - math.pi)
        if abs(err) > _BACKUP_ALIGN:
            return Plan(0.0, math.copysign(cfg.rotate_speed, err), 'backup', 0.0, 0.0, 0.0,
                        b['reason'])
        # Pure pursuit backwards: the arc through the target, tangent to the heading.
        k = 2.0 * yt / (xt * xt + yt * yt)
        v = -cfg.backup_speed
        w = v * k
        if abs(w) > cfg.max_angular:
            scale = cfg.max_angular / abs(w)
            v, w = v * scale, w * scale
        return Plan(v, w, 'backup', k, 0.0, 0.0, b['reason'])

    def _end_backup(self, start):
        turn = self._backup['turn']
        self._backup = None
        self._begin_turn(turn, start)
        return None

    def _remember_path(self):
        """Add the odometry pose now to the path driven and the floor swept."""
        odom = self._odom_now
        if odom is None:
            return
        x, y = odom[0], odom[1]
        trail = self._trail
        if self._backup is None:
            gap = math.hypot(x - trail[-1][0], y - trail[-1][1]) if trail else math.inf
            if gap > _TRAIL_JUMP:
                trail.clear()          # a jump (or the first pose): nothing links it to before
            if gap >= _TRAIL_STEP:
                trail.append((x, y))
        last = self._visit_last
        if last is not None and math.hypot(x - last[0], y - last[1]) < 0.5 * _VISIT_CELL:
            return
        self._visit_last = (x, y)
        if self._floor is not None:
            self._floor.sweep(x, y)
        r = self.config.robot_radius
        ix = np.arange(math.floor((x - r) / _VISIT_CELL), math.floor((x + r) / _VISIT_CELL) + 1)
        iy = np.arange(math.floor((y - r) / _VISIT_CELL), math.floor((y + r) / _VISIT_CELL) + 1)
        cx, cy = np.meshgrid((ix + 0.5) * _VISIT_CELL, (iy + 0.5) * _VISIT_CELL)
        inside = np.hypot(cx - x, cy - y) <= r
        for key in _visit_keys(cx[inside], cy[inside]).tolist():
            if key in self._visited:
                del self._visited[key]         # to be added again as the newest
            else:
                self._visited_sorted = None    # a new cell
            self._visited[key] = None
        while len(self._visited) > _VISIT_CELLS:
            del self._visited[next(iter(self._visited))]

    def step(self, dt, grid_age=0.0, motion=None):
        """Plan, then move the output towards the plan within the acceleration limits."""
        cfg = self.config
        p = self.plan(grid_age, motion)
        dt = max(float(dt), 0.0)
        self._clock += dt
        if self._escape_left > 0.0:
            self._escape_left -= abs(self.angular) * dt
        if p.reason == 'frontier':
            self._frontier_turn -= abs(self.angular) * dt
            if self._frontier_turn <= 0.0:
                self._give_up_target()     # a full turn and no way towards it
        if self._backup is not None:
            self._backup['time'] -= dt
        if self._map is not None and p.mode == 'rotate' and self._escape_left <= 0.0 and \
                p.reason not in ('frontier', 'path'):
            # Turning in place without a path: a dead end after recovery_after seconds.
            self._blocked_time += dt
            if 0.0 < cfg.recovery_after <= self._blocked_time:
                self._pending = ('dead end', cfg.recovery_turn)
                self._blocked_time = 0.0
        elif p.mode == 'drive':
            self._blocked_time = 0.0
        v = _approach(self.linear, p.linear, cfg.max_linear_accel, cfg.max_linear_decel, dt)
        w = _approach(self.angular, p.angular, cfg.max_angular_accel, cfg.max_angular_accel, dt)
        self.linear = min(max(v, -cfg.backup_speed), cfg.max_linear)
        self.angular = min(max(w, -cfg.max_angular), cfg.max_angular)
        self._remember_path()
        return self.linear, self.angular

    def escape(self, angle):
        """
        Recover after a bump: back up along the path driven, then turn by ``angle`` radians.

        A bump means the grid missed something ahead, so the next plan would likely drive
        into it again. With odometry the robot first backs up along the path it came
        (``backup_distance``, see :meth:`step`); then it turns in place towards the side with
        more free cells (or the last turning direction), at least by ``angle`` counted on the
        commanded turn rate; afterwards it turns on until a path of ``resume_distance`` is
        free, as when blocked.
        """
        self._pending = ('hazard', max(0.0, float(angle)))

    @property
    def escaping(self):
        """Return True while a recovery (backup or escape turn) is asked for or under way."""
        return self._pending is not None or self._backup is not None or \
            self._escape_left > 0.0

    def stop(self):
        """Zero the output at once (a safety stop); planning resumes from standstill."""
        self.linear = 0.0
        self.angular = 0.0
        self._rotating = False
        return 0.0, 0.0
