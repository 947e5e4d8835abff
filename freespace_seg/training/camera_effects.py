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
Camera effects on labelled frames: a shifted-camera check that no renderer draws.

``eval --camera-effects`` passes every scored frame through :func:`apply_effects`, which
imitates what real cameras do to an image and the renderer does not (or does more mildly):
over- and under-exposure with clipping, a wrong white balance, motion blur, strong JPEG
compression, a wide lens with barrel distortion, and sensor noise. Each frame draws its own
effects and strengths from a generator seeded by (seed, frame index), so a set is the same on
every run. Only the wide lens moves pixels; it warps the mask with the image (nearest
neighbour), and pixels that come from outside the original view become the ignore label.
NumPy and OpenCV only: no torch.
"""

import cv2
import numpy as np

#: the effects, in the order they are applied (optics first, then sensor, then codec)
EFFECTS = ('wide_lens', 'motion_blur', 'exposure', 'white_balance', 'noise', 'jpeg')

#: what each effect draws, for the report and the docs
RANGES = {
    'wide_lens': 'barrel distortion k1 0.1-0.4 (radius normalized by the half diagonal)',
    'motion_blur': 'a line kernel 5-21 px long at any angle',
    'exposure': '2^(-1.5..1.5) times the light, in linear light, clipped',
    'white_balance': 'red/blue gains 1 +- 0.25 (colour temperature), green tint +- 0.08',
    'noise': 'shot noise plus read noise, sigma 2-12 of 255',
    'jpeg': 'JPEG quality 10-50',
}

#: probability that a frame gets each effect (at least one is always applied)
P_EFFECT = 0.5

IGNORE = 255


def parse_effects(text):
    """Parse ``all`` or a comma-separated list of :data:`EFFECTS`; raise ValueError."""
    names = [t.strip().replace('-', '_') for t in (text or '').split(',') if t.strip()]
    if names == ['all']:
        return EFFECTS
    unknown = sorted(set(names) - set(EFFECTS))
    if unknown or not names:
        raise ValueError(f'unknown camera effects {unknown or [text]}; expected "all" or some '
                         f'of {", ".join(EFFECTS)}')
    return tuple(e for e in EFFECTS if e in names)


def _wide_lens(rgb, mask, rng):
    h, w = mask.shape
    k1 = rng.uniform(0.1, 0.4)
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    norm = np.hypot(cx, cy)
    xs, ys = np.meshgrid((np.arange(w) - cx) / norm, (np.arange(h) - cy) / norm)
    scale = 1.0 + k1 * (xs * xs + ys * ys)
    # Scale so that the middle of the top edge still shows the top edge: a wider view.
    edge = 1.0 + k1 * (cy / norm) ** 2
    map_x = (xs * scale / edge * norm + cx).astype(np.float32)
    map_y = (ys * scale / edge * norm + cy).astype(np.float32)
    out = cv2.remap(rgb, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                    borderValue=(0, 0, 0))
    lab = cv2.remap(mask, map_x, map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT,
                    borderValue=IGNORE)
    return out, lab


def _motion_blur(rgb, rng):
    length = int(rng.integers(5, 22))
    angle = rng.uniform(0.0, np.pi)
    k = np.zeros((length, length), np.float32)
    c = (length - 1) / 2.0
    for t in np.linspace(-c, c, 2 * length):
        k[int(round(c + t * np.sin(angle))), int(round(c + t * np.cos(angle)))] = 1.0
    return cv2.filter2D(rgb, -1, k / k.sum(), borderType=cv2.BORDER_REFLECT)


def _linear(rgb):
    return (rgb.astype(np.float32) / 255.0) ** 2.2


def _display(lin):
    return (np.clip(lin, 0.0, 1.0) ** (1.0 / 2.2) * 255.0 + 0.5).astype(np.uint8)


def _exposure(rgb, rng):
    return _display(_linear(rgb) * 2.0 ** rng.uniform(-1.5, 1.5))


def _white_balance(rgb, rng):
    t, g = rng.uniform(-0.25, 0.25), rng.uniform(-0.08, 0.08)
    gains = np.array([1.0 + t, 1.0 + g, 1.0 - t], np.float32)
    return _display(_linear(rgb) * gains)


def _noise(rgb, rng):
    x = rgb.astype(np.float32)
    sigma = rng.uniform(2.0, 12.0)
    shot = np.sqrt(np.maximum(x, 0.0) / 255.0) * sigma
    x += rng.standard_normal(x.shape).astype(np.float32) * (0.5 * sigma + shot)
    return np.clip(x + 0.5, 0, 255).astype(np.uint8)


def _jpeg(rgb, rng):
    quality = int(rng.integers(10, 51))
    ok, buf = cv2.imencode('.jpg', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def apply_effects(rgb, mask, rng, effects=EFFECTS, p=P_EFFECT):
    """
    Return ``(rgb, mask, applied)``: the frame through some of ``effects``.

    ``rgb`` (H, W, 3) uint8 and ``mask`` (H, W) uint8 (class ids, 255 = ignore); ``rng`` a
    numpy Generator. Each effect is applied with probability ``p``, and one of them always.
    ``applied`` lists the names, in order.
    """
    chosen = [e for e in effects if rng.random() < p]
    if not chosen:
        chosen = [effects[int(rng.integers(len(effects)))]]
    rgb = np.ascontiguousarray(rgb)
    mask = np.ascontiguousarray(mask)
    for name in chosen:
        if name == 'wide_lens':
            rgb, mask = _wide_lens(rgb, mask, rng)
        else:
            rgb = {'motion_blur': _motion_blur, 'exposure': _exposure,
                   'white_balance': _white_balance, 'noise': _noise,
                   'jpeg': _jpeg}[name](rgb, rng)
    return rgb, mask, chosen


def with_effects(frames, seed, effects=EFFECTS):
    """Yield the ``(rgb, mask, ...)`` items of ``frames`` through :func:`apply_effects`."""
    for index, item in enumerate(frames):
        rng = np.random.default_rng([int(seed), index])
        rgb, mask, _ = apply_effects(item[0], item[1], rng, effects)
        yield (rgb, mask) + tuple(item[2:])
