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
The horizon cut: the mask pixels that cannot be floor, because their ray rises, ROS-free.

A pixel's viewing ray (the camera intrinsics, undistorted, turned by the camera's pose in the
base frame) that points at or above the horizon never meets the floor (z = 0 of the base
frame). :class:`HorizonCut` holds the pixels of one mask size whose ray rises at least
``margin_deg`` above the horizontal, per pixel (a rolled camera's horizon is a tilted line;
a distorted one's a curve), and sets them to a blocked class in a class mask.

The margin keeps a band just above the horizon as the model said it: a pitch or roll a
little off (calibration, the robot rocking, a ramp) moves the real floor's far edge there.

The cut is built once per intrinsics, pose, margin and mask size (:meth:`HorizonCut.update`
rebuilds it only when one of them really changes, like the
:class:`~freespace_seg.ground.projection.GroundProjector`'s table). Per frame,
:meth:`HorizonCut.apply` fills whole rows that lie above the horizon and copies the blocked
class through a stored mask in the rows that the horizon crosses, both with OpenCV on row
slices (docs/ground_outputs.md has what it costs).

The projector never uses such pixels (:attr:`GroundProjector.lut` is -1 there), so the grid,
the obstacle points and the scan do not depend on the cut.
"""

import math

import cv2
from freespace_seg.ground.geometry import (as_pose, CameraIntrinsics, CameraMount,
                                           pixel_rays_in_base)
import numpy as np

#: the default margin above the horizon (degrees): the node's ``horizon_margin_deg``
DEFAULT_MARGIN_DEG = 1.0


def _checked_margin(margin_deg):
    margin = float(margin_deg)
    if not 0.0 <= margin < 90.0:
        raise ValueError(f'the horizon margin must be in [0, 90) degrees, got {margin_deg!r}')
    return margin


class HorizonCut:
    """
    The pixels of a mask whose viewing ray rises ``margin_deg`` or more above the horizon.

    ``intrinsics``: the :class:`CameraIntrinsics` at the mask's resolution (scale them with
    :meth:`CameraIntrinsics.scaled` for a mask of another size); ``mount_or_transform``: a
    :class:`~freespace_seg.ground.geometry.CameraMount` or a 4x4 base_from_optical
    transform; ``margin_deg``: degrees above the horizontal, in [0, 90). ``rebuild_count``
    counts the builds (1 after construction).
    """

    def __init__(self, intrinsics, mount_or_transform, margin_deg=DEFAULT_MARGIN_DEG):
        if not isinstance(intrinsics, CameraIntrinsics):
            raise TypeError('intrinsics must be a CameraIntrinsics')
        self._intrinsics = intrinsics
        self._pose = as_pose(mount_or_transform)
        # What the pose was made from: the same mount or transform again needs no as_pose.
        self._mount = _kept(mount_or_transform)
        self._margin = _checked_margin(margin_deg)
        self._fills = {}
        self.rebuild_count = 0
        self._build()

    @property
    def intrinsics(self):
        """Return the intrinsics the cut is built for (at the mask's resolution)."""
        return self._intrinsics

    @property
    def pose(self):
        """Return the camera pose, with ``rotation_base_from_optical()`` and ``position``."""
        return self._pose

    @property
    def margin_deg(self):
        """Return the margin above the horizon, in degrees."""
        return self._margin

    @property
    def shape(self):
        """Return the (rows, cols) of the masks it cuts."""
        return (self._intrinsics.height, self._intrinsics.width)

    @property
    def mask(self):
        """Return the (rows, cols) bool array, True where a pixel is cut; a read-only view."""
        view = self._cut.view()
        view.flags.writeable = False
        return view

    @property
    def count(self):
        """Return how many pixels are cut."""
        return self._count

    def update(self, intrinsics=None, mount=None, margin_deg=None):
        """
        Change any of the inputs; rebuild the cut only if one really changed.

        ``mount`` is a CameraMount or a 4x4 transform, as in the constructor. Returns
        whether the cut was rebuilt. Cheap to call for every frame.
        """
        changed = False
        if intrinsics is not None and intrinsics != self._intrinsics:
            if not isinstance(intrinsics, CameraIntrinsics):
                raise TypeError('intrinsics must be a CameraIntrinsics')
            self._intrinsics = intrinsics
            changed = True
        if mount is not None and not _same_mount(mount, self._mount):
            pose = as_pose(mount)
            self._mount = _kept(mount)
            if not pose.same_as(self._pose):
                self._pose = pose
                changed = True
        if margin_deg is not None:
            margin = _checked_margin(margin_deg)
            if margin != self._margin:
                self._margin = margin
                changed = True
        if changed:
            self._build()
        return changed

    def _build(self):
        rays = pixel_rays_in_base(self._intrinsics, self._pose)
        # elevation >= margin  <=>  z >= sin(margin) |ray|; margin 0: the ray does not descend.
        limit = math.sin(math.radians(self._margin))
        cut = rays[..., 2] >= limit * np.linalg.norm(rays, axis=-1)
        self._cut = cut
        self._count = int(np.count_nonzero(cut))
        # Rows in runs: all cut (filled), partly cut (copied through a mask), none (skipped).
        kind = np.where(cut.all(axis=1), 2, np.where(cut.any(axis=1), 1, 0))
        edges = np.flatnonzero(np.diff(kind)) + 1
        starts = np.concatenate([[0], edges])
        stops = np.concatenate([edges, [kind.size]])
        segments = []
        for start, stop in zip(starts.tolist(), stops.tolist()):
            if kind[start] == 2:
                segments.append((start, stop, None))
            elif kind[start] == 1:
                band = np.ascontiguousarray(cut[start:stop]).view(np.uint8) * np.uint8(255)
                segments.append((start, stop, band))
        self._segments = segments
        self._fills = {}
        self.rebuild_count += 1

    def _fill(self, value):
        """Return a (rows, cols) uint8 image of ``value`` (kept: copied from per frame)."""
        fill = self._fills.get(value)
        if fill is None:
            fill = self._fills[value] = np.full(self.shape, value, np.uint8)
        return fill

    def apply(self, class_mask, value, classes=None):
        """
        Set the cut pixels of a uint8 (rows, cols) class mask to ``value``, in place.

        ``classes``: None sets every cut pixel; else only the cut pixels whose class id is
        one of ``classes`` (e.g. the free classes, so that other blocked classes stay).
        Returns ``class_mask``.
        """
        mask = class_mask
        if not isinstance(mask, np.ndarray) or mask.dtype != np.uint8 or \
                mask.shape != self.shape:
            raise ValueError(f'class_mask must be uint8 of shape {self.shape}, got '
                             f'{getattr(mask, "dtype", type(mask))} '
                             f'{getattr(mask, "shape", "")}')
        value = int(value)
        fill = self._fill(value)
        for start, stop, band in self._segments:
            rows = mask[start:stop]
            if classes is None and band is None:
                rows[...] = value
                continue
            select = band
            if classes is not None:
                hit = None
                for c in classes:
                    same = cv2.compare(rows, int(c), cv2.CMP_EQ)
                    hit = same if hit is None else cv2.bitwise_or(hit, same, dst=hit)
                if hit is None:
                    continue
                select = hit if band is None else cv2.bitwise_and(hit, band, dst=hit)
            _copy_where(fill[start:stop], select, rows)
        return mask


def _kept(mount):
    """Return a copy of a 4x4 transform (it may be changed in place later), else ``mount``."""
    return np.array(mount, dtype=np.float64) if isinstance(mount, np.ndarray) else mount


def _same_mount(mount, kept):
    """Whether ``mount`` is the mount or transform ``kept`` (cheaper than a pose check)."""
    if mount is kept:
        return True
    if isinstance(mount, np.ndarray) and isinstance(kept, np.ndarray):
        return mount.shape == kept.shape and bool(np.array_equal(mount, kept))
    if isinstance(mount, CameraMount) and isinstance(kept, CameraMount):
        return mount == kept
    return False


def _copy_where(src, select, dst):
    """dst[select != 0] = src[select != 0], in place (OpenCV where ``dst`` allows it)."""
    if dst.flags.c_contiguous:
        out = cv2.copyTo(src, select, dst)
        if np.shares_memory(out, dst):
            return
    np.copyto(dst, src, where=select.astype(bool))
