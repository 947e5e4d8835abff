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

"""The room outline and its furniture: tables, chairs, boxes, decals and doors."""

from dataclasses import replace
import math

from freespace_seg.sim.scene.materials import _hsv, _lin, random_object_material
from freespace_seg.sim.scene.model import Box, Cylinder, Decal, Door, Material
import numpy as np


def _random_outline(rng, config):
    lo, hi = config.room_size
    sx, sy = rng.uniform(lo, hi, 2)
    hx, hy = sx / 2.0, sy / 2.0
    rect = [(-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy)]
    if config.l_shaped_rooms and min(sx, sy) >= 3.5 and rng.random() < 0.35:
        nx = float(rng.uniform(0.3, 0.55)) * sx
        ny = float(rng.uniform(0.3, 0.55)) * sy
        # Cut the notch out of the (+x, +y) corner, then rotate the room by k quarter turns.
        outline = [(-hx, -hy), (hx, -hy), (hx, hy - ny), (hx - nx, hy - ny), (hx - nx, hy),
                   (-hx, hy)]
    else:
        outline = rect
    k = int(rng.integers(4))
    c, s = round(math.cos(k * math.pi / 2)), round(math.sin(k * math.pi / 2))
    return tuple((float(c * x - s * y), float(s * x + c * y)) for x, y in outline)


class _Placer:
    """Rejection sampling of obstacle positions inside a room."""

    def __init__(self, rng, scene):
        self.rng = rng
        self.scene = scene
        self.x0, self.y0, self.x1, self.y1 = scene.bounds()
        self.a, self.b = scene.walls()

    def free_point(self, margin):
        """Find a point inside the room at least ``margin`` from walls and obstacles, or None."""
        xs = self.rng.uniform(self.x0, self.x1, 64)
        ys = self.rng.uniform(self.y0, self.y1, 64)
        ok = np.flatnonzero(self.scene.clearance(xs, ys) > margin)
        return (float(xs[ok[0]]), float(ys[ok[0]])) if ok.size else None

    def wall_spot(self, depth, length, gap):
        """
        Find a spot against a random wall for an object of ``depth`` x ``length``.

        Returns (x, y, yaw) with the object's local x axis across the wall, or None.
        """
        i = int(self.rng.integers(len(self.a)))
        a, b = self.a[i], self.b[i]
        e = b - a
        wall_len = float(np.hypot(*e))
        if wall_len < length + 0.1:
            return None
        t = self.rng.uniform(length / 2 + 0.05, wall_len - length / 2 - 0.05)
        u = e / wall_len
        inward = np.array([-u[1], u[0]])
        p = a + u * t + inward * (depth / 2 + gap)
        return float(p[0]), float(p[1]), float(math.atan2(inward[1], inward[0]))

    def fits(self, obstacles, margin=0.02):
        """Check that the standing parts of ``obstacles`` stay in the room, clear of others."""
        for o in obstacles:
            if not o.standing:
                continue
            pts = o.outline()
            if not np.all(self.scene.inside(pts[:, 0], pts[:, 1])):
                return False
            cx, cy = float(np.mean(pts[:, 0])), float(np.mean(pts[:, 1]))
            r = float(np.max(np.hypot(pts[:, 0] - cx, pts[:, 1] - cy)))
            others = self.scene.footprints()
            for p in others:
                if p.distance_xy(cx, cy) < r + margin:
                    return False
        return True


def _table(rng, x, y, yaw, top_mat, leg_mat):
    sx, sy = rng.uniform(0.6, 1.8), rng.uniform(0.5, 1.0)
    h = rng.uniform(0.45, 0.8)
    th = rng.uniform(0.02, 0.06)
    parts = []
    c, s = math.cos(yaw), math.sin(yaw)
    if rng.random() < 0.2:  # round pedestal table
        r = rng.uniform(0.3, 0.6)
        parts.append(Cylinder(x, y, r, h, h - th, top_mat))
        parts.append(Cylinder(x, y, rng.uniform(0.03, 0.07), h - th, 0.0, leg_mat))
        parts.append(Cylinder(x, y, rng.uniform(0.15, 0.3), rng.uniform(0.02, 0.05), 0.0,
                              leg_mat))
        return parts
    parts.append(Box(x, y, sx, sy, h, yaw, h - th, top_mat))
    inset = rng.uniform(0.03, 0.12)
    square = rng.random() < 0.4
    lr = rng.uniform(0.012, 0.035)
    for lx, ly in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        px = lx * (sx / 2 - inset)
        py = ly * (sy / 2 - inset)
        wx, wy = x + c * px - s * py, y + s * px + c * py
        if square:
            parts.append(Box(wx, wy, 2 * lr, 2 * lr, h - th, yaw, 0.0, leg_mat))
        else:
            parts.append(Cylinder(wx, wy, lr, h - th, 0.0, leg_mat))
    return parts


def _chair(rng, x, y, yaw, mat, leg_mat):
    c, s = math.cos(yaw), math.sin(yaw)
    seat_h = rng.uniform(0.38, 0.5)
    size = rng.uniform(0.38, 0.5)
    th = rng.uniform(0.03, 0.08)
    parts = [Box(x, y, size, size, seat_h, yaw, seat_h - th, mat)]
    back_h = seat_h + rng.uniform(0.3, 0.5)
    bx, by = x - c * (size / 2 - 0.02), y - s * (size / 2 - 0.02)
    if rng.random() < 0.85:
        parts.append(Box(bx, by, 0.03, size, back_h, yaw, seat_h, mat))
    if rng.random() < 0.3:  # office chair: a pole and a five-star base of low spokes
        parts.append(Cylinder(x, y, rng.uniform(0.025, 0.04), seat_h - th, 0.0, leg_mat))
        a0 = rng.uniform(0, 2 * math.pi)
        spoke = rng.uniform(0.25, 0.33)
        for k in range(5):
            a = a0 + k * 2 * math.pi / 5
            parts.append(Box(x + math.cos(a) * spoke / 2, y + math.sin(a) * spoke / 2, spoke,
                             0.04, rng.uniform(0.04, 0.09), a, 0.0, leg_mat))
        return parts
    inset = 0.02
    lr = rng.uniform(0.01, 0.025)
    for lx, ly in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        px, py = lx * (size / 2 - inset), ly * (size / 2 - inset)
        wx, wy = x + c * px - s * py, y + s * px + c * py
        parts.append(Cylinder(wx, wy, lr, seat_h - th, 0.0, leg_mat))
    return parts


def _random_group(rng, placer, config, wall_height, floor_mat):
    """One obstacle group (a list of primitives, labelled by kind) or None."""
    kind, parts = _random_parts(rng, placer, config, wall_height, floor_mat)
    return [replace(p, label=kind) for p in parts] if parts else None


def _random_parts(rng, placer, config, wall_height, floor_mat):
    kinds = ['box', 'bin', 'pole', 'table', 'chair', 'low', 'cable']
    p = np.array([0.3, 0.12, 0.05, 0.1, 0.13, 0.22, 0.08])
    if not config.furniture:
        p[3:5] = 0.0
    if not config.low_objects:
        p[5:7] = 0.0
    kind = str(rng.choice(kinds, p=p / p.sum()))
    mat = random_object_material(rng, config, floor_mat)
    if kind == 'box':
        depth, length = rng.uniform(0.2, 1.0), rng.uniform(0.2, 2.0)
        height = rng.uniform(0.15, 1.8) if rng.random() < 0.8 else rng.uniform(0.05, 0.2)
        if rng.random() < 0.5:
            spot = placer.wall_spot(depth, length, float(rng.uniform(0.0, 0.06)))
            if spot is None:
                return kind, None
            x, y, yaw = spot
        else:
            pt = placer.free_point(0.3)
            if pt is None:
                return kind, None
            x, y = pt
            yaw = float(rng.uniform(-math.pi, math.pi))
        parts = [Box(x, y, depth, length, height, yaw, 0.0, mat)]
        if rng.random() < 0.15 and height < 0.6:  # a sofa-like backrest
            c, s = math.cos(yaw), math.sin(yaw)
            parts.append(Box(x - c * (depth / 2 - 0.08), y - s * (depth / 2 - 0.08), 0.16,
                             length, height + rng.uniform(0.2, 0.5), yaw, 0.0, mat))
        return kind, parts
    if kind == 'bin':
        pt = placer.free_point(0.3)
        if pt is None:
            return kind, None
        return kind, [Cylinder(pt[0], pt[1], rng.uniform(0.08, 0.3), rng.uniform(0.2, 1.0),
                               0.0, mat)]
    if kind == 'pole':
        pt = placer.free_point(0.3)
        if pt is None:
            return kind, None
        top = wall_height if rng.random() < 0.5 else rng.uniform(0.8, 1.8)
        return kind, [Cylinder(pt[0], pt[1], rng.uniform(0.015, 0.1), top, 0.0, mat)]
    if kind in ('table', 'chair'):
        pt = placer.free_point(0.6)
        if pt is None:
            return kind, None
        leg = random_object_material(rng, config) if rng.random() < 0.6 else mat
        yaw = float(rng.uniform(-math.pi, math.pi)) if rng.random() < 0.5 \
            else float(rng.choice([0.0, math.pi / 2]))
        if kind == 'table':
            return kind, _table(rng, pt[0], pt[1], yaw, mat, leg)
        return kind, _chair(rng, pt[0], pt[1], yaw, mat, leg)
    pt = placer.free_point(0.2)
    if pt is None:
        return kind, None
    yaw = float(rng.uniform(-math.pi, math.pi))
    if kind == 'cable':
        return kind, [Box(pt[0], pt[1], rng.uniform(0.5, 2.0), rng.uniform(0.01, 0.03),
                          rng.uniform(0.01, 0.025), yaw, 0.0, mat)]
    parts = []
    for _ in range(int(rng.integers(1, 4))):  # books, shoes, toys
        ox, oy = rng.normal(0.0, 0.15, 2)
        if rng.random() < 0.25:
            parts.append(Cylinder(pt[0] + ox, pt[1] + oy, rng.uniform(0.02, 0.08),
                                  rng.uniform(0.03, 0.15), 0.0, mat))
        else:
            parts.append(Box(pt[0] + ox, pt[1] + oy, rng.uniform(0.08, 0.4),
                             rng.uniform(0.05, 0.3), rng.uniform(0.02, 0.12),
                             yaw + rng.normal(0.0, 0.4), 0.0, mat))
    return kind, parts


def _random_decals(rng, scene, config, floor_mat):
    decals = []
    x0, y0, x1, y1 = scene.bounds()
    for _ in range(int(rng.poisson(0.8))):  # rugs and mats
        x, y = rng.uniform((x0, y0), (x1, y1))
        sx, sy = rng.uniform(0.4, min(3.0, x1 - x0)), rng.uniform(0.4, min(2.5, y1 - y0))
        mat = random_object_material(rng, replace(config, specular=False), None)
        if mat.kind == 'wood':
            mat = replace(mat, kind='noise', scale=float(rng.uniform(0.003, 0.02)))
        border = float(rng.uniform(0.03, 0.15)) if rng.random() < 0.5 else 0.0
        decals.append(Decal(float(x), float(y), float(sx), float(sy),
                            float(rng.choice([0.0, rng.uniform(-math.pi, math.pi)])),
                            'ellipse' if rng.random() < 0.2 else 'rect', mat, border,
                            _hsv(rng, (0.0, 1.0), (0.0, 0.8), (0.1, 0.9))))
    for _ in range(int(rng.poisson(0.35))):  # tape markings
        x, y = rng.uniform((x0, y0), (x1, y1))
        color = _lin(rng.choice([[0.95, 0.8, 0.1], [0.95, 0.95, 0.95], [0.1, 0.6, 0.2],
                                 [0.8, 0.15, 0.1], [0.1, 0.3, 0.8]]))
        mat = Material('stripes' if rng.random() < 0.3 else 'plain', color, (0.05, 0.05, 0.05),
                       scale=0.1, angle=math.pi / 4, variation=0.02)
        decals.append(Decal(float(x), float(y), float(rng.uniform(0.5, 6.0)),
                            float(rng.uniform(0.03, 0.1)),
                            float(rng.choice([0.0, math.pi / 2, rng.uniform(-math.pi, math.pi)])),
                            'rect', mat))
    return decals


def _random_doors(rng, scene):
    doors = []
    a, b = scene.walls()
    for i in range(len(a)):
        wall_len = float(np.hypot(*(b[i] - a[i])))
        if wall_len > 1.4 and rng.random() < 0.3:
            width = float(rng.uniform(0.75, 1.0))
            start = float(rng.uniform(0.15, wall_len - width - 0.15))
            mat = Material('plain' if rng.random() < 0.6 else 'wood',
                           _hsv(rng, (0.0, 1.0), (0.0, 0.6), (0.1, 0.95)),
                           _hsv(rng, (0.05, 0.1), (0.4, 0.7), (0.2, 0.5)), scale=0.2,
                           scale2=2.5, angle=math.pi / 2, variation=0.05)
            doors.append(Door(i, start, width, float(rng.uniform(1.95, 2.2)), mat,
                              _hsv(rng, (0.0, 1.0), (0.0, 0.2), (0.2, 0.98))))
    return doors
