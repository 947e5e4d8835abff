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
every Nth frame, or (``--label-least-confident K``) the K frames among those that the model is
least sure of (:func:`frame_uncertainty`): the frames worth a person's correcting first.
"""

import heapq
import os

import cv2
import numpy as np

#: the pixel value of each label in an exported ``_mask.png`` (BGRA: grey in B=G=R, and alpha)
LABEL_FREE = 255
LABEL_BLOCKED = 0
LABEL_UNCHECKED_ALPHA = 0


def add_label_arguments(parser):
    """Add the label export's options: ``--export-labels`` and the ``--label-*`` ones."""
    parser.add_argument('--export-labels', default='', metavar='DIR',
                        help='write every Nth frame as <stem>.png + <stem>_mask.png (the '
                             'finetune/eval --images format) to correct and fine-tune on')
    parser.add_argument('--label-every', type=int, default=30, metavar='N',
                        help='export every Nth frame (30); with --label-least-confident, '
                             'the candidates')
    parser.add_argument('--label-least-confident', type=int, default=0, metavar='K',
                        help='export only the K frames, of every Nth, the model is least sure '
                             'of: highest mean over pixels of min(p, 1 - p), p = P(free) '
                             '(0: every Nth frame)')
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


def frame_uncertainty(confidence):
    """
    Return how unsure the model is of a frame: the mean over pixels of min(p, 1 - p).

    ``confidence`` is the (H, W) uint8 P(free) x 255 of
    :meth:`~freespace_seg.perception.pipeline.SegmentationPipeline.segment_with_confidence`.
    0: every pixel certain; 0.5: every pixel a coin toss.
    """
    c = np.asarray(confidence, dtype=np.float64) / 255.0
    return float(np.minimum(c, 1.0 - c).mean())


def remove_label_pair(directory, stem):
    """Remove ``<stem>.png`` and ``<stem>_mask.png`` (written by :func:`write_label_pair`)."""
    base = os.path.join(directory, stem)
    for path in (base + '.png', base + '_mask.png'):
        if os.path.exists(path):
            os.remove(path)


class LabelExport:
    """
    The label export of one run: every Nth frame, or the K least confident of them.

    ``offer`` every frame in order. In least-confident mode the K most uncertain candidates
    so far are on disk (a frame pushed out by a less sure one is deleted again), so memory
    stays flat however long the run; ties keep the earlier frame. ``count`` is how many pairs
    are on disk, ``chosen`` their ``(index, stem, uncertainty)`` in frame order.
    """

    def __init__(self, directory, every=1, least_confident=0, ignore_band=0):
        if every < 1:
            raise ValueError('--label-every must be at least 1')
        if least_confident < 0:
            raise ValueError('--label-least-confident must be 0 or more')
        self.directory = directory
        self.every = every
        self.least_confident = least_confident
        self.ignore_band = ignore_band
        self._heap = []      # (uncertainty, -index, stem): the smallest is pushed out first
        self._written = []   # every-Nth mode: (index, stem, None)

    @classmethod
    def from_args(cls, args):
        """Build it from the options of :func:`add_label_arguments` (None without a DIR)."""
        if not args.export_labels:
            return None
        return cls(args.export_labels, args.label_every, args.label_least_confident,
                   args.label_ignore_band)

    @property
    def wants_confidence(self):
        """Whether ``offer`` needs the frame's confidence image."""
        return self.least_confident > 0

    def is_candidate(self, index):
        """Whether frame ``index`` is one of every Nth."""
        return index % self.every == 0

    def offer(self, index, stem, rgb, free, confidence=None):
        """Consider frame ``index``; write its pair when it is (so far) chosen."""
        if not self.is_candidate(index):
            return
        if not self.least_confident:
            write_label_pair(self.directory, stem, rgb, free, self.ignore_band)
            self._written.append((index, stem, None))
            return
        if confidence is None:
            raise ValueError('least-confident label export needs the confidence image')
        item = (frame_uncertainty(confidence), -index, stem)
        if len(self._heap) >= self.least_confident:
            if item <= self._heap[0]:
                return
            _, _, out = heapq.heapreplace(self._heap, item)
            remove_label_pair(self.directory, out)
        else:
            heapq.heappush(self._heap, item)
        write_label_pair(self.directory, stem, rgb, free, self.ignore_band)

    @property
    def chosen(self):
        """Return ``(index, stem, uncertainty or None)`` of the pairs on disk, in frame order."""
        if not self.least_confident:
            return list(self._written)
        return sorted((-i, stem, u) for u, i, stem in self._heap)

    @property
    def count(self):
        """Return how many label pairs are on disk."""
        return len(self._heap) if self.least_confident else len(self._written)
