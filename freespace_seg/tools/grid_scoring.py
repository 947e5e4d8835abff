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
How ``grid-rules`` scores a predicted grid, shared by its single frames and its drives.

The rendered sets (:data:`SETS`), a frame's predicted and true masks as grids
(:func:`perceive`, :func:`truth_grids`), one frame's numbers (:func:`score`,
:func:`score_on_mask`) and their totals over a set (:func:`new_totals`, :func:`add`,
:func:`summary`); what each number means is in :mod:`freespace_seg.tools.grid_rules`.
"""

from freespace_seg.ground.grid import GridRule, PLAIN_RULE
import numpy as np

#: every cell where the true mask shows floor: no blocked run of the true mask cuts (a run as
#: tall as the whole image could, but then its column holds no floor either)
VISIBLE_FLOOR = GridRule(1.0, 0.0, 0.0, 0.0, 0.0)

#: name -> (renderer style, camera ranges or None)
SETS = {
    'held-out': ('default', None),
    'style-shifted': ('shifted', None),
    'held-out, camera 0.10-0.20 m': ('default', {'camera_height': (0.10, 0.20)}),
    'held-out, camera 0.35-0.50 m': ('default', {'camera_height': (0.35, 0.50)}),
    'style-shifted, camera 0.35-0.50 m': ('shifted', {'camera_height': (0.35, 0.50)}),
    'held-out, camera 0.5-1.2 m': ('default', {'camera_height': (0.5, 1.2)}),
}


def perceive(pipeline, frame):
    """
    Return the (free mask, confidence) of a rendered frame or a dataset sample.

    ``pipeline`` is a SegmentationPipeline, or a function of the frame that returns them (the
    true mask, for instance).
    """
    if callable(pipeline):
        return pipeline(frame)
    mask, conf = pipeline.segment_with_confidence(frame.image)
    return pipeline.free_mask(mask), conf


def truth_grids(proj, true_free):
    """Return (exact, visible): the true mask's grid under the plain rule, and uncut."""
    return (proj.ground(true_free, None, PLAIN_RULE).grid,
            proj.ground(true_free, None, VISIBLE_FLOOR).grid)


def blocked_at_cells(frame, spec):
    """Return the top-down truth of a rendered frame at the centres of ``spec``'s cells."""
    x, y = spec.cell_centers()
    px, py, yaw = frame.robot_pose
    return frame.scene.blocked_top_down(px + np.cos(yaw) * x - np.sin(yaw) * y,
                                        py + np.sin(yaw) * x + np.cos(yaw) * y)


def score(frame, pred, exact, spec, visible=None):
    """
    Score one predicted grid against the truth and the exact grid.

    Returns (free IoU, exact occupied, missed, called free, predicted occupied, phantom,
    false free cells, predicted free cells).
    """
    from freespace_seg.ground.metrics import grid_iou

    blocked = blocked_at_cells(frame, spec)
    iou = grid_iou(pred, ~blocked, exact != -1)
    return _counts(pred, exact, exact if visible is None else visible, iou, ~blocked, blocked)


def score_on_mask(pred, exact, visible):
    """
    Score one predicted grid where the true mask is all the truth (a dataset's frame).

    ``exact``: the true mask's grid under the plain rule, ``visible``: with no column cut.
    Free IoU against ``exact``'s free cells on the cells it sees; phantom: occupied cells
    that ``visible`` calls free with no occupied cell of ``visible`` within one cell. Returns
    what :func:`score` returns.
    """
    from freespace_seg.ground.grid import FREE, OCCUPIED, UNKNOWN
    from freespace_seg.ground.metrics import grid_iou

    iou = grid_iou(pred, exact == FREE, exact != UNKNOWN)
    return _counts(pred, exact, visible, iou, visible == FREE, visible == OCCUPIED)


def _counts(pred, exact, visible, iou, floor, blocked):
    """Return :func:`score`'s numbers: ``floor``/``blocked`` are the phantom test's truth."""
    import cv2

    from freespace_seg.ground.metrics import false_free

    kernel = np.ones((3, 3), np.uint8)
    occ = exact == 100
    near_pred = cv2.dilate((pred == 100).astype(np.uint8), kernel) > 0
    missed = occ & ~near_pred
    near_blocked = cv2.dilate(blocked.astype(np.uint8), kernel) > 0
    pred_occ = pred == 100
    wrong, free = false_free(pred, visible)
    return (iou, int(occ.sum()), int(missed.sum()), int((missed & (pred == 0)).sum()),
            int(pred_occ.sum()), int((pred_occ & floor & ~near_blocked).sum()), wrong, free)


def new_totals(rules):
    return {r: {'iou': [], 'occupied': 0, 'missed': 0, 'called_free': 0,
                'predicted_occupied': 0, 'phantom': 0, 'false_free': 0,
                'predicted_free': 0} for r in rules}


def add(a, numbers):
    iou, occ, miss, called, pocc, phantom, wrong, n_free = numbers
    a['iou'].append(iou)
    a['occupied'] += occ
    a['missed'] += miss
    a['called_free'] += called
    a['predicted_occupied'] += pocc
    a['phantom'] += phantom
    a['false_free'] += wrong
    a['predicted_free'] += n_free


def summary(acc):
    """Turn the per-frame totals of one rule into rates."""
    return {'free_iou': float(np.nanmean(acc['iou'])) if acc['iou'] else float('nan'),
            'missed': acc['missed'] / max(1, acc['occupied']),
            'called_free': acc['called_free'] / max(1, acc['occupied']),
            'phantom': acc['phantom'] / max(1, acc['predicted_occupied']),
            'false_free': acc['false_free'] / max(1, acc['predicted_free']),
            'occupied_cells': acc['occupied'], 'frames': len(acc['iou'])}
