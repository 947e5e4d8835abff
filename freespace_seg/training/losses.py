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

"""Losses: cross-entropy (edges optionally weighted) plus Dice, and the per-frame loss."""

from freespace_seg.perception import metrics
import torch
import torch.nn.functional as F

#: ``segmentation_loss``'s edge pixels lie within this many pixels of another class
EDGE_RADIUS = 2

# ---------------------------------------------------------------------------------------------
# Loss, validation, training loop


def dice_loss(logits, target, ignore_index=metrics.IGNORE_INDEX, eps=1.0):
    """1 - soft Dice, averaged over classes, over the labelled pixels of the whole batch."""
    prob = logits.softmax(dim=1)
    valid = (target != ignore_index)
    t = torch.where(valid, target, torch.zeros_like(target))
    onehot = F.one_hot(t, logits.shape[1]).permute(0, 3, 1, 2).float()
    v = valid.unsqueeze(1).float()
    prob = prob * v
    onehot = onehot * v
    inter = (prob * onehot).sum(dim=(0, 2, 3))
    denom = prob.sum(dim=(0, 2, 3)) + onehot.sum(dim=(0, 2, 3))
    return 1.0 - ((2.0 * inter + eps) / (denom + eps)).mean()


def edge_pixels(target, radius, ignore_index=metrics.IGNORE_INDEX):
    """
    Bool (N, H, W): labelled pixels within ``radius`` pixels (a square) of another class.

    Pads (``ignore_index``) are neither a class nor an edge: a frame's letterbox border does
    not make the floor beside it an edge.
    """
    valid = target != ignore_index
    k = 2 * int(radius) + 1
    t = target.float().unsqueeze(1)
    # The largest and smallest class within the window, pads left out of both.
    hi = F.max_pool2d(torch.where(valid.unsqueeze(1), t, torch.full_like(t, -1.0)), k, 1,
                      int(radius))
    lo = -F.max_pool2d(torch.where(valid.unsqueeze(1), -t, torch.full_like(t, -1e9)), k, 1,
                       int(radius))
    return ((hi != lo) & valid.unsqueeze(1)).squeeze(1)


def segmentation_loss(logits, target, dice_weight=1.0, edge_weight=0.0,
                      edge_radius=EDGE_RADIUS):
    """
    Cross-entropy (ignoring pads) + ``dice_weight`` * Dice.

    ``edge_weight`` > 0: the pixels within ``edge_radius`` pixels of another class (an
    obstacle's foot, a wall's base) count ``1 + edge_weight`` times in the cross-entropy,
    which stays a weighted mean over the labelled pixels.
    """
    if edge_weight:
        ce_map = F.cross_entropy(logits, target, ignore_index=metrics.IGNORE_INDEX,
                                 reduction='none')
        valid = (target != metrics.IGNORE_INDEX).float()
        weight = valid * (1.0 + edge_weight * edge_pixels(target, edge_radius).float())
        ce = (ce_map * weight).sum() / weight.sum().clamp_min(1.0)
    else:
        ce = F.cross_entropy(logits, target, ignore_index=metrics.IGNORE_INDEX)
    if dice_weight:
        return ce + dice_weight * dice_loss(logits, target)
    return ce


def per_frame_loss(logits, target):
    """Mean cross-entropy of each frame over its labelled pixels (no gradient)."""
    with torch.no_grad():
        ce = F.cross_entropy(logits.detach(), target, ignore_index=metrics.IGNORE_INDEX,
                             reduction='none')
        valid = (target != metrics.IGNORE_INDEX).float()
        return (ce * valid).sum(dim=(1, 2)) / valid.sum(dim=(1, 2)).clamp_min(1.0)
