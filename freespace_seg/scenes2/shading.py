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
Light transport of the second generator.

* Point and small area lamps with inverse-square falloff (``power / (d^2 + 0.05)``), a
  Lambert term and a Blinn-Phong highlight per material.
* Soft shadows: one shadow ray per pixel towards a random point on each of the two strongest
  lamps (at most two shadow rays a pixel); the visibility is smoothed over 3x3 pixels.
* Ambient light times an occlusion estimate: floors darken near walls and under objects (a
  distance map of the layout grid), walls darken near the floor and the ceiling.
* Glossy floors mirror the room and the lamps: one reflection ray per floor pixel, shaded
  without shadows, mixed in with a Fresnel-like rise at grazing angles (see render.py).
"""

import cv2
import numpy as np

from .geometry import BOX, cast, CEILING, CYLINDER, EMITTER, FLOOR, SPHERE, surface
from .materials import albedo

GRID = 0.05


def _sample_map(dist, x0, y0, x, y):
    i = np.clip(((x - x0) / GRID).astype(np.int64), 0, dist.shape[1] - 1)
    j = np.clip(((y - y0) / GRID).astype(np.int64), 0, dist.shape[0] - 1)
    return dist[j, i]


def occlusion(scene, p, n, kind):
    """Ambient occlusion estimate in [0.3, 1] for hit points ``p`` with normals ``n``."""
    ao = np.ones(p.shape[0], dtype=np.float32)
    x0, y0 = scene.grid_origin
    floor = kind == FLOOR
    if floor.any():
        d = _sample_map(scene.dist_all, x0, y0, p[floor, 0], p[floor, 1])
        ao[floor] = 1.0 - 0.55 * np.exp(-d / 0.18)
    ceil = kind == CEILING
    if ceil.any():
        d = _sample_map(scene.dist_walls, x0, y0, p[ceil, 0], p[ceil, 1])
        ao[ceil] = 1.0 - 0.3 * np.exp(-d / 0.25)
    side = np.isin(kind, (BOX, CYLINDER, SPHERE)) & (np.abs(n[:, 2]) < 0.7)
    if side.any():
        z = p[side, 2]
        ao[side] = (1.0 - 0.45 * np.exp(-z / 0.12)) * (
            1.0 - 0.3 * np.exp(-(scene.ceiling - z) / 0.15))
    under = np.isin(kind, (BOX, CYLINDER)) & (n[:, 2] < -0.7)
    ao[under] *= 0.6
    return ao


def material_arrays(scene, mat, key, default=0.0):
    """Per-pixel values of one material field (``default`` where nothing was hit)."""
    table = np.array([m.get(key, default) for m in scene.materials] + [default], np.float32)
    return table[np.where(mat < 0, len(scene.materials), mat)]


def albedos(scene, p, n, mat, fw):
    out = np.zeros((p.shape[0], 3), dtype=np.float32)
    for m in np.unique(mat[mat >= 0]):
        sel = mat == m
        out[sel] = albedo(scene.materials[m], p[sel], n[sel], fw[sel], scene.lattices)
    return out


def shade(scene, o, d, hits, rng, pixel_angle, shape=None, shadows=True):
    """
    Return linear radiance (N, 3) and the surface (p, n, mat) of cast ``hits`` (t, kind, index).

    Rugs replace the floor material where they lie. ``shape`` (h, w) lets the shadow
    visibility be smoothed in image space; ``shadows=False`` skips shadow rays.
    """
    t, kind, index = hits
    p, n, mat = surface(scene, o, d, t, kind, index)
    floor = np.flatnonzero(kind == FLOOR)
    if floor.size and len(scene.rug_mat):
        rug = scene.rug_at(p[floor, 0], p[floor, 1])
        mat[floor[rug >= 0]] = scene.rug_mat[rug[rug >= 0]]
    cosi = np.abs(np.sum(n * d, axis=1))
    fw = (np.minimum(t, 1e3) * pixel_angle / np.maximum(cosi, 0.05)).astype(np.float32)
    alb = albedos(scene, p, n, mat, fw)
    gloss = material_arrays(scene, mat, 'gloss')
    shine = material_arrays(scene, mat, 'shine', 10.0)
    ao = occlusion(scene, p, n, kind)
    ambient = scene.ambient * np.sum([c * pw for _, c, pw, _ in scene.lights], 0) / 6.0
    col = alb * ao[:, None] * ambient.astype(np.float32)
    lit = (kind != EMITTER) & (kind != 0)
    order = np.argsort([-pw for _, _, pw, _ in scene.lights])
    for rank, k in enumerate(order):
        pos, color, power, radius = scene.lights[k]
        ldir = pos - p
        dist = np.linalg.norm(ldir, axis=1) + 1e-6
        ldir /= dist[:, None]
        ndl = np.maximum(np.sum(n * ldir, axis=1), 0.0) * lit
        vis = np.ones_like(ndl)
        if shadows and rank < 2:
            vis = visibility(scene, p, ndl > 0, pos, radius, rng)
            if shape is not None:
                vis = cv2.blur(vis.reshape(shape), (3, 3)).reshape(-1)
        fall = power / (dist * dist + 0.05)
        half = ldir - d
        half /= np.linalg.norm(half, axis=1, keepdims=True) + 1e-9
        ndh = np.maximum(np.sum(n * half, axis=1), 0.0)
        spec = gloss * ndh ** shine * (shine + 8.0) / 25.0 * (ndl > 0)
        col += (alb * ndl[:, None] + spec[:, None]) * (fall * vis)[:, None] * color
    emit = np.flatnonzero(kind == EMITTER)
    if emit.size:
        colors = np.array([c for _, c, _, _ in scene.lights], np.float32)
        powers = np.array([pw for _, _, pw, _ in scene.lights], np.float32)
        col[emit] = colors[index[emit]] * powers[index[emit], None] * 3.0
    return col, (p, n, mat)


def visibility(scene, p, need, pos, radius, rng, samples=4):
    """
    Return the share (N,) of a lamp that points ``p`` see: one shadow ray each.

    The rays are cast from the lamp towards the points, from ``samples`` spots on the lamp
    (each point draws one), so that each batch of rays shares its origin.
    """
    vis = np.ones(p.shape[0], dtype=np.float32)
    spots = pos + rng.normal(0.0, radius * 0.5, (samples, 3))
    spots[:, 2] = np.minimum(spots[:, 2], scene.ceiling - 0.01)
    group = rng.integers(samples, size=p.shape[0])
    for j in range(samples):
        sel = np.flatnonzero(need & (group == j))
        if not sel.size:
            continue
        ray = p[sel] - spots[j].astype(np.float32)
        dist = np.linalg.norm(ray, axis=1) + 1e-6
        ts, _, _ = cast(scene, spots[j], ray / dist[:, None], planes=False, emitters=False)
        vis[sel] = (ts >= dist * 0.995 - 0.01).astype(np.float32)
    return vis


def reflection(scene, origin, d, mat, kind, rng, pixel_angle):
    """
    Return (weight (N,), radiance (N, 3)) of the mirror image on glossy floor pixels.

    A ray mirrored at the floor is cast from the camera ``origin`` mirrored below the floor
    (z -> -z), so that all mirror rays share one origin; nothing lies below the floor, so its
    first hit lies above. Rugs (their material has no ``reflect``) do not mirror.
    """
    weight = material_arrays(scene, mat, 'reflect') * (kind == FLOOR)
    radiance = np.zeros((d.shape[0], 3), dtype=np.float32)
    sel = np.flatnonzero(weight > 0)
    if not sel.size:
        return weight, radiance
    rd = d[sel].copy()
    rd[:, 2] = -rd[:, 2]
    ro = np.asarray(origin, np.float32) * np.float32([1.0, 1.0, -1.0])
    t, k, i = cast(scene, ro, rd, planes=False)
    tc = (scene.ceiling - ro[2]) / np.maximum(rd[:, 2], 1e-6)
    ceil = tc < t
    t[ceil], k[ceil], i[ceil] = tc[ceil], CEILING, 0
    hits = (t, k, i)
    col, _ = shade(scene, ro, rd, hits, rng, pixel_angle * 2.0, shadows=False)
    radiance[sel] = col
    cos = np.abs(d[sel, 2])
    weight[sel] = np.clip(weight[sel] * (0.7 + 1.3 * (1.0 - cos) ** 3), 0.0, 0.9)
    return weight, radiance
