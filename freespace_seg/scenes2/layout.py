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
Random room layouts.

One room, an L-shaped room, two rooms with a doorway, a corridor with side rooms, a room
with a corridor. Walls are boxes around the union of the room
rectangles, found on a 5 cm grid; partitions between rooms have door openings under lintels.
"""

import math

import cv2
import numpy as np

from . import palette
from .camera import random_camera
from .furniture import furnish
from .geometry import LINTEL, Scene, WALL

GRID = 0.05


def _snap(v):
    return round(float(v) / GRID) * GRID


def _rect(x0, y0, x1, y1):
    return tuple(_snap(v) for v in (x0, y0, x1, y1))


def plan(rng):
    """Return (kind, rectangles, partitions); a partition is (axis, at, lo, hi, doors)."""
    kind = str(rng.choice(['room', 'l_shape', 'two_rooms', 'corridor', 'room_corridor'],
                          p=[0.3, 0.2, 0.2, 0.12, 0.18]))
    u = rng.uniform
    if kind == 'room':
        return kind, [_rect(0, 0, u(2.5, 9.0), u(2.5, 8.0))], []
    if kind == 'l_shape':
        w1, d1 = u(4.0, 9.0), u(2.0, 4.5)
        w2, d2 = u(1.5, w1 - 1.0), u(d1 + 1.5, d1 + 5.0)
        return kind, [_rect(0, 0, w1, d1), _rect(0, 0, w2, d2)], []
    if kind == 'two_rooms':
        w1, d1, w2, d2 = u(2.5, 7.0), u(2.5, 7.0), u(2.5, 7.0), u(2.5, 7.0)
        y0 = u(-d2 + 1.5, d1 - 1.5)
        a, b = _rect(0, 0, w1, d1), _rect(w1, y0, w1 + w2, y0 + d2)
        lo, hi = max(a[1], b[1]), min(a[3], b[3])
        return kind, [a, b], [('x', a[2], lo, hi, _doors(rng, lo, hi))]
    if kind == 'corridor':
        length, width = u(5.0, 14.0), u(1.1, 2.2)
        rects, parts = [_rect(0, 0, length, width)], []
        x = u(0.0, 1.5)
        while x < length - 2.5 and len(rects) < 3:
            w = min(u(2.5, 5.0), length - x)
            room = _rect(x, width, x + w, width + u(2.5, 5.0))
            rects.append(room)
            parts.append(('y', room[1], room[0], room[2], _doors(rng, room[0], room[2], 1)))
            x += w + u(0.5, 3.0)
        return kind, rects, parts
    w, d = u(3.0, 8.0), u(3.0, 8.0)
    width = u(1.1, 2.0)
    y0 = u(0.0, d - width)
    room, corridor = _rect(0, 0, w, d), _rect(w, y0, w + u(3.0, 9.0), y0 + width)
    parts = []
    if rng.random() < 0.5:
        parts.append(('x', room[2], corridor[1], corridor[3],
                      _doors(rng, corridor[1], corridor[3], 1)))
    return kind, [room, corridor], parts


def _doors(rng, lo, hi, most=2):
    """Door openings (start, end) along a partition from ``lo`` to ``hi``."""
    doors = []
    for _ in range(int(rng.integers(1, most + 1))):
        width = min(rng.uniform(0.75, 1.6), hi - lo - 0.2)
        start = rng.uniform(lo + 0.1, hi - width - 0.1) if hi - lo - width > 0.2 else lo + 0.1
        if all(start > e + 0.3 or start + width < s - 0.3 for s, e in doors):
            doors.append((_snap(start), _snap(start + width)))
    return sorted(doors)


def raster(rects):
    """Return (walkable grid (ny, nx) bool, x0, y0) of the union of ``rects``, with a border."""
    x0 = min(r[0] for r in rects) - 2 * GRID
    y0 = min(r[1] for r in rects) - 2 * GRID
    nx = int(round((max(r[2] for r in rects) - x0) / GRID)) + 3
    ny = int(round((max(r[3] for r in rects) - y0) / GRID)) + 3
    grid = np.zeros((ny, nx), dtype=bool)
    for a, b, c, d in rects:
        i0, i1 = int(round((a - x0) / GRID)), int(round((c - x0) / GRID))
        j0, j1 = int(round((b - y0) / GRID)), int(round((d - y0) / GRID))
        grid[j0:j1, i0:i1] = True
    return grid, x0, y0


def _runs(flags):
    """Start and end indices of the runs of True in a 1-D bool array."""
    padded = np.concatenate([[False], flags, [False]]).astype(np.int8)
    change = np.flatnonzero(np.diff(padded))
    return zip(change[0::2], change[1::2])


def outer_walls(grid, x0, y0, thickness):
    """
    Return wall runs (center, half, inner normal) around the walkable cells of ``grid``.

    Each run lies outside the walkable area; runs along x and along y meet at the corners.
    """
    walls = []
    h = thickness / 2.0
    for sign in (1, -1):
        # edges between column i and i + 1 (x = x0 + (i + 1) * GRID)
        edges = grid[:, :-1] & ~grid[:, 1:] if sign == 1 else ~grid[:, :-1] & grid[:, 1:]
        for i in range(edges.shape[1]):
            for j0, j1 in _runs(edges[:, i]):
                x = x0 + (i + 1) * GRID + sign * h
                ya, yb = y0 + j0 * GRID, y0 + j1 * GRID
                walls.append(((x, (ya + yb) / 2), (h, (yb - ya) / 2), (-sign, 0)))
        edges = grid[:-1, :] & ~grid[1:, :] if sign == 1 else ~grid[:-1, :] & grid[1:, :]
        for j in range(edges.shape[0]):
            for i0, i1 in _runs(edges[j, :]):
                y = y0 + (j + 1) * GRID + sign * h
                xa, xb = x0 + i0 * GRID, x0 + i1 * GRID
                walls.append((((xa + xb) / 2, y), ((xb - xa) / 2, h), (0, -sign)))
    return walls


def partition_boxes(scene, part, thickness, mat, door_height):
    """Add a partition wall with its door openings and the lintels over them."""
    axis, at, lo, hi, doors = part
    c = scene.ceiling
    spans, start = [], lo
    for s, e in doors:
        spans.append((start, s))
        start = e
    spans.append((start, hi))

    def add(a, b, z0, z1, role):
        if b - a < 1e-3:
            return
        m, hl = (a + b) / 2, (b - a) / 2
        center = (at, m, (z0 + z1) / 2) if axis == 'x' else (m, at, (z0 + z1) / 2)
        half = (thickness / 2, hl, (z1 - z0) / 2) if axis == 'x' else (
            hl, thickness / 2, (z1 - z0) / 2)
        scene.add_box(center, half, 0.0, mat, role)

    for a, b in spans:
        add(a, b, 0.0, c, WALL)
    for s, e in doors:
        add(s, e, door_height, c, LINTEL)


def closed_door(rng, scene, wall, mat, height):
    """Add a closed door leaf on the inner face of an outer wall run long enough for it."""
    (cx, cy), (hx, hy), (nx, ny) = wall
    length = 2 * max(hx, hy)
    if length < 1.4:
        return
    width = rng.uniform(0.75, 1.0)
    t = rng.uniform(-length / 2 + width / 2 + 0.1, length / 2 - width / 2 - 0.1)
    face = (cx + nx * hx, cy + ny * hy) if nx or ny else (cx, cy)
    px = face[0] + nx * 0.02 + (t if ny else 0.0)
    py = face[1] + ny * 0.02 + (t if nx else 0.0)
    half = (0.02, width / 2, height / 2) if nx else (width / 2, 0.02, height / 2)
    scene.add_box((px, py, height / 2), half, 0.0, mat, WALL)


def add_lights(rng, scene, rects):
    """Add one to four ceiling lamps to the rooms: points or small area lights."""
    area = np.array([(r[2] - r[0]) * (r[3] - r[1]) for r in rects])
    count = int(rng.integers(1, 5))
    for _ in range(count):
        r = rects[int(rng.choice(len(rects), p=area / area.sum()))]
        x, y = rng.uniform(r[0] + 0.3, r[2] - 0.3), rng.uniform(r[1] + 0.3, r[3] - 0.3)
        z = scene.ceiling - rng.uniform(0.05, 0.7)
        scene.add_light((x, y, z), palette.light_color(rng), rng.uniform(4.0, 20.0),
                        rng.uniform(0.02, 0.4))


def place_camera(rng, scene, occupied, walkable, x0, y0, height_range, pitch_range):
    """Put the camera at a clear spot (25 cm from anything), mostly looking into the room."""
    free = (walkable & ~occupied).astype(np.uint8)
    dist = cv2.distanceTransform(free, cv2.DIST_L2, 5) * GRID
    ok = np.argwhere(dist > 0.25)
    if not ok.size:
        ok = np.argwhere(dist == dist.max())
    j, i = ok[int(rng.integers(len(ok)))]
    x, y = x0 + (i + 0.5) * GRID, y0 + (j + 0.5) * GRID
    if rng.random() < 0.85:
        far = np.argwhere(walkable)
        tj, ti = far[int(rng.integers(len(far)))]
        tx, ty = x0 + (ti + 0.5) * GRID, y0 + (tj + 0.5) * GRID
        yaw = math.atan2(ty - y, tx - x) + rng.normal(0.0, 0.3)
    else:
        yaw = rng.uniform(-math.pi, math.pi)
    return random_camera(rng, (x, y), yaw, height_range, pitch_range)


def random_scene(rng, height_range=(0.1, 1.5), pitch_range=(0.0, 0.7)):
    """Return (scene, camera, info) of one random layout, furnished and lit."""
    kind, rects, parts = plan(rng)
    scene = Scene(rng.uniform(2.3, 3.3), rects)
    white = rng.random() < 0.25
    scene.floor_mat = scene.add_material(palette.floor_material(rng, light=white))
    scene.ceil_mat = scene.add_material(palette.ceiling_material(rng))
    wall_mat = scene.add_material(palette.wall_material(rng, white=white))
    thickness = rng.uniform(0.08, 0.2)
    grid, x0, y0 = raster(rects)
    walls = outer_walls(grid, x0, y0, thickness)
    accent = scene.add_material(palette.wall_material(rng)) if rng.random() < 0.3 else wall_mat
    accent_wall = int(rng.integers(len(walls)))
    for k, ((cx, cy), (hx, hy), _) in enumerate(walls):
        mat = accent if k == accent_wall else wall_mat
        scene.add_box((cx, cy, scene.ceiling / 2), (hx, hy, scene.ceiling / 2), 0.0, mat, WALL)
    door_height = min(rng.uniform(1.95, 2.3), scene.ceiling - 0.1)
    occupied = np.zeros_like(grid)
    for part in parts:
        partition_boxes(scene, part, thickness, wall_mat, door_height)
        _mark_partition(occupied, part, thickness, x0, y0)
    door_mat = scene.add_material(palette.object_material(rng, 'wood' if rng.random() < 0.5
                                                          else 'glossy'))
    for _ in range(int(rng.integers(0, 3))):
        closed_door(rng, scene, walls[int(rng.integers(len(walls)))], door_mat, door_height)
    scene.lattices = rng.random((4, 64, 64)).astype(np.float32)
    scene.grid_origin = (x0, y0)
    scene.dist_walls = _distance(grid & ~occupied)
    furnish(rng, scene, grid, occupied, x0, y0, walls, parts, door_height)
    scene.dist_all = _distance(grid & ~occupied)
    add_lights(rng, scene, rects)
    scene.ambient = float(rng.uniform(0.03, 0.25))
    scene.freeze()
    camera = place_camera(rng, scene, occupied, grid, x0, y0, height_range, pitch_range)
    return scene, camera, {'layout': kind, 'rooms': len(rects), 'white_walls': bool(white)}


def _distance(free):
    """Distance in metres from each free cell to the nearest blocked one."""
    return cv2.distanceTransform(free.astype(np.uint8), cv2.DIST_L2, 5) * GRID


def _mark_partition(occupied, part, thickness, x0, y0):
    axis, at, lo, hi, _ = part
    a = int(math.floor((at - thickness / 2 - (x0 if axis == 'x' else y0)) / GRID))
    b = int(math.ceil((at + thickness / 2 - (x0 if axis == 'x' else y0)) / GRID))
    c = int(math.floor((lo - (y0 if axis == 'x' else x0)) / GRID))
    d = int(math.ceil((hi - (y0 if axis == 'x' else x0)) / GRID))
    if axis == 'x':
        occupied[c:d, a:b] = True
    else:
        occupied[a:b, c:d] = True
