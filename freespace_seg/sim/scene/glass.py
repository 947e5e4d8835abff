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

"""Glass partitions and floor reflections."""

from dataclasses import replace
import math

from freespace_seg.sim.scene.materials import _hsv, _jitter_color
from freespace_seg.sim.scene.model import (Box, DEFAULT_GLASS, DEFAULT_GLASS_FRAME,
                                           DEFAULT_OBJECT, GLASS_LABEL, Material)
import numpy as np


def glass_partition(start, end, height, panes=1, glass=DEFAULT_GLASS, frame=DEFAULT_GLASS_FRAME,
                    thickness=0.01, profile=0.05, depth=0.05, bottom_rail=0.08, top_rail=0.05,
                    stiles=True, band=None, handle=False):
    """
    Return the Box parts of a straight glass partition standing on the floor.

    The pane (``thickness`` thick, made of ``glass``) runs from ``start`` to ``end`` (x, y)
    and is ``height`` high. Its frame, of material ``frame`` and ``depth`` deep across the
    pane, has a bottom rail (a floor channel or a kick plate) ``bottom_rail`` high and a top
    rail ``top_rail`` high (0: none); with ``stiles``, vertical members ``profile`` wide at
    both ends and between the ``panes`` equal panes. ``band`` = (centre height, band height,
    material) adds an opaque frosted band across the glass; ``handle`` a horizontal push bar
    at 1 m on the middle pane. Every part is labelled :data:`GLASS_LABEL`; the pane, the
    bottom rail and the stiles stand on the floor (their footprints are blocked).
    """
    x0, y0 = (float(v) for v in start)
    x1, y1 = (float(v) for v in end)
    length = math.hypot(x1 - x0, y1 - y0)
    if length <= 0.0 or height <= 0.0:
        raise ValueError('a glass partition needs a positive length and height')
    yaw = math.atan2(y1 - y0, x1 - x0)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    height = float(height)

    def at(s):
        return x0 + ux * s, y0 + uy * s

    parts = [Box(cx, cy, length, thickness, height, yaw, 0.0, glass)]
    if bottom_rail > 0.0:
        parts.append(Box(cx, cy, length, depth, min(bottom_rail, height), yaw, 0.0, frame))
    if 0.0 < top_rail < height:
        parts.append(Box(cx, cy, length, depth, height, yaw, height - top_rail, frame))
    if stiles and profile > 0.0:
        panes = max(1, int(panes))
        stations = [profile / 2.0] + [k * length / panes for k in range(1, panes)]
        stations.append(length - profile / 2.0)
        for st in stations:
            parts.append(Box(*at(st), profile, depth, height, yaw, 0.0, frame))
    if band is not None:
        zc, bh, mat = band
        lo, hi = max(float(zc) - bh / 2.0, 0.01), min(float(zc) + bh / 2.0, height)
        if hi > lo:
            parts.append(Box(cx, cy, length, thickness + 0.002, hi, yaw, lo, mat))
    if handle and height > 1.2:
        pane_w = length / max(1, int(panes))
        mid = (max(1, int(panes)) // 2 + 0.5) * pane_w
        parts.append(Box(*at(mid), 0.6 * pane_w, depth + 0.08, 1.02, yaw, 0.98, frame))
    return [replace(p, label=GLASS_LABEL) for p in parts]


#: Salts of the side streams (see :func:`_side_rng`) of the reflection and glass draws.
_REFLECTION_SALT = 0x2ef1ec7


_GLASS_SALT = 0x6a55


def random_floor_reflection(rng, config, appearance):
    """
    Make the floor of ``appearance`` a glossy mirror in 40 % of the rooms.

    Draws the reflectivity (0.1-0.5) and, for half of those floors, a roughness (0.3-1) that
    blurs the reflection; returns ``appearance`` unchanged when ``config.reflections`` is off
    or the room is not drawn glossy.
    """
    if not config.reflections or rng.random() >= 0.4:
        return appearance
    reflectivity = float(rng.uniform(0.1, 0.5))
    roughness = 0.0 if rng.random() < 0.5 else float(rng.uniform(0.3, 1.0))
    return replace(appearance, floor_reflectivity=reflectivity, floor_roughness=roughness)


def random_glass_material(rng, config):
    """Draw a glass pane: clear, blue-grey or bronze tint, a faint streaky sheen."""
    r = rng.random()
    if r < 0.6:  # clear float glass, a little green or blue
        tint = _hsv(rng, (0.35, 0.55), (0.02, 0.12), (0.88, 0.97))
    elif r < 0.85:
        tint = _hsv(rng, (0.5, 0.62), (0.08, 0.25), (0.75, 0.92))
    else:  # bronze or smoked
        tint = _hsv(rng, (0.05, 0.12), (0.1, 0.35), (0.55, 0.8))
    return Material('glass', tint, scale=float(rng.uniform(0.5, 1.5)),
                    scale2=float(rng.uniform(0.03, 0.12)),
                    angle=float(rng.choice([-1.0, 1.0]) * rng.uniform(0.3, 1.2)), variation=0.0,
                    specular=float(rng.uniform(0.3, 1.0)) if config.specular else 0.0,
                    shininess=float(rng.uniform(150, 600)), seed=int(rng.integers(1 << 30)))


def _glass_frame_material(rng, config):
    if not config.object_textures:
        return DEFAULT_OBJECT
    spec = config.specular
    r = rng.random()
    if r < 0.55:  # aluminium or steel
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.45, 0.9)), variation=0.02,
                        specular=float(rng.uniform(0.3, 0.7)) if spec else 0.0,
                        shininess=float(rng.uniform(40, 120)), seed=int(rng.integers(1 << 30)))
    if r < 0.8:  # black or anthracite powder coat
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.05, 0.25)),
                        variation=0.02, specular=float(rng.uniform(0.1, 0.4)) if spec else 0.0,
                        shininess=float(rng.uniform(20, 60)), seed=int(rng.integers(1 << 30)))
    base = _hsv(rng, (0.05, 0.1), (0.3, 0.7), (0.25, 0.7))
    return Material('wood', base, _jitter_color(rng, base, 0.2), scale=0.05, scale2=2.0,
                    angle=math.pi / 2, variation=float(rng.uniform(0.05, 0.2)),
                    seed=int(rng.integers(1 << 30)))


def _random_glass_group(rng, scene, config):
    """One glass partition, screen or door (Box parts) that fits in the room, or None."""
    panes = int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))
    length = panes * float(rng.uniform(0.7, 1.2))
    h = rng.random()
    if h < 0.35:  # floor to ceiling
        height = scene.wall_height
    elif h < 0.8:  # door height
        height = float(rng.uniform(1.95, 2.3))
    else:  # a low screen or balustrade
        height = float(rng.uniform(0.9, 1.4))
    x0, y0, x1, y1 = scene.bounds()
    a, b = scene.walls()
    for _ in range(12):
        if rng.random() < 0.7 and len(a):  # from a wall into the room
            i = int(rng.integers(len(a)))
            e = b[i] - a[i]
            wall_len = float(np.hypot(*e))
            if wall_len < 1.2:
                continue
            u = e / wall_len
            yaw = math.atan2(u[0], -u[1]) + float(rng.normal(0.0, 0.03))
            along = float(rng.uniform(0.5, wall_len - 0.5))
            if any(d.wall == i and d.start - 0.1 <= along <= d.start + d.width + 0.1
                   for d in scene.doors):
                continue  # not in front of a door
            start = a[i] + u * along
            direction = np.array([math.cos(yaw), math.sin(yaw)])
            start = start + direction * 0.002
            end = start + direction * length
            ends = (end,)
        else:  # free-standing
            centre = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
            yaw = float(rng.uniform(-math.pi, math.pi))
            direction = np.array([math.cos(yaw), math.sin(yaw)])
            start, end = centre - direction * length / 2.0, centre + direction * length / 2.0
            ends = (start, end)
        f = np.linspace(0.0, 1.0, max(2, int(length / 0.05) + 1))
        xs, ys = start[0] + f * (end[0] - start[0]), start[1] + f * (end[1] - start[1])
        if not scene.inside(xs, ys).all():
            continue
        if any(np.min(o.distance_xy(xs, ys)) < 0.3 for o in scene.footprints()):
            continue
        # Leave a passage beside a free end.
        if any(scene.clearance(p[0], p[1]) < 0.8 for p in ends):
            continue
        break
    else:
        return None
    r = rng.random()
    if r < 0.5:  # a full frame
        stiles, top = True, float(rng.uniform(0.04, 0.1))
    elif r < 0.75:  # top and bottom rails, butt-jointed panes
        stiles, top = False, float(rng.uniform(0.04, 0.1))
    else:  # frameless glass in a floor channel
        stiles, top = False, 0.0
    door = 1.9 < height < 2.4 and rng.random() < 0.5
    bottom = float(rng.uniform(0.1, 0.3)) if door else float(rng.uniform(0.02, 0.08))
    band = None
    if height > 1.2 and rng.random() < 0.5:  # a frosted safety band
        band_mat = DEFAULT_OBJECT
        if config.object_textures:
            band_mat = Material('plain' if rng.random() < 0.6 else 'stripes',
                                _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.75, 0.95)),
                                _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.4, 0.7)),
                                scale=float(rng.uniform(0.02, 0.06)), angle=math.pi / 2,
                                variation=0.01)
        band = (float(rng.uniform(0.9, 1.6)), float(rng.uniform(0.04, 0.2)), band_mat)
    return glass_partition(start, end, height, panes, random_glass_material(rng, config),
                           _glass_frame_material(rng, config),
                           thickness=float(rng.uniform(0.006, 0.012)),
                           profile=float(rng.uniform(0.03, 0.08)),
                           depth=float(rng.uniform(0.035, 0.07)), bottom_rail=bottom,
                           top_rail=top, stiles=stiles or door, band=band, handle=door)


def random_glass(rng, scene, config):
    """
    Put glass partitions, screens or doors into 30 % of the rooms (into ``scene.obstacles``).

    One (sometimes two) straight partitions of one to three panes, from a wall into the room
    (not in front of a door) or free-standing, floor-to-ceiling, door-high or low, 0.3 m clear
    of other glass, with a passage of at least 0.8 m beside each free end; a room where none
    fits gets none. Door-high ones are glass doors half of the time: kick plate, stiles and a
    push bar. Nothing when ``config.glass`` is off. Call it before the obstacles are placed,
    so that they keep clear of the glass.
    """
    if not config.glass or scene.outline is None or rng.random() >= 0.3:
        return
    for _ in range(1 if rng.random() < 0.8 else 2):
        group = _random_glass_group(rng, scene, config)
        if group:
            scene.obstacles.extend(group)
