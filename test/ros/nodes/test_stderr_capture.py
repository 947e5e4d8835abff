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
Capturing what libpng and libjpeg print to fd 2 during a decode (``nodes/stderr_capture``).

The decoders are real (``cv2.imdecode`` on damaged PNG and JPEG data built here); what the
real stderr receives is checked by running the code in a child process and reading its
stderr, or in-process through pytest's fd-level ``capfd``. The last test runs a real
SegmentationNode (tiny model) on JPEG frames that decode with a libjpeg warning.
"""

import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
import zlib

import cv2
from freespace_seg.nodes import stderr_capture
from freespace_seg.nodes.segmentation_node import ERROR_THROTTLE_S, start_segmentation_node
from freespace_seg.nodes.stderr_capture import (capture_decoder_output, decode_capturing,
                                                DECODER_LINE)
from freespace_seg.perception.image_codec import compressed_to_rgb, image_to_array, ImageCodecError
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image
from support import green_red_image, REPO, write_tiny_model
from support.ros import Harness, unique_namespace

IDAT_CHECK = 'libpng error: IDAT: incorrect data check'
EXTRANEOUS = re.compile(r'Corrupt JPEG data: \d+ extraneous bytes before marker 0xd9')


def _picture():
    return (np.arange(12 * 16 * 3) % 251).astype(np.uint8).reshape(12, 16, 3)


def corrupt_png():
    """Return a PNG whose zlib checksum is wrong (chunk CRC fixed): libpng errors out."""
    png = cv2.imencode('.png', _picture())[1].tobytes()
    pos = 8
    while True:
        length, kind = struct.unpack('>I4s', png[pos:pos + 8])
        if kind == b'IDAT':
            body = bytearray(png[pos + 8:pos + 8 + length])
            body[-1] ^= 0xFF  # the last byte of the Adler-32
            chunk = png[pos:pos + 8] + bytes(body) + \
                struct.pack('>I', zlib.crc32(b'IDAT' + bytes(body)) & 0xFFFFFFFF)
            return png[:pos] + chunk + png[pos + 12 + length:]
        pos += 12 + length


def jpeg_with_extraneous_bytes(rgb=None):
    """Return a JPEG with padding before its end marker: it decodes, libjpeg warns."""
    bgr = _picture() if rgb is None else cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    jpg = cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
    return jpg[:-2] + b'\0' * 10 + jpg[-2:]


def imdecode(data):
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def same_file(a, b):
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def run_child(code):
    """Run ``code`` in a child Python that imports this package; return its outputs."""
    path = REPO + os.pathsep + os.environ.get('PYTHONPATH', '')
    env = dict(os.environ, PYTHONPATH=path, RCUTILS_COLORIZED_OUTPUT='0',
               RCUTILS_CONSOLE_OUTPUT_FORMAT='[{severity}] [{name}]: {message}')
    env.pop('RCUTILS_LOGGING_USE_STDOUT', None)
    return subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_c_level_write_and_a_real_decoder_error_are_captured(capfd):
    capfd.readouterr()
    before = os.fstat(2)
    with capture_decoder_output() as captured:
        os.write(2, b'libpng warning: written to fd 2 by hand\n')
        assert imdecode(corrupt_png()) is None
    assert same_file(os.fstat(2), before)
    assert captured.lines[0] == 'libpng warning: written to fd 2 by hand'
    assert IDAT_CHECK in captured.lines
    assert all(DECODER_LINE.match(line) for line in captured.lines)
    assert captured.passed_on == 0
    assert 'libpng' not in capfd.readouterr().err


def test_decode_capturing_returns_warnings_and_explains_failures(capfd):
    capfd.readouterr()
    warned = CompressedImage(format='jpeg', data=jpeg_with_extraneous_bytes())
    rgb, lines = decode_capturing(compressed_to_rgb, warned)
    assert rgb.shape == (12, 16, 3)
    assert len(lines) == 1 and EXTRANEOUS.fullmatch(lines[0]), lines
    broken = CompressedImage(format='png', data=corrupt_png())
    with pytest.raises(ImageCodecError) as info:
        decode_capturing(compressed_to_rgb, broken)
    assert re.fullmatch(r'CompressedImage: could not decode \d+ bytes as png \(.*\)',
                        str(info.value)), str(info.value)
    assert IDAT_CHECK in str(info.value)
    # A clean frame: same pixels as without the capture, no lines.
    good = CompressedImage(format='png', data=cv2.imencode('.png', _picture())[1].tobytes())
    rgb, lines = decode_capturing(compressed_to_rgb, good)
    assert lines == [] and np.array_equal(rgb, compressed_to_rgb(good))
    err = capfd.readouterr().err
    assert 'libpng' not in err and 'Corrupt JPEG' not in err, err


CHILD_WRITE_BACK = r"""
import json, os, threading
import cv2, numpy as np
import rclpy.logging
from freespace_seg.nodes.stderr_capture import capture_decoder_output

CORRUPT_PNG = bytes.fromhex('@PNG@')
inside, logged = threading.Event(), threading.Event()

def other_thread():
    inside.wait()
    rclpy.logging.get_logger('other_thread').warning('logged during the window')
    logged.set()

thread = threading.Thread(target=other_thread)
thread.start()
with capture_decoder_output() as captured:
    os.write(2, b'plain text from C\n')
    cv2.imdecode(np.frombuffer(CORRUPT_PNG, np.uint8), cv2.IMREAD_COLOR)
    inside.set()
    logged.wait()
    os.write(2, b'no newline at the end')
thread.join()
os.write(2, b'|after the window\n')
print(json.dumps(captured.lines))
"""


def test_other_output_reaches_the_real_stderr_unchanged():
    proc = run_child(CHILD_WRITE_BACK.replace('@PNG@', corrupt_png().hex()))
    assert proc.returncode == 0, proc.stderr
    lines = json.loads(proc.stdout)
    assert IDAT_CHECK in lines and all(DECODER_LINE.match(line) for line in lines), lines
    assert re.fullmatch(r'plain text from C\n'
                        r'\[WARN\] \[other_thread\]: logged during the window\n'
                        r'no newline at the end\|after the window\n', proc.stderr), proc.stderr


def test_fd2_is_restored_when_the_body_raises(capfd):
    capfd.readouterr()
    before = os.fstat(2)
    with pytest.raises(RuntimeError, match='inside the window'):
        with capture_decoder_output() as captured:
            os.write(2, b'libpng warning: before the exception\nother text\n')
            raise RuntimeError('inside the window')
    assert same_file(os.fstat(2), before)
    assert captured.lines == ['libpng warning: before the exception']
    os.write(2, b'after the window\n')
    assert capfd.readouterr().err == 'other text\nafter the window\n'


def test_nested_windows_keep_their_own_lines(capfd):
    capfd.readouterr()
    before = os.fstat(2)
    with capture_decoder_output() as outer:
        os.write(2, b'libpng warning: outer\n')
        with capture_decoder_output() as inner:
            os.write(2, b'libpng warning: inner\nforeign\n')
            assert imdecode(corrupt_png()) is None
        os.write(2, b'Premature end of JPEG file\n')
    assert same_file(os.fstat(2), before)
    assert inner.lines[0] == 'libpng warning: inner' and IDAT_CHECK in inner.lines
    assert outer.lines == ['libpng warning: outer', 'Premature end of JPEG file']
    assert capfd.readouterr().err == 'foreign\n'


def wait_until(predicate, timeout=10.0):
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass; return its value."""
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.001)
    return predicate()


class WatchedLock:
    """A reentrant lock that counts the threads waiting to take it."""

    def __init__(self):
        self._lock = threading.RLock()
        self._count = threading.Lock()
        self.waiting = 0

    def __enter__(self):
        with self._count:
            self.waiting += 1
        self._lock.acquire()
        with self._count:
            self.waiting -= 1
        return self

    def __exit__(self, *exc):
        self._lock.release()


def test_windows_of_two_threads_take_turns(monkeypatch):
    first_inside, second_inside = threading.Event(), threading.Event()
    results = {}
    # The windows' process-wide lock, watched: the positive event is the other thread
    # waiting for it while this window is open.
    lock = WatchedLock()
    monkeypatch.setattr(stderr_capture, '_lock', lock)

    def second():
        first_inside.wait()
        with capture_decoder_output() as captured:
            second_inside.set()
            os.write(2, b'libpng warning: second\n')
        results['second'] = captured.lines

    thread = threading.Thread(target=second)
    thread.start()
    with capture_decoder_output() as captured:
        first_inside.set()
        # The other thread must wait for this window to close before it opens its own.
        results['waited'] = wait_until(lambda: lock.waiting == 1)
        results['entered early'] = second_inside.is_set()
        os.write(2, b'libpng warning: first\n')
    thread.join(timeout=10)
    assert results['waited'] and not results['entered early']
    assert captured.lines == ['libpng warning: first']
    assert results['second'] == ['libpng warning: second']


CHILD_CRASH = r"""
import faulthandler
from freespace_seg.nodes.ros_util import spin_node
from freespace_seg.nodes.stderr_capture import capture_decoder_output

def crash_while_capturing():
    with capture_decoder_output():
        faulthandler._sigsegv()

spin_node(crash_while_capturing)
"""


def test_a_crash_inside_a_window_still_prints_the_stacks():
    pytest.importorskip('rclpy', reason='needs a ROS 2 runtime (rclpy)')
    proc = run_child('import resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n' +
                     CHILD_CRASH)
    assert proc.returncode != 0
    assert 'Fatal Python error: Segmentation fault' in proc.stderr, proc.stderr
    assert 'crash_while_capturing' in proc.stderr, proc.stderr


def test_node_uses_frames_that_decode_with_warnings_and_logs_them_throttled(
        ros_init, tmp_path, capfd):
    ns = unique_namespace('stderr')
    node = start_segmentation_node(namespace=ns, parameter_overrides=[
        Parameter('model_file_path', value=write_tiny_model(tmp_path)),
        Parameter('num_threads', value=1), Parameter('image_transport', value='compressed'),
        Parameter('input_qos', value='DEFAULT')])
    h = Harness(ns, node)
    try:
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        masks = {}
        h.client.create_subscription(
            Image, 'segmentation/mask',
            lambda m: masks.__setitem__(m.header.stamp.sec, image_to_array(m).copy()),
            reliable)
        pub = h.client.create_publisher(CompressedImage, 'image/compressed', reliable)
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('segmentation/mask'))
        rgb = green_red_image(64, 48, free_rows=20)
        truth = rgb[..., 1] > rgb[..., 0]
        capfd.readouterr()
        start = time.monotonic()
        frames = 4
        for sec in range(frames):
            msg = CompressedImage(format='jpeg', data=jpeg_with_extraneous_bytes(rgb))
            msg.header.stamp.sec = sec
            pub.publish(msg)
            assert h.wait_for(lambda: sec in masks), f'no mask for frame {sec}'
        elapsed = time.monotonic() - start
        # Every frame was used (segmented right), none counted bad, each counted as warned.
        assert all(((masks[sec] == 1) == truth).mean() > 0.9 for sec in range(frames))
        assert (node.processed, node.bad_frames, node.decoder_warnings) == (frames, 0, frames)
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert values['frames_decoder_warnings'] == str(frames)
    finally:
        h.close()
    err = capfd.readouterr().err.splitlines()
    warnings = [line for line in err if f'decoder warnings on {ns}/image/compressed' in line]
    assert 1 <= len(warnings) <= int(elapsed / ERROR_THROTTLE_S) + 1, warnings
    assert EXTRANEOUS.search(warnings[0]), warnings[0]
    assert not [line for line in err if DECODER_LINE.match(line)], err
