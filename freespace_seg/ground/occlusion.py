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
Occlusion memory: no free cell behind an obstacle that the last grids saw.

A robot that drives up to a wall sees the wall's foot from afar; a moment later the wall
fills the view, the model may call the plain wall floor, and the grid frees everything "behind"
it out to ``max_range``. :class:`OcclusionMemory` keeps, in the odom frame, the obstacles that
cut a column of the grids of the last ``memory`` seconds (the feet of
:attr:`freespace_seg.ground.projection.Ground.occluders`, with the height each frame saw) and
makes every free cell of the newest grid that lies in their shadow, seen from the camera now,
unknown:

* an obstacle whose blocked run in the image reached the horizon (at least as tall as the
  camera) shadows everything behind it, out to the grid's range;
* a lower one, seen ``h`` high, shadows from its foot to ``rho * z / (z - h)`` for a camera
  ``z`` high and the obstacle ``rho`` away: the floor a camera sees over a low box stays free;
* a remembered obstacle on a cell that the newest grid calls free is not used for that grid
  (the camera sees floor there now), and one within ``footprint`` metres of the base's origin
  is forgotten (the robot stands there);
* the newest observation of a 5 cm spot of the odom frame replaces the ones before (a box
  first seen in front of a wall, so "tall", is seen low once the floor behind it shows).

Occupied and unknown cells pass unchanged, and nothing becomes free or occupied that the newest
grid did not say: the memory only takes free cells away. The newest grid's own obstacles act
from the next grid on (its columns are already cut). The poses are (x, y, yaw) of the grid's
frame in the odom frame at each grid's stamp, as for
:class:`~freespace_seg.ground.agreement.GridAgreement`; a pose of None (no odometry) forgets
everything and passes the grid unchanged, and a stamp that goes back by more than a second (a
replayed bag) starts over.

The cost is a polar raster of the shadows (720 bearings x ``max_range`` / 2.5 cm) per grid:
about a millisecond with a few thousand remembered spots. ROS-free (numpy);
``grid-rules --drives --occlusion`` measures it (docs/ground_outputs.md).
"""

from dataclasses import dataclass
import math
import threading

from freespace_seg.ground.grid import FREE, UNKNOWN
import numpy as np

#: bearing bins of the shadow raster (rad)
BEARING_STEP = math.radians(0.5)
#: range steps of the shadow raster (m)
RANGE_STEP = 0.025
#: remembered obstacles are kept one per spot of this size in the odom frame (m)
SPOT = 0.05
#: a stamp this much (s) older than the newest grid's forgets everything (a replayed bag)
BACKWARDS = 1.0


@dataclass(frozen=True)
class OcclusionParams:
    """
    How long obstacles are remembered.

    ``memory`` seconds (0: off); ``footprint``: remembered obstacles within this radius (m) of
    the base's origin are forgotten.
    """

    memory: float = 0.0
    footprint: float = 0.17

    def __post_init__(self):
        for name, limit in (('memory', 60.0), ('footprint', 2.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or not 0.0 <= value <= limit:
                raise ValueError(f'grid occlusion {name} must be a number in [0, {limit:g}], '
                                 f'got {value!r}')

    @property
    def active(self):
        """Whether the memory can take free cells away at all."""
        return self.memory > 0.0


class OcclusionMemory:
    """
    The obstacles of the last grids in the odom frame; :meth:`apply` filters the newest.

    One object may serve several threads (the node's workers): :meth:`apply` holds a lock.
    """

    def __init__(self, params=OcclusionParams()):
        self.params = params
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        """Forget every obstacle (after a clock jump, a new odom frame or a new grid)."""
        self._xy = np.zeros((0, 2))
        self._height = np.zeros(0)
        self._stamp = np.zeros(0)
        self._newest = None
        self._centres = None

    def __len__(self):
        return int(self._stamp.size)

    def _cell_centres(self, spec):
        if self._centres is None or self._centres[0] != spec:
            x, y = spec.cell_centers()
            self._centres = (spec, x, y)
        return self._centres[1], self._centres[2]

    def apply(self, grid, spec, pose, stamp, camera, occluders):
        """
        Return ``grid`` with its free cells in a remembered obstacle's shadow unknown.

        ``grid``: the newest int8 (ny, nx) grid of ``spec``. ``pose``: (x, y, yaw) of the
        grid's frame in the odom frame, or None (no odometry: everything is forgotten and
        ``grid`` returned as it is). ``stamp``: the grid's time in seconds. ``camera``: (x, y,
        z) of the camera in the grid's frame. ``occluders``: (N, 3) x, y, height of this
        grid's obstacles in the grid's frame (height ``inf``: at least as tall as the
        camera), remembered for the grids to come. The input is not changed; the result is a
        new array when anything was hidden.
        """
        if not self.params.active:
            return grid
        if pose is None:
            with self._lock:
                self.reset()
            return grid
        with self._lock:
            return self._apply(grid, spec, pose, float(stamp), camera, occluders)

    def _apply(self, grid, spec, pose, stamp, camera, occluders):
        px, py, yaw = (float(v) for v in pose)
        c, s = math.cos(yaw), math.sin(yaw)
        if self._newest is not None and stamp < self._newest - BACKWARDS:
            self.reset()
        self._newest = stamp if self._newest is None else max(self._newest, stamp)
        keep = self._stamp >= stamp - self.params.memory
        # The remembered spots in the grid's frame now.
        dx, dy = self._xy[:, 0] - px, self._xy[:, 1] - py
        bx, by = c * dx + s * dy, -s * dx + c * dy
        keep &= np.hypot(bx, by) > self.params.footprint
        self._xy, self._height, self._stamp = self._xy[keep], self._height[keep], \
            self._stamp[keep]
        bx, by = bx[keep], by[keep]
        out = self._hide(np.asarray(grid), spec, bx, by, self._height, camera)
        occ = np.asarray(occluders, dtype=np.float64).reshape(-1, 3)
        occ = occ[np.isfinite(occ[:, 0]) & np.isfinite(occ[:, 1])]
        if occ.shape[0]:
            wx, wy = px + c * occ[:, 0] - s * occ[:, 1], py + s * occ[:, 0] + c * occ[:, 1]
            # A height that is not a number is taken as tall; none is below the floor.
            height = np.where(np.isnan(occ[:, 2]), np.inf, np.maximum(occ[:, 2], 0.0))
            self._remember(np.stack([wx, wy], axis=1), height, stamp)
        return out

    def _remember(self, xy, height, stamp):
        """Add spots; the newest observation of a SPOT-sized spot replaces the older ones."""
        xy = np.concatenate([self._xy, xy])
        height = np.concatenate([self._height, height])
        stamps = np.concatenate([self._stamp, np.full(height.size, stamp)])
        q = np.floor(xy / SPOT).astype(np.int64)
        key = q[:, 0] * 2_000_003 + q[:, 1]
        # The last entry of each spot (the newest: entries are appended in time order).
        _, last = np.unique(key[::-1], return_index=True)
        last = key.size - 1 - last
        self._xy, self._height, self._stamp = xy[last], height[last], stamps[last]

    def _hide(self, grid, spec, bx, by, height, camera):
        free = grid == FREE
        if bx.size == 0 or not free.any():
            return grid
        x, y = self._cell_centres(spec)
        cx, cy, cz = (float(v) for v in camera)
        # Spots on a cell the newest grid calls free are not used: the camera sees floor there.
        row, col = spec.cell_of(bx, by)
        inside = row >= 0
        seen_free = np.zeros(bx.size, bool)
        seen_free[inside] = free[row[inside], col[inside]]
        use = ~seen_free
        if not use.any():
            return grid
        shadow = self._shadows(bx[use] - cx, by[use] - cy, height[use], cz, spec)
        fx, fy = x[free] - cx, y[free] - cy
        n_bins, n_ranges = shadow.shape
        b = np.floor((np.arctan2(fy, fx) + math.pi) / BEARING_STEP).astype(np.intp) % n_bins
        r = np.minimum(np.floor(np.hypot(fx, fy) / RANGE_STEP).astype(np.intp), n_ranges - 1)
        hide = shadow[b, r]
        if not hide.any():
            return grid
        out = np.array(grid, np.int8, copy=True)
        rows, cols = np.nonzero(free)
        out[rows[hide], cols[hide]] = UNKNOWN
        return out

    @staticmethod
    def _shadows(ox, oy, height, cz, spec):
        """Return the (bearing, range) raster of the shadows of spots at (ox, oy) of the camera."""
        n_bins = int(math.ceil(2.0 * math.pi / BEARING_STEP))
        reach = math.hypot(spec.width, spec.height) if spec.max_range is None else \
            spec.max_range
        n_ranges = int(math.ceil((reach + 1.0) / RANGE_STEP))
        diff = np.zeros((n_bins, n_ranges + 1), np.int32)
        half_cell = 0.5 * spec.resolution
        rho = np.maximum(np.hypot(ox, oy), 1e-3)
        bearing = np.arctan2(oy, ox) + math.pi
        half = np.arctan2(half_cell, rho)
        first = np.floor((bearing - half) / BEARING_STEP).astype(np.intp)
        count = np.floor((bearing + half) / BEARING_STEP).astype(np.intp) - first + 1
        low = np.isfinite(height) & (height < cz)
        end = np.full(rho.shape, np.inf)
        end[low] = rho[low] * cz / (cz - height[low])
        start = np.clip(np.floor((rho - half_cell) / RANGE_STEP), 0, n_ranges).astype(np.intp)
        stop = np.clip(np.ceil(np.minimum(end, 1e6) / RANGE_STEP), 0, n_ranges).astype(np.intp)
        spot = np.repeat(np.arange(rho.size), count)
        bins = (np.repeat(first, count) + np.arange(count.sum())
                - np.repeat(np.cumsum(count) - count, count)) % n_bins
        np.add.at(diff, (bins, start[spot]), 1)
        np.add.at(diff, (bins, stop[spot]), -1)
        return np.cumsum(diff, axis=1)[:, :n_ranges] > 0
