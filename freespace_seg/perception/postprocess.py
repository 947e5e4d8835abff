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
Network output -> class mask -> free-space mask, colored mask and overlay.

All functions work on numpy arrays and allocate nothing per frame when given ``out``.
"""

import cv2
import numpy as np


def decode_classes(output, kind, layout='NCHW', out=None):
    """
    Return an (H, W) uint8 class-id mask from a batch-1 network output.

    ``kind`` is ``logits``, ``probabilities`` or ``argmax`` (see the model card). For two
    classes the logits are compared directly (class 1 wins where its score is higher), which
    is several times cheaper than a full argmax. A single-channel output is read as the score
    of class 1 (sigmoid: > 0 for logits, > 0.5 for probabilities).
    """
    output = np.asarray(output)
    if kind == 'argmax':
        ids = output.reshape(output.shape[-2:]) if output.ndim == 4 and output.shape[1] == 1 \
            else np.squeeze(output)
        if ids.ndim != 2:
            raise ValueError(f'argmax output must squeeze to (H, W), got shape {output.shape}')
        if out is None:
            return ids.astype(np.uint8)
        out[...] = ids
        return out
    if output.ndim != 4 or output.shape[0] != 1:
        raise ValueError(f'expected a (1, C, H, W) or (1, H, W, C) output, got {output.shape}')
    scores = output[0] if layout == 'NCHW' else np.moveaxis(output[0], -1, 0)
    channels = scores.shape[0]
    if out is None:
        out = np.empty(scores.shape[1:], np.uint8)
    if channels == 1:
        threshold = 0.0 if kind == 'logits' else 0.5
        np.greater(scores[0], threshold, out=out, casting='unsafe')
    elif channels == 2:
        np.greater(scores[1], scores[0], out=out, casting='unsafe')
    else:
        out[...] = np.argmax(scores, axis=0)
    return out


def free_probability(output, kind, free_classes, layout='NCHW', out=None):
    """
    Return an (H, W) uint8 image of P(free) x 255 (rounded) from a batch-1 network output.

    ``free_classes`` are the class ids that count as free floor. Logits: for two classes the
    sigmoid of the logit difference (free minus the other), for more the softmax summed over
    the free classes, for one channel the sigmoid of class 1's score. Probabilities: the sum
    over the free classes (one channel: class 1's probability). Argmax outputs have no
    probabilities: 255 where the class is free, 0 elsewhere. Where :func:`decode_classes`
    picks a free class this is >= 128 (ties of exactly 0.5 aside).
    """
    output = np.asarray(output)
    free = sorted({int(c) for c in free_classes})
    if kind == 'argmax':
        ids = decode_classes(output, 'argmax')
        return free_space_mask(ids, class_lut(free), out=out)
    if output.ndim != 4 or output.shape[0] != 1:
        raise ValueError(f'expected a (1, C, H, W) or (1, H, W, C) output, got {output.shape}')
    scores = output[0] if layout == 'NCHW' else np.moveaxis(output[0], -1, 0)
    scores = scores.astype(np.float32, copy=False)
    channels = scores.shape[0]
    if channels == 1:
        p = scores[0]
        if kind == 'logits':
            p = 1.0 / (1.0 + np.exp(-p))
        if free != [1]:
            p = 1.0 - p
    elif kind == 'logits' and channels == 2:
        other = 1 - free[0] if len(free) == 1 else None
        if other is None:
            p = np.ones(scores.shape[1:], np.float32) if len(free) == 2 else \
                np.zeros(scores.shape[1:], np.float32)
        else:
            with np.errstate(over='ignore'):
                p = 1.0 / (1.0 + np.exp(scores[other] - scores[free[0]]))
    elif kind == 'logits':
        e = np.exp(scores - scores.max(axis=0, keepdims=True))
        p = e[free].sum(axis=0) / e.sum(axis=0)
    else:
        p = scores[free].sum(axis=0) if free else np.zeros(scores.shape[1:], np.float32)
    if out is None:
        out = np.empty(scores.shape[1:], np.uint8)
    scaled = np.clip(p * np.float32(255.0) + np.float32(0.5), 0.0, 255.0)
    np.copyto(out, scaled, casting='unsafe')  # truncation of x + 0.5: rounding
    return out


def class_lut(class_ids, true_value=255, size=256):
    """Return a uint8 table mapping ids in ``class_ids`` to ``true_value``, others to 0."""
    lut = np.zeros(size, np.uint8)
    lut[list(class_ids)] = true_value
    return lut


def palette_lut(palette):
    """Return a (256, 3) uint8 table of RGB colours per class id (unknown ids are black)."""
    lut = np.zeros((256, 3), np.uint8)
    lut[:len(palette)] = np.asarray(palette, np.uint8)
    return lut


def free_space_mask(class_mask, lut, out=None):
    """
    Map a class mask to 255 (free) / 0 (blocked) with a table from :func:`class_lut`.

    When one class id alone is free (the usual case) this is one ``cv2.compare``, several
    times faster than the table lookup it equals.
    """
    ids = np.flatnonzero(lut)
    if ids.size == 1 and lut[ids[0]] == 255:
        return cv2.compare(class_mask, int(ids[0]), cv2.CMP_EQ, dst=out)
    return cv2.LUT(class_mask, lut, dst=out)


def colorize(class_mask, lut, out=None):
    """
    Return an (H, W, 3) uint8 RGB image with each class painted in its palette colour.

    One ``cv2.applyColorMap`` with the table as a user colour map (OpenCV expands the mask to
    three channels and looks all three up at once; the channel order is the table's). At
    1280x720 with opencv-python 5.0 on 2 cores that is 0.5 ms against 3.5 to 4.4 ms for a
    ``cv2.LUT`` per channel and a ``cv2.merge`` (which it replaced), and 3.9 ms for a
    fancy-indexed ``np.take`` of RGB triples.
    """
    table = np.ascontiguousarray(lut.reshape(256, 1, 3))
    if out is None:
        return cv2.applyColorMap(class_mask, table)
    painted = cv2.applyColorMap(class_mask, table, dst=out)
    if painted is not out:
        out[...] = painted
    return out


def overlay(rgb, colored, alpha, out=None):
    """Blend the colored mask over the camera image: ``(1 - alpha) * rgb + alpha * colored``."""
    if rgb.shape != colored.shape:
        raise ValueError(f'image {rgb.shape} and colored mask {colored.shape} differ in shape')
    return cv2.addWeighted(rgb, 1.0 - alpha, colored, alpha, 0.0, dst=out)
