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
Project a free-floor mask onto the ground plane (inverse perspective mapping), ROS-free.

The :class:`GroundProjector` turns a per-pixel free/blocked mask into a top-down occupancy
grid in the robot's base frame (REP 103/105: x forward, y left, z up, origin on the floor),
assuming a flat floor at z = 0. Everything expensive (undistortion, ray/plane intersection,
cell lookup) happens once in a lookup table; :meth:`GroundProjector.project` only reads the
mask and scatters into the grid.

Cell values follow nav_msgs/OccupancyGrid: ``0`` free, ``100`` occupied, ``-1`` unknown.

What the grid says, per image column (scanning the mask from the bottom row upwards):

* The pixels below the lowest non-floor pixel of the column are the column's *floor run*.
  Every cell that the floor ray of a floor-run pixel hits is free. Far away a pixel row spans
  more than a cell of floor, so such pixels also mark the cells between their centre and the
  next one along the column; only between two floor-run centres, so the free space of a
  column stops at the last floor pixel centre, never past the floor/obstacle boundary.
* The lowest non-floor pixel is where the obstacle stands on the floor: the cell that its ray
  hits on z = 0 (the obstacle's foot point) is occupied. Occupied wins over free in a cell.
* Everything above the lowest non-floor pixel is ignored, even pixels labelled floor, so the
  cells behind an obstacle stay unknown. A mask cannot tell the floor seen over a low obstacle
  from floor-like surfaces that are not on the floor (table, bed and box tops, a shelf board);
  such pixels project far behind the obstacle under the flat-floor assumption and would open
  phantom free space exactly where the robot cannot see. Unknown is the safe answer there,
  and it matches how Nav2's obstacle layer clears: along the ray from the sensor up to the
  first obstacle point.
* Pixels whose ray is at or above the horizon, hits the floor beyond ``max_range`` (measured
  on the floor from the point below the camera's optical centre), or lands outside the grid
  never touch the grid; cells nobody sees stay unknown.

Image columns are vertical planes only for a camera that is not pitched or rolled. With the
usual downward pitch, a world-vertical edge is slanted in the image (it points to the nadir
below the image), so a column can meet an obstacle's side edge above the floor. Two
consequences, both handled on the safe side:

* That column's lowest non-floor pixel is not a floor contact; its ray reaches the floor
  behind the obstacle, at the bearing of the edge. Such feet are dropped when another foot
  within one column spacing of their bearing is nearer (by more than half a cell + 2 %);
  otherwise they would put phantom obstacles up to a metre behind table legs.
* Floor seen beside a near obstacle, higher up in a column that the obstacle crosses lower
  down, stays unknown. This costs a few cells beside close obstacles at the image sides.

Under strong roll "below" in the image is no longer "nearer on the floor" and the rule is
only approximate.

**A mask with speckle** (:class:`GridRule`, :meth:`GroundProjector.ground`). The rule above
lets one false-blocked pixel near the bottom of a column throw away everything above it. The
grid rule that the node runs by default cuts a column only at a *cutting* blocked pixel: one
that is part of a vertical run of blocked pixels at least ``min_run`` of the mask height tall
(a vertical opening of the blocked pixels) and, when a per-pixel confidence is given, whose
probability of being blocked is more than ``cut_confidence``. Every other blocked pixel below
the cut (speckle, a cable, a low thing on the floor) does not cut the column, but the cell
under the bottom pixel of each such run is still marked occupied (unless its P(blocked) is
not more than ``mark_confidence``), so a thin real obstacle
stays in the grid (and in the obstacle points and the scan, which come from the same cells).
``GridRule(0, 0)`` is the plain rule above. docs/ground_outputs.md has the measurements the
defaults come from.

The mask may come at another resolution than the camera (e.g. the network's input size): it
must then be a plain resize of the whole camera image (no crop or letterbox), and the camera
intrinsics are rescaled with :meth:`CameraIntrinsics.scaled`.
"""

from dataclasses import dataclass
import math

import cv2
from freespace_seg.ground.camera_info import intrinsics_from_camera_info_msg
from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount, pixel_rays_in_base
import numpy as np

FREE = 0
OCCUPIED = 100
UNKNOWN = -1

# RGB colours of render_grid.
FREE_RGB = (90, 200, 110)
OCCUPIED_RGB = (220, 40, 40)
UNKNOWN_RGB = (70, 70, 70)
FOOTPRINT_RGB = (80, 170, 255)

# cv2.reduce and friends are slow here; a weight image per band of <= 255 rows lets one
# uint8 bitwise_and + max find the lowest blocked row of every column.
_CHUNK_ROWS = 255
# Most samples along a column per pixel with a large floor footprint.
_MAX_SUBSAMPLES = 8
# A column's foot hidden behind a nearer foot by more than this is not a floor contact.
_FOOT_TOL_CELLS = 0.5
_FOOT_TOL_REL = 0.02


@dataclass(frozen=True)
class GridSpec:
    """
    A ground grid in the base frame, laid out like nav_msgs/OccupancyGrid.

    All lengths in metres. ``origin`` is the base-frame (x, y) of the outer corner of cell
    (0, 0) (OccupancyGrid ``info.origin``, no rotation). Rows run along +y, columns along +x,
    and the flat index of (row, col) is ``col + row * nx`` (row-major, as
    OccupancyGrid.data). ``width`` (along x) and ``height`` (along y) are rounded to whole
    cells. ``max_range`` limits how far from the camera floor points are used.
    """

    resolution: float = 0.05
    width: float = 4.0
    height: float = 4.0
    origin: tuple = (0.0, -2.0)
    max_range: float = 3.0

    def __post_init__(self):
        for name in ('resolution', 'width', 'height', 'max_range'):
            value = getattr(self, name)
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
        for name, size in (('width', self.width), ('height', self.height)):
            if round(size / self.resolution) < 1:
                raise ValueError(f'GridSpec.{name} ({size} m) is smaller than one cell of '
                                 f'{self.resolution} m')

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
            col = np.floor((x - self.origin[0]) / self.resolution)
            row = np.floor((y - self.origin[1]) / self.resolution)
            inside = (col >= 0) & (col < self.nx) & (row >= 0) & (row < self.ny)
        return (np.where(inside, row, -1).astype(np.intp),
                np.where(inside, col, -1).astype(np.intp))

    def flat_index(self, x, y):
        """Return the flat cell index (col + row * nx) of base-frame points, -1 outside."""
        row, col = self.cell_of(x, y)
        return np.where(row >= 0, col + row * self.nx, -1)

    def cell_centers(self):
        """Return (x, y) float64 arrays of shape (ny, nx) with the cell centres."""
        xs = self.origin[0] + (np.arange(self.nx) + 0.5) * self.resolution
        ys = self.origin[1] + (np.arange(self.ny) + 0.5) * self.resolution
        return np.meshgrid(xs, ys)


class _Pose:
    """Rigid pose of the optical frame in the base frame, duck-typed like CameraMount."""

    def __init__(self, rotation, position):
        self._rotation = np.array(rotation, dtype=np.float64)
        self.position = np.array(position, dtype=np.float64)

    def rotation_base_from_optical(self):
        """3x3 rotation taking optical-frame vectors to the base frame."""
        return self._rotation.copy()

    def same_as(self, other):
        """Whether the two poses are exactly the same."""
        return np.array_equal(self._rotation, other._rotation) and \
            np.array_equal(self.position, other.position)


def as_pose(mount_or_transform):
    """
    Return a camera pose usable with :func:`pixel_rays_in_base`.

    Accepts a CameraMount (or anything with ``rotation_base_from_optical()`` and
    ``position``) or a 4x4 homogeneous base_from_optical transform: the pose of the optical
    frame in base_link, as TF's lookup_transform('base_link', optical_frame) gives it.
    """
    if hasattr(mount_or_transform, 'rotation_base_from_optical'):
        rot = np.asarray(mount_or_transform.rotation_base_from_optical(), dtype=np.float64)
        pos = np.asarray(mount_or_transform.position, dtype=np.float64).reshape(-1)
    else:
        t = np.asarray(mount_or_transform, dtype=np.float64)
        if t.shape != (4, 4):
            raise ValueError(f'expected a CameraMount or a 4x4 transform, got shape {t.shape}')
        if not np.allclose(t[3], (0.0, 0.0, 0.0, 1.0)):
            raise ValueError("the transform's last row must be (0, 0, 0, 1)")
        rot, pos = t[:3, :3], t[:3, 3]
    if rot.shape != (3, 3) or pos.shape != (3,) or not np.all(np.isfinite(rot)) or \
            not np.all(np.isfinite(pos)):
        raise ValueError('the camera pose must be a finite 3x3 rotation and 3-vector')
    if not np.allclose(rot.T @ rot, np.eye(3), atol=1e-6) or np.linalg.det(rot) < 0:
        raise ValueError("the camera pose's rotation is not a proper rotation matrix")
    if pos[2] <= 0.0:
        raise ValueError(f'the camera must be above the floor (z > 0), got z = {pos[2]}')
    return _Pose(rot, pos)


@dataclass(frozen=True)
class GridRule:
    """
    Which blocked pixels cut their column (see the module docstring).

    ``min_run``: a blocked pixel cuts only when it lies in a vertical run of blocked pixels at
    least this fraction of the mask height tall (0: any run). ``cut_confidence``: with a
    confidence image (P(free) x 255, rounded), a blocked pixel cuts only when P(blocked) is
    more than this (0: ignore the confidence). Blocked runs below the cut that do not cut mark
    the cell under their bottom pixel occupied; with a confidence image and
    ``mark_confidence`` > 0 only where that pixel's P(blocked) is more than
    ``mark_confidence``: 0.5 leaves out the pixels whose two logits tie (P exactly 0.5, which
    the class mask calls blocked; frequent with INT8 models). ``GridRule(0.0, 0.0)`` is the
    plain rule; the defaults are the node's (chosen in docs/ground_outputs.md).
    """

    min_run: float = 0.10
    cut_confidence: float = 0.97
    mark_confidence: float = 0.5

    def __post_init__(self):
        for name in ('min_run', 'cut_confidence', 'mark_confidence'):
            value = getattr(self, name)
            if not isinstance(value, (int, float, np.integer, np.floating)) or \
                    not 0.0 <= value <= 1.0:
                raise ValueError(f'GridRule.{name} must be in [0, 1], got {value!r}')

    @property
    def plain(self):
        """Whether this is the plain rule: every blocked pixel cuts its column."""
        return self.min_run <= 0.0 and self.cut_confidence <= 0.0

    def run_rows(self, mask_rows):
        """Return the run length in mask rows, made odd (1: any run)."""
        return max(1, int(round(self.min_run * mask_rows))) | 1

    def confidence_limit(self, p_blocked=None):
        """Return the largest P(free) x 255 of a pixel with P(blocked) > ``p_blocked``."""
        p = self.cut_confidence if p_blocked is None else p_blocked
        return int(math.ceil(255.0 * (1.0 - p) - 1e-9)) - 1


#: the plain rule: the lowest blocked pixel of a column cuts it
PLAIN_RULE = GridRule(0.0, 0.0)


@dataclass
class Ground:
    """
    What one mask gives on the ground under one :class:`GridRule`.

    ``grid``: int8 (ny, nx), 0 free / 100 occupied / -1 unknown. ``points``: (N, 3) float32
    obstacle points (one per occupied cell, the mean of the floor points of its marking
    pixels), ``point_cells``: their flat cell indices (sorted, the occupied cells of
    ``grid``). ``rows``/``cols``: mask pixels (full mask rows) that mark cells occupied.
    """

    grid: np.ndarray
    points: np.ndarray
    point_cells: np.ndarray
    rows: np.ndarray
    cols: np.ndarray


class GroundProjector:
    """
    Map free-floor masks to OccupancyGrid cells with a per-pixel lookup table.

    ``intrinsics`` is the camera's :class:`CameraIntrinsics`; ``mount_or_transform`` is a
    :class:`CameraMount` or a 4x4 base_from_optical transform; ``grid_spec`` a
    :class:`GridSpec` (default: the default GridSpec). ``mask_shape`` (rows, cols) is the
    shape of the masks to come when they differ from the camera resolution; a mask of another
    shape passed to :meth:`project` rebuilds the table for that shape.

    The table is built once and only rebuilt when the intrinsics, the pose, the grid or the
    mask shape really change; ``rebuild_count`` counts the builds (1 after construction).
    """

    def __init__(self, intrinsics, mount_or_transform, grid_spec=None, mask_shape=None):
        if not isinstance(intrinsics, CameraIntrinsics):
            raise TypeError('intrinsics must be a CameraIntrinsics')
        self._intrinsics = intrinsics
        self._pose = as_pose(mount_or_transform)
        self._grid = grid_spec if grid_spec is not None else GridSpec()
        if not isinstance(self._grid, GridSpec):
            raise TypeError('grid_spec must be a GridSpec')
        # Without a mask shape the masks follow the camera resolution, also after an update.
        self._mask_shape = self._checked_shape(mask_shape)
        self._follow_camera = self._mask_shape is None
        self.rebuild_count = 0
        self._build()

    # -- configuration -------------------------------------------------------------------

    @property
    def intrinsics(self):
        """Return the camera intrinsics given (at camera resolution)."""
        return self._intrinsics

    @property
    def mask_intrinsics(self):
        """Return the intrinsics at the mask resolution, as used by the lookup table."""
        return self._mask_intr

    @property
    def pose(self):
        """Return the camera pose, with ``rotation_base_from_optical()`` and ``position``."""
        return self._pose

    @property
    def grid_spec(self):
        """Return the GridSpec of the output grids."""
        return self._grid

    @property
    def mask_shape(self):
        """(rows, cols) of the masks the table is built for."""
        return self._mask_shape

    @property
    def lut(self):
        """
        (rows, cols) int32 flat cell index of every mask pixel's floor point, -1 if none.

        -1 means: ray at or above the horizon, floor point beyond ``max_range`` or outside
        the grid. A read-only view.
        """
        view = self._lut.view()
        view.flags.writeable = False
        return view

    @property
    def samples(self):
        """
        Return every (row, col, cell) sample of the table, as three int arrays.

        A pixel centre lands in one cell (as :attr:`lut`); where a pixel's floor footprint
        spans more than half a cell, extra samples along its column land in more. A sample
        counts as free floor when the pixel of its row and all pixels below it in its column
        are floor; for an extra sample the row is that of the pixel centre just above it
        (the floor of its v).
        """
        return tuple(a.copy() for a in self._samples)

    @property
    def table_size(self):
        """Return the number of (column, cell) entries that :meth:`project` reads per frame."""
        return int(self._rep_row.size)

    def update(self, intrinsics=None, mount=None, grid_spec=None, mask_shape=None):
        """
        Change any of the inputs; rebuild the table only if one really changed.

        ``mount`` is a CameraMount or a 4x4 transform, as in the constructor. Returns whether
        the table was rebuilt. Cheap to call for every CameraInfo or TF update.
        """
        changed = False
        if intrinsics is not None and intrinsics != self._intrinsics:
            if not isinstance(intrinsics, CameraIntrinsics):
                raise TypeError('intrinsics must be a CameraIntrinsics')
            self._intrinsics = intrinsics
            changed = True
        if mount is not None:
            pose = as_pose(mount)
            if not pose.same_as(self._pose):
                self._pose = pose
                changed = True
        if grid_spec is not None and grid_spec != self._grid:
            if not isinstance(grid_spec, GridSpec):
                raise TypeError('grid_spec must be a GridSpec')
            self._grid = grid_spec
            changed = True
        if mask_shape is not None:
            shape = self._checked_shape(mask_shape)
            self._follow_camera = False
            if shape != self._mask_shape:
                self._mask_shape = shape
                changed = True
        elif self._follow_camera and self._mask_shape != (self._intrinsics.height,
                                                          self._intrinsics.width):
            self._mask_shape = (self._intrinsics.height, self._intrinsics.width)
            changed = True
        if changed:
            self._build()
        return changed

    @staticmethod
    def _checked_shape(mask_shape):
        if mask_shape is None:
            return None
        shape = tuple(int(s) for s in mask_shape)
        if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
            raise ValueError(f'mask_shape must be (rows, cols), got {mask_shape!r}')
        return shape

    # -- lookup table --------------------------------------------------------------------

    def _ground_hits(self, intr, u=None, v=None):
        """Floor points (x, y) of pixel rays and whether the ray hits the floor at all."""
        rays = pixel_rays_in_base(intr, self._pose, u, v)
        pos = self._pose.position
        dz = rays[..., 2]
        # Rays that are level or rising never reach the floor; nearly level ones land beyond
        # any sane max_range and are cut by the range test.
        hits = dz < -1e-12
        with np.errstate(divide='ignore', invalid='ignore'):
            s = np.where(hits, -pos[2] / np.where(hits, dz, -1.0), np.nan)
        return pos[0] + s * rays[..., 0], pos[1] + s * rays[..., 1], hits

    def _cells_of(self, gx, gy, hits):
        """Flat cell index of floor points, -1 beyond max_range, outside the grid or no hit."""
        pos = self._pose.position
        with np.errstate(invalid='ignore'):
            ok = hits & (np.hypot(gx - pos[0], gy - pos[1]) <= self._grid.max_range)
        return self._grid.flat_index(np.where(ok, gx, np.nan), np.where(ok, gy, np.nan))

    def _footprint_samples(self, intr, gx, gy, hits):
        """
        Extra samples along the columns where a pixel spans more than half a cell of floor.

        Far away one pixel row covers several centimetres of floor (at 3 m a 640x360 camera's
        row spans ~8 cm), so pixel centres alone would leave holes in the grid there. Such
        pixels get up to _MAX_SUBSAMPLES samples along their column (at the column centre), at
        most half a cell apart on the floor. Across columns the pixel centres are dense enough
        (at 3 m even a 320 px wide, 90 degree mask has columns 2 cm apart) and a sample between
        two columns could not be checked against both. Returns (rows, cols, cells) of the
        samples that map, where a sample's row is the image row just above it (see
        :attr:`samples`).
        """
        with np.errstate(invalid='ignore'):
            step = np.hypot(np.diff(gx, axis=0), np.diff(gy, axis=0))
            nan_row = np.full((1, gx.shape[1]), np.nan)
            extent = np.fmax(np.vstack([nan_row, step]), np.vstack([step, nan_row]))
            count = np.ceil(extent / (0.5 * self._grid.resolution))
            count = np.clip(np.nan_to_num(count, nan=1.0), 1, _MAX_SUBSAMPLES).astype(np.intp)
            pos = self._pose.position
            near = np.hypot(gx - pos[0], gy - pos[1]) <= self._grid.max_range + extent
        todo = hits & near & (count > 1)
        out_r, out_c, out_cell = [], [], []
        rr, cc = np.nonzero(todo)
        counts = count[rr, cc]
        for n in np.unique(counts):
            sel = counts == n
            r, c = rr[sel], cc[sel]
            offsets = (np.arange(n) + 0.5) / n - 0.5
            v = (r[:, None] + offsets[None, :]).ravel()
            u = np.repeat(c, n).astype(np.float64)
            cells = self._cells_of(*self._ground_hits(intr, u, v))
            # A sample between the centres of rows k and k + 1 is only known to be floor when
            # both pixels are: it counts when row k = floor(v) is in the floor run. This keeps
            # the free space of a column from reaching past the floor/obstacle boundary.
            row = np.floor(v).astype(np.intp)
            keep = (cells >= 0) & (row >= 0)
            out_r.append(row[keep])
            out_c.append(np.repeat(c, n)[keep])
            out_cell.append(cells[keep])
        if not out_r:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty, empty
        return (np.concatenate(out_r), np.concatenate(out_c),
                np.concatenate(out_cell).astype(np.intp))

    def _build_bearings(self, intr, gx, gy):
        """Bearing, floor distance and column spacing (bearing) of every band pixel."""
        pos = self._pose.position
        with np.errstate(invalid='ignore'):
            bearing = np.arctan2(gy - pos[1], gx - pos[0])
            dist = np.hypot(gx - pos[0], gy - pos[1])
            step = np.abs(np.angle(np.exp(1j * np.diff(bearing, axis=1))))
        if step.shape[1]:
            spacing = np.fmax(np.hstack([step, step[:, -1:]]), np.hstack([step[:, :1], step]))
        else:
            spacing = np.zeros_like(bearing)
        self._bearing = bearing.astype(np.float32)
        self._dist = dist.astype(np.float32)
        self._spacing = np.nan_to_num(spacing, nan=0.0).astype(np.float32)
        self._n_bins = int(math.ceil(2.0 * math.pi * 2.0 * max(intr.fx, intr.fy)))
        self._bin_width = 2.0 * math.pi / self._n_bins

    def _build(self):
        intr = self._intrinsics
        if self._mask_shape is None:
            self._mask_shape = (intr.height, intr.width)
        rows, cols = self._mask_shape
        if (rows, cols) != (intr.height, intr.width):
            intr = intr.scaled(cols, rows)
        self._mask_intr = intr
        grid = self._grid

        gx, gy, hits = self._ground_hits(intr)
        lut = self._cells_of(gx, gy, hits).astype(np.int32)
        self._lut = lut

        # Every (pixel, cell) sample: pixel centres, plus column samples of big footprints.
        r, c = np.nonzero(lut >= 0)
        sr, sc, scell = self._footprint_samples(intr, gx, gy, hits)
        r, c = np.concatenate([r, sr]), np.concatenate([c, sc])
        cell = np.concatenate([lut[lut >= 0].astype(np.intp), scell])
        self._samples = (r, c, cell)

        self._row0 = int(r.min()) if r.size else rows
        self._band_lut = lut[self._row0:]
        self._band_xy = np.stack([gx[self._row0:], gy[self._row0:]], axis=-1).astype(np.float32)
        self._build_bearings(intr, gx[self._row0:], gy[self._row0:])

        # For free space only the lowest sample row of every (column, cell) pair matters: the
        # cell is seen free from that column exactly when that row lies in the column's floor
        # run (everything below the lowest non-floor pixel).
        key = c.astype(np.int64) * grid.size + cell
        order = np.lexsort((-r, key))
        key = key[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        keep = order[first]
        self._rep_row = (r[keep] - self._row0).astype(np.int16)
        self._rep_col = c[keep].astype(np.intp)
        self._rep_cell = cell[keep].astype(np.intp)

        band_rows = rows - self._row0
        self._weights = []
        for start in range(0, band_rows, _CHUNK_ROWS):
            stop = min(band_rows, start + _CHUNK_ROWS)
            w = np.arange(1, stop - start + 1, dtype=np.uint8)[:, None]
            self._weights.append((start, stop, np.ascontiguousarray(
                np.broadcast_to(w, (stop - start, cols)))))
        self.rebuild_count += 1

    # -- per frame -----------------------------------------------------------------------

    def _lowest_blocked(self, free_mask):
        """Band row of the lowest non-floor pixel of every column (int16, -1 if none)."""
        mask = np.asarray(free_mask)
        if mask.ndim != 2:
            raise ValueError(f'free_mask must be 2-D (rows, cols), got shape {mask.shape}')
        if mask.shape != self._mask_shape:
            self.update(mask_shape=mask.shape)
        band = mask[self._row0:]
        if band.dtype == np.bool_:
            band = band.view(np.uint8)
        elif band.dtype != np.uint8:
            band = (band != 0).view(np.uint8)
        return self._lowest_blocked_band(np.ascontiguousarray(band))

    def _lowest_blocked_band(self, band):
        """:meth:`_lowest_blocked` of a contiguous uint8 band (rows from ``_row0``)."""
        lowest = np.full(band.shape[1], -1, dtype=np.int16)
        if band.shape[0] == 0:
            return lowest
        blocked = cv2.compare(band, 0, cv2.CMP_EQ)
        for start, stop, weights in self._weights:
            # Later (lower) chunks overwrite earlier ones: the lowest blocked row wins.
            best = np.bitwise_and(blocked[start:stop], weights).max(axis=0)
            hit = best > 0
            lowest[hit] = best[hit].astype(np.int16) + (start - 1)
        return lowest

    def _feet(self, lowest):
        """
        Rows, columns and cells of the obstacle feet: the columns' lowest non-floor pixels.

        A pitched camera's columns are not vertical planes, so a column that grazes the
        vertical edge of an obstacle meets it above the floor and its "foot" lands behind the
        obstacle, at the edge's bearing. Such feet are dropped: a foot is kept only when no
        other foot within one column spacing of its bearing is nearer by more than half a cell
        plus 2 % of the distance. Feet whose ray misses the floor (at or above the horizon)
        or whose cell is out of range or outside the grid are not marked either.
        """
        cols = np.nonzero(lowest >= 0)[0]
        rows = lowest[cols].astype(np.intp)
        dist = self._dist[rows, cols]
        hit = np.isfinite(dist)
        rows, cols, dist = rows[hit], cols[hit], dist[hit].astype(np.float64)
        if cols.size > 1:
            bearing = self._bearing[rows, cols].astype(np.float64) + math.pi
            spacing = self._spacing[rows, cols].astype(np.float64)
            width, n_bins = self._bin_width, self._n_bins
            first = np.floor((bearing - spacing) / width).astype(np.intp)
            count = np.minimum(np.floor((bearing + spacing) / width).astype(np.intp) - first + 1,
                               n_bins)
            offsets = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
            bins = (np.repeat(first, count) + offsets) % n_bins
            nearest = np.full(n_bins, np.inf)
            np.minimum.at(nearest, bins, np.repeat(dist, count))
            own = np.floor(bearing / width).astype(np.intp) % n_bins
            tol = _FOOT_TOL_CELLS * self._grid.resolution + _FOOT_TOL_REL * dist
            keep = dist <= nearest[own] + tol
            rows, cols = rows[keep], cols[keep]
        cells = self._band_lut[rows, cols]
        seen = cells >= 0
        return rows[seen], cols[seen], cells[seen].astype(np.intp)

    def _grid_from(self, lowest, foot_cells):
        flat = np.full(self._grid.size, UNKNOWN, dtype=np.int8)
        counted = self._rep_row > lowest[self._rep_col]
        flat[self._rep_cell[counted]] = FREE
        flat[foot_cells] = OCCUPIED
        return flat.reshape(self._grid.shape)

    def _points_from(self, rows, cols, cells):
        if cells.size == 0:
            return np.zeros((0, 3), dtype=np.float32)
        xy = self._band_xy[rows, cols].astype(np.float64)
        uniq, inverse, counts = np.unique(cells, return_inverse=True, return_counts=True)
        out = np.zeros((uniq.size, 3), dtype=np.float32)
        out[:, 0] = np.bincount(inverse, weights=xy[:, 0]) / counts
        out[:, 1] = np.bincount(inverse, weights=xy[:, 1]) / counts
        return out

    def project(self, free_mask):
        """Project a mask (nonzero = floor) to an int8 (ny, nx) grid of 0 / 100 / -1."""
        lowest = self._lowest_blocked(free_mask)
        return self._grid_from(lowest, self._feet(lowest)[2])

    def obstacle_points(self, free_mask):
        """
        Obstacle foot points on the floor, (N, 3) float32 in the base frame, z = 0.

        One point per occupied cell: the mean of the foot points of the image columns whose
        lowest non-floor pixel lands in that cell (ready for a PointCloud2 marking source of
        Nav2's obstacle layer).
        """
        lowest = self._lowest_blocked(free_mask)
        return self._points_from(*self._feet(lowest))

    def foot_pixels(self, free_mask):
        """
        Return (rows, cols) of the mask pixels whose floor points are marked occupied.

        Each is the lowest non-floor pixel of its column (see :meth:`_feet` for which are
        kept); handy to draw the floor contact line over the camera image.
        """
        rows, cols, _ = self._feet(self._lowest_blocked(free_mask))
        return rows + self._row0, cols

    def project_with_points(self, free_mask):
        """Return ``(project(mask), obstacle_points(mask))`` scanning the mask once."""
        lowest = self._lowest_blocked(free_mask)
        rows, cols, cells = self._feet(lowest)
        return self._grid_from(lowest, cells), self._points_from(rows, cols, cells)

    def _cut_free(self, free_mask, confidence, rule):
        """
        Band mask (uint8, nonzero = does not cut) under ``rule``, and the blocked band.

        Computed on the band plus ``run`` rows above it, so a run that reaches above the
        band keeps its length.
        """
        mask = np.asarray(free_mask)
        if mask.ndim != 2:
            raise ValueError(f'free_mask must be 2-D (rows, cols), got shape {mask.shape}')
        if mask.shape != self._mask_shape:
            self.update(mask_shape=mask.shape)
        run = rule.run_rows(mask.shape[0])
        top = max(0, self._row0 - run)
        part = mask[top:]
        if part.dtype == np.bool_:
            part = part.view(np.uint8)
        elif part.dtype != np.uint8:
            part = (part != 0).view(np.uint8)
        blocked = cv2.compare(np.ascontiguousarray(part), 0, cv2.CMP_EQ)
        cut = blocked
        if confidence is not None and rule.cut_confidence > 0.0:
            conf = np.asarray(confidence)
            if conf.shape != mask.shape or conf.dtype != np.uint8:
                raise ValueError(f'confidence must be uint8 of the mask shape {mask.shape}, '
                                 f'got {conf.dtype} {conf.shape}')
            sure = cv2.compare(np.ascontiguousarray(conf[top:]), rule.confidence_limit(),
                               cv2.CMP_LE)
            cut = cv2.bitwise_and(blocked, sure)
        if run > 1:
            # An odd kernel: OpenCV's opening with an even one shifts runs by a row. Runs that
            # touch the top or bottom of the image (or of the part above) keep going there.
            kernel = np.ones((run, 1), np.uint8)
            cut = cv2.morphologyEx(cut, cv2.MORPH_OPEN, kernel)
        skip = self._row0 - top
        return cv2.bitwise_not(cut[skip:]), blocked[skip:]

    def _run_bottoms(self, blocked, lowest):
        """Band rows and columns of the bottom pixels of the blocked runs below the cut."""
        if blocked.shape[0] == 0:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty
        bottoms = blocked.copy()
        cv2.bitwise_and(bottoms[:-1], cv2.bitwise_not(blocked[1:]), dst=bottoms[:-1])
        points = cv2.findNonZero(bottoms)
        if points is None:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty
        points = points.reshape(-1, 2)
        cols = points[:, 0].astype(np.intp)
        rows = points[:, 1].astype(np.intp)
        below = rows > lowest[cols]
        return rows[below], cols[below]

    def ground(self, free_mask, confidence=None, rule=PLAIN_RULE):
        """
        Return the :class:`Ground` outputs (grid, obstacle points) of a mask under ``rule``.

        ``confidence``: uint8 P(free) x 255 of the mask's pixels, or None (then only
        ``rule.min_run`` applies). With :data:`PLAIN_RULE` this is :meth:`project_with_points`.
        """
        if rule.plain:
            lowest = self._lowest_blocked(free_mask)
            rows, cols, cells = self._feet(lowest)
        else:
            cut_free, blocked = self._cut_free(free_mask, confidence, rule)
            lowest = self._lowest_blocked_band(cut_free)
            rows, cols, cells = self._feet(lowest)
            br, bc = self._run_bottoms(blocked, lowest)
            if confidence is not None and rule.mark_confidence > 0.0 and br.size:
                sure = confidence[br + self._row0, bc] <= rule.confidence_limit(
                    rule.mark_confidence)
                br, bc = br[sure], bc[sure]
            bcells = self._band_lut[br, bc]
            seen = bcells >= 0
            rows = np.concatenate([rows, br[seen]])
            cols = np.concatenate([cols, bc[seen]])
            cells = np.concatenate([cells, bcells[seen].astype(np.intp)])
        grid = self._grid_from(lowest, cells)
        points, point_cells = self._points_and_cells(rows, cols, cells)
        return Ground(grid, points, point_cells, rows + self._row0, cols)

    def _points_and_cells(self, rows, cols, cells):
        if cells.size == 0:
            return np.zeros((0, 3), dtype=np.float32), np.zeros(0, dtype=np.intp)
        return self._points_from(rows, cols, cells), np.unique(cells)

    # -- helpers -------------------------------------------------------------------------

    def pixel_to_ground(self, u, v):
        """
        Floor points (x, y) of mask pixel coordinates (float, any shape); NaN above the horizon.

        The same computation the lookup table uses, without range or grid limits.
        """
        u = np.asarray(u, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        gx, gy, _ = self._ground_hits(self._mask_intr, u, v)
        return gx, gy

    def render_grid(self, grid, footprint_radius=0.17, scale=4):
        """:func:`render_grid` with this projector's GridSpec."""
        return render_grid(grid, footprint_radius, scale, grid_spec=self._grid)


def render_grid(grid, footprint_radius=0.17, scale=4, grid_spec=None):
    """
    Draw a grid as an (H, W, 3) uint8 RGB top-down image for rqt_image_view.

    Orientation: as seen from above with the robot heading up. Base +x (forward) points UP in
    the image and base +y (left) points LEFT, so image rows run along -x and image columns
    along -y; the image is ``scale * nx`` rows by ``scale * ny`` columns. Colours: free
    (0 .. 49) green, occupied (>= 50) red, unknown (< 0) dark grey. The robot footprint is a
    circle of ``footprint_radius`` metres around the base origin with a tick towards +x
    (skipped when the origin is far off the image). ``grid_spec`` gives resolution and origin
    (default: the default GridSpec, whose shape must match).
    """
    spec = grid_spec if grid_spec is not None else GridSpec()
    grid = np.asarray(grid)
    if grid.ndim == 1 and grid.size == spec.size:
        grid = grid.reshape(spec.shape)
    if grid.shape != spec.shape:
        raise ValueError(f'grid shape {grid.shape} does not match GridSpec {spec.shape}')
    scale = int(scale)
    if scale < 1:
        raise ValueError(f'scale must be >= 1, got {scale}')
    palette = np.array([UNKNOWN_RGB, FREE_RGB, OCCUPIED_RGB], dtype=np.uint8)
    klass = np.where(grid < 0, 0, np.where(grid >= 50, 2, 1))
    top_down = klass.T[::-1, ::-1]
    image = palette[np.repeat(np.repeat(top_down, scale, axis=0), scale, axis=1)]
    image = np.ascontiguousarray(image)

    # Continuous image coordinates (pixel centres at integers) of the base origin.
    gx = (0.0 - spec.origin[0]) / spec.resolution
    gy = (0.0 - spec.origin[1]) / spec.resolution
    row = (spec.nx - gx) * scale - 0.5
    col = (spec.ny - gy) * scale - 0.5
    radius = footprint_radius / spec.resolution * scale
    h, w = image.shape[:2]
    if footprint_radius > 0 and -radius < row < h + radius and -radius < col < w + radius:
        shift = 4
        f = 1 << shift
        centre = (int(round(col * f)), int(round(row * f)))
        thickness = max(1, scale // 2)
        cv2.circle(image, centre, int(round(radius * f)), FOOTPRINT_RGB, thickness,
                   cv2.LINE_AA, shift)
        tip = (centre[0], int(round((row - radius) * f)))
        cv2.line(image, centre, tip, FOOTPRINT_RGB, thickness, cv2.LINE_AA, shift)
    return image


def grid_iou(pred_grid, true_free, valid=None):
    """
    Return the intersection over union of the free cells of two grids, within ``valid``.

    That is ``|pred free & true free| / |pred free or true free|``. ``pred_grid`` is an
    OccupancyGrid-like array (free = 0); ``true_free`` and ``valid`` are boolean arrays of the
    same shape (``valid`` defaults to everywhere). Returns 1.0 when neither has a free cell.
    """
    pred = np.asarray(pred_grid) == FREE
    truth = np.asarray(true_free, dtype=bool)
    if pred.shape != truth.shape:
        raise ValueError(f'grid shapes differ: {pred.shape} vs {truth.shape}')
    if valid is not None:
        valid = np.asarray(valid, dtype=bool)
        if valid.shape != pred.shape:
            raise ValueError(f'valid has shape {valid.shape}, expected {pred.shape}')
        pred = pred & valid
        truth = truth & valid
    union = np.count_nonzero(pred | truth)
    if union == 0:
        return 1.0
    return np.count_nonzero(pred & truth) / union


def mount_and_grid(p):
    """Build the CameraMount and GridSpec described by a parameter dict (node parameters)."""
    mount = CameraMount(x=p['camera_x'], y=p['camera_y'], z=p['camera_height'],
                        roll=p['camera_roll'], pitch=p['camera_pitch'], yaw=p['camera_yaw'])
    grid = GridSpec(resolution=p['grid_resolution'], width=p['grid_width'],
                    height=p['grid_height'], origin=tuple(p['grid_origin']),
                    max_range=p['max_range'])
    return mount, grid


def projector_for_camera_info(projector, info, shape, mount, grid_spec):
    """
    Return a :class:`GroundProjector` for a mask of ``shape`` (H, W) seen by ``info``.

    ``info`` is a CameraInfo message (any object with its fields); when its size differs from
    the mask's (a resized stream of the same camera) the intrinsics are scaled. ``projector``
    (or None) is updated in place and returned, so its lookup table is rebuilt only when the
    intrinsics, mount or grid change. What ``segmentation_node`` and ``bag`` both run.

    :raises ValueError: unusable CameraInfo.
    """
    intrinsics = intrinsics_from_camera_info_msg(info)
    if (intrinsics.height, intrinsics.width) != tuple(shape):
        intrinsics = intrinsics.scaled(shape[1], shape[0])
    if projector is None:
        return GroundProjector(intrinsics, mount, grid_spec)
    projector.update(intrinsics=intrinsics, mount=mount, grid_spec=grid_spec)
    return projector
