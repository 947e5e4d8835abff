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
CameraInfo parsing: the intrinsics of the image a mask comes from, ROS-free.

:func:`intrinsics_from_camera_info` applies binning, ROI and (for ``image_rect``) the
projection matrix P to K and D, as image_geometry does; :func:`intrinsics_from_camera_info_msg`
reads those fields from any object shaped like ``sensor_msgs/CameraInfo`` (an rclpy message or
a rosbags typestore one), so ``segmentation_node`` and ``bag`` share it.
"""

import math

from freespace_seg.ground.geometry import CameraIntrinsics, EQUIDISTANT, STANDARD_MODELS
import numpy as np


def intrinsics_from_camera_info(k, d, width, height, binning_x=0, binning_y=0, roi=None,
                                do_rectify=False, p=None, distortion_model=''):
    """
    Return the CameraIntrinsics of the image a camera driver actually delivers.

    The arguments are the sensor_msgs/CameraInfo fields: ``k`` (9 numbers, row-major) and
    ``d`` describe the full-resolution sensor image of ``width`` x ``height``; ``roi`` is
    ``(x_offset, y_offset, roi_width, roi_height)`` in full-resolution pixels (``None``,
    all zeros, or a zero width/height mean the full image); binning (0 or 1: none) is
    applied after the ROI crop, so the delivered image is
    ``(roi_width // binning_x) x (roi_height // binning_y)``.

    Binning keeps pixel-centre geometry (a binned pixel sees the centre of the block it
    averages): ``c' = (c - offset + 0.5) / binning - 0.5``, as
    :meth:`CameraIntrinsics.scaled`. image_geometry's PinholeCameraModel uses
    ``(c - offset) / binning``, which is 0.25 px off for 2x2 binning.

    ``do_rectify`` says the image used is the rectified one (image_proc's ``image_rect``),
    as CameraInfo's roi.do_rectify asks for a rectified ROI: the camera is then the left 3x3
    of ``p`` (12 numbers; ``k`` when ``p`` is not given or zero) without distortion, and a
    ROI becomes the largest upright rectangle of whole rectified pixels inside the rectified
    outline of the raw ROI (an approximation of image_geometry's rectified ROI, not checked
    against image_proc).
    Distortion coefficients live in normalized coordinates and do not change with ROI or
    binning. ``distortion_model``: CameraInfo's, ``plumb_bob`` or ``rational_polynomial``
    (or empty: D of 0, 4, 5, 8, 12 or 14 numbers) or ``equidistant`` (the fisheye, D of 4
    numbers or none).
    """
    k = np.asarray(k, dtype=np.float64).reshape(-1)
    if k.size != 9:
        raise ValueError(f'K must have 9 elements, got {k.size}')
    d = tuple(float(c) for c in np.asarray(d if d is not None else (), dtype=np.float64)
              .reshape(-1))
    model = distortion_model or ''
    if model not in STANDARD_MODELS + (EQUIDISTANT,):
        raise ValueError(f'unsupported distortion model {model!r}')
    if model == EQUIDISTANT:
        if len(d) not in (0, 4):
            raise ValueError(f'D of the equidistant model must have 4 coefficients, got {len(d)}')
    elif len(d) not in (0, 4, 5, 8, 12, 14):
        raise ValueError(f'D must have 0, 4, 5, 8, 12 or 14 coefficients, got {len(d)}')
    width, height = int(width), int(height)
    if width <= 0 or height <= 0:
        raise ValueError(f'image size must be positive, got {width}x{height}')
    bx = int(binning_x) if binning_x else 1
    by = int(binning_y) if binning_y else 1
    if bx < 1 or by < 1:
        raise ValueError(f'binning must be >= 0, got {binning_x}, {binning_y}')

    x_off, y_off, roi_w, roi_h = _checked_roi(roi, width, height)
    full = CameraIntrinsics.from_k(width, height, k, d, model)
    if do_rectify:
        cam = _rectified_camera(full, p)
        if (x_off, y_off, roi_w, roi_h) != (0, 0, width, height):
            x_off, y_off, roi_w, roi_h = _rectified_roi(full, cam, x_off, y_off, roi_w, roi_h)
    else:
        cam = full

    out_w, out_h = roi_w // bx, roi_h // by
    if out_w < 1 or out_h < 1:
        raise ValueError(f'ROI {roi_w}x{roi_h} with binning {bx}x{by} leaves no pixels')
    return CameraIntrinsics(out_w, out_h, cam.fx / bx, cam.fy / by,
                            (cam.cx - x_off + 0.5) / bx - 0.5,
                            (cam.cy - y_off + 0.5) / by - 0.5, cam.distortion,
                            cam.distortion_model)


def intrinsics_from_camera_info_msg(msg, rectified=False):
    """
    Call :func:`intrinsics_from_camera_info` with the fields of a CameraInfo message.

    ``rectified`` says whether the image the mask comes from is the rectified one
    (``image_rect``, passed on as ``do_rectify``). It is not taken from the message's
    ``roi.do_rectify``: image_proc publishes the same CameraInfo (with D) next to both the raw
    and the rectified image, so only the subscriber knows which one it uses. The plumb_bob,
    rational_polynomial and equidistant (fisheye) distortion models (or none) are supported;
    another raises ValueError.
    """
    model = getattr(msg, 'distortion_model', '') or ''
    if model not in STANDARD_MODELS + (EQUIDISTANT,):
        raise ValueError(f'unsupported distortion model {model!r}')
    roi = msg.roi
    return intrinsics_from_camera_info(
        msg.k, msg.d, msg.width, msg.height, msg.binning_x, msg.binning_y,
        (roi.x_offset, roi.y_offset, roi.width, roi.height), bool(rectified), msg.p, model)


def _checked_roi(roi, width, height):
    if roi is None:
        return 0, 0, width, height
    x_off, y_off, roi_w, roi_h = (int(v) for v in roi)
    if roi_w == 0 or roi_h == 0:
        if (x_off, y_off) != (0, 0):
            raise ValueError(f'ROI {tuple(roi)} has an offset but no size')
        return 0, 0, width, height
    if x_off < 0 or y_off < 0 or roi_w < 0 or roi_h < 0 or \
            x_off + roi_w > width or y_off + roi_h > height:
        raise ValueError(f'ROI {tuple(roi)} does not fit the {width}x{height} image')
    return x_off, y_off, roi_w, roi_h


def _rectified_camera(raw, p):
    if p is None:
        m = raw.k
    else:
        p = np.asarray(p, dtype=np.float64).reshape(-1)
        if p.size != 12:
            raise ValueError(f'P must have 12 elements, got {p.size}')
        m = p.reshape(3, 4)[:, :3]
        if not np.any(m):
            m = raw.k
    return CameraIntrinsics(raw.width, raw.height, float(m[0, 0]), float(m[1, 1]),
                            float(m[0, 2]), float(m[1, 2]))


def _rectified_roi(raw, rect, x_off, y_off, roi_w, roi_h):
    # Sample the outline of the raw ROI (pixel edges), map it into the rectified image and
    # keep the whole rectified pixels inside it.
    t = np.linspace(0.0, 1.0, 33)
    left, top = x_off - 0.5, y_off - 0.5
    right, bottom = x_off + roi_w - 0.5, y_off + roi_h - 0.5
    us = left + (right - left) * t
    vs = top + (bottom - top) * t
    edges = {
        'left': (np.full_like(vs, left), vs), 'right': (np.full_like(vs, right), vs),
        'top': (us, np.full_like(us, top)), 'bottom': (us, np.full_like(us, bottom)),
    }
    mapped = {}
    for name, (u, v) in edges.items():
        xn, yn = raw.normalized_rays(u, v)
        mapped[name] = (rect.fx * xn + rect.cx, rect.fy * yn + rect.cy)
    # A fisheye's outline can reach 90 degrees off the axis, which no rectified pixel sees
    # (NaN): the rest of the outline bounds the crop.
    if any(np.isnan(x).all() or np.isnan(y).all() for x, y in mapped.values()):
        raise ValueError('the rectified ROI is empty')
    x0 = max(0, math.ceil(np.nanmax(mapped['left'][0]) + 0.5))
    y0 = max(0, math.ceil(np.nanmax(mapped['top'][1]) + 0.5))
    x1 = min(raw.width, math.floor(np.nanmin(mapped['right'][0]) + 0.5))
    y1 = min(raw.height, math.floor(np.nanmin(mapped['bottom'][1]) + 0.5))
    if x1 <= x0 or y1 <= y0:
        raise ValueError('the rectified ROI is empty')
    return x0, y0, x1 - x0, y1 - y0
