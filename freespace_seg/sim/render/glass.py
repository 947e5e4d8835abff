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

"""Glass panes (what lies behind them) and floor reflections."""

import math

import cv2
from freespace_seg.sim.render.cast import _cast, _crop_rects, _object_points, ID_FLOOR, ID_WALL0
from freespace_seg.sim.render.decals import _decal_cover
from freespace_seg.sim.render.rays import _screen_rects
from freespace_seg.sim.render.shading import _shade
from freespace_seg.sim.render.textures import _col
from freespace_seg.sim.scene import is_glass
import numpy as np


# --- glass and floor reflections --------------------------------------------------------

def _glass_flags(scene):
    """Return a bool per obstacle, True for glass panes (None when there are none)."""
    flags = np.array([is_glass(o) for o in scene.obstacles], dtype=bool)
    return flags if flags.any() else None


def _see_through(scene, origin, dx, dy, dz, t, ids, rects, glass):
    """
    Look through the glass panes: the hits (t, ids) with every pane left out.

    Returns (t_seen, ids_seen, pane) where ``pane`` (H, W) is True where the ray first hit a
    pane (those pixels keep their label and depth; the rest of the arrays are unchanged).
    """
    base = ID_WALL0 + len(scene.walls()[0])
    lookup = np.zeros(base + len(scene.obstacles), dtype=bool)
    lookup[base:] = glass
    pane = lookup[ids]
    if not pane.any():
        return t, ids, pane
    rows, cols = np.flatnonzero(pane.any(axis=1)), np.flatnonzero(pane.any(axis=0))
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    crop = (slice(r0, r1), slice(c0, c1))
    t2, ids2 = _cast(scene, origin, dx[crop], dy[crop], dz[crop],
                     _crop_rects(rects, r0, r1, c0, c1), skip=glass)
    t_seen, ids_seen = t.copy(), ids.copy()
    sub = pane[crop]
    t_seen[crop][sub] = t2[sub]
    ids_seen[crop][sub] = ids2[sub]
    return t_seen, ids_seen, pane


def _reflect_floor(rad, scene, intrinsics, origin, r_wo, dx, dy, dz, t, ids, config, glass):
    """
    Blend the mirror image of the room into the floor pixels of ``rad`` (in place).

    The ray reflected at a floor point is the ray from the camera mirrored below the floor
    (z -> -z) through that point: it is cast from there with the usual code (obstacles in the
    rectangles their mirror images project to), only for the rows that hold floor, and
    shaded for the floor pixels only. Glass panes are left out of reflections.
    """
    app = scene.appearance
    floor = ids == ID_FLOOR
    rows = np.flatnonzero(floor.any(axis=1))
    if not rows.size:
        return
    h, w = t.shape
    r0, r1 = int(rows[0]), int(rows[-1]) + 1
    mirror = np.array([origin[0], origin[1], -origin[2]], dtype=np.float64)
    pts = _object_points(scene).copy()
    pts[..., 2] *= -1.0
    rects = _crop_rects(_screen_rects(pts, origin, r_wo, intrinsics), r0, r1, 0, w)
    mdz = -dz[r0:r1]
    tr, idr = _cast(scene, mirror, dx[r0:r1], dy[r0:r1], mdz, rects, skip=glass)
    sel = np.flatnonzero(floor[r0:r1].ravel())
    c_dx = dx[r0:r1].ravel()[sel]
    c_dy = dy[r0:r1].ravel()[sel]
    c_dz = mdz.ravel()[sel]
    c_t = tr.ravel()[sel]
    refl = _shade(scene, intrinsics, mirror, c_dx[None], c_dy[None], c_dz[None], c_t[None],
                  idr.ravel()[sel][None], None, config).reshape(3, -1)
    idx = r0 * w + sel  # the floor pixels in the whole image
    t_floor = t.ravel()[idx]
    if app.floor_roughness > 0.0:
        # A rough floor blurs what is reflected, the more the farther it is from the floor.
        hc = r1 - r0
        img = np.zeros((hc * w, 3), np.float32)
        img[sel] = refl.T
        wgt = np.zeros(hc * w, np.float32)
        wgt[sel] = 1.0
        sigma = max(0.5, float(app.floor_roughness) * w / 100.0)
        img = cv2.GaussianBlur(img.reshape(hc, w, 3), (0, 0), sigma).reshape(-1, 3)
        wgt = cv2.GaussianBlur(wgt.reshape(hc, w), (0, 0), sigma).ravel()
        blurred = img[sel].T / np.maximum(wgt[sel], 1e-6)
        with np.errstate(invalid='ignore'):
            k = np.clip((c_t - t_floor) / t_floor, 0.0, 1.0)
        k[~np.isfinite(c_t)] = 1.0
        refl += (blurred - refl) * k
    # Fresnel-like: a fifth of the reflectivity looking straight down, all of it grazing.
    grazing = (1.0 - np.clip(-dz.ravel()[idx], 0.0, 1.0)) ** 5
    f = np.float32(app.floor_reflectivity) * (0.2 + 0.8 * grazing)
    if scene.decals:  # rugs, mats and tape are matte
        xs = origin[0] + t_floor * dx.ravel()[idx]
        ys = origin[1] + t_floor * dy.ravel()[idx]
        for decal in scene.decals:
            f[_decal_cover(decal, xs, ys)] = 0.0
    flat = rad.reshape(3, -1)
    for c in range(3):
        flat[c, idx] += (refl[c] - flat[c, idx]) * f


def _composite_glass(rad, scene, origin, dx, dy, dz, t, ids, pane, config):
    """
    Turn the radiance behind the panes into the look of glass (in place).

    What lies behind is tinted by the pane (its transmittance less the reflected part); a
    Fresnel sheen of the room's mean radiance, modulated by soft diagonal streaks, and
    Blinn-Phong highlights of the two strongest lights are added. A pane's edge faces are
    darker (seen through more glass).
    """
    app = scene.appearance
    flat = rad.reshape(3, -1)
    env = rad[:, ::4, ::4].reshape(3, -1).mean(axis=1)
    pix = np.flatnonzero(pane.ravel())
    base = ID_WALL0 + len(scene.walls()[0])
    owner = ids.ravel()[pix].astype(np.int64) - base
    ox, oy, oz = (float(v) for v in origin)
    lights = sorted(app.lights, key=lambda li: -li.intensity)[:2]
    for m in np.unique(owner):
        obj = scene.obstacles[int(m)]
        mat = obj.material
        gi = pix[owner == m]
        d_x, d_y, d_z = dx.ravel()[gi], dy.ravel()[gi], dz.ravel()[gi]
        tt = t.ravel()[gi]
        x, y, z = ox + tt * d_x, oy + tt * d_y, oz + tt * d_z
        c, s = math.cos(float(obj.yaw)), math.sin(float(obj.yaw))
        px, py = x - float(obj.x), y - float(obj.y)
        lx, ly = c * px + s * py, c * py - s * px
        ex = np.abs(np.abs(lx) - float(obj.size_x) / 2.0)
        ey = np.abs(np.abs(ly) - float(obj.size_y) / 2.0)
        face = ey <= np.minimum(ex, np.abs(z - float(obj.height)))  # a broad face, not an edge
        sign = np.where(-s * d_x + c * d_y > 0.0, -1.0, 1.0).astype(np.float32)
        n_x, n_y = -s * sign, c * sign  # the broad face's normal, towards the camera
        cos_i = np.clip(-(d_x * n_x + d_y * n_y), 0.0, 1.0)
        fresnel = 0.04 + 0.96 * (1.0 - cos_i) ** 5
        refl = np.clip(fresnel + np.float32(mat.scale2), 0.0, 0.9)
        trans = _col(mat.color) * (1.0 - refl)[None, :]
        trans[:, ~face] *= _col(mat.color) * 0.6
        ca, sa = math.cos(float(mat.angle)), math.sin(float(mat.angle))
        phase = (lx * ca + z * sa) * np.float32(1.0 / max(float(mat.scale), 0.05))
        phase += np.float32((int(mat.seed) % 1000) * 0.013)
        streak = (0.5 + 0.5 * np.cos(np.float32(2.0 * math.pi) * phase)) ** 3
        sheen = _col(env) * (refl * (0.5 + 1.5 * streak))[None, :]
        out = trans * flat[:, gi] + sheen
        if config.specular and mat.specular > 0.0:
            for light in lights:
                qx, qy, qz = (float(v) for v in light.position)
                vx, vy, vz = qx - x, qy - y, qz - z
                d2 = vx * vx + vy * vy + vz * vz
                inv = 1.0 / np.sqrt(d2 + 1e-6)
                ndotl = (vx * n_x + vy * n_y) * inv
                hx, hy, hz = vx * inv - d_x, vy * inv - d_y, vz * inv - d_z
                hn = 1.0 / np.sqrt(hx * hx + hy * hy + hz * hz + 1e-12)
                ndoth = np.maximum((hx * n_x + hy * n_y) * hn, 1e-6)
                spec = np.float32(mat.specular) * np.exp(np.float32(mat.shininess)
                                                         * np.log(ndoth))
                spec *= (ndotl > 0.0) * face
                spec *= np.float32(light.intensity) / (1.0 + d2 * np.float32(1.0 / 6.0))
                out += _col(light.color) * spec[None, :]
        flat[:, gi] = out
