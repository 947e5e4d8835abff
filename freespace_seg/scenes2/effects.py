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
Camera effects on a linear radiance image.

Auto exposure with a random bias, a soft highlight shoulder, white balance error, vignetting,
defocus blur, sensor noise (shot and read), sRGB gamma and JPEG compression.
"""

import cv2
import numpy as np


def expose(rng, linear, valid):
    """Return an sRGB uint8 image (H, W, 3) from linear radiance (H, W, 3)."""
    h, w = linear.shape[:2]
    lum = linear @ np.float32([0.2126, 0.7152, 0.0722])
    level = np.percentile(lum[valid], 55) if valid.any() else 1.0
    exposure = rng.uniform(0.18, 0.32) * 2.0 ** rng.normal(0.0, 0.45) / max(level, 1e-6)
    img = linear * np.float32(exposure)
    img = img * np.float32(np.exp(rng.normal(0.0, 0.06, 3)))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - (w - 1) / 2) ** 2 + (yy - (h - 1) / 2) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    img *= (1.0 - rng.uniform(0.0, 0.45) * r2 ** rng.uniform(1.0, 2.0))[:, :, None]
    if rng.random() < 0.3:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 1.2))
    shoulder = rng.uniform(0.0, 0.35)
    img = np.maximum(img, 0.0)
    img = img / (1.0 + shoulder * img)
    shot = rng.uniform(0.0, 0.02)
    read = rng.uniform(0.001, 0.012)
    noise = rng.normal(0.0, 1.0, img.shape).astype(np.float32)
    img = img + noise * np.sqrt(shot * shot * img + read * read)
    img = np.clip(img, 0.0, 1.0) ** np.float32(1.0 / 2.2)
    img[~valid] = 0.0
    out = np.round(img * 255.0).astype(np.uint8)
    if rng.random() < 0.8:
        quality = int(rng.integers(35, 96))
        ok, buf = cv2.imencode('.jpg', out[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        out = cv2.imdecode(buf, cv2.IMREAD_COLOR)[:, :, ::-1]
    return np.ascontiguousarray(out)
