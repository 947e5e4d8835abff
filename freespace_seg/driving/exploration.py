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
The driver's global exploration layer: a floor map in the odometry frame and frontier targets.

ROS-free, used by :class:`freespace_seg.driving.driver_logic.DriverLogic` (step 5c there).

:class:`FloorMap` keeps, in cells of :data:`CELL` m of the odometry frame, what the grids
showed: each cell is *never seen*, *seen free* or *seen blocked* (occupied), and whether the
robot's footprint *swept* it. It is a fixed window of ``size`` x ``size`` cells (bounded
memory) that moves with the robot: when the robot comes within a quarter of the window of its
edge, the window is centred on the robot again and what falls outside is forgotten.

A grid's known cells vote per map cell: a map cell with an occupied grid cell counts as seen
blocked, one with only free grid cells as seen free. The votes add up with a cap (free +1,
blocked -2, in [-4, 4]), so a cell seen blocked once needs three free sightings to count as
free again. Swept cells are free (the robot stood there).

**Targets.** :meth:`FloorMap.plan` picks the nearest *goal*: a seen-free cell not swept yet,
where the footprint would sweep at least half new floor (unswept and not seen blocked; never
seen counts as new: a frontier), and which the robot can reach. Reachable means a path of
8-connected cells over seen-free or swept floor whose distance to every seen-blocked cell is
at least the planning clearance (the inflated radius); distances are geodesic (a wavefront
relaxation with steps of 1 and sqrt(2) cells, numpy and OpenCV only). It then keeps the
geodesic distance of every reachable cell to that goal (:meth:`FloorMap.distance_at`), which
the driver uses to score its arcs, and a waypoint about :data:`WAYPOINT_REACH` m along the
path. When no goal is reachable so, the plan runs again at ``narrow_clearance`` when
set (a *narrow* target, :attr:`FloorMap.narrow`), then, with ``plan(..., tight=True)``, with
the cells the robot's centre passed through passable too: the robot fitted there, so a gap it
came in by is a way out; such a target is *tight* (:attr:`FloorMap.tight`).
:meth:`FloorMap.path` says which cells of a narrow or tight path are passable only that
way. Goals near a cell given up on (:meth:`FloorMap.give_up`) are skipped for a while.
"""

import math

import cv2
import numpy as np

#: map cell size (m)
CELL = 0.1
#: votes: a free sighting adds this, a blocked one subtracts _VOTE_BLOCKED; |vote| <= _VOTE_CAP
_VOTE_FREE = 1
_VOTE_BLOCKED = 2
_VOTE_CAP = 4
#: a goal has at least this share of new floor within GAIN_RADIUS (m) ...
MIN_GAIN = 0.5
GAIN_RADIUS = 0.35
#: ... and lies at least this far (m, geodesic) from the robot
MIN_TARGET_DISTANCE = 0.5
#: the robot's own cell and the seen-free cells this close (m) start the wavefront
_SEED_RADIUS = 0.4
#: the waypoint: the reachable cell this far (m) from the robot nearest to the goal
WAYPOINT_REACH = 0.6
#: goals within this distance (m) of a cell given up on are skipped
_GIVE_UP_RADIUS = 0.35
#: at most this many cells given up on are remembered (the oldest go first)
_GIVE_UP_MAX = 64
#: blocked_near: points this many cells from each blocked cell's centre (and the centre)
_QUARTER = 0.25
#: the distance field to the target is exact this far (m) beyond the robot's own distance
FIELD_REACH = 2.5
#: the wavefront stops after this many relaxation rounds (a path of ~1.5x as many cells)
_MAX_ROUNDS = 600

_CROSS = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=np.uint8)
_DIAG = np.array([[1, 0, 1], [0, 0, 0], [1, 0, 1]], dtype=np.uint8)
_SQRT2 = math.sqrt(2.0)
#: geodesic(): rounds between two calls of its stop test
_STOP_EVERY = 4


def geodesic(passable, seeds, max_rounds=_MAX_ROUNDS, stop=None):
    """
    Geodesic distance (cells) from ``seeds`` through ``passable`` cells, 8-connected.

    ``seeds`` is a float32 array of start distances (inf elsewhere); a seed need not be
    passable. Steps cost 1 (edge neighbours) or sqrt(2) (corner neighbours); unreachable
    cells are inf. A relaxation repeated until nothing changes, at most ``max_rounds``
    times, or until ``stop(dist, rounds)`` is true (asked every :data:`_STOP_EVERY` rounds):
    after ``rounds`` rounds every cell that a path of at most that many steps reaches has its
    final distance, and no cell farther than ``rounds`` cells (geodesic) has one yet.
    """
    inf = np.float32(np.inf)
    # A border of unreachable cells: erode() then never sees its own padding value.
    dist = np.pad(np.asarray(seeds, dtype=np.float32), 1, constant_values=inf)
    blocked = np.pad(~np.asarray(passable, dtype=bool), 1, constant_values=True)
    cross, diag = np.empty_like(dist), np.empty_like(dist)
    one, root2 = np.float32(1.0), np.float32(_SQRT2)
    inner = (slice(1, -1), slice(1, -1))
    for i in range(1, max_rounds + 1):
        cv2.erode(dist, _CROSS, dst=cross, borderType=cv2.BORDER_REPLICATE)
        cv2.erode(dist, _DIAG, dst=diag, borderType=cv2.BORDER_REPLICATE)
        np.add(cross, one, out=cross)
        np.add(diag, root2, out=diag)
        np.minimum(cross, diag, out=cross)
        np.copyto(cross, inf, where=blocked)
        if not np.less(cross, dist).any():
            break
        np.minimum(dist, cross, out=dist)
        if stop is not None and i % _STOP_EVERY == 0 and stop(dist[inner], i):
            break
    return dist[inner]


class FloorMap:
    """
    What the grids showed of the floor, in the odometry frame, and a frontier target.

    ``size`` cells of :data:`CELL` m a side (a window that follows the robot), ``clearance``
    the planning clearance (m): a path keeps at least this distance, centre to centre, from
    every seen-blocked cell.
    """

    def __init__(self, size=200, clearance=0.22, robot_radius=0.17, narrow_clearance=0.0):
        size = int(size)
        if size < 8:
            raise ValueError(f'size must be at least 8 cells, got {size}')
        if not 0.0 <= narrow_clearance <= clearance:
            raise ValueError(f'narrow_clearance must be in [0, clearance ({clearance})], '
                             f'got {narrow_clearance}')
        self.size = size
        self.clearance = float(clearance)
        #: the second planning clearance (m), tried when no goal is reachable at
        #: ``clearance``; 0: none
        self.narrow_clearance = float(narrow_clearance)
        #: the clearance (m) the target was planned with
        self.target_clearance = self.clearance
        self.robot_radius = float(robot_radius)
        #: odometry cell (ix, iy) of the window's cell (0, 0), set by the first update
        self.offset = None
        self.vote = np.zeros((size, size), dtype=np.int8)
        self.seen = np.zeros((size, size), dtype=bool)
        self.swept = np.zeros((size, size), dtype=bool)
        #: the cells the robot's centre passed through (it fitted there)
        self.centre = np.zeros((size, size), dtype=bool)
        #: the target's paths may use centre cells closer to blocked ones than the clearance
        self.tight = False
        #: with a tight target: the box's cells passable only as centre cells (else None)
        self.tight_cells = None
        self.target = None
        self.waypoint = None
        #: geodesic distance (m) from the robot to the target when it was planned
        self.robot_distance = math.inf
        self._field = None          # (array in metres, (row0, col0) of its corner in the window)
        self._give_up = []          # [(x, y, until)]
        self._layout_cache = None
        r = int(math.ceil(GAIN_RADIUS / CELL))
        yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
        self._disc = (np.hypot(xx, yy) * CELL <= GAIN_RADIUS + 1e-9).astype(np.float32)

    # -- the window -----------------------------------------------------------------------
    def _cell(self, x, y):
        """Window (row, col) of odometry points (arrays of int64)."""
        ix = np.floor(np.asarray(x, dtype=np.float64) / CELL).astype(np.int64)
        iy = np.floor(np.asarray(y, dtype=np.float64) / CELL).astype(np.int64)
        return iy - self.offset[1], ix - self.offset[0]

    def cell_center(self, row, col):
        """Return the odometry (x, y) of the centre of window cell (row, col)."""
        return ((col + self.offset[0] + 0.5) * CELL, (row + self.offset[1] + 0.5) * CELL)

    def follow(self, x, y):
        """Move the window so that it keeps the robot at (x, y) away from its edges."""
        ix, iy = math.floor(x / CELL), math.floor(y / CELL)
        half = self.size // 2
        if self.offset is None:
            self.offset = (ix - half, iy - half)
            return
        margin = self.size // 4
        col, row = ix - self.offset[0], iy - self.offset[1]
        if margin <= col < self.size - margin and margin <= row < self.size - margin:
            return
        new = (ix - half, iy - half)
        dc, dr = new[0] - self.offset[0], new[1] - self.offset[1]
        for name in ('vote', 'seen', 'swept', 'centre'):
            old = getattr(self, name)
            moved = np.zeros_like(old)
            src_r = slice(max(dr, 0), self.size + min(dr, 0))
            dst_r = slice(max(-dr, 0), self.size + min(-dr, 0))
            src_c = slice(max(dc, 0), self.size + min(dc, 0))
            dst_c = slice(max(-dc, 0), self.size + min(-dc, 0))
            if abs(dr) < self.size and abs(dc) < self.size:
                moved[dst_r, dst_c] = old[src_r, src_c]
            setattr(self, name, moved)
        self.offset = new
        self._field = None
        self.target = None
        self.waypoint = None

    # -- updates --------------------------------------------------------------------------
    def _base_cells(self, shape, layout):
        """Base-frame centres of a grid's cells (cached per shape and layout)."""
        key = (shape, layout)
        if self._layout_cache is None or self._layout_cache[0] != key:
            res = float(layout.resolution)
            rows, cols = np.mgrid[0:shape[0], 0:shape[1]]
            gx, gy = (cols.ravel() + 0.5) * res, (rows.ravel() + 0.5) * res
            c, s = math.cos(layout.origin_yaw), math.sin(layout.origin_yaw)
            bx = layout.origin_x + c * gx - s * gy
            by = layout.origin_y + s * gx + c * gy
            self._layout_cache = (key, bx, by)
        return self._layout_cache[1], self._layout_cache[2]

    def add_grid(self, grid, layout, pose, occupied_threshold=50):
        """Add what a grid seen at odometry ``pose`` (x, y, yaw) shows; return the cells voted."""
        grid = np.asarray(grid)
        x0, y0, th = (float(v) for v in pose)
        self.follow(x0, y0)
        bx, by = self._base_cells(grid.shape, layout)
        flat = grid.ravel()
        known = flat >= 0
        if not known.any():
            return 0
        c, s = math.cos(th), math.sin(th)
        kx, ky = bx[known], by[known]
        row, col = self._cell(x0 + c * kx - s * ky, y0 + s * kx + c * ky)
        inside = (row >= 0) & (row < self.size) & (col >= 0) & (col < self.size)
        idx = (row * self.size + col)[inside]
        occ = (flat[known] >= occupied_threshold)[inside]
        mark = np.zeros(self.size * self.size, dtype=np.int8)
        mark[idx[~occ]] = 1
        mark[idx[occ]] = 2                 # an occupied grid cell makes the map cell blocked
        free = np.flatnonzero(mark == 1)
        blocked = np.flatnonzero(mark == 2)
        vote = self.vote.reshape(-1)
        vote[free] = np.minimum(vote[free] + _VOTE_FREE, _VOTE_CAP)
        vote[blocked] = np.maximum(vote[blocked].astype(np.int16) - _VOTE_BLOCKED, -_VOTE_CAP)
        seen = self.seen.reshape(-1)
        seen[free] = True
        seen[blocked] = True
        return int(free.size + blocked.size)

    def sweep(self, x, y):
        """Mark the footprint's cells at odometry (x, y) swept, and its centre's cell passed."""
        if self.offset is None:
            self.follow(x, y)
        r = self.robot_radius
        ix = np.arange(math.floor((x - r) / CELL), math.floor((x + r) / CELL) + 1)
        iy = np.arange(math.floor((y - r) / CELL), math.floor((y + r) / CELL) + 1)
        cx, cy = np.meshgrid((ix + 0.5) * CELL, (iy + 0.5) * CELL)
        inside = np.hypot(cx - x, cy - y) <= r
        row, col = self._cell(cx[inside], cy[inside])
        ok = (row >= 0) & (row < self.size) & (col >= 0) & (col < self.size)
        row, col = row[ok], col[ok]
        self.swept[row, col] = True
        self.seen[row, col] = True
        self.vote[row, col] = _VOTE_CAP
        row, col = (int(v) for v in self._cell(x, y))
        if 0 <= row < self.size and 0 <= col < self.size:
            self.centre[row, col] = True

    # -- what the map says ----------------------------------------------------------------
    @property
    def free(self):
        """Return the seen-free cells (swept ones included), bool (rows = y, cols = x)."""
        return (self.seen & (self.vote > 0)) | self.swept

    @property
    def blocked(self):
        """Return the seen-blocked cells."""
        return self.seen & (self.vote <= 0) & ~self.swept

    def blocked_near(self, pose, radius):
        """
        Return the seen-blocked floor within ``radius`` (m) of ``pose``, in its frame.

        (N, 2) points of the robot's base frame at odometry ``pose`` (x, y, yaw): the centre
        of each blocked cell and four points a quarter cell from it, so that finer grids mark
        every part of the cell they cover.
        """
        x0, y0, th = (float(v) for v in pose)
        if self.offset is None:
            return np.zeros((0, 2))
        r = int(math.ceil(radius / CELL)) + 1
        row, col = (int(v) for v in self._cell(x0, y0))
        rows = slice(max(row - r, 0), min(row + r + 1, self.size))
        cols = slice(max(col - r, 0), min(col + r + 1, self.size))
        br, bc = np.nonzero(self.blocked[rows, cols])
        if not br.size:
            return np.zeros((0, 2))
        cx, cy = self.cell_center(br + rows.start, bc + cols.start)
        near = np.hypot(cx - x0, cy - y0) <= radius + CELL
        q = _QUARTER * CELL
        ox = np.array([0.0, -q, q, -q, q])
        oy = np.array([0.0, -q, -q, q, q])
        px = (cx[near][:, None] + ox[None, :]).ravel() - x0
        py = (cy[near][:, None] + oy[None, :]).ravel() - y0
        c, s = math.cos(th), math.sin(th)
        return np.stack([c * px + s * py, -s * px + c * py], axis=1)

    def _bounds(self):
        """Return the window rows and columns holding seen cells, with a margin, or None."""
        rows = np.flatnonzero(self.seen.any(axis=1))
        if not rows.size:
            return None
        cols = np.flatnonzero(self.seen.any(axis=0))
        m = 2
        return (slice(max(rows[0] - m, 0), min(rows[-1] + m + 1, self.size)),
                slice(max(cols[0] - m, 0), min(cols[-1] + m + 1, self.size)))

    def goals(self, box=None, tight=False, clearance=None):
        """
        Return the goal cells (bool, in ``box`` or the window) and the passable cells.

        A goal is seen free, not swept, passable (at least ``clearance`` m, by default the
        map's, from every seen-blocked cell), and at least :data:`MIN_GAIN` of the cells
        within :data:`GAIN_RADIUS` of it are new floor (unswept, not seen blocked). With
        ``tight`` the cells the robot's centre passed through are passable too.
        """
        clearance = self.clearance if clearance is None else float(clearance)
        box = box or (slice(None), slice(None))
        seen, vote, swept = self.seen[box], self.vote[box], self.swept[box]
        blocked = seen & (vote <= 0) & ~swept
        free = (seen & (vote > 0)) | swept
        src = np.where(blocked, 0, 255).astype(np.uint8)
        if blocked.any():
            away = cv2.distanceTransform(src, cv2.DIST_L2, cv2.DIST_MASK_PRECISE) * CELL
        else:
            away = np.full(src.shape, np.inf, dtype=np.float32)
        passable = free & (away >= clearance - 1e-6)
        # the cells passable only at the narrow clearance or as the robot's centre's trail
        # (of the last call, in box); None when every passable cell keeps the clearance
        only = passable & (away < self.clearance - 1e-6)
        if tight:
            only |= self.centre[box] & ~passable
            passable = passable | self.centre[box]
        self._tight_cells = only if tight or clearance < self.clearance else None
        new = (~swept & ~blocked).astype(np.float32)
        gain = cv2.filter2D(new, -1, self._disc, borderType=cv2.BORDER_CONSTANT)
        goal = passable & ~swept & (seen & (vote > 0)) & \
            (gain >= MIN_GAIN * float(self._disc.sum()) - 1e-6)
        return goal, passable

    def give_up(self, x, y, until):
        """Skip goals near odometry (x, y) until the time ``until`` (the caller's clock)."""
        self._give_up.append((float(x), float(y), float(until)))
        del self._give_up[:-_GIVE_UP_MAX]
        self.target = None
        self.waypoint = None
        self._field = None

    def plan(self, x, y, now=0.0, keep=True, choose=True, heading=None, turn_cost=0.0,
             tight=False):
        """
        Choose the target for the robot at odometry (x, y); return it (x, y) or None.

        With ``keep`` a target that is still a goal (and reachable) stays; otherwise, with
        ``choose``, the nearest goal at least :data:`MIN_TARGET_DISTANCE` away (geodesic)
        wins. With the robot's ``heading`` (rad), ``turn_cost`` metres per radian between it
        and the bearing of a goal are added to that goal's distance: the time a turn in place
        takes, as distance driven. Also computes the distance field to the target and the
        waypoint. Cells given up on are skipped until their time (``now``) has passed. With
        ``tight``, when no goal is reachable at the clearance, the cells the robot's centre
        passed through are passable too (a tight target, :attr:`tight`).
        """
        self._give_up = [g for g in self._give_up if g[2] > now]
        self.follow(x, y)
        self._field = None
        self.waypoint = None
        box = self._bounds()
        if box is None:
            self.target = None
            return None
        r0, c0 = box[0].start, box[1].start
        keep_target = self.target if keep else None
        use_tight = self.tight and keep_target is not None
        use_clear = self.target_clearance if keep_target is not None else self.clearance
        goal, passable = self.goals(box, use_tight, use_clear)
        h, w = goal.shape
        rr, cc = np.mgrid[0:h, 0:w]
        cx, cy = self.cell_center(rr + r0, cc + c0)

        def without_given_up(goal):
            for gx, gy, _ in self._give_up:
                goal &= np.hypot(cx - gx, cy - gy) > _GIVE_UP_RADIUS
            return goal

        goal = without_given_up(goal)
        free = (self.seen[box] & (self.vote[box] > 0)) | self.swept[box]
        near = np.hypot(cx - x, cy - y)
        # The wavefront starts at the free cells near the robot, at their distance from it,
        # whether or not they are passable: the robot may stand close to something.
        seeds = np.where((near <= _SEED_RADIUS) & free, near / CELL, np.inf).astype(np.float32)
        target = None
        if keep_target is not None:
            trow, tcol = (int(v) for v in self._cell(*keep_target))
            if 0 <= trow - r0 < h and 0 <= tcol - c0 < w and goal[trow - r0, tcol - c0]:
                target = (trow - r0, tcol - c0)
        if target is None:
            if not choose:
                self.target = None
                return None
            extra = np.zeros(goal.shape, dtype=np.float32)
            if heading is not None and turn_cost > 0.0:
                off = np.arctan2(cy - y, cx - x) - heading
                extra += turn_cost / CELL * np.abs((off + np.pi) % (2.0 * np.pi) - np.pi)
            made = (use_clear, use_tight)
            for use_clear, use_tight in self._tiers(tight):
                if (use_clear, use_tight) != made:
                    made = (use_clear, use_tight)
                    goal, passable = self.goals(box, use_tight, use_clear)
                    goal = without_given_up(goal)
                target = self._nearest_goal(goal, passable, seeds, extra)
                if target is not None:
                    break
            if target is None:
                self.target = None
                return None
        self.tight = use_tight
        self.target_clearance = use_clear
        to_goal = np.full(goal.shape, np.inf, dtype=np.float32)
        to_goal[target] = 0.0
        reached = []

        def around_robot(dist, rounds):
            # Final within FIELD_REACH of the robot once the robot is reached (the arcs look
            # no farther).
            if not reached:
                here = float(np.min(dist + seeds))
                if math.isfinite(here):
                    reached.append(here + FIELD_REACH / CELL)
            return bool(reached) and rounds >= reached[0]

        field = geodesic(passable, to_goal, stop=around_robot) * CELL
        at_robot = float(np.min(field + seeds * CELL))
        if not math.isfinite(at_robot):
            self.target = None
            return None
        self.target = self.cell_center(target[0] + r0, target[1] + c0)
        self.tight_cells = self._tight_cells
        self.robot_distance = at_robot
        self._field = (field, (r0, c0))
        # The waypoint: the cell within WAYPOINT_REACH nearest to the target (along the path).
        ahead = np.where(near <= WAYPOINT_REACH, field, np.inf)
        best = int(np.argmin(ahead))
        if np.isfinite(ahead.flat[best]):
            wr, wc = divmod(best, w)
            self.waypoint = (float(cx[wr, wc]), float(cy[wr, wc]))
        else:
            self.waypoint = self.target
        return self.target

    def _tiers(self, tight):
        """
        Return the (clearance, tight) pairs a new target is looked for with, in turn.

        The map's clearance; then :attr:`narrow_clearance` when set; then, with ``tight``,
        the centre cells passable too at the smaller of the two.
        """
        tiers = [(self.clearance, False)]
        if 0.0 < self.narrow_clearance < self.clearance:
            tiers.append((self.narrow_clearance, False))
        if tight:
            tiers.append((tiers[-1][0], True))
        return tiers

    @staticmethod
    def _nearest_goal(goal, passable, seeds, extra):
        """Return the (row, col) of the goal of least path length plus ``extra``, or None."""
        if not goal.any():
            return None
        extra = np.where(goal, extra, np.inf).astype(np.float32)

        def found(dist, rounds):
            # No goal farther than `rounds` cells can cost less than the best one found.
            cost = np.where(dist >= MIN_TARGET_DISTANCE / CELL, dist + extra, np.inf)
            return float(cost.min()) <= rounds

        from_robot = geodesic(passable, seeds, stop=found)
        d = np.where(from_robot >= MIN_TARGET_DISTANCE / CELL, from_robot + extra, np.inf)
        best = int(np.argmin(d))
        if not np.isfinite(d.flat[best]):
            return None
        return divmod(best, goal.shape[1])

    def distance_at(self, x, y):
        """Return the geodesic distance (m) to the target at odometry points; inf off the path."""
        x = np.asarray(x, dtype=np.float64)
        out = np.full(x.shape, np.inf)
        if self._field is None:
            return out
        field, (r0, c0) = self._field
        row, col = self._cell(x, y)
        row, col = row - r0, col - c0
        ok = (row >= 0) & (row < field.shape[0]) & (col >= 0) & (col < field.shape[1])
        out[ok] = field[row[ok], col[ok]]
        return out

    def path(self, x, y, reach):
        """
        Return the path from odometry (x, y) towards the target, about ``reach`` m of it.

        Steepest descent over the distance field from the robot's cell (or the nearest
        reached cell within :data:`_SEED_RADIUS`). Returns (N, 2) odometry cell centres and
        whether each is a tight cell (passable only as a centre cell); empty without a target.
        """
        none = (np.zeros((0, 2)), np.zeros(0, dtype=bool))
        if not self.has_target:
            return none
        field, (r0, c0) = self._field
        h, w = field.shape
        row, col = (int(v) - o for v, o in zip(self._cell(x, y), (r0, c0)))
        r = int(math.ceil(_SEED_RADIUS / CELL))
        rows = slice(max(row - r, 0), min(row + r + 1, h))
        cols = slice(max(col - r, 0), min(col + r + 1, w))
        if rows.start >= rows.stop or cols.start >= cols.stop:
            return none
        rr, cc = np.mgrid[rows, cols]
        px, py = self.cell_center(rr + r0, cc + c0)
        cost = field[rows, cols] + np.hypot(px - x, py - y)
        cost[np.hypot(px - x, py - y) > _SEED_RADIUS + 1e-9] = np.inf
        k = int(np.argmin(cost))
        if not np.isfinite(cost.flat[k]):
            return none
        row, col = int(rr.flat[k]), int(cc.flat[k])
        cells = [(row, col)]
        for _ in range(int(math.ceil(reach / CELL)) + 1):
            best, here = None, field[row, col]
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)):
                nr, nc = row + dr, col + dc
                if 0 <= nr < h and 0 <= nc < w and field[nr, nc] < here - 1e-6:
                    here, best = field[nr, nc], (nr, nc)
            if best is None:
                break
            row, col = best
            cells.append(best)
        rows_, cols_ = np.array(cells).T
        pts = np.stack(self.cell_center(rows_ + r0, cols_ + c0), axis=1).astype(np.float64)
        tight = self.tight_cells[rows_, cols_] if self.tight_cells is not None \
            and self.tight_cells.shape == field.shape else np.zeros(len(cells), dtype=bool)
        return pts, tight

    @property
    def narrow(self):
        """Return True while the target was planned at the narrow clearance."""
        return self.target is not None and self.target_clearance < self.clearance

    @property
    def has_target(self):
        """Return True while a target and its distance field are set."""
        return self._field is not None and self.target is not None
