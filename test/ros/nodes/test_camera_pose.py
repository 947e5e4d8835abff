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
CameraPoseSource's TF paths (``nodes/camera_pose``) against a stub of the tf2_ros Python API.

tf2_ros cannot be installed here, so each test puts a small module named ``tf2_ros`` into
``sys.modules`` (monkeypatch, undone after the test). It follows the documented API:
``Buffer()``, ``Buffer.set_transform(transform, authority)``,
``Buffer.lookup_transform(target_frame, source_frame, time, timeout=Duration())`` returning a
geometry_msgs/TransformStamped, ``TransformListener(buffer, node)``, and the exceptions
``TransformException`` with its subclasses ``LookupException`` (a frame is unknown),
``ConnectivityException`` (both frames known, no path) and ``ExtrapolationException`` (the
requested time lies outside the buffered data). Everything around it is real: the rclpy node
and its logger, rclpy Time/Duration, the geometry_msgs and builtin_interfaces messages, and
CameraMount for the REP 103 pose the camera_* parameters describe.
"""

import math
import sys
import types

from builtin_interfaces.msg import Time as TimeMsg
from freespace_seg.ground.geometry import CameraMount
from freespace_seg.nodes.camera_pose import CameraPoseSource
from freespace_seg.nodes.segmentation_node import start_segmentation_node
from geometry_msgs.msg import TransformStamped
import numpy as np
import pytest
from rclpy.duration import Duration
from rclpy.parameter import Parameter
from rclpy.time import Time
from support import write_tiny_model
from support.ros import unique_namespace

OPTICAL = 'front_camera_optical_frame'
BASE = 'base_footprint'


def make_tf2_ros():
    """Return a fresh stand-in module for tf2_ros (documented Python API, direct edges only)."""
    tf2 = types.ModuleType('tf2_ros')

    class TransformException(Exception):
        pass

    class LookupException(TransformException):
        pass

    class ConnectivityException(TransformException):
        pass

    class ExtrapolationException(TransformException):
        pass

    class Buffer:

        def __init__(self, cache_time=None, node=None):
            self.samples = {}  # (parent, child) -> [(nanoseconds, TransformStamped)]
            self.calls = []
            tf2.buffers.append(self)

        def set_transform(self, transform, authority):
            key = (transform.header.frame_id, transform.child_frame_id)
            stamp = Time.from_msg(transform.header.stamp).nanoseconds
            self.samples.setdefault(key, []).append((stamp, transform))
            self.samples[key].sort(key=lambda s: s[0])
            return True

        def lookup_transform(self, target_frame, source_frame, time, timeout=Duration()):
            self.calls.append((target_frame, source_frame, time, timeout))
            known = {frame for edge in self.samples for frame in edge}
            for frame in (target_frame, source_frame):
                if frame not in known:
                    raise LookupException(
                        f'"{frame}" passed to lookupTransform argument does not exist.')
            samples = self.samples.get((target_frame, source_frame))
            if not samples:
                raise ConnectivityException(
                    f'Could not find a connection between "{target_frame}" and '
                    f'"{source_frame}" because they are not part of the same tree.')
            want = time.nanoseconds
            if want == 0:
                return samples[-1][1]
            for stamp, transform in samples:
                if stamp == want:
                    return transform
            side = 'future' if want > samples[-1][0] else 'past'
            raise ExtrapolationException(
                f'Lookup would require extrapolation into the {side}. Requested time '
                f'{want * 1e-9:.6f} but the latest data is at time {samples[-1][0] * 1e-9:.6f}, '
                f'when looking up transform from frame [{source_frame}] to frame '
                f'[{target_frame}]')

    class TransformListener:

        def __init__(self, buffer, node, *, spin_thread=False, qos=None, static_qos=None):
            self.buffer = buffer
            self.node = node
            tf2.listeners.append(self)

    tf2.buffers = []
    tf2.listeners = []
    for cls in (TransformException, LookupException, ConnectivityException,
                ExtrapolationException, Buffer, TransformListener):
        setattr(tf2, cls.__name__, cls)
    return tf2


def quaternion_multiply(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def optical_quaternion(roll, pitch, yaw):
    """(x, y, z, w) of the optical frame in the base for a body roll/pitch/yaw (REP 103)."""
    def axis(ux, uy, uz, angle):
        s = math.sin(angle / 2)
        return (ux * s, uy * s, uz * s, math.cos(angle / 2))
    body = quaternion_multiply(axis(0, 0, 1, yaw),
                               quaternion_multiply(axis(0, 1, 0, pitch), axis(1, 0, 0, roll)))
    # camera body (x fwd, y left, z up) -> optical (z fwd, x right, y down): the usual
    # rpy (-pi/2, 0, -pi/2) of a *_optical_frame under its *_link.
    return quaternion_multiply(body, (-0.5, 0.5, -0.5, 0.5))


def transform_msg(parent, child, sec, nanosec, xyz, q):
    t = TransformStamped()
    t.header.frame_id = parent
    t.header.stamp = TimeMsg(sec=sec, nanosec=nanosec)
    t.child_frame_id = child
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
    r = t.transform.rotation
    r.x, r.y, r.z, r.w = q
    return t


@pytest.fixture
def tf2(monkeypatch):
    module = make_tf2_ros()
    monkeypatch.setitem(sys.modules, 'tf2_ros', module)
    return module


class RecordingLogger:
    """Forwards to the node's real logger and keeps (level, message) in ``logged``."""

    def __init__(self, real, logged):
        self._real = real
        self._logged = logged

    def info(self, message, **kwargs):
        self._logged.append(('info', message))
        return self._real.info(message, **kwargs)

    def warning(self, message, **kwargs):
        self._logged.append(('warning', message))
        return self._real.warning(message, **kwargs)

    warn = warning

    def error(self, message, **kwargs):
        self._logged.append(('error', message))
        return self._real.error(message, **kwargs)


@pytest.fixture
def node(ros_init, monkeypatch):
    """Yield a real rclpy node whose logger also records (level, message) in ``node.logged``."""
    n = ros_init.create_node('camera_pose_test', namespace=unique_namespace('pose'))
    n.logged = []
    recorder = RecordingLogger(n.get_logger(), n.logged)
    monkeypatch.setattr(n, 'get_logger', lambda: recorder)
    yield n
    n.destroy_node()


def levels(node, level):
    return [m for lv, m in node.logged if lv == level]


def test_successful_lookup_gives_the_tf_pose_at_the_image_stamp(tf2, node):
    source = CameraPoseSource(node, True, BASE, 0.2)
    assert len(tf2.listeners) == 1
    assert tf2.listeners[0].buffer is tf2.buffers[0] and tf2.listeners[0].node is node
    assert source.status.startswith('TF ' + BASE)
    pitch = 0.3
    tf2.buffers[0].set_transform(transform_msg(
        BASE, OPTICAL, 12, 345_000_000, (0.1, -0.05, 0.4),
        optical_quaternion(0.0, pitch, 0.0)), 'test')

    m = source.lookup(OPTICAL, TimeMsg(sec=12, nanosec=345_000_000))

    assert m.shape == (4, 4)
    np.testing.assert_allclose(m[:3, 3], [0.1, -0.05, 0.4])
    # Pitched down: the optical axis (z) points forward and down, image x to the right
    # (-y in the base), image y (down) forward-ish and down.
    np.testing.assert_allclose(m[:3, 2], [math.cos(pitch), 0.0, -math.sin(pitch)], atol=1e-12)
    np.testing.assert_allclose(m[:3, 0], [0.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(m[:3, 1], [-math.sin(pitch), 0.0, -math.cos(pitch)], atol=1e-12)
    # ... i.e. the same pose as camera_pitch=+0.3 in the parameters (positive tilts down).
    np.testing.assert_allclose(
        m, CameraMount(x=0.1, y=-0.05, z=0.4, pitch=pitch).transform_base_from_optical(),
        atol=1e-12)
    [(target, frame, time, timeout)] = tf2.buffers[0].calls
    assert (target, frame) == (BASE, OPTICAL)
    assert isinstance(time, Time) and time.nanoseconds == 12_345_000_000
    assert isinstance(timeout, Duration) and timeout.nanoseconds == 200_000_000
    assert levels(node, 'warning') == [] and levels(node, 'info') == []


def test_roll_pitch_yaw_and_translation_all_come_from_the_transform(tf2, node):
    source = CameraPoseSource(node, True, BASE, 0.05)
    rpy = (0.05, 0.4, -0.6)
    tf2.buffers[0].set_transform(transform_msg(
        BASE, OPTICAL, 3, 0, (0.25, 0.12, 0.33), optical_quaternion(*rpy)), 'test')
    m = source.lookup(OPTICAL, TimeMsg(sec=3, nanosec=0))
    mount = CameraMount(x=0.25, y=0.12, z=0.33, roll=rpy[0], pitch=rpy[1], yaw=rpy[2])
    np.testing.assert_allclose(m, mount.transform_base_from_optical(), atol=1e-12)


@pytest.mark.parametrize('exists', [(), (OPTICAL,), (BASE, OPTICAL)],
                         ids=['no_frames', 'no_base', 'not_connected'])
def test_missing_tf_falls_back_to_the_parameters_and_warns_once(tf2, node, exists):
    buffer_frames = {(): [], (OPTICAL,): [('odom', OPTICAL)],
                     (BASE, OPTICAL): [('odom', OPTICAL), (BASE, 'wheel')]}[exists]
    source = CameraPoseSource(node, True, BASE, 0.05)
    for parent, child in buffer_frames:
        tf2.buffers[0].set_transform(
            transform_msg(parent, child, 1, 0, (0, 0, 0), (0, 0, 0, 1)), 'test')
    for i in range(5):
        assert source.lookup(OPTICAL, TimeMsg(sec=1 + i, nanosec=0)) is None
    assert len(tf2.buffers[0].calls) == 5  # every frame still tries TF
    [warning] = levels(node, 'warning')
    assert f'no TF {BASE} <- {OPTICAL}' in warning
    reason = 'not part of the same tree' if len(exists) == 2 else 'does not exist'
    assert reason in warning and 'falling back' in warning
    assert source.status.startswith('camera_* parameters') and reason in source.status
    assert levels(node, 'info') == []


def test_after_tf_comes_back_the_transform_is_used_again(tf2, node):
    source = CameraPoseSource(node, True, BASE, 0.05)
    buffer = tf2.buffers[0]
    assert source.lookup(OPTICAL, TimeMsg(sec=1, nanosec=0)) is None
    assert source.lookup(OPTICAL, TimeMsg(sec=2, nanosec=0)) is None
    q = optical_quaternion(0.0, 0.2, 0.0)
    for sec in (3, 4, 5):
        buffer.set_transform(transform_msg(BASE, OPTICAL, sec, 0, (0.0, 0.0, 0.3), q), 'test')
    expected = CameraMount(z=0.3, pitch=0.2).transform_base_from_optical()
    for sec in (3, 4, 5):
        np.testing.assert_allclose(source.lookup(OPTICAL, TimeMsg(sec=sec, nanosec=0)),
                                   expected, atol=1e-12)
    assert len(levels(node, 'warning')) == 1
    [back] = levels(node, 'info')
    assert back == f'TF is back: TF {BASE} <- {OPTICAL} at the image stamp'
    assert source.status == f'TF {BASE} <- {OPTICAL} at the image stamp'
    # A second outage is a new episode: warned once more, then recovered once more.
    assert source.lookup('other_optical_frame', TimeMsg(sec=5, nanosec=0)) is None
    assert source.lookup('other_optical_frame', TimeMsg(sec=5, nanosec=0)) is None
    assert len(levels(node, 'warning')) == 2
    assert 'other_optical_frame' in levels(node, 'warning')[1]
    assert source.lookup(OPTICAL, TimeMsg(sec=5, nanosec=0)) is not None
    assert len(levels(node, 'info')) == 2


def test_extrapolation_is_a_tf_failure_like_any_other(tf2, node):
    source = CameraPoseSource(node, True, BASE, 0.05)
    buffer = tf2.buffers[0]
    q = optical_quaternion(0.0, 0.3, 0.0)
    buffer.set_transform(transform_msg(BASE, OPTICAL, 10, 0, (0.0, 0.0, 0.2), q), 'test')
    # Images newer (and older) than the newest transform: extrapolation -> parameters.
    assert source.lookup(OPTICAL, TimeMsg(sec=10, nanosec=500_000_000)) is None
    assert source.lookup(OPTICAL, TimeMsg(sec=11, nanosec=0)) is None
    assert source.lookup(OPTICAL, TimeMsg(sec=9, nanosec=0)) is None
    [warning] = levels(node, 'warning')
    assert 'extrapolation into the future' in warning and f'no TF {BASE} <- {OPTICAL}' in warning
    assert 'extrapolation' in source.status
    buffer.set_transform(transform_msg(BASE, OPTICAL, 11, 0, (0.0, 0.0, 0.2), q), 'test')
    np.testing.assert_allclose(source.lookup(OPTICAL, TimeMsg(sec=11, nanosec=0)),
                               CameraMount(z=0.2, pitch=0.3).transform_base_from_optical(),
                               atol=1e-12)
    assert len(levels(node, 'info')) == 1
    assert buffer.calls[-1][2].nanoseconds == 11_000_000_000  # not "latest" (time 0)


def test_use_tf_false_never_touches_tf2(tf2, node):
    source = CameraPoseSource(node, False, BASE, 0.05)
    assert tf2.buffers == [] and tf2.listeners == []
    assert source.lookup(OPTICAL, TimeMsg(sec=1, nanosec=0)) is None
    assert source.status == 'camera_* parameters (use_tf is false)'
    assert node.logged == []


def test_segmentation_node_passes_base_frame_and_tf_timeout(tf2, ros_init, tmp_path):
    model = write_tiny_model(tmp_path, 64, 36)
    seg = start_segmentation_node(namespace=unique_namespace('tfpose'), parameter_overrides=[
        Parameter('model_file_path', value=model), Parameter('use_tf', value=True),
        Parameter('base_frame', value=BASE), Parameter('tf_timeout', value=0.3)])
    try:
        [buffer] = tf2.buffers
        assert tf2.listeners[0].node is seg
        assert seg.pose_source.lookup(OPTICAL, TimeMsg(sec=2, nanosec=0)) is None
        target, frame, _, timeout = buffer.calls[0]
        assert (target, frame, timeout.nanoseconds) == (BASE, OPTICAL, 300_000_000)
        values = {kv.key: kv.value for kv in seg.diagnostics_status().values}
        assert values['camera_pose'].startswith(f'camera_* parameters: no TF {BASE} <- ')
    finally:
        seg.destroy_node()


def test_segmentation_node_checks_the_tf_mount_against_the_training_ranges(
        tf2, ros_init, tmp_path):
    data = {'camera_height': [0.1, 0.5], 'camera_pitch': [0.0, 0.6]}
    model = write_tiny_model(tmp_path, 64, 36, card_overrides={'training': {'data': data}})
    seg = start_segmentation_node(namespace=unique_namespace('tfmount'), parameter_overrides=[
        Parameter('model_file_path', value=model), Parameter('use_tf', value=True),
        Parameter('base_frame', value=BASE)])
    try:
        assert seg.mount_note is None   # the parameters' 0.25 m, 0.3 rad are inside
        # A mast camera: 1.1 m up, pitched 0.7 rad down, as TF gives it.
        tf2.buffers[0].set_transform(transform_msg(
            BASE, OPTICAL, 3, 0, (0.1, 0.0, 1.1), optical_quaternion(0.0, 0.7, 0.0)), 'test')
        transform = seg.pose_source.lookup(OPTICAL, TimeMsg(sec=3, nanosec=0))
        seg.check_tf_mount(transform)
        assert 'camera_height 1.1 m' in seg.mount_note
        assert 'camera_pitch 0.7 rad' in seg.mount_note
        # Back on a low mount: the note clears.
        low = CameraMount(x=0.0, y=0.0, z=0.3, pitch=0.2).transform_base_from_optical()
        seg.check_tf_mount(low)
        assert seg.mount_note is None
    finally:
        seg.destroy_node()
