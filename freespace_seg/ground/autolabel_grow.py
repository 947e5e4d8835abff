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
Grow the drive-over free labels of a frame over the floor that looks the same.

The drive-over labels (:func:`freespace_seg.ground.autolabel.label_frame`) are right but
sparse: only the floor under the robot's later path. The rest of the same floor usually looks
the same. :func:`grow_free` spreads the free labels to it, in three steps:

1. **Superpixels.** The image is cut into about ``superpixels`` regions that follow its edges
   (OpenCV's watershed from a grid of seeds on the slightly blurred image).
2. **Seeds and growth.** A region is floor when at least ``seed_share`` of its pixels are
   labelled free and none is labelled blocked. Floor spreads to a neighbouring region whose
   mean colour (CIE L*a*b*, OpenCV's 8-bit scale) differs by less than ``color_distance``
   from the floor region's, again and again, never into a region with a blocked label (the
   horizon, a bump). The chain of small steps follows slow shading across a floor; an edge
   (a wall's foot, a rug's border) stops it.
3. **A model's word.** A grown pixel becomes free only where a segmentation model's P(free)
   is at least ``min_p_free``. Colour alone leaks into a wall or a box of the floor's colour;
   the model alone labels its own mistakes
   (:func:`~freespace_seg.ground.autolabel.fill_confident`). Together they must agree.

Only unchecked pixels change; drive-over and blocked labels stay. Nothing here imports ROS.
"""

import cv2
from freespace_seg.ground.autolabel import BLOCKED, FREE, UNCHECKED
import numpy as np


def superpixels(rgb, count):
    """
    Cut an image into about ``count`` regions along its edges.

    ``rgb``: (H, W, 3) uint8. Returns (H, W) int32 labels 0..K-1. The watershed starts from a
    grid of seeds one region apart; its boundary pixels join the region of a neighbour.
    """
    h, w = rgb.shape[:2]
    step = max(4, int(round(np.sqrt(h * w / max(1, count)))))
    ys = np.arange(step // 2, h, step)
    xs = np.arange(step // 2, w, step)
    markers = np.zeros((h, w), np.int32)
    markers[np.ix_(ys, xs)] = np.arange(1, ys.size * xs.size + 1).reshape(ys.size, xs.size)
    blurred = cv2.GaussianBlur(np.ascontiguousarray(rgb[..., ::-1]), (3, 3), 0)
    cv2.watershed(blurred, markers)
    edge = markers < 0
    markers[edge] = 0
    near = cv2.dilate(markers.astype(np.float32), np.ones((3, 3), np.uint8))
    markers[edge] = near[edge].astype(np.int32)
    markers -= 1
    markers[markers < 0] = 0  # an isolated boundary pixel, in practice never
    return markers


def _neighbours(regions):
    """Each pair (a, b), a < b, of regions that touch (4-neighbourhood), once."""
    pairs = np.concatenate([
        np.stack([regions[:, :-1].ravel(), regions[:, 1:].ravel()], 1),
        np.stack([regions[:-1].ravel(), regions[1:].ravel()], 1)])
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(np.sort(pairs, 1), axis=0)


def grow_free(mask, rgb, p_free, *, color_distance=6.0, min_p_free=0.5, superpixel_count=400,
              seed_share=0.3):
    """
    Label free, in place, the unchecked pixels of floor that looks like the labelled floor.

    ``mask``: (H, W) uint8 of :data:`FREE`, :data:`BLOCKED`, :data:`UNCHECKED`; ``rgb``: the
    frame, (H, W, 3) uint8; ``p_free``: a model's (H, W) P(free), 0..1 float or uint8 x 255.
    See the module for the steps. Returns the number of pixels labelled free.
    """
    if rgb.shape[:2] != mask.shape or np.shape(p_free) != mask.shape:
        raise ValueError(f'grow_free: mask {mask.shape}, image {rgb.shape[:2]} and P(free) '
                         f'{np.shape(p_free)} must have the same size')
    if color_distance <= 0.0:
        return 0
    free = mask == FREE
    if not free.any():
        return 0
    regions = superpixels(rgb, superpixel_count)
    flat = regions.ravel()
    n = int(flat.max()) + 1
    size = np.bincount(flat, minlength=n)
    n_free = np.bincount(flat, weights=free.ravel(), minlength=n)
    n_blocked = np.bincount(flat, weights=(mask == BLOCKED).ravel(), minlength=n)
    lab = cv2.cvtColor(rgb, cv2.COLOR_RGB2LAB).reshape(-1, 3).astype(np.float64)
    mean = np.stack([np.bincount(flat, weights=lab[:, c], minlength=n) for c in range(3)], 1)
    mean /= np.maximum(size, 1)[:, None]
    open_ = n_blocked == 0
    floor = (n_free >= seed_share * size) & open_
    pairs = _neighbours(regions)
    pairs = pairs[np.linalg.norm(mean[pairs[:, 0]] - mean[pairs[:, 1]], axis=1)
                  < color_distance]
    pairs = pairs[open_[pairs[:, 0]] & open_[pairs[:, 1]]]
    while True:
        grown = floor.copy()
        grown[pairs[floor[pairs[:, 0]], 1]] = True
        grown[pairs[floor[pairs[:, 1]], 0]] = True
        if np.array_equal(grown, floor):
            break
        floor = grown
    p = np.asarray(p_free)
    p = p / 255.0 if p.dtype == np.uint8 else p
    new = floor[regions] & (mask == UNCHECKED) & (p >= min_p_free)
    mask[new] = FREE
    return int(new.sum())
