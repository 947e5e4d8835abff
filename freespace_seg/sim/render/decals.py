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

"""Rugs and floor markings, doors, and the flat things on the walls."""

import math

import cv2
from freespace_seg.sim.photos import texture_names, texture_pyramid
from freespace_seg.sim.render.textures import (_col, _hash, _lerp, _mod, _noise, _sample_photo,
                                               material_albedo)
import numpy as np


def _decal_local(decal, xs, ys):
    """Floor points near ``decal``: their indices and coordinates (lu, lv) in its frame."""
    c, s = math.cos(float(decal.yaw)), math.sin(float(decal.yaw))
    r = 0.5 * math.hypot(decal.size_x, decal.size_y)
    near = np.flatnonzero((np.abs(xs - float(decal.x)) <= r) & (np.abs(ys - float(decal.y)) <= r))
    if not near.size:
        return near, None, None
    px, py = xs[near] - float(decal.x), ys[near] - float(decal.y)
    return near, c * px + s * py, c * py - s * px


def _decal_inside(decal, lu, lv):
    """Return (inside, distance to the edge inside) for points (lu, lv) in the decal's frame."""
    hx, hy = decal.size_x / 2.0, decal.size_y / 2.0
    if decal.shape == 'ellipse':
        q = (lu / hx) ** 2 + (lv / hy) ** 2
        return q <= 1.0, (1.0 - np.sqrt(np.minimum(q, 1.0))) * min(hx, hy)
    inside = (np.abs(lu) <= hx) & (np.abs(lv) <= hy)
    return inside, np.minimum(hx - np.abs(lu), hy - np.abs(lv))


def _decal_cover(decal, xs, ys):
    """Return the indices of the floor points (xs, ys) that ``decal`` covers."""
    near, lu, lv = _decal_local(decal, xs, ys)
    if not near.size:
        return near
    return near[_decal_inside(decal, lu, lv)[0]]


def _apply_decal(decal, xs, ys, fp, alb):
    near, lu, lv = _decal_local(decal, xs, ys)
    if not near.size:
        return
    inside, edge = _decal_inside(decal, lu, lv)
    if not inside.any():
        return
    idx = near[inside]
    col = material_albedo(decal.material, lu[inside], lv[inside], fp[idx])
    if decal.border > 0.0:
        band = edge[inside] < decal.border
        col[:, band] = _col(decal.border_color)
    alb[:, idx] = col


def _apply_door(door, s, z, fp, alb):
    m = (s >= door.start) & (s <= door.start + door.width) & (z <= door.height)
    if not m.any():
        return
    ds = s[m] - door.start
    dz = z[m]
    col = material_albedo(door.material, ds, dz, fp[m])
    edge = np.minimum(np.minimum(ds, door.width - ds), door.height - dz)
    col[:, edge < 0.05] = _col(door.frame_color)
    handle = (np.abs(ds - (door.width - 0.1)) < 0.04) & (np.abs(dz - 1.0) < 0.015)
    col[:, handle] *= 0.3
    alb[:, m] = col


def _photo(item, lu, lv, fp, w, h):
    """
    Return a photo-like picture (3, n) at (lu, lv) in a ``w`` x ``h`` rectangle: a landscape.

    Ground of ``item.color`` below a wavy horizon, sky of ``item.color2`` above it with a
    gradient, noise at two scales for texture and a few dark silhouettes on the horizon.
    """
    seed = int(item.seed)
    size = max(w, h)
    coarse = _noise(lu, lv, 0.25 * size, seed, fp, 0)
    wave = _noise(lu, np.zeros_like(lv), 0.2 * size, seed + 5, fp, 0)
    fine = _noise(lu, lv, 0.06 * size, seed + 9, fp, 0)
    horizon = h * (0.42 + 0.08 * wave)
    ground = _lerp(item.color, np.asarray(item.color) * 0.45, np.clip(0.5 + 0.3 * fine, 0, 1))
    ground *= 1.0 + 0.2 * _noise(lu, lv, 0.02 * size, seed + 13, fp, 0)
    up = np.clip((lv - horizon) / np.maximum(h - horizon, 1e-3), 0.0, 1.0)
    sky = _col(item.color2) * ((0.75 + 0.4 * up) * (1.0 + 0.1 * coarse))[None, :]
    # Silhouettes (trees, buildings) rising above the horizon where the fine noise is high.
    tall = horizon + np.clip(fine - 0.4, 0.0, None) * 0.25 * h
    on_ground = np.clip((tall - lv) / np.maximum(fp, 1e-4) + 0.5, 0.0, 1.0)
    out = sky + (ground - sky) * on_ground[None, :]
    return np.clip(out, 0.0, 1.0)


def _picture(item, lu, lv, fp, w, h):
    """
    Return the picture (3, n) of a poster or picture at (lu, lv) in its ``w`` x ``h`` area.

    That is the photo ``item.photo`` of the texture bank, scaled to cover the area and
    centred (the rest cropped), or else the procedural :func:`_photo`.
    """
    photo = int(item.photo)
    if photo < 0 or not texture_names():
        return _photo(item, lu, lv, fp, w, h)
    levels = texture_pyramid(photo % len(texture_names()))
    th, tw = levels[0].shape[:2]
    per_metre = min(tw / max(w, 1e-3), th / max(h, 1e-3))
    tx = (lu - np.float32(w / 2.0)) * np.float32(per_metre) + np.float32(tw / 2.0)
    ty = (np.float32(h / 2.0) - lv) * np.float32(per_metre) + np.float32(th / 2.0)
    return _sample_photo(levels, tx, ty, fp * np.float32(per_metre), cv2.BORDER_REFLECT)


def _text_lines(item, lu, lv, fp, w, h):
    """Ink coverage (n,) of lines of 'text' (a title and body lines) in a w x h block."""
    period = max(h / 9.0, 0.012)
    row = np.floor(lv / period)
    frac = lv / period - row
    word_len = period * (1.5 + 3.0 * _hash(row, row * 0 + 3, int(item.seed)))
    shift = lu + row * 0.37 * period
    word = np.floor(shift / word_len)
    inked = _hash(row, word, int(item.seed)) > 0.25
    title = row >= np.floor(h / period) - 1
    thick = np.where(title, 0.35, 0.18)
    ink = np.clip((thick - np.abs(frac - 0.5)) * period / np.maximum(fp, 1e-4) + 0.5, 0.0, 1.0)
    gap = shift - word * word_len < word_len - 0.6 * period
    margin = (lu > 0.1 * w) & (lu < w * (1.0 - 0.1 - 0.3 * (row == 0)))
    return ink * (inked & gap & margin)


def _apply_wall_decal(item, s, z, fp, alb, spec, use_spec):
    """Draw a :class:`~freespace_seg.sim.scene.WallDecal` on wall points (s, z)."""
    w, h = float(item.width), float(item.height)
    m = np.flatnonzero((s >= item.start) & (s <= item.start + w) & (z >= item.bottom)
                       & (z <= item.bottom + h))
    if not m.size:
        return
    lu = (s[m] - np.float32(item.start)).astype(np.float32)
    lv = (z[m] - np.float32(item.bottom)).astype(np.float32)
    f = fp[m]
    kind = item.kind
    edge = np.minimum(np.minimum(lu, w - lu), np.minimum(lv, h - lv))
    border = float(item.border)
    if kind == 'picture':
        col = _picture(item, lu, lv, f, w, h)
    elif kind == 'poster':  # a picture above lines of text on paper
        col = np.repeat(_col(item.color3), m.size, axis=1)
        inner = border + 0.04 * w
        top = (lv > 0.4 * h) & (lu > inner) & (lu < w - inner) & (lv < h - inner)
        if top.any():
            col[:, top] = _picture(item, lu[top] - inner, lv[top] - 0.4 * h, f[top],
                                   w - 2 * inner, 0.6 * h - inner)
        paper = np.asarray(item.color3)
        ink_color = (0.02, 0.02, 0.02) if float(paper.mean()) > 0.25 else (0.9, 0.9, 0.88)
        body = (lv <= 0.4 * h) & (lv > border + 0.03 * h)
        if body.any():
            ink = _text_lines(item, lu[body], lv[body] - border, f[body], w, 0.37 * h - border)
            col[:, body] += (_col(ink_color) - col[:, body]) * ink[None, :]
    elif kind == 'board':
        col = np.repeat(_col(item.color), m.size, axis=1)
        col *= 1.0 + 0.03 * _noise(lu, lv, 0.2, int(item.seed), f, 0)
        gen = np.random.default_rng(int(item.seed))
        for _ in range(int(gen.integers(2, 7))):  # marker strokes
            u0 = float(gen.uniform(0.05, 0.6)) * w
            u1 = u0 + float(gen.uniform(0.1, 0.4)) * w
            base = float(gen.uniform(0.2, 0.85)) * h
            amp = float(gen.uniform(0.0, 0.03))
            freq = float(gen.uniform(20.0, 80.0))
            d = np.abs(lv - base - amp * np.sin(freq * lu + float(gen.uniform(0, 6))))
            cov = np.clip((0.003 - d) / np.maximum(f, 1e-4) + 0.5, 0.0, 1.0)
            cov *= (lu > u0) & (lu < u1)
            col += (_col(item.color2) - col) * cov[None, :]
    else:  # a switch or a socket plate
        col = np.repeat(_col(item.color), m.size, axis=1)
        gangs = max(1, int(round(w / 0.075)))
        gw = w / gangs
        gu = _mod(lu, gw) - gw / 2.0
        gv = lv - h / 2.0
        if kind == 'switch':
            rocker = (np.abs(gu) < 0.28 * gw) & (np.abs(gv) < 0.3 * h)
            col[:, rocker] = _col(item.color2)
            rim = rocker & ((0.28 * gw - np.abs(gu) < 0.002) | (0.3 * h - np.abs(gv) < 0.002))
            col[:, rim] *= 0.7
        else:
            r = np.sqrt(gu * gu + gv * gv)
            col[:, r < 0.36 * min(gw, h)] = _col(item.color2)
            holes = np.hypot(np.abs(gu) - 0.0095, gv) < 0.0025
            col[:, holes] = _col(item.color3)
        col[:, edge < 0.002] *= 0.75  # the plate's edge
    if border > 0.0:
        col[:, edge < border] = _col(item.border_color)
    alb[:, m] = col
    if use_spec and item.specular > 0.0:
        spec[m] = item.specular
