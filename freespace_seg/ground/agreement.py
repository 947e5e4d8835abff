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
Agreement over the last grids in the odom frame: a free cell must have been free before.

A grid's free cell is where the model saw floor in one frame. A speck of floor on a table top
or a shelf lies on the ground plane only in that frame's projection: seen from the next pose,
the same top projects somewhere else, while real floor stays where it is. And a flicker of one
frame is not seen again at all. :class:`GridAgreement` keeps the last ``frames`` grids with
their poses in the odom frame and keeps a cell of the newest grid free only where at least
``min_free`` of them (the newest included) call the same spot on the floor free; the other
free cells become unknown. Occupied and unknown cells pass unchanged: an obstacle shows at
once, and nothing becomes free or occupied that the newest grid did not say.

The poses are (x, y, yaw) of the grid's frame (the base frame the grid is laid in) in the
odom frame at each grid's stamp, as odometry gives them. Every earlier grid is read at the
newest grid's cell centres, nearest cell, and votes free where it has a free cell within
``tolerance`` cells (1 by default: the far floor of a grid is a sparse set of cells, and a
lookup a fraction of a cell off must not lose it). Grids older than ``max_age`` seconds are
dropped; a pose of None (no odometry) drops the history and passes the grid unchanged, so the
caller can say that the agreement is off. ``frames`` 1 passes every grid unchanged.

The cost is one lookup per earlier grid and cell (an 80x80 grid and 2 earlier grids: well
under a millisecond). ROS-free (numpy and OpenCV); ``grid-rules --drives`` measures it
(docs/ground_outputs.md).
"""

import bisect
import collections
from dataclasses import dataclass
import math
import threading

import cv2
from freespace_seg.ground.geometry import quaternion_yaw
from freespace_seg.ground.grid import FREE, UNKNOWN
import numpy as np


@dataclass(frozen=True)
class AgreementParams:
    """
    How many grids must agree.

    ``frames`` grids (the newest included), ``min_free`` of them free (0: all of them), none
    older than ``max_age`` seconds (0: any age).
    """

    frames: int = 1
    min_free: int = 0
    max_age: float = 1.0
    #: an earlier grid votes free where it has a free cell within this many cells
    tolerance: int = 1

    def __post_init__(self):
        if not isinstance(self.frames, (int, np.integer)) or isinstance(self.frames, bool) or \
                not 1 <= self.frames <= 30:
            raise ValueError(f'grid agreement frames must be an integer in [1, 30], got '
                             f'{self.frames!r}')
        if not isinstance(self.min_free, (int, np.integer)) or isinstance(self.min_free, bool) \
                or not 0 <= self.min_free <= self.frames:
            raise ValueError(f'grid agreement min_free must be an integer in [0, frames '
                             f'({self.frames})], got {self.min_free!r}')
        if not isinstance(self.tolerance, (int, np.integer)) or \
                isinstance(self.tolerance, bool) or not 0 <= self.tolerance <= 5:
            raise ValueError(f'grid agreement tolerance must be an integer in [0, 5] cells, '
                             f'got {self.tolerance!r}')
        if not (isinstance(self.max_age, (int, float)) and math.isfinite(self.max_age) and
                self.max_age >= 0.0):
            raise ValueError(f'grid agreement max_age must be a number of seconds >= 0, got '
                             f'{self.max_age!r}')

    @property
    def needed(self):
        """Return how many grids must call a cell free (``min_free``, 0 meaning all)."""
        return self.min_free or self.frames

    @property
    def active(self):
        """Whether the agreement can take free cells away at all."""
        return self.frames > 1 and self.needed > 1

    @classmethod
    def parse(cls, text, max_age=1.0, tolerance=1):
        """Parse ``K`` (K of K) or ``K/M`` (M of K); ``1`` is off."""
        text = str(text).strip()
        try:
            if '/' in text:
                k, m = text.split('/', 1)
                return cls(int(k), int(m), max_age, tolerance)
            return cls(int(text), 0, max_age, tolerance)
        except ValueError as e:
            if 'grid agreement' in str(e):
                raise
            raise ValueError(f'bad grid agreement {text!r}: expected K or K/M, whole numbers')

    @property
    def name(self):
        """Return the short name of :meth:`parse` (``1`` when off)."""
        return '1' if not self.active else f'{self.frames}/{self.needed}'


def odom_pose(msg):
    """Return (time ns, x, y, yaw) of a nav_msgs/Odometry message (any object with its fields)."""
    p = msg.pose.pose.position
    t_ns = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
    return t_ns, float(p.x), float(p.y), quaternion_yaw(msg.pose.pose.orientation)


class PoseHistory:
    """
    Recent odometry poses by time, to find the pose of a grid's stamp.

    :meth:`add` takes (time ns, x, y, yaw) in any order of arrival; :meth:`at` returns the
    (x, y, yaw) nearest to a time within ``tolerance_ns``, or None. Thread-safe.
    """

    def __init__(self, size=100, tolerance_ns=200_000_000):
        self._poses = collections.deque(maxlen=size)
        self.tolerance_ns = int(tolerance_ns)
        self._lock = threading.Lock()

    def add(self, t_ns, x, y, yaw):
        """Keep one pose (a time that goes backwards, e.g. a replayed bag, starts over)."""
        with self._lock:
            if self._poses and t_ns < self._poses[-1][0] - 10 * self.tolerance_ns:
                self._poses.clear()
            self._poses.append((int(t_ns), float(x), float(y), float(yaw)))

    def at(self, t_ns):
        """Return the (x, y, yaw) nearest to ``t_ns`` within the tolerance, else None."""
        with self._lock:
            poses = sorted(self._poses)
        if not poses:
            return None
        i = bisect.bisect_left(poses, (int(t_ns),))
        best = min((poses[j] for j in (i - 1, i) if 0 <= j < len(poses)),
                   key=lambda p: abs(p[0] - t_ns))
        return best[1:] if abs(best[0] - t_ns) <= self.tolerance_ns else None

    def clear(self):
        """Forget every pose."""
        with self._lock:
            self._poses.clear()

    def __len__(self):
        return len(self._poses)


class GridAgreement:
    """
    The last grids and their odom poses; :meth:`apply` filters the newest (module doc).

    One object may serve several threads (the node's workers): :meth:`apply` holds a lock.
    """

    def __init__(self, params=AgreementParams()):
        self.params = params
        self._history = collections.deque(maxlen=max(0, params.frames - 1))
        self._centres = None
        self._lock = threading.Lock()

    def reset(self):
        """Forget the grids kept (after a clock jump, a new odom frame or a new grid)."""
        with self._lock:
            self._history.clear()

    def __len__(self):
        return len(self._history)

    def _cell_centres(self, spec):
        if self._centres is None or self._centres[0] != spec:
            x, y = spec.cell_centers()
            self._centres = (spec, x, y)
        return self._centres[1], self._centres[2]

    def votes(self, grid, spec, pose, stamp=0.0):
        """
        Return the free votes per cell of ``grid`` (int16 (ny, nx)).

        The newest grid votes for its own free cells; each kept grid of the last ``max_age``
        seconds votes where it calls the spot under the newest grid's cell centre free.
        """
        grid = np.asarray(grid)
        votes = (grid == FREE).astype(np.int16)
        if not self._history:
            return votes
        x, y = self._cell_centres(spec)
        px, py, pyaw = (float(v) for v in pose)
        c, s = math.cos(pyaw), math.sin(pyaw)
        wx, wy = px + c * x - s * y, py + s * x + c * y  # the cells in the odom frame
        max_age = self.params.max_age
        for old_stamp, (ox, oy, oyaw), old_spec, old in self._history:
            if max_age > 0.0 and stamp - old_stamp > max_age:
                continue
            oc, os_ = math.cos(oyaw), math.sin(oyaw)
            dx, dy = wx - ox, wy - oy
            row, col = old_spec.cell_of(oc * dx + os_ * dy, -os_ * dx + oc * dy)
            inside = row >= 0
            free = np.zeros(grid.shape, bool)
            free[inside] = old[row[inside], col[inside]]
            votes += free
        return votes

    def apply(self, grid, spec, pose, stamp=0.0):
        """
        Return ``grid`` with the free cells that the grids before do not agree on unknown.

        ``grid`` is the newest int8 (ny, nx) grid of ``spec``; it is kept for the next.
        ``pose``: (x, y, yaw) of the grid's frame in the odom frame, or None (no odometry:
        the history is dropped and ``grid`` returned as it is). ``stamp``: the grid's time in
        seconds, for ``max_age``. The input is not changed; the result is a new array when
        anything was filtered.
        """
        if not self.params.active:
            return grid
        if pose is None:
            self.reset()
            return grid
        with self._lock:
            return self._apply(grid, spec, pose, stamp)

    def _apply(self, grid, spec, pose, stamp):
        votes = self.votes(grid, spec, pose, stamp)
        free = np.asarray(grid) == FREE
        near = free
        t = self.params.tolerance
        if t:
            near = cv2.dilate(free.view(np.uint8), np.ones((2 * t + 1, 2 * t + 1), np.uint8))
            near = near.astype(bool)
        self._history.append((float(stamp), tuple(float(v) for v in pose), spec, near))
        drop = free & (votes < self.params.needed)
        if not drop.any():
            return grid
        out = np.array(grid, np.int8, copy=True)
        out[drop] = UNKNOWN
        return out
