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

"""Steps, curbs and platforms, placed so that the room keeps its passages."""

from dataclasses import replace
import math

import cv2
from freespace_seg.sim.scene.materials import (_hsv, _lin, random_floor_material,
                                               random_object_material)
from freespace_seg.sim.scene.model import Box, DEFAULT_OBJECT, Material, STEP_LABEL
import numpy as np


# --- steps, curbs and platforms ---------------------------------------------------------

#: Salts of the side streams of the step and wall clutter draws.
_STEPS_SALT = 0x57e95


#: Steps and platforms leave passages at least this wide (metres) between blocked floor.
STEP_PASSAGE = 0.7


#: How far (metres) a step or platform along a wall reaches into it (no slit at the wall).
_INSET = 0.01


def _wall_frame(scene, i):
    """Wall ``i``: its first vertex, unit vector along it, inward normal and length."""
    a, b = scene.walls()
    e = b[i] - a[i]
    length = float(np.hypot(*e))
    u = e / length
    return a[i], u, np.array([-u[1], u[0]]), length


def _wall_box(p, u, n, along, length, off, depth, height, bottom=0.0, material=DEFAULT_OBJECT,
              label=''):
    """
    Return a box against a wall: its local x axis along the inward normal ``n``.

    It spans ``along`` to ``along + length`` along the wall (from ``p`` in direction ``u``)
    and ``off`` to ``off + depth`` into the room, as :meth:`_Placer.wall_spot` does.
    """
    c = p + u * (along + length / 2.0) + n * (off + depth / 2.0)
    return Box(float(c[0]), float(c[1]), float(depth), float(length), float(height),
               math.atan2(float(n[1]), float(n[0])), float(bottom), material, label)


def _step_material(rng, config, floor):
    """Top and riser of a step: the floor's own material in 40 % (the hard case)."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    r = rng.random()
    if r < 0.4:
        return floor
    if r < 0.7:  # another floor: a carpeted stage, a tiled or wooden platform
        return replace(random_floor_material(rng, config), offset=(0.0, 0.0))
    return random_object_material(rng, config)


def _edge_strip_material(rng, config):
    """Draw a contrasting nosing: yellow and black tape, aluminium or dark rubber."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    r = rng.random()
    if r < 0.35:
        return Material('stripes', _lin((0.95, 0.78, 0.08)), (0.02, 0.02, 0.02),
                        scale=float(rng.uniform(0.05, 0.12)), angle=math.pi / 4,
                        variation=0.02)
    if r < 0.7:
        return Material('plain', _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.55, 0.85)),
                        variation=0.02, specular=0.5 if config.specular else 0.0,
                        shininess=60.0)
    return Material('noise', _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.03, 0.12)), (0.05, 0.05, 0.05),
                    scale=0.004, scale2=0.3, variation=0.2)


def _front_extras(rng, config, p, u, n, along, length, depth, height, mat):
    """Return a lower step in front (sometimes) and an edge strip on the front (sometimes)."""
    parts = []
    front, top = depth, height
    if height >= 0.08 and rng.random() < 0.35:  # a lower step in front
        tread = float(rng.uniform(0.25, 0.4))
        top = height / 2.0
        parts.append(_wall_box(p, u, n, along, length, depth - 0.01, tread + 0.01, top,
                               material=mat))
        front = depth + tread
    if rng.random() < 0.25:
        strip = float(rng.uniform(0.03, 0.05))
        parts.append(_wall_box(p, u, n, along, length, front - strip, strip + 0.002,
                               top + 0.002, top - 0.02, _edge_strip_material(rng, config)))
    return parts


#: Kinds of steps and how often :func:`random_steps` draws them.
STEP_KINDS = ('platform', 'stage', 'section', 'curb', 'threshold')


_STEP_KIND_P = (0.3, 0.15, 0.2, 0.25, 0.1)


def _step_parts(rng, scene, config, floor, kind):
    """Draw a step of ``kind`` (see :data:`STEP_KINDS`): its Box parts (unchecked) or None."""
    mat = _step_material(rng, config, floor)
    a, _ = scene.walls()
    if kind == 'threshold':
        if not scene.doors:
            return None
        door = scene.doors[int(rng.integers(len(scene.doors)))]
        p, u, n, _ = _wall_frame(scene, door.wall)
        extra = float(rng.uniform(0.0, 0.1))
        return [_wall_box(p, u, n, door.start - extra / 2.0, door.width + extra, -_INSET,
                          float(rng.uniform(0.06, 0.14)) + _INSET,
                          float(rng.uniform(0.03, 0.05)), material=mat)]
    if kind == 'platform':
        i = int(rng.integers(len(a)))
        p, u, n, wall_len = _wall_frame(scene, i)
        if wall_len < 1.2:
            return None
        length = float(rng.uniform(1.0, min(4.0, wall_len)))
        depth = float(rng.uniform(0.4, 1.6))
        height = float(rng.uniform(0.05, 0.2))
        r = rng.random()
        along = 0.0 if r < 0.25 else wall_len - length if r < 0.5 else \
            float(rng.uniform(0.0, wall_len - length))
        parts = [_wall_box(p, u, n, along, length, -_INSET, depth + _INSET, height,
                           material=mat)]
        return parts + _front_extras(rng, config, p, u, n, along, length, depth, height,
                                     mat)
    if kind == 'stage':
        k = int(rng.integers(len(a)))
        p, u, n, len_k = _wall_frame(scene, k)
        _, u_prev, _, len_prev = _wall_frame(scene, k - 1)
        if u_prev[0] * u[1] - u_prev[1] * u[0] <= 0.0:  # a reflex corner
            return None
        length = float(rng.uniform(1.0, max(1.0, min(3.0, len_k - 0.5))))
        depth = float(rng.uniform(1.0, max(1.0, min(2.5, len_prev - 0.5))))
        height = float(rng.uniform(0.1, 0.2))
        parts = [_wall_box(p, u, n, -_INSET, length + _INSET, -_INSET, depth + _INSET, height,
                           material=mat)]
        return parts + _front_extras(rng, config, p, u, n, -_INSET, length + _INSET,
                                     depth, height, mat)
    if kind == 'curb' and rng.random() < 0.7:  # from a wall into the room
        i = int(rng.integers(len(a)))
        p, u, n, wall_len = _wall_frame(scene, i)
        if wall_len < 1.0:
            return None
        width = float(rng.uniform(0.1, 0.3))
        along = float(rng.uniform(0.3, wall_len - 0.3 - width))
        reach = float(rng.uniform(0.8, 3.0))
        return [_wall_box(p, u, n, along, width, -_INSET, reach + _INSET,
                          float(rng.uniform(0.06, 0.2)), material=mat)]
    # Free-standing: a curb-like ridge or a raised section of the floor.
    x0, y0, x1, y1 = scene.bounds()
    cx, cy = (float(v) for v in rng.uniform((x0, y0), (x1, y1)))
    yaw = float(rng.choice([0.0, math.pi / 2])) if rng.random() < 0.8 \
        else float(rng.uniform(-math.pi, math.pi))
    if kind == 'curb':
        return [Box(cx, cy, float(rng.uniform(0.8, 2.5)), float(rng.uniform(0.1, 0.3)),
                    float(rng.uniform(0.06, 0.2)), yaw, 0.0, mat)]
    sx = float(rng.uniform(1.0, max(1.0, min(3.0, 0.5 * (x1 - x0)))))
    sy = float(rng.uniform(1.0, max(1.0, min(2.5, 0.5 * (y1 - y0)))))
    return [Box(cx, cy, sx, sy, float(rng.uniform(0.03, 0.12)), yaw, 0.0, mat)]


def _footprint_samples(box, inset=0.02, step=0.1):
    """Points (N, 2) on a grid over the footprint of ``box``, ``inset`` inside its edges."""
    nx = max(2, int(math.ceil(box.size_x / step)) + 1)
    ny = max(2, int(math.ceil(box.size_y / step)) + 1)
    hx, hy = max(box.size_x / 2.0 - inset, 0.0), max(box.size_y / 2.0 - inset, 0.0)
    lx, ly = np.meshgrid(np.linspace(-hx, hx, nx), np.linspace(-hy, hy, ny))
    c, s = math.cos(box.yaw), math.sin(box.yaw)
    return np.stack([box.x + c * lx.ravel() - s * ly.ravel(),
                     box.y + s * lx.ravel() + c * ly.ravel()], axis=1)


def _free_components(free, min_cells):
    """Count the 8-connected components of ``free`` (bool grid) of at least ``min_cells``."""
    n, _, stats, _ = cv2.connectedComponentsWithStats(free.astype(np.uint8), connectivity=8)
    return int(np.count_nonzero(stats[1:, cv2.CC_STAT_AREA] >= min_cells))


def keeps_passages(scene, parts, width=STEP_PASSAGE, cell=0.05, min_area=0.25):
    """
    Check that adding the standing ``parts`` to ``scene`` closes no passage ``width`` wide.

    On a ``cell`` grid, the floor where a disc of diameter ``width`` fits (clear of walls and
    footprints) must not fall into more pieces of at least ``min_area`` square metres than
    before: every such piece of the room stays reachable.
    """
    x0, y0, x1, y1 = scene.bounds()
    xs = np.arange(x0 + cell / 2.0, x1, cell)
    ys = np.arange(y0 + cell / 2.0, y1, cell)
    gx, gy = np.meshgrid(xs, ys)
    before = scene.clearance(gx, gy) > width / 2.0
    after = before.copy()
    for part in parts:
        if part.standing:
            after &= part.distance_xy(gx, gy) > width / 2.0
    min_cells = max(1, int(min_area / (cell * cell)))
    return _free_components(after, min_cells) <= _free_components(before, min_cells)


def _door_fronts(scene, depth=0.8):
    """Points (N, 2) on the floor in front of every door, ``depth`` into the room."""
    pts = []
    for door in scene.doors:
        p, u, n, _ = _wall_frame(scene, door.wall)
        s, t = np.meshgrid(np.linspace(door.start, door.start + door.width, 6),
                           np.linspace(0.02, depth, 5))
        pts.append(p + u * s.reshape(-1, 1) + n * t.reshape(-1, 1))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def _step_fits(scene, parts, threshold=False):
    """Check a step: in the room, clear of footprints and doors, passages kept."""
    base = [o for o in parts if o.standing]
    for part in base:
        pts = _footprint_samples(part, inset=_INSET + 0.01)
        if not scene.inside(pts[:, 0], pts[:, 1]).all():
            return False
        if any(np.min(o.distance_xy(pts[:, 0], pts[:, 1])) < 0.3 for o in scene.footprints()):
            return False
        if not threshold:
            fronts = _door_fronts(scene)
            if fronts.size and part.contains_xy(fronts[:, 0], fronts[:, 1]).any():
                return False
    return keeps_passages(scene, base)


def random_steps(rng, scene, config, floor):
    """
    Put low steps, curbs or raised platforms into 35 % of the rooms (into ``scene.obstacles``).

    One (a quarter of the time two) of: a platform 0.4-1.6 m deep and 1-4 m long along a
    wall, 5-20 cm high (30 %); a stage 1-3 by 1-2.5 m in a corner, 10-20 cm high (15 %); a
    raised section of the floor 1-3 by 1-2.5 m in the room, 3-12 cm high (20 %); a curb-like
    ridge 10-30 cm wide, 6-20 cm high, from a wall 0.8-3 m into the room or free-standing
    (25 %); a threshold ridge 3-5 cm high at a door (10 %; none without a door). Platforms
    and stages sometimes have a lower step in front of them (35 % of those at least 8 cm
    high) and an edge strip (25 %). The top is of the floor's own material in 40 % (see
    :func:`_step_material`). Every part is a standing :class:`Box` labelled
    :data:`STEP_LABEL`, so its footprint is blocked. A step stays in the room, 0.3 m clear of
    other footprints, off the floor in front of doors (but a threshold) and closes no passage
    narrower than :data:`STEP_PASSAGE` (see :func:`keeps_passages`); up to 12 tries of the
    drawn kind, else none.
    Nothing when ``config.steps`` is off. Call it before the obstacles are placed, so that
    they keep clear of the steps.
    """
    if not config.steps or scene.outline is None or rng.random() >= 0.35:
        return
    for _ in range(1 if rng.random() < 0.75 else 2):
        kind = str(rng.choice(STEP_KINDS, p=_STEP_KIND_P))
        for _ in range(12):
            parts = _step_parts(rng, scene, config, floor, kind)
            if parts and _step_fits(scene, parts, kind == 'threshold'):
                scene.obstacles.extend(replace(o, label=STEP_LABEL) for o in parts)
                break
