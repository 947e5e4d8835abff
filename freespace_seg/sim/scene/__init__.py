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
Synthetic indoor rooms: primitives, seeded room generation and exact top-down truth.

A :class:`Scene` lives in a WORLD frame: x and y on the floor, z up, the floor is the plane
z = 0. The room is a simple polygon (rectangular or L-shaped) of vertical walls from the floor
up to ``wall_height`` (with a ceiling there, or open above); ``outline=None`` gives an endless
floor without walls. Obstacles are :class:`Box` (oriented about z) and :class:`Cylinder`
(vertical) primitives. A primitive whose ``bottom`` is 0 stands on the floor and has a
footprint; a raised one (a tabletop, a chair seat) has none, and the floor under it stays free.
A glass pane is a thin standing :class:`Box` of a ``glass`` :class:`Material`; the renderer
shows what lies behind it (see :func:`glass_partition`, which also builds its frame). Steps,
curbs and raised platforms are standing boxes labelled :data:`STEP_LABEL` (see
:func:`random_steps`). Things on the walls are either flat :class:`WallDecal` (posters,
pictures, whiteboards, switches, sockets: part of the wall) or raised boxes labelled
:data:`WALL_CLUTTER_LABEL` (radiators, shelves, screens; see :func:`random_wall_clutter`).

Ground-truth rule: a pixel is free (1) iff its ray first hits the floor plane (z = 0) inside
the room at a point not covered by any obstacle footprint. Rugs, mats and floor markings
(:class:`Decal`) are floor and thus free, and so is a glossy floor that mirrors walls and
objects (the reflection of an obstacle is still free floor). Everything else (walls, doors,
obstacles, glass panes and their frames, rails and bands although the camera sees through the
glass, anything above the floor, the ceiling or the sky) is blocked (0). The height threshold
is 0: a step or platform, however low, is blocked, its top too (even when it is made of the
floor's own material: it is not at z = 0), and so is its footprint. Things on the walls are
blocked (flat ones are wall; radiators, shelves and screens are above the floor); they have
a footprint only where they reach the floor (the feet and pipes of a floor-standing
radiator), so the floor under a wall-hung radiator or a shelf is free where it is seen, like
the floor under a tabletop.
:meth:`Scene.blocked_top_down` is the same rule on the floor: True outside the room, in the
walls and on footprints (glass panes and their frames, steps and platforms included).
"""

import math

from freespace_seg.sim.randomization import RandomizationConfig, SHIFTED_STYLES
from freespace_seg.sim.scene.furniture import (_Placer, _random_decals, _random_doors,
                                               _random_group, _random_outline)
from freespace_seg.sim.scene.glass import (_GLASS_SALT, _REFLECTION_SALT, glass_partition,
                                           random_floor_reflection, random_glass)
from freespace_seg.sim.scene.materials import (_restyle, ONE_FLOOR, random_appearance,
                                               random_floor_material, SHIFTED_FLOOR_KINDS,
                                               SHIFTED_WALL_KINDS)
from freespace_seg.sim.scene.model import (_side_rng, Appearance, Box, Cylinder, Decal,
                                           DEFAULT_FLOOR, DEFAULT_GLASS, DEFAULT_OBJECT,
                                           DEFAULT_WALL, Door, FOOTPRINT_EPS, GLASS_LABEL,
                                           is_glass, Light, Material, Scene, STEP_LABEL,
                                           WALL_CLUTTER_LABEL, WallDecal)
from freespace_seg.sim.scene.photo_textures import (_FLOOR_PHOTO_SALT, _PHOTO_SALT,
                                                    random_floor_photo, random_photo_textures)
from freespace_seg.sim.scene.steps import _STEPS_SALT, keeps_passages, random_steps
from freespace_seg.sim.scene.surfaces import (_PALE_SALT, _STONE_SALT, _TOPS_SALT,
                                              random_floorlike_tops, random_pale_room,
                                              random_stone_floor, STONE_FLOOR_KINDS)
from freespace_seg.sim.scene.wall_clutter import _WALL_CLUTTER_SALT, random_wall_clutter

__all__ = [
    'Appearance', 'Box', 'Cylinder', 'Decal', 'DEFAULT_FLOOR', 'DEFAULT_GLASS',
    'DEFAULT_OBJECT', 'DEFAULT_WALL', 'Door', 'FOOTPRINT_EPS', 'GLASS_LABEL',
    'glass_partition', 'is_glass', 'keeps_passages', 'Light', 'make_scene', 'Material',
    'ONE_FLOOR', 'Scene', 'SHIFTED_FLOOR_KINDS', 'SHIFTED_WALL_KINDS', 'STEP_LABEL',
    'STONE_FLOOR_KINDS', 'WALL_CLUTTER_LABEL', 'WallDecal'
]


def make_scene(rng, randomization=None):
    """
    Make a random room seeded by ``rng`` (a numpy Generator), in the WORLD frame.

    ``randomization`` is a :class:`RandomizationConfig` (default: everything on). The room
    outline is centred near the origin; obstacles are placed inside it.
    """
    config = randomization if randomization is not None else RandomizationConfig()
    outline = _random_outline(rng, config)
    wall_height = float(rng.uniform(2.4, 3.2))
    floor = random_floor_material(rng, config)
    appearance = random_appearance(rng, config, outline, wall_height, floor)
    # Photo textures draw from a side stream taken here, where the generator does not depend
    # on the factors drawn later (steps, glass, clutter move the obstacle draws).
    photo_key = [int(v) for v in _side_rng(rng, _PHOTO_SALT).integers(0, 1 << 32, 4)] \
        if config.photo_textures else None
    floor_photo_rng = _side_rng(rng, _FLOOR_PHOTO_SALT)
    # So do stone floors, pale rooms and floor-like tops, each from a stream of its own.
    stone_rng, pale_rng, tops_rng = (_side_rng(rng, salt)
                                     for salt in (_STONE_SALT, _PALE_SALT, _TOPS_SALT))
    # Reflections and glass draw from side streams: the rest of the room stays what it is
    # without them (and a room that gets neither is the same as with both switched off).
    if config.reflections:
        appearance = random_floor_reflection(_side_rng(rng, _REFLECTION_SALT), config,
                                             appearance)
    scene = Scene(outline=outline, wall_height=wall_height, ceiling=True, appearance=appearance)
    if config.doors:
        scene.doors = _random_doors(rng, scene)
    if config.decals:
        scene.decals = _random_decals(rng, scene, config, floor)
    if config.glass:
        random_glass(_side_rng(rng, _GLASS_SALT), scene, config)
    # Steps and wall clutter too: a room that gets none is the same as with them off.
    if config.steps:
        random_steps(_side_rng(rng, _STEPS_SALT), scene, config, floor)
    if config.obstacles and config.max_obstacles > 0:
        area = scene.area()
        if rng.random() < 0.08:
            n = 0
        else:
            n = int(min(config.max_obstacles, rng.poisson(area * rng.uniform(0.1, 0.5)) + 1))
        placer = _Placer(rng, scene)
        covered = 0.0
        for _ in range(n):
            group = _random_group(rng, placer, config, wall_height, floor)
            if not group or not placer.fits(group):
                continue
            g_area = sum(o.size_x * o.size_y if isinstance(o, Box) else math.pi * o.radius ** 2
                         for o in group if o.standing)
            if covered + g_area > 0.4 * area:
                continue
            covered += g_area
            scene.obstacles.extend(group)
    if config.wall_clutter:
        random_wall_clutter(_side_rng(rng, _WALL_CLUTTER_SALT), scene, config)
    if photo_key is not None:
        random_photo_textures(photo_key, scene, config, floor)
    random_floor_photo(floor_photo_rng, scene, config, floor)
    # The floor first (stone, then pale), then the tops that take the final floor's look.
    random_stone_floor(stone_rng, scene, config)
    random_pale_room(pale_rng, scene, config)
    random_floorlike_tops(tops_rng, scene, config)
    if config.style in SHIFTED_STYLES:
        _restyle(rng, scene, config, floor)
    return scene
