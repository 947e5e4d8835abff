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
A scripted drive through a simulated room: bump and turn, as a robot vacuum wanders.

:func:`wander` drives :class:`~freespace_seg.sim.robot.RobotBody` (the simulated Create 3)
straight ahead, with now and then a gentle curve, until the bumper touches something; then it
backs off a little and turns in place by a random angle, and goes on. It needs no perception,
so it tests what needs only a path (the auto-labels of :mod:`freespace_seg.ground.autolabel`),
and it bumps into things, so the path has hazard events. Seeded: the same room, start and
seed give the same drive.
"""

from dataclasses import dataclass, field, replace
import math

from freespace_seg.sim.robot import RobotBody, start_pose
import numpy as np

#: the Create 3's kinematics, as sim_robot's defaults
LIMITS = {'max_linear': 0.306, 'max_angular': 1.9, 'linear_accel': 1.0, 'angular_accel': 5.0}


@dataclass
class Drive:
    """
    A drive: ``path`` (N, 4) of (t, x, y, yaw) every step, ``hazards`` [(t, (x, y, yaw), b)].

    ``hazards`` are the bumps: the time, the pose where the robot stopped and the bearing
    ``b`` (rad, from the heading, counter-clockwise) of the contact, what an ideal bumper
    with a contact position would report.
    """

    path: np.ndarray
    hazards: list = field(default_factory=list)
    distance: float = 0.0
    collisions: int = 0

    def pose_at(self, t):
        """Return the (x, y, yaw) of the last step at or before ``t``."""
        i = int(np.searchsorted(self.path[:, 0], t + 1e-9, side='right')) - 1
        return tuple(float(v) for v in self.path[max(i, 0), 1:])


def contact_bearing(scene, x, y, yaw, radius, reach=0.01):
    """Return the bearing (rad, from ``yaw``) of the middle of what touches the disc, or None."""
    angles = np.radians(np.arange(-180.0, 180.0, 1.0))
    hit = scene.blocked_top_down(x + (radius + reach) * np.cos(yaw + angles),
                                 y + (radius + reach) * np.sin(yaw + angles))
    if not hit.any():
        return None
    c, s = np.cos(angles[hit]).sum(), np.sin(angles[hit]).sum()
    return float(math.atan2(s, c))


def as_seen_by_height(scene, height):
    """
    Return ``scene`` as a robot ``height`` metres tall meets it.

    Raised things below that height (a table top, a shelf) block the floor under them as if
    they stood on it. The copy is for driving only (its obstacles are moved down to the
    floor); render the original. ``height`` None or 0: ``scene`` itself (a Create 3 passes
    under a table).
    """
    if not height:
        return scene
    lowered = [replace(o, bottom=0.0) if 0.0 < getattr(o, 'bottom', 0.0) < height else o
               for o in scene.obstacles]
    return replace(scene, obstacles=lowered)


def wander(scene, rng, duration=60.0, radius=0.17, dt=0.05, speed=0.25, pose=None,
           curves=True, height=None):
    """
    Drive ``duration`` s through ``scene`` from ``pose`` (default: a free start pose).

    ``curves``: now and then drive a gentle curve (off: only straight lines between bumps).
    ``height``: the robot's height (m; e.g. a camera mast): it bumps into raised things below
    it instead of driving under them (:func:`as_seen_by_height`; None: the Create 3's body,
    which passes under tables).

    Returns a :class:`Drive`; RuntimeError when the room has no free start pose.
    """
    scene = as_seen_by_height(scene, height)
    pose = pose if pose is not None else start_pose(scene, rng, radius)
    if pose is None:
        raise RuntimeError('the room has no free start pose')
    body = RobotBody(scene, pose, radius, dt, coverage_resolution=0.1)
    hazards = []
    state, until, turn = 'forward', 0.0, 0.0
    curve = 0.0
    steps = int(round(duration / dt))
    for _ in range(steps):
        t = body.time
        if state == 'forward':
            if t >= until:
                curve = float(rng.choice([0.0, 0.0, rng.uniform(-0.6, 0.6)])) if curves else 0.0
                until = t + float(rng.uniform(2.0, 6.0))
            cmd = (speed, curve)
        elif state == 'back':
            cmd = (-0.1, 0.0)
            if t >= until:
                state = 'turn'
                angle = float(rng.uniform(0.6, math.pi))
                turn = math.copysign(1.5, float(rng.uniform(-1.0, 1.0)))
                until = t + angle / abs(turn)
        else:
            cmd = (0.0, turn)
            if t >= until:
                state, until = 'forward', t
        body.step(cmd[0], cmd[1], **LIMITS)
        if body.bumper and state == 'forward':
            hazards.append((body.time, (body.x, body.y, body.yaw),
                            contact_bearing(scene, body.x, body.y, body.yaw, radius)))
            state, until = 'back', body.time + 0.4
    return Drive(path=np.asarray(body.path, dtype=np.float64), hazards=hazards,
                 distance=body.distance, collisions=body.collisions)
