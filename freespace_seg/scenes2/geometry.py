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
Analytic scene geometry and a vectorised ray caster (numpy).

A :class:`Scene` holds the floor plane z = 0, a ceiling plane, boxes turned about the vertical
(walls, lintels, cabinets, tabletops, shelf boards), vertical cylinders (legs, bins, pillars),
spheres (balls), light emitters (small glowing spheres) and rugs (zero-thickness patches on
the floor). :func:`cast` returns the first hit of each ray: its distance, its kind
(:data:`NONE`, :data:`FLOOR`, ...) and the index of the primitive within its kind.
"""

import numpy as np

NONE, FLOOR, CEILING, BOX, CYLINDER, SPHERE, EMITTER = range(7)
#: box roles: only obstacles have a footprint on the floor that is blocked
WALL, LINTEL, OBSTACLE = range(3)
EPS = 1e-4
FAR = np.float32(1e6)


class Scene:
    """Primitives of one room layout; add them with the ``add_*`` methods, then :meth:`freeze`."""

    def __init__(self, ceiling, region):
        self.ceiling = float(ceiling)
        self.region = [tuple(map(float, r)) for r in region]
        self.materials = []
        self.floor_mat = self.ceil_mat = 0
        self.lights = []
        self._boxes, self._cyls, self._sphs, self._rugs = [], [], [], []

    def add_material(self, material):
        self.materials.append(material)
        return len(self.materials) - 1

    def add_box(self, center, half, yaw, mat, role=OBSTACLE):
        self._boxes.append((*center, *half, yaw, mat, role))

    def add_cylinder(self, xy, radius, z0, z1, mat):
        self._cyls.append((xy[0], xy[1], radius, z0, z1, mat))

    def add_sphere(self, center, radius, mat):
        self._sphs.append((*center, radius, mat))

    def add_rug(self, xy, half, yaw, mat, ellipse=False):
        self._rugs.append((xy[0], xy[1], half[0], half[1], yaw, mat, float(ellipse)))

    def add_light(self, position, color, power, radius):
        self.lights.append((np.asarray(position, float), np.asarray(color, float),
                            float(power), float(radius)))

    def freeze(self):
        """Turn the added primitives into arrays (call once, after the last ``add_*``)."""
        b = np.array(self._boxes, dtype=np.float64).reshape(-1, 9)
        self.box_c, self.box_h = b[:, 0:3], b[:, 3:6]
        self.box_cos, self.box_sin = np.cos(b[:, 6]), np.sin(b[:, 6])
        self.box_mat, self.box_role = b[:, 7].astype(int), b[:, 8].astype(int)
        c = np.array(self._cyls, dtype=np.float64).reshape(-1, 6)
        self.cyl_xy, self.cyl_r, self.cyl_z = c[:, 0:2], c[:, 2], c[:, 3:5]
        self.cyl_mat = c[:, 5].astype(int)
        s = np.array(self._sphs, dtype=np.float64).reshape(-1, 5)
        self.sph_c, self.sph_r, self.sph_mat = s[:, 0:3], s[:, 3], s[:, 4].astype(int)
        r = np.array(self._rugs, dtype=np.float64).reshape(-1, 7)
        self.rug_xy, self.rug_h = r[:, 0:2], r[:, 2:4]
        self.rug_cos, self.rug_sin = np.cos(r[:, 4]), np.sin(r[:, 4])
        self.rug_mat, self.rug_ellipse = r[:, 5].astype(int), r[:, 6] > 0.5
        self.emit_c = np.array([p for p, _, _, _ in self.lights]).reshape(-1, 3)
        self.emit_r = np.array([min(rad, 0.15) for _, _, _, rad in self.lights])
        for name in ('box_c', 'box_h', 'box_cos', 'box_sin', 'cyl_xy', 'cyl_r', 'cyl_z', 'sph_c',
                     'sph_r', 'emit_c', 'emit_r'):
            setattr(self, name, getattr(self, name).astype(np.float32))
        self._bounds = None
        return self

    def in_region(self, x, y):
        """Return whether floor points (x, y) lie in the walkable rooms."""
        inside = np.zeros(np.shape(x), dtype=bool)
        for x0, y0, x1, y1 in self.region:
            inside |= (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
        return inside

    def in_footprint(self, x, y, margin=0.0):
        """Return whether floor points (x, y) lie under or inside an obstacle."""
        inside = np.zeros(np.shape(x), dtype=bool)
        for i in np.flatnonzero(self.box_role == OBSTACLE):
            dx, dy = x - self.box_c[i, 0], y - self.box_c[i, 1]
            lx = self.box_cos[i] * dx + self.box_sin[i] * dy
            ly = -self.box_sin[i] * dx + self.box_cos[i] * dy
            inside |= ((np.abs(lx) <= self.box_h[i, 0] + margin)
                       & (np.abs(ly) <= self.box_h[i, 1] + margin))
        for i in range(len(self.cyl_r)):
            d2 = (x - self.cyl_xy[i, 0]) ** 2 + (y - self.cyl_xy[i, 1]) ** 2
            inside |= d2 <= (self.cyl_r[i] + margin) ** 2
        for i in range(len(self.sph_r)):
            d2 = (x - self.sph_c[i, 0]) ** 2 + (y - self.sph_c[i, 1]) ** 2
            inside |= d2 <= (self.sph_r[i] + margin) ** 2
        return inside

    def rug_at(self, x, y):
        """Return the index of the top rug under each floor point, or -1."""
        out = np.full(np.shape(x), -1, dtype=np.int32)
        for i in range(len(self.rug_mat)):
            dx, dy = x - self.rug_xy[i, 0], y - self.rug_xy[i, 1]
            lx = (self.rug_cos[i] * dx + self.rug_sin[i] * dy) / self.rug_h[i, 0]
            ly = (-self.rug_sin[i] * dx + self.rug_cos[i] * dy) / self.rug_h[i, 1]
            if self.rug_ellipse[i]:
                inside = lx * lx + ly * ly <= 1.0
            else:
                inside = (np.abs(lx) <= 1.0) & (np.abs(ly) <= 1.0)
            out[inside] = i
        return out


def _safe_inv(d):
    return 1.0 / np.where(np.abs(d) < 1e-9, np.float32(1e-9), d)


def _box_t(o, d, c, h, cs, sn):
    """Entry distance of rays into one box (FAR where they miss it or start inside)."""
    ox, oy, oz = o[..., 0] - c[0], o[..., 1] - c[1], o[..., 2] - c[2]
    lx, ly = cs * ox + sn * oy, -sn * ox + cs * oy
    dx, dy = cs * d[:, 0] + sn * d[:, 1], -sn * d[:, 0] + cs * d[:, 1]
    t0 = np.full(d.shape[0], -FAR, dtype=np.float32)
    t1 = np.full(d.shape[0], FAR, dtype=np.float32)
    for lo, dd, hh in ((lx, dx, h[0]), (ly, dy, h[1]), (oz, d[:, 2], h[2])):
        inv = _safe_inv(dd)
        a, b = (-hh - lo) * inv, (hh - lo) * inv
        np.maximum(t0, np.minimum(a, b), out=t0)
        np.minimum(t1, np.maximum(a, b), out=t1)
    return np.where((t1 >= t0) & (t0 > EPS), t0, FAR)


def _cyl_t(o, d, xy, r, z0, z1):
    ox, oy = o[..., 0] - xy[0], o[..., 1] - xy[1]
    oz = o[..., 2]
    a = np.maximum(d[:, 0] ** 2 + d[:, 1] ** 2, 1e-12)
    b = ox * d[:, 0] + oy * d[:, 1]
    c = ox * ox + oy * oy - r * r
    disc = b * b - a * c
    t = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
    z = oz + t * d[:, 2]
    t = np.where((disc >= 0) & (t > EPS) & (z >= z0) & (z <= z1), t, FAR)
    for zc in (z0, z1):
        tc = (zc - oz) * _safe_inv(d[:, 2])
        px, py = ox + tc * d[:, 0], oy + tc * d[:, 1]
        ok = (tc > EPS) & (px * px + py * py <= r * r)
        t = np.where(ok & (tc < t), tc, t)
    return t


def _sph_t(o, d, c, r):
    ox, oy, oz = o[..., 0] - c[0], o[..., 1] - c[1], o[..., 2] - c[2]
    b = ox * d[:, 0] + oy * d[:, 1] + oz * d[:, 2]
    disc = b * b - (ox * ox + oy * oy + oz * oz - r * r)
    t = -b - np.sqrt(np.maximum(disc, 0.0))
    return np.where((disc >= 0) & (t > EPS), t, FAR)


def _bounds(scene):
    """Bounding spheres (center, radius) of every box, cylinder, sphere and emitter."""
    if getattr(scene, '_bounds', None) is None:
        cyl_c = np.column_stack([scene.cyl_xy, scene.cyl_z.mean(axis=1)])
        cyl_r = np.hypot(scene.cyl_r, (scene.cyl_z[:, 1] - scene.cyl_z[:, 0]) / 2)
        scene._bounds = [(BOX, scene.box_c, np.linalg.norm(scene.box_h, axis=1)),
                         (CYLINDER, cyl_c, cyl_r), (SPHERE, scene.sph_c, scene.sph_r),
                         (EMITTER, scene.emit_c, scene.emit_r)]
    return scene._bounds


def _prim_t(scene, k, i, o, d):
    if k == BOX:
        return _box_t(o, d, scene.box_c[i], scene.box_h[i], scene.box_cos[i], scene.box_sin[i])
    if k == CYLINDER:
        return _cyl_t(o, d, scene.cyl_xy[i], scene.cyl_r[i], *scene.cyl_z[i])
    if k == SPHERE:
        return _sph_t(o, d, scene.sph_c[i], scene.sph_r[i])
    return _sph_t(o, d, scene.emit_c[i], scene.emit_r[i])


def cast(scene, o, d, planes=True, emitters=True):
    """
    Return (t, kind, index) of the first hit of rays from ``o`` along unit ``d`` (N, 3).

    ``o`` is one point (3,) or one per ray (N, 3). ``planes=False`` leaves out floor and
    ceiling, ``emitters=False`` the light emitters (for shadow rays). Each primitive is
    tested only on the rays that pass through its bounding sphere.
    """
    d = np.asarray(d, dtype=np.float32)
    o = np.asarray(o, dtype=np.float32)
    n = d.shape[0]
    best = np.full(n, FAR, dtype=np.float32)
    kind = np.zeros(n, dtype=np.int8)
    index = np.zeros(n, dtype=np.int32)
    if planes:
        inv = _safe_inv(d[:, 2])
        tf = -o[..., 2] * inv
        tf = np.where((d[:, 2] < 0) & (tf > EPS), tf, FAR)
        tc = (scene.ceiling - o[..., 2]) * inv
        tc = np.where((d[:, 2] > 0) & (tc > EPS), tc, FAR)
        best[:] = np.minimum(tf, tc)
        kind[tf < FAR] = FLOOR
        kind[tc < FAR] = CEILING
    per_ray = o.ndim == 2
    for k, centers, radii in _bounds(scene):
        if k == EMITTER and not emitters:
            continue
        for i in range(len(radii)):
            oc = (centers[i] - o).astype(np.float32)
            if per_ray:
                b = np.einsum('ij,ij->i', oc, d)
                c2 = np.einsum('ij,ij->i', oc, oc) - b * b
            else:
                b = d @ oc
                c2 = float(oc @ oc) - b * b
            r = np.float32(radii[i])
            sel = np.flatnonzero((c2 <= r * r) & (b > -r) & (b - r < best))
            if not sel.size:
                continue
            t = _prim_t(scene, k, i, o[sel] if per_ray else o, d[sel])
            closer = t < best[sel]
            hit = sel[closer]
            best[hit] = t[closer]
            kind[hit] = k
            index[hit] = i
    return best, kind, index


def surface(scene, o, d, t, kind, index):
    """Return hit points (N, 3), unit normals (N, 3) and material ids (N,) of cast hits."""
    n = d.shape[0]
    p = (o + d * np.where(kind == NONE, 0.0, t)[:, None]).astype(np.float32)
    normal = np.zeros((n, 3), dtype=np.float32)
    mat = np.full(n, -1, dtype=np.int32)
    sel = kind == FLOOR
    normal[sel, 2], mat[sel] = 1.0, scene.floor_mat
    sel = kind == CEILING
    normal[sel, 2], mat[sel] = -1.0, scene.ceil_mat
    for k in (BOX, CYLINDER, SPHERE, EMITTER):
        sel = np.flatnonzero(kind == k)
        if not sel.size:
            continue
        i, q = index[sel], p[sel]
        if k == BOX:
            c, h = scene.box_c[i], scene.box_h[i]
            cs, sn = scene.box_cos[i], scene.box_sin[i]
            dx, dy = q[:, 0] - c[:, 0], q[:, 1] - c[:, 1]
            loc = np.stack([cs * dx + sn * dy, -sn * dx + cs * dy, q[:, 2] - c[:, 2]], 1)
            axis = np.argmax(np.abs(loc) / h, axis=1)
            sign = np.sign(loc[np.arange(sel.size), axis])
            nl = np.zeros((sel.size, 3))
            nl[np.arange(sel.size), axis] = sign
            normal[sel] = np.stack([cs * nl[:, 0] - sn * nl[:, 1],
                                    sn * nl[:, 0] + cs * nl[:, 1], nl[:, 2]], 1)
            mat[sel] = scene.box_mat[i]
        elif k == CYLINDER:
            z1 = scene.cyl_z[i, 1]
            z0 = scene.cyl_z[i, 0]
            radial = np.stack([q[:, 0] - scene.cyl_xy[i, 0], q[:, 1] - scene.cyl_xy[i, 1],
                               np.zeros(sel.size)], 1)
            radial /= np.maximum(np.linalg.norm(radial, axis=1, keepdims=True), 1e-9)
            top = np.abs(q[:, 2] - z1) < 1e-3
            bottom = np.abs(q[:, 2] - z0) < 1e-3
            radial[top] = (0.0, 0.0, 1.0)
            radial[bottom] = (0.0, 0.0, -1.0)
            normal[sel] = radial
            mat[sel] = scene.cyl_mat[i]
        elif k == SPHERE:
            normal[sel] = (q - scene.sph_c[i]) / scene.sph_r[i][:, None]
            mat[sel] = scene.sph_mat[i]
        else:
            normal[sel] = -d[sel]
    return p, normal, mat
