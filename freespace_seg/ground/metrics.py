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

"""How well a grid matches the truth: free-cell IoU and false free (demo, grid-rules, loop)."""

import cv2
from freespace_seg.ground.grid import FREE
import numpy as np


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


def false_free_cells(pred_grid, exact_grid, tolerance_cells=1):
    """
    Return the boolean mask of the free cells of ``pred_grid`` far from any truly free cell.

    Far: more than ``tolerance_cells`` cells (8-connected, so diagonals count as one) from
    every free cell of ``exact_grid`` (see :func:`false_free`).
    """
    pred = np.asarray(pred_grid) == FREE
    exact = np.asarray(exact_grid) == FREE
    if pred.shape != exact.shape:
        raise ValueError(f'grid shapes differ: {pred.shape} vs {exact.shape}')
    size = 2 * int(tolerance_cells) + 1
    near = cv2.dilate(exact.astype(np.uint8), np.ones((size, size), np.uint8)) > 0
    return pred & ~near


def false_free(pred_grid, exact_grid, tolerance_cells=1):
    """
    Return ``(false, predicted)``: predicted free cells far from any truly free cell.

    ``false`` counts the free cells of ``pred_grid`` more than ``tolerance_cells`` cells
    (8-connected, so diagonals count as one) from every free cell of ``exact_grid``, the
    grid the same projection makes of the true mask: free where no floor is visible, the
    most expensive error of the ground outputs. ``predicted`` counts all free cells of
    ``pred_grid``; ``false / predicted`` is the false-free share (0 for the exact grid
    itself, by construction).
    """
    wrong = false_free_cells(pred_grid, exact_grid, tolerance_cells)
    return int(np.count_nonzero(wrong)), int(np.count_nonzero(np.asarray(pred_grid) == FREE))
