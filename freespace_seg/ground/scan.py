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
A virtual laser scan of the ground grid, ROS-free: what ``free_space/scan`` publishes.

The scan lies in the base frame (REP 105 ``base_link``: x forward, y left, z up, origin on the
floor), so it is parallel to the floor; its rays start at the frame's origin. Angles follow
sensor_msgs/LaserScan: angle 0 is +x (forward), counter-clockwise (towards +y, left) is
positive, ray ``i`` is at ``angle_min + i * angle_increment``. The rays are whole multiples
of ``angle_increment`` (ray 0 of a forward camera is exactly +x) and span the bearings of the
floor the camera sees within the grid and ``max_range``.

Each ray walks the grid from the origin outwards (samples a quarter of a cell apart, only in
cells the camera can see):

* the first occupied cell it crosses gives the range: the distance from the origin to that
  cell's obstacle point (``free_space/obstacles`` has one point per occupied cell, the mean of
  the obstacle feet in it), so scan, cloud and grid say the same thing;
* no occupied cell and free floor up to the farthest cell the ray can see (within one cell),
  where that is the range limit (``max_range`` or the grid's edge): ``+inf``, "nothing
  within range" (REP 117). Nav2's ObstacleLayer with ``inf_is_valid: true`` turns it into
  ``range_max`` and clears along the whole ray;
* otherwise ``NaN``, no measurement: the floor along the ray is unknown beyond some point
  (behind an obstacle's image edge), or the ray leaves the camera's field of view before the
  range limit (the outermost rays of a pitched camera, whose view narrows with distance: a
  laser range cannot say "free up to here, unknown beyond"). Nav2 neither marks nor clears
  along it.

``range_max`` is the farthest distance any ray can see (the grid's edge or ``max_range``);
rays that leave the grid earlier (towards its corners) are cleared a little past what was
seen when Nav2 replaces their ``+inf`` by ``range_max``. ``range_min`` is the distance of the
nearest floor the camera sees: nearer, an obstacle cannot be seen at all.
"""

import math

from freespace_seg.ground.grid import FREE, OCCUPIED
import numpy as np

#: samples per cell along a ray
_SAMPLES_PER_CELL = 4


class ScanLayout:
    """
    The rays of the virtual scan of one :class:`GroundProjector` and angle increment.

    Rebuild it (:func:`scan_layout`) when the projector's table is rebuilt.
    ``range_limited`` says, per ray, whether its view ends at the range limit (only those
    can be ``+inf``). ``angles``,
    ``angle_min``, ``angle_max``, ``angle_increment``, ``range_min`` and ``range_max`` fill
    the LaserScan message; :meth:`ranges` computes its ranges.
    """

    def __init__(self, projector, angle_increment):
        inc = float(angle_increment)
        if not math.isfinite(inc) or inc <= 0.0:
            raise ValueError(f'angle_increment must be a positive number of radians, got {inc}')
        self.angle_increment = inc
        self.rebuild_count = projector.rebuild_count
        self._projector = projector
        spec = projector.grid_spec
        self._resolution = spec.resolution
        visible = np.zeros(spec.size, dtype=bool)
        visible[projector._rep_cell] = True
        lut = projector._band_lut
        xy = projector._band_xy[lut >= 0].astype(np.float64)
        if xy.shape[0] == 0:
            self._empty()
            return
        bearing = np.arctan2(xy[:, 1], xy[:, 0])
        centre = math.atan2(np.sin(bearing).mean(), np.cos(bearing).mean())
        rel = np.angle(np.exp(1j * (bearing - centre)))
        k = np.round((centre + rel) / inc).astype(np.int64)
        k_min, k_max = int(k.min()), int(k.max())
        self.angles = np.arange(k_min, k_max + 1, dtype=np.float64) * inc
        # Samples from the origin out to the farthest grid corner.
        corners_x = (spec.origin[0], spec.origin[0] + spec.nx * spec.resolution)
        corners_y = (spec.origin[1], spec.origin[1] + spec.ny * spec.resolution)
        far = max(math.hypot(cx, cy) for cx in corners_x for cy in corners_y)
        step = spec.resolution / _SAMPLES_PER_CELL
        dist = np.arange(0.5 * step, far + step, step)
        sx = np.cos(self.angles)[:, None] * dist[None, :]
        sy = np.sin(self.angles)[:, None] * dist[None, :]
        cells = spec.flat_index(sx, sy)
        seen = cells >= 0
        seen[seen] = visible[cells[seen]]
        any_seen = seen.any(axis=1)
        last = np.where(any_seen, seen.shape[1] - 1 - np.argmax(seen[:, ::-1], axis=1), -1)
        first = np.where(any_seen, np.argmax(seen, axis=1), -1)
        # A ray "sees to the range limit" when what ends its view is the grid's edge or
        # max_range, not the side of the camera's field of view: the sample after its last
        # visible one is outside the grid or (within a cell) beyond max_range.
        after = np.minimum(last + 1, dist.size - 1)
        rows = np.arange(self.angles.size)
        pos = projector.pose.position
        beyond = np.hypot(sx[rows, after] - pos[0], sy[rows, after] - pos[1]) > \
            spec.max_range - spec.resolution
        self.range_limited = any_seen & ((last + 1 >= dist.size) | (cells[rows, after] < 0)
                                         | beyond)
        keep = int(last.max()) + 1
        self._cells = np.where(seen, cells, 0)[:, :keep]
        self._seen = seen[:, :keep]
        self._dist = dist[:keep]
        self._edge = np.where(any_seen, dist[np.maximum(last, 0)], np.nan)
        self._any = any_seen
        self.range_min = float(dist[first[any_seen]].min()) if any_seen.any() else 0.0
        self.range_max = float(np.nanmax(self._edge)) if any_seen.any() else 0.0

    def _empty(self):
        self.angles = np.zeros(0)
        self._cells = np.zeros((0, 0), dtype=np.intp)
        self._seen = np.zeros((0, 0), dtype=bool)
        self._dist = np.zeros(0)
        self._edge = np.zeros(0)
        self._any = np.zeros(0, dtype=bool)
        self.range_limited = np.zeros(0, dtype=bool)
        self.range_min = self.range_max = 0.0

    @property
    def angle_min(self):
        """Return the angle of the first ray (rad), 0 when there are no rays."""
        return float(self.angles[0]) if self.angles.size else 0.0

    @property
    def angle_max(self):
        """Return the angle of the last ray (rad), 0 when there are no rays."""
        return float(self.angles[-1]) if self.angles.size else 0.0

    @property
    def size(self):
        """Return the number of rays."""
        return int(self.angles.size)

    def crossed_cells(self, ray):
        """Return the flat indices of the cells ray ``ray`` samples, nearest first."""
        cells = self._cells[ray][self._seen[ray]]
        _, first = np.unique(cells, return_index=True)
        return cells[np.sort(first)]

    def ranges(self, ground):
        """
        Compute the float32 range of every ray (m) for a :class:`Ground`: finite, +inf or NaN.

        See the module docstring for what each means.
        """
        out = np.full(self.size, np.nan, dtype=np.float32)
        if not self.size:
            return out
        flat = np.asarray(ground.grid).reshape(-1)
        values = flat[self._cells]
        occupied = (values == OCCUPIED) & self._seen
        hit = occupied.any(axis=1)
        if hit.any():
            rays = np.flatnonzero(hit)
            cells = self._cells[rays, np.argmax(occupied[rays], axis=1)]
            idx = np.searchsorted(ground.point_cells, cells)
            idx = np.minimum(idx, max(0, len(ground.point_cells) - 1))
            if len(ground.point_cells) == 0 or np.any(ground.point_cells[idx] != cells):
                raise ValueError('the grid has occupied cells without obstacle points')
            pts = ground.points[idx].astype(np.float64)
            out[rays] = np.hypot(pts[:, 0], pts[:, 1])
        free = (values == FREE) & self._seen
        reach = np.where(free, self._dist[None, :], -1.0).max(axis=1)
        clear = ~hit & self.range_limited & (reach >= self._edge - self._resolution)
        out[clear] = np.inf
        return out


def scan_layout(layout, projector, angle_increment):
    """Return ``layout`` if it still fits ``projector`` and the increment, else a new one."""
    if layout is not None and layout._projector is projector and \
            layout.rebuild_count == projector.rebuild_count and \
            layout.angle_increment == float(angle_increment):
        return layout
    return ScanLayout(projector, angle_increment)
