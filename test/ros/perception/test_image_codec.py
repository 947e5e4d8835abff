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

"""Tests for freespace_seg.perception.image_codec: raw and compressed image conversions."""

import array
import sys
import types

import cv2
from freespace_seg.nodes import msgs
from freespace_seg.perception import image_codec as ic
import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Header

ALL_ENCODINGS = ('rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8', 'yuv422', 'uyvy', 'yuv422_yuy2',
                 'yuyv', 'mono16', 'rgb16', 'bgr16')
YUV_ENCODINGS = ('yuv422', 'uyvy', 'yuv422_yuy2', 'yuyv')
UYVY_ORDER = ('yuv422', 'uyvy')
SIXTEEN_BIT = ('mono16', 'rgb16', 'bgr16')
CHANNELS = {'rgb8': 3, 'bgr8': 3, 'rgba8': 4, 'bgra8': 4, 'mono8': 1, 'mono16': 1,
            'rgb16': 3, 'bgr16': 3, 'yuv422': 2, 'uyvy': 2, 'yuv422_yuy2': 2, 'yuyv': 2}
NATIVE_BIG = sys.byteorder == 'big'


def _rng(seed=0):
    return np.random.default_rng(seed)


def _native_array(encoding, height=6, width=8, seed=0):
    """Random pixels in the encoding's native layout (full value range)."""
    channels = CHANNELS[encoding]
    shape = (height, width) if channels == 1 else (height, width, channels)
    if encoding in SIXTEEN_BIT:
        return _rng(seed).integers(0, 65536, shape, dtype=np.uint16)
    return _rng(seed).integers(0, 256, shape, dtype=np.uint8)


def _reference_rgb(encoding, native):
    """RGB expected from a native array, computed with numpy only (not for YUV)."""
    if encoding in SIXTEEN_BIT:
        native = (native >> 8).astype(np.uint8)
    if native.ndim == 2:
        return np.repeat(native[:, :, None], 3, axis=2)
    if encoding.startswith('rgb'):
        return native[:, :, :3]
    return native[:, :, 2::-1]  # bgr8, bgra8, bgr16


def _raw_msg(native, encoding, bigendian=None, pad=0, pad_byte=0xAB, extra=0):
    """Build an Image by hand (not with the codec): optional row padding and trailing bytes."""
    if native.dtype.itemsize == 2:
        if bigendian is None:
            bigendian = NATIVE_BIG
        native = native.astype('>u2' if bigendian else '<u2')
    height, width = native.shape[:2]
    row_bytes = native.reshape(height, -1).view(np.uint8).reshape(height, -1)
    step = row_bytes.shape[1] + pad
    rows = np.full((height, step), pad_byte, np.uint8)
    rows[:, :row_bytes.shape[1]] = row_bytes
    data = rows.tobytes() + bytes([pad_byte]) * extra
    return Image(height=height, width=width, encoding=encoding, step=step,
                 is_bigendian=int(bool(bigendian)), data=array.array('B', data))


def _bt601_yuv(rgb):
    """BT.601 video-range Y, U, V (uint8) from RGB, written out by hand."""
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = 16 + 0.256788 * r + 0.504129 * g + 0.097906 * b
    u = 128 - 0.148223 * r - 0.290993 * g + 0.439216 * b
    v = 128 + 0.439216 * r - 0.367788 * g - 0.071427 * b
    return [np.clip(np.rint(c), 0, 255).astype(np.uint8) for c in (y, u, v)]


def _pack_422(rgb, uyvy):
    """Pack RGB whose horizontal pixel pairs share a colour into UYVY or YUYV bytes."""
    y, u, v = _bt601_yuv(rgb)
    height, width = y.shape
    packed = np.empty((height, width, 2), np.uint8)
    luma, chroma = (1, 0) if uyvy else (0, 1)
    packed[:, :, luma] = y
    packed[:, 0::2, chroma] = u[:, 0::2]
    packed[:, 1::2, chroma] = v[:, 0::2]
    return packed


def _pair_rgb(height=4, width=8, seed=1):
    """Random in-gamut RGB, each horizontal pixel pair one colour (so 4:2:2 loses nothing)."""
    half = _rng(seed).integers(20, 236, (height, width // 2, 3), dtype=np.uint8)
    return np.repeat(half, 2, axis=1)


def _smooth_rgb(height=48, width=64):
    """Return a smooth colour image that JPEG reproduces closely."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    rgb = np.stack([40 + 160 * xx / width, 30 + 180 * yy / height,
                    200 - 150 * (xx + yy) / (width + height)], axis=2)
    return np.rint(rgb).astype(np.uint8)


def _stamped_header(sec=1234, nanosec=5678, frame_id='camera_optical'):
    header = Header()
    header.stamp.sec = sec
    header.stamp.nanosec = nanosec
    header.frame_id = frame_id
    return header


# ------------------------------------------------------------------------------------------
# Raw images
# ------------------------------------------------------------------------------------------

def test_supported_encodings_are_exactly_the_documented_ones():
    assert set(ic.SUPPORTED_ENCODINGS) == set(ALL_ENCODINGS)
    assert isinstance(ic.SUPPORTED_ENCODINGS, tuple)
    assert issubclass(ic.ImageCodecError, ValueError)


@pytest.mark.parametrize('encoding', ALL_ENCODINGS)
def test_round_trip_array_image_array(encoding):
    native = _native_array(encoding)
    msg = msgs.array_to_image(native, encoding)
    assert isinstance(msg, Image)
    bpp = CHANNELS[encoding] * native.dtype.itemsize
    assert (msg.height, msg.width, msg.encoding) == (6, 8, encoding)
    assert msg.step == 8 * bpp
    assert len(msg.data) == 6 * 8 * bpp
    assert isinstance(msg.data, array.array)
    back = ic.image_to_array(msg)
    assert back.dtype == native.dtype and back.dtype.isnative
    assert back.shape == native.shape
    np.testing.assert_array_equal(back, native)


@pytest.mark.parametrize('encoding', [e for e in ALL_ENCODINGS if e not in YUV_ENCODINGS])
def test_image_to_rgb_matches_numpy_reference(encoding):
    native = _native_array(encoding, seed=3)
    rgb = ic.image_to_rgb(msgs.array_to_image(native, encoding))
    assert rgb.shape == (6, 8, 3) and rgb.dtype == np.uint8
    np.testing.assert_array_equal(rgb, _reference_rgb(encoding, native))


@pytest.mark.parametrize('encoding', YUV_ENCODINGS)
def test_yuv422_decodes_to_bt601_reference(encoding):
    rgb = _pair_rgb()
    packed = _pack_422(rgb, uyvy=encoding in UYVY_ORDER)
    msg = _raw_msg(packed, encoding)
    decoded = ic.image_to_rgb(msg)
    assert decoded.shape == rgb.shape and decoded.dtype == np.uint8
    error = np.abs(decoded.astype(int) - rgb.astype(int))
    assert error.max() <= 3, f'max error {error.max()}'
    # The same bytes read in the other byte order must not pass: the order matters.
    other = 'yuyv' if encoding in UYVY_ORDER else 'uyvy'
    wrong = ic.image_to_rgb(_raw_msg(packed, other))
    assert np.abs(wrong.astype(int) - rgb.astype(int)).max() > 20


@pytest.mark.parametrize('encoding', ALL_ENCODINGS)
def test_padded_rows_are_honoured(encoding):
    native = _native_array(encoding, seed=5)
    plain = ic.image_to_rgb(_raw_msg(native, encoding))
    padded = _raw_msg(native, encoding, pad=10, pad_byte=0xAB)
    assert padded.step > 8 * CHANNELS[encoding] * native.dtype.itemsize
    np.testing.assert_array_equal(ic.image_to_array(padded), native)
    np.testing.assert_array_equal(ic.image_to_rgb(padded), plain)


def test_padded_rgb8_is_still_a_view():
    native = _native_array('rgb8', seed=6)
    msg = _raw_msg(native, 'rgb8', pad=7, pad_byte=0xAB)
    rgb = ic.image_to_rgb(msg)
    np.testing.assert_array_equal(rgb, native)
    assert np.shares_memory(rgb, np.frombuffer(msg.data, np.uint8))
    assert rgb.strides[0] == msg.step
    assert not (rgb == 0xAB).all(axis=2).any()  # no padding leaks into the pixels


def test_data_longer_than_height_times_step_is_accepted():
    native = _native_array('bgr8', seed=7)
    msg = _raw_msg(native, 'bgr8', extra=13)
    assert len(msg.data) == msg.height * msg.step + 13
    np.testing.assert_array_equal(ic.image_to_array(msg), native)


def test_data_of_exactly_height_times_step_is_enough_even_with_padding():
    native = _native_array('mono8', seed=8)
    msg = _raw_msg(native, 'mono8', pad=3)
    assert len(msg.data) == msg.height * msg.step
    np.testing.assert_array_equal(ic.image_to_array(msg), native)


@pytest.mark.parametrize('encoding', SIXTEEN_BIT)
@pytest.mark.parametrize('bigendian', [True, False])
def test_sixteen_bit_byte_order_is_honoured(encoding, bigendian):
    native = _native_array(encoding, seed=9)
    native.flat[0] = 0x12FE  # high and low bytes differ a lot
    msg = _raw_msg(native, encoding, bigendian=bigendian)
    assert msg.is_bigendian == int(bigendian)
    back = ic.image_to_array(msg)
    assert back.dtype == np.uint16 and back.dtype.isnative
    np.testing.assert_array_equal(back, native)
    assert back.flat[0] == 0x12FE
    rgb = ic.image_to_rgb(msg)
    np.testing.assert_array_equal(rgb, _reference_rgb(encoding, native))
    first_sample_lands_in = {'mono16': [0, 1, 2], 'rgb16': [0], 'bgr16': [2]}[encoding]
    assert rgb[0, 0, first_sample_lands_in].tolist() == [0x12] * len(first_sample_lands_in)


@pytest.mark.parametrize('encoding', SIXTEEN_BIT)
def test_sixteen_bit_padded_big_endian(encoding):
    native = _native_array(encoding, seed=10)
    msg = _raw_msg(native, encoding, bigendian=True, pad=6)
    np.testing.assert_array_equal(ic.image_to_array(msg), native)
    np.testing.assert_array_equal(ic.image_to_rgb(msg), _reference_rgb(encoding, native))


@pytest.mark.parametrize('order', ['>u2', '<u2'])
def test_array_to_image_keeps_the_arrays_byte_order(order):
    native = _native_array('mono16', seed=11).astype(order)
    msg = msgs.array_to_image(native, 'mono16')
    assert msg.is_bigendian == int(order == '>u2')
    assert bytes(msg.data) == native.tobytes()
    np.testing.assert_array_equal(ic.image_to_array(msg), native)


def test_sixteen_bit_scaling_endpoints():
    native = np.array([[0, 255, 256, 65535]], np.uint16)
    rgb = ic.image_to_rgb(msgs.array_to_image(native, 'mono16'))
    assert rgb[0, :, 0].tolist() == [0, 0, 1, 255]


def test_rgb8_is_a_zero_copy_read_only_view():
    native = _native_array('rgb8', seed=12)
    msg = msgs.array_to_image(native, 'rgb8')
    rgb = ic.image_to_rgb(msg)
    buffer = np.frombuffer(msg.data, np.uint8)
    assert np.shares_memory(rgb, buffer)
    assert not rgb.flags.writeable
    msg.data[0] = (int(msg.data[0]) + 1) % 256  # a change in the message shows in the view
    assert rgb[0, 0, 0] == msg.data[0]
    with pytest.raises(ValueError):
        rgb[0, 0, 0] = 1


def test_image_to_array_is_a_view_but_swapped_sixteen_bit_is_a_copy():
    native = _native_array('mono16', seed=13)
    same = _raw_msg(native, 'mono16', bigendian=NATIVE_BIG)
    swapped = _raw_msg(native, 'mono16', bigendian=not NATIVE_BIG)
    assert np.shares_memory(ic.image_to_array(same), np.frombuffer(same.data, np.uint8))
    assert not np.shares_memory(ic.image_to_array(swapped),
                                np.frombuffer(swapped.data, np.uint8))


@pytest.mark.parametrize('encoding', ['bgr8', 'rgba8', 'mono8', 'yuv422', 'rgb16'])
def test_converted_rgb_is_an_independent_writeable_copy(encoding):
    msg = msgs.array_to_image(_native_array(encoding, seed=14), encoding)
    rgb = ic.image_to_rgb(msg)
    assert rgb.flags.writeable and rgb.flags.c_contiguous
    assert not np.shares_memory(rgb, np.frombuffer(msg.data, np.uint8))


def test_header_is_copied_by_value():
    header = _stamped_header()
    msg = msgs.array_to_image(_native_array('rgb8'), 'rgb8', header=header)
    comp = msgs.array_to_compressed(_native_array('rgb8'), 'png', header=header)
    for out in (msg, comp):
        assert (out.header.stamp.sec, out.header.stamp.nanosec) == (1234, 5678)
        assert out.header.frame_id == 'camera_optical'
        assert out.header is not header and out.header.stamp is not header.stamp
    header.frame_id = 'changed'
    header.stamp.sec = 1
    assert msg.header.frame_id == 'camera_optical' and msg.header.stamp.sec == 1234
    assert msgs.array_to_image(_native_array('rgb8'), 'rgb8').header.frame_id == ''


def test_out_message_is_reused_and_written_in_place():
    first = _native_array('rgb8', seed=15)
    second = _native_array('rgb8', seed=16)
    msg = msgs.array_to_image(first, 'rgb8')
    buffer = msg.data
    same = msgs.array_to_image(second, 'rgb8', header=_stamped_header(sec=7), out=msg)
    assert same is msg
    assert msg.data is buffer  # same size: no new buffer
    assert msg.header.stamp.sec == 7
    np.testing.assert_array_equal(ic.image_to_array(msg), second)
    smaller = _native_array('mono8', height=3, width=4, seed=17)
    msgs.array_to_image(smaller, 'mono8', out=msg)
    assert (msg.height, msg.width, msg.step, msg.encoding) == (3, 4, 4, 'mono8')
    np.testing.assert_array_equal(ic.image_to_array(msg), smaller)


def test_strided_and_single_channel_arrays_are_accepted():
    native = _native_array('rgb8', height=6, width=16, seed=18)
    strided = native[:, ::2]
    msg = msgs.array_to_image(strided, 'rgb8')
    np.testing.assert_array_equal(ic.image_to_array(msg), strided)
    mono = _native_array('mono8', seed=19)
    msg = msgs.array_to_image(mono[:, :, None], 'mono8')
    np.testing.assert_array_equal(ic.image_to_array(msg), mono)


def test_large_frame_round_trip():
    native = _native_array('bgr8', height=720, width=1280, seed=20)
    msg = msgs.array_to_image(native, 'bgr8')
    assert len(msg.data) == 720 * 1280 * 3
    np.testing.assert_array_equal(ic.image_to_rgb(msg), native[:, :, ::-1])


def _uint8_ndarray(raw):
    return np.frombuffer(raw, np.uint8).copy()


@pytest.mark.parametrize('data_type', [bytes, bytearray, memoryview, list, _uint8_ndarray])
def test_duck_typed_messages(data_type):
    native = _native_array('bgr8', seed=21)
    real = msgs.array_to_image(native, 'bgr8')
    fake = types.SimpleNamespace(height=6, width=8, encoding='bgr8', is_bigendian=0,
                                 step=24, data=data_type(bytes(real.data)))
    np.testing.assert_array_equal(ic.image_to_rgb(fake), native[:, :, ::-1])
    np.testing.assert_array_equal(ic.msg_to_rgb(fake), native[:, :, ::-1])


def test_duck_typed_out_message():
    fake = types.SimpleNamespace(header=Header(), data=b'')
    out = msgs.array_to_image(_native_array('mono8'), 'mono8', header=_stamped_header(), out=fake)
    assert out is fake and fake.header.frame_id == 'camera_optical'
    np.testing.assert_array_equal(ic.image_to_array(fake), _native_array('mono8'))


# ------------------------------------------------------------------------------------------
# Compressed images
# ------------------------------------------------------------------------------------------

def test_jpeg_round_trip_within_tolerance():
    rgb = _smooth_rgb()
    msg = msgs.array_to_compressed(rgb, 'jpeg', quality=95)
    assert isinstance(msg, CompressedImage)
    assert msg.format == 'rgb8; jpeg compressed bgr8'
    assert bytes(msg.data[:3]) == b'\xff\xd8\xff'
    back = ic.compressed_to_rgb(msg)
    assert back.shape == rgb.shape and back.dtype == np.uint8
    error = np.abs(back.astype(int) - rgb.astype(int))
    assert error.mean() < 2.0 and error.max() <= 12, (error.mean(), error.max())


def test_png_round_trip_is_exact():
    rgb = _native_array('rgb8', height=20, width=30, seed=22)
    msg = msgs.array_to_compressed(rgb, 'png')
    assert msg.format == 'rgb8; png compressed bgr8'
    np.testing.assert_array_equal(ic.compressed_to_rgb(msg), rgb)
    np.testing.assert_array_equal(ic.msg_to_rgb(msg), rgb)


def test_jpeg_quality_changes_the_size():
    rgb = _native_array('rgb8', height=32, width=32, seed=23)
    small = msgs.array_to_compressed(rgb, 'jpg', quality=10)
    large = msgs.array_to_compressed(rgb, 'jpeg', quality=100)
    assert len(small.data) < len(large.data)


def test_grey_compressed_round_trip():
    grey = _native_array('mono8', height=10, width=12, seed=24)
    msg = msgs.array_to_compressed(grey, 'png')
    assert msg.format == 'mono8; png compressed mono8'
    rgb = ic.compressed_to_rgb(msg)
    assert rgb.shape == (10, 12, 3)
    for channel in range(3):
        np.testing.assert_array_equal(rgb[:, :, channel], grey)


@pytest.mark.parametrize('fmt,codec', [
    ('jpeg', '.jpg'), ('JPEG', '.jpg'), ('jpg', '.jpg'), ('png', '.png'),
    ('rgb8; jpeg compressed bgr8', '.jpg'), ('bgr8; jpeg compressed bgr8', '.jpg'),
    ('bgr8; png compressed bgr8', '.png'), ('rgba8; png compressed bgr8', '.png'),
    ('', '.png'), ('', '.jpg'),
])
def test_compressed_format_strings(fmt, codec):
    rgb = _smooth_rgb(24, 32)
    # Encoded the way image_transport does: true colours handed to OpenCV as BGR.
    ok, encoded = cv2.imencode(codec, np.ascontiguousarray(rgb[:, :, ::-1]))
    assert ok
    msg = CompressedImage(format=fmt, data=encoded.tobytes())
    back = ic.compressed_to_rgb(msg)
    tolerance = 0 if codec == '.png' else 12
    assert np.abs(back.astype(int) - rgb.astype(int)).max() <= tolerance


@pytest.mark.parametrize('fmt', ['mono8; jpeg compressed mono8', 'mono8; png compressed mono8'])
def test_compressed_mono_format(fmt):
    grey = np.tile(np.arange(0, 256, 8, dtype=np.uint8), (16, 1))
    ok, encoded = cv2.imencode('.png' if 'png' in fmt else '.jpg', grey)
    back = ic.compressed_to_rgb(CompressedImage(format=fmt, data=encoded.tobytes()))
    assert back.shape == (16, 32, 3)
    assert np.abs(back[:, :, 1].astype(int) - grey.astype(int)).max() <= 8


def test_compressed_sixteen_bit_png_is_reduced_to_eight_bits():
    grey16 = np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000
    ok, encoded = cv2.imencode('.png', grey16)
    back = ic.compressed_to_rgb(CompressedImage(format='png', data=encoded.tobytes()))
    np.testing.assert_array_equal(back[:, :, 0], grey16 >> 8)


def test_msg_to_rgb_dispatches_on_type():
    native = _native_array('bgr8', seed=25)
    raw = msgs.array_to_image(native, 'bgr8')
    comp = msgs.array_to_compressed(native[:, :, ::-1], 'png')
    np.testing.assert_array_equal(ic.msg_to_rgb(raw), native[:, :, ::-1])
    np.testing.assert_array_equal(ic.msg_to_rgb(comp), native[:, :, ::-1])
    fake_comp = types.SimpleNamespace(format='png', data=bytes(comp.data))
    np.testing.assert_array_equal(ic.msg_to_rgb(fake_comp), native[:, :, ::-1])


# ------------------------------------------------------------------------------------------
# Bad input: always ImageCodecError, with a message naming the problem
# ------------------------------------------------------------------------------------------

_GOOD_FIELDS = {'height': 2, 'width': 4, 'encoding': 'rgb8', 'is_bigendian': 0, 'step': 12,
                'data': bytes(24)}


def _image(**fields):
    return Image(**{**_GOOD_FIELDS, **fields})


def _fake(**fields):
    return types.SimpleNamespace(**{**_GOOD_FIELDS, **fields})


def test_the_base_of_the_bad_messages_is_valid():
    assert ic.image_to_rgb(_image()).shape == (2, 4, 3)
    assert ic.image_to_rgb(_fake()).shape == (2, 4, 3)


BAD_RAW = [
    ('step too small', _image(height=720, width=1280, step=3000, data=bytes(3000 * 720)),
     ['Image 1280x720 rgb8', 'step 3000 < width*3 = 3840']),
    ('data too short', _image(height=720, width=1280, step=3840, data=bytes(100)),
     ['data has 100 bytes', 'expected height*step = 2764800']),
    ('one byte short', _image(data=bytes(23)), ['data has 23 bytes', '= 24']),
    ('padded data too short', _image(step=16, data=bytes(24)),
     ['data has 24 bytes', 'height*step = 32']),
    ('unknown encoding', _image(encoding='foo'),
     ["Image 4x2: unsupported encoding 'foo'", 'supported: ', 'rgb8', 'yuv422_yuy2',
      'mono16']),
    ('empty encoding', _image(encoding=''), ["unsupported encoding ''"]),
    ('upper-case encoding', _image(encoding='RGB8'), ["unsupported encoding 'RGB8'"]),
    ('32FC1 encoding', _image(encoding='32FC1', step=16, data=bytes(32)),
     ["unsupported encoding '32FC1'"]),
    ('zero width', _image(width=0, step=0, data=b''), ['Image 0x2', 'must be positive']),
    ('zero height', _image(height=0, data=b''), ['Image 4x0', 'must be positive']),
    ('odd width yuv422', _image(encoding='yuv422', width=3, step=6, data=bytes(12)),
     ['Image 3x2 yuv422', 'width must be even']),
    ('odd width yuyv', _image(encoding='yuyv', width=5, step=10, data=bytes(20)),
     ['width must be even', '5']),
    ('odd step mono16', _image(encoding='mono16', step=9, data=bytes(18)),
     ['Image 4x2 mono16', 'step 9 is not a multiple of 2']),
    ('mono16 step too small', _image(encoding='mono16', step=6, data=bytes(12)),
     ['step 6 < width*2 = 8']),
    ('rgba8 step too small', _image(encoding='rgba8', step=12, data=bytes(24)),
     ['step 12 < width*4 = 16']),
    ('empty data', _image(data=b''), ['data has 0 bytes']),
    ('not an image', _fake(encoding=None), ['unsupported encoding None']),
    ('missing field', types.SimpleNamespace(height=2, width=4, encoding='rgb8'),
     ['not a sensor_msgs/Image', 'SimpleNamespace']),
    ('data None', _fake(data=None), ['data is missing']),
    ('data str', _fake(data='x' * 24), ['data is a str']),
    ('data floats', _fake(data=np.zeros(24, np.float32)), ['ndarray of float32']),
    ('data values out of range', _fake(data=[300] * 24), ['outside 0..255']),
    ('height not an integer', _fake(height='two'), ["height 'two' is not an integer"]),
    ('negative width', _fake(width=-4), ['must be positive']),
]


@pytest.mark.parametrize('msg,fragments', [c[1:] for c in BAD_RAW], ids=[c[0] for c in BAD_RAW])
@pytest.mark.parametrize('func', [ic.image_to_rgb, ic.image_to_array, ic.msg_to_rgb])
def test_bad_raw_messages_raise_with_a_helpful_message(func, msg, fragments):
    if func is ic.msg_to_rgb and not hasattr(msg, 'data'):
        fragments = ['msg_to_rgb', 'SimpleNamespace']
    with pytest.raises(ic.ImageCodecError) as info:
        func(msg)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


_JPEG_HEADER = b'\xff\xd8\xff\xe0'

BAD_COMPRESSED = [
    ('empty data', CompressedImage(format='jpeg', data=b''), ['data is empty', "'jpeg'"]),
    ('corrupt jpeg', CompressedImage(format='jpeg', data=_JPEG_HEADER + bytes(12341)),
     ['CompressedImage: could not decode 12345 bytes as jpeg']),
    ('random bytes as png',
     CompressedImage(format='bgr8; png compressed bgr8', data=bytes(range(256)) * 4),
     ['could not decode 1024 bytes as png']),
    ('unknown format', CompressedImage(format='tiff', data=b'II*\x00' + bytes(60)),
     ["unsupported format 'tiff'", 'jpeg, png']),
    ('unknown codec in transport string',
     CompressedImage(format='rgb8; webp compressed bgr8', data=bytes(50)),
     ["unsupported format 'rgb8; webp compressed bgr8'"]),
    ('compressedDepth', CompressedImage(format='16UC1; compressedDepth png', data=bytes(50)),
     ['compressedDepth']),
    ('empty format, unknown data', CompressedImage(format='', data=bytes(50)),
     ['empty format', 'neither jpeg nor png']),
    ('format not a string', types.SimpleNamespace(format=3, data=b'\xff\xd8\xff'),
     ['format 3 is not a string']),
    ('data missing', types.SimpleNamespace(format='png', data=None), ['data is missing']),
]


@pytest.mark.parametrize('msg,fragments', [c[1:] for c in BAD_COMPRESSED],
                         ids=[c[0] for c in BAD_COMPRESSED])
@pytest.mark.parametrize('func', [ic.compressed_to_rgb, ic.msg_to_rgb])
def test_bad_compressed_messages_raise_with_a_helpful_message(func, msg, fragments):
    with pytest.raises(ic.ImageCodecError) as info:
        func(msg)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_truncated_png_raises():
    ok, encoded = cv2.imencode('.png', _native_array('rgb8', seed=26))
    msg = CompressedImage(format='png', data=encoded.tobytes()[:40])
    with pytest.raises(ic.ImageCodecError, match='could not decode 40 bytes as png'):
        ic.compressed_to_rgb(msg)


@pytest.mark.parametrize('value', [42, None, 'image', types.SimpleNamespace(x=1)])
def test_msg_to_rgb_rejects_non_messages(value):
    with pytest.raises(ic.ImageCodecError, match='expected sensor_msgs/Image or Compressed'):
        ic.msg_to_rgb(value)


BAD_ARRAYS = [
    ('unknown encoding', np.zeros((2, 4, 3), np.uint8), 'foo',
     ["array_to_image: unsupported encoding 'foo'"]),
    ('not an array', [[1, 2], [3, 4]], 'mono8', ['expected a numpy array', 'list']),
    ('float rgb8', np.zeros((2, 4, 3), np.float32), 'rgb8', ['float32', 'must be uint8']),
    ('int64 mono8', np.zeros((2, 4), np.int64), 'mono8', ['int64', 'must be uint8']),
    ('uint8 mono16', np.zeros((2, 4), np.uint8), 'mono16', ['must be uint16']),
    ('int16 mono16', np.zeros((2, 4), np.int16), 'mono16', ['must be uint16']),
    ('bool mono8', np.zeros((2, 4), bool), 'mono8', ['must be uint8']),
    ('rgb8 with 4 channels', np.zeros((2, 4, 4), np.uint8), 'rgb8',
     ['(2, 4, 4)', 'expected shape (H, W, 3)']),
    ('rgba8 with 3 channels', np.zeros((2, 4, 3), np.uint8), 'rgba8',
     ['expected shape (H, W, 4)']),
    ('mono8 with 3 channels', np.zeros((2, 4, 3), np.uint8), 'mono8',
     ['expected shape (H, W)']),
    ('1-D', np.zeros(8, np.uint8), 'mono8', ['expected shape (H, W)']),
    ('odd width yuv422', np.zeros((2, 3, 2), np.uint8), 'yuv422', ['width must be even']),
    ('empty', np.zeros((0, 4, 3), np.uint8), 'rgb8', ['must be positive']),
]


@pytest.mark.parametrize('array_in,encoding,fragments', [c[1:] for c in BAD_ARRAYS],
                         ids=[c[0] for c in BAD_ARRAYS])
def test_bad_arrays_for_array_to_image(array_in, encoding, fragments):
    with pytest.raises(ic.ImageCodecError) as info:
        msgs.array_to_image(array_in, encoding)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


BAD_COMPRESS_ARGS = [
    ('float array', np.zeros((2, 4, 3), np.float64), {}, ['must be uint8']),
    ('four channels', np.zeros((2, 4, 4), np.uint8), {}, ['expected shape (H, W, 3) or (H, W)']),
    ('1-D', np.zeros(8, np.uint8), {}, ['expected shape']),
    ('empty', np.zeros((0, 4, 3), np.uint8), {}, ['must be positive']),
    ('not an array', 'pixels', {}, ['expected a numpy array', 'str']),
    ('unknown fmt', np.zeros((2, 4, 3), np.uint8), {'fmt': 'gif'},
     ["unsupported fmt 'gif'", 'jpeg, png']),
    ('quality 0', np.zeros((2, 4, 3), np.uint8), {'quality': 0}, ['quality', '1..100']),
    ('quality 101', np.zeros((2, 4, 3), np.uint8), {'quality': 101}, ['got 101']),
    ('quality float', np.zeros((2, 4, 3), np.uint8), {'quality': 90.5}, ['got 90.5']),
]


@pytest.mark.parametrize('array_in,kwargs,fragments', [c[1:] for c in BAD_COMPRESS_ARGS],
                         ids=[c[0] for c in BAD_COMPRESS_ARGS])
def test_bad_arguments_for_array_to_compressed(array_in, kwargs, fragments):
    with pytest.raises(ic.ImageCodecError) as info:
        msgs.array_to_compressed(array_in, **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_unusable_out_object_raises():
    with pytest.raises(ic.ImageCodecError, match='AttributeError'):
        msgs.array_to_image(_native_array('mono8'), 'mono8', out=object())


def test_bad_header_raises():
    with pytest.raises(ic.ImageCodecError, match='header'):
        msgs.array_to_image(_native_array('mono8'), 'mono8', header=object())


# ------------------------------------------------------------------------------------------
# Agreement with cv_bridge, where it is installed
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize('encoding', ALL_ENCODINGS)
def test_agrees_with_cv_bridge(encoding):
    cv_bridge = pytest.importorskip(
        'cv_bridge', reason='cv_bridge is not installed here (no PyPI build of it exists), so '
        'the comparison with the reference ROS implementation cannot run')
    bridge = cv_bridge.CvBridge()
    native = _native_array(encoding, seed=27)
    ours = msgs.array_to_image(native, encoding)
    try:
        theirs = bridge.cv2_to_imgmsg(native, encoding=encoding)
        passthrough = bridge.imgmsg_to_cv2(ours)
        as_rgb = bridge.imgmsg_to_cv2(ours, desired_encoding='rgb8')
    except cv_bridge.CvBridgeError as exc:
        pytest.skip(f'this cv_bridge does not convert {encoding!r}: {exc}')
    assert (theirs.height, theirs.width, theirs.step, theirs.encoding, theirs.is_bigendian) == \
        (ours.height, ours.width, ours.step, ours.encoding, ours.is_bigendian)
    assert bytes(theirs.data) == bytes(ours.data)
    np.testing.assert_array_equal(ic.image_to_array(theirs), np.asarray(passthrough))
    mine = ic.image_to_rgb(ours).astype(int)
    assert np.abs(mine - np.asarray(as_rgb).astype(int)).max() <= 1
    swapped = _raw_msg(native, encoding, bigendian=not NATIVE_BIG)
    if encoding in SIXTEEN_BIT:
        np.testing.assert_array_equal(ic.image_to_array(swapped), bridge.imgmsg_to_cv2(swapped))


def test_compressed_headers_are_checked_before_decoding():
    import struct
    img = np.zeros((10, 10, 3), np.uint8)
    ok, png = cv2.imencode('.png', img)
    png = bytearray(png.tobytes())
    i = png.index(b'IHDR')
    png[i + 4:i + 12] = struct.pack('>II', 20000, 20000)     # claims 400 MP
    with pytest.raises(ic.ImageCodecError, match='more than the limit'):
        ic.compressed_to_rgb(CompressedImage(format='png', data=bytes(png)))
    ok, bmp = cv2.imencode('.bmp', img)
    with pytest.raises(ic.ImageCodecError, match='neither a JPEG nor a PNG'):
        ic.compressed_to_rgb(CompressedImage(format='jpeg', data=bmp.tobytes()))
    # A jpeg labelled png still decodes: the signature decides.
    ok, jpg = cv2.imencode('.jpg', img)
    assert ic.compressed_to_rgb(CompressedImage(format='png', data=jpg.tobytes())).shape == \
        (10, 10, 3)


# ------------------------------------------------------------------------------------------
# Decoder choice (node parameter image_decoder)
# ------------------------------------------------------------------------------------------

def test_builtin_decoder_is_the_codec():
    decode = msgs.make_decoder('builtin')
    native = _native_array('bgr8', seed=3)
    np.testing.assert_array_equal(decode(msgs.array_to_image(native, 'bgr8')), native[:, :, ::-1])
    with pytest.raises(ic.ImageCodecError, match='unknown image decoder'):
        msgs.make_decoder('pillow')


def test_cv_bridge_decoder_without_cv_bridge_is_a_clear_error():
    try:
        import cv_bridge  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip('cv_bridge is installed here: test_cv_bridge_decoder_matches_builtin runs')
    with pytest.raises(ic.ImageCodecError, match='cv_bridge is not importable.*builtin'):
        msgs.make_decoder('cv_bridge')
    # auto: cv_bridge where importable, else the built-in decoder, saying why.
    auto = msgs.make_decoder('auto')
    assert auto.decoder_name == 'builtin' and 'cv_bridge is not importable' in \
        auto.fallback_reason
    native = _native_array('bgr8', seed=4)
    np.testing.assert_array_equal(auto(msgs.array_to_image(native, 'bgr8')), native[:, :, ::-1])
    with pytest.raises(ic.ImageCodecError, match='expected height'):
        msg = msgs.array_to_image(native, 'bgr8')
        msg.data = bytes(msg.data)[:-1]
        auto(msg)


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'mono8', 'bgra8', 'yuv422'])
def test_cv_bridge_decoder_matches_builtin(encoding):
    pytest.importorskip(
        'cv_bridge', reason='cv_bridge is not installed here (no PyPI build of it exists), so '
        'the cv_bridge decoder cannot run')
    decode = msgs.make_decoder('cv_bridge')
    assert msgs.make_decoder('auto').decoder_name == 'cv_bridge'
    msg = msgs.array_to_image(_native_array(encoding, seed=5), encoding)
    ours = ic.msg_to_rgb(msg).astype(int)
    assert np.abs(decode(msg).astype(int) - ours).max() <= 1
    ok, jpg = cv2.imencode('.jpg', np.zeros((16, 24, 3), np.uint8))
    assert decode(CompressedImage(format='jpeg', data=jpg.tobytes())).shape == (16, 24, 3)
    # The same checks as the built-in decoder come first.
    msg.data = bytes(msg.data)[:-1]
    with pytest.raises(ic.ImageCodecError, match='expected height'):
        decode(msg)


def test_compressed_checks_are_shared_by_both_decoders():
    with pytest.raises(ic.ImageCodecError, match='data is empty'):
        ic.checked_compressed(CompressedImage(format='jpeg', data=b''))
    ok, png = cv2.imencode('.png', np.zeros((10, 12, 3), np.uint8))
    codec, buffer = ic.checked_compressed(CompressedImage(format='', data=png.tobytes()))
    assert codec == 'png' and buffer.size == png.size
