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
Hard floor looks: stone floors, pale rooms and raised tops in the floor's material.

Each draws from a side stream of its own (see :func:`make_scene`) and changes materials,
lights and exposure only: geometry and labels are the same with the factor on and off, and
a room the factor does not draw is the same as with it off. None of them acts in the
``shifted`` style (its frames stay as they are) or on a photo floor.
"""

from dataclasses import replace
import math

from freespace_seg.sim.scene.materials import _hsv, _kelvin_rgb
from freespace_seg.sim.scene.model import (_tuple3, Box, GLASS_LABEL, is_glass, Light, Material,
                                           STEP_LABEL, WALL_CLUTTER_LABEL)
import numpy as np


#: Salts of the side streams of the three factors.
_STONE_SALT = 0x570e5


_PALE_SALT = 0x9a1e


_TOPS_SALT = 0x70959


#: Floor kinds that ``stone_floors`` draws (default style only).
STONE_FLOOR_KINDS = ('marble', 'granite')


#: Share of the rooms without a photo floor that get a stone floor (15 % of all rooms).
STONE_P = 0.19


#: Share of pale rooms among the corridor-like rooms (the longer side at least 2.5 times the
#: shorter, which is at most 3.5 m) and among the others, of those without a photo floor:
#: about 15 % of all rooms.
PALE_CORRIDOR_P = 0.55


PALE_OTHER_P = 0.14


#: Share of rooms whose raised tops get the floor's material, and of their tops that do.
TOPS_P = 0.5


TOPS_PART_P = 0.8


def _applies(config, scene):
    """Check the common conditions: the default style, floor materials, no photo floor."""
    return (config.style == 'default' and config.floor_materials and scene.outline is not None
            and scene.appearance.floor.kind != 'photo')


def _swap_floor(scene, old, new):
    """Give ``scene`` the floor ``new``; obstacles of the floor's material ``old`` follow it."""
    same = replace(old, seed=0)
    out = []
    for o in scene.obstacles:
        if o.material == old:  # a step whose top is the floor itself
            o = replace(o, material=new)
        elif replace(o.material, seed=0) == same:  # a look-alike: another pattern phase
            o = replace(o, material=replace(new, seed=o.material.seed))
        out.append(o)
    scene.obstacles = out
    scene.appearance = replace(scene.appearance, floor=new)


def stone_floor_material(rng, config):
    """
    Draw a polished stone floor: veined marble (62 %) or speckled granite (38 %).

    40 % of them are tiles 0.3-1 m wide with thin joints, the rest one slab. Marble is light
    (white, cream, light grey with grey or golden veins) in 70 %, else dark with light veins;
    veins about 0.15-0.8 m apart. Granite is salt-and-pepper grey, pink, black or beige, grains
    2-8 mm. Both are glossy (specular 0.2-0.8) with ``config.specular``.
    """
    spec = config.specular
    kind = 'marble' if rng.random() < 0.62 else 'granite'
    tile = float(rng.uniform(0.3, 1.0)) if rng.random() < 0.4 else 0.0
    if tile:
        angle = float(rng.choice([0.0, math.pi / 2])) + float(rng.normal(0.0, 0.02))
        if rng.random() < 0.2:
            angle += math.pi / 4
    else:
        angle = float(rng.uniform(-math.pi, math.pi))
    off = (float(rng.uniform(0, 50)), float(rng.uniform(0, 50)))
    seed = int(rng.integers(1 << 30))
    if kind == 'marble':
        if rng.random() < 0.7:  # light marble
            base = _hsv(rng, (0.05, 0.15), (0.0, 0.1), (0.78, 0.96))
            veins = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.25, 0.6)) if rng.random() < 0.7 \
                else _hsv(rng, (0.06, 0.12), (0.3, 0.6), (0.35, 0.7))
        else:  # black, green or red-brown with light veins
            base = _hsv(rng, (0.0, 1.0), (0.0, 0.4), (0.06, 0.3))
            veins = _hsv(rng, (0.0, 1.0), (0.0, 0.08), (0.7, 0.95))
        return Material('marble', base, veins, scale=float(rng.uniform(0.15, 0.8)),
                        scale2=tile, angle=angle, variation=float(rng.uniform(0.03, 0.12)),
                        specular=float(rng.uniform(0.3, 0.8)) if spec else 0.0,
                        shininess=float(rng.uniform(80, 300)), offset=off, seed=seed)
    palette = rng.random()
    if palette < 0.5:  # salt and pepper
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.45, 0.75))
        specks = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.02, 0.15))
    elif palette < 0.7:  # pink or red
        base = _hsv(rng, (0.0, 0.06), (0.2, 0.45), (0.4, 0.7))
        specks = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.02, 0.15))
    elif palette < 0.9:  # black with light grains
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.04, 0.12))
        specks = _hsv(rng, (0.0, 1.0), (0.0, 0.08), (0.5, 0.85))
    else:  # beige
        base = _hsv(rng, (0.08, 0.13), (0.15, 0.35), (0.55, 0.8))
        specks = _hsv(rng, (0.05, 0.1), (0.2, 0.5), (0.1, 0.35))
    return Material('granite', base, specks, scale=float(rng.uniform(0.002, 0.008)),
                    scale2=tile, angle=angle, variation=float(rng.uniform(0.12, 0.35)),
                    specular=float(rng.uniform(0.2, 0.7)) if spec else 0.0,
                    shininess=float(rng.uniform(40, 200)), offset=off, seed=seed)


def _polish(rng, config, appearance, share, reflectivity):
    """Make the floor a mirror in ``share`` of the calls (if it is not one yet)."""
    draw, sharp = rng.random(), rng.random() < 0.5  # the same draws either way
    rough, value = float(rng.uniform(0.2, 0.6)), float(rng.uniform(*reflectivity))
    if draw >= share or not config.reflections or appearance.floor_reflectivity > 0.0:
        return appearance
    return replace(appearance, floor_reflectivity=value, floor_roughness=0.0 if sharp else rough)


def random_stone_floor(rng, scene, config):
    """
    Give :data:`STONE_P` of the rooms a polished stone floor (:func:`stone_floor_material`).

    ``rng`` is the room's stone side stream. Obstacles of the floor's material follow the new
    floor; half of the stone floors that are not glossy yet become a mirror (reflectivity
    0.1-0.4, with ``config.reflections``). Nothing with ``config.stone_floors`` off, in the
    ``shifted`` style, without floor materials or on a photo floor.
    """
    if rng.random() >= STONE_P or not config.stone_floors or not _applies(config, scene):
        return
    _swap_floor(scene, scene.appearance.floor, stone_floor_material(rng, config))
    scene.appearance = _polish(rng, config, scene.appearance, 0.5, (0.1, 0.4))


def corridor_like(scene):
    """Return True for a long narrow room: sides at least 2.5 to 1, the shorter <= 3.5 m."""
    x0, y0, x1, y1 = scene.bounds()
    short, long_ = sorted((x1 - x0, y1 - y0))
    return long_ >= 2.5 * short and short <= 3.5


#: How far (a factor range) a pale room darkens the second colour of its floor, by kind:
#: little, so that the floor stays light and of low contrast.
_PALE_SECOND = {'wood': (0.75, 0.9), 'tile': (0.8, 1.0), 'checker': (0.6, 0.8),
                'noise': (0.85, 1.0), 'marble': (0.5, 0.8), 'granite': (0.45, 0.65)}


def pale_floor(rng, floor):
    """Return ``floor`` recoloured light: its pattern kept, pale and of low contrast."""
    sat = (0.12, 0.35) if floor.kind == 'wood' else (0.0, 0.1)
    hue = (0.07, 0.12) if floor.kind == 'wood' else (0.0, 1.0)
    base = _hsv(rng, hue, sat, (0.72, 0.93))
    low, high = _PALE_SECOND.get(floor.kind, (1.0, 1.0))
    second = _tuple3(np.clip(np.asarray(base) * rng.uniform(low, high), 0.0, 1.0))
    return replace(floor, color=base, color2=second)


def random_pale_room(rng, scene, config):
    """
    Make a share of the rooms pale: white walls on a light floor, bright lights.

    :data:`PALE_CORRIDOR_P` of the corridor-like rooms (:func:`corridor_like`) and
    :data:`PALE_OTHER_P` of the others. Walls become white or off-white (plain or a faint
    noise), the baseboard white, light grey or none, the ceiling white; the floor keeps its
    pattern, recoloured light (:func:`pale_floor`; objects of its material follow) and
    glossy (specular 0.3-0.7); 70 % of them become a mirror (reflectivity 0.2-0.5, with
    ``config.reflections``). With ``config.lighting``, 2-5 bright lights (1-2 each) hang on
    the room's long axis, neutral or cool white, with ambient light 0.35-0.6. The camera
    meters for the bright room (``Appearance.exposure`` 1.4-2.2). Nothing with
    ``config.pale_rooms`` or ``config.wall_textures`` off and where :func:`_applies` fails.
    """
    draw = rng.random()
    if not config.pale_rooms or not config.wall_textures or not _applies(config, scene):
        return
    if draw >= (PALE_CORRIDOR_P if corridor_like(scene) else PALE_OTHER_P):
        return
    spec = config.specular
    white = _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.82, 0.97))
    noisy = rng.random() < 0.3
    wall = Material('noise' if noisy else 'plain', white,
                    _tuple3(np.asarray(white) * rng.uniform(0.9, 1.0)),
                    scale=float(rng.uniform(0.005, 0.02)), scale2=float(rng.uniform(0.3, 1.0)),
                    variation=float(rng.uniform(0.01, 0.04)), seed=int(rng.integers(1 << 30)),
                    specular=float(rng.uniform(0.0, 0.15)) if spec else 0.0)
    r = rng.random()
    if r < 0.6:
        board = Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.04), (0.8, 0.97)),
                         variation=0.01, specular=0.1 if spec else 0.0, shininess=20.0)
    else:
        board = Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.55, 0.8)),
                         variation=0.01, specular=0.1 if spec else 0.0, shininess=20.0)
    board_height = 0.0 if r >= 0.85 else float(rng.uniform(0.05, 0.12))
    old = scene.appearance.floor
    floor = pale_floor(rng, old)
    if spec:
        floor = replace(floor, specular=max(floor.specular, float(rng.uniform(0.3, 0.7))),
                        shininess=float(rng.uniform(60, 200)))
    _swap_floor(scene, old, floor)
    app = replace(scene.appearance, wall=wall, baseboard=board, baseboard_height=board_height,
                  ceiling_color=_hsv(rng, (0.0, 1.0), (0.0, 0.03), (0.85, 0.97)),
                  exposure=float(rng.uniform(1.4, 2.2)))
    app = _polish(rng, config, app, 0.7, (0.2, 0.5))
    if config.lighting:
        x0, y0, x1, y1 = scene.bounds()
        along_x = x1 - x0 >= y1 - y0
        length = max(x1 - x0, y1 - y0)
        n = int(np.clip(round(length / 2.5), 2, 5))
        z = scene.wall_height - 0.05
        lights = []
        for k in range(n):
            f = (k + 0.5) / n
            pos = (x0 + f * (x1 - x0), (y0 + y1) / 2.0) if along_x \
                else ((x0 + x1) / 2.0, y0 + f * (y1 - y0))
            color = _kelvin_rgb(rng.uniform(4000, 6500)) if config.color_temperature \
                else (1.0, 1.0, 1.0)
            radius = float(rng.uniform(0.1, 0.4)) if config.shadows else 0.0
            lights.append(Light((float(pos[0]), float(pos[1]), float(z)),
                                float(rng.uniform(1.0, 2.0)), color, radius))
        app = replace(app, lights=tuple(lights), ambient=float(rng.uniform(0.35, 0.6)))
    scene.appearance = app


def is_raised_top(obj):
    """
    Return True for a raised surface whose top a camera sees like a floor.

    Tabletops and chair seats (and backs), boxes up to 1.2 m high (benches, beds, sofa
    seats, low cabinets), the boxes of low clutter (books, shoe boxes, toys: seen from
    above at the robot's height), the standing parts of steps and platforms and shelf
    boards. Not glass, cables, bins or poles.
    """
    if is_glass(obj) or obj.label == GLASS_LABEL:
        return False
    if obj.label == STEP_LABEL:
        return obj.standing
    if obj.label in ('table', 'chair'):
        return not obj.standing
    if obj.label == 'box':
        return obj.height <= 1.2
    if obj.label == 'low':
        return isinstance(obj, Box)
    if obj.label == WALL_CLUTTER_LABEL:
        return (isinstance(obj, Box) and not obj.standing and obj.height - obj.bottom <= 0.05
                and min(obj.size_x, obj.size_y) >= 0.1)
    return False


def floorlike_material(rng, floor):
    """Return the floor's material for a raised top: its own phase, turned 0.2-2.9 rad."""
    if floor.kind == 'photo':  # the seed is the photo's index: keep it
        seed = floor.seed
    else:
        seed = int(rng.integers(1 << 30))
    return replace(floor, seed=seed, angle=float(floor.angle + rng.uniform(0.2, math.pi - 0.2)),
                   offset=(float(rng.uniform(0, 10)), float(rng.uniform(0, 10))))


def random_floorlike_tops(rng, scene, config):
    """
    In :data:`TOPS_P` of the rooms, give raised tops (:func:`is_raised_top`) the floor's look.

    Each top's material changes in :data:`TOPS_PART_P` (parts of one material together): a
    step or platform to the floor itself (its tread continues the floor's pattern), anything
    else to :func:`floorlike_material`, the floor's colours, pattern and gloss in a phase and
    direction of its own. Only geometry and shading tell them from the floor; they stay
    blocked. Runs after the floor is final (photo, stone or pale). Nothing with
    ``config.floorlike_tops`` or ``config.object_textures`` off and in the ``shifted`` style.
    """
    if (rng.random() >= TOPS_P or not config.floorlike_tops or not config.object_textures
            or config.style != 'default' or scene.outline is None):
        return
    floor = scene.appearance.floor
    chosen = {}
    out = []
    for o in scene.obstacles:
        if not is_raised_top(o):
            out.append(o)
            continue
        draw = rng.random()
        new = floorlike_material(rng, floor)
        if o.material not in chosen:
            chosen[o.material] = draw < TOPS_PART_P
        if chosen[o.material] and o.material != floor:
            o = replace(o, material=floor if o.label == STEP_LABEL else new)
        out.append(o)
    scene.obstacles = out
