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
Labels from where the robot drove: free floor, blocked and unchecked pixels of a frame.

A robot that has driven through a room knows much of each frame's answer. For one frame,
given the camera (intrinsics, mount in base_link), the robot pose (x, y, yaw in odom) at the
frame's time, the poses after it and the hazard (bump) events, :func:`label_frame` returns a
mask of :data:`FREE` (1), :data:`BLOCKED` (0) and :data:`UNCHECKED` (255):

* **free**: the pixel's ray hits the floor (z = 0) at a point P that the footprint of a
  later pose covered (within ``lookahead_time`` s and ``lookahead_distance`` m of driving
  after the frame), shrunk by ``safety_margin``, **and** the whole floor segment from the
  camera's foot point to P lies in the swept corridor (the union of the footprints of the
  current pose, full size, and of the later poses, shrunk, sampled every ``path_step`` m).
  The robot drove over that whole line of sight, so nothing stood on it and the camera saw
  P. The test takes the farthest P of a camera pitched up to ``pitch_tolerance`` more than
  the mount says (a low camera's floor points move far with a small pitch error).
  Points under the robot's own footprint at the frame's time stay unchecked (on a robot
  the camera may see its own body there), and so do points beyond ``max_range`` m and rays
  less than ``min_depression`` below the horizontal (a pitch error moves their floor
  points most).
* **blocked**: every ray that rises more than ``horizon_margin_px`` pixels' worth of angle
  above the horizontal (it can never reach the floor), and, for each hazard event within
  ``lookahead_time`` s of the frame, the floor points 0 to ``hazard_depth`` m beyond the
  bumper front (the footprint edge within ``hazard_half_angle`` of the driving direction),
  where the obstacle that stopped the robot stands or hides the floor. A point that is both
  (the robot drove over it too) is unchecked.
* everything else: **unchecked**; optionally (:func:`fill_confident`) a model's very sure
  pixels fill some of it.

The rule assumes a static world, and a floor point counts as seen when nothing *stands* on
the line of sight. Two things break it: an overhang lower than the camera that the robot
drove under (a table top or chair seat between the robot's top and the camera's height;
the robot passes below it but it hides the floor behind it), and things that move (people,
pets, doors) between the frame and the drive over. Odometry error moves the later
footprints against the frame: the safety margin absorbs a few centimetres of it (see
``python -m freespace_seg autolabel-sim`` for what drift and a stamp offset cost).

Nothing here imports ROS; :mod:`freespace_seg.tools.autolabel` reads bags into it.
"""

from dataclasses import dataclass, replace
import math

import cv2
from freespace_seg.ground.geometry import pixel_rays_in_base
import numpy as np

FREE = 1
BLOCKED = 0
UNCHECKED = 255
#: cv2 drawing: sub-cell precision of circle centres and radii (2 ** _SHIFT steps per cell)
_SHIFT = 4


@dataclass(frozen=True)
class AutoLabelConfig:
    """The rule's parameters (metres, seconds, radians, pixels); see the module."""

    robot_radius: float = 0.17
    safety_margin: float = 0.02
    lookahead_time: float = 30.0
    lookahead_distance: float = 4.0
    max_range: float = 5.0
    horizon_margin_px: float = 3.0
    #: no free labels on rays closer than this to the horizontal (rad): a pitch error moves
    #: a floor point by about (error / depression) of its distance
    min_depression: float = 0.0
    #: a pixel is free only if its floor point is still seen with the camera pitched up by
    #: this much (rad): the camera's pitch is rarely known to better than a degree
    pitch_tolerance: float = math.radians(1.0)
    path_step: float = 0.05
    resolution: float = 0.01
    hazard_depth: float = 0.10
    hazard_half_angle: float = math.radians(30.0)
    #: half angle around a hazard's contact bearing, when the event has one
    hazard_bearing_tolerance: float = math.radians(5.0)
    #: angular step of the line-of-sight test (rad); at max_range 0.002 rad is 1 cm
    angle_step: float = 0.002
    #: False: free = under a later footprint, without the line-of-sight test (to measure it)
    line_of_sight: bool = True

    def __post_init__(self):
        """Check that the numbers make sense."""
        if not 0.0 <= self.safety_margin < self.robot_radius:
            raise ValueError('safety_margin must be in [0, robot_radius)')
        for name in ('robot_radius', 'lookahead_time', 'lookahead_distance', 'max_range',
                     'path_step', 'resolution', 'angle_step'):
            if not getattr(self, name) > 0.0:
                raise ValueError(f'{name} must be positive')
        if self.horizon_margin_px < 0.0 or self.hazard_depth < 0.0:
            raise ValueError('horizon_margin_px and hazard_depth must be 0 or more')


@dataclass
class FrameLabels:
    """A frame's label mask (uint8 FREE/BLOCKED/UNCHECKED) and its counts."""

    mask: np.ndarray
    free: int
    blocked: int
    unchecked: int
    #: blocked pixels from the horizon rule and from hazard events
    horizon: int
    hazard: int
    #: later poses used (inside the look-ahead window)
    poses_used: int

    @property
    def total(self):
        return int(self.mask.size)


class CameraFloor:
    """
    Per-camera constants: where each pixel's ray meets the floor, in base_link.

    ``sky``: rays that rise above the horizontal by more than the margin (blocked).
    ``floor``: rays that meet the floor within ``max_range`` of the camera's foot point;
    ``px``, ``py`` their floor points (base frame), ``rho``, ``theta`` polar around the foot.
    """

    def __init__(self, intrinsics, mount, config):
        self.intrinsics = intrinsics
        self.mount = mount
        self.config = config
        rays = pixel_rays_in_base(intrinsics, mount)
        dx, dy, dz = rays[..., 0], rays[..., 1], rays[..., 2]
        elevation = np.arctan2(dz, np.hypot(dx, dy))
        margin = config.horizon_margin_px / max(intrinsics.fx, intrinsics.fy)
        self.sky = elevation > margin
        down = dz < -1e-9
        t = np.where(down, -mount.z / np.where(down, dz, -1.0), 0.0)
        self.px = mount.x + t * dx
        self.py = mount.y + t * dy
        self.foot = (float(mount.x), float(mount.y))
        self.rho = np.hypot(self.px - mount.x, self.py - mount.y)
        self.theta = np.arctan2(self.py - mount.y, self.px - mount.x)
        self.floor = down & (self.rho <= config.max_range) & (mount.z > 0.0) & \
            (-elevation >= config.min_depression)
        self.floor_index = np.flatnonzero(self.floor)
        # the same rays with the camera pitched up by the tolerance: the farthest each may land
        self.rho_far = self.rho
        if config.pitch_tolerance > 0.0:
            up = replace(mount, pitch=mount.pitch - config.pitch_tolerance)
            far = pixel_rays_in_base(intrinsics, up)
            fdown = far[..., 2] < -1e-9
            ft = np.where(fdown, -up.z / np.where(fdown, far[..., 2], -1.0), np.inf)
            self.rho_far = np.where(fdown, np.maximum(self.rho, np.hypot(
                up.x + ft * far[..., 0] - mount.x, up.y + ft * far[..., 1] - mount.y)), np.inf)
        if self.floor.any():
            lo = float(self.theta[self.floor].min())
            hi = float(self.theta[self.floor].max())
        else:
            lo = hi = 0.0
        step = config.angle_step
        self.angles = lo + step * np.arange(int(math.ceil((hi - lo) / step)) + 2)
        k = np.clip((self.theta - lo) / step, 0.0, len(self.angles) - 2)
        self.bin = np.floor(k).astype(np.int64)
        step = 2.0 * config.resolution
        self.radii = np.arange(int(math.ceil(config.max_range / step)) + 1) * step


def relative_poses(pose, poses):
    """Return ``poses`` (N, 3: x, y, yaw in odom) in the base frame of ``pose``."""
    poses = np.asarray(poses, dtype=np.float64).reshape(-1, 3)
    x0, y0, yaw0 = (float(v) for v in pose)
    c, s = math.cos(yaw0), math.sin(yaw0)
    dx, dy = poses[:, 0] - x0, poses[:, 1] - y0
    return np.stack([c * dx + s * dy, -s * dx + c * dy, poses[:, 2] - yaw0], axis=1)


def window(t0, pose, times, poses, config):
    """
    Return the later poses of the look-ahead window, in odom: (M, 3).

    Those with ``t0 < t <= t0 + lookahead_time`` and at most ``lookahead_distance`` m of
    path after ``pose`` (the path measured through the poses in order).
    """
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    poses = np.asarray(poses, dtype=np.float64).reshape(-1, 3)
    keep = (times > t0) & (times <= t0 + config.lookahead_time)
    later = poses[keep]
    if not len(later):
        return later
    xy = np.vstack([np.asarray(pose, dtype=np.float64)[None, :2], later[:, :2]])
    path = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])[1:]
    return later[path <= config.lookahead_distance]


def densify(xy, step):
    """Return the polyline ``xy`` (N, 2) resampled every ``step`` m of its length, ends kept."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    if len(xy) < 2:
        return xy
    length = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
    s = np.append(np.arange(0.0, length[-1], step), length[-1])
    return np.stack([np.interp(s, length, xy[:, 0]), np.interp(s, length, xy[:, 1])], axis=1)


class _Grid:
    """A top-down raster in the current base frame: cell (row, col) of point (x, y)."""

    def __init__(self, points, pad, resolution):
        self.res = resolution
        lo = points.min(axis=0) - pad
        hi = points.max(axis=0) + pad
        self.x0, self.y0 = float(lo[0]), float(lo[1])
        self.shape = (int(math.ceil((hi[1] - lo[1]) / resolution)) + 1,
                      int(math.ceil((hi[0] - lo[0]) / resolution)) + 1)
        self.cells = np.zeros(self.shape, np.uint8)

    def disc(self, x, y, radius, value=1):
        scale = 2 ** _SHIFT / self.res
        centre = (int(round((x - self.x0) * scale - 2 ** (_SHIFT - 1))),
                  int(round((y - self.y0) * scale - 2 ** (_SHIFT - 1))))
        cv2.circle(self.cells, centre, max(0, int(math.floor(radius * scale))), value, -1,
                   cv2.LINE_8, _SHIFT)

    def lookup(self, xs, ys):
        col = np.floor((xs - self.x0) / self.res).astype(np.int64)
        row = np.floor((ys - self.y0) / self.res).astype(np.int64)
        ok = (row >= 0) & (col >= 0) & (row < self.shape[0]) & (col < self.shape[1])
        out = np.zeros(np.shape(xs), np.uint8)
        out[ok] = self.cells[row[ok], col[ok]]
        return out


def _reach(camera, grid):
    """Per angle bin: how far (m) from the camera's foot the floor stays inside the corridor."""
    fx, fy = camera.foot
    corners = np.array([[grid.x0, grid.y0], [grid.x0 + grid.shape[1] * grid.res, grid.y0],
                        [grid.x0, grid.y0 + grid.shape[0] * grid.res],
                        [grid.x0 + grid.shape[1] * grid.res, grid.y0 + grid.shape[0] * grid.res]])
    far = float(np.hypot(corners[:, 0] - fx, corners[:, 1] - fy).max())
    radii = camera.radii[camera.radii <= far + grid.res]
    xs = fx + np.cos(camera.angles)[:, None] * radii[None, :]
    ys = fy + np.sin(camera.angles)[:, None] * radii[None, :]
    inside = grid.lookup(xs, ys) > 0
    first_out = np.where(inside.all(axis=1), inside.shape[1], np.argmin(inside, axis=1))
    # the last sample inside (conservative by up to one sample)
    return np.where(first_out > 0, radii[np.maximum(first_out - 1, 0)], -1.0)


def _hazard_region(camera, events, config):
    """Pixels whose floor point lies 0..hazard_depth beyond a bumper front (base frame)."""
    hit = np.zeros(camera.px.shape, dtype=bool)
    r = config.robot_radius
    idx = camera.floor_index
    px, py = camera.px.ravel()[idx], camera.py.ravel()[idx]
    for ex, ey, eyaw, bearing, half in events:
        if half is None:
            half = config.hazard_half_angle if bearing is None \
                else config.hazard_bearing_tolerance
        if bearing is not None:
            eyaw += bearing
        near = (np.abs(px - ex) <= r + config.hazard_depth) & \
            (np.abs(py - ey) <= r + config.hazard_depth)
        if not near.any():
            continue
        dx, dy = px[near] - ex, py[near] - ey
        d = np.hypot(dx, dy)
        ang = np.arctan2(dy, dx) - eyaw
        ang = np.abs((ang + math.pi) % (2.0 * math.pi) - math.pi)
        inside = (d >= r) & (d <= r + config.hazard_depth) & (ang <= half)
        hit.ravel()[idx[near][inside]] = True
    return hit


def label_frame(camera, pose, t0, times, poses, hazards=(), config=None):
    """
    Label one frame (see the module); return :class:`FrameLabels`.

    ``camera``: a :class:`CameraFloor` (build it once per camera). ``pose``: (x, y, yaw) of
    base_link in odom at the frame's time ``t0`` (s). ``times``, ``poses``: the trajectory
    (N) and (N, 3) in odom; only the window after ``t0`` is used. ``hazards``: (time, (x, y,
    yaw)[, bearing[, half angle]]) of each bump: the pose where the robot stopped and, when
    the bumper tells, the contact's bearing from the heading (rad, counter-clockwise; None:
    unknown) and how sure it is (half angle, rad; None: the config's). A bump with a
    bearing labels ``hazard_bearing_tolerance`` around it, one without
    ``hazard_half_angle`` around the heading.
    """
    config = config or camera.config
    r = config.robot_radius
    later = window(t0, pose, times, poses, config)
    rel = relative_poses(pose, later)
    mask = np.full(camera.sky.shape, UNCHECKED, np.uint8)
    free = np.zeros(camera.sky.shape, dtype=bool)
    grid = None
    if len(rel):
        path = densify(np.vstack([[0.0, 0.0], rel[:, :2]]), config.path_step)
        grid = _Grid(np.vstack([path, [camera.foot]]), r + 2 * config.resolution,
                     config.resolution)
        grid.disc(0.0, 0.0, r)
        for x, y in path[1:]:
            grid.disc(x, y, r - config.safety_margin)
        idx = camera.floor_index
        px, py = camera.px.ravel()[idx], camera.py.ravel()[idx]
        if config.line_of_sight:
            reach = _reach(camera, grid)
            b = camera.bin.ravel()[idx]
            seen = camera.rho_far.ravel()[idx] <= np.minimum(reach[b], reach[b + 1])
        else:
            seen = grid.lookup(px, py) > 0
        ok = seen & (np.hypot(px, py) > r + config.safety_margin)
        free.ravel()[idx[ok]] = True
    events = [e for e in hazards if abs(float(e[0]) - t0) <= config.lookahead_time]
    hazard = np.zeros(camera.sky.shape, dtype=bool)
    if events and config.hazard_depth > 0.0:
        rel = relative_poses(pose, np.asarray([e[1] for e in events], dtype=np.float64))
        extra = [(tuple(e[2:4]) + (None, None))[:2] for e in events]
        near = np.hypot(rel[:, 0], rel[:, 1]) <= config.max_range + r + 0.5
        hazard = _hazard_region(camera, [tuple(p) + x for p, x, n in zip(rel, extra, near) if n],
                                config)
        if grid is not None and hazard.any():
            # floor the robot drove over later is no obstacle's
            hit = np.flatnonzero(hazard)
            swept = grid.lookup(camera.px.ravel()[hit], camera.py.ravel()[hit]) > 0
            hazard.ravel()[hit[swept]] = False
    mask[camera.sky] = BLOCKED
    mask[hazard & ~free] = BLOCKED
    mask[free & ~hazard] = FREE
    counts = np.bincount(mask.ravel(), minlength=256)
    return FrameLabels(mask=mask, free=int(counts[FREE]), blocked=int(counts[BLOCKED]),
                       unchecked=int(counts[UNCHECKED]), horizon=int(camera.sky.sum()),
                       hazard=int((hazard & ~free).sum()), poses_used=int(len(rel)))


def fill_confident(mask, p_free, threshold):
    """
    Fill the unchecked pixels of ``mask`` (in place) where a model is very sure.

    ``p_free``: (H, W) P(free) in 0..1 (or uint8 x 255); pixels still :data:`UNCHECKED` become
    :data:`FREE` where ``p_free >= threshold`` and :data:`BLOCKED` where
    ``p_free <= 1 - threshold``. The drive-over labels always win. Returns (free, blocked)
    pixel counts filled.
    """
    p = np.asarray(p_free)
    p = p / 255.0 if p.dtype == np.uint8 else p
    open_ = mask == UNCHECKED
    free = open_ & (p >= threshold)
    blocked = open_ & (p <= 1.0 - threshold)
    mask[free] = FREE
    mask[blocked] = BLOCKED
    return int(free.sum()), int(blocked.sum())


class Trajectory:
    """
    Timed poses (odometry or TF): sorted times (s) and (x, y, yaw), with interpolation.

    :meth:`pose_at` interpolates linearly (yaw unwrapped) and returns None outside the
    recorded span or across a gap longer than ``max_gap`` s.
    """

    def __init__(self, times, poses, max_gap=0.5):
        times = np.asarray(times, dtype=np.float64).reshape(-1)
        poses = np.asarray(poses, dtype=np.float64).reshape(-1, 3)
        order = np.argsort(times, kind='stable')
        self.times = times[order]
        self.poses = poses[order].copy()
        if len(self.poses):
            self.poses[:, 2] = np.unwrap(self.poses[:, 2])
        self.max_gap = float(max_gap)

    def __len__(self):
        return len(self.times)

    def pose_at(self, t):
        """Return (x, y, yaw) at time ``t`` or None (outside the span or in a gap)."""
        ts = self.times
        if not len(ts) or t < ts[0] or t > ts[-1]:
            return None
        i = int(np.searchsorted(ts, t, side='right'))
        if i >= len(ts):
            return tuple(float(v) for v in self.poses[-1])
        j = i - 1
        if ts[i] - ts[j] > self.max_gap:
            return None
        f = 0.0 if ts[i] == ts[j] else (t - ts[j]) / (ts[i] - ts[j])
        p = self.poses[j] + f * (self.poses[i] - self.poses[j])
        return float(p[0]), float(p[1]), float(p[2])
