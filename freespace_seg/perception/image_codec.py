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
The pixel codec: sensor_msgs image fields to numpy arrays and back.

This is the only module of the package that knows image encodings. It sits on the hot path
(a 1280x720 camera at 30-60 Hz on a small CPU), so it avoids copies wherever it can:

* Reading: ``np.frombuffer(msg.data)`` wraps the message buffer without a copy, and
  ``as_strided`` honours ``step`` (row padding) without a copy either. An ``rgb8`` image is
  returned as a zero-copy, read-only view; other encodings are converted with one
  ``cv2.cvtColor`` call.
* Writing: ``msg.data = ndarray`` goes element by element through the generated setter
  (~100 ms per 1.5 MB), so the data is handed over as an ``array.array('B')`` built from the
  array's bytes (well under 1 ms), which is also the fast path when
  ``ROS_PYTHON_CHECK_FIELDS=1``. When a reused ``out`` message already holds a buffer of the
  right size the pixels are copied into it in place.

The conversion functions only read and write the message fields (``height``, ``width``,
``encoding``, ``is_bigendian``, ``step``, ``data``, ``format``, ``header``), so any object
with those attributes works (duck typing): nothing here imports rclpy or a message package.
The functions that create message objects (``array_to_image``, ``array_to_compressed``) are
in :mod:`freespace_seg.nodes.msgs`, on top of :func:`fill_image` and :func:`encode_compressed`.

Every problem with the input (bad fields, short data, corrupt compressed data, unsupported
encodings or formats, wrong array shapes or dtypes) raises :class:`ImageCodecError` with a
message that names the problem; ``cv2`` and numpy exceptions never leak out.

Conventions:

* ``len(data) > height * step`` is accepted and the trailing bytes are ignored (some drivers
  over-allocate); shorter data is an error.
* 16-bit encodings (``mono16``, ``rgb16``, ``bgr16``) are scaled to 8 bits for the ``*_to_rgb``
  functions by keeping the high byte (``value >> 8``), so 0 maps to 0 and 65535 to 255.
* ``yuv422`` and ``uyvy`` are UYVY byte order, ``yuv422_yuy2`` and ``yuyv`` are YUYV byte
  order; both are decoded with OpenCV's BT.601 (video range) conversion, as cv_bridge does.
"""

import array
import functools
import sys

import cv2
import numpy as np

__all__ = [
    'ImageCodecError',
    'SUPPORTED_ENCODINGS',
    'SUPPORTED_COMPRESSED_FORMATS',
    'image_to_rgb',
    'image_to_array',
    'compressed_to_rgb',
    'msg_to_rgb',
    'checked_compressed',
    'checked_raw',
    'DECODERS',
    'fill_image',
    'encode_compressed',
    'copy_header',
]


class ImageCodecError(ValueError):
    """A message or array that this module cannot convert, with the reason."""


# encoding -> (channels, bytes per channel). 2-channel entries are packed YUV 4:2:2.
_LAYOUT = {
    'rgb8': (3, 1),
    'bgr8': (3, 1),
    'rgba8': (4, 1),
    'bgra8': (4, 1),
    'mono8': (1, 1),
    'yuv422': (2, 1),
    'uyvy': (2, 1),
    'yuv422_yuy2': (2, 1),
    'yuyv': (2, 1),
    'mono16': (1, 2),
    'rgb16': (3, 2),
    'bgr16': (3, 2),
}

SUPPORTED_ENCODINGS = tuple(_LAYOUT)
"""Raw ``sensor_msgs/Image`` encodings understood by this module."""

SUPPORTED_COMPRESSED_FORMATS = ('jpeg', 'png')
"""Codecs understood in ``sensor_msgs/CompressedImage.format``."""

_YUV422 = frozenset(('yuv422', 'uyvy', 'yuv422_yuy2', 'yuyv'))

# 8-bit (H, W, C) in the encoding's own order -> RGB, via cv2.cvtColor; None: already RGB.
_TO_RGB_CODE = {
    'rgb8': None,
    'bgr8': cv2.COLOR_BGR2RGB,
    'rgba8': cv2.COLOR_RGBA2RGB,
    'bgra8': cv2.COLOR_BGRA2RGB,
    'mono8': cv2.COLOR_GRAY2RGB,
    'yuv422': cv2.COLOR_YUV2RGB_UYVY,
    'uyvy': cv2.COLOR_YUV2RGB_UYVY,
    'yuv422_yuy2': cv2.COLOR_YUV2RGB_YUYV,
    'yuyv': cv2.COLOR_YUV2RGB_YUYV,
    'mono16': cv2.COLOR_GRAY2RGB,
    'rgb16': None,
    'bgr16': cv2.COLOR_BGR2RGB,
}

_NATIVE_BIG = sys.byteorder == 'big'

# cv2 >= 4.11 can decode straight to RGB, saving one cvtColor pass.
_IMREAD_RGB = getattr(cv2, 'IMREAD_COLOR_RGB', None)

_JPEG_MAGIC = b'\xff\xd8\xff'
_PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def _supported_list():
    return ', '.join(SUPPORTED_ENCODINGS)


def _check_encoding(encoding, where):
    if not isinstance(encoding, str) or encoding not in _LAYOUT:
        raise ImageCodecError(
            f'{where}: unsupported encoding {encoding!r} (supported: {_supported_list()})')
    return encoding


def _as_uint(value, name, where):
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ImageCodecError(f'{where}: {name} {value!r} is not an integer') from None
    if number != value:
        raise ImageCodecError(f'{where}: {name} {value!r} is not an integer')
    return number


def _byte_view(data, where):
    """Return ``data`` as a flat uint8 array, without a copy when it supports the buffer API."""
    if data is None:
        raise ImageCodecError(f'{where}: data is missing (None)')
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise ImageCodecError(f'{where}: data is an ndarray of {data.dtype}, expected uint8')
        return data.reshape(-1)
    if isinstance(data, (str, dict, set)):
        raise ImageCodecError(f'{where}: data is a {type(data).__name__}, expected bytes')
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except (TypeError, ValueError, BufferError):
        pass
    # A plain sequence of ints (duck-typed messages): one copy, with range checks.
    try:
        values = np.asarray(data)
    except (TypeError, ValueError) as exc:
        raise ImageCodecError(f'{where}: data of type {type(data).__name__} is not '
                              f'bytes-like ({exc})') from None
    if values.size == 0:
        return np.empty(0, np.uint8)
    if values.ndim != 1 or values.dtype.kind not in 'iu':
        raise ImageCodecError(f'{where}: data of type {type(data).__name__} is not a flat '
                              'sequence of byte values')
    if values.min() < 0 or values.max() > 255:
        raise ImageCodecError(f'{where}: data has values outside 0..255')
    return values.astype(np.uint8)


class _RawImage:
    """Validated geometry of a raw image message."""

    __slots__ = ('height', 'width', 'encoding', 'channels', 'depth', 'step', 'bigendian',
                 'buffer', 'where')

    def __init__(self, msg):
        try:
            encoding = msg.encoding
            height = msg.height
            width = msg.width
            step = msg.step
            bigendian = msg.is_bigendian
            data = msg.data
        except AttributeError as exc:
            raise ImageCodecError(
                f'not a sensor_msgs/Image: {type(msg).__name__} lacks a field ({exc})') from None
        self.where = 'Image'
        height = _as_uint(height, 'height', 'Image')
        width = _as_uint(width, 'width', 'Image')
        _check_encoding(encoding, f'Image {width}x{height}')
        self.where = f'Image {width}x{height} {encoding}'
        step = _as_uint(step, 'step', self.where)
        channels, depth = _LAYOUT[encoding]
        bpp = channels * depth
        if width <= 0 or height <= 0:
            raise ImageCodecError(f'{self.where}: width and height must be positive')
        if encoding in _YUV422 and width % 2:
            raise ImageCodecError(
                f'{self.where}: width must be even for packed YUV 4:2:2, got {width}')
        if step < width * bpp:
            raise ImageCodecError(
                f'{self.where}: step {step} < width*{bpp} = {width * bpp}')
        if depth == 2 and step % 2:
            raise ImageCodecError(
                f'{self.where}: step {step} is not a multiple of 2 for a 16-bit encoding')
        buffer = _byte_view(data, self.where)
        if buffer.size < height * step:
            raise ImageCodecError(
                f'{self.where}: data has {buffer.size} bytes, expected height*step = '
                f'{height * step}')
        self.height = height
        self.width = width
        self.encoding = encoding
        self.channels = channels
        self.depth = depth
        self.step = step
        self.bigendian = bool(bigendian)
        self.buffer = buffer

    def bytes_view(self, offset=0, channel_stride=None):
        """
        Return a read-only uint8 (H, W, C) view of the pixel bytes, honouring step.

        ``offset`` and ``channel_stride`` select one byte of each sample of a 16-bit image.
        """
        itemsize = channel_stride or self.depth
        pixel = self.channels * self.depth
        return np.lib.stride_tricks.as_strided(
            self.buffer[offset:],
            shape=(self.height, self.width, self.channels),
            strides=(self.step, pixel, itemsize),
            writeable=False)

    def native_view(self):
        """Return a read-only view in the native layout (uint16 in the message byte order)."""
        if self.depth == 1:
            view = self.bytes_view()
        else:
            dtype = np.dtype('>u2' if self.bigendian else '<u2')
            # An even step keeps every sample on the 2-byte grid.
            used = self.height * self.step
            words = self.buffer[:used].view(dtype)
            view = np.lib.stride_tricks.as_strided(
                words,
                shape=(self.height, self.width, self.channels),
                strides=(self.step, self.channels * 2, 2),
                writeable=False)
        if self.channels == 1:
            view = view[:, :, 0]
        return view

    def high_bytes(self):
        """For a 16-bit image: the most significant byte of each sample, as a uint8 view."""
        offset = 0 if self.bigendian else 1
        view = self.bytes_view(offset=offset, channel_stride=2)
        if self.channels == 1:
            view = view[:, :, 0]
        return view


def _convert_errors(where):
    """Turn unexpected cv2/numpy errors into ImageCodecError (decorator factory)."""
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except ImageCodecError:
                raise
            except (cv2.error, ValueError, TypeError, AttributeError, BufferError,
                    OverflowError, MemoryError, IndexError) as exc:
                raise ImageCodecError(
                    f'{where}: {type(exc).__name__}: {exc}'.strip()) from exc
        return wrapper
    return decorate


def copy_header(src, dst):
    """Copy stamp and frame_id from ``src`` into ``dst`` by value (no shared objects)."""
    try:
        dst.header.stamp.sec = int(src.stamp.sec)
        dst.header.stamp.nanosec = int(src.stamp.nanosec)
        dst.header.frame_id = str(src.frame_id)
    except (AttributeError, TypeError, ValueError, AssertionError) as exc:
        raise ImageCodecError(f'header: cannot copy stamp and frame_id ({exc})') from None


def _to_byte_array(contiguous):
    """Copy a C-contiguous ndarray into a new ``array.array('B')`` (one memcpy)."""
    data = array.array('B')
    data.frombytes(contiguous.reshape(-1).view(np.uint8))
    return data


def _store_data(msg, contiguous):
    """Store the bytes of a C-contiguous ndarray in ``msg.data`` as fast as possible."""
    nbytes = contiguous.nbytes
    current = getattr(msg, 'data', None)
    if isinstance(current, array.array) and current.typecode == 'B' and \
            len(current) == nbytes:
        try:
            target = np.frombuffer(current, dtype=np.uint8)
        except (BufferError, ValueError, TypeError):
            target = None
        if target is not None and target.flags.writeable:
            np.copyto(target, contiguous.reshape(-1).view(np.uint8))
            return
    msg.data = _to_byte_array(contiguous)


# --------------------------------------------------------------------------------------------
# Raw images
# --------------------------------------------------------------------------------------------

@_convert_errors('Image')
def image_to_array(msg):
    """
    Return the pixels of a ``sensor_msgs/Image`` in the encoding's native layout.

    The result is ``(H, W)`` for ``mono8``/``mono16``, ``(H, W, 2)`` for packed YUV 4:2:2 and
    ``(H, W, C)`` otherwise, in the encoding's own channel order. 8-bit encodings give uint8;
    16-bit encodings give native-endian uint16 with ``is_bigendian`` honoured (values are
    correct on any host).

    When no byte swap is needed the result is a zero-copy, read-only view of ``msg.data``
    (rows may be strided when ``step`` has padding); call ``.copy()`` to modify it. A 16-bit
    image whose byte order differs from the host's is returned as a byte-swapped copy.

    :raises ImageCodecError: unsupported encoding, bad geometry or too little data.
    """
    raw = _RawImage(msg)
    view = raw.native_view()
    if raw.depth == 2 and raw.bigendian != _NATIVE_BIG:
        view = view.astype(np.uint16)  # byte swap into a native-order copy
    return view


@_convert_errors('Image')
def image_to_rgb(msg):
    """
    Return a ``sensor_msgs/Image`` as an ``(H, W, 3)`` uint8 RGB array.

    ``rgb8`` is returned as a zero-copy, read-only view of ``msg.data`` (strided when rows are
    padded); call ``.copy()`` to modify it. Every other encoding is converted into a new,
    writeable, C-contiguous array with one ``cv2.cvtColor`` call (16-bit encodings keep their
    high byte, ``value >> 8``).

    :raises ImageCodecError: unsupported encoding, bad geometry or too little data.
    """
    raw = _RawImage(msg)
    code = _TO_RGB_CODE[raw.encoding]
    if raw.depth == 2:
        # The high byte of each sample, read straight from the buffer: no byte swap, no
        # 16-bit arithmetic; one compacting copy so that cv2 sees unit-stride pixels.
        src = np.ascontiguousarray(raw.high_bytes())
        if code is None:
            return src
    else:
        src = raw.native_view()
        if code is None:
            return src
    return cv2.cvtColor(src, code)


@_convert_errors('Image')
def fill_image(msg, array, encoding, header=None):
    """
    Fill the fields of an image message ``msg`` from an array in the encoding's native layout.

    :param array: ``(H, W)`` or ``(H, W, 1)`` for mono encodings, ``(H, W, 2)`` for packed
        YUV 4:2:2 (even ``W``), ``(H, W, C)`` otherwise; uint8 for 8-bit encodings and uint16
        (either byte order) for 16-bit ones. Strided arrays are compacted.
    :param encoding: one of :data:`SUPPORTED_ENCODINGS`.
    :param header: optional ``std_msgs/Header`` whose stamp and frame_id are copied by value.
    When ``msg.data`` is already an ``array.array`` of the right size the pixels are written
    into that buffer in place (so do not reuse a message that someone still reads).
    :return: the filled message, with ``step = W * bytes_per_pixel`` (no padding) and
        ``is_bigendian`` set from the array's byte order for 16-bit encodings.
    :raises ImageCodecError: unsupported encoding, or an array whose shape or dtype does not
        fit.
    """
    _check_encoding(encoding, 'array_to_image')
    channels, depth = _LAYOUT[encoding]
    if not isinstance(array, np.ndarray):
        raise ImageCodecError(
            f'array_to_image({encoding!r}): expected a numpy array, got {type(array).__name__}')
    where = f'array_to_image({encoding!r}) with array {array.shape} {array.dtype}'
    shape = array.shape
    if channels == 1 and len(shape) == 3 and shape[2] == 1:
        array = array[:, :, 0]
        shape = array.shape
    expected = '(H, W)' if channels == 1 else f'(H, W, {channels})'
    if channels == 1:
        good_shape = len(shape) == 2
    else:
        good_shape = len(shape) == 3 and shape[2] == channels
    if not good_shape:
        raise ImageCodecError(f'{where}: expected shape {expected}')
    height, width = shape[0], shape[1]
    if height == 0 or width == 0:
        raise ImageCodecError(f'{where}: width and height must be positive')
    if encoding in _YUV422 and width % 2:
        raise ImageCodecError(f'{where}: width must be even for packed YUV 4:2:2')
    wanted = 'uint8' if depth == 1 else 'uint16'
    if array.dtype.kind != 'u' or array.dtype.itemsize != depth:
        raise ImageCodecError(f'{where}: dtype must be {wanted}')
    if depth == 2:
        order = array.dtype.byteorder
        bigendian = order == '>' or (order == '=' and _NATIVE_BIG)
    else:
        bigendian = False
    contiguous = np.ascontiguousarray(array)

    if header is not None:
        copy_header(header, msg)
    msg.height = int(height)
    msg.width = int(width)
    msg.encoding = encoding
    msg.is_bigendian = int(bigendian)
    msg.step = int(width * channels * depth)
    _store_data(msg, contiguous)
    return msg


# --------------------------------------------------------------------------------------------
# Compressed images
# --------------------------------------------------------------------------------------------

def _parse_format(fmt):
    """Return 'jpeg' or 'png' for a CompressedImage.format string, or raise."""
    if not isinstance(fmt, str):
        raise ImageCodecError(f'CompressedImage: format {fmt!r} is not a string')
    text = fmt.strip().lower()
    if 'compresseddepth' in text:
        raise ImageCodecError(
            f'CompressedImage: unsupported format {fmt!r}: compressedDepth (depth images) is '
            'not a camera image')
    # image_transport writes '<encoding>; <codec> compressed <target encoding>'.
    codec_part = text.rsplit(';', 1)[-1].strip()
    words = codec_part.split()
    codec = words[0] if words else ''
    if codec in ('jpeg', 'jpg'):
        return 'jpeg'
    if codec == 'png':
        return 'png'
    if not text:
        return ''
    raise ImageCodecError(
        f'CompressedImage: unsupported format {fmt!r} (supported: jpeg, png, e.g. '
        "'jpeg', 'rgb8; jpeg compressed bgr8', 'bgr8; png compressed bgr8')")


@_convert_errors('CompressedImage')
def compressed_to_rgb(msg):
    """
    Decode a ``sensor_msgs/CompressedImage`` (jpeg or png) to ``(H, W, 3)`` uint8 RGB.

    ``msg.format`` may be a bare codec (``'jpeg'``, ``'jpg'``, ``'png'``) or an image_transport
    string such as ``'rgb8; jpeg compressed bgr8'`` or ``'mono8; png compressed mono8'``. The
    stored pixels always carry true colours (image_transport converts to bgr8 before
    encoding), so the result is RGB whatever the original encoding was; grey images are
    expanded to three channels, 16-bit PNGs are reduced to 8 bits. An empty format is
    accepted when the data starts with a JPEG or PNG signature.

    :raises ImageCodecError: empty or corrupt data, or an unsupported format.
    """
    codec, buffer = checked_compressed(msg)
    failure = f'CompressedImage: could not decode {buffer.size} bytes as {codec}'
    try:
        if _IMREAD_RGB is not None:
            rgb = cv2.imdecode(buffer, _IMREAD_RGB)
        else:
            bgr = cv2.imdecode(buffer, cv2.IMREAD_COLOR)
            rgb = None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    except cv2.error as exc:
        raise ImageCodecError(f'{failure} ({exc})'.strip()) from None
    if rgb is None or rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.size == 0:
        raise ImageCodecError(failure)
    return rgb


#: largest compressed image accepted, in pixels (a 1 MB PNG can claim gigapixels)
MAX_COMPRESSED_PIXELS = 64 * 1024 * 1024


def checked_raw(msg):
    """
    Check a ``sensor_msgs/Image`` before any decoder sees it; return its description.

    :raises ImageCodecError: bad geometry, step or data length.
    """
    return _RawImage(msg).where


def checked_compressed(msg):
    """
    Check a ``sensor_msgs/CompressedImage`` before any decoder sees it.

    Returns ``(codec, buffer)``: ``'jpeg'`` or ``'png'`` and a zero-copy uint8 view of the
    data. The data must be non-empty and carry a JPEG or PNG signature, PNG chunk lengths must
    fit, and the declared size must be at most :data:`MAX_COMPRESSED_PIXELS`.

    :raises ImageCodecError: anything that should not reach a decoder.
    """
    try:
        fmt = msg.format
        data = msg.data
    except AttributeError as exc:
        raise ImageCodecError(
            f'not a sensor_msgs/CompressedImage: {type(msg).__name__} lacks a field ({exc})'
        ) from None
    codec = _parse_format(fmt)
    buffer = _byte_view(data, 'CompressedImage')
    if buffer.size == 0:
        raise ImageCodecError(f'CompressedImage: data is empty (format {fmt!r})')
    head = buffer[:8].tobytes()
    if not codec:
        if head.startswith(_JPEG_MAGIC):
            codec = 'jpeg'
        elif head.startswith(_PNG_MAGIC):
            codec = 'png'
        else:
            raise ImageCodecError(
                'CompressedImage: empty format and data is neither jpeg nor png')
    _check_compressed_header(codec, buffer, head)
    return codec, buffer


def _check_compressed_header(codec, buffer, head):
    """
    Refuse data whose signature or header cannot be what the format says, before decoding.

    The decoders are only as safe as their inputs: OpenCV's PNG reader allocates whatever a
    corrupt chunk length claims (gigabytes, for one flipped byte), and ``imdecode`` accepts
    BMP, TIFF, WebP... whatever the format field says. So: the data must carry a JPEG or PNG
    signature, PNG chunk lengths must fit in the data, and the declared size must be at most
    :data:`MAX_COMPRESSED_PIXELS`.
    """
    # A jpeg labelled png (or the reverse) still decodes; anything else is refused.
    if head.startswith(_JPEG_MAGIC):
        size = _jpeg_size(buffer)
    elif head.startswith(_PNG_MAGIC):
        size = _png_size(buffer)
    else:
        raise ImageCodecError(f'CompressedImage: could not decode {buffer.size} bytes as '
                              f'{codec}: the data starts with neither a JPEG nor a PNG '
                              'signature')
    if size is not None and size[0] * size[1] > MAX_COMPRESSED_PIXELS:
        raise ImageCodecError(f'CompressedImage: {codec} declares {size[0]}x{size[1]} pixels, '
                              f'more than the limit of {MAX_COMPRESSED_PIXELS}')


def _png_size(buffer):
    """Walk the PNG chunks; return (width, height) from IHDR; raise on impossible lengths."""
    n = buffer.size
    pos = 8
    size = None
    while pos + 8 <= n:
        chunk = buffer[pos:pos + 8].tobytes()
        length = int.from_bytes(chunk[:4], 'big')
        kind = chunk[4:8]
        if length > n - pos - 12:
            raise ImageCodecError(f'CompressedImage: corrupt png: chunk {kind!r} claims '
                                  f'{length} bytes, only {max(0, n - pos - 12)} remain')
        if kind == b'IHDR' and length >= 8:
            ihdr = buffer[pos + 8:pos + 16].tobytes()
            size = (int.from_bytes(ihdr[:4], 'big'), int.from_bytes(ihdr[4:8], 'big'))
        if kind == b'IEND':
            break
        pos += 12 + length
    return size


def _jpeg_size(buffer):
    """Return (width, height) from the first JPEG start-of-frame marker, or None."""
    n = buffer.size
    pos = 2
    while pos + 4 <= n:
        if buffer[pos] != 0xFF:
            return None
        marker = int(buffer[pos + 1])
        if marker == 0xFF:
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        length = (int(buffer[pos + 2]) << 8) | int(buffer[pos + 3])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if pos + 9 > n:
                return None
            height = (int(buffer[pos + 5]) << 8) | int(buffer[pos + 6])
            width = (int(buffer[pos + 7]) << 8) | int(buffer[pos + 8])
            return width, height
        pos += 2 + length
    return None


@_convert_errors('msg_to_rgb')
def msg_to_rgb(msg):
    """
    Return ``(H, W, 3)`` uint8 RGB from a ``sensor_msgs/Image`` or ``CompressedImage``.

    Messages are dispatched by their fields (``format`` means compressed, ``encoding`` means
    raw), so rclpy messages and rosbags' typestore objects are read alike.

    :raises ImageCodecError: anything that is not a convertible image message.
    """
    if hasattr(msg, 'format') and hasattr(msg, 'data'):
        return compressed_to_rgb(msg)
    if hasattr(msg, 'encoding') and hasattr(msg, 'data'):
        return image_to_rgb(msg)
    raise ImageCodecError(
        f'msg_to_rgb: expected sensor_msgs/Image or CompressedImage, got {type(msg).__name__}')


#: values of the node parameter ``image_decoder`` (:func:`freespace_seg.nodes.msgs.make_decoder`)
DECODERS = ('auto', 'builtin', 'cv_bridge')


@_convert_errors('array_to_compressed')
def encode_compressed(array_rgb, fmt='jpeg', quality=90):
    """
    Encode an RGB (or grey) uint8 array as the ``format`` and ``data`` of a CompressedImage.

    :param array_rgb: ``(H, W, 3)`` uint8 RGB, or ``(H, W)`` / ``(H, W, 1)`` uint8 grey.
    :param fmt: ``'jpeg'`` (or ``'jpg'``) or ``'png'``.
    :param quality: JPEG quality 1..100 (ignored for png, which is lossless).
    :return: ``(format, data)``: an image_transport style format such as
        ``'rgb8; jpeg compressed bgr8'`` or ``'mono8; png compressed mono8'``, and the bytes as
        an ``array.array('B')``.
    :raises ImageCodecError: bad array shape or dtype, unsupported fmt or quality.
    """
    codec = {'jpeg': 'jpeg', 'jpg': 'jpeg', 'png': 'png'}.get(
        fmt.lower() if isinstance(fmt, str) else None)
    if codec is None:
        raise ImageCodecError(
            f'array_to_compressed: unsupported fmt {fmt!r} (supported: jpeg, png)')
    if not isinstance(array_rgb, np.ndarray):
        raise ImageCodecError(
            f'array_to_compressed: expected a numpy array, got {type(array_rgb).__name__}')
    where = f'array_to_compressed({codec}) with array {array_rgb.shape} {array_rgb.dtype}'
    if array_rgb.dtype != np.uint8:
        raise ImageCodecError(f'{where}: dtype must be uint8')
    shape = array_rgb.shape
    if len(shape) == 3 and shape[2] == 1:
        array_rgb = array_rgb[:, :, 0]
        shape = array_rgb.shape
    if len(shape) not in (2, 3) or (len(shape) == 3 and shape[2] != 3):
        raise ImageCodecError(f'{where}: expected shape (H, W, 3) or (H, W)')
    if shape[0] == 0 or shape[1] == 0:
        raise ImageCodecError(f'{where}: width and height must be positive')
    if len(shape) == 2:
        source, target, image = 'mono8', 'mono8', array_rgb
    else:
        source, target = 'rgb8', 'bgr8'
        image = cv2.cvtColor(array_rgb, cv2.COLOR_RGB2BGR)
    if codec == 'jpeg':
        if isinstance(quality, bool) or not isinstance(quality, (int, np.integer)) or \
                not 1 <= quality <= 100:
            raise ImageCodecError(
                f'array_to_compressed: jpeg quality must be an integer in 1..100, '
                f'got {quality!r}')
        ok, encoded = cv2.imencode('.jpg', image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    else:
        ok, encoded = cv2.imencode('.png', image, [cv2.IMWRITE_PNG_COMPRESSION, 3])
    if not ok:
        raise ImageCodecError(f'{where}: cv2.imencode failed')
    return f'{source}; {codec} compressed {target}', _to_byte_array(encoded)
