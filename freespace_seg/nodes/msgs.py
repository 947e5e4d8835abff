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
The message conversions: every place the package makes or reads a ROS message by its layout.

Images (``Image``, ``CompressedImage``) are built here, and decoded by the node's choice of
decoder (:func:`make_decoder`: the built-in one, or cv_bridge), on top of the pixel codec
(:mod:`freespace_seg.perception.image_codec`, which reads any object with the fields and so
also serves ``bag`` without ROS); the ground outputs (``OccupancyGrid``, ``PointCloud2``), the
driver's view of a grid and the synthetic cameras' ``CameraInfo`` are here too. CameraInfo is
read by :func:`freespace_seg.ground.camera_info.intrinsics_from_camera_info_msg`, by its
fields, for the same reason.
"""

import array
import math

import cv2
from freespace_seg.ground.grid import GridSpec
from freespace_seg.perception.image_codec import (checked_compressed, checked_raw, copy_header,
                                                  DECODERS, encode_compressed, fill_image,
                                                  ImageCodecError, msg_to_rgb)
from nav_msgs.msg import OccupancyGrid
import numpy as np
from sensor_msgs.msg import (CameraInfo, CompressedImage, Image, LaserScan, PointCloud2,
                             PointField)


def array_to_image(array, encoding, header=None, out=None):
    """
    Build a ``sensor_msgs/Image`` from an array in the encoding's native layout.

    See :func:`~freespace_seg.perception.image_codec.fill_image` for the array, encoding and
    header rules. ``out``: optional message object to fill and return instead of a new
    ``Image``; when its ``data`` is already an ``array.array`` of the right size the pixels are
    written into that buffer in place (so do not reuse an ``out`` that someone still reads).

    :raises ImageCodecError: unsupported encoding, or an array whose shape or dtype does not
        fit.
    """
    return fill_image(Image() if out is None else out, array, encoding, header)


def array_to_compressed(array_rgb, fmt='jpeg', header=None, quality=90):
    """
    Encode an RGB (or grey) uint8 array as a ``sensor_msgs/CompressedImage``.

    See :func:`~freespace_seg.perception.image_codec.encode_compressed`; ``header``: optional
    ``std_msgs/Header`` whose stamp and frame_id are copied by value.

    :raises ImageCodecError: bad array shape or dtype, unsupported fmt or quality.
    """
    fmt, data = encode_compressed(array_rgb, fmt, quality)
    msg = CompressedImage()
    if header is not None:
        copy_header(header, msg)
    msg.format = fmt
    msg.data = data
    return msg


def grid_to_msg(grid, spec, header_stamp, frame_id, out=None):
    """
    Fill a nav_msgs/OccupancyGrid from an int8 (ny, nx) grid laid out by a GridSpec.

    ``info.origin`` is the pose of cell (0, 0)'s outer corner in ``frame_id`` with no
    rotation; ``data`` is row-major (index = col + row * width), 0 free, 100 occupied,
    -1 unknown.
    """
    msg = OccupancyGrid() if out is None else out
    msg.header.stamp = header_stamp
    msg.header.frame_id = frame_id
    msg.info.map_load_time = header_stamp
    msg.info.resolution = float(spec.resolution)
    msg.info.width = int(spec.nx)
    msg.info.height = int(spec.ny)
    msg.info.origin.position.x = float(spec.origin[0])
    msg.info.origin.position.y = float(spec.origin[1])
    msg.info.origin.position.z = 0.0
    msg.info.origin.orientation.w = 1.0
    msg.data = array.array('b', grid.astype('int8', copy=False).tobytes())
    return msg


_XYZ_FIELDS = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
               for i, n in enumerate('xyz')]


def points_to_cloud(points, header_stamp, frame_id):
    """Build an unorganized sensor_msgs/PointCloud2 (x, y, z float32) from (N, 3) points."""
    msg = PointCloud2()
    msg.header.stamp = header_stamp
    msg.header.frame_id = frame_id
    msg.height = 1
    msg.width = int(len(points))
    msg.fields = list(_XYZ_FIELDS)
    msg.is_bigendian = False
    msg.point_step = 12
    msg.row_step = 12 * msg.width
    msg.is_dense = True
    msg.data = array.array('B', points.astype('<f4', copy=False).tobytes())
    return msg


class _BuiltinFallback:
    """The built-in decoder, chosen by ``image_decoder: auto`` where cv_bridge is missing."""

    decoder_name = 'builtin'

    def __init__(self, reason):
        self.fallback_reason = reason

    def __call__(self, msg):
        return msg_to_rgb(msg)


class CvBridgeDecoder:
    """
    Decode image messages to RGB with ROS's ``cv_bridge``, behind the codec's checks.

    Every message first passes the same checks as the built-in decoder (geometry, step and
    data length of raw images; signature, chunk lengths and pixel limit of compressed ones),
    so that nothing malformed reaches cv_bridge, whose own checks are fewer; then
    ``imgmsg_to_cv2`` / ``compressed_imgmsg_to_cv2`` with ``desired_encoding='rgb8'``
    converts it. Its errors become :class:`ImageCodecError`. The built-in decoder stays the
    default: it returns ``rgb8`` images without a copy, and it is the one fuzzed in the
    tests; this one is for users who want the reference implementation.
    """

    name = decoder_name = 'cv_bridge'

    def __init__(self):
        """Import cv_bridge; :class:`ImageCodecError` with the reason when it is missing."""
        try:
            import cv_bridge
        except ImportError as exc:
            raise ImageCodecError(
                f'image_decoder cv_bridge: cv_bridge is not importable ({exc}); install '
                'ros-$ROS_DISTRO-cv-bridge, or use image_decoder builtin') from None
        self._bridge = cv_bridge.CvBridge()
        self._errors = (cv_bridge.CvBridgeError, cv2.error, TypeError, ValueError,
                        AttributeError)

    def __call__(self, msg):
        """Return ``(H, W, 3)`` uint8 RGB; raise :class:`ImageCodecError` on bad input."""
        compressed = hasattr(msg, 'format') and not hasattr(msg, 'encoding')
        if compressed:
            checked_compressed(msg)
            where = 'CompressedImage'
        else:
            where = checked_raw(msg)
        try:
            if compressed:
                rgb = self._bridge.compressed_imgmsg_to_cv2(msg, desired_encoding='rgb8')
            else:
                rgb = self._bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8')
        except self._errors as exc:
            raise ImageCodecError(f'{where}: cv_bridge: {exc}') from None
        rgb = np.asarray(rgb)
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ImageCodecError(f'{where}: cv_bridge returned {rgb.dtype} {rgb.shape}, '
                                  'not (H, W, 3) uint8')
        return rgb


def scan_to_msg(ranges, layout, header_stamp, frame_id):
    """
    Build a sensor_msgs/LaserScan from the ranges of a :class:`ground.scan.ScanLayout`.

    Angles as LaserScan: 0 = +x of ``frame_id``, counter-clockwise positive; no intensities,
    ``time_increment`` and ``scan_time`` 0 (every ray is from the same image).
    """
    msg = LaserScan()
    msg.header.stamp = header_stamp
    msg.header.frame_id = frame_id
    msg.angle_min = layout.angle_min
    msg.angle_max = layout.angle_max
    msg.angle_increment = layout.angle_increment
    msg.time_increment = 0.0
    msg.scan_time = 0.0
    msg.range_min = layout.range_min
    msg.range_max = layout.range_max
    msg.ranges = array.array('f', ranges.astype('float32', copy=False).tobytes())
    return msg


def frame_output_msg(name, out, header, base_frame, reuse, colored_encoding='rgb8'):
    """
    Return the message of output ``name`` of a :class:`~freespace_seg.ground.frame.FrameOutputs`.

    As ``segmentation_node`` publishes it: images with the input's ``header``, the ground
    outputs (and the grid image) in ``base_frame`` with its stamp. ``reuse`` (a dict kept by
    the caller) holds the Image messages and the BGR buffer used again from frame to frame:
    publish each message before the next frame. ``colored_encoding``: rgb8 or bgr8.
    """
    image = reuse.setdefault('msg_' + name, Image())
    if name in ('mask', 'confidence', 'free'):
        return array_to_image(getattr(out, name), 'mono8', header, out=image)
    if name == 'scan':
        return scan_to_msg(out.scan, out.scan_layout, header.stamp, base_frame)
    if name == 'grid':
        return grid_to_msg(out.grid, out.grid_spec, header.stamp, base_frame)
    if name == 'points':
        return points_to_cloud(out.points, header.stamp, base_frame)
    if name == 'grid_image':
        msg = array_to_image(out.grid_image, 'rgb8', header)
        msg.header.frame_id = base_frame
        return msg
    if name == 'colored' and colored_encoding == 'bgr8':
        bgr = reuse.get('colored_bgr')
        if bgr is None or bgr.shape != out.colored.shape:
            bgr = reuse['colored_bgr'] = np.empty(out.colored.shape, np.uint8)
        cv2.cvtColor(out.colored, cv2.COLOR_RGB2BGR, dst=bgr)
        return array_to_image(bgr, 'bgr8', header, out=image)
    return array_to_image(getattr(out, name), 'rgb8', header, out=image)


def make_decoder(name='builtin'):
    """
    Return a function ``msg -> (H, W, 3) uint8 RGB`` for the decoder ``name``.

    ``'builtin'`` is :func:`~freespace_seg.perception.image_codec.msg_to_rgb`; ``'cv_bridge'``
    is a :class:`CvBridgeDecoder`; ``'auto'`` is cv_bridge where it is importable, else the
    built-in one. The function's ``decoder_name`` attribute says which one it is (``'builtin'``
    or ``'cv_bridge'``) and, for ``'auto'`` without cv_bridge, ``fallback_reason`` says why.

    :raises ImageCodecError: an unknown name, or cv_bridge asked for but not importable.
    """
    if name == 'builtin':
        return msg_to_rgb
    if name == 'cv_bridge':
        return CvBridgeDecoder()
    if name == 'auto':
        try:
            return CvBridgeDecoder()
        except ImageCodecError as exc:
            return _BuiltinFallback(str(exc))
    raise ImageCodecError(f'unknown image decoder {name!r}; expected one of '
                          f'{", ".join(DECODERS)}')


def grid_from_msg(msg):
    """Return (int8 (height, width) array, its :class:`GridSpec`) of an OccupancyGrid."""
    info = msg.info
    w, h = int(info.width), int(info.height)
    if w <= 0 or h <= 0:
        raise ValueError(f'empty grid {w}x{h}')
    data = np.frombuffer(memoryview(msg.data).cast('B'), dtype=np.int8) \
        if not isinstance(msg.data, (list, tuple)) else np.asarray(msg.data, dtype=np.int8)
    if data.size != w * h:
        raise ValueError(f'grid data has {data.size} cells, {w}x{h} = {w * h} expected')
    if not math.isfinite(info.resolution) or info.resolution <= 0:
        raise ValueError(f'grid resolution {info.resolution} is not positive')
    q = info.origin.orientation
    if abs(q.x) > 1e-6 or abs(q.y) > 1e-6:
        raise ValueError('grid origin is tilted out of the floor plane')
    yaw = 2.0 * math.atan2(q.z, q.w) if (q.z or q.w) else 0.0
    layout = GridSpec.of_cells(info.resolution, w, h, (info.origin.position.x,
                                                       info.origin.position.y), yaw)
    return data.reshape(h, w), layout


def camera_info_from_intrinsics(intrinsics, header=None):
    """
    Build a sensor_msgs/CameraInfo from :class:`CameraIntrinsics`.

    plumb_bob (D of at least 5 numbers), or equidistant (D of 4) for a fisheye.
    """
    msg = CameraInfo()
    if header is not None:
        msg.header.stamp = header.stamp
        msg.header.frame_id = header.frame_id
    msg.width, msg.height = int(intrinsics.width), int(intrinsics.height)
    size = 4 if intrinsics.is_fisheye else max(5, len(intrinsics.distortion))
    msg.distortion_model = 'equidistant' if intrinsics.is_fisheye else 'plumb_bob'
    d = list(intrinsics.distortion) + [0.0] * (size - len(intrinsics.distortion))
    msg.d = [float(v) for v in d[:size]]
    msg.k = [float(v) for v in intrinsics.k.reshape(-1)]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [intrinsics.fx, 0.0, intrinsics.cx, 0.0, 0.0, intrinsics.fy, intrinsics.cy, 0.0,
             0.0, 0.0, 1.0, 0.0]
    return msg
