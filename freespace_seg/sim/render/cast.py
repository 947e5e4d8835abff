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

"""Ray casting: the nearest floor, ceiling, wall or object hit of every ray."""

import math

from freespace_seg.sim.scene import Box
import numpy as np


ID_NONE, ID_FLOOR, ID_CEILING, ID_WALL0 = 0, 1, 2, 3


_NEAR = 1e-3


# --- ray casting -----------------------------------------------------------------------

def _update(t, ids, t_new, hit, ident):
    closer = hit & (t_new < t)
    np.copyto(t, t_new, where=closer)
    ids[closer] = ident


def _cast_box(box, o, dx, dy, dz, t, ids, ident):
    c, s = math.cos(float(box.yaw)), math.sin(float(box.yaw))
    px, py = o[0] - float(box.x), o[1] - float(box.y)
    lox, loy, loz = c * px + s * py, -s * px + c * py, o[2]
    ldx = c * dx + s * dy
    ldy = c * dy - s * dx
    hx, hy = float(box.size_x) / 2.0, float(box.size_y) / 2.0
    with np.errstate(divide='ignore', invalid='ignore'):
        near = None
        far = None
        for lo_, d, a, b in ((lox, ldx, -hx, hx), (loy, ldy, -hy, hy),
                             (loz, dz, float(box.bottom), float(box.height))):
            inv = 1.0 / d
            t1 = (a - lo_) * inv
            t2 = (b - lo_) * inv
            tmin = np.minimum(t1, t2)
            tmax = np.maximum(t1, t2)
            near = tmin if near is None else np.maximum(near, tmin)
            far = tmax if far is None else np.minimum(far, tmax)
        hit = (near <= far) & (near > 0.0)
    _update(t, ids, near, hit, ident)


def _cast_cylinder(cyl, o, dx, dy, dz, t, ids, ident):
    px, py, oz = o[0] - float(cyl.x), o[1] - float(cyl.y), o[2]
    r = float(cyl.radius)
    bottom, top = float(cyl.bottom), float(cyl.height)
    c = px * px + py * py - r * r
    with np.errstate(divide='ignore', invalid='ignore'):
        if c > 0.0:
            a = dx * dx + dy * dy
            b = px * dx + py * dy
            disc = b * b - a * c
            ts = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
            z = oz + ts * dz
            hit = (disc >= 0.0) & (ts > 0.0) & (z >= bottom) & (z <= top)
            _update(t, ids, ts, hit, ident)
        for plane, ok in ((top, oz > top), (bottom, oz < bottom)):
            if not ok:
                continue
            tc = (plane - oz) / dz
            qx, qy = px + tc * dx, py + tc * dy
            hit = (tc > 0.0) & (qx * qx + qy * qy <= r * r)
            _update(t, ids, tc, hit, ident)


def _cast(scene, origin, dx, dy, dz, rects, skip=None):
    """
    Nearest hit distance t (inf for none) and surface id for every pixel.

    ``skip`` (a bool per obstacle, or None) leaves those obstacles out (glass panes).
    """
    h, w = dx.shape
    ox, oy, oz = (float(v) for v in origin)
    t = np.full((h, w), np.inf, dtype=np.float32)
    ids = np.zeros((h, w), dtype=np.int16)
    with np.errstate(divide='ignore', invalid='ignore'):
        if oz > 0.0:
            tf = np.float32(-oz) / dz
            _update(t, ids, tf, dz < 0.0, ID_FLOOR)
        if scene.outline is not None and scene.ceiling:
            tc = np.float32(scene.wall_height - oz) / dz
            _update(t, ids, tc, dz > 0.0, ID_CEILING)
        a, b = scene.walls()
        for k in range(len(a)):
            ax, ay = float(a[k][0]), float(a[k][1])
            ex, ey = float(b[k][0]) - ax, float(b[k][1]) - ay
            wx, wy = ax - ox, ay - oy
            den = dx * ey - dy * ex
            inv = 1.0 / den
            tw = (wx * ey - wy * ex) * inv
            s = (wx * dy - wy * dx) * inv
            hit = (tw > 0.0) & (s >= 0.0) & (s <= 1.0)
            if not scene.ceiling:
                zw = oz + tw * dz
                hit &= (zw >= 0.0) & (zw <= scene.wall_height)
            _update(t, ids, tw, hit, ID_WALL0 + k)
    base = ID_WALL0 + len(a)
    o = (ox, oy, oz)
    for m, obj in enumerate(scene.obstacles):
        rect = rects[m]
        if rect is None or (skip is not None and skip[m]):
            continue
        u0, u1, v0, v1 = rect
        sl = (slice(v0, v1), slice(u0, u1))
        if isinstance(obj, Box):
            _cast_box(obj, o, dx[sl], dy[sl], dz[sl], t[sl], ids[sl], base + m)
        else:
            _cast_cylinder(obj, o, dx[sl], dy[sl], dz[sl], t[sl], ids[sl], base + m)
    return t, ids


def _object_points(scene):
    """Bounding points of each obstacle, (M, 8, 3), for the screen rectangles."""
    if not scene.obstacles:
        return np.zeros((0, 8, 3))
    return np.stack([o.corners() for o in scene.obstacles])


def _crop_rects(rects, r0, r1, c0, c1):
    """Screen rectangles relative to the crop rows r0:r1, columns c0:c1 (None outside it)."""
    out = []
    for rect in rects:
        if rect is None:
            out.append(None)
            continue
        u0, u1, v0, v1 = rect
        u0, u1, v0, v1 = max(u0, c0) - c0, min(u1, c1) - c0, max(v0, r0) - r0, min(v1, r1) - r0
        out.append((u0, u1, v0, v1) if u1 > u0 and v1 > v0 else None)
    return out
