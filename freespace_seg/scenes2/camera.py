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
Camera models of the second generator: a pinhole or an equidistant (fisheye) lens on a pose.

The camera frame is x right, y down, z forward. The world is z up with the floor at z = 0.
The pose is a position, a yaw about the world z axis, a pitch down and a small roll.
"""

import math

import numpy as np


class Camera:
    """A pinhole (``lens='pinhole'``) or equidistant (``lens='equidistant'``) camera."""

    def __init__(self, position, yaw, pitch, roll, hfov_deg, lens='pinhole'):
        self.position = np.asarray(position, dtype=np.float64)
        self.yaw = float(yaw)
        self.pitch = float(pitch)
        self.roll = float(roll)
        self.hfov_deg = float(hfov_deg)
        self.lens = lens
        if lens not in ('pinhole', 'equidistant'):
            raise ValueError(f'unknown lens {lens!r}')
        if lens == 'pinhole' and not 0.0 < self.hfov_deg < 170.0:
            raise ValueError('a pinhole lens needs a field of view under 170 degrees')

    def rotation(self):
        """Return the 3x3 matrix that turns camera-frame vectors into world vectors."""
        base = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
        cr, sr = math.cos(self.roll), math.sin(self.roll)
        cp, sp = math.cos(self.pitch), math.sin(self.pitch)
        cy, sy = math.cos(self.yaw), math.sin(self.yaw)
        roll = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
        pitch = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
        yaw = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
        return yaw @ pitch @ roll @ base

    def focal(self, width):
        """Return the focal length in pixels for an image ``width`` pixels wide."""
        half = math.radians(self.hfov_deg) / 2.0
        if self.lens == 'pinhole':
            return (width / 2.0) / math.tan(half)
        return (width / 2.0) / half

    def intrinsics(self, width, height):
        """Return the intrinsics as the dataset records them (``samples.jsonl``)."""
        f = self.focal(width)
        out = {'width': int(width), 'height': int(height), 'fx': f, 'fy': f,
               'cx': (width - 1) / 2.0, 'cy': (height - 1) / 2.0}
        if self.lens == 'pinhole':
            out['distortion'] = []
        else:
            out['distortion_model'] = 'equidistant'
            out['distortion'] = [0.0, 0.0, 0.0, 0.0]
        return out

    def rays(self, width, height):
        """
        Return unit world directions (H, W, 3) float32 and a validity mask (H, W) bool.

        Pixel centres are sampled; a pixel whose equidistant angle passes 100 degrees from
        the axis lies outside the lens circle and is not valid (it is black and blocked).
        """
        f = self.focal(width)
        u = (np.arange(width, dtype=np.float64) - (width - 1) / 2.0) / f
        v = (np.arange(height, dtype=np.float64) - (height - 1) / 2.0) / f
        x, y = np.meshgrid(u, v)
        if self.lens == 'pinhole':
            cam = np.stack([x, y, np.ones_like(x)], axis=-1)
            cam /= np.linalg.norm(cam, axis=-1, keepdims=True)
            valid = np.ones(x.shape, dtype=bool)
        else:
            theta = np.hypot(x, y)
            valid = theta < math.radians(100.0)
            theta = np.minimum(theta, math.radians(100.0))
            s = np.where(theta > 1e-12, np.sin(theta) / np.maximum(theta, 1e-12), 1.0)
            cam = np.stack([x * s, y * s, np.cos(theta)], axis=-1)
        world = cam @ self.rotation().T
        return world.astype(np.float32), valid

    def record(self):
        """Return the pose and lens as plain numbers for ``samples.jsonl``."""
        return {'x': float(self.position[0]), 'y': float(self.position[1]),
                'z': float(self.position[2]), 'roll': self.roll, 'pitch': self.pitch,
                'yaw': self.yaw, 'lens': self.lens, 'hfov_deg': self.hfov_deg}


def random_camera(rng, position_xy, yaw, height_range=(0.1, 1.5), pitch_range=(0.0, 0.7)):
    """Draw height, pitch, roll, lens and field of view for a camera at ``position_xy``."""
    lo, hi = height_range
    # Low robots are the common case: half of the cameras sit in the lowest third.
    if rng.random() < 0.5:
        height = rng.uniform(lo, lo + (hi - lo) / 3.0)
    else:
        height = rng.uniform(lo, hi)
    pitch = rng.uniform(*pitch_range)
    roll = rng.normal(0.0, 0.03)
    if rng.random() < 0.4:
        lens, hfov = 'equidistant', rng.uniform(100.0, 150.0)
    else:
        lens, hfov = 'pinhole', rng.uniform(60.0, 115.0)
    return Camera((position_xy[0], position_xy[1], height), yaw, pitch, roll, hfov, lens)
