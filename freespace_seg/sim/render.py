"""
A vectorized numpy ray caster for :class:`~freespace_seg.sim.scene.Scene`.

Every pixel's ray (from :mod:`freespace_seg.ground.geometry`) is intersected analytically with the
floor plane, the ceiling, the vertical walls of the room outline, oriented boxes (slab test in
the box frame) and vertical finite cylinders; the nearest hit wins. Obstacles are only tested
in the image rectangle that their bounding box projects to. The ground-truth mask comes from
the same casting: a pixel is free (1) iff its ray first hits the floor plane inside the room
at a point not covered by an obstacle footprint (rugs and markings are floor, so free); walls,
doors, obstacles, glass panes and their frames, steps and platforms (their tops too), things
on the walls, anything above the floor, the ceiling and the sky are 0. With lens distortion
(plumb_bob, as CameraInfo D) each pixel centre is undistorted exactly (Newton steps on the
model) to give its ray, and the screen rectangles are mapped through the lens, so the labels
stay exact for the distorted image.

Glass panes (boxes of a ``glass`` material) are transparent: where a ray first hits one (the
pixel stays blocked, its depth is the pane's), the ray is cast again without the panes and
what it finds is shaded, tinted by the glass and overlaid with a faint Fresnel sheen and
highlights. A glossy floor (``Appearance.floor_reflectivity``) mirrors the room: for floor
pixels the mirrored ray (from the mirrored camera below the floor, which is the reflected
ray from the floor point) is cast through the same scene code (glass panes are left out of
reflections) and shaded, optionally blurred by roughness, and blended into the floor with a
Fresnel-like weight; rugs and mats do not reflect. Labels do not change: a reflection is on
free floor.

Flat things on the walls (:class:`~freespace_seg.sim.scene.WallDecal`: posters with a
photo-like procedural picture and lines of text, framed pictures, whiteboards with marker
strokes, switches and sockets) are drawn on the wall like doors. The tread of a step continues
the floor's pattern (it is shaded from world coordinates, without the darkening near the floor
that other low surfaces get), so a step of the floor's own material shows only by its edge,
its shading and its shadow.

Shading (linear RGB): procedural materials from world or surface coordinates with a simple
pixel-footprint filter against aliasing (``photo`` materials and photo pictures sample a real
photo of the texture bank, :mod:`.photos`, bilinearly from the mip level that fits the
footprint), Lambert and Blinn-Phong lighting from point lights
plus ambient, shadows cast by obstacles on the floor (from top-down shadow maps, soft for area
lights), contact darkening near the floor; then a camera model: auto exposure with error,
white balance, vignetting, blur, shot and read noise, gamma and JPEG artefacts.
"""

from dataclasses import dataclass
import functools
import math

import cv2
from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount, rotation_rpy
from freespace_seg.sim.photos import texture_names, texture_pyramid
from freespace_seg.sim.randomization import (default_intrinsics, default_mount, jitter_camera,
                                             radial_fold, RandomizationConfig)
from freespace_seg.sim.scene import Box, Cylinder, is_glass, make_scene, Scene, STEP_LABEL
import numpy as np

ID_NONE, ID_FLOOR, ID_CEILING, ID_WALL0 = 0, 1, 2, 3
_NEAR = 1e-3


@dataclass
class Frame:
    """
    One rendered camera frame with its exact labels.

    ``image``: (H, W, 3) uint8 RGB. ``free``: (H, W) uint8, 1 where the pixel's ray first hits
    free floor. ``depth``: (H, W) float32 ray length to the first hit in metres (inf for
    nothing). ``robot_pose``: (x, y, yaw) of base_link in the world; ``mount``: the camera in
    base_link. ``scene``: the scene it was rendered from (for exact top-down truth).
    """

    image: np.ndarray
    free: np.ndarray
    depth: np.ndarray
    intrinsics: CameraIntrinsics
    mount: CameraMount
    robot_pose: tuple
    scene: Scene = None


# --- camera and rays -------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _normalized_rays(intrinsics):
    if intrinsics.has_distortion and len(intrinsics.distortion) <= 5:
        xn, yn = _undistort_pixels(intrinsics)
    else:
        xn, yn = intrinsics.normalized_rays()
    return xn.astype(np.float32), yn.astype(np.float32)


def _plumb_bob_newton(x, y, xd, yd, coeffs):
    """One Newton step towards the undistorted (x, y) that plumb_bob maps to (xd, yd)."""
    k1, k2, p1, p2, k3 = coeffs
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    g = 2.0 * (k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2))
    xy = x * y
    ex = x * radial + 2.0 * p1 * xy + p2 * (r2 + 2.0 * x * x) - xd
    ey = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * xy - yd
    b = xy * g + 2.0 * p1 * x + 2.0 * p2 * y
    a = radial + x * x * g + 2.0 * p1 * y + 6.0 * p2 * x
    d = radial + y * y * g + 6.0 * p1 * y + 2.0 * p2 * x
    inv = 1.0 / (a * d - b * b)
    return x - (d * ex - b * ey) * inv, y - (a * ey - b * ex) * inv


def _undistort_pixels(intrinsics, step=4):
    """
    Undistorted normalized coordinates (x/z, y/z) of every pixel centre (plumb_bob model).

    The same as :meth:`~freespace_seg.ground.geometry.CameraIntrinsics.normalized_rays`, several
    times faster: on every ``step``-th pixel the radial part is inverted on a table and two
    Newton steps on the full model (tangential terms included) follow; that is interpolated
    to every pixel and one more Newton step there brings the residual far below float32
    rounding.
    """
    k = intrinsics
    coeffs = (tuple(float(d) for d in k.distortion) + (0.0,) * 5)[:5]
    k1, k2, _, _, k3 = coeffs
    wc = -(-(k.width - 1) // step) + 1
    hc = -(-(k.height - 1) // step) + 1
    xd = (np.arange(wc, dtype=np.float64) * step - k.cx) / k.fx
    yd = ((np.arange(hc, dtype=np.float64) * step - k.cy) / k.fy)[:, None]
    xd, yd = np.broadcast_arrays(xd[None, :], yd)
    rd = np.hypot(xd, yd)
    r_tab = np.linspace(0.0, min(radial_fold(k.distortion), 4.0), 4097)
    r2 = r_tab * r_tab
    f_tab = r_tab * (1.0 + r2 * (k1 + r2 * (k2 + r2 * k3)))
    top = int(np.argmax(f_tab)) + 1  # the rising part
    scale = np.interp(rd, f_tab[:top], r_tab[:top]) / np.maximum(rd, 1e-300)
    scale[rd == 0.0] = 1.0
    x, y = xd * scale, yd * scale
    for _ in range(2):
        x, y = _plumb_bob_newton(x, y, xd, yd, coeffs)
    mu = np.arange(k.width, dtype=np.float32) * np.float32(1.0 / step)
    mv = np.arange(k.height, dtype=np.float32) * np.float32(1.0 / step)
    mu, mv = np.broadcast_arrays(mu[None, :], mv[:, None])
    mu, mv = np.ascontiguousarray(mu), np.ascontiguousarray(mv)
    x = cv2.remap(x, mu, mv, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    y = cv2.remap(y, mu, mv, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    xd = ((np.arange(k.width, dtype=np.float64) - k.cx) / k.fx)[None, :]
    yd = ((np.arange(k.height, dtype=np.float64) - k.cy) / k.fy)[:, None]
    return _plumb_bob_newton(x, y, xd, yd, coeffs)


def camera_in_world(mount, robot_pose):
    """Return (origin (3,), R_world_from_optical (3, 3)) for a mount on a robot pose."""
    x, y, yaw = (float(v) for v in robot_pose)
    r_wb = rotation_rpy(0.0, 0.0, yaw)
    origin = r_wb @ mount.position + np.array([x, y, 0.0])
    return origin, r_wb @ mount.rotation_base_from_optical()


#: base-frame unit rays of recent (intrinsics, mount rotation) pairs; see :func:`_base_rays`
_BASE_RAYS = {}
_BASE_RAYS_MAX = 8


def _base_rays(intrinsics, mount):
    """
    Return the unit ray directions of every pixel in base_link axes (three float32 arrays).

    They depend only on the intrinsics and the mount's rotation, so a moving robot (the
    simulator renders many frames of one camera) reuses them: cached for the last few pairs.
    """
    r = mount.rotation_base_from_optical()
    key = (intrinsics.width, intrinsics.height, intrinsics.fx, intrinsics.fy, intrinsics.cx,
           intrinsics.cy, tuple(intrinsics.distortion), r.tobytes())
    rays = _BASE_RAYS.get(key)
    if rays is None:
        xn, yn = _normalized_rays(intrinsics)
        r = [[float(v) for v in row] for row in r]
        bx = xn * r[0][0] + yn * r[0][1] + r[0][2]
        by = xn * r[1][0] + yn * r[1][1] + r[1][2]
        bz = xn * r[2][0] + yn * r[2][1] + r[2][2]
        inv = 1.0 / np.sqrt(bx * bx + by * by + bz * bz)
        rays = (bx * inv, by * inv, bz * inv)
        for a in rays:
            a.setflags(write=False)
        if len(_BASE_RAYS) >= _BASE_RAYS_MAX:
            _BASE_RAYS.pop(next(iter(_BASE_RAYS)))
        _BASE_RAYS[key] = rays
    return rays


def world_rays(intrinsics, mount, robot_pose):
    """Return the origin and unit world ray directions (three float32 (H, W) arrays)."""
    origin, _ = camera_in_world(mount, robot_pose)
    bx, by, bz = _base_rays(intrinsics, mount)
    yaw = float(robot_pose[2])
    c, s = np.float32(math.cos(yaw)), np.float32(math.sin(yaw))
    return origin, bx * c - by * s, bx * s + by * c, bz.copy()


def _screen_rects(points, origin, r_wo, intrinsics):
    """Pixel rectangles (u0, u1, v0, v1) covering each object's points (M, K, 3), or None."""
    w, h = intrinsics.width, intrinsics.height
    p = (points - origin) @ r_wo  # optical frame, (M, K, 3)
    z = p[..., 2]
    front = z >= _NEAR
    # Where an edge crosses the near plane, add the crossing point.
    i, j = np.triu_indices(p.shape[1], 1)
    zi, zj = z[:, i], z[:, j]
    cross = (zi >= _NEAR) != (zj >= _NEAR)
    with np.errstate(divide='ignore', invalid='ignore'):
        f = np.where(cross, (_NEAR - zi) / (zj - zi), 0.0)
    q = p[:, i] + f[..., None] * (p[:, j] - p[:, i])
    allp = np.concatenate([p, q], axis=1)
    valid = np.concatenate([front, cross], axis=1)
    zz = np.where(valid, np.maximum(allp[..., 2], _NEAR), 1.0)
    if intrinsics.has_distortion:
        return _distorted_rects(allp[..., 0] / zz, allp[..., 1] / zz, valid, intrinsics)
    u = intrinsics.fx * allp[..., 0] / zz + intrinsics.cx
    v = intrinsics.fy * allp[..., 1] / zz + intrinsics.cy
    big = 1e9
    u_lo = np.where(valid, u, big).min(axis=1)
    u_hi = np.where(valid, u, -big).max(axis=1)
    v_lo = np.where(valid, v, big).min(axis=1)
    v_hi = np.where(valid, v, -big).max(axis=1)
    rects = []
    for m in range(len(points)):
        if not valid[m].any():
            rects.append(None)
            continue
        u0 = int(max(0, math.floor(min(max(u_lo[m], -big), w)) - 1))
        u1 = int(min(w, math.ceil(max(min(u_hi[m], big), -1)) + 2))
        v0 = int(max(0, math.floor(min(max(v_lo[m], -big), h)) - 1))
        v1 = int(min(h, math.ceil(max(min(v_hi[m], big), -1)) + 2))
        rects.append((u0, u1, v0, v1) if u1 > u0 and v1 > v0 else None)
    return rects


def _distort(intrinsics, x, y):
    """Pixel coordinates of undistorted normalized points (x, y) (plumb_bob, 5 numbers)."""
    k1, k2, p1, p2, k3 = (tuple(float(d) for d in intrinsics.distortion) + (0.0,) * 5)[:5]
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    xd = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x)
    yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y
    return intrinsics.fx * xd + intrinsics.cx, intrinsics.fy * yd + intrinsics.cy


@functools.lru_cache(maxsize=8)
def _lens_limits(intrinsics):
    """Bounds (x0, x1, y0, y1) of the image's normalized rays and the lens's fold radius."""
    xn, yn = _normalized_rays(intrinsics)
    pad = 2.0 / min(intrinsics.fx, intrinsics.fy)  # two pixels
    bounds = (float(xn.min()) - pad, float(xn.max()) + pad, float(yn.min()) - pad,
              float(yn.max()) + pad)
    fold = radial_fold(intrinsics.distortion) if len(intrinsics.distortion) <= 5 else 0.0
    return bounds, fold


def _distorted_rects(xn, yn, valid, intrinsics, samples=13):
    """
    Pixel rectangles covering normalized points (M, K) through a distorting lens.

    Each object's undistorted bounding rectangle (clipped to where the image's rays go) is
    mapped through the lens along its border; as the lens maps the disc inside its fold
    radius one to one, the border's image bounds the image of the inside. An object whose
    rectangle reaches the fold radius (or a model other than plumb_bob) gets the whole image.
    """
    w, h = intrinsics.width, intrinsics.height
    (bx0, bx1, by0, by1), fold = _lens_limits(intrinsics)
    big = 1e9
    x_lo = np.where(valid, xn, big).min(axis=1)
    x_hi = np.where(valid, xn, -big).max(axis=1)
    y_lo = np.where(valid, yn, big).min(axis=1)
    y_hi = np.where(valid, yn, -big).max(axis=1)
    t = np.linspace(0.0, 1.0, samples)
    rects = []
    for m in range(len(xn)):
        if not valid[m].any():
            rects.append(None)
            continue
        a0, a1 = max(float(x_lo[m]), bx0), min(float(x_hi[m]), bx1)
        b0, b1 = max(float(y_lo[m]), by0), min(float(y_hi[m]), by1)
        if a0 > a1 or b0 > b1:
            rects.append(None)
            continue
        xs = np.concatenate([a0 + (a1 - a0) * t, np.full(samples, a1), a0 + (a1 - a0) * t,
                             np.full(samples, a0)])
        ys = np.concatenate([np.full(samples, b0), b0 + (b1 - b0) * t, np.full(samples, b1),
                             b0 + (b1 - b0) * t])
        if float(np.max(xs * xs + ys * ys)) >= fold * fold:
            rects.append((0, w, 0, h))
            continue
        u, v = _distort(intrinsics, xs, ys)
        u0 = int(max(0, math.floor(min(float(u.min()), w)) - 2))
        u1 = int(min(w, math.ceil(max(float(u.max()), -1)) + 3))
        v0 = int(max(0, math.floor(min(float(v.min()), h)) - 2))
        v1 = int(min(h, math.ceil(max(float(v.max()), -1)) + 3))
        rects.append((u0, u1, v0, v1) if u1 > u0 and v1 > v0 else None)
    return rects


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


# --- camera model ----------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _gamma_lut(gamma_x100):
    x = np.linspace(0.0, 1.0, 4096, dtype=np.float64)
    srgb = np.where(x <= 0.0031308, 12.92 * x, 1.055 * x ** (1.0 / 2.4) - 0.055)
    g = gamma_x100 / 100.0
    return np.clip(np.round(255.0 * srgb ** g), 0, 255).astype(np.uint8)


@functools.lru_cache(maxsize=4)
def _vignette(h, w):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    return ((xx - w / 2.0) ** 2 + (yy - h / 2.0) ** 2) / ((w / 2.0) ** 2 + (h / 2.0) ** 2)


@functools.lru_cache(maxsize=1)
def _noise_bank():
    """Return standard normal float32 numbers to cut per-frame sensor noise from (fast)."""
    return np.random.default_rng(54321).standard_normal(1 << 22, dtype=np.float32)


def _sensor_noise(rng, shape):
    size = int(np.prod(shape))
    bank = _noise_bank()
    if size > bank.size // 2:
        return rng.standard_normal(shape, dtype=np.float32)
    start = int(rng.integers(0, bank.size - size))
    out = bank[start:start + size].reshape(shape)
    return out if rng.random() < 0.5 else -out


def _camera(rad, scene, rng, config):
    """Turn planar linear radiance (3, H, W) into an 8-bit RGB (H, W, 3) image."""
    _, h, w = rad.shape
    sample = rad[:, ::4, ::4]
    lum = float(np.mean(0.2126 * sample[0] + 0.7152 * sample[1] + 0.0722 * sample[2]))
    target = 0.18
    gamma = 1.0
    if rng is not None and config.exposure:
        target *= 2.0 ** float(rng.uniform(-1.2, 0.8))
        gamma = float(rng.uniform(0.8, 1.2))
    gain = np.full(3, target / max(lum, 1e-6))
    lights = scene.appearance.lights
    if lights:  # the camera white-balances to the lights' mean colour
        mean = np.mean([np.asarray(li.color) * li.intensity for li in lights], axis=0)
        mean = np.maximum(mean / max(float(np.mean(mean)), 1e-6), 0.05)
        gain /= mean * float(np.mean(1.0 / mean))
    if rng is not None and config.color_temperature:
        gain *= np.exp([rng.normal(0, 0.08), 0.0, rng.normal(0, 0.08)])
    planes = [rad[c] * np.float32(gain[c]) for c in range(3)]
    if rng is not None and config.vignetting:
        vig = 1.0 - np.float32(rng.uniform(0.0, 0.45)) * _vignette(h, w)
        planes = [p * vig for p in planes]
    img = cv2.merge(planes)
    if rng is not None and config.blur:
        choice = rng.random()
        if choice < 0.35:
            img = cv2.GaussianBlur(img, (0, 0), float(rng.uniform(0.3, 1.2)))
        elif choice < 0.5:
            length = int(rng.integers(3, 10))
            kernel = np.zeros((length, length), np.float32)
            kernel[length // 2, :] = 1.0
            rot = cv2.getRotationMatrix2D(((length - 1) / 2.0, (length - 1) / 2.0),
                                          float(rng.uniform(0, 180)), 1.0)
            kernel = cv2.warpAffine(kernel, rot, (length, length))
            kernel /= max(float(kernel.sum()), 1e-6)
            img = cv2.filter2D(img, -1, kernel)
    if rng is not None and config.noise:
        shot = float(rng.uniform(0.0, 4e-4))
        read = float(rng.uniform(0.0, 0.004))
        sigma = np.sqrt(np.maximum(img, 0.0) * np.float32(shot) + np.float32(read * read))
        img = img + sigma * _sensor_noise(rng, img.shape)
    idx = np.clip(img * 4095.0 + 0.5, 0, 4095).astype(np.uint16)
    out = _gamma_lut(int(round(gamma * 100)))[idx]
    if rng is not None and config.compression and rng.random() < 0.5:
        quality = int(rng.integers(35, 95))
        ok, buf = cv2.imencode('.jpg', out[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        if ok:
            out = cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1]
    return np.ascontiguousarray(out)


# --- public API ------------------------------------------------------------------------

def render(scene, intrinsics, mount, robot_pose=(0.0, 0.0, 0.0), rng=None, randomization=None):
    """
    Render ``scene`` seen by a camera ``mount``-ed on a robot at ``robot_pose``.

    ``robot_pose`` is (x, y, yaw) of base_link in the world; ``mount`` is the camera pose in
    base_link. ``rng`` (a numpy Generator) draws the camera effects (exposure error, white
    balance, vignetting, blur, noise, JPEG) that ``randomization`` enables; without an ``rng``
    the image is clean and deterministic. A glossy floor (``Appearance.floor_reflectivity``)
    reflects only while ``randomization.reflections`` is on. Returns a :class:`Frame`.
    """
    config = randomization if randomization is not None else RandomizationConfig()
    origin, r_wo = camera_in_world(mount, robot_pose)
    _, dx, dy, dz = world_rays(intrinsics, mount, robot_pose)
    rects = _screen_rects(_object_points(scene), origin, r_wo, intrinsics)
    t, ids = _cast(scene, origin, dx, dy, dz, rects)
    free = (ids == ID_FLOOR).astype(np.uint8)
    glass = _glass_flags(scene)
    t_seen, ids_seen, pane = t, ids, None
    if glass is not None:
        t_seen, ids_seen, pane = _see_through(scene, origin, dx, dy, dz, t, ids, rects, glass)
    rad = _shade(scene, intrinsics, origin, dx, dy, dz, t_seen, ids_seen, rects, config)
    if config.reflections and scene.appearance.floor_reflectivity > 0.0:
        _reflect_floor(rad, scene, intrinsics, origin, r_wo, dx, dy, dz, t_seen, ids_seen,
                       config, glass)
    if pane is not None and pane.any():
        _composite_glass(rad, scene, origin, dx, dy, dz, t, ids, pane, config)
    image = _camera(rad, scene, rng, config)
    pose = tuple(float(v) for v in robot_pose)
    return Frame(image, free, t, intrinsics, mount, pose, scene)


def _camera_is_clear(scene, mount, pose, margin=0.05):
    """Check that the camera centre is not inside or just under a raised object's top."""
    origin, _ = camera_in_world(mount, pose)
    for obj in scene.obstacles:
        if obj.standing:
            continue
        if obj.distance_xy(origin[0], origin[1]) <= margin and origin[2] > obj.bottom - margin:
            return False
    return True


def _pick_heading(rng, scene, x, y):
    """
    Pick a heading for the robot at (x, y).

    40 % of the time towards the most open floor, 40 % towards something blocked about
    1-3 m ahead (so that obstacles and walls are in view, not filling it), else any.
    """
    yaws = rng.uniform(-math.pi, math.pi, 12)
    choice = rng.random()
    if choice >= 0.8:
        return float(yaws[0])
    steps = np.linspace(0.25, 5.0, 20)
    xs = x + np.cos(yaws)[:, None] * steps
    ys = y + np.sin(yaws)[:, None] * steps
    blocked = scene.blocked_top_down(xs, ys)
    reach = np.where(blocked.any(axis=1), steps[np.argmax(blocked, axis=1)], 1e3)
    if choice < 0.4:
        return float(yaws[int(np.argmax(reach))])
    target = float(rng.uniform(1.0, 3.0))
    return float(yaws[int(np.argmin(np.abs(reach - target)))])


def random_sample(rng, intrinsics=None, randomization=None):
    """
    One training sample: a new random scene, a free robot pose and a jittered camera.

    ``intrinsics`` defaults to :func:`default_intrinsics` (640x360); with ``pose_jitter`` the
    camera height, pitch, roll, yaw and field of view vary within the config's ranges around
    :func:`default_mount` and ``intrinsics``.
    """
    config = randomization if randomization is not None else RandomizationConfig()
    base_intrinsics = intrinsics if intrinsics is not None else default_intrinsics()
    for _ in range(20):
        scene = make_scene(rng, config)
        cam_intrinsics, mount = jitter_camera(rng, base_intrinsics, default_mount(), config)
        for _ in range(10):
            try:
                x, y, _yaw = scene.sample_free_pose(rng, clearance=config.robot_clearance)
            except RuntimeError:
                break
            pose = (x, y, _pick_heading(rng, scene, x, y))
            if _camera_is_clear(scene, mount, pose):
                return render(scene, cam_intrinsics, mount, pose, rng, config)
    raise RuntimeError('could not place a robot in 20 random scenes')
