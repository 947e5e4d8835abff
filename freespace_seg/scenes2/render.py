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
One frame of the second generator.

The exact label at the output size, and an image shaded at an internal size (half to full)
and scaled up.
"""

import cv2
import numpy as np

from .effects import expose
from .geometry import cast, FLOOR
from .shading import reflection, shade


def label(scene, origin, dirs, valid, hits):
    """
    Return the free-space mask, (H, W) uint8, of the rays ``dirs`` from ``origin``.

    1 (free) where the first hit is the floor plane, inside the rooms and not under or inside
    an obstacle's footprint; 0 (blocked) everywhere else. Rugs lie on the floor, so they are
    floor; mirror images on glossy floors do not enter (only the first hit counts).
    """
    t, kind, _ = hits
    h, w = valid.shape
    free = np.zeros(h * w, dtype=bool)
    sel = np.flatnonzero((kind == FLOOR) & valid.reshape(-1))
    p = origin[None, :] + dirs.reshape(-1, 3)[sel] * t[sel, None]
    x, y = p[:, 0].astype(np.float64), p[:, 1].astype(np.float64)
    free[sel] = scene.in_region(x, y) & ~scene.in_footprint(x, y)
    return free.reshape(h, w).astype(np.uint8)


def render_mask(scene, camera, width, height):
    """Return the label (H, W) uint8 of ``camera`` in ``scene`` at ``width`` x ``height``."""
    dirs, valid = camera.rays(width, height)
    origin = camera.position.astype(np.float32)
    hits = cast(scene, origin, dirs.reshape(-1, 3))
    return label(scene, origin, dirs, valid, hits)


def render_linear(scene, camera, rng, width, height, reflections=True):
    """Return linear radiance (H, W, 3) float32 and the lens validity (H, W) bool."""
    dirs, valid = camera.rays(width, height)
    origin = camera.position.astype(np.float32)
    d = dirs.reshape(-1, 3)
    pixel_angle = 1.0 / camera.focal(width)
    hits = cast(scene, origin, d)
    col, (_, _, mat) = shade(scene, origin, d, hits, rng, pixel_angle, shape=(height, width))
    if reflections:
        weight, mirror = reflection(scene, origin, d, mat, hits[1], rng, pixel_angle)
        if weight.any():
            rough = float(scene.materials[scene.floor_mat].get('rough', 0.0)) * width / 480.0
            if rough > 0.3:
                on = (weight > 0).astype(np.float32).reshape(height, width)
                img = mirror.reshape(height, width, 3) * on[:, :, None]
                img = cv2.GaussianBlur(img, (0, 0), rough)
                norm = cv2.GaussianBlur(on, (0, 0), rough)
                mirror = (img / np.maximum(norm, 1e-3)[:, :, None]).reshape(-1, 3)
            col = col * (1.0 - weight)[:, None] + mirror * weight[:, None]
    col[~valid.reshape(-1)] = 0.0
    return col.reshape(height, width, 3), valid


def render_frame(scene, camera, rng, width=480, height=270, scale=None):
    """
    Return (rgb (H, W, 3) uint8, mask (H, W) uint8) of one frame.

    The image is shaded at ``scale`` times the output size (drawn from 0.5-1.0 when None)
    and resized; the mask is computed at the output size from the geometry.
    """
    if scale is None:
        scale = float(rng.choice([0.5, 0.625, 0.75, 1.0]))
    w2, h2 = max(8, int(round(width * scale))), max(8, int(round(height * scale)))
    linear, _ = render_linear(scene, camera, rng, w2, h2)
    if (w2, h2) != (width, height):
        linear = cv2.resize(linear, (width, height), interpolation=cv2.INTER_LINEAR)
    _, valid = camera.rays(width, height)
    rgb = expose(rng, linear, valid)
    return rgb, render_mask(scene, camera, width, height)
