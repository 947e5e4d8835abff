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
Procedural surface materials.

Marble, wood planks, tiles with grout, carpet, concrete, paint, wallpaper, glossy white,
fabric, metal and rugs.

A material is a dict: ``kind``, colours ``c1`` and ``c2`` (linear RGB), ``scale`` (metres per
pattern repeat), ``angle`` (pattern turn on the floor), ``gloss`` (specular strength),
``shine`` (Blinn-Phong exponent), ``reflect`` (mirror share, floors only), ``rough`` (blur of
the mirror image in pixels) and ``noise`` (which noise lattice). :func:`albedo` evaluates it at
hit points; ``fw`` is each pixel's footprint on the surface in metres, used to fade patterns
finer than a pixel so that far floors do not alias.
"""

import numpy as np

LATTICE = 64


def value_noise(lattice, x, y):
    """Smooth value noise in [0, 1] on a wrapping ``LATTICE`` x ``LATTICE`` grid."""
    xf, yf = np.floor(x), np.floor(y)
    fx, fy = x - xf, y - yf
    fx, fy = fx * fx * (3 - 2 * fx), fy * fy * (3 - 2 * fy)
    ix, iy = xf.astype(np.int64) % LATTICE, yf.astype(np.int64) % LATTICE
    jx, jy = (ix + 1) % LATTICE, (iy + 1) % LATTICE
    a = lattice[iy, ix] + (lattice[iy, jx] - lattice[iy, ix]) * fx
    b = lattice[jy, ix] + (lattice[jy, jx] - lattice[jy, ix]) * fx
    return a + (b - a) * fy


def fbm(lattice, x, y, freq, octaves, fw):
    """Fractal noise in about [0, 1]; octaves finer than the pixel footprint fade to 0.5."""
    out = np.zeros(np.shape(x), dtype=np.float32)
    amp, total = 1.0, 0.0
    for k in range(octaves):
        f = freq * 2.0 ** k
        keep = np.clip(1.5 - 2.0 * fw * f, 0.0, 1.0)
        out += amp * (0.5 + keep * (value_noise(lattice, x * f + 17.3 * k, y * f) - 0.5))
        total += amp
        amp *= 0.5
    return out / total


def hash01(i, j, salt=0):
    """Deterministic pseudo-random numbers in [0, 1) from integer cells."""
    h = (np.asarray(i, np.int64) * 73856093) ^ (np.asarray(j, np.int64) * 19349663) ^ (
        salt * 83492791)
    h = (h ^ (h >> 13)) * 1274126177
    return ((h ^ (h >> 16)) & 0xFFFF).astype(np.float32) / 65536.0


def lines(frac, width, fw):
    """Return the coverage in [0, 1] of lines ``width`` wide at the cell borders of ``frac``."""
    w = np.maximum(width, fw)
    dist = np.minimum(frac, 1.0 - frac)
    return np.clip(1.0 - dist / w, 0.0, 1.0) * np.minimum(1.0, width / w)


def mix(a, b, t):
    t = np.asarray(t, dtype=np.float32)[:, None]
    return np.asarray(a, np.float32) * (1 - t) + np.asarray(b, np.float32) * t


def surface_uv(p, n, angle=0.0):
    """Texture coordinates in metres: floor-like faces use (x, y) turned by ``angle``."""
    flat = np.abs(n[:, 2]) > 0.5
    ca, sa = np.cos(angle), np.sin(angle)
    along_x = np.abs(n[:, 1]) >= np.abs(n[:, 0])
    u = np.where(flat, ca * p[:, 0] + sa * p[:, 1], np.where(along_x, p[:, 0], p[:, 1]))
    v = np.where(flat, -sa * p[:, 0] + ca * p[:, 1], p[:, 2])
    return u.astype(np.float32), v.astype(np.float32)


def albedo(m, p, n, fw, lattices):
    """Return the linear RGB colour (N, 3) of material ``m`` at points ``p``, normals ``n``."""
    lat = lattices[m.get('noise', 0) % len(lattices)]
    u, v = surface_uv(p, n, m.get('angle', 0.0))
    s = m.get('scale', 1.0)
    kind = m['kind']
    c1, c2 = m['c1'], m['c2']
    if kind == 'marble':
        turb = fbm(lat, u / s, v / s, 1.5, 5, fw / s)
        vein = np.abs(np.sin((u * 0.8 + v * 0.6) / s * 3.0 + 7.0 * turb))
        strength = lines(vein * 0.5, 0.04, fw / s * 4.0) * 0.9
        base = 0.92 + 0.16 * fbm(lat, u / s + 5, v / s, 3.0, 3, fw / s)
        col = mix(c1, c2, strength) * base[:, None]
        if m.get('tile', 0.0) > 0:
            t = m['tile']
            g = np.maximum(lines(np.mod(u / t, 1.0), 0.002 / t, fw / t),
                           lines(np.mod(v / t, 1.0), 0.002 / t, fw / t))
            col = mix(col, np.asarray(c1) * 0.6, g)
        return col
    if kind == 'wood':
        w, length = m.get('plank', 0.15), m.get('length', 1.2)
        row = np.floor(v / w)
        shift = hash01(row, 0, 3) * length
        col_i = np.floor((u + shift) / length)
        tone = 0.75 + 0.5 * hash01(row, col_i, 5)
        grain = fbm(lat, (u + shift) * 0.5, v * 12.0 + row * 3.1, 1.0, 4, fw * 12.0)
        stripes = 0.5 + 0.5 * np.sin(v * 160.0 + 9.0 * grain + row)
        fade = np.clip(1.5 - fw * 160.0 / 6.28 * 2.0, 0.0, 1.0)
        g = 0.5 + (stripes - 0.5) * fade
        col = mix(c1, c2, 0.6 * g) * tone[:, None]
        gap = np.maximum(lines(np.mod(v / w, 1.0), 0.0015 / w, fw / w),
                         lines(np.mod((u + shift) / length, 1.0), 0.0015 / length, fw / length))
        return col * (1.0 - 0.6 * gap)[:, None]
    if kind == 'tile':
        t = s
        iu, iv = np.floor(u / t), np.floor(v / t)
        tone = 1.0 + m.get('vary', 0.08) * (hash01(iu, iv, 7) - 0.5) * 2.0
        if m.get('checker', False):
            col = mix(c1, np.asarray(c1) * 0.55 + 0.05, np.mod(iu + iv, 2.0))
        else:
            col = np.tile(np.asarray(c1, np.float32), (u.shape[0], 1))
        grain = 0.95 + 0.1 * fbm(lat, u * 4, v * 4, 1.0, 2, fw * 4)
        col = col * tone[:, None] * grain[:, None]
        gw = m.get('grout', 0.004) / t
        g = np.maximum(lines(np.mod(u / t, 1.0), gw, fw / t),
                       lines(np.mod(v / t, 1.0), gw, fw / t))
        return mix(col, c2, g)
    if kind == 'carpet':
        big = fbm(lat, u / s, v / s, 1.0, 3, fw / s)
        fine = fbm(lat, u * 40.0, v * 40.0, 1.0, 2, fw * 40.0)
        return np.asarray(c1, np.float32) * (0.75 + 0.3 * big + 0.3 * (fine - 0.5))[:, None]
    if kind == 'concrete':
        big = fbm(lat, u / s, v / s, 1.0, 5, fw / s)
        spots = fbm(lat, u * 25 + 3, v * 25, 1.0, 2, fw * 25)
        col = mix(c1, c2, np.clip(big * 1.4 - 0.2, 0, 1))
        return col * (0.9 + 0.2 * spots)[:, None]
    if kind == 'wallpaper':
        period = s
        if m.get('pattern', 0) == 0:
            t = 0.5 + 0.5 * np.sin(u / period * 2 * np.pi)
            t = np.where(t > 0.5, 1.0, 0.0) * np.clip(1.5 - fw / period * 4.0, 0.0, 1.0)
        else:
            a, b = np.sin(u / period * 2 * np.pi), np.sin(v / period * 2 * np.pi)
            t = np.clip((a * b) ** 2 * 2.0, 0, 1) * np.clip(1.5 - fw / period * 4.0, 0.0, 1.0)
        col = mix(c1, c2, 0.5 * t)
    elif kind == 'rug':
        t = hash01(np.floor(u / s), np.floor(v / s), 11)
        t = 0.5 + (t - 0.5) * np.clip(1.5 - fw / s * 2.0, 0.0, 1.0)
        col = mix(c1, c2, t) * (0.85 + 0.3 * fbm(lat, u * 30, v * 30, 1.0, 2, fw * 30))[:, None]
    elif kind == 'fabric':
        weave = 0.5 + 0.5 * np.sin(u * 300.0) * np.sin(v * 300.0)
        weave = 0.5 + (weave - 0.5) * np.clip(1.5 - fw * 100.0, 0.0, 1.0)
        col = np.asarray(c1, np.float32) * (0.85 + 0.2 * weave)[:, None]
    else:  # paint, glossy, plain, metal, ceiling
        k = m.get('texture', 0.04)
        grain = fbm(lat, u * 2, v * 2, 1.0, 4, fw * 2)
        col = np.asarray(c1, np.float32) * (1.0 + k * (grain - 0.5) * 2.0)[:, None]
    base = m.get('baseboard', 0.0)
    if base > 0.0 and kind in ('paint', 'wallpaper', 'glossy'):
        col = np.where(((p[:, 2] < base) & (np.abs(n[:, 2]) < 0.5))[:, None],
                       np.asarray(c2 if kind != 'wallpaper' else c1, np.float32) * 0.9, col)
    return col.astype(np.float32)
