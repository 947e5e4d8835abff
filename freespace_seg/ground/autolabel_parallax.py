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
Blocked labels below the horizon from motion: points that stand above the floor.

The drive-over labels (:mod:`freespace_seg.ground.autolabel`) say "free" below the horizon
and "blocked" only at bumps. Between two frames of a drive the odometry gives the camera's
motion, and the floor is a known plane: a point on the floor moves in the image exactly as
the plane's motion predicts; a point that stands above the floor moves differently
(parallax), and two views of it give its height.

:func:`parallax_points` tracks corners (OpenCV's Shi-Tomasi corners and pyramidal
Lucas-Kanade, tracked forward and back) from the first frame into the second, each starting
where the floor would put it, and keeps as **obstacle points** only those that

* land at least ``min_residual_px``, and ``residual_factor`` times the median miss of the
  corners on free labels, away from where the floor would have put them;
* triangulate (the two rays' closest approach, re-projected into both images within
  ``max_reprojection_px``) in front of both cameras, ``min_height`` to ``max_height`` above
  the floor and within ``max_range`` of the camera's foot.

Colour is not compared, and each frame's grey levels are brought to the same mean and
contrast before tracking: light that changes with the view (exposure, shadows) does not mark
a point by itself. A mirror image in a glossy floor should triangulate below the floor; in
the renderer's glossy rooms a few reflected corners still pass as obstacle points
(docs/own_data.md has the measurement).

The frame pair is used only when the motion is a good one to judge by: a baseline of at
least ``min_baseline`` m, a turn of at most ``max_turn`` rad, and the pose checked on the
floor itself: the corners that the drive-over rule labelled free must follow the floor's
prediction (the median of their misses at most ``max_floor_residual_px``, from at least
``min_floor_points`` of them). A late image stamp or an odometry jump fails that check and
the pair gives no labels; so does a floor whose fine repeating pattern the corners cannot
follow (aliased by the renderer, or a reflection on gloss).

:func:`label_parallax` draws a disc of ``radius_px`` around each obstacle point as blocked
and, with ``region_points`` > 0, blocks each superpixel of the frame (the regions of
:mod:`freespace_seg.ground.autolabel_grow`) that holds at least that many obstacle points and
no free label: a point marks an obstacle, the region around it spreads the label over the
obstacle's surface up to its edges. Free labels always stay free. OpenCV only; no model.
"""

from dataclasses import dataclass
import math

import cv2
from freespace_seg.ground.autolabel import BLOCKED, FREE, UNCHECKED
from freespace_seg.ground.autolabel_grow import superpixels
from freespace_seg.ground.geometry import pixel_rays_in_base
import numpy as np


@dataclass(frozen=True)
class ParallaxConfig:
    """Parameters of the parallax rule (metres, radians, pixels of the labelled image)."""

    min_height: float = 0.10
    max_height: float = 2.5
    max_range: float = 4.0
    min_residual_px: float = 3.0
    residual_factor: float = 4.0
    max_reprojection_px: float = 1.5
    max_fb_error_px: float = 0.5
    min_baseline: float = 0.05
    max_turn: float = math.radians(25.0)
    max_floor_residual_px: float = 5.0
    #: the quantile of the free corners' misses that checks the pose (the median). On a
    #: glossy floor part of those corners are reflections, which miss the floor's
    #: prediction; 0.25 lets more such pairs through and labelled 33 % more pixels, at 0.951
    #: against 0.965 precision in own-floor-sim's 8 rooms
    floor_quantile: float = 0.5
    min_floor_points: int = 5
    max_corners: int = 2000
    corner_quality: float = 0.001
    min_corner_distance_px: int = 3
    radius_px: int = 1
    #: a superpixel with at least this many obstacle points and no free label is blocked
    #: (0: the points' discs only)
    region_points: int = 2
    superpixel_count: int = 400

    def __post_init__(self):
        """Check that the numbers make sense."""
        if not 0.0 < self.min_height < self.max_height:
            raise ValueError('need 0 < min_height < max_height')
        if not 0.0 < self.floor_quantile <= 1.0:
            raise ValueError('floor_quantile must be in (0, 1]')
        for name in ('max_range', 'min_residual_px', 'max_reprojection_px', 'max_fb_error_px',
                     'max_turn', 'max_floor_residual_px'):
            if not getattr(self, name) > 0.0:
                raise ValueError(f'{name} must be positive')
        if self.min_baseline < 0.0 or self.radius_px < 0 or self.min_floor_points < 0 \
                or self.region_points < 0:
            raise ValueError('min_baseline, radius_px, min_floor_points and region_points must '
                             'be 0 or more')
        if self.max_corners < 1 or self.superpixel_count < 1:
            raise ValueError('max_corners and superpixel_count must be 1 or more')


@dataclass
class ParallaxResult:
    """Obstacle points of a frame pair, and why a pair gave none."""

    #: (N, 2) pixel coordinates (u, v) of the obstacle points in the first frame
    points: np.ndarray
    #: their height above the floor (m)
    heights: np.ndarray
    #: corners tracked both ways
    tracked: int = 0
    #: tracked corners on free labels, and the floor_quantile of their misses of the floor's
    #: prediction (px)
    floor_points: int = 0
    floor_residual_px: float = float('nan')
    #: '' when the pair was used, else the reason it was not
    rejected: str = ''


def _gray(image):
    """Grey levels of ``image``, with its mean and contrast made the same for every frame."""
    image = np.asarray(image)
    if image.ndim == 3:
        image = cv2.cvtColor(image.astype(np.uint8, copy=False), cv2.COLOR_RGB2GRAY)
    g = image.astype(np.float32)
    std = float(g.std())
    g = (g - float(g.mean())) * (48.0 / max(std, 1.0)) + 128.0
    return np.clip(g, 0, 255).astype(np.uint8)


def _empty(**kw):
    return ParallaxResult(points=np.zeros((0, 2)), heights=np.zeros(0), **kw)


def _corners(gray, config, sky):
    mask = None if sky is None else np.where(sky, 0, 255).astype(np.uint8)
    corners = cv2.goodFeaturesToTrack(gray, config.max_corners, config.corner_quality,
                                      config.min_corner_distance_px, mask=mask, blockSize=5)
    return np.zeros((0, 2)) if corners is None else corners.reshape(-1, 2).astype(np.float64)


def _track(gray1, gray2, p1, guess, config):
    """
    Track ``p1`` from ``gray1`` into ``gray2``, starting each at its ``guess``.

    Returns the mask of corners tracked both ways (back within ``max_fb_error_px``) and
    inside the image, and the tracked positions.
    """
    lk = {'winSize': (15, 15), 'maxLevel': 2,
          'criteria': (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 0.01)}
    a = p1.astype(np.float32).reshape(-1, 1, 2)
    g = guess.astype(np.float32).reshape(-1, 1, 2)
    p2, ok, _ = cv2.calcOpticalFlowPyrLK(gray1, gray2, a, g.copy(),
                                         flags=cv2.OPTFLOW_USE_INITIAL_FLOW, **lk)
    back, ok_back, _ = cv2.calcOpticalFlowPyrLK(gray2, gray1, p2, a.copy(),
                                                flags=cv2.OPTFLOW_USE_INITIAL_FLOW, **lk)
    fb = np.linalg.norm((back - a).reshape(-1, 2), axis=1)
    h, w = gray1.shape
    q = p2.reshape(-1, 2).astype(np.float64)
    keep = (ok.ravel() == 1) & (ok_back.ravel() == 1) & (fb <= config.max_fb_error_px) & \
        (q[:, 0] >= 0) & (q[:, 1] >= 0) & (q[:, 0] <= w - 1) & (q[:, 1] <= h - 1)
    return keep, q


def parallax_points(image1, image2, intrinsics, mount, motion, free_mask=None, sky=None,
                    config=None):
    """
    Obstacle points of ``image1`` seen again in ``image2``; return :class:`ParallaxResult`.

    ``motion``: (dx, dy, dyaw) of the robot at ``image2`` in the base frame of ``image1``
    (:func:`freespace_seg.ground.autolabel.relative_poses`). ``mount``: the camera in the
    base frame (the same for both). ``free_mask``: pixels labelled free in ``image1`` (the
    pose check uses the corners on them; None: no check). ``sky``: pixels never tracked (the
    horizon rule's; None: all are).
    """
    config = config or ParallaxConfig()
    dx, dy, dyaw = (float(v) for v in motion)
    if math.hypot(dx, dy) < config.min_baseline:
        return _empty(rejected='baseline')
    if abs(math.remainder(dyaw, math.tau)) > config.max_turn:
        return _empty(rejected='turn')
    gray1 = _gray(image1)
    p1 = _corners(gray1, config, sky)
    if not len(p1):
        return _empty(rejected='no corners')
    c, s = math.cos(dyaw), math.sin(dyaw)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    shift = np.array([dx, dy, 0.0])
    cam = np.asarray(mount.position, dtype=np.float64)
    rot = mount.rotation_base_from_optical()
    c1, c2 = cam, turn @ cam + shift
    d1 = pixel_rays_in_base(intrinsics, mount, p1[:, 0], p1[:, 1])

    def project(local):
        """Pixels of points in a camera's optical frame (NaN behind the camera)."""
        uv = np.full((len(local), 2), np.nan)
        front = local[:, 2] > 1e-6
        if front.any():
            uv[front] = intrinsics.project(local[front])
        return uv

    def project2(points):
        """Pixels in image 2 of points in base frame 1."""
        return project(((points - shift) @ turn - cam) @ rot)

    # where the floor would have put each corner
    down = d1[:, 2] < -1e-9
    t_floor = np.where(down, -c1[2] / np.where(down, d1[:, 2], -1.0), np.nan)
    floor_uv = project2(c1 + t_floor[:, None] * d1)
    # Each corner starts where the floor would put it (far points: where the turn alone
    # would), so that floor corners need no search and others only their parallax.
    far_uv = project2(c1 + 100.0 * d1 / np.linalg.norm(d1, axis=1, keepdims=True))
    guess = np.where(np.isnan(floor_uv), far_uv, floor_uv)
    usable = ~np.isnan(guess).any(axis=1)
    if not usable.any():
        return _empty(rejected='no corners')
    p1, guess, floor_uv, d1, down = (v[usable] for v in (p1, guess, floor_uv, d1, down))
    tracked, p2 = _track(gray1, _gray(image2), p1, guess, config)
    p1, p2, floor_uv, d1, down = (v[tracked] for v in (p1, p2, floor_uv, d1, down))
    if not len(p1):
        return _empty(rejected='no corners')
    d2 = pixel_rays_in_base(intrinsics, mount, p2[:, 0], p2[:, 1]) @ turn.T
    miss = np.linalg.norm(p2 - floor_uv, axis=1)
    result = ParallaxResult(points=np.zeros((0, 2)), heights=np.zeros(0), tracked=len(p1))
    if free_mask is not None:
        iu = np.clip(np.rint(p1[:, 0]).astype(int), 0, free_mask.shape[1] - 1)
        iv = np.clip(np.rint(p1[:, 1]).astype(int), 0, free_mask.shape[0] - 1)
        on_floor = free_mask[iv, iu] & down
        result.floor_points = int(on_floor.sum())
        if result.floor_points:
            result.floor_residual_px = float(np.nanquantile(miss[on_floor],
                                                            config.floor_quantile))
        if result.floor_points < config.min_floor_points:
            result.rejected = 'too few corners on free labels'
            return result
        if not result.floor_residual_px <= config.max_floor_residual_px:
            result.rejected = 'the floor does not follow the pose'
            return result
    # the two rays' closest points
    w0 = c1 - c2
    a = np.einsum('ij,ij->i', d1, d1)
    b = np.einsum('ij,ij->i', d1, d2)
    cc = np.einsum('ij,ij->i', d2, d2)
    d = d1 @ w0
    e = d2 @ w0
    den = a * cc - b * b
    ok = den > 1e-12
    den = np.where(ok, den, 1.0)
    s1 = (b * e - cc * d) / den
    s2 = (a * e - b * d) / den
    x = 0.5 * ((c1 + s1[:, None] * d1) + (c2 + s2[:, None] * d2))
    uv1 = project((x - cam) @ rot)
    reproj = np.maximum(np.linalg.norm(uv1 - p1, axis=1), np.linalg.norm(project2(x) - p2, axis=1))
    height = x[:, 2]
    reach = np.hypot(x[:, 0] - cam[0], x[:, 1] - cam[1])
    # a corner must miss the floor's prediction by more than the floor's own corners do
    min_miss = config.min_residual_px
    if result.floor_points:
        min_miss = max(min_miss, config.residual_factor * result.floor_residual_px)
    with np.errstate(invalid='ignore'):
        keep = ok & (s1 > 0.0) & (s2 > 0.0) & ~(miss < min_miss) & \
            (reproj <= config.max_reprojection_px) & (height >= config.min_height) & \
            (height <= config.max_height) & (reach <= config.max_range)
    result.points = p1[keep]
    result.heights = height[keep]
    return result


def paint_points(mask, points, radius_px=1):
    """
    Draw each point of ``points`` as a blocked disc into the label ``mask`` (in place).

    Only unchecked pixels change: free labels stay free. Returns the number of pixels that
    became blocked.
    """
    if not len(points):
        return 0
    disc = np.zeros(mask.shape, np.uint8)
    for u, v in np.rint(np.asarray(points)).astype(int):
        cv2.circle(disc, (int(u), int(v)), int(radius_px), 1, -1)
    new = (disc > 0) & (mask == UNCHECKED)
    mask[new] = BLOCKED
    return int(new.sum())


def block_regions(mask, rgb, points, min_points=2, superpixel_count=400):
    """
    Label blocked, in place, the superpixels of ``rgb`` that hold obstacle points.

    A region (:func:`freespace_seg.ground.autolabel_grow.superpixels`) with at least
    ``min_points`` of ``points`` and no free label becomes blocked where it is unchecked.
    Returns the number of pixels that became blocked.
    """
    if min_points < 1 or len(points) < min_points:
        return 0
    regions = superpixels(rgb, superpixel_count)
    n = int(regions.max()) + 1
    h, w = mask.shape
    pts = np.rint(np.asarray(points)).astype(int)
    pts[:, 0] = np.clip(pts[:, 0], 0, w - 1)
    pts[:, 1] = np.clip(pts[:, 1], 0, h - 1)
    hits = np.bincount(regions[pts[:, 1], pts[:, 0]], minlength=n)
    free = np.bincount(regions.ravel(), weights=(mask == FREE).ravel(), minlength=n)
    new = ((hits >= min_points) & (free == 0))[regions] & (mask == UNCHECKED)
    mask[new] = BLOCKED
    return int(new.sum())


def label_parallax(mask, image1, image2, intrinsics, mount, motion, sky=None, config=None):
    """
    Add the parallax rule's blocked labels to a frame's drive-over ``mask`` (in place).

    ``mask``: the labels of ``image1`` (:func:`freespace_seg.ground.autolabel.label_frame`);
    its free labels check the pose. Returns (pixels labelled blocked, :class:`ParallaxResult`).
    """
    config = config or ParallaxConfig()
    result = parallax_points(image1, image2, intrinsics, mount, motion, mask == FREE, sky,
                             config)
    if result.rejected or not len(result.points):
        return 0, result
    n = paint_points(mask, result.points, config.radius_px)
    if config.region_points > 0:
        n += block_regions(mask, np.asarray(image1), result.points, config.region_points,
                           config.superpixel_count)
    return n, result


__all__ = ['BLOCKED', 'FREE', 'ParallaxConfig', 'ParallaxResult', 'block_regions',
           'label_parallax', 'paint_points', 'parallax_points']
