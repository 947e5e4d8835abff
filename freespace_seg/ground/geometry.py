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
Camera intrinsics, camera mounting and pixel rays, shared by the renderer and the projection.

Frames follow REP 103/105:

* ``base`` (base_link): x forward, y left, z up, origin on the floor under the robot's
  centre of rotation.
* camera optical frame: z forward (along the optical axis), x right, y down.

A :class:`CameraMount` gives the pose of the camera in the base frame as a position and
roll/pitch/yaw angles of the camera *body* frame (x forward, y left, z up) about the base
axes. A positive ``pitch`` tilts the camera down (right-hand rule about the base y axis).

Lenses (:class:`CameraIntrinsics`, as sensor_msgs/CameraInfo's ``distortion_model``): a
pinhole with OpenCV's standard distortion (``plumb_bob``, ``rational_polynomial``; D of 4,
5, 8, 12 or 14 numbers) or the ``equidistant`` fisheye (camera_calibration's fisheye model,
OpenCV's ``cv2.fisheye``; D = k1..k4), whose rays may lie 90 degrees or more off the axis.
"""

from dataclasses import dataclass, field
import math

import cv2
import numpy as np

#: CameraInfo distortion_model of the fisheye lens
EQUIDISTANT = 'equidistant'
#: CameraInfo distortion models read as OpenCV's standard (pinhole) model
STANDARD_MODELS = ('', 'plumb_bob', 'rational_polynomial')
# Table points of the equidistant lens's angle, 0 to 180 degrees off the axis.
_FISHEYE_TABLE = 4097
# Columns are the optical frame's x, y, z axes written in the camera body frame.
_BODY_FROM_OPTICAL = np.array([[0.0, 0.0, 1.0],
                               [-1.0, 0.0, 0.0],
                               [0.0, -1.0, 0.0]])


def rotation_rpy(roll, pitch, yaw):
    """Return Rz(yaw) @ Ry(pitch) @ Rx(roll) as a 3x3 array (fixed-axis roll, pitch, yaw)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    return rz @ ry @ rx


@dataclass(frozen=True)
class CameraIntrinsics:
    """
    A camera with optional lens distortion, as in sensor_msgs/CameraInfo.

    ``distortion_model`` ``''`` (also given as ``plumb_bob`` or ``rational_polynomial``,
    stored as ``''``): a pinhole, ``distortion`` (k1, k2, p1, p2[, k3[, k4, k5, k6[, s1..s4[,
    tx, ty]]]]) like CameraInfo.D, OpenCV's standard model. ``equidistant``: a fisheye whose
    image radius (normalized) is ``theta_d = theta (1 + k1 theta^2 + k2 theta^4 + k3 theta^6 +
    k4 theta^8)`` for a ray ``theta`` radians off the axis, ``distortion`` (k1, k2, k3, k4)
    (or empty: all 0), as camera_calibration's fisheye model and ``cv2.fisheye``.
    """

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: tuple = field(default=())
    distortion_model: str = ''

    def __post_init__(self):
        model = self.distortion_model or ''
        if model not in STANDARD_MODELS + (EQUIDISTANT,):
            raise ValueError(f'unsupported distortion model {model!r} (supported: plumb_bob, '
                             f'rational_polynomial, {EQUIDISTANT})')
        if model == EQUIDISTANT and len(self.distortion) not in (0, 4):
            raise ValueError('the equidistant model takes D = (k1, k2, k3, k4), got '
                             f'{len(self.distortion)} coefficients')
        object.__setattr__(self, 'distortion_model', '' if model in STANDARD_MODELS else model)

    @classmethod
    def from_fov(cls, width, height, hfov_rad, distortion=(), distortion_model=''):
        """
        Make square-pixel intrinsics from a horizontal field of view, centred.

        For an ``equidistant`` lens the focal length is that of its undistorted (D = 0)
        angles: the image's half width over half the field of view.
        """
        if distortion_model == EQUIDISTANT:
            f = (width / 2.0) / (hfov_rad / 2.0)
        else:
            f = (width / 2.0) / math.tan(hfov_rad / 2.0)
        return cls(width, height, f, f, (width - 1) / 2.0, (height - 1) / 2.0, tuple(distortion),
                   distortion_model)

    @classmethod
    def from_k(cls, width, height, k, distortion=(), distortion_model=''):
        """Make intrinsics from a row-major 3x3 K (9 numbers, as CameraInfo.k)."""
        k = np.asarray(k, dtype=np.float64).reshape(-1)
        if k.size != 9:
            raise ValueError(f'K must have 9 elements, got {k.size}')
        return cls(int(width), int(height), float(k[0]), float(k[4]), float(k[2]), float(k[5]),
                   tuple(float(d) for d in distortion), distortion_model)

    @property
    def k(self):
        """Return the 3x3 camera matrix."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def has_distortion(self):
        """Whether a distortion coefficient is not 0 (an equidistant lens bends rays anyway)."""
        return any(abs(d) > 0.0 for d in self.distortion)

    @property
    def is_fisheye(self):
        """Whether the lens is the ``equidistant`` fisheye (with any D, all 0 included)."""
        return self.distortion_model == EQUIDISTANT

    def scaled(self, width, height):
        """Return the same camera at another resolution (e.g. binning), pixel centres kept."""
        sx, sy = width / self.width, height / self.height
        return CameraIntrinsics(int(width), int(height), self.fx * sx, self.fy * sy,
                                (self.cx + 0.5) * sx - 0.5, (self.cy + 0.5) * sy - 0.5,
                                self.distortion, self.distortion_model)

    def optical_rays(self, u=None, v=None):
        """
        Return the ray directions (x, y, z) of pixel centres in the optical frame.

        Pinhole lenses: (x/z, y/z, 1), as :meth:`normalized_rays`. Equidistant lenses: unit
        vectors, z <= 0 for rays 90 degrees or more off the axis, NaN for a pixel past the
        radius where the lens's angle stops growing (no ray). Shapes as
        :meth:`normalized_rays`.
        """
        if not self.is_fisheye:
            xn, yn = self.normalized_rays(u, v)
            return xn, yn, np.ones_like(xn)
        u, v = self._pixels(u, v)
        xd, yd = (u - self.cx) / self.fx, (v - self.cy) / self.fy
        theta_d = np.hypot(xd, yd)
        theta = _fisheye_angle(theta_d, self._fisheye_k())
        with np.errstate(invalid='ignore', divide='ignore'):
            s = np.where(theta_d > 1e-12, np.sin(theta) / np.where(theta_d > 1e-12, theta_d, 1.0),
                         1.0)
        z = np.where(np.isnan(theta), np.nan, np.cos(theta))
        return xd * s, yd * s, z

    def normalized_rays(self, u=None, v=None):
        """
        Return undistorted normalized image coordinates (x/z, y/z) of pixel centres.

        With no arguments, returns two float64 arrays of shape (height, width) for every pixel;
        otherwise for the given pixel coordinates (any matching shapes). An equidistant lens's
        pixels with no ray in front of the camera (90 degrees or more off the axis) are NaN:
        :meth:`optical_rays` has their rays.
        """
        if self.is_fisheye:
            x, y, z = self.optical_rays(u, v)
            with np.errstate(invalid='ignore', divide='ignore'):
                front = z > 0.0
                z = np.where(front, z, 1.0)
                return np.where(front, x / z, np.nan), np.where(front, y / z, np.nan)
        u, v = self._pixels(u, v)
        if not self.has_distortion:
            return (u - self.cx) / self.fx, (v - self.cy) / self.fy
        pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
        d = np.asarray(self.distortion, dtype=np.float64)
        criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-9)
        if hasattr(cv2, 'undistortPointsIter'):  # OpenCV 4
            und = cv2.undistortPointsIter(pts, self.k, d, None, None, criteria)
        else:  # OpenCV 5 moved the iteration criteria into undistortPoints
            und = cv2.undistortPoints(pts, self.k, d, criteria=criteria)
        und = und.reshape(-1, 2)
        return und[:, 0].reshape(u.shape), und[:, 1].reshape(u.shape)

    def _pixels(self, u, v):
        """Return float64 pixel coordinates: every pixel centre when ``u`` is None."""
        if u is None:
            v, u = np.mgrid[0:self.height, 0:self.width].astype(np.float64)
        return np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)

    def _fisheye_k(self):
        return tuple(float(d) for d in self.distortion) + (0.0,) * (4 - len(self.distortion))

    def project(self, points_optical):
        """
        Project Nx3 points in the optical frame to pixel coordinates (Nx2), with distortion.

        An equidistant lens projects points at any angle off the axis, behind the camera too
        (as far as its D makes sense there); a pinhole only those in front (z > 0).
        """
        if self.is_fisheye:
            pts = np.asarray(points_optical, dtype=np.float64).reshape(-1, 3)
            r = np.hypot(pts[:, 0], pts[:, 1])
            theta = np.arctan2(r, pts[:, 2])
            k1, k2, k3, k4 = self._fisheye_k()
            t2 = theta * theta
            theta_d = theta * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))))
            with np.errstate(invalid='ignore', divide='ignore'):
                s = np.where(r > 1e-12, theta_d / np.where(r > 1e-12, r, 1.0), 0.0)
            return np.stack([self.fx * s * pts[:, 0] + self.cx,
                             self.fy * s * pts[:, 1] + self.cy], axis=1)
        pts = np.asarray(points_optical, dtype=np.float64).reshape(-1, 1, 3)
        d = np.asarray(self.distortion if self.has_distortion else (), dtype=np.float64)
        uv, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), self.k, d)
        return uv.reshape(-1, 2)


@dataclass(frozen=True)
class CameraMount:
    """
    Pose of the camera in the base frame: metres and radians (REP 103).

    ``z`` is the height of the optical centre above the floor (the ``camera_height``
    parameter); positive ``pitch`` looks down.
    """

    x: float = 0.0
    y: float = 0.0
    z: float = 0.2
    roll: float = 0.0
    pitch: float = 0.3
    yaw: float = 0.0

    @property
    def position(self):
        return np.array([self.x, self.y, self.z])

    def rotation_base_from_optical(self):
        """3x3 rotation taking optical-frame vectors to the base frame."""
        return rotation_rpy(self.roll, self.pitch, self.yaw) @ _BODY_FROM_OPTICAL

    def transform_base_from_optical(self):
        """4x4 homogeneous transform from the optical frame to the base frame."""
        t = np.eye(4)
        t[:3, :3] = self.rotation_base_from_optical()
        t[:3, 3] = self.position
        return t


def _fisheye_angle(theta_d, k):
    """
    Return the angle off the axis (radians) of equidistant image radii ``theta_d``.

    Inverts ``theta_d = theta (1 + k1 theta^2 + ... + k4 theta^8)`` on [0, pi] up to where
    it stops growing (a lens with a fold): a table for the start, then Newton steps. NaN for
    radii past the table's end.
    """
    k1, k2, k3, k4 = k
    t = np.linspace(0.0, math.pi, _FISHEYE_TABLE)
    t2 = t * t
    slope = 1.0 + t2 * (3.0 * k1 + t2 * (5.0 * k2 + t2 * (7.0 * k3 + t2 * 9.0 * k4)))
    fold = np.flatnonzero(slope <= 0.0)
    end = int(fold[0]) if fold.size else t.size
    t = t[:end]
    t2 = t2[:end]
    table = t * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))))
    theta = np.interp(theta_d, table, t)
    for _ in range(3):
        q = theta * theta
        f = theta * (1.0 + q * (k1 + q * (k2 + q * (k3 + q * k4)))) - theta_d
        df = 1.0 + q * (3.0 * k1 + q * (5.0 * k2 + q * (7.0 * k3 + q * 9.0 * k4)))
        theta = np.clip(theta - f / np.maximum(df, 1e-12), 0.0, t[-1])
    return np.where(theta_d <= table[-1], theta, np.nan)


def pixel_rays_in_base(intrinsics, mount, u=None, v=None):
    """
    Unit-free ray directions in the base frame for pixels (default: all, shape (H, W, 3)).

    NaN for pixels that have no ray (:meth:`CameraIntrinsics.optical_rays`).
    """
    rays_opt = np.stack(intrinsics.optical_rays(u, v), axis=-1)
    return rays_opt @ mount.rotation_base_from_optical().T


class _Pose:
    """Rigid pose of the optical frame in the base frame, duck-typed like CameraMount."""

    def __init__(self, rotation, position):
        self._rotation = np.array(rotation, dtype=np.float64)
        self.position = np.array(position, dtype=np.float64)

    def rotation_base_from_optical(self):
        """3x3 rotation taking optical-frame vectors to the base frame."""
        return self._rotation.copy()

    def same_as(self, other):
        """Whether the two poses are exactly the same."""
        return np.array_equal(self._rotation, other._rotation) and \
            np.array_equal(self.position, other.position)


def as_pose(mount_or_transform):
    """
    Return a camera pose usable with :func:`pixel_rays_in_base`.

    Accepts a CameraMount (or anything with ``rotation_base_from_optical()`` and
    ``position``) or a 4x4 homogeneous base_from_optical transform: the pose of the optical
    frame in base_link, as TF's lookup_transform('base_link', optical_frame) gives it.
    """
    if hasattr(mount_or_transform, 'rotation_base_from_optical'):
        rot = np.asarray(mount_or_transform.rotation_base_from_optical(), dtype=np.float64)
        pos = np.asarray(mount_or_transform.position, dtype=np.float64).reshape(-1)
    else:
        t = np.asarray(mount_or_transform, dtype=np.float64)
        if t.shape != (4, 4):
            raise ValueError(f'expected a CameraMount or a 4x4 transform, got shape {t.shape}')
        if not np.allclose(t[3], (0.0, 0.0, 0.0, 1.0)):
            raise ValueError("the transform's last row must be (0, 0, 0, 1)")
        rot, pos = t[:3, :3], t[:3, 3]
    if rot.shape != (3, 3) or pos.shape != (3,) or not np.all(np.isfinite(rot)) or \
            not np.all(np.isfinite(pos)):
        raise ValueError('the camera pose must be a finite 3x3 rotation and 3-vector')
    if not np.allclose(rot.T @ rot, np.eye(3), atol=1e-6) or np.linalg.det(rot) < 0:
        raise ValueError("the camera pose's rotation is not a proper rotation matrix")
    if pos[2] <= 0.0:
        raise ValueError(f'the camera must be above the floor (z > 0), got z = {pos[2]}')
    return _Pose(rot, pos)


def quaternion_matrix(x, y, z, w):
    """Return the 3x3 rotation matrix of a unit quaternion (x, y, z, w), as in ROS messages."""
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0.0 or not math.isfinite(n):
        raise ValueError(f'invalid quaternion ({x}, {y}, {z}, {w})')
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def quaternion_yaw(q):
    """Return the yaw (rad, about z) of a quaternion message (any object with x, y, z, w)."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def transform_matrix(translation, quaternion):
    """Return the 4x4 transform of a translation (x, y, z) and quaternion (x, y, z, w)."""
    t = np.eye(4)
    t[:3, :3] = quaternion_matrix(*quaternion)
    t[:3, 3] = translation
    return t
