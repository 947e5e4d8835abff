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
The ground grid: where its cells lie (:class:`GridSpec`) and which blocked pixels cut a column.

One description of a grid for the whole package: the projection fills grids of a
:class:`GridSpec`, ``free_space/grid`` is published from one, and the driver reads the grids it
receives as one (:func:`freespace_seg.nodes.msgs.grid_from_msg`). Cell values follow
nav_msgs/OccupancyGrid: :data:`FREE` ``0``, :data:`OCCUPIED` ``100``, :data:`UNKNOWN` ``-1``.

:class:`GridRule` says which blocked mask pixels cut their image column when the projector
(:meth:`freespace_seg.ground.projection.GroundProjector.ground`) turns a mask into a grid, and
whether it reads the per-pixel confidence (:attr:`GridRule.needs_confidence`).
"""

from dataclasses import dataclass
import math

import numpy as np

FREE = 0
OCCUPIED = 100
UNKNOWN = -1


@dataclass(frozen=True)
class GridSpec:
    """
    A ground grid in the base frame, laid out like nav_msgs/OccupancyGrid.

    All lengths in metres. ``origin`` is the base-frame (x, y) of the outer corner of cell
    (0, 0) and ``origin_yaw`` the rotation of the grid's axes about z (OccupancyGrid
    ``info.origin``; 0 for the grids this package makes). Rows run along the grid's y axis,
    columns along its x axis (+y and +x of the base frame when ``origin_yaw`` is 0), and the
    flat index of (row, col) is ``col + row * nx`` (row-major, as OccupancyGrid.data).
    ``width`` (along x) and ``height`` (along y) are rounded to whole cells. ``max_range``
    limits how far from the camera floor points are used; None for a grid that did not come
    from a camera here (one read from an OccupancyGrid message), which the projector refuses.
    """

    resolution: float = 0.05
    width: float = 4.0
    height: float = 4.0
    origin: tuple = (0.0, -2.0)
    max_range: float = 3.0
    origin_yaw: float = 0.0

    def __post_init__(self):
        for name in ('resolution', 'width', 'height', 'max_range'):
            value = getattr(self, name)
            if name == 'max_range' and value is None:
                continue
            if not isinstance(value, (int, float, np.integer, np.floating)) or \
                    not math.isfinite(value) or value <= 0:
                raise ValueError(f'GridSpec.{name} must be a positive number of metres, '
                                 f'got {value!r}')
        try:
            origin = tuple(float(o) for o in self.origin)
        except (TypeError, ValueError):
            raise ValueError(f'GridSpec.origin must be (x, y) in metres, got {self.origin!r}')
        if len(origin) != 2 or not all(math.isfinite(o) for o in origin):
            raise ValueError(f'GridSpec.origin must be (x, y) in metres, got {self.origin!r}')
        object.__setattr__(self, 'origin', origin)
        if not isinstance(self.origin_yaw, (int, float, np.integer, np.floating)) or \
                not math.isfinite(self.origin_yaw):
            raise ValueError(f'GridSpec.origin_yaw must be a number of radians, got '
                             f'{self.origin_yaw!r}')
        object.__setattr__(self, 'origin_yaw', float(self.origin_yaw))
        for name, size in (('width', self.width), ('height', self.height)):
            if round(size / self.resolution) < 1:
                raise ValueError(f'GridSpec.{name} ({size} m) is smaller than one cell of '
                                 f'{self.resolution} m')

    @classmethod
    def of_cells(cls, resolution, nx, ny, origin=(0.0, 0.0), origin_yaw=0.0):
        """Return the spec of an ``nx`` by ``ny`` grid (OccupancyGrid ``info``), no max_range."""
        return cls(resolution=float(resolution), width=int(nx) * float(resolution),
                   height=int(ny) * float(resolution), origin=tuple(origin), max_range=None,
                   origin_yaw=origin_yaw)

    @property
    def origin_x(self):
        """Return the base-frame x of the outer corner of cell (0, 0)."""
        return self.origin[0]

    @property
    def origin_y(self):
        """Return the base-frame y of the outer corner of cell (0, 0)."""
        return self.origin[1]

    @property
    def nx(self):
        """Return the number of cells along x (OccupancyGrid info.width)."""
        return int(round(self.width / self.resolution))

    @property
    def ny(self):
        """Return the number of cells along y (OccupancyGrid info.height)."""
        return int(round(self.height / self.resolution))

    @property
    def shape(self):
        """Return the array shape of a grid, (ny, nx)."""
        return (self.ny, self.nx)

    @property
    def size(self):
        """Return the number of cells."""
        return self.nx * self.ny

    def cell_of(self, x, y):
        """Return (row, col) int arrays of the cells holding base-frame points, -1 outside."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(invalid='ignore'):
            gx, gy = x - self.origin[0], y - self.origin[1]
            if self.origin_yaw != 0.0:
                c, s = math.cos(self.origin_yaw), math.sin(self.origin_yaw)
                gx, gy = c * gx + s * gy, -s * gx + c * gy
            col = np.floor(gx / self.resolution)
            row = np.floor(gy / self.resolution)
            inside = (col >= 0) & (col < self.nx) & (row >= 0) & (row < self.ny)
        return (np.where(inside, row, -1).astype(np.intp),
                np.where(inside, col, -1).astype(np.intp))

    def flat_index(self, x, y):
        """Return the flat cell index (col + row * nx) of base-frame points, -1 outside."""
        row, col = self.cell_of(x, y)
        return np.where(row >= 0, col + row * self.nx, -1)

    def cell_centers(self):
        """Return base-frame (x, y) float64 arrays of shape (ny, nx) with the cell centres."""
        if self.origin_yaw == 0.0:
            xs = self.origin[0] + (np.arange(self.nx) + 0.5) * self.resolution
            ys = self.origin[1] + (np.arange(self.ny) + 0.5) * self.resolution
            return np.meshgrid(xs, ys)
        gx, gy = np.meshgrid((np.arange(self.nx) + 0.5) * self.resolution,
                             (np.arange(self.ny) + 0.5) * self.resolution)
        c, s = math.cos(self.origin_yaw), math.sin(self.origin_yaw)
        return self.origin[0] + c * gx - s * gy, self.origin[1] + s * gx + c * gy


@dataclass(frozen=True)
class GridRule:
    """
    Which blocked pixels cut their column (:mod:`freespace_seg.ground.projection` says how).

    ``min_run``: a blocked pixel cuts only when it lies in a vertical run of blocked pixels at
    least this fraction of the mask height tall (0: any run). ``cut_confidence``: with a
    confidence image (P(free) x 255, rounded), a blocked pixel cuts only when P(blocked) is
    more than this (0: ignore the confidence). Blocked runs below the cut that do not cut mark
    the cell under their bottom pixel occupied; with a confidence image and
    ``mark_confidence`` > 0 only where that pixel's P(blocked) is more than
    ``mark_confidence``: 0.5 leaves out the pixels whose two logits tie (P exactly 0.5, which
    the class mask calls blocked; frequent with INT8 models).

    Two more fields take free cells away, never add any. ``free_confidence``: with a
    confidence image, a floor pixel below the cut makes its cells free only where P(free) is
    more than this (0: any floor pixel); the others leave their cells unknown (they do not cut
    either: they are not blocked). ``behind_confidence``: the same for the floor pixels
    *behind* a blocked pixel that does not cut, above the column's lowest blocked pixel (0:
    off; 1: the cells behind stay unknown, the free cells of the plain rule, also without a
    confidence image); its run still marks a cell or not as above.
    ``GridRule(0.0, 0.0, free_confidence=0.0)`` is the plain rule (:data:`PLAIN_RULE`);
    ``free_confidence=0.0, behind_confidence=0.0`` is the rule of issue #22; the defaults are
    the node's (chosen in docs/ground_outputs.md).
    """

    min_run: float = 0.10
    cut_confidence: float = 0.97
    mark_confidence: float = 0.5
    free_confidence: float = 0.6
    behind_confidence: float = 0.97

    def __post_init__(self):
        for name in ('min_run', 'cut_confidence', 'mark_confidence', 'free_confidence',
                     'behind_confidence'):
            value = getattr(self, name)
            if not isinstance(value, (int, float, np.integer, np.floating)) or \
                    isinstance(value, bool) or not 0.0 <= value <= 1.0:
                raise ValueError(f'GridRule.{name} must be in [0, 1], got {value!r}')

    @property
    def plain(self):
        """Whether this is the plain rule: every blocked pixel cuts, every floor pixel frees."""
        return self.min_run <= 0.0 and self.cut_confidence <= 0.0 and \
            self.free_confidence <= 0.0

    @property
    def needs_confidence(self):
        """Whether the rule reads the confidence image (else the pipeline need not make it)."""
        return not self.plain and (self.cut_confidence > 0.0 or self.mark_confidence > 0.0 or
                                   self.free_confidence > 0.0 or self.behind_confidence > 0.0)

    def run_rows(self, mask_rows):
        """Return the run length in mask rows, made odd (1: any run)."""
        return max(1, int(round(self.min_run * mask_rows))) | 1

    def confidence_limit(self, p_blocked=None):
        """Return the largest P(free) x 255 of a pixel with P(blocked) > ``p_blocked``."""
        p = self.cut_confidence if p_blocked is None else p_blocked
        return int(math.ceil(255.0 * (1.0 - p) - 1e-9)) - 1

    def free_limit(self, p_free=None):
        """Return the largest P(free) x 255 of a pixel with P(free) not more than ``p_free``."""
        p = self.free_confidence if p_free is None else p_free
        return int(math.floor(255.0 * p + 1e-9))


#: the plain rule: the lowest blocked pixel of a column cuts it, every floor pixel below it is
#: free (behind_confidence, whatever its value, has nothing to act on: no blocked pixel is
#: left below a cut)
PLAIN_RULE = GridRule(0.0, 0.0, free_confidence=0.0)
