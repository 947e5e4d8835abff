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

"""Procedural and photo textures: the albedo of a material at surface coordinates."""

import functools
import math
from statistics import NormalDist

import cv2
from freespace_seg.sim.photos import texture_names, texture_pyramid
import numpy as np


# --- procedural textures ---------------------------------------------------------------

_TILE = 256


@functools.lru_cache(maxsize=1)
def _noise_tiles():
    """Two tileable noise textures (smooth, fine), zero mean, unit std, float32."""
    gen = np.random.default_rng(12345)
    f = np.fft.fftfreq(_TILE)
    rad = np.hypot(f[:, None], f[None, :])
    tiles = []
    for sigma in (0.02, 0.12):
        spec = np.fft.fft2(gen.standard_normal((_TILE, _TILE))) * np.exp(-(rad / sigma) ** 2)
        tile = np.real(np.fft.ifft2(spec))
        tile = (tile - tile.mean()) / tile.std()
        tiles.append(np.ascontiguousarray(tile, dtype=np.float32))
    return tuple(tiles)


# Correlation length of each tile in tile pixels (roughly 1 / (2 pi sigma)).
_TILE_FEATURE = (8.0, 1.3)


def _mod(x, period):
    return x - np.floor(x * (1.0 / period)) * period


def _remap_points(src, mx, my, border):
    """cv2.remap at n points (1-D float32 maps); returns (n,) or (n, channels)."""
    n = mx.size
    cols = 1024
    rows = max(1, -(-n // cols))
    pad = rows * cols - n
    mx = np.pad(mx.ravel(), (0, pad)).reshape(rows, cols)
    my = np.pad(my.ravel(), (0, pad)).reshape(rows, cols)
    out = cv2.remap(src, mx, my, cv2.INTER_LINEAR, borderMode=border)
    return out.reshape((rows * cols,) + out.shape[2:])[:n]


def _noise(u, v, feature, seed, fp=None, which=0):
    """Smooth noise with features about ``feature`` metres big at surface coords (u, v)."""
    k = _TILE_FEATURE[which] / feature
    mx = _mod(u * k + (seed % 997) * 0.37, _TILE).astype(np.float32)
    my = _mod(v * k + (seed % 991) * 0.73, _TILE).astype(np.float32)
    out = _remap_points(_noise_tiles()[which], mx, my, cv2.BORDER_WRAP).reshape(u.shape)
    if fp is not None:
        out *= np.clip(feature / (2.0 * fp + 1e-9), 0.0, 1.0)
    return out


def _hash(i, j, seed):
    """Hash integer cells (i, j) to floats in [0, 1)."""
    n = (i.astype(np.int64) * 374761393 + j.astype(np.int64) * 668265263
         + np.int64(seed % 100003) * 982451653)
    n = (n ^ (n >> 13)) * 1274126177
    n = n ^ (n >> 16)
    return (n & 0xFFFF).astype(np.float32) * np.float32(1.0 / 65536.0)


def _line_coverage(dist, half_width, period, fp):
    """Fraction of a pixel footprint ``fp`` wide covered by periodic lines at distance dist."""
    lo = np.maximum(dist - fp * 0.5, -half_width)
    hi = np.minimum(dist + fp * 0.5, half_width)
    cov = np.clip((hi - lo) / np.maximum(fp, 1e-6), 0.0, 1.0)
    np.copyto(cov, np.float32(2.0 * half_width / period), where=fp > 0.5 * period)
    return cov


def _col(c):
    return np.asarray(c, dtype=np.float32).reshape(3, 1)


def _lerp(c1, c2, f):
    """Planar (3, n) blend of two colours by f (n,)."""
    c1 = _col(c1)
    return c1 + (_col(c2) - c1) * f[None, :]


def material_albedo(mat, u, v, fp):
    """
    Linear RGB albedo, planar (3, n), of material ``mat`` at surface coords u, v (metres).

    ``fp`` is the pixel footprint on the surface in metres, used to fade out detail that the
    pixel cannot resolve (instead of aliasing it).
    """
    u = np.asarray(u, dtype=np.float32).ravel()
    v = np.asarray(v, dtype=np.float32).ravel()
    fp = np.broadcast_to(np.asarray(fp, dtype=np.float32), u.shape)
    if mat.angle:
        c, s = math.cos(mat.angle), math.sin(mat.angle)
        u, v = c * u + s * v, c * v - s * u
    u = u + float(mat.offset[0])
    v = v + float(mat.offset[1])
    var = float(mat.variation)
    seed = int(mat.seed)
    kind = mat.kind
    if kind == 'wood':
        w, length = float(mat.scale), float(mat.scale2)
        row = np.floor(v * (1.0 / w))
        shift = _hash(row, row * 0 + 7, seed) * length
        col = np.floor((u + shift) * (1.0 / length))
        tone = _hash(row, col, seed)
        grain = _noise(u * 0.1, v * 2.0, 0.02, seed, fp, 0)
        out = _lerp(mat.color, mat.color2, np.clip(tone * (0.3 + 2.0 * var), 0.0, 1.0))
        out *= 1.0 + 0.12 * grain
        dv = np.abs(_mod(v, w) - w / 2.0)
        seam_v = _line_coverage(w / 2.0 - dv, 0.0015, w, fp)
        du = np.abs(_mod(u + shift, length) - length / 2.0)
        seam_u = _line_coverage(length / 2.0 - du, 0.0015, length, fp)
        out *= (1.0 - 0.55 * (1.0 - (1.0 - seam_v) * (1.0 - seam_u)))
        return out
    if kind in ('tile', 'checker'):
        size, grout = float(mat.scale), float(mat.scale2)
        i, j = np.floor(u * (1.0 / size)), np.floor(v * (1.0 / size))
        if kind == 'checker':
            out = _lerp(mat.color, mat.color2, _mod(i + j, 2.0))
            grout_color = _col(mat.color) * 0.8
        else:
            out = np.repeat(_col(mat.color), u.size, axis=1)
            grout_color = _col(mat.color2)
        tone = 1.0 + var * 2.0 * (_hash(i, j, seed) - 0.5)
        tone += var * 0.5 * _noise(u, v, size * 0.3, seed, fp, 0)
        out *= tone
        du = np.abs(_mod(u, size) - size / 2.0)
        dv = np.abs(_mod(v, size) - size / 2.0)
        cov = 1.0 - ((1.0 - _line_coverage(size / 2.0 - du, grout / 2.0, size, fp))
                     * (1.0 - _line_coverage(size / 2.0 - dv, grout / 2.0, size, fp)))
        out += (grout_color - out) * cov
        return out
    if kind in _SHIFTED_ALBEDO:
        return _SHIFTED_ALBEDO[kind](mat, u, v, fp, var, seed)
    if kind in _STONE_ALBEDO:
        return _stone(mat, u, v, fp, var, seed, _STONE_ALBEDO[kind])
    if kind == 'photo':
        levels = texture_pyramid(seed % len(texture_names()))
        per_metre = max(levels[0].shape[:2]) / max(float(mat.scale), 1e-3)
        out = _sample_photo(levels, u * per_metre, -v * per_metre, fp * per_metre,
                            cv2.BORDER_WRAP)
        out *= _col(mat.color)
        return out
    if kind == 'noise':
        fine = _noise(u, v, max(float(mat.scale), 1e-3), seed, fp, 1)
        coarse = _noise(u, v, float(mat.scale2), seed + 1, fp, 0)
        out = _lerp(mat.color, mat.color2, np.clip(0.5 + 0.25 * coarse, 0.0, 1.0))
        out *= np.clip(1.0 + var * (fine + 0.3 * coarse), 0.2, 2.0)
        return out
    if kind == 'stripes':
        period = float(mat.scale)
        d = np.abs(_mod(v, period) - period / 2.0)
        out = _lerp(mat.color, mat.color2, _line_coverage(period / 2.0 - d, period / 4.0,
                                                          period, fp))
        out *= 1.0 + var * _noise(u, v, 0.3, seed, fp, 0)
        return out
    out = np.repeat(_col(mat.color), u.size, axis=1)
    if var > 0.0:
        n = _noise(u, v, float(mat.scale2), seed, fp, 0)
        n += 0.5 * _noise(u, v, max(float(mat.scale), 0.003), seed + 3, fp, 1)
        out *= 1.0 + var * n
    return out


def _sample_photo(levels, tx, ty, fp, border):
    """
    Bilinear samples, planar (3, n), of a photo's mip pyramid at texel coords (tx, ty).

    The coordinates and the pixel footprint ``fp`` are in texels of level 0; each point reads
    the level whose texels are about as big as its footprint. ``border``: cv2 border mode
    (BORDER_WRAP tiles the photo).
    """
    lod = np.clip(np.log2(np.maximum(fp, 1.0)) + 0.5, 0, len(levels) - 1).astype(np.int8)
    lo, hi = (int(lod.min()), int(lod.max())) if lod.size else (0, 0)
    out = np.empty((3, tx.size), np.float32)
    for lvl in range(lo, hi + 1):
        idx = np.flatnonzero(lod == lvl) if hi > lo else slice(None)
        tex = levels[lvl]
        h, w = tex.shape[:2]
        f = np.float32(0.5 ** lvl)
        mx = tx[idx] * f - np.float32(0.5)
        my = ty[idx] * f - np.float32(0.5)
        if border == cv2.BORDER_WRAP:
            mx = _mod(mx, w)
            my = _mod(my, h)
        if mx.size:
            out[:, idx] = _remap_points(tex, mx.astype(np.float32), my.astype(np.float32),
                                        border).T
    return out


def _dots(u, v, cell, radius, fp, seed=None, fraction=1.0):
    """
    Discs of ``radius`` on a grid of ``cell``: (coverage (n,), per-cell hash in [0, 1)).

    With a ``seed`` the discs are jittered in their cells and only ``fraction`` of the cells
    hold one. Discs the pixel footprint ``fp`` cannot resolve fade to their mean coverage.
    """
    i, j = np.floor(u * (1.0 / cell)), np.floor(v * (1.0 / cell))
    du = _mod(u, cell) - cell / 2.0
    dv = _mod(v, cell) - cell / 2.0
    h = _hash(i, j, 0 if seed is None else seed)
    if seed is not None:
        slack = cell / 2.0 - radius
        du = du - slack * (2.0 * _hash(i, j, seed + 11) - 1.0)
        dv = dv - slack * (2.0 * _hash(j, i, seed + 23) - 1.0)
    cov = np.clip((radius - np.sqrt(du * du + dv * dv)) / np.maximum(fp, 1e-6) + 0.5, 0.0, 1.0)
    cov = np.where(h < fraction, cov, 0.0).astype(np.float32)
    mean = np.float32(min(fraction, 1.0) * math.pi * radius * radius / (cell * cell))
    np.copyto(cov, mean, where=fp > 0.5 * cell)
    return cov, h


def _terrazzo(mat, u, v, fp, var, seed):
    """Speckled stone: chips of two sizes and tones of ``color2`` in a ``color`` matrix."""
    cell, fraction = float(mat.scale), float(mat.scale2)
    out = np.repeat(_col(mat.color), u.size, axis=1)
    out *= 1.0 + var * _noise(u, v, 0.3, seed, fp, 0)
    for k, (size, shade) in enumerate(((1.0, 1.0), (0.45, 1.6))):
        cov, h = _dots(u + 17.0 * k, v - 5.0 * k, cell * size, 0.32 * cell * size, fp,
                       seed + 101 * k + 1, fraction)
        chip = _col(mat.color2) * (shade * (0.5 + h))
        out += (np.clip(chip, 0.0, 1.0) - out) * cov
    return out


def _herringbone(mat, u, v, fp, var, seed):
    """Parquet: planks of width ``scale``, length ``scale2``, laid in a herringbone."""
    w = float(mat.scale)
    n = max(2, int(round(float(mat.scale2) / w)))
    x, y = u * (1.0 / w), v * (1.0 / w)
    i, j = np.floor(x), np.floor(y)
    d = i - j
    strand = np.floor(d * (1.0 / (2 * n)))
    dm = d - strand * (2 * n)
    flat = dm < n
    start = j + strand * (2 * n)                       # flat planks: x in [start, start + n)
    k = i - n - strand * (2 * n)                       # upright planks: y in [k + 1 - n, k + 1)
    lx = np.where(flat, x - start, x - i)
    ly = np.where(flat, y - j, y - (k + 1 - n))
    along, across = np.where(flat, lx, ly), np.where(flat, ly, lx)
    plank = _hash(strand, np.where(flat, j, k) * 2 + flat, seed)
    out = _lerp(mat.color, mat.color2, np.clip(plank * (0.3 + 2.0 * var), 0.0, 1.0))
    grain = _noise(along * (0.1 * w), across * (2.0 * w) + plank * 13.0, 0.02, seed, fp, 0)
    out *= 1.0 + 0.12 * grain
    edge = np.minimum(np.minimum(along, n - along), np.minimum(across, 1.0 - across)) * w
    seam = _line_coverage(edge, 0.0015, w, fp)
    out *= 1.0 - 0.55 * seam
    return out


def _studded(mat, u, v, fp, var, seed):
    """Rubber flooring: a saturated ``color`` with round studs of ``color2`` every ``scale``."""
    cell = float(mat.scale)
    out = np.repeat(_col(mat.color), u.size, axis=1)
    out *= 1.0 + var * _noise(u, v, 0.5, seed, fp, 0)
    cov, _ = _dots(u, v, cell, float(mat.scale2) * cell, fp)
    out += (_col(mat.color2) - out) * cov
    return out


def _brick(mat, u, v, fp, var, seed):
    """Running-bond brick: courses ``scale`` high, bricks three times as long, mortar joints."""
    h, joint = float(mat.scale), float(mat.scale2)
    length = 3.0 * h
    row = np.floor(v * (1.0 / h))
    shift = _mod(row, 2.0) * (length / 2.0)
    col = np.floor((u + shift) * (1.0 / length))
    tone = 1.0 + var * 2.0 * (_hash(row, col, seed) - 0.5)
    out = np.repeat(_col(mat.color), u.size, axis=1) * tone
    out *= 1.0 + 0.5 * var * _noise(u, v, 0.05, seed, fp, 1)
    dv = np.abs(_mod(v, h) - h / 2.0)
    du = np.abs(_mod(u + shift, length) - length / 2.0)
    cov = 1.0 - ((1.0 - _line_coverage(h / 2.0 - dv, joint / 2.0, h, fp))
                 * (1.0 - _line_coverage(length / 2.0 - du, joint / 2.0, length, fp)))
    out += (_col(mat.color2) - out) * cov
    return out


#: Material kinds of the ``shifted`` style (never drawn by the default one).
_SHIFTED_ALBEDO = {'terrazzo': _terrazzo, 'herringbone': _herringbone, 'studded': _studded,
                   'brick': _brick}


# --- stone floors (factor ``stone_floors``) ---------------------------------------------

def _fade(cov, width, fp, mean):
    """Fade a line or speck coverage to its ``mean`` where the footprint outgrows ``width``."""
    alpha = np.clip(width / np.maximum(2.0 * fp, 1e-9), 0.0, 1.0).astype(np.float32)
    return cov * alpha + np.float32(mean) * (1.0 - alpha)


def _veins(n, w, width, fp):
    """Soft lines of relative width ``w`` along the zero lines of unit noise ``n``."""
    cov = np.clip(1.0 - np.abs(n) * (1.0 / w), 0.0, 1.0)
    return _fade(cov * cov, width, fp, 0.27 * w)


def _marble(mat, u, v, fp, var, seed):
    """
    Veined marble: a cloudy ``color`` ground with veins of ``color2`` about ``scale`` apart.

    The veins follow the zero lines of smooth, warped two-octave noise stretched along u, so
    they wander mostly in one direction: thin sharp veins with a soft halo and a finer,
    fainter network between them.
    """
    feat = max(float(mat.scale), 1e-3)
    warp = _noise(u, v, feat, seed + 3, None, 0) * np.float32(0.5 * feat)
    su, sv = (u + warp) * np.float32(0.4), v + warp
    main = (_noise(su, sv, 0.5 * feat, seed, None, 0)
            + 0.35 * _noise(su, sv, 0.12 * feat, seed + 7, None, 0))
    fine = _noise(su * np.float32(1.3) + 5.0, sv, 0.25 * feat, seed + 5, None, 0)
    out = np.repeat(_col(mat.color), u.size, axis=1)
    cloud = _noise(u, v, 1.5 * feat, seed + 1, fp, 0)
    out *= 1.0 + var * cloud
    out += (_col(mat.color2) - out) * np.clip(0.06 + 0.06 * cloud, 0.0, 1.0)
    cov = (0.3 * _veins(main, 0.15, 0.04 * feat, fp) + _veins(main, 0.04, 0.01 * feat, fp)
           + 0.55 * _veins(fine, 0.035, 0.005 * feat, fp))
    out += (_col(mat.color2) - out) * np.clip(cov, 0.0, 1.0)
    return out


def _specks(n, density, grain, fp):
    """Coverage of the specks where unit noise ``n`` exceeds the ``density`` quantile."""
    t = NormalDist().inv_cdf(min(max(1.0 - density, 0.01), 0.99))
    cov = np.clip((n - np.float32(t)) * np.float32(1.0 / 0.12) + 0.5, 0.0, 1.0)
    return _fade(cov, grain, fp, density)


def _granite(mat, u, v, fp, var, seed):
    """
    Granite: grains about ``scale`` big on a ``color`` ground.

    Dark specks of ``color2`` cover a ``variation`` share of it, light ones 0.4 times that.
    """
    grain = max(float(mat.scale), 1e-4)
    out = np.repeat(_col(mat.color), u.size, axis=1)
    out *= 1.0 + 0.06 * _noise(u, v, 0.15, seed, fp, 0)
    dark = _specks(_noise(u, v, grain, seed + 1, None, 1), var, grain, fp)
    out += (_col(mat.color2) - out) * dark
    light = np.clip(_col(mat.color) * 1.7 + 0.12, 0.0, 1.0)
    cov = _specks(_noise(u + 7.1, v - 3.3, 1.3 * grain, seed + 2, None, 1), 0.4 * var, grain, fp)
    out += (light - out) * cov
    return out


def _stone(mat, u, v, fp, var, seed, pattern):
    """
    Draw a stone slab (``scale2`` 0) or polished tiles ``scale2`` wide with 2 mm joints.

    Each tile is its own cut of the stone: the pattern is shifted, every other tile turned a
    quarter, with a slight tone of its own; the joints are a darker shade of ``color``.
    """
    size = float(mat.scale2)
    if size <= 0.0:
        return pattern(mat, u, v, fp, var, seed)
    i, j = np.floor(u * (1.0 / size)), np.floor(v * (1.0 / size))
    turn = _hash(i, j, seed + 7) < 0.5
    su = u + _hash(i, j, seed + 5) * np.float32(37.0)
    sv = v + _hash(j, i, seed + 9) * np.float32(41.0)
    out = pattern(mat, np.where(turn, sv, su), np.where(turn, su, sv), fp, var, seed)
    out *= 1.0 + 0.08 * (_hash(i, j, seed + 11) - 0.5)
    du = np.abs(_mod(u, size) - size / 2.0)
    dv = np.abs(_mod(v, size) - size / 2.0)
    cov = 1.0 - ((1.0 - _line_coverage(size / 2.0 - du, 0.001, size, fp))
                 * (1.0 - _line_coverage(size / 2.0 - dv, 0.001, size, fp)))
    out += (_col(mat.color) * 0.6 - out) * cov
    return out


#: Stone floor kinds of the default style (factor ``stone_floors``).
_STONE_ALBEDO = {'marble': _marble, 'granite': _granite}
