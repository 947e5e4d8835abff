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
The simulated robot's physics, ROS-free: a disc with unicycle kinematics in a synthetic room.

Every fixed step the wheel speeds move towards the command within the acceleration limits and
the speed caps, and the pose follows the exact arc of the step. When the disc at the new
position would touch anything blocked (``Scene.collides``: walls, or the footprint of any
standing obstacle, low ones included) the robot goes only up to touching, its speed drops to
zero and the step counts as a contact step. A contact lasts until the robot is more than
:data:`CONTACT_RELEASE` from touching again; each new contact counts as one collision.
Turning in place never collides (the footprint is a disc). :class:`Coverage` counts the floor
swept by the footprint. ``sim_robot`` (:mod:`freespace_seg.nodes.sim_robot`) wraps this in
a node, as ``freespace_driver`` wraps :mod:`freespace_seg.driving.driver_logic`.
"""

import math

import numpy as np

#: the start pose keeps at least this much room around the robot centre, if the room allows
START_CLEARANCES = (0.5, 0.4, 0.3, 0.25)
#: a contact ends when the robot is this far (m) from touching; a new contact is a collision
CONTACT_RELEASE = 0.01


def start_pose(scene, rng, radius, clearances=START_CLEARANCES):
    """Return a free start pose (x, y, yaw) with the most clearance the room allows, or None."""
    for clearance in clearances:
        try:
            pose = scene.sample_free_pose(rng, clearance=clearance)
        except RuntimeError:
            continue
        return None if scene.collides(pose[0], pose[1], radius) else pose
    return None


def _approach(current, target, limit):
    if abs(target - current) <= limit:
        return target
    return current + math.copysign(limit, target - current)


def integrate(x, y, yaw, v, w, dt):
    """Return the pose after ``dt`` s at ``v`` m/s and ``w`` rad/s (exact arc)."""
    if abs(w) < 1e-9:
        return x + v * dt * math.cos(yaw), y + v * dt * math.sin(yaw), yaw
    nyaw = yaw + w * dt
    r = v / w
    return (x + r * (math.sin(nyaw) - math.sin(yaw)), y - r * (math.cos(nyaw) - math.cos(yaw)),
            math.atan2(math.sin(nyaw), math.cos(nyaw)))


class Coverage:
    """Floor swept by a disc of ``radius`` over a room, counted on a grid of ``resolution``."""

    def __init__(self, scene, radius, resolution):
        x0, y0, x1, y1 = scene.bounds()
        self.resolution = float(resolution)
        self.origin = (x0, y0)
        nx = max(1, int(math.ceil((x1 - x0) / resolution)))
        ny = max(1, int(math.ceil((y1 - y0) / resolution)))
        xs = x0 + (np.arange(nx) + 0.5) * resolution
        ys = y0 + (np.arange(ny) + 0.5) * resolution
        gx, gy = np.meshgrid(xs, ys)
        #: free floor cells of the room (cell centres)
        self.free = ~scene.blocked_top_down(gx, gy)
        self.visited = np.zeros(self.free.shape, dtype=bool)
        n = int(math.ceil(radius / resolution)) + 1
        oy, ox = np.mgrid[-n:n + 1, -n:n + 1]
        self._offsets = (oy, ox)
        self._radius = float(radius)

    def add(self, x, y):
        """Mark the cells whose centres lie within the disc at (x, y)."""
        res = self.resolution
        col = int(math.floor((x - self.origin[0]) / res))
        row = int(math.floor((y - self.origin[1]) / res))
        oy, ox = self._offsets
        rows, cols = row + oy, col + ox
        cx = self.origin[0] + (cols + 0.5) * res
        cy = self.origin[1] + (rows + 0.5) * res
        ok = ((cx - x) ** 2 + (cy - y) ** 2 <= self._radius ** 2) & (rows >= 0) & \
            (cols >= 0) & (rows < self.visited.shape[0]) & (cols < self.visited.shape[1])
        self.visited[rows[ok], cols[ok]] = True

    @property
    def fraction(self):
        """Return the swept share of the free floor, 0..1."""
        free = int(np.count_nonzero(self.free))
        return float(np.count_nonzero(self.visited & self.free)) / free if free else 0.0

    @property
    def free_area(self):
        """Return the free floor area (m^2) as counted on the grid."""
        return float(np.count_nonzero(self.free)) * self.resolution ** 2


class RobotBody:
    """
    The robot's state in ``scene``: pose, wheel speeds, distance, contacts, path, coverage.

    ``dt`` is the fixed step (s); :meth:`step` advances it by one step under a command.
    """

    def __init__(self, scene, pose, radius, dt, coverage_resolution):
        self.scene = scene
        self.radius = float(radius)
        self.dt = float(dt)
        self.x, self.y, self.yaw = (float(v) for v in pose)
        self.v = self.w = 0.0
        self.steps = 0
        self.distance = 0.0
        self.collisions = 0
        self.contact_steps = 0
        self.in_contact = False
        #: pushing against something this step (what a bumper reports)
        self.bumper = False
        #: (t, x, y) of every new contact: the point the robot tried to reach
        self.collision_points = []
        self.path = [(0.0, self.x, self.y, self.yaw)]
        self.coverage = Coverage(scene, radius, coverage_resolution)
        self.coverage.add(self.x, self.y)

    @property
    def time(self):
        """Return the simulated time in seconds (steps taken times the step length)."""
        return self.steps * self.dt

    def step(self, cmd_v, cmd_w, max_linear, max_angular, linear_accel, angular_accel):
        """Advance one step towards the command (m/s, rad/s); return True on a new collision."""
        if not (math.isfinite(cmd_v) and math.isfinite(cmd_w)):
            cmd_v = cmd_w = 0.0
        cmd_v = min(max(cmd_v, -max_linear), max_linear)
        cmd_w = min(max(cmd_w, -max_angular), max_angular)
        dt = self.dt
        self.v = _approach(self.v, cmd_v, linear_accel * dt)
        self.w = _approach(self.w, cmd_w, angular_accel * dt)
        nx, ny, nyaw = integrate(self.x, self.y, self.yaw, self.v, self.w, dt)
        self.steps += 1
        radius = self.radius
        new_collision = False
        if (nx, ny) != (self.x, self.y) and self.scene.collides(nx, ny, radius):
            # The bumper: go only as far as the free part of the step (up to touching), stop.
            f = self._free_fraction(self.v, self.w, dt, radius)
            tx, ty, tyaw = integrate(self.x, self.y, self.yaw, self.v, self.w, f * dt)
            self.distance += math.hypot(tx - self.x, ty - self.y)
            self.x, self.y = tx, ty
            self.coverage.add(self.x, self.y)
            # Turning in place is still possible: keep the whole step's turn.
            self.yaw = math.atan2(math.sin(nyaw), math.cos(nyaw))
            self.contact_steps += 1
            if not self.in_contact:
                self.collisions += 1
                self.collision_points.append((self.time, nx, ny))
                new_collision = True
            self.in_contact = True
            self.bumper = True
            self.v = 0.0
        else:
            self.bumper = False
            self.distance += math.hypot(nx - self.x, ny - self.y)
            self.x, self.y, self.yaw = nx, ny, nyaw
            self.coverage.add(self.x, self.y)
            if self.in_contact and \
                    self.scene.clearance(self.x, self.y) > radius + CONTACT_RELEASE:
                self.in_contact = False
        self.path.append((self.time, self.x, self.y, self.yaw))
        return new_collision

    def _free_fraction(self, v, w, dt, radius):
        """Largest share of a step (bisection, within 1/256) whose end does not collide."""
        lo, hi = 0.0, 1.0
        for _ in range(8):
            mid = 0.5 * (lo + hi)
            x, y, _ = integrate(self.x, self.y, self.yaw, v, w, mid * dt)
            if self.scene.collides(x, y, radius):
                hi = mid
            else:
                lo = mid
        return lo
