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

"""Things on the walls: posters, pictures, switches, radiators, shelves, screens."""

from dataclasses import replace
import math

from freespace_seg.sim.scene.materials import _hsv, _jitter_color, random_object_material
from freespace_seg.sim.scene.model import (_tuple3, Box, Cylinder, DEFAULT_OBJECT, Material,
                                           WALL_CLUTTER_LABEL, WallDecal)
from freespace_seg.sim.scene.steps import _footprint_samples, _wall_box, _wall_frame
import numpy as np


_WALL_CLUTTER_SALT = 0xc1077e2


# --- things on the walls ----------------------------------------------------------------

def _plate_color(rng):
    """Draw the colour of a switch or socket plate: white, cream, black, steel or grey."""
    r = rng.random()
    if r < 0.55:
        return _hsv(rng, (0.0, 1.0), (0.0, 0.03), (0.85, 0.97))
    if r < 0.7:
        return _hsv(rng, (0.1, 0.16), (0.08, 0.2), (0.8, 0.92))
    if r < 0.85:
        return _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.05, 0.15))
    return _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.45, 0.7))


def _photo_colors(rng):
    """Three colours of a photo-like picture: two grounds and a sky."""
    ground = _hsv(rng, (0.0, 1.0), (0.2, 0.9), (0.1, 0.8))
    other = _hsv(rng, (0.0, 1.0), (0.1, 1.0), (0.1, 0.95))
    sky = _hsv(rng, (0.0, 1.0), (0.0, 0.6), (0.4, 0.98))
    return ground, other, sky


def _wall_decal(rng, scene, kind, i, wall_len, config):
    """Draw a flat :class:`WallDecal` of ``kind`` on wall ``i`` (at ``start`` 0, unchecked)."""
    seed = int(rng.integers(1 << 30))
    if kind in ('poster', 'picture'):
        width = float(rng.uniform(0.3, 0.9) if kind == 'poster' else rng.uniform(0.25, 1.2))
        aspect = float(rng.uniform(1.2, 1.5)) if rng.random() < 0.7 else \
            float(rng.uniform(0.6, 0.8))
        height = width * aspect
        bottom = float(rng.uniform(0.8, 1.6) if kind == 'poster' else rng.uniform(1.0, 1.7)) \
            - height / 2.0
        ground, other, sky = _photo_colors(rng)
        if kind == 'poster':  # a picture (ground and sky) above lines of text on paper
            paper = _hsv(rng, (0.0, 1.0), (0.0, 0.7), (0.1, 0.95))
            border = float(rng.uniform(0.015, 0.04)) if rng.random() < 0.5 else 0.0
            frame = _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.85, 0.95))
            return WallDecal(i, 0.0, width, bottom, height, kind, ground, sky, paper,
                             border, frame, 0.3 if config.specular and rng.random() < 0.3
                             else 0.0, seed)
        r = rng.random()
        if r < 0.35:  # black
            frame = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.03, 0.12))
        elif r < 0.65:  # wood
            frame = _hsv(rng, (0.05, 0.1), (0.4, 0.8), (0.2, 0.6))
        elif r < 0.8:  # gilt
            frame = _hsv(rng, (0.1, 0.14), (0.5, 0.8), (0.5, 0.8))
        else:
            frame = _hsv(rng, (0.0, 1.0), (0.0, 0.04), (0.8, 0.95))
        return WallDecal(i, 0.0, width, bottom, height, kind, ground, other, sky,
                         float(rng.uniform(0.02, 0.07)), frame,
                         0.4 if config.specular and rng.random() < 0.4 else 0.0, seed)
    if kind == 'board':
        width = float(rng.uniform(0.9, min(2.4, wall_len - 0.2)))
        height = float(rng.uniform(0.6, 1.2))
        board = _hsv(rng, (0.5, 0.7), (0.0, 0.04), (0.82, 0.95))
        marker = _hsv(rng, (0.0, 1.0), (0.6, 1.0), (0.1, 0.6)) if rng.random() < 0.6 \
            else (0.02, 0.02, 0.03)
        return WallDecal(i, 0.0, width, float(rng.uniform(0.75, 1.0)), height, kind, board,
                         marker, board, float(rng.uniform(0.015, 0.03)),
                         _hsv(rng, (0.0, 1.0), (0.0, 0.04), (0.5, 0.75)),
                         float(rng.uniform(0.2, 0.5)) if config.specular else 0.0, seed)
    plate = _plate_color(rng)
    width = 0.08 if rng.random() < 0.7 else 0.15
    if kind == 'switch':
        bottom = float(rng.uniform(0.95, 1.15))
        rocker = _jitter_color(rng, plate, 0.1)
        return WallDecal(i, 0.0, width, bottom, 0.08, kind, plate, rocker, plate, 0.0,
                         plate, 0.0, seed)
    bottom = float(rng.uniform(0.1, 0.35)) if rng.random() < 0.75 \
        else float(rng.uniform(0.95, 1.1))
    recess = _tuple3(np.asarray(plate) * float(rng.uniform(0.7, 0.9)))
    return WallDecal(i, 0.0, width, bottom, 0.08, kind, plate, recess, (0.01, 0.01, 0.01), 0.0,
                     plate, 0.0, seed)


def _clutter_material(rng, config, kind):
    """Radiator fins, shelf boards, screens and books."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    spec = config.specular
    if kind == 'radiator':
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.06), (0.75, 0.95)) if rng.random() < 0.75 \
            else _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.05, 0.3))
        return Material('stripes', base, _tuple3(np.asarray(base) * 0.6),
                        scale=float(rng.uniform(0.04, 0.08)), angle=math.pi / 2,
                        variation=0.02, specular=0.3 if spec else 0.0, shininess=40.0,
                        seed=int(rng.integers(1 << 30)))
    if kind == 'screen':
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.01, 0.05)),
                        variation=0.0, specular=float(rng.uniform(0.4, 0.9)) if spec else 0.0,
                        shininess=float(rng.uniform(100, 400)))
    if kind == 'display':  # a screen that is on: a blurry coloured picture
        ground, other, _ = _photo_colors(rng)
        return Material('noise', _tuple3(np.asarray(ground) * 2.5),
                        _tuple3(np.asarray(other) * 2.5), scale=0.05, scale2=0.25,
                        variation=0.3, seed=int(rng.integers(1 << 30)))
    return random_object_material(rng, config)


def _wall_clutter_parts(rng, scene, kind, i, config):
    """Draw a radiator, shelf or screen on wall ``i`` at ``along`` 0: (width, parts)."""
    p, u, n, _ = _wall_frame(scene, i)
    label = WALL_CLUTTER_LABEL
    if kind == 'radiator':
        length = float(rng.uniform(0.5, 1.6))
        bottom, top = float(rng.uniform(0.1, 0.2)), float(rng.uniform(0.45, 0.9))
        gap, depth = float(rng.uniform(0.02, 0.05)), float(rng.uniform(0.05, 0.12))
        mat = _clutter_material(rng, config, kind)
        parts = [_wall_box(p, u, n, 0.0, length, gap, depth, top, bottom, mat, label)]
        if rng.random() < 0.4:  # on feet, with pipes down into the floor
            for s in (0.1, length - 0.14):
                parts.append(_wall_box(p, u, n, s, 0.04, gap + depth / 2.0 - 0.015, 0.03,
                                       bottom, 0.0, mat, label))
            pipe = p + u * (-0.04 if rng.random() < 0.5 else length + 0.04) + n * 0.03
            parts.append(Cylinder(float(pipe[0]), float(pipe[1]),
                                  float(rng.uniform(0.008, 0.012)), bottom + 0.1, 0.0,
                                  _clutter_material(rng, config, 'pipe'), label))
        return length, parts
    if kind == 'shelf':
        length = float(rng.uniform(0.5, 1.5))
        bottom = float(rng.uniform(0.6, 1.9))
        thick, depth = float(rng.uniform(0.02, 0.04)), float(rng.uniform(0.15, 0.3))
        mat = _clutter_material(rng, config, kind)
        parts = [_wall_box(p, u, n, 0.0, length, 0.0, depth, bottom + thick, bottom, mat,
                           label)]
        if rng.random() < 0.5:  # a row of books
            s = float(rng.uniform(0.02, 0.3))
            for _ in range(int(rng.integers(2, 9))):
                w = float(rng.uniform(0.02, 0.05))
                if s + w > length - 0.02:
                    break
                d = float(rng.uniform(0.12, min(0.22, depth - 0.01)))
                parts.append(_wall_box(p, u, n, s, w, 0.005, d,
                                       bottom + thick + float(rng.uniform(0.15, 0.3)),
                                       bottom + thick, _clutter_material(rng, config, 'book'),
                                       label))
                s += w + float(rng.uniform(0.0, 0.01))
        return length, parts
    width = float(rng.uniform(0.6, 1.4))
    height = width * 9.0 / 16.0
    bottom = float(rng.uniform(0.9, 1.5))
    gap, depth = float(rng.uniform(0.01, 0.04)), float(rng.uniform(0.03, 0.06))
    parts = [_wall_box(p, u, n, 0.0, width, gap, depth, bottom + height, bottom,
                       _clutter_material(rng, config, 'screen'), label)]
    if rng.random() < 0.35:  # switched on: the picture 1 mm in front, inside a bezel
        bezel = float(rng.uniform(0.01, 0.03))
        parts.append(_wall_box(p, u, n, bezel, width - 2 * bezel, gap + depth, 0.001,
                               bottom + height - bezel, bottom + bezel,
                               _clutter_material(rng, config, 'display'), label))
    return width, parts


def _shift_along(obj, u, along):
    """Move ``obj`` (a Box or Cylinder part) by ``along`` metres in the wall direction u."""
    return replace(obj, x=float(obj.x + u[0] * along), y=float(obj.y + u[1] * along))


def _clear_in_3d(scene, parts, margin=0.03):
    """Check that ``parts`` keep ``margin`` from every obstacle whose heights they share."""
    for part in parts:
        if isinstance(part, Box):
            pts = _footprint_samples(part, inset=0.0, step=0.05)
        else:
            pts = np.array([[part.x, part.y]])
        for o in scene.obstacles:
            if o.bottom > part.height + margin or part.bottom > o.height + margin:
                continue
            if np.min(o.distance_xy(pts[:, 0], pts[:, 1])) < margin + (
                    part.radius if isinstance(part, Cylinder) else 0.0):
                return False
    return True


_WALL_KINDS = ('poster', 'picture', 'board', 'switch', 'socket', 'radiator', 'shelf', 'screen')


_WALL_KIND_P = (0.2, 0.16, 0.07, 0.14, 0.17, 0.1, 0.09, 0.07)


def random_wall_clutter(rng, scene, config):
    """
    Hang things on the walls of 70 % of the rooms (``scene.wall_decals``, ``scene.obstacles``).

    1 + Poisson(0.25 per metre of wall) items, at most 14, each one of: a poster (20 %) or a
    framed picture (16 %) with a photo-like procedural picture, centred 0.8-1.6 m (poster)
    or 1-1.7 m (picture) high; a whiteboard 0.9-2.4 m wide (7 %); a light switch 0.95-1.15 m
    high (14 %, next to a door when there is one, more often than not); a socket (17 %),
    0.1-0.35 m above the floor (a quarter of them at desk height); all flat
    :class:`WallDecal`. And, as raised boxes labelled :data:`WALL_CLUTTER_LABEL`, a radiator
    10-20 cm above the floor, 2-5 cm off the wall (10 %; 40 % of them on two feet with a
    pipe into the floor: those have footprints), a shelf 0.6-1.9 m high, sometimes with books
    (9 %), or a wall-mounted screen, sometimes on (7 %). Items stay on their wall (off doors,
    5 cm from its ends, under the ceiling), do not overlap each other and keep 3 cm from
    obstacles at their heights; an item that does not fit in 6 tries is left out. Nothing
    when ``config.wall_clutter`` is off.
    """
    if not config.wall_clutter or scene.outline is None or rng.random() >= 0.7:
        return
    a, _ = scene.walls()
    lengths = np.array([_wall_frame(scene, i)[3] for i in range(len(a))])
    taken = []  # (wall, s0, s1, z0, z1) of what is already there
    for door in scene.doors:
        taken.append((door.wall, door.start, door.start + door.width, 0.0, door.height))
    count = min(14, 1 + int(rng.poisson(0.25 * float(lengths.sum()))))
    for _ in range(count):
        kind = str(rng.choice(_WALL_KINDS, p=_WALL_KIND_P))
        for _ in range(6):
            i = int(rng.choice(len(a), p=lengths / lengths.sum()))
            _, u, _, wall_len = _wall_frame(scene, i)
            if kind in ('radiator', 'shelf', 'screen'):
                width, parts = _wall_clutter_parts(rng, scene, kind, i, config)
                z0 = min(o.bottom for o in parts)
                z1 = max(o.height for o in parts)
                decal = None
            else:
                decal = _wall_decal(rng, scene, kind, i, wall_len, config)
                width, parts = decal.width, []
                z0, z1 = decal.bottom, decal.bottom + decal.height
            if wall_len < width + 0.1 or z1 > scene.wall_height - 0.1:
                continue
            near_door = [d for d in scene.doors if d.wall == i]
            if kind == 'switch' and near_door and rng.random() < 0.6:
                door = near_door[int(rng.integers(len(near_door)))]
                gap = float(rng.uniform(0.08, 0.2))
                start = door.start + door.width + gap if rng.random() < 0.5 \
                    else door.start - gap - width
            else:
                start = float(rng.uniform(0.05, wall_len - width - 0.05))
            if start < 0.05 or start + width > wall_len - 0.05:
                continue
            if any(w == i and s0 - 0.03 < start + width and start < s1 + 0.03
                   and q0 - 0.03 < z1 and z0 < q1 + 0.03 for w, s0, s1, q0, q1 in taken):
                continue
            parts = [_shift_along(o, u, start) for o in parts]
            if parts and not (_clear_in_3d(scene, parts) and all(
                    scene.inside(*_footprint_samples(o, 0.005).T).all()
                    for o in parts if isinstance(o, Box))):
                continue
            taken.append((i, start, start + width, z0, z1))
            if decal is not None:
                scene.wall_decals.append(replace(decal, start=start))
            scene.obstacles.extend(parts)
            break
