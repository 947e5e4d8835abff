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

"""Photo textures on walls, objects, pictures and the floor."""

from dataclasses import replace
import math

from freespace_seg.sim.photos import texture_names
from freespace_seg.sim.scene.model import _tuple3, GLASS_LABEL, is_glass, Material
import numpy as np


# --- photo textures ---------------------------------------------------------------------

#: Salt of the side stream of the photo texture draws.
_PHOTO_SALT = 0x9407e


#: How often the walls of a room, an obstacle material and a poster or picture get a photo.
PHOTO_WALL_P = 0.3


PHOTO_OBJECT_P = 0.35


PHOTO_PICTURE_P = 0.5


#: Salt of the side stream of the floor photo draws, and how often a room gets a photo floor.
_FLOOR_PHOTO_SALT = 0xf1009


PHOTO_FLOOR_P = 0.2


def _photo_rng(key, part, values=()):
    """Return a generator for ``part`` of a room (``key`` from its side stream) and ``values``."""
    return np.random.default_rng([_PHOTO_SALT, part] + list(key) + [int(v) for v in values])


def _material_key(mat):
    """Non-negative integers that tell materials apart (their seed, colours and scales)."""
    numbers = tuple(mat.color) + tuple(mat.color2) + (mat.scale, mat.scale2, mat.variation)
    return [int(mat.seed) & 0xFFFFFFFF] + [int(round(abs(float(c)) * 1e6)) for c in numbers]


#: The texture-like photos of the bank (file stems): what a floor photo may be with the
#: factor ``object_floor_photos`` off.
TEXTURE_LIKE_PHOTOS = ('brick', 'chelsea_fur', 'coffee_wood', 'grass', 'gravel')


def texture_like_indices():
    """Return the indices into :func:`texture_names` of the :data:`TEXTURE_LIKE_PHOTOS`."""
    return tuple(i for i, name in enumerate(texture_names())
                 if name.rsplit('.', 1)[0] in TEXTURE_LIKE_PHOTOS)


def photo_material(rng, like, scale=(0.3, 1.5), upright=False, choices=None):
    """
    Draw a ``photo`` material in place of ``like`` (whose specularity it keeps).

    A random texture of the bank (or of the bank indices ``choices``), ``scale`` metres per
    repeat (uniform range), a random offset, a rotation (a small tilt when ``upright``, else
    any quarter turn plus a tilt) and a colour gain 0.6-1.1 with a slight tint.
    """
    if choices:
        index = int(choices[int(rng.integers(len(choices)))])
    else:
        index = int(rng.integers(len(texture_names())))
    size = float(rng.uniform(*scale))
    angle = float(rng.normal(0.0, 0.03))
    if not upright:
        angle += float(rng.integers(4)) * math.pi / 2.0
    gain = float(rng.uniform(0.6, 1.1))
    tint = np.clip(gain * np.exp(rng.normal(0.0, 0.08, 3)), 0.0, 1.5)
    offset = (float(rng.uniform(0.0, 10.0)), float(rng.uniform(0.0, 10.0)))
    return Material('photo', _tuple3(tint), tuple(like.color), scale=size, angle=angle,
                    variation=0.0, specular=like.specular, shininess=like.shininess,
                    offset=offset, seed=index)


def random_photo_textures(key, scene, config, floor):
    """
    Put photos of the texture bank on the walls, obstacles and pictures of ``scene``.

    ``key`` (integers from a side stream of the room's generator) seeds every draw, each
    from the thing it is about (the walls, an obstacle's material, a picture's seed), so a
    thing gets the same photo whatever else the room holds. Walls become a tiled photo in
    :data:`PHOTO_WALL_P` of the rooms (with ``config.wall_textures``, in the ``default``
    style only), an obstacle material in :data:`PHOTO_OBJECT_P` (with ``config.object_textures``;
    never glass, its frame or the floor's own material; parts of one material change
    together) and posters and pictures in :data:`PHOTO_PICTURE_P`. Geometry and labels do not
    change. Nothing when ``config.photo_textures`` is off or the bank is empty.
    """
    if not config.photo_textures or not texture_names():
        return
    gen = _photo_rng(key, 0)
    if gen.random() < PHOTO_WALL_P and config.wall_textures and config.style == 'default':
        wall = photo_material(gen, scene.appearance.wall, (0.5, 1.5), upright=True)
        scene.appearance = replace(scene.appearance, wall=wall)
    if config.object_textures:
        same_as_floor = replace(floor, seed=0)
        chosen = {}
        out = []
        for o in scene.obstacles:
            mat = o.material
            if (is_glass(o) or o.label == GLASS_LABEL or mat.kind == 'photo'
                    or replace(mat, seed=0) == same_as_floor):
                out.append(o)
                continue
            if mat not in chosen:
                gen = _photo_rng(key, 1, _material_key(mat))
                chosen[mat] = photo_material(gen, mat) if gen.random() < PHOTO_OBJECT_P \
                    else mat
            out.append(replace(o, material=chosen[mat]) if chosen[mat] is not mat else o)
        scene.obstacles = out
    decals = []
    for d in scene.wall_decals:
        if d.kind in ('poster', 'picture'):
            gen = _photo_rng(key, 2, [d.seed])
            if gen.random() < PHOTO_PICTURE_P:
                d = replace(d, photo=int(gen.integers(len(texture_names()))))
        decals.append(d)
    scene.wall_decals = decals


def random_floor_photo(rng, scene, config, floor):
    """
    Make the floor of ``scene`` a tiled photo of the texture bank in :data:`PHOTO_FLOOR_P`.

    ``rng`` is the room's floor-photo side stream. The photo (any rotation, 0.5-2 m per
    repeat) keeps the floor's specularity; obstacles of the floor's own material (step tops
    and look-alike objects, ``floor`` before the photo) follow it, so they still look like the
    floor. Rugs, mats and floor markings stay. The floor stays free: only the look changes.
    With ``config.object_floor_photos`` off the photo is one of the texture-like ones
    (:data:`TEXTURE_LIKE_PHOTOS`); the same rooms get a photo floor either way.
    Nothing with ``config.floor_photos`` or ``config.floor_materials`` off, outside the
    ``default`` style or when the bank is empty.
    """
    if (not config.floor_photos or not config.floor_materials or config.style != 'default'
            or not texture_names() or rng.random() >= PHOTO_FLOOR_P):
        return
    choices = None if config.object_floor_photos else texture_like_indices()
    new_floor = photo_material(rng, scene.appearance.floor, (0.5, 2.0), choices=choices)
    scene.appearance = replace(scene.appearance, floor=new_floor)
    same = replace(floor, seed=0)
    out = []
    for o in scene.obstacles:
        if o.material == floor:
            o = replace(o, material=new_floor)
        elif replace(o.material, seed=0) == same:  # the same floor, another pattern phase
            shift = (float(rng.uniform(0.0, 10.0)), float(rng.uniform(0.0, 10.0)))
            o = replace(o, material=replace(new_floor, offset=shift))
        out.append(o)
    scene.obstacles = out
