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

"""Camera rays and the lens: pixel rays in the world, distortion, screen rectangles."""

import functools
import math

import cv2
from freespace_seg.ground.geometry import rotation_rpy
from freespace_seg.sim.randomization import radial_fold
from freespace_seg.sim.render.cast import _NEAR
import numpy as np


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
