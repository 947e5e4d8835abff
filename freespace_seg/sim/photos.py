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
The photo texture bank: real photos that the renderer maps onto walls, obstacles and pictures.

The JPEG files in ``textures/`` next to this module (crops of scikit-image's CC0 and
public-domain sample photos, made by ``tools/make_textures.py``; see ``textures/SOURCES.md``)
are loaded lazily, once per process, as linear RGB float32 mip pyramids. A ``photo``
:class:`~freespace_seg.sim.scene.Material` or a :class:`WallDecal` refers to a texture
by its index in :func:`texture_names` (sorted file names).
"""

import functools
import os

import cv2
import numpy as np

#: The folder of the texture bank (installed with the package).
TEXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'textures')


@functools.lru_cache(maxsize=1)
def texture_names():
    """Return the sorted file names of the texture bank (a tuple; empty when it is missing)."""
    if not os.path.isdir(TEXTURE_DIR):
        return ()
    return tuple(sorted(f for f in os.listdir(TEXTURE_DIR) if f.lower().endswith('.jpg')))


def load_texture(index):
    """Return texture ``index`` as sRGB uint8 (H, W, 3), read with OpenCV."""
    path = os.path.join(TEXTURE_DIR, texture_names()[index])
    image = cv2.imread(path, cv2.IMREAD_COLOR)
    if image is None:
        raise OSError(f'cannot read photo texture {path}')
    return np.ascontiguousarray(image[..., ::-1])


@functools.lru_cache(maxsize=None)
def texture_pyramid(index):
    """
    Return the mip pyramid of texture ``index``: linear RGB float32 (H, W, 3) levels.

    Level 0 is the photo itself, each next level half the size (cv2.pyrDown), down to about
    8 pixels on the short side.
    """
    srgb = load_texture(index).astype(np.float32) * np.float32(1.0 / 255.0)
    level = np.where(srgb <= 0.04045, srgb / 12.92,
                     ((srgb + 0.055) / 1.055) ** 2.4).astype(np.float32)
    levels = [np.ascontiguousarray(level)]
    while min(levels[-1].shape[:2]) >= 16:
        levels.append(cv2.pyrDown(levels[-1]))
    return tuple(levels)
