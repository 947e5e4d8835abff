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
cell lookup) happens once in a lookup table; :meth:`GroundProjector.ground` only reads the
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
Two more fields of the rule only take free cells away: ``free_confidence`` (a floor pixel
makes its cells free only where P(free) is more than this; the others leave them unknown and
do not cut) and ``behind_confidence`` (the same for the floor seen behind the column's lowest
blocked pixel when that does not cut; 1: none of it, the plain rule's free cells).
``GridRule(0, 0, free_confidence=0)`` (:data:`PLAIN_RULE`) is the plain rule above.
docs/ground_outputs.md has the measurements the defaults come from.

The mask may come at another resolution than the camera (e.g. the network's input size): it
must then be a plain resize of the whole camera image (no crop or letterbox), and the camera
intrinsics are rescaled with :meth:`CameraIntrinsics.scaled`.
"""

import math

import cv2
from freespace_seg.ground.geometry import as_pose, CameraIntrinsics, pixel_rays_in_base
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED, PLAIN_RULE, UNKNOWN
import numpy as np

# cv2.reduce and friends are slow here; a weight image per band of <= 255 rows lets one
# uint8 bitwise_and + max find the lowest blocked row of every column.
_CHUNK_ROWS = 255
# Most samples along a column per pixel with a large floor footprint.
_MAX_SUBSAMPLES = 8
# A column's foot hidden behind a nearer foot by more than this is not a floor contact.
_FOOT_TOL_CELLS = 0.5
_FOOT_TOL_REL = 0.02


class Ground:
    """
    What one mask gives on the ground under one :class:`GridRule`.

    ``grid``: int8 (ny, nx), 0 free / 100 occupied / -1 unknown. ``rows``/``cols``: the mask
    pixels (full mask rows) that mark cells occupied. ``points``: (N, 3) float32 obstacle
    points (one per occupied cell, the mean of the floor points of its marking pixels, z = 0),
    ``point_cells``: their flat cell indices (sorted, the occupied cells of ``grid``). The
    points are computed on first use, so a caller that wants the grid alone does not pay for
    them; they come from the lookup table of the mask's frame either way. ``occluders``: the
    obstacles that cut a column, with the height the mask shows of them (see the property;
    for :class:`~freespace_seg.ground.occlusion.OcclusionMemory`), also computed on first use.
    """

    def __init__(self, grid, rows, cols, marks, occluders=None):
        self.grid = grid
        self.rows = rows
        self.cols = cols
        # (floor points of the band, band rows, columns, cells) of the marking pixels.
        self._marks = marks
        self._points = self._point_cells = None
        # A function that returns the occluders (computed on first use), or the array.
        self._occluders = occluders

    @property
    def occluders(self):
        """
        Return (N, 3) float64 x, y, height of the obstacles that cut a column.

        One row per foot of a cutting column (the plain rule: every column's lowest blocked
        pixel): its floor point in the base frame and the height of its blocked run where the
        mask shows it, measured at the foot's distance from the top pixel of the run (``inf``:
        the run reaches the horizon or the image's top, at least as tall as the camera). A run
        that is a low box in front of a wall reads as tall; from another view, where the floor
        between them shows, it reads low.
        """
        if callable(self._occluders):
            self._occluders = self._occluders()
        if self._occluders is None:
            return np.zeros((0, 3))
        return self._occluders

    @property
    def points(self):
        """Return the (N, 3) float32 obstacle points, one per occupied cell."""
        if self._points is None:
            self._compute_points()
        return self._points

    @property
    def point_cells(self):
        """Return the sorted flat cell indices of :attr:`points`."""
        if self._point_cells is None:
            self._compute_points()
        return self._point_cells

    def _compute_points(self):
        band_xy, rows, cols, cells = self._marks
        if cells.size == 0:
            self._points = np.zeros((0, 3), dtype=np.float32)
            self._point_cells = np.zeros(0, dtype=np.intp)
            return
        xy = band_xy[rows, cols].astype(np.float64)
        uniq, inverse, counts = np.unique(cells, return_inverse=True, return_counts=True)
        out = np.zeros((uniq.size, 3), dtype=np.float32)
        out[:, 0] = np.bincount(inverse, weights=xy[:, 0]) / counts
        out[:, 1] = np.bincount(inverse, weights=xy[:, 1]) / counts
        self._points, self._point_cells = out, uniq


def _checked_grid(spec):
    """Return ``spec`` if the projector can fill it: axis-aligned, with a ``max_range``."""
    if not isinstance(spec, GridSpec):
        raise TypeError('grid_spec must be a GridSpec')
    if spec.origin_yaw != 0.0 or spec.max_range is None:
        raise ValueError('the projector fills grids along the base axes (origin_yaw 0) '
                         f'within a max_range; got {spec!r}')
    return spec


class GroundProjector:
    """
    Map free-floor masks to OccupancyGrid cells with a per-pixel lookup table.

    ``intrinsics`` is the camera's :class:`CameraIntrinsics`; ``mount_or_transform`` is a
    :class:`CameraMount` or a 4x4 base_from_optical transform; ``grid_spec`` a
    :class:`GridSpec` (default: the default GridSpec). ``mask_shape`` (rows, cols) is the
    shape of the masks to come when they differ from the camera resolution; a mask of another
    shape passed to :meth:`ground` rebuilds the table for that shape.

    The table is built once and only rebuilt when the intrinsics, the pose, the grid or the
    mask shape really change; ``rebuild_count`` counts the builds (1 after construction).
    """

    def __init__(self, intrinsics, mount_or_transform, grid_spec=None, mask_shape=None):
        if not isinstance(intrinsics, CameraIntrinsics):
            raise TypeError('intrinsics must be a CameraIntrinsics')
        self._intrinsics = intrinsics
        self._pose = as_pose(mount_or_transform)
        self._grid = _checked_grid(grid_spec if grid_spec is not None else GridSpec())
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
        """Return the number of (column, cell) entries that :meth:`ground` reads per frame."""
        return int(self._rep_row.size)

    @property
    def nearest_floor(self):
        """
        Return the distance (m) from the base origin to the nearest floor point in view.

        The floor point of a pixel centre, over every pixel of the mask, grid or not; inf
        when no pixel sees the floor. Nothing that stands nearer, off the edge of the
        image, is ever in view: a forward camera sees the floor from this far on.
        """
        return self._nearest_floor

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
            self._grid = _checked_grid(grid_spec)
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
        self._nearest_floor = float(np.hypot(gx[hits], gy[hits]).min()) if hits.any() \
            else math.inf
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
        # Flat index of each entry's pixel in the band, to read its confidence.
        self._rep_pixel = self._rep_row.astype(np.intp) * cols + self._rep_col

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

    def _grid_from(self, lowest, foot_cells, conf_band=None, free_limit=None, behind=None):
        """
        Return the grid: free below ``lowest`` in every column, occupied at ``foot_cells``.

        With ``conf_band`` (the confidence of the band, contiguous) and ``free_limit``, only
        pixels whose confidence is more than ``free_limit`` make their cells free. ``behind``:
        (per column the band row of the lowest blocked pixel, a limit): the pixels at or above
        that row make their cells free only where their confidence (255 without a
        ``conf_band``) is more than the limit.
        """
        flat = np.full(self._grid.size, UNKNOWN, dtype=np.int8)
        counted = self._rep_row > lowest[self._rep_col]
        conf = None
        if conf_band is not None and (free_limit is not None or behind is not None):
            conf = conf_band.reshape(-1)[self._rep_pixel]
        if free_limit is not None and conf is not None:
            counted &= conf > free_limit
        if behind is not None:
            end, limit = behind
            seen_behind = self._rep_row <= end[self._rep_col]
            if conf is not None:
                counted &= ~seen_behind | (conf > limit)
            elif limit >= 255:
                counted &= ~seen_behind
        flat[self._rep_cell[counted]] = FREE
        flat[foot_cells] = OCCUPIED
        return flat.reshape(self._grid.shape)

    @staticmethod
    def _checked_confidence(confidence, shape):
        """Return ``confidence`` as an array if it is uint8 of the mask ``shape``."""
        conf = np.asarray(confidence)
        if conf.shape != shape or conf.dtype != np.uint8:
            raise ValueError(f'confidence must be uint8 of the mask shape {shape}, '
                             f'got {conf.dtype} {conf.shape}')
        return conf

    def _cut_free(self, free_mask, confidence, rule):
        """
        Band mask (uint8, nonzero = does not cut) under ``rule``, and the blocked band.

        Computed on the band plus ``run`` rows above it, so a run that reaches above the
        band keeps its length. ``confidence``: a checked confidence image or None.
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
            sure = cv2.compare(np.ascontiguousarray(confidence[top:]), rule.confidence_limit(),
                               cv2.CMP_LE)
            cut = cv2.bitwise_and(blocked, sure)
        if run > 1:
            # An odd kernel: OpenCV's opening with an even one shifts runs by a row. Runs that
            # touch the top or bottom of the image (or of the part above) keep going there.
            kernel = np.ones((run, 1), np.uint8)
            cut = cv2.morphologyEx(cut, cv2.MORPH_OPEN, kernel)
        skip = self._row0 - top
        if skip >= cut.shape[0]:
            # No pixel sees the floor (a camera pitched up): an empty band. OpenCV returns
            # None for empty arrays, so it is made here.
            empty = np.zeros((0, mask.shape[1]), dtype=np.uint8)
            return empty, empty
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
        Project a mask (nonzero = floor): the :class:`Ground` outputs under ``rule``.

        The projector's one entry point. ``confidence``: uint8 P(free) x 255 of the mask's
        pixels, or None (then only ``rule.min_run`` and a ``rule.behind_confidence`` of 1
        apply). With
        :data:`PLAIN_RULE` (the default) the marking pixels (``rows``, ``cols``) are the
        obstacle feet, each the lowest non-floor pixel of its column (see :meth:`_feet` for
        which are kept), handy to draw the floor contact line over the camera image; the
        obstacle points are the mean foot point per occupied cell (ready for a PointCloud2
        marking source of Nav2's obstacle layer).
        """
        if rule.plain:
            lowest = self._lowest_blocked(free_mask)
            rows, cols, cells = self._feet(lowest)
            grid = self._grid_from(lowest, cells)
            feet = (rows, cols)
        else:
            if confidence is not None and rule.needs_confidence:
                confidence = self._checked_confidence(confidence, np.shape(free_mask))
            else:
                confidence = None
            cut_free, blocked = self._cut_free(free_mask, confidence, rule)
            lowest = self._lowest_blocked_band(cut_free)
            rows, cols, cells = self._feet(lowest)
            feet = (rows, cols)
            br, bc = self._run_bottoms(blocked, lowest)
            behind = None
            if rule.behind_confidence > 0.0 and br.size:
                # The floor seen behind the lowest blocked pixel, which need not cut.
                end = np.full(lowest.shape, -1, dtype=np.intp)
                np.maximum.at(end, bc, br)
                behind = (end, rule.free_limit(rule.behind_confidence))
            if confidence is not None and rule.mark_confidence > 0.0 and br.size:
                sure = confidence[br + self._row0, bc] <= rule.confidence_limit(
                    rule.mark_confidence)
                br, bc = br[sure], bc[sure]
            bcells = self._band_lut[br, bc]
            seen = bcells >= 0
            rows = np.concatenate([rows, br[seen]])
            cols = np.concatenate([cols, bc[seen]])
            cells = np.concatenate([cells, bcells[seen].astype(np.intp)])
            grid = self._grid_from(
                lowest, cells,
                None if confidence is None else np.ascontiguousarray(confidence[self._row0:]),
                rule.free_limit() if rule.free_confidence > 0.0 else None, behind)
        return Ground(grid, rows + self._row0, cols, (self._band_xy, rows, cols, cells),
                      lambda: self._occluders(free_mask, *feet))

    def _occluders(self, free_mask, rows, cols):
        """:attr:`Ground.occluders` of the feet at band ``rows``, ``cols`` of ``free_mask``."""
        if rows.size == 0:
            return np.zeros((0, 3))
        xy = self._band_xy[rows, cols].astype(np.float64)
        foot = self._dist[rows, cols].astype(np.float64)
        # The top of each foot's blocked run: the row after the nearest floor pixel above it
        # (no row below the lowest foot matters).
        column = np.asarray(free_mask)[:int(rows.max()) + self._row0 + 1, cols] != 0
        above = np.where(column, np.arange(column.shape[0])[:, None], -1)
        top = np.maximum.accumulate(above, axis=0)[rows + self._row0, np.arange(cols.size)] + 1
        gx, gy, hits = self._ground_hits(self._mask_intr, cols.astype(np.float64),
                                         top.astype(np.float64))
        pos = self._pose.position
        with np.errstate(invalid='ignore', divide='ignore'):
            reach = np.hypot(gx - pos[0], gy - pos[1])
            height = pos[2] * (1.0 - foot / reach)
        tall = (top <= 0) | ~hits | ~np.isfinite(height) | (height >= pos[2])
        height = np.where(tall, np.inf, np.maximum(height, 0.0))
        return np.column_stack([xy, height])

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
