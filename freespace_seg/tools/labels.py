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
Label export for fine-tuning: frames and the model's masks in the ``--images`` folder format.

``finetune --images DIR`` and ``eval --images DIR`` read ``<stem>.png`` with
``<stem>_mask.png`` beside it (:func:`freespace_seg.training.data.read_user_image_pair`). The
exported mask is a BGRA PNG: grey 255 (white) = free floor, 0 (black) = blocked, and alpha 0
(transparent) = not checked, which scoring and fine-tuning skip. ``bag`` and ``infer`` write
every Nth frame; choosing frames by low confidence waits for a confidence output.
"""

import os

import cv2
import numpy as np

#: the pixel value of each label in an exported ``_mask.png`` (BGRA: grey in B=G=R, and alpha)
LABEL_FREE = 255
LABEL_BLOCKED = 0
LABEL_UNCHECKED_ALPHA = 0


def add_label_arguments(parser):
    """Add ``--export-labels``, ``--label-every`` and ``--label-ignore-band``."""
    parser.add_argument('--export-labels', default='', metavar='DIR',
                        help='write every Nth frame as <stem>.png + <stem>_mask.png (the '
                             'finetune/eval --images format) to correct and fine-tune on')
    parser.add_argument('--label-every', type=int, default=30, metavar='N',
                        help='export every Nth frame (30)')
    parser.add_argument('--label-ignore-band', type=int, default=4, metavar='PX',
                        help='pixels within PX of the free/blocked boundary are written '
                             'unchecked (alpha 0, ignored by finetune and eval) (4; 0: none)')


def write_label_pair(directory, stem, rgb, free, ignore_band=0):
    """
    Write ``<stem>.png`` (the RGB image) and ``<stem>_mask.png`` into ``directory``.

    The mask is BGRA: B=G=R 255 where the model says free floor and 0 where blocked, alpha
    255 (checked) except within ``ignore_band`` pixels of the free/blocked boundary, where it
    is 0: not labelled, skipped by ``finetune`` and ``eval`` (``read_user_image_pair``).
    ``free`` is the (H, W) free-space mask (nonzero = free).
    """
    grey = np.where(free > 0, LABEL_FREE, LABEL_BLOCKED).astype(np.uint8)
    alpha = np.full(grey.shape, 255, np.uint8)
    if ignore_band > 0:
        kernel = np.ones((2 * ignore_band + 1, 2 * ignore_band + 1), np.uint8)
        edge = cv2.dilate(grey, kernel) != cv2.erode(grey, kernel)
        alpha[edge] = LABEL_UNCHECKED_ALPHA
    mask = cv2.merge([grey, grey, grey, alpha])
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, stem)
    if not cv2.imwrite(base + '.png', cv2.cvtColor(np.ascontiguousarray(rgb),
                                                   cv2.COLOR_RGB2BGR)) \
            or not cv2.imwrite(base + '_mask.png', mask):
        raise OSError(f'cannot write {base}.png / {base}_mask.png')
