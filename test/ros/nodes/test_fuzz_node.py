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
Fuzz the running segmentation_node over real topics with thousands of bad image messages.

The in-process tests put a SegmentationNode (tiny model from ``write_tiny_model``) in a
Harness and publish batches of generated messages on ``image`` (raw transport) and on
``image/compressed`` (compressed transport): 5,000 per transport by default, 10,000 in all.
Each batch is 49 generated messages followed by one good frame whose outputs the test waits
for (matched by stamp) before the next batch, so every good frame must get its outputs even
though the worker keeps only the newest frame. The node subscribes reliable with depth 100
(``input_qos:=DEFAULT``, ``input_qos_depth:=100``), so no message is lost before it reaches
the node and the drop accounting can be exact.

The over-the-wire messages come from :class:`WireFuzzer`, a seeded numpy generator that
mirrors the hypothesis strategies of ``test_fuzz_codec.py`` (random and unknown encodings,
zero sizes, short and odd steps, odd YUV widths, truncated and oversized data, random field
values; random bytes as JPEG and PNG, signatures followed by garbage, truncated or damaged
real JPEG/PNG, forged headers with random sizes, unsupported formats, empty data). Hypothesis
itself is used in-process only: drawing 10,000 examples from it for publishing would be slow
and awkward. Each generated message is first decoded in-process with ``msg_to_rgb`` (the
oracle): the node may only publish outputs for stamps the oracle decodes, at that size.

The throttling check runs the real executable in its own process (``NodeProcess``) and
counts the node's error log lines in its output during a 30 Hz burst of bad messages; the
decoders' own complaints (libpng, libjpeg write them straight to fd 2) must not appear
outside that log: the node catches them and folds them into its throttled messages.

``FREESPACE_FUZZ_BATCHES=<n>`` changes the number of batches per transport (default 100).
"""

import array
import os
import re
import struct
import time
import zlib

import cv2
from diagnostic_msgs.msg import DiagnosticArray
from freespace_seg.nodes.msgs import array_to_compressed, array_to_image
from freespace_seg.nodes.segmentation_node import ERROR_THROTTLE_S, start_segmentation_node
from freespace_seg.nodes.stderr_capture import DECODER_LINE
from freespace_seg.perception.image_codec import (image_to_array, ImageCodecError, msg_to_rgb,
                                                  SUPPORTED_ENCODINGS)
from freespace_seg.tools.child import node_environment, NodeProcess, segmentation_node_command
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image
from support import green_red_image, write_tiny_model
from support.ros import Harness, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

BATCH = 50
BATCHES = int(os.environ.get('FREESPACE_FUZZ_BATCHES', '100'))
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
RELIABLE_100 = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
LAYOUT = {'rgb8': (3, 1), 'bgr8': (3, 1), 'rgba8': (4, 1), 'bgra8': (4, 1), 'mono8': (1, 1),
          'yuv422': (2, 1), 'uyvy': (2, 1), 'yuv422_yuy2': (2, 1), 'yuyv': (2, 1),
          'mono16': (1, 2), 'rgb16': (3, 2), 'bgr16': (3, 2)}
YUV = ('yuv422', 'uyvy', 'yuv422_yuy2', 'yuyv')
ODD_ENCODINGS = ('', 'RGB8', 'rgb8 ', 'bgr', '8UC3', '16UC1', '32FC1', 'bayer_rggb8', 'nv21',
                 'jpeg', 'rgb8; jpeg compressed bgr8', 'mono 8', 'rgb\u00e9')
BAD_FORMATS = ('tiff', 'bmp', 'webp', 'jpeg2000', 'h264', ';', '16UC1; compressedDepth png',
               'rgb8; raw', 'compressed')
GOOD_FORMATS = ('jpeg', 'jpg', 'png', 'rgb8; jpeg compressed bgr8', 'bgr8; png compressed bgr8',
                '')
RAW_FAMILIES = ('unknown_encoding', 'zero_size', 'short_step', 'odd_16bit_step',
                'odd_yuv_width', 'truncated', 'oversized', 'padded', 'big_endian_16',
                'random_fields', 'huge_declared_size')
COMPRESSED_FAMILIES = ('random_bytes', 'jpeg_magic_garbage', 'png_magic_garbage',
                       'truncated_jpeg', 'truncated_png', 'damaged_jpeg', 'damaged_png',
                       'forged_png_header', 'forged_jpeg_header', 'unsupported_format',
                       'empty_data', 'garbage_appended', 'other_codec')


def _chunk(kind, body):
    return struct.pack('>I', len(body)) + kind + body + \
        struct.pack('>I', zlib.crc32(kind + body) & 0xFFFFFFFF)


def png_length_fields(data):
    """Return the byte offsets of the chunk length fields of a PNG (empty for other data)."""
    offsets, pos = set(), len(PNG_MAGIC)
    if not data.startswith(PNG_MAGIC):
        return offsets
    while pos + 8 <= len(data):
        offsets.update(range(pos, pos + 4))
        pos += 12 + struct.unpack('>I', data[pos:pos + 4])[0]
    return offsets


class WireFuzzer:
    """Seeded numpy generator of bad (and odd but valid) Image and CompressedImage messages."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def _bytes(self, length):
        return self.rng.integers(0, 256, int(length), dtype=np.uint8).tobytes()

    def _pick(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def _int(self, low, high):
        return int(self.rng.integers(low, high + 1))

    def _valid_geometry(self, encoding=None):
        encoding = encoding or self._pick(SUPPORTED_ENCODINGS)
        channels, depth = LAYOUT[encoding]
        width = self._int(1, 48) * (2 if encoding in YUV else 1)
        height = self._int(1, 40)
        return encoding, width, height, width * channels * depth

    @staticmethod
    def _image(encoding, width, height, step, data, bigendian=0):
        return Image(height=int(height), width=int(width), encoding=encoding, step=int(step),
                     is_bigendian=int(bigendian), data=array.array('B', data))

    def raw(self):
        """Return (Image, family name) from one of :data:`RAW_FAMILIES`."""
        family = self._pick(RAW_FAMILIES)
        encoding, width, height, row = self._valid_geometry()
        step, bigendian, length = row, self._int(0, 1), None
        if family == 'unknown_encoding':
            encoding = self._pick(ODD_ENCODINGS) if self._int(0, 1) else ''.join(
                chr(self._int(33, 126)) for _ in range(self._int(1, 10)))
        elif family == 'zero_size':
            width, height = self._pick([(0, height), (width, 0), (0, 0)])
            step = self._pick([0, row])
            length = self._int(0, 300)
        elif family == 'short_step':
            step = self._int(0, row - 1)
        elif family == 'odd_16bit_step':
            encoding, width, height, row = self._valid_geometry(
                self._pick(('mono16', 'rgb16', 'bgr16')))
            step = row + 1
        elif family == 'odd_yuv_width':
            encoding = self._pick(YUV)
            width = self._int(0, 23) * 2 + 1
            step = width * 2
        elif family == 'truncated':
            length = self._int(0, height * step - 1)
        elif family == 'oversized':
            length = height * step + self._int(1, 5000)
        elif family == 'padded':
            step = row + self._int(1, 16) * LAYOUT[encoding][1]
        elif family == 'big_endian_16':
            encoding, width, height, row = self._valid_geometry(
                self._pick(('mono16', 'rgb16', 'bgr16')))
            step, bigendian = row, 1
        elif family == 'random_fields':
            width, height = self._int(0, 2 ** 32 - 1), self._int(0, 2 ** 32 - 1)
            step, bigendian = self._int(0, 2 ** 32 - 1), self._int(0, 255)
            length = self._int(0, 2000)
        elif family == 'huge_declared_size':
            width, height = self._int(10 ** 4, 10 ** 5), self._int(10 ** 4, 10 ** 5)
            step = width * LAYOUT[encoding][0] * LAYOUT[encoding][1]
            length = self._int(0, 5000)
        if length is None:
            length = height * step
        return self._image(encoding, width, height, step, self._bytes(length), bigendian), \
            family

    def _small_picture(self):
        h, w = self._int(1, 40), self._int(1, 48)
        if self._int(0, 1):
            return self.rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        return self.rng.integers(0, 256, (h, w), dtype=np.uint8)

    def _encoded(self, codec):
        picture = self._small_picture()
        ext = {'jpeg': '.jpg', 'ppm': '.pgm' if picture.ndim == 2 else '.ppm'}.get(
            codec, '.' + codec)
        ok, buf = cv2.imencode(ext, picture)
        assert ok, codec
        return buf.tobytes()

    def compressed(self):
        """Return (CompressedImage, family name) from one of :data:`COMPRESSED_FAMILIES`."""
        family = self._pick(COMPRESSED_FAMILIES)
        fmt = self._pick(GOOD_FORMATS)
        if family == 'random_bytes':
            data = self._bytes(self._int(1, 3000))
        elif family == 'jpeg_magic_garbage':
            data = b'\xff\xd8\xff' + self._bytes(self._int(0, 3000))
        elif family == 'png_magic_garbage':
            data = PNG_MAGIC + self._bytes(self._int(0, 3000))
        elif family in ('truncated_jpeg', 'truncated_png'):
            data = self._encoded(family.split('_')[1])
            data = data[:self._int(0, len(data) - 1)]
        elif family in ('damaged_jpeg', 'damaged_png'):
            buf = bytearray(self._encoded(family.split('_')[1]))
            # Spare PNG chunk lengths: test_fuzz_codec has a test for a corrupt IDAT length,
            # which costs seconds and gigabytes per message with OpenCV 5.0.
            spared = png_length_fields(bytes(buf))
            places = [i for i in range(len(buf)) if i not in spared]
            for _ in range(self._int(1, 8)):
                buf[self._pick(places)] = self._int(0, 255)
            data = bytes(buf)
        elif family == 'forged_png_header':
            ihdr = struct.pack('>IIBBBBB', self._int(0, 40000), self._int(0, 40000),
                               self._pick([1, 2, 4, 8, 16, 3]), self._pick([0, 2, 3, 4, 6, 5]),
                               0, 0, 0)
            data = PNG_MAGIC + _chunk(b'IHDR', ihdr) + \
                _chunk(b'IDAT', self._bytes(self._int(0, 500))) + _chunk(b'IEND', b'')
        elif family == 'forged_jpeg_header':
            comps = self._pick([1, 3, 4, 0])
            sof = struct.pack('>BHHB', 8, self._int(0, 40000), self._int(0, 40000), comps)
            sof += b''.join(bytes([i + 1, 0x11, 0]) for i in range(comps))
            data = b'\xff\xd8\xff\xc0' + struct.pack('>H', len(sof) + 2) + sof + b'\xff\xda' + \
                self._bytes(self._int(0, 500)) + b'\xff\xd9'
        elif family == 'unsupported_format':
            data = self._encoded(self._pick(('jpeg', 'png')))
            fmt = self._pick(BAD_FORMATS)
        elif family == 'empty_data':
            data = b''
        elif family == 'garbage_appended':
            data = self._encoded(self._pick(('jpeg', 'png'))) + self._bytes(self._int(1, 500))
        else:  # other_codec: decodable by content, whatever the format says
            data = self._encoded(self._pick(('bmp', 'ppm')))
        return CompressedImage(format=fmt, data=array.array('B', data)), family

    def good(self, compressed):
        """Return (message, expected free mask): a green-below-red frame the model reads."""
        w, h = self._int(16, 160), self._int(12, 120)
        rgb = green_red_image(w, h, free_rows=self._int(h // 4, 3 * h // 4))
        if compressed:
            msg = array_to_compressed(rgb, self._pick(('png', 'jpeg')), quality=95)
        else:
            msg = array_to_image(rgb, 'rgb8')
        return msg, rgb[..., 1] > rgb[..., 0]


def decoded_shape(msg):
    """Return the (H, W) that msg_to_rgb decodes in-process, or None: the oracle."""
    try:
        rgb = msg_to_rgb(msg)
    except ImageCodecError:
        return None
    return rgb.shape[:2]


def stamp(msg, sec, nanosec):
    msg.header.stamp.sec = sec
    msg.header.stamp.nanosec = nanosec
    msg.header.frame_id = 'fuzz'
    return msg


@pytest.fixture
def fuzz_rig(ros_init, tmp_path, request):
    """Start an in-process node with a reliable depth-100 input, in a harness."""
    ns = unique_namespace('fz')
    node = start_segmentation_node(namespace=ns, parameter_overrides=[
        Parameter('model_file_path', value=write_tiny_model(tmp_path)),
        Parameter('num_threads', value=1),
        Parameter('image_transport', value=request.param),
        Parameter('input_qos', value='DEFAULT'), Parameter('input_qos_depth', value=100),
        Parameter('output_qos_depth', value=100)])
    h = Harness(ns, node)
    h.node = node
    yield h
    h.close()


def error_lines(text, needle):
    """Return the lines of a log that contain ``needle`` (an error message prefix)."""
    return [line for line in text.splitlines() if needle in line]


@pytest.mark.slow
@pytest.mark.parametrize('fuzz_rig', ['raw', 'compressed'], indirect=True)
def test_node_survives_thousands_of_bad_messages(fuzz_rig, request, capfd):
    h, node = fuzz_rig, fuzz_rig.node
    compressed = request.node.callspec.params['fuzz_rig'] == 'compressed'
    fuzzer = WireFuzzer(seed=8 + compressed)
    masks, overlays, good_masks = {}, {}, {}
    good_truth = {}

    def on_mask(msg):
        sec = msg.header.stamp.sec
        masks[sec] = (msg.height, msg.width)
        if sec in good_truth:
            good_masks[sec] = image_to_array(msg).copy()

    h.client.create_subscription(Image, 'segmentation/mask', on_mask, RELIABLE_100)
    h.client.create_subscription(
        Image, 'segmentation/overlay',
        lambda msg: overlays.__setitem__(msg.header.stamp.sec, (msg.height, msg.width)),
        RELIABLE_100)
    pub = h.client.create_publisher(CompressedImage if compressed else Image,
                                    'image/compressed' if compressed else 'image', RELIABLE_100)
    assert h.wait_for_subscribers(pub)
    assert h.wait_for(lambda: node.wants('segmentation/mask')
                      and node.wants('segmentation/overlay'))

    expected, families, bad_count = {}, {}, 0
    capfd.readouterr()
    start = time.monotonic()
    index = 0
    for batch in range(BATCHES):
        for _ in range(BATCH - 1):
            msg, family = fuzzer.compressed() if compressed else fuzzer.raw()
            stamp(msg, index, 1)
            expected[index] = decoded_shape(msg)
            bad_count += expected[index] is None
            families[family] = families.get(family, 0) + 1
            pub.publish(msg)
            index += 1
        msg, truth = fuzzer.good(compressed)
        stamp(msg, index, 2)
        expected[index] = truth.shape
        good_truth[index] = truth
        pub.publish(msg)
        good = index
        index += 1
        assert h.wait_for(lambda: good in masks, timeout=15.0), \
            f'batch {batch}: no mask for good frame {good}; received {node.received}, ' \
            f'processed {node.processed}, bad {node.bad_frames}, last error {node.last_error}'
    elapsed = time.monotonic() - start

    # The node is alive and still answers; every message reached it and is accounted for.
    assert node.worker_thread.is_alive()
    assert h.wait_for(lambda: node.received == index), (node.received, index)
    assert h.wait_for(
        lambda: node.processed + node.bad_frames + node.dropped == node.received), \
        (node.processed, node.bad_frames, node.dropped, node.received)
    assert h.wait_for(lambda: all(s in overlays for s in good_truth))
    assert node.processed >= len(good_truth)
    assert 0 < node.bad_frames <= bad_count
    assert node.last_error.startswith('bad image on'), node.last_error
    # Outputs only for decodable messages, at the input's size; good frames segmented right.
    for outputs in (masks, overlays):
        wrong = {s: (shape, expected[s]) for s, shape in outputs.items()
                 if expected.get(s) != shape}
        assert not wrong, dict(list(wrong.items())[:5])
    for sec, truth in good_truth.items():
        free = good_masks[sec] == 1
        assert (free == truth).mean() > 0.9, sec
    status = node.diagnostics_status()
    values = {kv.key: kv.value for kv in status.values}
    assert int(values['frames_received']) == index
    assert int(values['frames_bad']) == node.bad_frames
    assert f'{node.bad_frames} bad frames' in status.message

    # The error log is throttled: one line per ERROR_THROTTLE_S at most, not one per frame.
    log = capfd.readouterr().err
    lines = error_lines(log, f'bad image on {node.image_topic}')
    lines += error_lines(log, 'failed to process a frame')
    allowed = int(elapsed / ERROR_THROTTLE_S) + 2
    assert 1 <= len(lines) <= allowed, (len(lines), allowed, lines[:5])
    print(f'{index} {"compressed" if compressed else "raw"} messages ({bad_count} undecodable) '
          f'in {elapsed:.1f} s: processed {node.processed}, bad {node.bad_frames}, dropped '
          f'{node.dropped}, {len(lines)} error lines; families {families}')


# -- the real executable: its error log over a 30 Hz burst of bad frames ---------------------

BURST_HZ = 30.0
BURST_S = 3.0
LOG_LINE = re.compile(r'^\[(DEBUG|INFO|WARN|ERROR|FATAL)\] ')


def frames_bad(box, node_name):
    """Return frames_bad from the newest /diagnostics status of ``node_name``, or None."""
    for arr in reversed(box):
        for status in arr.status:
            if status.name.startswith(node_name + ':'):
                return int({kv.key: kv.value for kv in status.values}['frames_bad'])
    return None


@pytest.mark.slow
@pytest.mark.parametrize('transport', ['raw', 'compressed'])
def test_error_log_is_throttled_in_the_node_process(ros_init, tmp_path, transport):
    model = write_tiny_model(tmp_path)
    ns = unique_namespace('fzthr')
    name = f'fuzz_throttle_{os.getpid()}_{transport}'
    env = node_environment()
    env['RCUTILS_CONSOLE_OUTPUT_FORMAT'] = '[{severity}] [{name}]: {message}'
    env['RCUTILS_COLORIZED_OUTPUT'] = '0'
    proc = NodeProcess(segmentation_node_command(
        ['-r', f'__ns:={ns}', '-r', f'__node:={name}', '-p', f'model_file_path:={model}', '-p',
         'num_threads:=1', '-p', f'image_transport:={transport}', '-p',
         'diagnostics_period:=0.2']), env)
    h = Harness(ns)
    try:
        assert proc.ready.wait(timeout=60), '\n'.join(proc.lines)
        compressed = transport == 'compressed'
        masks = {}
        h.client.create_subscription(Image, 'segmentation/mask',
                                     lambda m: masks.__setitem__(m.header.stamp.sec, m), 10)
        diag = h.collect(DiagnosticArray, '/diagnostics')
        pub = h.client.create_publisher(CompressedImage if compressed else Image,
                                        'image/compressed' if compressed else 'image', 10)
        assert h.wait_for_subscribers(pub, timeout=30)
        fuzzer = WireFuzzer(seed=30 + compressed)
        # Until the node has seen our mask subscription, it skips frames without decoding.
        sec = 0
        while not masks and sec < 100:
            pub.publish(stamp(fuzzer.good(compressed)[0], sec, 0))
            sec += 1
            h.wait_for(lambda: masks, timeout=0.3)
        assert masks, 'the node never answered'
        assert h.wait_for(lambda: frames_bad(diag, name) is not None, timeout=10)
        bad_before = frames_bad(diag, name)
        log_start = len(proc.lines)
        sent = 0
        start = time.monotonic()
        while time.monotonic() - start < BURST_S:
            msg, _ = fuzzer.compressed() if compressed else fuzzer.raw()
            if decoded_shape(msg) is None:
                pub.publish(stamp(msg, 1000 + sent, 0))
                sent += 1
                time.sleep(max(0.0, start + sent / BURST_HZ - time.monotonic()))
        last = stamp(fuzzer.good(compressed)[0], 5000, 0)
        pub.publish(last)
        assert h.wait_for(lambda: 5000 in masks, timeout=10), 'no answer after the burst'
        # Best effort, depth 1: a few may be lost or replaced; most must have been decoded.
        assert h.wait_for(lambda: frames_bad(diag, name) - bad_before >= sent // 2,
                          timeout=5), (sent, frames_bad(diag, name) - bad_before)
        bad = frames_bad(diag, name) - bad_before
    finally:
        h.close()
        rc = proc.stop()
    assert rc == 0, '\n'.join(proc.lines[-20:])
    burst_log = proc.lines[log_start:]
    node_errors = [line for line in burst_log if line.startswith('[ERROR]') and name in line]
    assert 1 <= len(node_errors) <= 2, (bad, node_errors)
    noise = [line for line in burst_log if not LOG_LINE.match(line)]
    decoder_noise = [line for line in noise if DECODER_LINE.match(line)]
    print(f'{transport}: {sent} bad messages in {BURST_S:g} s at {BURST_HZ:g} Hz, {bad} '
          f'counted bad by the node, {len(node_errors)} node error lines, {len(noise)} other '
          f'lines, {len(decoder_noise)} of them from the decoders')
    # libpng and libjpeg print their own complaints about corrupt data, one or more per frame,
    # straight to fd 2; the node catches them during each decode and puts them in its
    # throttled error instead (issue 8 report).
    assert not decoder_noise, (f'{len(decoder_noise)} unthrottled decoder lines for {bad} bad '
                               f'frames, e.g. {decoder_noise[:3]}')
