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
Property tests (hypothesis) of the image decoders, in-process.

Every decoder (``image_to_rgb``, ``image_to_array``, ``compressed_to_rgb``, ``msg_to_rgb``)
gets random raw messages (valid and invalid encodings, sizes including 0, steps,
``is_bigendian``, truncated and oversized data), duck-typed messages with wrong field types,
and random compressed messages (random formats; real JPEG/PNG/other codecs, truncated, with
flipped bytes or garbage appended; forged headers with random sizes; random bytes). The
property: a correct-shaped uint8 array, or :class:`ImageCodecError`; never another exception.
For raw messages the result is also checked against an independent oracle: decoding
succeeds exactly when the message is valid, with pixels equal to a numpy reference. Round
trips check that valid messages decode to what was encoded.

The profile is fixed (``derandomize=True``, no example database, no deadline) so a CI run is
reproducible; ``FREESPACE_FUZZ_EXAMPLES=<n>`` scales the number of examples for a long local
run.
"""

import importlib
import os
import struct
import subprocess
import sys
import types
import zlib

import cv2
from freespace_seg.nodes.msgs import array_to_compressed, array_to_image
from freespace_seg.perception.image_codec import (compressed_to_rgb, image_to_array, image_to_rgb,
                                                  ImageCodecError, msg_to_rgb,
                                                  SUPPORTED_ENCODINGS)
import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage, Image
from support import REPO

hypothesis = pytest.importorskip('hypothesis', reason='the property tests need hypothesis: '
                                 'pip install hypothesis')
given, HealthCheck, settings = hypothesis.given, hypothesis.HealthCheck, hypothesis.settings
st = importlib.import_module('hypothesis.strategies')

# encoding -> (channels, bytes per channel): the spec, written out independently of the codec.
LAYOUT = {'rgb8': (3, 1), 'bgr8': (3, 1), 'rgba8': (4, 1), 'bgra8': (4, 1), 'mono8': (1, 1),
          'yuv422': (2, 1), 'uyvy': (2, 1), 'yuv422_yuy2': (2, 1), 'yuyv': (2, 1),
          'mono16': (1, 2), 'rgb16': (3, 2), 'bgr16': (3, 2)}
YUV = ('yuv422', 'uyvy', 'yuv422_yuy2', 'yuyv')
ODD_ENCODINGS = ('', 'RGB8', 'rgb8 ', ' rgb8', 'bgr', '8UC3', '8UC1', '16UC1', '32FC1',
                 'bayer_rggb8', 'nv21', 'jpeg', 'rgb8; jpeg compressed bgr8', 'mono8\x00')
GOOD_FORMATS = ('jpeg', 'jpg', 'png', 'JPEG', ' png ', 'rgb8; jpeg compressed bgr8',
                'bgr8; png compressed bgr8', 'mono8; png compressed mono8',
                'bgr8; jpeg compressed bgr8')
BAD_FORMATS = ('tiff', 'bmp', 'webp', 'jpeg2000', 'h264', 'theora', ';',
               '16UC1; compressedDepth png', '32FC1; compressedDepth', 'rgb8; raw')
UINT32_MAX = 2 ** 32 - 1
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
NATIVE_BIG = sys.byteorder == 'big'


@pytest.fixture(scope='module', autouse=True)
def opencv_temp_dir(tmp_path_factory):
    """
    Keep OpenCV's temporary files out of /tmp.

    Its JPEG 2000 encoder goes through a temporary file and leaves it behind when the encode
    fails (tiny images do): 31 files in /tmp on every run of this module before this fixture.
    OpenCV reads OPENCV_TEMP_PATH on every call, so a folder of pytest's takes them.
    """
    folder = tmp_path_factory.mktemp('opencv_temp')
    before = os.environ.get('OPENCV_TEMP_PATH')
    os.environ['OPENCV_TEMP_PATH'] = str(folder)
    yield folder
    if before is None:
        os.environ.pop('OPENCV_TEMP_PATH', None)
    else:
        os.environ['OPENCV_TEMP_PATH'] = before


settings.register_profile(
    'freespace_fuzz', derandomize=True, database=None, deadline=None, print_blob=True,
    max_examples=int(os.environ.get('FREESPACE_FUZZ_EXAMPLES', '250')),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings.get_profile('freespace_fuzz')


def random_bytes(seed, length):
    """Return ``length`` pseudo-random bytes (fast for large lengths, reproducible)."""
    return np.random.default_rng(seed).integers(0, 256, length, dtype=np.uint8).tobytes()


def expect_rgb(result, height=None, width=None):
    """Assert that ``result`` is an (H, W, 3) uint8 array (of the given size if known)."""
    assert isinstance(result, np.ndarray), type(result)
    assert result.dtype == np.uint8 and result.ndim == 3 and result.shape[2] == 3, \
        (result.dtype, result.shape)
    assert result.shape[0] > 0 and result.shape[1] > 0
    if height is not None:
        assert result.shape[:2] == (height, width)


def decode_or_error(func, msg):
    """Return ``func(msg)``, or None when it raised ImageCodecError; anything else fails."""
    try:
        return func(msg)
    except ImageCodecError as e:
        assert str(e), 'an ImageCodecError must say why'
        return None


# -- raw images ------------------------------------------------------------------------------

def valid_raw(encoding, width, height, step, length):
    """Return True when a raw message with these fields must decode (the documented rules)."""
    if encoding not in LAYOUT or width <= 0 or height <= 0:
        return False
    channels, depth = LAYOUT[encoding]
    if encoding in YUV and width % 2:
        return False
    if step < width * channels * depth or (depth == 2 and step % 2):
        return False
    return length >= height * step


def reference_native(data, encoding, width, height, step, bigendian):
    """Decode a valid raw message with plain numpy: the native layout image_to_array gives."""
    channels, depth = LAYOUT[encoding]
    rows = np.frombuffer(data, np.uint8)[:height * step].reshape(height, step)
    rows = rows[:, :width * channels * depth]
    if depth == 2:
        rows = rows.copy().view('>u2' if bigendian else '<u2').astype(np.uint16)
    native = rows.reshape(height, width, channels)
    return native[:, :, 0] if channels == 1 else native


def reference_rgb(native, encoding):
    """RGB from a native array with numpy only; None for YUV (left to the shape check)."""
    if encoding in YUV:
        return None
    if native.dtype == np.uint16:
        native = (native >> 8).astype(np.uint8)
    if native.ndim == 2:
        return np.repeat(native[:, :, None], 3, axis=2)
    if encoding.startswith('rgb'):
        return native[:, :, :3]
    return native[:, :, 2::-1]


@st.composite
def raw_images(draw):
    """Draw a real sensor_msgs/Image with random, mostly small, often invalid fields."""
    if draw(st.booleans()):
        # Valid geometry (with padding and trailing bytes): the decoders must succeed.
        encoding = draw(st.sampled_from(SUPPORTED_ENCODINGS))
        channels, depth = LAYOUT[encoding]
        width = draw(st.integers(1, 40)) * (2 if encoding in YUV else 1)
        height = draw(st.integers(1, 40))
        step = width * channels * depth + draw(st.integers(0, 8)) * depth
        length = height * step + draw(st.sampled_from([0, 0, 1, 2, 3, 100]))
    else:
        encoding = draw(st.one_of(st.sampled_from(SUPPORTED_ENCODINGS),
                                  st.sampled_from(ODD_ENCODINGS), st.text(max_size=8)))
        size = st.one_of(st.integers(0, 24), st.integers(25, 300),
                         st.sampled_from([2 ** 16, 2 ** 31 - 1, UINT32_MAX]))
        width, height = draw(size), draw(size)
        channels, depth = LAYOUT.get(encoding, (draw(st.integers(1, 4)),
                                                draw(st.integers(1, 2))))
        row = width * channels * depth
        step = draw(st.one_of(
            st.just(row), st.just(row + draw(st.integers(1, 9))), st.just(max(row - 1, 0)),
            st.integers(0, UINT32_MAX), st.just(row * 2 + 1)))
        step = min(step, UINT32_MAX)
        needed = height * step
        lengths = [st.integers(0, 64)]
        if needed <= 1 << 18:
            lengths += [st.just(needed), st.integers(max(needed - 64, 0), needed),
                        st.integers(needed, needed + 4096)]
        length = draw(st.one_of(*lengths))
    data = random_bytes(draw(st.integers(0, 2 ** 32)), length)
    return Image(height=height, width=width, encoding=encoding, step=step, data=data,
                 is_bigendian=draw(st.integers(0, 255)))


@FUZZ
@given(raw_images())
def test_raw_decoders_succeed_exactly_on_valid_messages(msg):
    data = bytes(msg.data)
    valid = valid_raw(msg.encoding, msg.width, msg.height, msg.step, len(data))
    for func in (image_to_rgb, msg_to_rgb):
        rgb = decode_or_error(func, msg)
        assert (rgb is not None) == valid, \
            (func.__name__, msg.encoding, msg.width, msg.height, msg.step, len(data))
        if rgb is not None:
            expect_rgb(rgb, msg.height, msg.width)
    native = decode_or_error(image_to_array, msg)
    assert (native is not None) == valid
    if native is None:
        return
    channels, depth = LAYOUT[msg.encoding]
    expected = reference_native(data, msg.encoding, msg.width, msg.height, msg.step,
                                bool(msg.is_bigendian))
    assert native.dtype == (np.uint8 if depth == 1 else np.uint16)
    np.testing.assert_array_equal(native, expected)
    truth = reference_rgb(expected, msg.encoding)
    if truth is not None:
        np.testing.assert_array_equal(image_to_rgb(msg), truth)


WEIRD_NUMBERS = (-1, -2 ** 40, 2 ** 70, 1.5, 4.0, float('nan'), float('inf'), None, '4', b'4',
                 True, np.int64(4), np.uint8(2), np.float32(2.0), [4], 3 + 0j)
WEIRD_DATA_KINDS = ('none', 'str', 'list', 'list_out_of_range', 'nested', 'ragged', 'float_array',
                    'uint8_array', 'bytearray', 'memoryview', 'int_array_2d', 'dict', 'float',
                    'object', 'mixed_list', 'huge_int_list', 'bool_array')


def weird_data(kind, length, seed):
    """Return a ``data`` value of a wrong (or unusual but acceptable) type."""
    raw = random_bytes(seed, length)
    return {
        'none': None, 'str': raw.decode('latin-1'), 'list': list(raw),
        'list_out_of_range': list(raw) + [256], 'nested': [list(raw)],
        'ragged': [[1, 2], [3]], 'float_array': np.frombuffer(raw, np.uint8).astype(np.float32),
        'uint8_array': np.frombuffer(raw, np.uint8).reshape(-1, 1),
        'bytearray': bytearray(raw), 'memoryview': memoryview(raw), 'int_array_2d':
        np.frombuffer(raw, np.uint8).astype(np.int64).reshape(1, -1), 'dict': {1: 2},
        'float': 3.5, 'object': object(), 'mixed_list': [1, 'a', None],
        'huge_int_list': [2 ** 70] * 3, 'bool_array': np.ones(length, bool),
    }[kind]


@st.composite
def duck_raw_images(draw):
    """Draw a duck-typed raw image: a namespace with odd field types, or missing fields."""
    encoding = draw(st.sampled_from(SUPPORTED_ENCODINGS + ('', None, 3, b'rgb8')))
    small = st.integers(0, 12)
    fields = {
        'encoding': encoding,
        'width': draw(st.one_of(small, st.sampled_from(WEIRD_NUMBERS))),
        'height': draw(st.one_of(small, st.sampled_from(WEIRD_NUMBERS))),
        'is_bigendian': draw(st.sampled_from((0, 1, None, 'yes', 2.5))),
    }
    channels, depth = LAYOUT.get(encoding, (3, 1)) if isinstance(encoding, str) else (3, 1)
    try:
        row = int(fields['width']) * channels * depth
    except (TypeError, ValueError, OverflowError):
        row = 0
    fields['step'] = draw(st.one_of(st.just(row), st.sampled_from(WEIRD_NUMBERS)))
    length = draw(st.integers(0, 600))
    fields['data'] = weird_data(draw(st.sampled_from(WEIRD_DATA_KINDS)), length,
                                draw(st.integers(0, 2 ** 32)))
    for name in draw(st.sets(st.sampled_from(sorted(fields)), max_size=1)):
        del fields[name]
    return types.SimpleNamespace(**fields)


@FUZZ
@given(duck_raw_images())
def test_duck_typed_raw_messages_give_rgb_or_codec_error(msg):
    for func in (image_to_rgb, msg_to_rgb):
        rgb = decode_or_error(func, msg)
        if rgb is not None:
            expect_rgb(rgb, int(msg.height), int(msg.width))
    native = decode_or_error(image_to_array, msg)
    if native is not None:
        assert native.shape[:2] == (int(msg.height), int(msg.width))
        assert native.dtype in (np.uint8, np.uint16)


# -- compressed images -----------------------------------------------------------------------

def _chunk(kind, body):
    return struct.pack('>I', len(body)) + kind + body + \
        struct.pack('>I', zlib.crc32(kind + body) & 0xFFFFFFFF)


def forged_png(width, height, bit_depth, color_type, garbage):
    """Return a PNG signature + a well-formed IHDR with any size + IDAT of garbage."""
    ihdr = struct.pack('>IIBBBBB', width, height, bit_depth, color_type, 0, 0, 0)
    return PNG_MAGIC + _chunk(b'IHDR', ihdr) + _chunk(b'IDAT', garbage) + \
        _chunk(b'IEND', b'')


def forged_jpeg(width, height, components, garbage):
    """Return SOI + a baseline SOF0 segment with any size + garbage (no tables)."""
    sof = struct.pack('>BHHB', 8, height, width, components)
    for i in range(components):
        sof += bytes([i + 1, 0x11, 0])
    return b'\xff\xd8' + b'\xff\xc0' + struct.pack('>H', len(sof) + 2) + sof + \
        b'\xff\xda' + garbage + b'\xff\xd9'


def encoded(ext, img, quality):
    """Encode a small array with OpenCV; None when this build lacks the codec."""
    params = [cv2.IMWRITE_JPEG_QUALITY, quality] if ext == '.jpg' else []
    try:
        ok, buf = cv2.imencode(ext, img, params)
    except cv2.error:
        return None
    return buf.tobytes() if ok else None


@st.composite
def small_arrays(draw, max_side=32):
    """Draw a small uint8 (or uint16) image with 1, 3 or 4 channels."""
    height, width = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    channels = draw(st.sampled_from([1, 3, 4]))
    dtype = draw(st.sampled_from([np.uint8, np.uint8, np.uint16]))
    shape = (height, width) if channels == 1 else (height, width, channels)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32)))
    return rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype)


def png_length_fields(data):
    """
    Return the byte offsets of the chunk length fields of a PNG (empty for other data).

    Damage spares them: a corrupt IDAT length is a known problem with its own test
    (:func:`test_a_corrupt_png_chunk_length_costs_no_memory`), and each hit would cost seconds
    and gigabytes here.
    """
    offsets, pos = set(), len(PNG_MAGIC)
    if not data.startswith(PNG_MAGIC):
        return offsets
    while pos + 8 <= len(data):
        offsets.update(range(pos, pos + 4))
        pos += 12 + struct.unpack('>I', data[pos:pos + 4])[0]
    return offsets


MUTATIONS = ('none', 'truncate', 'flip', 'append', 'tail_garbage', 'head_only')


def mutate(data, kind, seed):
    """Damage encoded bytes in one of a few ways (or not)."""
    rng = np.random.default_rng(seed)
    if kind == 'none' or not data:
        return data
    if kind == 'truncate':
        return data[:int(rng.integers(0, len(data)))]
    if kind == 'flip':
        buf = bytearray(data)
        spared = png_length_fields(data)
        places = [i for i in range(len(buf)) if i not in spared]
        for i in rng.choice(places, int(rng.integers(1, 9))):
            buf[i] = int(rng.integers(0, 256))
        return bytes(buf)
    if kind == 'append':
        return data + random_bytes(seed, int(rng.integers(1, 200)))
    if kind == 'tail_garbage':
        cut = int(rng.integers(min(len(data), 20), len(data) + 1))
        return data[:cut] + random_bytes(seed, len(data) - cut)
    return data[:int(rng.integers(2, 12))]  # head_only: a signature and little more


@st.composite
def compressed_images(draw):
    """Draw a CompressedImage: random format, and real, damaged, forged or random data."""
    fmt = draw(st.one_of(st.sampled_from(GOOD_FORMATS + BAD_FORMATS + ('',)),
                         st.text(max_size=24)))
    kind = draw(st.sampled_from(('jpeg', 'png', 'other_codec', 'forged_png', 'forged_jpeg',
                                 'random', 'magic_random', 'empty')))
    seed = draw(st.integers(0, 2 ** 32))
    pristine = None
    if kind in ('jpeg', 'png', 'other_codec'):
        img = draw(small_arrays())
        ext = {'jpeg': '.jpg', 'png': '.png'}.get(kind) or \
            draw(st.sampled_from(['.bmp', '.tiff', '.webp', '.ppm', '.pgm', '.jp2', '.hdr']))
        if ext in ('.jpg', '.bmp', '.webp', '.ppm', '.pgm', '.jp2', '.hdr'):
            img = (img >> 8).astype(np.uint8) if img.dtype == np.uint16 else img
        if ext in ('.jpg', '.ppm', '.pgm') and img.ndim == 3 and img.shape[2] == 4:
            img = img[:, :, :3]
        if ext == '.pgm' and img.ndim == 3:
            img = img[:, :, 0]
        if ext == '.hdr':
            img = img.astype(np.float32) / 255.0
            img = img if img.ndim == 3 else np.dstack([img] * 3)
            img = img[:, :, :3]
        data = encoded(ext, img, draw(st.integers(1, 100)))
        if data is None:
            data = b''
        mutation = draw(st.sampled_from(MUTATIONS + ('none',) * 3))
        if mutation == 'none' and data and kind != 'other_codec':
            pristine = img.shape[:2]
        data = mutate(data, mutation, seed)
    elif kind == 'forged_png':
        data = forged_png(draw(st.integers(0, 40000)), draw(st.integers(0, 40000)),
                          draw(st.sampled_from([1, 2, 4, 8, 16, 3, 0])),
                          draw(st.sampled_from([0, 2, 3, 4, 6, 1, 7])),
                          random_bytes(seed, draw(st.integers(0, 300))))
    elif kind == 'forged_jpeg':
        data = forged_jpeg(draw(st.integers(0, 40000)), draw(st.integers(0, 40000)),
                           draw(st.sampled_from([1, 3, 4, 0, 2])),
                           random_bytes(seed, draw(st.integers(0, 300))))
    elif kind == 'random':
        data = random_bytes(seed, draw(st.integers(1, 2000)))
    elif kind == 'magic_random':
        magic = draw(st.sampled_from([b'\xff\xd8\xff', b'\xff\xd8\xff\xe0\x00\x10JFIF\x00',
                                      b'\x89PNG\r\n\x1a\n', b'\x89PNG\r\n\x1a\n\x00\x00\x00\x0d',
                                      b'BM', b'II*\x00', b'RIFF']))
        data = magic + random_bytes(seed, draw(st.integers(0, 2000)))
    else:
        data = b''
    return CompressedImage(format=fmt, data=data), pristine


@FUZZ
@given(compressed_images())
def test_compressed_decoders_give_rgb_or_codec_error(case):
    msg, pristine = case
    results = [decode_or_error(func, msg) for func in (compressed_to_rgb, msg_to_rgb)]
    assert (results[0] is None) == (results[1] is None)
    if results[0] is not None:
        expect_rgb(results[0])
        np.testing.assert_array_equal(results[0], results[1])
    fmt = msg.format.strip().lower()
    if fmt in [f.strip().lower() for f in BAD_FORMATS]:
        assert results[0] is None, f'format {msg.format!r} must be refused'
    if pristine is not None and (fmt in [f.strip().lower() for f in GOOD_FORMATS] or not fmt):
        assert results[0] is not None, 'an intact jpeg/png with a good format must decode'
        assert results[0].shape[:2] == pristine


@st.composite
def duck_compressed(draw):
    """Draw a duck-typed compressed message: odd format and data types, missing fields."""
    img = np.random.default_rng(draw(st.integers(0, 2 ** 32))).integers(
        0, 256, (draw(st.integers(1, 16)), draw(st.integers(1, 16)), 3), dtype=np.uint8)
    png = np.frombuffer(encoded('.png', img, 0), np.uint8)
    fields = {
        'format': draw(st.sampled_from(('png', '', None, 3, b'png', ['png'], 'jpeg'))),
        'data': draw(st.sampled_from(('bytes', 'list', 'array', 'str', 'none', 'float_array',
                                      'int_list_out_of_range', 'empty_list'))),
    }
    fields['data'] = {'bytes': png.tobytes(), 'list': png.tolist(), 'array': png,
                      'str': 'abc', 'none': None, 'float_array': png.astype(float),
                      'int_list_out_of_range': png.tolist() + [999],
                      'empty_list': []}[fields['data']]
    for name in draw(st.sets(st.sampled_from(sorted(fields)), max_size=1)):
        del fields[name]
    return types.SimpleNamespace(**fields), img.shape


@FUZZ
@given(duck_compressed())
def test_duck_typed_compressed_messages_give_rgb_or_codec_error(case):
    msg, shape = case
    for func in (compressed_to_rgb, msg_to_rgb):
        rgb = decode_or_error(func, msg)
        if rgb is not None:
            expect_rgb(rgb, *shape[:2])


@FUZZ
@given(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.binary(max_size=5),
                 st.just(types.SimpleNamespace(data=b'x')), st.just(np.zeros((2, 2, 3)))))
def test_msg_to_rgb_refuses_what_is_not_an_image_message(thing):
    with pytest.raises(ImageCodecError):
        msg_to_rgb(thing)


# -- round trips -----------------------------------------------------------------------------

@st.composite
def native_arrays(draw):
    """Draw (encoding, array in its native layout, byte order) for a valid raw image."""
    encoding = draw(st.sampled_from(SUPPORTED_ENCODINGS))
    channels, depth = LAYOUT[encoding]
    height = draw(st.integers(1, 40))
    width = draw(st.integers(1, 40)) * (2 if encoding in YUV else 1)
    shape = (height, width) if channels == 1 else (height, width, channels)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32)))
    if depth == 2:
        order = draw(st.sampled_from(['<', '>', '=']))
        return encoding, rng.integers(0, 65536, shape, dtype=np.uint16).astype(order + 'u2')
    return encoding, rng.integers(0, 256, shape, dtype=np.uint8)


@FUZZ
@given(native_arrays())
def test_array_to_image_round_trips(case):
    encoding, native = case
    msg = array_to_image(native, encoding)
    back = image_to_array(msg)
    assert back.shape == native.shape
    np.testing.assert_array_equal(back, native)
    expect_rgb(image_to_rgb(msg), *native.shape[:2])
    truth = reference_rgb(native.astype(native.dtype.newbyteorder('=')), encoding)
    if truth is not None:
        np.testing.assert_array_equal(image_to_rgb(msg), truth)
        np.testing.assert_array_equal(msg_to_rgb(msg), truth)


@FUZZ
@given(native_arrays(), st.integers(0, 2 ** 32), st.integers(0, 12), st.integers(0, 100),
       st.booleans())
def test_padded_rows_and_trailing_bytes_round_trip(case, seed, pad, extra, bigendian):
    encoding, native = case
    channels, depth = LAYOUT[encoding]
    pad += pad % 2 if depth == 2 else 0
    if depth == 2:
        native = native.astype('>u2' if bigendian else '<u2')
    height, width = native.shape[:2]
    row = native.reshape(height, -1).view(np.uint8).reshape(height, -1)
    rows = np.frombuffer(random_bytes(seed, height * (row.shape[1] + pad)), np.uint8).reshape(
        height, -1).copy()
    rows[:, :row.shape[1]] = row
    data = rows.tobytes() + random_bytes(seed + 1, extra)
    msg = Image(height=height, width=width, encoding=encoding, step=row.shape[1] + pad,
                is_bigendian=int(bigendian and depth == 2), data=data)
    np.testing.assert_array_equal(image_to_array(msg), native)
    truth = reference_rgb(native.astype(np.uint16) if depth == 2 else native, encoding)
    rgb = image_to_rgb(msg)
    expect_rgb(rgb, height, width)
    if truth is not None:
        np.testing.assert_array_equal(rgb, truth)


@FUZZ
@given(st.integers(1, 48), st.integers(1, 48), st.integers(0, 2 ** 32), st.booleans())
def test_png_round_trip_is_exact(height, width, seed, grey):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (height, width) if grey else (height, width, 3), dtype=np.uint8)
    msg = array_to_compressed(img, 'png')
    rgb = compressed_to_rgb(msg)
    truth = np.repeat(img[:, :, None], 3, axis=2) if grey else img
    np.testing.assert_array_equal(rgb, truth)
    np.testing.assert_array_equal(msg_to_rgb(msg), truth)


@FUZZ
@given(st.integers(1, 64), st.integers(1, 64), st.tuples(*[st.integers(0, 255)] * 3),
       st.integers(75, 100))
def test_jpeg_round_trip_keeps_size_and_colour(height, width, colour, quality):
    img = np.empty((height, width, 3), np.uint8)
    img[:] = colour
    rgb = compressed_to_rgb(array_to_compressed(img, 'jpeg', quality=quality))
    expect_rgb(rgb, height, width)
    assert np.abs(rgb.astype(int) - img).max() <= 16, (colour, rgb.reshape(-1, 3)[0])


# -- known problems --------------------------------------------------------------------------

CHUNK_LENGTH_PROBE = """
import resource, struct
import cv2, numpy as np
from freespace_seg.perception.image_codec import compressed_to_rgb, ImageCodecError
from sensor_msgs.msg import CompressedImage
png = bytearray(cv2.imencode('.png', np.zeros((8, 8, 3), np.uint8))[1].tobytes())
at = png.index(b'IDAT') - 4
png[at:at + 4] = struct.pack('>I', 256 << 20)  # the IDAT chunk claims 256 MiB
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    compressed_to_rgb(CompressedImage(format='png', data=bytes(png)))
    print('decoded')
except ImageCodecError:
    print('refused')
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_a_corrupt_png_chunk_length_costs_no_memory():
    """
    Regression: OpenCV's PNG reader allocates what a corrupt IDAT length claims.

    An 86-byte PNG claiming a 256 MiB chunk must be refused before decoding, at no memory.
    """
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, '-c', CHUNK_LENGTH_PROBE], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    verdict, growth_mb = proc.stdout.split()
    assert verdict == 'refused'
    assert int(growth_mb) < 64, f'peak RSS grew by {growth_mb} MB for an 86-byte message'
