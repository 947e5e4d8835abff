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
A real-photo evaluation set with free-space ground truth derived from stereo.

``python -m freespace_seg real-set --out DIR`` writes the Middlebury 2014 "Motorcycle"
stereo pair (a garage with a concrete floor, as bundled and downsampled 4x by scikit-image)
with a free-space mask for each image, in the layout that ``python -m freespace_seg eval
--images DIR`` reads. The pair is RESERVED FOR EVALUATION: never train or fine-tune on it,
or its scores stop meaning anything about real images the model has never seen.

How the labels are made (:func:`floor_labels`):

1. the ground-truth disparity of the left image becomes a 3-D point per pixel in the
   camera frame (x right, y down, z forward; :func:`disparity_to_points`);
2. a seeded RANSAC finds the floor (:func:`fit_floor_plane`): the plane that best fits the
   points within the tolerance (MSAC cost) among those whose normal is near the camera's
   vertical axis and that lie below the optical centre, refined by least squares on its
   inliers;
3. a pixel is free (1) where its point is within ``tolerance_m`` of that plane, blocked (0)
   where it is farther above or below it, and not labelled (255) where the disparity is
   unknown. The default tolerance is 3 cm (see :data:`DEFAULT_TOLERANCE_M` for why).

The right image's mask is the left one carried along the disparity
(:func:`warp_labels_left_to_right`); pixels that no left pixel reaches (occlusions, cracks
of the forward warp, the left border) are not labelled. No morphological clean-up is done:
the Middlebury disparities are ground truth, so isolated labels are real geometry (a tyre
touching the floor, a thin stand) rather than noise, and smoothing would only move errors
into the reference that models are scored against.

Masks are 4-channel PNGs: grey 255 free / 0 blocked in B, G and R, and alpha 0 where a pixel
is not labelled (``read_user_image_pair`` in :mod:`freespace_seg.training.data` maps those to
the ignore index 255).

numpy and OpenCV only at import time; scikit-image is imported by
:func:`write_motorcycle_set` alone.
"""

import argparse
import dataclasses
import math
import os
import sys

import cv2
from freespace_seg.common.markdown import row
import numpy as np

FREE = 1
BLOCKED = 0
UNLABELLED = 255
DEFAULT_OUT = os.path.join('data', 'real', 'motorcycle')
#: Points within this many metres of the floor plane are free. 3 cm, not 2: on the Motorcycle
#: pair the concrete slab is not flat to 2 cm (relative to the best plane it rises about 2.2 cm
#: toward the near-left corner, so 2 cm blocks some 600 floor pixels there), while the heights
#: of all points have a valley between 2 and 3 cm (the floor's tail ends, object bases are
#: thin), so the labels hardly depend on where in it the cut falls.
DEFAULT_TOLERANCE_M = 0.03
SKIMAGE_HINT = ('scikit-image is needed for the Middlebury stereo pair: '
                'pip install scikit-image==0.26.0 (or tools/bootstrap.sh --train)')


@dataclasses.dataclass(frozen=True)
class StereoCalibration:
    """
    Rectified stereo calibration in the Middlebury convention.

    ``focal``, ``cx``, ``cy`` and ``doffs`` (the x difference of the two principal points)
    are in pixels, ``baseline_m`` in metres. Depth is ``baseline_m * focal / (d + doffs)``
    for a disparity ``d`` of the left image.
    """

    focal: float
    cx: float
    cy: float
    doffs: float
    baseline_m: float


#: Middlebury 2014 "Motorcycle" as downsampled 4x by scikit-image (its docstring's values).
MOTORCYCLE_CALIBRATION = StereoCalibration(focal=994.978, cx=311.193, cy=254.877,
                                           doffs=31.086, baseline_m=0.193001)


@dataclasses.dataclass(frozen=True)
class FloorPlane:
    """
    A floor plane in the camera frame (x right, y down, z forward, metres).

    ``normal`` is a unit vector pointing up, from the floor toward the camera's side, and
    the signed height of a point ``p`` above the floor is ``normal @ p + offset``: positive
    above the floor, negative below it. The camera (the origin) is ``offset`` metres above
    the floor.
    """

    normal: tuple
    offset: float
    inliers: int = 0

    def height(self, points):
        """Return the signed height above the floor of (..., 3) points (NaN stays NaN)."""
        return np.asarray(points, np.float64) @ np.asarray(self.normal) + self.offset

    @property
    def camera_height_m(self):
        """Height of the optical centre above the floor, in metres."""
        return float(self.offset)

    @property
    def pitch_rad(self):
        """Angle of the optical axis below the floor's horizontal, radians (>0: looks down)."""
        return float(math.asin(max(-1.0, min(1.0, -self.normal[2]))))

    @property
    def roll_rad(self):
        """Roll of the camera about its optical axis relative to the floor, radians."""
        return float(math.atan2(self.normal[0], -self.normal[1]))


def disparity_to_points(disp, calib):
    """
    Turn a left-image disparity map into (H, W, 3) camera-frame points in metres.

    Points are NaN where the disparity is NaN, infinite (Middlebury's "unknown") or not
    above ``-calib.doffs`` (no finite depth in front of the camera).
    """
    disp = np.asarray(disp, np.float64)
    if disp.ndim != 2:
        raise ValueError(f'disparity must be (H, W), got shape {disp.shape}')
    h, w = disp.shape
    with np.errstate(invalid='ignore'):
        valid = np.isfinite(disp) & (disp + calib.doffs > 0)
    z = np.full(disp.shape, np.nan)
    z[valid] = calib.baseline_m * calib.focal / (disp[valid] + calib.doffs)
    u = np.arange(w, dtype=np.float64)[None, :]
    v = np.arange(h, dtype=np.float64)[:, None]
    x = (u - calib.cx) * z / calib.focal
    y = (v - calib.cy) * z / calib.focal
    return np.stack([x, y, z], axis=-1)


def _orient_up(normal, offset):
    """Flip a plane (normal, offset) so that its normal points up (negative camera y)."""
    if normal[1] > 0:
        return -normal, -offset
    return normal, offset


def fit_floor_plane(points, rng, inlier_m=0.02, max_tilt_deg=25.0, iterations=1000,
                    min_inlier_share=0.05, sample_size=20000, refinements=3):
    """
    Find the floor among 3-D points with a seeded RANSAC; return a :class:`FloorPlane`.

    ``points`` is (..., 3) in the camera frame (x right, y down, z forward); NaN points are
    skipped. A candidate plane through three random points qualifies only if its normal is
    within ``max_tilt_deg`` of the camera's vertical axis (0, 1, 0) or its opposite, and if
    it lies below the optical centre (the camera is above it). Of those the one with the
    lowest MSAC cost wins: the sum over a random subsample of ``sample_size`` points of the
    squared distance, capped at ``inlier_m`` squared (a count of inliers alone prefers a
    plane tilted to catch the foot of a wall as well). It is then refit by least squares to
    all points within ``inlier_m``, then ``refinements`` times to those within half of it,
    so that the bases of walls and objects, which lie within the tolerance on one side only,
    do not tilt it. ``rng`` is a ``numpy.random.Generator`` (deterministic for a seed).

    Raises ValueError when no plane qualifies or the best one holds fewer than
    ``min_inlier_share`` of the valid points: then there is no floor to label.
    """
    pts = np.asarray(points, np.float64).reshape(-1, 3)
    pts = pts[np.isfinite(pts).all(axis=1)]
    n_valid = len(pts)
    if n_valid < 3:
        raise ValueError(f'no floor plane: only {n_valid} valid 3-D point(s)')
    cos_tilt = math.cos(math.radians(max_tilt_deg))
    sample = pts if n_valid <= sample_size else pts[rng.choice(n_valid, sample_size,
                                                               replace=False)]

    idx = rng.integers(0, n_valid, size=(iterations, 3))
    p0, p1, p2 = pts[idx[:, 0]], pts[idx[:, 1]], pts[idx[:, 2]]
    normals = np.cross(p1 - p0, p2 - p0)
    norms = np.linalg.norm(normals, axis=1)
    ok = norms > 1e-12
    normals[ok] /= norms[ok, None]
    flip = normals[:, 1] > 0
    normals[flip] *= -1
    offsets = -np.einsum('ij,ij->i', normals, p0)
    # Near vertical (up is -y once oriented) and below the camera (camera height > 0).
    ok &= (-normals[:, 1] >= cos_tilt) & (offsets > 0)
    if not ok.any():
        raise ValueError('no floor plane: no candidate plane is within '
                         f'{max_tilt_deg:g} deg of horizontal and below the camera')
    best, best_cost = None, math.inf
    for i in np.flatnonzero(ok):
        residual = sample @ normals[i] + offsets[i]
        cost = float(np.minimum(residual * residual, inlier_m * inlier_m).sum())
        if cost < best_cost:
            best, best_cost = i, cost
    normal, offset = normals[best], offsets[best]

    for distance in [inlier_m] + [inlier_m / 2] * refinements:
        inliers = np.abs(pts @ normal + offset) <= distance
        if np.count_nonzero(inliers) < 3:
            break
        chosen = pts[inliers]
        centre = chosen.mean(axis=0)
        _, _, vt = np.linalg.svd(chosen - centre, full_matrices=False)
        normal, offset = _orient_up(vt[2], -float(vt[2] @ centre))
    count = int(np.count_nonzero(np.abs(pts @ normal + offset) <= inlier_m))
    if -normal[1] < cos_tilt or offset <= 0:
        raise ValueError('no floor plane: the refined plane is not within '
                         f'{max_tilt_deg:g} deg of horizontal below the camera')
    if count < min_inlier_share * n_valid:
        raise ValueError(f'no floor plane: the best horizontal plane below the camera holds '
                         f'{count} of {n_valid} points (under {min_inlier_share:.0%})')
    return FloorPlane(normal=tuple(float(c) for c in normal), offset=float(offset),
                      inliers=count)


def floor_labels(disp, calib, tolerance_m=DEFAULT_TOLERANCE_M, seed=0, return_plane=False):
    """
    Label a left image from its disparity: (H, W) uint8, 1 free, 0 blocked, 255 not labelled.

    A pixel is free where its 3-D point is within ``tolerance_m`` of the floor plane found
    by :func:`fit_floor_plane` (RANSAC inlier distance = ``tolerance_m``, seeded with
    ``seed``), blocked where it is farther above the floor (obstacles, walls) or below it
    (a pit or a step down is not drivable either), and not labelled where the disparity is
    unknown. With ``return_plane`` returns ``(labels, plane)``, the plane a
    :class:`FloorPlane` (camera height, pitch and roll for a report).
    """
    points = disparity_to_points(disp, calib)
    plane = fit_floor_plane(points, np.random.default_rng(seed), inlier_m=tolerance_m)
    height = plane.height(points)
    labels = np.full(height.shape, UNLABELLED, np.uint8)
    valid = np.isfinite(height)
    labels[valid] = np.where(np.abs(height[valid]) <= tolerance_m, FREE, BLOCKED)
    return (labels, plane) if return_plane else labels


def warp_labels_left_to_right(labels, disp):
    """
    Carry left-image labels to the right image along the left disparity.

    Left pixel (v, u) lands on right pixel (v, round(u - d)). Where several land on one
    pixel the nearest (largest disparity) wins, as it hides the others; right pixels that no
    left pixel reaches (occluded, out of the left view, cracks) are 255, not labelled.
    """
    labels = np.asarray(labels)
    disp = np.asarray(disp, np.float64)
    if labels.shape != disp.shape:
        raise ValueError(f'labels {labels.shape} and disparity {disp.shape} differ in shape')
    h, w = disp.shape
    out = np.full((h, w), UNLABELLED, np.uint8)
    v, u = np.nonzero(np.isfinite(disp))
    d = disp[v, u]
    target_u = np.round(u - d).astype(np.int64)
    inside = (target_u >= 0) & (target_u < w)
    v, u, d, target_u = v[inside], u[inside], d[inside], target_u[inside]
    target = v * w + target_u
    order = np.lexsort((-d, target))  # by target pixel, nearest first within each
    first = np.unique(target[order], return_index=True)[1]
    chosen = order[first]
    out.reshape(-1)[target[chosen]] = labels[v[chosen], u[chosen]]
    return out


def mask_png(labels):
    """
    Encode labels as a (H, W, 4) BGRA mask image for :func:`cv2.imwrite`.

    Grey 255 is free and 0 blocked (in B, G and R); alpha is 0 where a pixel is not labelled
    (255) and 255 elsewhere.
    """
    labels = np.asarray(labels)
    grey = np.where(labels == FREE, 255, 0).astype(np.uint8)
    alpha = np.where(labels == UNLABELLED, 0, 255).astype(np.uint8)
    return np.dstack([grey, grey, grey, alpha])


def _shares(labels):
    """Return (labelled share of all pixels, free share of the labelled pixels)."""
    labelled = int(np.count_nonzero(labels != UNLABELLED))
    free = int(np.count_nonzero(labels == FREE))
    return labelled / labels.size, free / max(labelled, 1)


def _load_motorcycle():
    """Return scikit-image's Motorcycle pair (left RGB, right RGB, disparity)."""
    try:
        from skimage import data as skdata
    except ImportError as exc:
        raise ImportError(SKIMAGE_HINT) from exc
    return skdata.stereo_motorcycle()


def write_motorcycle_set(out_dir, tolerance_m=DEFAULT_TOLERANCE_M):
    """
    Write the Motorcycle evaluation set to ``out_dir``; return its stats as a dict.

    Writes ``motorcycle_left.png``, ``motorcycle_right.png``, their masks
    ``motorcycle_left_mask.png`` and ``motorcycle_right_mask.png`` (see :func:`mask_png`)
    and ``SOURCE.md`` (source, calibration, fitted floor, labelling rule, shares). The set is
    reserved for evaluation; never train on it. Raises ImportError with the install command
    when scikit-image is missing.
    """
    left, right, disp = _load_motorcycle()
    calib = MOTORCYCLE_CALIBRATION
    left_labels, plane = floor_labels(disp, calib, tolerance_m=tolerance_m, return_plane=True)
    right_labels = warp_labels_left_to_right(left_labels, disp)

    os.makedirs(out_dir, exist_ok=True)
    stats = {
        'source': 'Middlebury 2014 stereo "Motorcycle" (scikit-image 4x downsampled)',
        'tolerance_m': float(tolerance_m),
        'camera_height_m': plane.camera_height_m,
        'pitch_rad': plane.pitch_rad,
        'roll_rad': plane.roll_rad,
        'plane_normal': list(plane.normal),
        'plane_offset_m': plane.offset,
        'plane_inliers': plane.inliers,
        'images': {},
    }
    for name, rgb, labels in (('motorcycle_left', left, left_labels),
                              ('motorcycle_right', right, right_labels)):
        image_path = os.path.join(out_dir, name + '.png')
        mask_path = os.path.join(out_dir, name + '_mask.png')
        if not cv2.imwrite(image_path, cv2.cvtColor(np.ascontiguousarray(rgb),
                                                    cv2.COLOR_RGB2BGR)):
            raise OSError(f'cannot write {image_path}')
        if not cv2.imwrite(mask_path, mask_png(labels)):
            raise OSError(f'cannot write {mask_path}')
        labelled, free = _shares(labels)
        stats['images'][name] = {'image': image_path, 'mask': mask_path,
                                 'width': int(labels.shape[1]), 'height': int(labels.shape[0]),
                                 'labelled_share': labelled, 'free_share': free}
    with open(os.path.join(out_dir, 'SOURCE.md'), 'w', encoding='utf-8') as f:
        f.write(_source_md(stats, calib))
    return stats


def _source_md(stats, calib):
    """Return the text of ``SOURCE.md`` for the stats of :func:`write_motorcycle_set`."""
    n = stats['plane_normal']
    rows = '\n'.join(
        row((f'`{name}.png`', f'{s["width"]}x{s["height"]}', f'{s["labelled_share"]:.1%}',
             f'{s["free_share"]:.1%}')) for name, s in stats['images'].items())
    return f"""# Real-photo evaluation set: Middlebury 2014 "Motorcycle"

**This pair is reserved for evaluation; never train on it** (nor fine-tune, nor tune
thresholds on it), or its scores stop saying anything about real images a model has never
seen.

Written by `python -m freespace_seg real-set` (`freespace_seg/training/real_set.py`). Score a
model on it with `python -m freespace_seg eval --images <this folder>`.

## Source

The "Motorcycle" scene of the Middlebury 2014 stereo dataset: D. Scharstein,
H. Hirschmueller, Y. Kitajima, G. Krathwohl, N. Nesic, X. Wang and P. Westling,
"High-resolution stereo datasets with subpixel-accurate ground truth", German Conference on
Pattern Recognition (GCPR 2014). The images and ground-truth disparity are those bundled with
scikit-image (`skimage.data.stereo_motorcycle()`, scikit-image 0.26.0), which downsampled the
default-exposure images 4x with `downscale_local_mean`. A garage with a concrete floor, a
motorcycle, a bench, shelves and boxes.

## Calibration (for the downsampled images)

| focal | cx | cy | doffs | baseline |
| --- | --- | --- | --- | --- |
| {calib.focal} px | {calib.cx} px | {calib.cy} px | {calib.doffs} px | \
{calib.baseline_m * 1000:g} mm |

Depth `Z = baseline * f / (d + doffs)`, `X = (u - cx) Z / f`, `Y = (v - cy) Z / f`
(camera frame: x right, y down, z forward).

## Labelling rule

1. Every left pixel with a known disparity becomes a 3-D point.
2. A seeded RANSAC (seed 0) fits the floor: among planes within 25 deg of horizontal and
   below the camera, the one with the lowest sum of squared distances capped at
   {stats['tolerance_m']:g} m (MSAC), refined by least squares on the points within
   {stats['tolerance_m']:g} m, then on those within half of it.
3. **Free** (grey 255): the point lies within {stats['tolerance_m']:g} m of the floor plane
   (above or below). **Blocked** (grey 0): it lies farther above or below it.
   **Not labelled** (alpha 0): the ground-truth disparity is unknown. (`real-set` defaults
   to 3 cm because the slab is not flat to 2 cm: it rises about 2.2 cm above the best plane
   toward the near-left corner, and between 2 and 3 cm the heights of all points have a
   valley, where the floor's tail ends and only thin object bases lie.)
4. The right mask is the left one carried along the disparity (pixel (v, u) to
   (v, round(u - d)), the nearer one winning where several land); right pixels no left pixel
   reaches (occlusions, the left border, warp cracks) are not labelled.

No morphological clean-up is applied. Masks are BGRA PNGs: value 255 free / 0 blocked,
alpha 0 = not labelled (the evaluation ignores those pixels).

## Fitted floor

- plane (camera frame, normal pointing up): n = ({n[0]:.4f}, {n[1]:.4f}, {n[2]:.4f}),
  height of a point p above the floor = n . p + {stats['plane_offset_m']:.4f} m
  ({stats['plane_inliers']} inlier points)
- camera height above the floor: {stats['camera_height_m']:.3f} m
- camera pitch (optical axis below horizontal): {stats['pitch_rad']:.4f} rad \
({math.degrees(stats['pitch_rad']):.1f} deg)
- camera roll relative to the floor: {stats['roll_rad']:.4f} rad \
({math.degrees(stats['roll_rad']):.1f} deg)

## Shares

| image | size | labelled (of all pixels) | free (of labelled pixels) |
| --- | --- | --- | --- |
{rows}
"""


def _positive_metres(text):
    """Parse ``--tolerance``: a positive number of metres, else a usage error naming it."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: {text!r}') from None
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f'must be a positive distance in metres, got {text}')
    return value


def add_arguments(parser):
    """Add the ``real-set`` options to ``parser``."""
    parser.add_argument('--out', default=DEFAULT_OUT, metavar='DIR',
                        help='output folder (default: %(default)s); the pair is reserved for '
                             'evaluation (eval --images DIR): never train on it')
    parser.add_argument('--tolerance', type=_positive_metres, default=DEFAULT_TOLERANCE_M,
                        metavar='M',
                        help='a point within this many metres of the fitted floor plane is '
                             'free (default: %(default)s)')


def run(args):
    """Write the set; print one line per image; return 0, or 2 without scikit-image."""
    try:
        stats = write_motorcycle_set(args.out, tolerance_m=args.tolerance)
    except ImportError as exc:
        print(f'real-set: {exc}', file=sys.stderr)
        return 2
    for name, s in stats['images'].items():
        print(f'{s["image"]}: {s["width"]}x{s["height"]}, labelled {s["labelled_share"]:.1%}, '
              f'free {s["free_share"]:.1%} of labelled; mask {s["mask"]}')
    print(f'floor: camera {stats["camera_height_m"]:.3f} m above it, pitch '
          f'{math.degrees(stats["pitch_rad"]):.1f} deg, tolerance {stats["tolerance_m"]:g} m; '
          f'reserved for evaluation, never train on it ({os.path.join(args.out, "SOURCE.md")})')
    return 0
