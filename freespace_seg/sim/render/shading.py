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

"""Shading: lights, top-down shadow and contact maps, walls and objects."""

import math

import cv2
from freespace_seg.sim.render.cast import ID_CEILING, ID_FLOOR, ID_NONE, ID_WALL0
from freespace_seg.sim.render.decals import _apply_decal, _apply_door, _apply_wall_decal
from freespace_seg.sim.render.textures import _col, _line_coverage, _remap_points, material_albedo
from freespace_seg.sim.scene import Box, Cylinder, is_glass, STEP_LABEL
import numpy as np


# --- top-down shadow and contact maps --------------------------------------------------

_SHADOW_SAMPLES = ((0.0, 0.0), (1.0, 0.0), (-0.5, 0.866), (-0.5, -0.866))


def _shadow_points(obstacles):
    """Points (M, 24, 3) whose convex hull is each obstacle (boxes repeat their corners)."""
    out = np.empty((len(obstacles), 24, 3))
    for m, obj in enumerate(obstacles):
        out[m] = obj.ring(12) if isinstance(obj, Cylinder) else np.tile(obj.corners(), (3, 1))
    return out


def _topdown_maps(scene, use_shadows):
    """Grid (x0, y0, cell) and float32 maps (L + 1, h, w): per-light lit factor, contact."""
    lights = scene.appearance.lights
    key = (use_shadows, tuple(scene.obstacles), scene.outline, lights,
           scene.appearance.contact_shadows)
    cached = scene._cache.get('topdown')
    if cached is not None and cached[0] == key:
        return cached[1]
    x0, y0, x1, y1 = scene.bounds()
    margin = 0.1
    x0, y0, x1, y1 = x0 - margin, y0 - margin, x1 + margin, y1 + margin
    cell = min(max(max(x1 - x0, y1 - y0) / 320.0, 0.005), 0.04)
    gw, gh = int(math.ceil((x1 - x0) / cell)), int(math.ceil((y1 - y0) / cell))
    shift = 4
    scale = cell / (1 << shift)
    origin = np.array([x0, y0])
    maps = np.ones((len(lights) + 1, gh, gw), np.float32)
    casters = [o for o in scene.obstacles if not is_glass(o)]  # glass lets the light through
    pts = _shadow_points(casters) if casters else None
    for li, light in enumerate(lights):
        if not use_shadows or pts is None:
            continue
        lp = np.asarray(light.position, dtype=np.float64)
        n_samples = len(_SHADOW_SAMPLES) if light.radius > 0 else 1
        acc = np.zeros((gh, gw), np.float32)
        layer = np.empty((gh, gw), np.uint8)
        for k in range(n_samples):
            off = np.asarray(_SHADOW_SAMPLES[k]) * light.radius
            pos = lp + (off[0], off[1], 0.0)
            # Tall things are cut at 80 % of the light's height: shadows at most 5x long.
            dz = pos[2] - np.minimum(pts[..., 2], 0.8 * pos[2])
            proj = pos[:2] + (pts[..., :2] - pos[:2]) * (pos[2] / dz)[..., None]
            grid = np.round((proj - origin) / scale).astype(np.int32)
            layer[:] = 0
            for m in range(len(grid)):
                cv2.fillConvexPoly(layer, cv2.convexHull(grid[m].reshape(-1, 1, 2)), 1,
                                   cv2.LINE_8, shift)
            acc += layer
        lit = 1.0 - acc * np.float32(1.0 / n_samples)
        sigma = max(0.6, (0.004 + light.radius * 0.02) / cell)
        maps[li] = cv2.GaussianBlur(lit, (0, 0), sigma)
    strength = float(scene.appearance.contact_shadows) if use_shadows else 0.0
    if strength > 0.0:
        occ = np.zeros((gh, gw), np.uint8)
        raised = np.zeros((gh, gw), np.uint8)

        def to_grid(xy):
            return np.round((xy - origin) / scale).astype(np.int32).reshape(-1, 1, 2)

        if scene.outline is not None:
            occ[:] = 1
            cv2.fillPoly(occ, [to_grid(scene.polygon)], 0, cv2.LINE_8, shift)
        for obj in scene.obstacles:
            cv2.fillConvexPoly(occ if obj.standing else raised, to_grid(obj.outline()), 1,
                               cv2.LINE_8, shift)
        dist = cv2.distanceTransform(1 - occ, cv2.DIST_L2, 5) * np.float32(cell)
        contact = 1.0 - strength * np.exp(dist * np.float32(-1.0 / 0.07))
        if raised.any():
            under = cv2.GaussianBlur(raised.astype(np.float32), (0, 0), 0.15 / cell)
            contact *= 1.0 - 0.5 * strength * under
        maps[-1] = contact
    result = ((x0, y0, cell), maps)
    scene._cache['topdown'] = (key, result)
    return result


def _sample_maps(grid, maps, xs, ys):
    """Bilinear samples (C, n) of planar maps (C, h, w) at world points (xs, ys)."""
    x0, y0, cell = grid
    mx = ((xs - x0) * (1.0 / cell)).astype(np.float32)  # cell i is centred on x0 + i cell
    my = ((ys - y0) * (1.0 / cell)).astype(np.float32)
    c = maps.shape[0]
    stacked = cv2.merge(list(maps)) if c > 1 else maps[0]
    out = np.empty((c, xs.size), np.float32)
    for start in range(0, c, 4):
        part = np.ascontiguousarray(stacked[..., start:start + 4]) if c > 1 else stacked
        n = part.shape[2] if part.ndim == 3 else 1
        out[start:start + n] = _remap_points(part, mx, my, cv2.BORDER_REPLICATE).reshape(-1, n).T
    return out


# --- shading ---------------------------------------------------------------------------

def _scatter(dst, idx, src):
    """dst[:, idx] = src for planar (3, n) arrays (src may be (3, 1))."""
    for c in range(dst.shape[0]):
        dst[c, idx] = src[c]


def _shade(scene, intrinsics, origin, dx, dy, dz, t, ids, rects, config):
    """
    Linear RGB radiance, planar (3, H, W) float32.

    ``rects`` are the obstacles' screen rectangles; None when the "image" is a (1, n) list of
    scattered pixels (the reflection pass), whose obstacle hits are then grouped by id.
    """
    h, w = t.shape
    n = h * w
    app = scene.appearance
    tf = t.ravel().copy()
    tf[~np.isfinite(tf)] = 0.0
    dxf, dyf, dzf = dx.ravel(), dy.ravel(), dz.ravel()
    ox, oy, oz = (float(v) for v in origin)
    X = ox + tf * dxf
    Y = oy + tf * dyf
    Z = oz + tf * dzf
    fid = ids.ravel()
    albedo = np.empty((3, n), np.float32)
    albedo[:] = _col(app.sky_color)
    nx = np.zeros(n, np.float32)
    ny = np.zeros(n, np.float32)
    nz = np.zeros(n, np.float32)
    ks = np.zeros(n, np.float32)
    shin = np.ones(n, np.float32)
    inv_f = 1.0 / float(intrinsics.fx)
    use_spec = config.specular
    geo = (X, Y, Z, dxf, dyf, dzf, tf, inv_f)
    surf = (albedo, nx, ny, nz, ks, shin)

    # Floor, with decals, shadows and contact darkening from the top-down maps.
    fi = np.flatnonzero(fid == ID_FLOOR)
    floor_maps = None
    if fi.size:
        fxs, fys = X[fi], Y[fi]
        fp = tf[fi] * inv_f / np.maximum(np.abs(dzf[fi]), 0.05)
        alb = material_albedo(app.floor, fxs, fys, fp)
        for decal in scene.decals:
            _apply_decal(decal, fxs, fys, fp, alb)
        _scatter(albedo, fi, alb)
        nz[fi] = 1.0
        if use_spec and app.floor.specular > 0.0:
            ks[fi] = app.floor.specular
            shin[fi] = app.floor.shininess
        grid, maps = _topdown_maps(scene, config.shadows and app.shadows)
        floor_maps = _sample_maps(grid, maps, fxs, fys)
    # Ceiling, with lamp discs.
    emit = None
    ci = np.flatnonzero(fid == ID_CEILING)
    if ci.size:
        _scatter(albedo, ci, _col(app.ceiling_color))
        nz[ci] = -1.0
        emit = np.zeros(n, np.float32)
        for light in app.lights:
            d2 = (X[ci] - light.position[0]) ** 2 + (Y[ci] - light.position[1]) ** 2
            emit[ci] += (d2 < app.lamp_radius ** 2) * np.float32(6.0 * light.intensity)
    _shade_walls(scene, fid, geo, surf, use_spec)
    base = ID_WALL0 + len(scene.walls()[0])
    treads = []
    if rects is None:
        hits = np.flatnonzero(fid >= base)
        order = hits[np.argsort(fid[hits], kind='stable')]
        bounds = np.searchsorted(fid[order], np.arange(base, base + len(scene.obstacles) + 1))
        for m, obj in enumerate(scene.obstacles):
            if bounds[m + 1] > bounds[m]:
                treads.append(_shade_object(obj, order[bounds[m]:bounds[m + 1]], geo, surf,
                                            use_spec))
    for m, obj in enumerate(scene.obstacles if rects is not None else ()):
        rect = rects[m]
        if rect is None:
            continue
        u0, u1, v0, v1 = rect
        sub = ids[v0:v1, u0:u1] == base + m
        if not sub.any():
            continue
        rr, cc = np.nonzero(sub)
        treads.append(_shade_object(obj, (rr + v0) * w + (cc + u0), geo, surf, use_spec))

    # Lighting: ambient (darkened near contacts) plus each light's diffuse and specular.
    ao = 1.0 - 0.35 * np.exp(np.maximum(Z, 0.0) * np.float32(-1.0 / 0.05))
    ao[fid <= ID_CEILING] = 1.0
    if floor_maps is not None:
        ao[fi] = floor_maps[-1]
    for idx in treads:
        if idx is not None:
            ao[idx] = 1.0
    ao_direct = 0.5 + 0.5 * ao
    irr = np.empty((3, n), np.float32)
    irr[:] = ao * np.float32(app.ambient)
    si = np.flatnonzero(ks > 0.0) if use_spec else np.zeros(0, np.int64)
    spec_acc = None
    # Highlights from the (at most) two strongest lights.
    spec_lights = sorted(range(len(app.lights)), key=lambda i: -app.lights[i].intensity)[:2]
    if si.size:
        sX, sY, sZ = X[si], Y[si], Z[si]
        snx, sny, snz = nx[si], ny[si], nz[si]
        svx, svy, svz = -dxf[si], -dyf[si], -dzf[si]
        sks, sshin = ks[si], shin[si]
        s_lit = None
        if floor_maps is not None:
            where = np.full(n, -1, np.int64)
            where[fi] = np.arange(fi.size)
            pos = where[si]
            on_floor = np.flatnonzero(pos >= 0)
            s_lit = np.ones((len(app.lights), si.size), np.float32)
            s_lit[:, on_floor] = floor_maps[:-1][:, pos[on_floor]]
        spec_acc = np.zeros((3, si.size), np.float32)
    for li, light in enumerate(app.lights):
        px, py, pz = (float(v) for v in light.position)
        lx = px - X
        ly = py - Y
        lz = pz - Z
        d2 = lx * lx + ly * ly + lz * lz
        inv = 1.0 / np.sqrt(d2 + 1e-6)
        ndotl = np.maximum((nx * lx + ny * ly + nz * lz) * inv, 0.0)
        att = np.float32(light.intensity) / (1.0 + d2 * np.float32(1.0 / 6.0))
        shade = ndotl * att * ao_direct
        if floor_maps is not None:
            shade[fi] *= floor_maps[li]
        irr += _col(light.color) * shade
        if spec_acc is not None and li in spec_lights:
            lx, ly, lz = px - sX, py - sY, pz - sZ
            d2 = lx * lx + ly * ly + lz * lz
            inv = 1.0 / np.sqrt(d2 + 1e-6)
            lx *= inv
            ly *= inv
            lz *= inv
            hx, hy, hz = lx + svx, ly + svy, lz + svz
            hn = 1.0 / np.sqrt(hx * hx + hy * hy + hz * hz + 1e-12)
            ndoth = np.maximum((snx * hx + sny * hy + snz * hz) * hn, 1e-6)
            lit = (snx * lx + sny * ly + snz * lz) > 0.0
            spec = sks * np.exp(sshin * np.log(ndoth)) * lit
            spec *= np.float32(light.intensity) / (1.0 + d2 * np.float32(1.0 / 6.0))
            if s_lit is not None:
                spec *= s_lit[li]
            spec_acc += _col(light.color) * spec
    rad = albedo * irr
    if spec_acc is not None:
        for c in range(3):
            rad[c, si] += spec_acc[c]
    if emit is not None:
        rad += emit
    sky = np.flatnonzero(fid == ID_NONE)
    if sky.size:
        _scatter(rad, sky, _col(app.sky_color))
    return rad.reshape(3, h, w)


def _shade_walls(scene, fid, geo, surf, use_spec):
    X, Y, Z, dxf, dyf, dzf, tf, inv_f = geo
    albedo, nx, ny, nz, ks, shin = surf
    app = scene.appearance
    a, b = scene.walls()
    doors = {}
    for door in scene.doors:
        doors.setdefault(door.wall, []).append(door)
    items = {}
    for item in scene.wall_decals:
        items.setdefault(item.wall, []).append(item)
    for k in range(len(a)):
        wi = np.flatnonzero(fid == ID_WALL0 + k)
        if not wi.size:
            continue
        e = b[k] - a[k]
        length = float(np.hypot(*e))
        ux, uy = float(e[0]) / length, float(e[1]) / length
        nxk, nyk = -uy, ux
        s = (X[wi] - float(a[k][0])) * ux + (Y[wi] - float(a[k][1])) * uy
        z = Z[wi]
        fp = tf[wi] * inv_f / np.maximum(np.abs(dxf[wi] * nxk + dyf[wi] * nyk), 0.05)
        alb = material_albedo(app.wall, s, z, fp)
        spec = np.full(wi.size, app.wall.specular if use_spec else 0.0, np.float32)
        if app.baseboard_height > 0.0:
            m = z < app.baseboard_height
            if m.any():
                alb[:, m] = material_albedo(app.baseboard, s[m], z[m], fp[m])
                spec[m] = app.baseboard.specular if use_spec else 0.0
            line = _line_coverage(np.abs(z - app.baseboard_height), 0.004, 1e9, fp)
            alb *= 1.0 - 0.4 * line
        for door in doors.get(k, ()):
            _apply_door(door, s, z, fp, alb)
        for item in items.get(k, ()):
            _apply_wall_decal(item, s, z, fp, alb, spec, use_spec)
        _scatter(albedo, wi, alb)
        nx[wi] = nxk
        ny[wi] = nyk
        ks[wi] = spec
        shin[wi] = 20.0


def _shade_object(obj, oi, geo, surf, use_spec):
    """
    Albedo, normals and specularity of obstacle ``obj`` at the flat pixel indices ``oi``.

    Returns the indices of the pixels on the tread (top face) of a step (None otherwise):
    those are lit like open floor, without the darkening near the floor.
    """
    X, Y, Z, dxf, dyf, dzf, tf, inv_f = geo
    albedo, nx, ny, nz, ks, shin = surf
    x, y, z = X[oi], Y[oi], Z[oi]
    mat = obj.material
    tread = None
    if isinstance(obj, Box):
        c, s = math.cos(float(obj.yaw)), math.sin(float(obj.yaw))
        px, py = x - float(obj.x), y - float(obj.y)
        lx, ly = c * px + s * py, c * py - s * px
        hx, hy = float(obj.size_x) / 2.0, float(obj.size_y) / 2.0
        hz = (float(obj.height) - float(obj.bottom)) / 2.0
        lz = z - (float(obj.height) + float(obj.bottom)) / 2.0
        # The face whose plane is nearest, measured in metres.
        ex, ey, ez = np.abs(np.abs(lx) - hx), np.abs(np.abs(ly) - hy), np.abs(np.abs(lz) - hz)
        face_x = (ex <= ey) & (ex <= ez)
        face_y = ~face_x & (ey <= ez)
        face_z = ~face_x & ~face_y
        sx, sy, sz = np.sign(lx), np.sign(ly), np.sign(lz)
        n_x = (face_x * (c * sx) - face_y * (s * sy)).astype(np.float32)
        n_y = (face_x * (s * sx) + face_y * (c * sy)).astype(np.float32)
        n_z = (face_z * sz).astype(np.float32)
        tu = np.where(face_x, ly, lx)
        tv = np.where(face_z, ly, z)
        if obj.label == STEP_LABEL:  # a tread continues the floor's pattern: world coords
            tread = face_z & (sz > 0)
            tu = np.where(tread, x, tu)
            tv = np.where(tread, y, tv)
    else:
        px, py = x - float(obj.x), y - float(obj.y)
        r = float(obj.radius)
        rr = np.hypot(px, py)
        side = (rr >= 0.98 * r) & (z > float(obj.bottom) + 1e-4) & (z < float(obj.height) - 1e-4)
        inv_r = 1.0 / np.maximum(rr, 1e-6)
        n_x = (side * px * inv_r).astype(np.float32)
        n_y = (side * py * inv_r).astype(np.float32)
        top = z >= (float(obj.height) + float(obj.bottom)) / 2.0
        n_z = (~side * np.where(top, 1.0, -1.0)).astype(np.float32)
        tu = np.where(side, np.arctan2(py, px) * r, px)
        tv = np.where(side, z, py)
    cos_inc = dxf[oi] * n_x + dyf[oi] * n_y + dzf[oi] * n_z
    fp = tf[oi] * inv_f / np.maximum(np.abs(cos_inc), 0.05)
    _scatter(albedo, oi, material_albedo(mat, tu, tv, fp))
    nx[oi] = n_x
    ny[oi] = n_y
    nz[oi] = n_z
    if use_spec and mat.specular > 0.0:
        ks[oi] = mat.specular
        shin[oi] = mat.shininess
    return oi[tread] if tread is not None else None
