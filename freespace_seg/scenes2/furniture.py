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
Furniture and clutter.

Tables and desks (thin legs, raised tops at 0.4-1.0 m), chairs, office chairs, shelves,
cabinets, sofas, boxes, bins, plants, pillars, balls, low objects (books, shoes, cables),
open door leaves and rugs. Objects are placed on the walkable grid without overlapping; some
stand against a wall.
"""

import math

import cv2
import numpy as np

from . import palette
from .geometry import OBSTACLE

GRID = 0.05


class Placer:
    """Free-spot search on the walkable grid (``occupied`` is updated in place)."""

    def __init__(self, grid, occupied, x0, y0):
        self.grid, self.occupied, self.x0, self.y0 = grid, occupied, x0, y0

    def fits(self, x, y, yaw, hx, hy, margin=0.05, force=False):
        """Mark the rectangle and return True if it has room (``force``: mark it anyway)."""
        c, s = math.cos(yaw), math.sin(yaw)
        pts = []
        for ax, ay in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            lx, ly = ax * (hx + margin), ay * (hy + margin)
            pts.append(((x + c * lx - s * ly - self.x0) / GRID,
                        (y + s * lx + c * ly - self.y0) / GRID))
        mask = np.zeros(self.grid.shape, dtype=np.uint8)
        cv2.fillConvexPoly(mask, np.round(np.array(pts) * 16).astype(np.int32), 1, shift=4)
        cells = mask.astype(bool)
        if not force and (not cells.any() or (cells & (~self.grid | self.occupied)).any()):
            return False
        self.occupied |= cells
        return True

    def random_spot(self, rng):
        j, i = self.free[int(rng.integers(len(self.free)))]
        return self.x0 + (i + rng.random()) * GRID, self.y0 + (j + rng.random()) * GRID


def _box(scene, x, y, yaw, lx, ly, z0, z1, hx, hy, mat):
    c, s = math.cos(yaw), math.sin(yaw)
    scene.add_box((x + c * lx - s * ly, y + s * lx + c * ly, (z0 + z1) / 2),
                  (hx, hy, (z1 - z0) / 2), yaw, mat, OBSTACLE)


def _leg(scene, x, y, yaw, lx, ly, z1, r, mat, square):
    c, s = math.cos(yaw), math.sin(yaw)
    px, py = x + c * lx - s * ly, y + s * lx + c * ly
    if square:
        scene.add_box((px, py, z1 / 2), (r, r, z1 / 2), yaw, mat, OBSTACLE)
    else:
        scene.add_cylinder((px, py), r, 0.0, z1, mat)


def table(rng, scene, x, y, yaw, hx, hy, mats):
    h = rng.choice([rng.uniform(0.4, 0.5), rng.uniform(0.7, 0.78), rng.uniform(0.8, 1.0)])
    top = rng.uniform(0.015, 0.05)
    _box(scene, x, y, yaw, 0, 0, h - top, h, hx, hy, mats[0])
    r = rng.uniform(0.012, 0.035)
    if rng.random() < 0.15:
        scene.add_cylinder((x, y), rng.uniform(0.03, 0.06), 0.0, h - top, mats[1])
        scene.add_cylinder((x, y), min(hx, hy) * 0.7, 0.0, 0.02, mats[1])
        return
    inset = rng.uniform(0.02, 0.1)
    square = rng.random() < 0.4
    for ax in (-1, 1):
        for ay in (-1, 1):
            _leg(scene, x, y, yaw, ax * (hx - inset - r), ay * (hy - inset - r), h - top, r,
                 mats[1], square)
    if rng.random() < 0.4:
        _box(scene, x, y, yaw, rng.uniform(-hx, hx) * 0.5, rng.uniform(-hy, hy) * 0.5, h,
             h + rng.uniform(0.03, 0.3), rng.uniform(0.05, 0.2), rng.uniform(0.05, 0.2), mats[2])


def chair(rng, scene, x, y, yaw, hx, hy, mats):
    seat = rng.uniform(0.4, 0.5)
    _box(scene, x, y, yaw, 0, 0, seat - 0.04, seat, hx, hy, mats[0])
    if rng.random() < 0.35:
        scene.add_cylinder((x, y), 0.03, 0.08, seat - 0.04, mats[1])
        for k in range(5):
            a = yaw + k * 2 * math.pi / 5
            _box(scene, x, y, a, hx * 0.6, 0, 0.03, 0.08, hx * 0.6, 0.02, mats[1])
    else:
        r = rng.uniform(0.01, 0.025)
        for ax in (-1, 1):
            for ay in (-1, 1):
                _leg(scene, x, y, yaw, ax * (hx - r), ay * (hy - r), seat - 0.04, r, mats[1],
                     rng.random() < 0.3)
    _box(scene, x, y, yaw, -hx + 0.015, 0, seat, seat + rng.uniform(0.3, 0.5), 0.015, hy,
         mats[0])


def shelf(rng, scene, x, y, yaw, hx, hy, mats):
    height = rng.uniform(0.5, 2.0)
    side = 0.015
    for ay in (-1, 1):
        _box(scene, x, y, yaw, 0, ay * (hy - side), 0.0, height, hx, side, mats[0])
    z = rng.choice([rng.uniform(0.02, 0.12), rng.uniform(0.35, 0.6)])
    while z < height:
        _box(scene, x, y, yaw, 0, 0, z, z + 0.02, hx, hy - 2 * side, mats[0])
        if rng.random() < 0.5 and z + 0.25 < height:
            _box(scene, x, y, yaw, 0, rng.uniform(-hy, hy) * 0.5, z + 0.02,
                 z + rng.uniform(0.1, 0.25), hx * 0.8, rng.uniform(0.05, hy * 0.6), mats[2])
        z += rng.uniform(0.28, 0.45)
    if rng.random() < 0.6:
        _box(scene, x, y, yaw, -hx + 0.005, 0, 0.0, height, 0.005, hy, mats[0])


def cabinet(rng, scene, x, y, yaw, hx, hy, mats):
    h = rng.uniform(0.3, 1.9)
    legs = rng.random() < 0.3
    z0 = rng.uniform(0.08, 0.18) if legs else 0.0
    _box(scene, x, y, yaw, 0, 0, z0, h, hx, hy, mats[0])
    if legs:
        for ax in (-1, 1):
            for ay in (-1, 1):
                _leg(scene, x, y, yaw, ax * (hx - 0.03), ay * (hy - 0.03), z0, 0.015, mats[1],
                     False)


def sofa(rng, scene, x, y, yaw, hx, hy, mats):
    seat = rng.uniform(0.35, 0.5)
    _box(scene, x, y, yaw, 0, 0, rng.uniform(0.0, 0.1), seat, hx, hy, mats[0])
    _box(scene, x, y, yaw, -hx + 0.1, 0, seat, seat + rng.uniform(0.3, 0.5), 0.1, hy, mats[0])
    for ay in (-1, 1):
        _box(scene, x, y, yaw, 0, ay * (hy - 0.08), seat, seat + 0.2, hx, 0.08, mats[0])


def boxes(rng, scene, x, y, yaw, hx, hy, mats):
    z = 0.0
    for _ in range(int(rng.integers(1, 4))):
        h = rng.uniform(0.15, 0.6)
        s = rng.uniform(0.7, 1.0)
        _box(scene, x, y, yaw + rng.normal(0, 0.1), 0, 0, z, z + h, hx * s, hy * s, mats[0])
        z += h
        if rng.random() < 0.5:
            break


def low_object(rng, scene, x, y, yaw, hx, hy, mats):
    _box(scene, x, y, yaw, 0, 0, 0.0, rng.uniform(0.01, 0.12), hx, hy, mats[0])


def round_thing(rng, scene, x, y, yaw, hx, hy, mats):
    r = min(hx, hy)
    choice = rng.random()
    if choice < 0.3:
        scene.add_sphere((x, y, r), r, mats[0])
    elif choice < 0.55:
        scene.add_cylinder((x, y), r, 0.0, scene.ceiling, mats[1])
    else:
        h = rng.uniform(0.15, 0.8)
        scene.add_cylinder((x, y), r, 0.0, h, mats[0])
        if rng.random() < 0.5:
            green = scene.add_material({'kind': 'carpet', 'c1': palette.hsv(
                rng, h=rng.uniform(0.2, 0.4), s=(0.4, 0.8), v=(0.2, 0.6)), 'c2': [0, 0, 0],
                'scale': 0.1, 'gloss': 0.0, 'shine': 10.0, 'reflect': 0.0})
            scene.add_sphere((x, y, h + r * 1.3), r * 1.4, green)


#: kind -> (builder, half-width range, half-depth range, weight, share against a wall)
KINDS = {
    'table': (table, (0.3, 0.9), (0.25, 0.5), 3.0, 0.3),
    'chair': (chair, (0.2, 0.25), (0.2, 0.25), 3.0, 0.1),
    'shelf': (shelf, (0.12, 0.25), (0.3, 0.8), 1.5, 1.0),
    'cabinet': (cabinet, (0.2, 0.35), (0.2, 0.8), 1.5, 0.8),
    'sofa': (sofa, (0.4, 0.5), (0.7, 1.1), 1.0, 0.9),
    'boxes': (boxes, (0.1, 0.4), (0.1, 0.4), 2.0, 0.3),
    'low': (low_object, (0.03, 0.2), (0.03, 0.3), 2.5, 0.2),
    'cable': (low_object, (0.005, 0.01), (0.2, 0.8), 0.7, 0.0),
    'round': (round_thing, (0.08, 0.3), (0.08, 0.3), 2.0, 0.2),
}


def _against_wall(rng, walls, hx):
    """Return a spot (x, y, yaw) with its back (local -x) on a random outer wall run."""
    (cx, cy), (wx, wy), (nx, ny) = walls[int(rng.integers(len(walls)))]
    along = rng.uniform(-1, 1) * max(wx, wy)
    fx, fy = cx + nx * wx, cy + ny * wy
    x = fx + nx * (hx + 0.01) + (along if ny else 0.0)
    y = fy + ny * (hx + 0.01) + (along if nx else 0.0)
    return x, y, math.atan2(ny, nx)


def furnish(rng, scene, grid, occupied, x0, y0, walls, parts, door_height):
    """Add 1-40 objects (0.15-0.9 a square metre), open door leaves and 0-2 rugs to ``scene``."""
    placer = Placer(grid, occupied, x0, y0)
    placer.free = np.argwhere(grid)
    area = grid.sum() * GRID * GRID
    density = rng.uniform(0.15, 0.9)
    count = int(min(40, rng.integers(1, 3 + int(area * density))))
    names = list(KINDS)
    weights = np.array([KINDS[k][3] for k in names])
    for _ in range(count):
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        build, hxr, hyr, _, wall_share = KINDS[name]
        hx, hy = rng.uniform(*hxr), rng.uniform(*hyr)
        mats = [scene.add_material(palette.object_material(rng)) for _ in range(3)]
        for _ in range(20):
            if rng.random() < wall_share:
                x, y, yaw = _against_wall(rng, walls, hx)
            else:
                (x, y), yaw = placer.random_spot(rng), rng.uniform(-math.pi, math.pi)
            if placer.fits(x, y, yaw, hx, hy):
                build(rng, scene, x, y, yaw, hx, hy, mats)
                break
    leaf = scene.add_material(palette.object_material(rng, 'wood'))
    for axis, at, _, _, doors in parts:
        for s, e in doors:
            if rng.random() < 0.5:
                continue
            width = e - s
            swing = rng.uniform(0.3, 1.5) * rng.choice([-1, 1])
            hinge = (at, s) if axis == 'x' else (s, at)
            base = 0.0 if axis == 'y' else math.pi / 2
            yaw = base + swing
            cx = hinge[0] + math.cos(yaw) * width / 2
            cy = hinge[1] + math.sin(yaw) * width / 2
            scene.add_box((cx, cy, door_height / 2 - 0.005), (width / 2 - 0.01, 0.02,
                          door_height / 2 - 0.01), yaw, leaf, OBSTACLE)
            placer.fits(cx, cy, yaw, width / 2, 0.02, force=True)
    for _ in range(int(rng.choice([0, 1, 1, 2]))):
        x, y = placer.random_spot(rng)
        half = (rng.uniform(0.3, 1.5), rng.uniform(0.25, 1.2))
        scene.add_rug((x, y), half, rng.uniform(-math.pi, math.pi),
                      scene.add_material(palette.rug_material(rng)), rng.random() < 0.25)
