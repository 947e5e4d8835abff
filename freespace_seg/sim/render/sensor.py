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

"""The camera sensor: exposure, gamma, vignetting, noise, blur and JPEG."""

import functools

import cv2
import numpy as np


# --- camera model ----------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _gamma_lut(gamma_x100):
    x = np.linspace(0.0, 1.0, 4096, dtype=np.float64)
    srgb = np.where(x <= 0.0031308, 12.92 * x, 1.055 * x ** (1.0 / 2.4) - 0.055)
    g = gamma_x100 / 100.0
    return np.clip(np.round(255.0 * srgb ** g), 0, 255).astype(np.uint8)


@functools.lru_cache(maxsize=4)
def _vignette(h, w):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    return ((xx - w / 2.0) ** 2 + (yy - h / 2.0) ** 2) / ((w / 2.0) ** 2 + (h / 2.0) ** 2)


@functools.lru_cache(maxsize=1)
def _noise_bank():
    """Return standard normal float32 numbers to cut per-frame sensor noise from (fast)."""
    return np.random.default_rng(54321).standard_normal(1 << 22, dtype=np.float32)


def _sensor_noise(rng, shape):
    size = int(np.prod(shape))
    bank = _noise_bank()
    if size > bank.size // 2:
        return rng.standard_normal(shape, dtype=np.float32)
    start = int(rng.integers(0, bank.size - size))
    out = bank[start:start + size].reshape(shape)
    return out if rng.random() < 0.5 else -out


def _camera(rad, scene, rng, config):
    """Turn planar linear radiance (3, H, W) into an 8-bit RGB (H, W, 3) image."""
    _, h, w = rad.shape
    sample = rad[:, ::4, ::4]
    lum = float(np.mean(0.2126 * sample[0] + 0.7152 * sample[1] + 0.0722 * sample[2]))
    target = 0.18 * float(scene.appearance.exposure)
    gamma = 1.0
    if rng is not None and config.exposure:
        target *= 2.0 ** float(rng.uniform(-1.2, 0.8))
        gamma = float(rng.uniform(0.8, 1.2))
    gain = np.full(3, target / max(lum, 1e-6))
    lights = scene.appearance.lights
    if lights:  # the camera white-balances to the lights' mean colour
        mean = np.mean([np.asarray(li.color) * li.intensity for li in lights], axis=0)
        mean = np.maximum(mean / max(float(np.mean(mean)), 1e-6), 0.05)
        gain /= mean * float(np.mean(1.0 / mean))
    if rng is not None and config.color_temperature:
        gain *= np.exp([rng.normal(0, 0.08), 0.0, rng.normal(0, 0.08)])
    planes = [rad[c] * np.float32(gain[c]) for c in range(3)]
    if rng is not None and config.vignetting:
        vig = 1.0 - np.float32(rng.uniform(0.0, 0.45)) * _vignette(h, w)
        planes = [p * vig for p in planes]
    img = cv2.merge(planes)
    if rng is not None and config.blur:
        choice = rng.random()
        if choice < 0.35:
            img = cv2.GaussianBlur(img, (0, 0), float(rng.uniform(0.3, 1.2)))
        elif choice < 0.5:
            length = int(rng.integers(3, 10))
            kernel = np.zeros((length, length), np.float32)
            kernel[length // 2, :] = 1.0
            rot = cv2.getRotationMatrix2D(((length - 1) / 2.0, (length - 1) / 2.0),
                                          float(rng.uniform(0, 180)), 1.0)
            kernel = cv2.warpAffine(kernel, rot, (length, length))
            kernel /= max(float(kernel.sum()), 1e-6)
            img = cv2.filter2D(img, -1, kernel)
    if rng is not None and config.noise:
        shot = float(rng.uniform(0.0, 4e-4))
        read = float(rng.uniform(0.0, 0.004))
        sigma = np.sqrt(np.maximum(img, 0.0) * np.float32(shot) + np.float32(read * read))
        img = img + sigma * _sensor_noise(rng, img.shape)
    idx = np.clip(img * 4095.0 + 0.5, 0, 4095).astype(np.uint16)
    out = _gamma_lut(int(round(gamma * 100)))[idx]
    if rng is not None and config.compression and rng.random() < 0.5:
        quality = int(rng.integers(35, 95))
        ok, buf = cv2.imencode('.jpg', out[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        if ok:
            out = cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1]
    return np.ascontiguousarray(out)
