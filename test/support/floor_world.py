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
A top-down toy world for the ROS-free driver: walls drawn in a bool map, a forward camera.

:class:`FloorWorld` holds blocked floor at :data:`RES` m; :meth:`FloorWorld.grid` gives what
the package's default grid (:class:`~freespace_seg.ground.grid.GridSpec`, 4 m x 4 m ahead)
shows from a pose: the cells in a cone of +-40 degrees from 0.3 m to 3 m ahead whose line of
sight from the robot is clear are free or occupied, the rest unknown, as the truth perception
of the closed loop (obstacle feet occupied, the floor behind them unknown).
:func:`run` closes the loop on a unicycle with exact odometry and counts collisions and the
floor the footprint swept.
"""

import math

from freespace_seg.driving.driver_logic import DriverLogic
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED, UNKNOWN
import numpy as np

#: world cell size (m)
RES = 0.05
SPEC = GridSpec()
#: angle between two rays of the line-of-sight test (rad)
_RAY_STEP = math.radians(0.5)
#: the camera: half field of view (rad), nearest and farthest floor seen (m)
HALF_FOV = math.radians(40.0)
NEAR, FAR = 0.3, 3.0


class FloorWorld:
    """
    A rectangle of floor, ``width`` x ``height`` m, walled; ``wall(...)`` adds more.

    Or any floor: ``blocked`` (bool, rows = y) at :data:`RES` m, walled or not. The camera sees
    ``half_fov`` (rad) either side, from ``near`` to ``far`` m.
    """

    def __init__(self, width=None, height=None, blocked=None, half_fov=HALF_FOV, near=NEAR,
                 far=FAR):
        if blocked is None:
            self.nx, self.ny = int(round(width / RES)), int(round(height / RES))
            self.blocked = np.zeros((self.ny, self.nx), dtype=bool)
            self.blocked[0, :] = self.blocked[-1, :] = True
            self.blocked[:, 0] = self.blocked[:, -1] = True
        else:
            self.blocked = np.array(blocked, dtype=bool)
            self.ny, self.nx = self.blocked.shape
        xs, ys = SPEC.cell_centers()
        dist = np.hypot(xs, ys)
        cone = (xs >= near) & (np.abs(np.arctan2(ys, xs)) <= half_fov) & (dist <= far)
        self._cone = np.flatnonzero(cone.ravel())
        cx, cy = xs.ravel()[self._cone], ys.ravel()[self._cone]
        # Line of sight: rays every _RAY_STEP rad, sampled every half world cell; a cone cell
        # is seen when the ray of its bearing reaches it.
        bearings = np.arange(-half_fov, half_fov + 1e-9, _RAY_STEP)
        self._ray_s = (np.arange(int(math.ceil(far / (0.5 * RES)))) + 0.5) * 0.5 * RES
        self._ray_x = np.cos(bearings)[:, None] * self._ray_s[None, :]
        self._ray_y = np.sin(bearings)[:, None] * self._ray_s[None, :]
        self._cell_ray = np.clip(np.round((np.arctan2(cy, cx) + half_fov) / _RAY_STEP),
                                 0, len(bearings) - 1).astype(np.int64)
        self._cell_x, self._cell_y = cx, cy

    def wall(self, x0, x1, y0, y1):
        """Block the floor in [x0, x1] x [y0, y1] (m); return self."""
        c0, c1 = int(math.floor(x0 / RES)), int(math.ceil(x1 / RES))
        r0, r1 = int(math.floor(y0 / RES)), int(math.ceil(y1 / RES))
        self.blocked[max(r0, 0):r1, max(c0, 0):c1] = True
        return self

    def is_blocked(self, x, y):
        """Return the blocked flags of world points (outside the map counts as blocked)."""
        col = np.floor(np.asarray(x) / RES).astype(np.int64)
        row = np.floor(np.asarray(y) / RES).astype(np.int64)
        inside = (col >= 0) & (col < self.nx) & (row >= 0) & (row < self.ny)
        out = np.ones(np.shape(col), dtype=bool)
        out[inside] = self.blocked[row[inside], col[inside]]
        return out

    def clearance(self, x, y, radius):
        """Return True when the disc of ``radius`` at (x, y) touches no blocked cell."""
        r = int(math.ceil(radius / RES)) + 1
        c, rr = int(math.floor(x / RES)), int(math.floor(y / RES))
        cols, rows = np.meshgrid(np.arange(c - r, c + r + 1), np.arange(rr - r, rr + r + 1))
        cx, cy = (cols + 0.5) * RES, (rows + 0.5) * RES
        # The nearest point of each cell to the centre.
        nx = np.clip(x, cols * RES, (cols + 1) * RES)
        ny = np.clip(y, rows * RES, (rows + 1) * RES)
        near = np.hypot(nx - x, ny - y) < radius
        return not np.any(self.is_blocked(cx[near], cy[near]))

    def grid(self, pose):
        """Return what the camera shows at ``pose``: an int8 grid laid out as :data:`SPEC`."""
        x, y, yaw = pose
        c, s = math.cos(yaw), math.sin(yaw)
        wx = x + c * self._ray_x - s * self._ray_y
        wy = y + s * self._ray_x + c * self._ray_y
        hit = self.is_blocked(wx, wy)
        # The first blocked sample along each ray: beyond it nothing is seen.
        reach = np.where(hit.any(axis=1), self._ray_s[np.argmax(hit, axis=1)], np.inf)
        reach = reach[self._cell_ray]
        cwx = x + c * self._cell_x - s * self._cell_y
        cwy = y + s * self._cell_x + c * self._cell_y
        own = self.is_blocked(cwx, cwy)
        dist = np.hypot(self._cell_x, self._cell_y)
        value = np.full(len(self._cone), UNKNOWN, dtype=np.int8)
        visible = dist <= reach + 0.5 * RES
        value[visible & ~own] = FREE
        value[visible & own] = OCCUPIED
        g = np.full(SPEC.shape, UNKNOWN, dtype=np.int8)
        g.reshape(-1)[self._cone] = value
        return g

    def swept(self, path, radius=0.17):
        """Return the share of the free floor that a disc of ``radius`` along ``path`` swept."""
        mask = np.zeros_like(self.blocked)
        ys, xs = np.mgrid[0:self.ny, 0:self.nx]
        cx, cy = (xs + 0.5) * RES, (ys + 0.5) * RES
        for x, y in path[::4]:
            r = int(math.ceil(radius / RES)) + 1
            c, rr = int(x / RES), int(y / RES)
            sl = (slice(max(rr - r, 0), rr + r + 1), slice(max(c - r, 0), c + r + 1))
            mask[sl] |= np.hypot(cx[sl] - x, cy[sl] - y) <= radius
        free = ~self.blocked
        return float(np.count_nonzero(mask & free)) / float(np.count_nonzero(free))


def run(world, pose, seconds, config=None, dt=0.05, grid_every=2, logic=None):
    """
    Drive a :class:`DriverLogic` in ``world`` from ``pose`` for ``seconds``.

    A grid every ``grid_every`` steps with its exact odometry pose; the pose now goes with
    every step. Returns a dict: the logic, the path ((N, 3) x, y, yaw), the plans' modes,
    the steps whose footprint touched a wall (``collisions``) and the chosen arcs' free
    lengths (``free``).
    """
    d = logic if logic is not None else DriverLogic(config)
    x, y, yaw = pose
    gpose = None
    path, modes, free, collisions = [], [], [], 0
    r = d.config.robot_radius
    for i in range(int(round(seconds / dt))):
        if i % grid_every == 0:
            gpose = (x, y, yaw)
            d.set_grid(world.grid(gpose), SPEC, pose=gpose, stamp=i * dt)
        c, s = math.cos(gpose[2]), math.sin(gpose[2])
        dx, dy = x - gpose[0], y - gpose[1]
        motion = (c * dx + s * dy, -s * dx + c * dy, yaw - gpose[2])
        v, w = d.step(dt, motion=motion)
        modes.append(d.last_plan.mode + (f' ({d.last_plan.reason})' if d.last_plan.reason
                                         else ''))
        free.append(d.last_plan.free_distance if d.last_plan.mode == 'drive' else math.nan)
        if abs(w) > 1e-9 and abs(v) > 1e-9:
            x += v / w * (math.sin(yaw + w * dt) - math.sin(yaw))
            y -= v / w * (math.cos(yaw + w * dt) - math.cos(yaw))
        else:
            x += v * math.cos(yaw) * dt
            y += v * math.sin(yaw) * dt
        yaw += w * dt
        if not world.clearance(x, y, r):
            collisions += 1
        path.append((x, y, yaw))
    return {'logic': d, 'path': np.array(path), 'modes': modes, 'free': np.array(free),
            'collisions': collisions}
