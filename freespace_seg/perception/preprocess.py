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
Camera image -> network tensor (letterbox or stretch, normalize, layout), and the way back.

The geometry of the resize lives in :class:`Letterbox`, so the mask can be mapped back to
the camera's pixels exactly (removing the padding) rather than stretched.

Speed (a 1280x720 camera into a 480x272 input, on one core): OpenCV's ``INTER_AREA`` takes a
slow general path for a non-integer factor such as 8/3 (about 3 ms), so :func:`resize_area_fast`
shrinks by a whole factor first (OpenCV's fast box-filter path) and bilinearly by the rest,
under 2x (0.4 ms; within 0.5 grey levels of ``INTER_AREA`` on average). The whole factor is
the largest that divides both sides of the image and leaves under 2x: 2 for 1280x720 into
480x270 and into 384x216 (3 does not divide 1280). The normalization is a precomputed
uint8 -> float32 table per channel (``cv2.LUT``, exact).
"""

from dataclasses import dataclass

import cv2
import numpy as np


def box_factor(src_w, src_h, dst_w, dst_h):
    """
    Return the whole factor :func:`resize_area_fast` box-filters by first, or None.

    The largest ``k >= 2`` that divides both sides of the source and leaves a factor under 2x
    on both axes for the bilinear rest; None when no such ``k`` exists or when ``k`` alone
    gives the destination (then ``INTER_AREA``'s own integer path is as fast).
    """
    for k in range(min(src_w // dst_w, src_h // dst_h), 1, -1):
        if src_w % k or src_h % k:
            continue
        mid_w, mid_h = src_w // k, src_h // k
        if (mid_w, mid_h) == (dst_w, dst_h):
            return None
        if mid_w < 2 * dst_w and mid_h < 2 * dst_h:
            return k
        return None     # smaller factors leave more than 2x
    return None


def resize_area_fast(image, size, dst=None, scratch=None):
    """
    Shrink ``image`` to ``size`` (w, h) like ``cv2.INTER_AREA``, but fast for any factor.

    When a whole factor ``k`` divides the image and leaves under 2x (:func:`box_factor`;
    1280x720 -> 480x270 or 384x216: k = 2), the image is first box-filtered by ``k``
    (OpenCV's fast integer path) and then resized bilinearly by the remaining factor.
    Otherwise (an exact whole factor, a small factor, enlarging, no such ``k``) this is
    ``INTER_AREA`` itself. ``dst`` receives the result when given; ``scratch`` may hold the
    intermediate image.
    """
    src_w, src_h = image.shape[1], image.shape[0]
    k = box_factor(src_w, src_h, size[0], size[1])
    if k is not None:
        mid_size = (src_w // k, src_h // k)
        if scratch is None or scratch.shape[:2] != mid_size[::-1]:
            scratch = None
        mid = cv2.resize(image, mid_size, dst=scratch, interpolation=cv2.INTER_AREA)
        return cv2.resize(mid, size, dst=dst, interpolation=cv2.INTER_LINEAR)
    return cv2.resize(image, size, dst=dst, interpolation=cv2.INTER_AREA)


@dataclass(frozen=True)
class Letterbox:
    """
    How a ``src_w`` x ``src_h`` image sits inside the ``dst_w`` x ``dst_h`` network input.

    The image is scaled to ``content_w`` x ``content_h`` and placed at (``pad_left``,
    ``pad_top``); the rest is padding. With ``stretch`` the content fills the whole input.
    """

    src_w: int
    src_h: int
    dst_w: int
    dst_h: int
    content_w: int
    content_h: int
    pad_left: int
    pad_top: int

    @classmethod
    def compute(cls, src_w, src_h, dst_w, dst_h, mode='letterbox'):
        """Compute the placement; ``mode`` is ``letterbox`` (keep aspect) or ``stretch``."""
        for name, v in (('src_w', src_w), ('src_h', src_h), ('dst_w', dst_w), ('dst_h', dst_h)):
            if int(v) != v or v <= 0:
                raise ValueError(f'{name} must be a positive integer, got {v!r}')
        if mode == 'stretch':
            return cls(src_w, src_h, dst_w, dst_h, dst_w, dst_h, 0, 0)
        if mode != 'letterbox':
            raise ValueError(f'resize mode must be letterbox or stretch, got {mode!r}')
        scale = min(dst_w / src_w, dst_h / src_h)
        cw = min(dst_w, max(1, int(round(src_w * scale))))
        ch = min(dst_h, max(1, int(round(src_h * scale))))
        return cls(src_w, src_h, dst_w, dst_h, cw, ch, (dst_w - cw) // 2, (dst_h - ch) // 2)

    @property
    def content_slice(self):
        """(rows, cols) slices of the network input that hold the image."""
        return (slice(self.pad_top, self.pad_top + self.content_h),
                slice(self.pad_left, self.pad_left + self.content_w))

    def to_network(self, u, v):
        """Map source pixel coordinates (pixel centres at integers) to network coordinates."""
        x = (np.asarray(u, dtype=np.float64) + 0.5) * self.content_w / self.src_w - 0.5
        y = (np.asarray(v, dtype=np.float64) + 0.5) * self.content_h / self.src_h - 0.5
        return x + self.pad_left, y + self.pad_top

    def to_source(self, x, y):
        """Map network coordinates back to source pixel coordinates (inverse of to_network)."""
        u = (np.asarray(x, dtype=np.float64) - self.pad_left + 0.5) * self.src_w / self.content_w
        v = (np.asarray(y, dtype=np.float64) - self.pad_top + 0.5) * self.src_h / self.content_h
        return u - 0.5, v - 0.5

    def image_to_network(self, image, pad_value=0, out=None, interpolation=cv2.INTER_AREA,
                         fast_area=False, scratch=None):
        """
        Resize ``image`` (H, W[, C]) into a padded network-sized uint8 array.

        ``out`` (dst_h, dst_w[, C]) is reused when given; only its content region is written,
        so its padding must already hold ``pad_value`` (as :class:`Preprocessor` arranges).
        ``fast_area`` shrinks with :func:`resize_area_fast` instead of ``INTER_AREA``
        (``scratch``: its intermediate buffer).
        """
        if image.shape[0] != self.src_h or image.shape[1] != self.src_w:
            raise ValueError(f'image is {image.shape[1]}x{image.shape[0]}, letterbox expects '
                             f'{self.src_w}x{self.src_h}')
        if out is None:
            out = np.full((self.dst_h, self.dst_w) + image.shape[2:], pad_value, image.dtype)
        rows, cols = self.content_slice
        if self.content_w == self.src_w and self.content_h == self.src_h:
            out[rows, cols] = image
            return out
        size = (self.content_w, self.content_h)
        region = out[rows, cols]
        # Resize straight into the output when the content region is one memory block.
        dst = region if region.flags.c_contiguous else None
        if self.content_w > self.src_w and interpolation == cv2.INTER_AREA:
            interpolation = cv2.INTER_LINEAR
        if fast_area and interpolation == cv2.INTER_AREA:
            resized = resize_area_fast(image, size, dst=dst, scratch=scratch)
        else:
            resized = cv2.resize(image, size, dst=dst, interpolation=interpolation)
        if resized is not region:
            region[...] = resized
        return out

    def mask_to_source(self, mask, out=None):
        """
        Crop the padding off a network-resolution mask and resize it to the source size.

        Nearest-neighbour (pixel-centre exact), so class ids never blend.
        """
        if mask.shape[0] != self.dst_h or mask.shape[1] != self.dst_w:
            raise ValueError(f'mask is {mask.shape[1]}x{mask.shape[0]}, expected '
                             f'{self.dst_w}x{self.dst_h}')
        rows, cols = self.content_slice
        crop = mask[rows, cols]
        if self.content_w == self.src_w and self.content_h == self.src_h:
            if out is None:
                return np.ascontiguousarray(crop)
            out[...] = crop
            return out
        return cv2.resize(crop, (self.src_w, self.src_h), dst=out,
                          interpolation=cv2.INTER_NEAREST_EXACT)


class Preprocessor:
    """
    Turns RGB uint8 camera images of one size into the model's input tensor.

    Buffers are allocated once and reused: the returned tensor is overwritten by the next
    call, so consume it (run the engine) first.
    """

    def __init__(self, card, src_w, src_h):
        self.card = card
        self.letterbox = Letterbox.compute(src_w, src_h, card.input_width, card.input_height,
                                           card.resize_mode)
        self._padded = np.full((card.input_height, card.input_width, 3), card.pad_value,
                               np.uint8)
        order = [0, 1, 2] if card.color_order == 'RGB' else [2, 1, 0]
        self._order = order
        mean = np.asarray(card.mean, np.float32)
        std = np.asarray(card.std, np.float32)
        # (x / 255 - mean) / std == x * scale + bias, per network channel.
        self._scale = (1.0 / (255.0 * std)).astype(np.float32)
        self._bias = (-mean / std).astype(np.float32)
        shape = card.input_shape
        if card.dtype == 'uint8':
            self._tensor = np.empty(shape, np.uint8)
        else:
            self._tensor = np.empty(shape, np.float32)
        self._half = np.empty(shape, np.float16) if card.dtype == 'float16' else None
        lb = self.letterbox
        k = box_factor(lb.src_w, lb.src_h, lb.content_w, lb.content_h)
        self._scratch = np.empty((lb.src_h // k, lb.src_w // k, 3), np.uint8) if k \
            else None
        nchw = card.layout == 'NCHW'
        # Per network channel: the uint8 -> float32 table, the source plane, the tensor plane.
        values = np.arange(256, dtype=np.float32)
        self._luts = [np.ascontiguousarray((values * self._scale[dst] + self._bias[dst])
                                           .astype(np.float32).reshape(1, 256))
                      for dst in range(3)]
        self._planes = [np.empty((card.input_height, card.input_width), np.uint8)
                        for _ in range(3)]
        self._views = [self._tensor[0, dst] if nchw else self._tensor[0, :, :, dst]
                       for dst in range(3)]

    def __call__(self, rgb):
        """Return the input tensor for an (H, W, 3) uint8 RGB image of the configured size."""
        padded = self.letterbox.image_to_network(rgb, out=self._padded, fast_area=True,
                                                 scratch=self._scratch)
        planes = cv2.split(padded, self._planes)  # RGB planes, written in place
        for dst, src in enumerate(self._order):
            view = self._views[dst]
            if self.card.dtype == 'uint8':
                view[...] = planes[src]
            elif view.flags.c_contiguous:
                out = cv2.LUT(planes[src], self._luts[dst], dst=view)
                if out is not view:
                    view[...] = out
            else:
                view[...] = cv2.LUT(planes[src], self._luts[dst])
        if self._half is not None:
            self._half[...] = self._tensor
            return self._half
        return self._tensor

    @property
    def padded_image(self):
        """Return the last letterboxed uint8 RGB image fed to the network (for debugging)."""
        return self._padded
