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

"""segmentation_node over real rclpy topics, with a tiny real ONNX model built in the test."""

import os
import signal
import subprocess
import sys
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from freespace_seg.nodes.msgs import array_to_compressed, array_to_image
from freespace_seg.nodes.params import SEGMENTATION_PARAMS
from freespace_seg.nodes.ros_util import StartupError
from freespace_seg.nodes.segmentation_node import start_segmentation_node
from freespace_seg.perception.engines.onnxruntime import GPU_PROVIDERS
from freespace_seg.perception.engines.tensorrt import tensorrt_unavailable_reason
from freespace_seg.perception.image_codec import image_to_array
from freespace_seg.tools.child import node_environment
import numpy as np
import onnxruntime as ort
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import CompressedImage, Image
from support import green_red_image, REPO, TINY_PALETTE, write_tiny_model
from support.ros import Harness, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

# Camera-sized frames between processes need the large-image Fast DDS profile at both ends:
# without it in this process too, no 1280x720 frame it publishes reaches a node process.
# Set before rclpy makes this process's participant; a profile chosen by the caller is kept.
os.environ.setdefault('FASTDDS_DEFAULT_PROFILES_FILE',
                      node_environment()['FASTDDS_DEFAULT_PROFILES_FILE'])

OUTPUTS = {
    'segmentation/mask': 'mono8',
    'segmentation/colored_mask': 'rgb8',
    'segmentation/overlay': 'rgb8',
    'free_space/mask': 'mono8',
}


def make_node(namespace, model, **params):
    overrides = [Parameter('model_file_path', value=model), Parameter('num_threads', value=1)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return start_segmentation_node(namespace=namespace, parameter_overrides=overrides)


@pytest.fixture
def rig(ros_init, tiny_model, request):
    """Start a node in its own namespace plus a harness; params via indirect parametrize."""
    params = getattr(request, 'param', {})
    ns = unique_namespace()
    node = make_node(ns, tiny_model, **params)
    h = Harness(ns, node)
    h.node = node
    yield h
    h.close()


def stamped(msg, sec, frame='camera_optical_frame'):
    msg.header.stamp.sec = sec
    msg.header.stamp.nanosec = 123
    msg.header.frame_id = frame
    return msg


def test_raw_image_gives_every_output_at_camera_resolution(rig):
    boxes = {t: rig.collect(Image, t) for t in OUTPUTS}
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: all(rig.node.wants(t) for t in OUTPUTS))
    w, h = 160, 90
    rgb = green_red_image(w, h, free_rows=30)
    pub.publish(stamped(array_to_image(rgb, 'rgb8'), 42))
    assert rig.wait_for(lambda: all(boxes[t] for t in OUTPUTS)), \
        {t: len(b) for t, b in boxes.items()}
    for topic, encoding in OUTPUTS.items():
        msg = boxes[topic][0]
        assert (msg.width, msg.height, msg.encoding) == (w, h, encoding), topic
        assert msg.header.stamp.sec == 42 and msg.header.stamp.nanosec == 123, topic
        assert msg.header.frame_id == 'camera_optical_frame', topic
    truth = rgb[..., 1] > rgb[..., 0]
    mask = image_to_array(boxes['segmentation/mask'][0])
    free = image_to_array(boxes['free_space/mask'][0])
    assert set(np.unique(mask)) == {0, 1}
    inter = np.logical_and(free == 255, truth).sum()
    union = np.logical_or(free == 255, truth).sum()
    assert inter / union > 0.95
    colored = image_to_array(boxes['segmentation/colored_mask'][0])
    np.testing.assert_array_equal(colored[-1, 0], TINY_PALETTE[1])
    np.testing.assert_array_equal(colored[0, 0], TINY_PALETTE[0])
    overlay = image_to_array(boxes['segmentation/overlay'][0])
    expected = (0.5 * rgb[0, 0] + 0.5 * np.array(TINY_PALETTE[0])).round()
    np.testing.assert_allclose(overlay[0, 0], expected, atol=1)


@pytest.mark.parametrize('rig', [{'image_transport': 'compressed'}], indirect=True)
def test_compressed_input(rig):
    box = rig.collect(Image, 'free_space/mask')
    pub = rig.publisher(CompressedImage, 'image/compressed')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: rig.node.wants('free_space/mask'))
    rgb = green_red_image(128, 96, free_rows=48)
    pub.publish(stamped(array_to_compressed(rgb, 'jpeg', quality=95), 7))
    assert rig.wait_for(lambda: box)
    free = image_to_array(box[0])
    assert (free.shape, box[0].header.stamp.sec) == ((96, 128), 7)
    assert free[-1].min() == 255 and free[0].max() == 0


def test_bad_messages_never_stop_the_node(rig):
    box = rig.collect(Image, 'segmentation/mask')
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: rig.node.wants('segmentation/mask'))
    good = green_red_image(64, 48, free_rows=10)
    bad = []
    m = array_to_image(good, 'rgb8')
    m.step = 10                                  # step shorter than a row
    bad.append(m)
    m = array_to_image(good, 'rgb8')
    m.data = bytes(m.data)[:100]                 # truncated data
    bad.append(m)
    m = array_to_image(good, 'rgb8')
    m.encoding = '32FC7'                         # unknown encoding
    bad.append(m)
    m = array_to_image(good, 'rgb8')
    m.width, m.height = 0, 0                     # empty image
    bad.append(m)
    for i, msg in enumerate(bad):
        pub.publish(stamped(msg, 100 + i))
        # One at a time, so the newest-frame slot cannot merge them.
        assert rig.wait_for(lambda: rig.node.bad_frames > i, timeout=5.0), i
    pub.publish(stamped(array_to_image(good, 'rgb8'), 200))
    assert rig.wait_for(lambda: any(x.header.stamp.sec == 200 for x in box))
    assert rig.node.bad_frames == len(bad)
    assert 'bad image' in rig.node.last_error


@pytest.mark.parametrize('rig', [{'image_transport': 'compressed'}], indirect=True)
def test_corrupt_jpeg_then_good_frame(rig):
    box = rig.collect(Image, 'segmentation/mask')
    pub = rig.publisher(CompressedImage, 'image/compressed')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: rig.node.wants('segmentation/mask'))
    corrupt = CompressedImage(format='jpeg', data=b'\xff\xd8\xff\xe0 definitely not a jpeg')
    pub.publish(stamped(corrupt, 1))
    assert rig.wait_for(lambda: rig.node.bad_frames == 1)
    pub.publish(stamped(array_to_compressed(green_red_image(64, 48, 8), 'png'), 2))
    assert rig.wait_for(lambda: box)
    assert box[0].header.stamp.sec == 2


def send_and_wait_taken(rig, pub, msg):
    """
    Publish ``msg`` and wait until the worker has taken it (nothing waits for it any more).

    The worker takes frames one at a time, in order: once it has taken a frame it is done
    with every frame before it, the event that the checks of what it did with those frames
    wait for. The frame it has just taken may still be in its hands, so a check sends a bad
    frame last (:func:`flush_frame`): were it computed, it would count as bad, not processed.
    """
    node = rig.node
    before = node.received
    pub.publish(msg)
    assert rig.wait_for(lambda: node.received > before and not node.frame_waiting)


def flush_frame(sec):
    """Return a frame the node cannot decode: only ``bad_frames`` counts it, if computed."""
    msg = array_to_image(green_red_image(64, 48, 8), 'rgb8')
    msg.encoding = '32FC7'
    return stamped(msg, sec)


def test_nothing_is_computed_without_subscribers(rig):
    node = rig.node
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    for i in range(3):
        send_and_wait_taken(rig, pub, stamped(array_to_image(green_red_image(64, 48, 8),
                                                             'rgb8'), i))
    send_and_wait_taken(rig, pub, flush_frame(3))
    # The worker took frame 3, so it was done with frames 0 to 2: none was computed.
    assert node.received == 4 and node.processed == 0
    # Then a subscriber and a frame for it: computed and delivered (it also shows that the
    # node computes at all), the only frame computed.
    box = rig.collect(Image, 'segmentation/mask')
    assert rig.wait_for(lambda: node.wants('segmentation/mask'))
    pub.publish(stamped(array_to_image(green_red_image(64, 48, 8), 'rgb8'), 4))
    assert rig.wait_for(lambda: box and node.processed >= 1)
    assert [m.header.stamp.sec for m in box] == [4] and node.processed == 1


def test_only_the_newest_frame_is_processed_and_drops_are_counted(rig):
    box = rig.collect(Image, 'segmentation/mask', depth=100)
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: rig.node.wants('segmentation/mask'))
    big = array_to_image(green_red_image(1280, 720, 200), 'rgb8')
    n = 40
    for i in range(n):
        pub.publish(stamped(big, i))
    # The newest frame always gets through.
    assert rig.wait_for(lambda: box and box[-1].header.stamp.sec == n - 1, timeout=30)
    # Each frame that reached the node was processed or counted as dropped (the depth-1
    # subscription may also discard frames inside DDS before they reach the node).
    node = rig.node
    assert rig.wait_for(lambda: node.processed + node.dropped == node.received)
    assert node.processed < n
    stamps = [m.header.stamp.sec for m in box]
    assert stamps == sorted(stamps)


def test_runtime_parameters_are_validated(rig):
    node = rig.node
    result = node.set_parameters([Parameter('overlay_alpha', value=1.5)])[0]
    assert not result.successful and 'overlay_alpha' in result.reason
    assert node.get_parameter('overlay_alpha').value == 0.5
    result = node.set_parameters([Parameter('overlay_alpha', value=0.8)])[0]
    assert result.successful and node.overlay_alpha == 0.8
    result = node.set_parameters([Parameter('backend', value='tensorrt')])[0]
    assert not result.successful and node.get_parameter('backend').value == 'auto'
    result = node.set_parameters([Parameter('color_palette', value=[0xFF0000])])[0]
    assert not result.successful and '2 classes' in result.reason
    result = node.set_parameters([Parameter('color_palette', value=[0x0000FF, 0x00FF00])])[0]
    assert result.successful
    box = rig.collect(Image, 'segmentation/colored_mask')
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: node.wants('segmentation/colored_mask'))
    pub.publish(stamped(array_to_image(green_red_image(64, 48, 8), 'rgb8'), 5))
    assert rig.wait_for(lambda: box)
    np.testing.assert_array_equal(image_to_array(box[0])[0, 0], [0, 0, 255])


def test_a_mount_outside_the_models_training_ranges_is_warned_about(ros_init, tmp_path):
    data = {'camera_height': [0.1, 0.5], 'camera_pitch': [0.0, 0.6]}
    model = write_tiny_model(tmp_path, card_overrides={'training': {'data': data}})
    node = make_node(unique_namespace(), model, camera_height=1.0)
    try:
        assert 'camera_height 1 m is outside the 0.1-0.5 m' in node.mount_note
        # The package ships a model trained from cameras up to 1.5 m: the warning names it.
        assert 'model_file_path:=' in node.mount_note
        assert node.mount_note.split('model_file_path:=')[1].split(' ')[0].endswith(
            'freespace_lite0_high_int8.onnx.')
        assert node.set_parameters([Parameter('camera_height', value=0.3)])[0].successful
        assert node.mount_note is None
        assert node.set_parameters([Parameter('camera_pitch', value=0.9)])[0].successful
        assert 'camera_pitch 0.9 rad' in node.mount_note
        assert 'model_file_path:=' not in node.mount_note   # no shipped model fits 0.9 rad
    finally:
        node.destroy_node()


def test_diagnostics(rig):
    box = rig.collect(DiagnosticArray, '/diagnostics')
    name = rig.node.get_name()

    def mine():
        return [s for a in box for s in a.status if s.name.startswith(name)
                and rig.node.pipeline.card.model_path in [kv.value for kv in s.values]]
    assert rig.wait_for(mine, timeout=5)
    status = mine()[-1]
    values = {kv.key: kv.value for kv in status.values}
    assert status.level == DiagnosticStatus.WARN and 'no images' in status.message
    for key in ('fps', 'latency_p50_ms', 'latency_p95_ms', 'frames_dropped', 'backend',
                'model'):
        assert key in values
    assert values['backend'] == 'onnxruntime'


def test_invalid_parameters_fail_at_startup(ros_init, tiny_model):
    for params, fragment in [({'overlay_alpha': 2.0}, 'overlay_alpha'),
                             ({'image_transport': 'theora'}, 'image_transport'),
                             ({'num_threads': -1}, 'num_threads'),
                             ({'backend': 'tensorrt'}, 'tensorrt')]:
        with pytest.raises(StartupError) as e:
            make_node(unique_namespace(), tiny_model, **params)
        assert fragment in str(e.value)


# -- every parameter, live: a table derived from SEGMENTATION_PARAMS ---------------------------

def _trt_reason():
    reason = tensorrt_unavailable_reason()
    return None if reason is None else f'switching to tensorrt needs TensorRT and a GPU: {reason}'


def _ort_gpu_reason():
    if any(p in ort.get_available_providers() for p in GPU_PROVIDERS):
        return None
    return 'switching to onnxruntime_gpu needs onnxruntime-gpu and a GPU (CPU build here)'


#: Values the spec alone cannot give. ``valid``: a different value the running node must
#: accept (a callable gets tmp_path); ``invalid``: values it must reject, besides those
#: derived from the spec; ``gpu``: choices that need a GPU, each with a function returning
#: why it cannot run here (None: it can), tested in rows of their own.
SPECIAL = {
    # Another real model (the inverted tiny one); a file that does not exist.
    'model_file_path': {'valid': lambda tmp: write_tiny_model(tmp, name='other', invert=True),
                        'invalid': [lambda tmp: str(tmp / 'missing.onnx')]},
    'backend': {'valid': 'onnxruntime',
                'gpu': {'tensorrt': _trt_reason, 'onnxruntime_gpu': _ort_gpu_reason}},
    # The derived midpoint (32 ONNX Runtime threads) would only load a small CPU.
    'num_threads': {'valid': 2},
    # One colour per class of the tiny model (2); one colour is a valid int_array but wrong.
    'color_palette': {'valid': [0x0000FF, 0x00FF00], 'invalid': [[0xFF0000]]},
    # At most grid_agreement_frames (1 by default); 2 is in range but more than that.
    'grid_agreement_min_free': {'valid': 1, 'invalid': [2]},
}


def _derived_valid(spec, current):
    """Return a value other than ``current`` that ``spec`` allows."""
    gpu = SPECIAL.get(spec.name, {}).get('gpu', {})
    if spec.kind == 'bool':
        return not current
    if spec.choices:
        return next(c for c in spec.choices if c != current and c not in gpu)
    if spec.kind in ('int', 'double'):
        # Halfway to the farther end of the range.
        end = spec.max_value if spec.max_value - current >= current - spec.min_value \
            else spec.min_value
        value = current + (end - current) / 2
        return int(round(value)) if spec.kind == 'int' else float(value)
    if spec.kind == 'string':
        return current + '_changed'
    if spec.kind == 'double_array':
        return [float(v) + 0.5 for v in current]
    raise AssertionError(f'no valid value derived for {spec.name} ({spec.kind})')


def _derived_invalid(spec, valid):
    """Return (label, value) pairs that ``spec`` forbids: range, choices, type, check."""
    bad = []
    if spec.choices:
        bad.append(('not a choice', 'not_a_choice'))
    if spec.kind in ('int', 'double', 'int_array'):
        width = spec.max_value - spec.min_value
        above, below = spec.max_value + max(1, width), spec.min_value - max(1, width)
        if spec.kind == 'double':
            bad += [('above range', float(above)), ('below range', float(below)),
                    ('not finite', float('nan'))]
        elif spec.kind == 'int':
            bad += [('above range', int(above)), ('below range', int(below))]
        else:
            # As long as the valid value, so that only the item's range is wrong.
            bad += [('item above range', [int(above)] + list(valid)[1:]),
                    ('item below range', [int(below)] + list(valid)[1:])]
    if spec.kind == 'double_array':
        bad += [('not finite', [float('nan')] * len(spec.default))]
    if spec.check is not None:
        bad.append(('check', list(spec.default)[:1]))       # grid_origin: one value, not two
    wrong_type = {'string': 1, 'bool': 1, 'int': 1.5, 'double': 'text',
                  'int_array': 'text', 'double_array': 'text'}
    bad.append(('wrong type', wrong_type[spec.kind]))
    return bad


def _param_rows():
    rows = []
    for spec in SEGMENTATION_PARAMS:
        rows.append(pytest.param(spec, None, id=spec.name))
        for choice, reason in SPECIAL.get(spec.name, {}).get('gpu', {}).items():
            rows.append(pytest.param(spec, (choice, reason), id=f'{spec.name}={choice}'))
    return rows


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b)
    return list(a) == list(b) if isinstance(a, (list, tuple)) else a == b


@pytest.mark.parametrize('spec, gpu', _param_rows())
def test_every_parameter_live(ros_init, tiny_model, tmp_path, spec, gpu):
    """
    Each parameter on a running node: valid changes take, invalid and read-only ones do not.

    Valid and invalid values come from the spec (range, choices, kind, check), with the
    explicit ones of SPECIAL where a parameter needs them. Rejected: the reason is given and
    the old value stays, both as the ROS parameter and in the node's own copy.
    """
    if gpu is not None and gpu[1]() is not None:
        pytest.skip(gpu[1]())
    node = make_node(unique_namespace('par'), tiny_model)
    try:
        name = spec.name
        special = SPECIAL.get(name, {})
        old = node.get_parameter(name).value
        old_own = node.params[name]

        def unchanged():
            assert _same(node.get_parameter(name).value, old)
            assert _same(node.params[name], old_own)

        def resolve(v):
            return v(tmp_path) if callable(v) else v
        if gpu is not None:
            valid = gpu[0]
        else:
            valid = resolve(special['valid']) if 'valid' in special \
                else _derived_valid(spec, old)
        assert not _same(valid, old)
        if spec.read_only:
            result = node.set_parameters([Parameter(name, value=valid)])[0]
            assert not result.successful and name in result.reason, result.reason
            unchanged()
            return
        invalid = _derived_invalid(spec, valid)
        invalid += [('special', resolve(v)) for v in special.get('invalid', [])]
        for label, value in invalid:
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful, (label, value)
            assert result.reason.strip(), (label, value)
            unchanged()
        pipeline = node.pipeline
        result = node.set_parameters([Parameter(name, value=valid)])[0]
        assert result.successful, result.reason
        assert _same(node.get_parameter(name).value, valid)
        assert _same(node.params[name], valid)
        # The cheap in-process effects; the ones seen only on the wire have tests below.
        if name in ('model_file_path', 'backend', 'num_threads'):
            assert node.pipeline is not pipeline              # reloaded and swapped in
        if name == 'model_file_path':
            assert node.pipeline.card.model_path == os.path.abspath(valid)
        if name == 'overlay_alpha':
            assert node.overlay_alpha == pytest.approx(valid)
        if name == 'publish_unsubscribed':
            assert node.publish_unsubscribed is valid
        rule_field = {'grid_min_obstacle_run': 'min_run', 'grid_cut_confidence': 'cut_confidence',
                      'grid_mark_confidence': 'mark_confidence',
                      'grid_free_confidence': 'free_confidence',
                      'grid_behind_confidence': 'behind_confidence'}
        if name in rule_field:
            assert _same(getattr(node.grid_rule, rule_field[name]), valid)
        elif name == 'grid_mask_width':
            assert node.grid_mask_width == valid
        elif name.startswith('grid_agreement_'):
            field = name[len('grid_agreement_'):]
            assert _same(getattr(node.grid_agreement, field), valid)
        elif name == 'grid_occlusion_memory':
            assert _same(node.grid_occlusion.memory, valid)
        elif name.startswith('grid_') or name == 'max_range':
            field = {'grid_width': 'width', 'grid_height': 'height',
                     'grid_resolution': 'resolution', 'grid_origin': 'origin',
                     'max_range': 'max_range'}[name]
            assert _same(getattr(node.grid_spec, field), valid)
        if name.startswith('camera_'):
            field = {'camera_height': 'z'}.get(name, name[len('camera_'):])
            assert _same(getattr(node.mount, field), valid)
        if name in ('mask_horizon', 'horizon_margin_deg'):
            assert _same(node.horizon[name == 'horizon_margin_deg'], valid)
    finally:
        node.destroy_node()


def _frame(sec):
    return stamped(array_to_image(green_red_image(64, 48, 8), 'rgb8'), sec)


@pytest.mark.parametrize('rig', [{'input_stale_timeout': 600.0}], indirect=True)
def test_input_stale_timeout_changes_live(rig):
    node = rig.node
    masks = rig.collect(Image, 'segmentation/mask')
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: node.wants('segmentation/mask'))
    pub.publish(_frame(1))
    assert rig.wait_for(lambda: masks)
    assert node.diagnostics_status().level == DiagnosticStatus.OK
    assert node.set_parameters([Parameter('input_stale_timeout', value=0.05)])[0].successful
    # The same quiet input is stale under the new, shorter timeout...
    assert rig.wait_for(lambda: 'stale' in node.diagnostics_status().message, timeout=5)
    assert node.diagnostics_status().level in (DiagnosticStatus.WARN, DiagnosticStatus.ERROR)
    # ...and fresh again under a longer one, without a new frame.
    assert node.set_parameters([Parameter('input_stale_timeout', value=600.0)])[0].successful
    assert node.diagnostics_status().level == DiagnosticStatus.OK


def test_publish_unsubscribed_changes_live(rig):
    """Nobody subscribes: frames are processed only while publish_unsubscribed is true."""
    node = rig.node
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert node.output_topics and node.wanted_outputs == []

    # A frame, then a bad one: once the worker has taken that, it is done with the frame.
    send_and_wait_taken(rig, pub, _frame(1))
    send_and_wait_taken(rig, pub, flush_frame(2))
    assert node.processed == 0
    assert node.set_parameters([Parameter('publish_unsubscribed', value=True)])[0].successful
    pub.publish(_frame(3))
    assert rig.wait_for(lambda: node.processed == 1)
    assert node.set_parameters([Parameter('publish_unsubscribed', value=False)])[0].successful
    send_and_wait_taken(rig, pub, _frame(4))
    send_and_wait_taken(rig, pub, flush_frame(5))
    assert node.received == 5 and node.processed == 1


def test_colored_mask_encoding_changes_live(rig):
    node = rig.node
    box = rig.collect(Image, 'segmentation/colored_mask')
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: node.wants('segmentation/colored_mask'))
    pub.publish(_frame(1))
    assert rig.wait_for(lambda: box)
    assert box[0].encoding == 'rgb8'
    np.testing.assert_array_equal(image_to_array(box[0])[0, 0], TINY_PALETTE[0])
    result = node.set_parameters([Parameter('color_segmentation_mask_encoding', value='bgr8')])
    assert result[0].successful
    pub.publish(_frame(2))
    assert rig.wait_for(lambda: any(m.header.stamp.sec == 2 for m in box))
    msg = [m for m in box if m.header.stamp.sec == 2][0]
    assert msg.encoding == 'bgr8'
    np.testing.assert_array_equal(image_to_array(msg)[0, 0], TINY_PALETTE[0][::-1])
    np.testing.assert_array_equal(image_to_array(msg)[-1, 0], TINY_PALETTE[1][::-1])


# -- the real executable, in its own process ------------------------------------------------

def _node_cmd(*ros_args):
    return [sys.executable, '-m', 'freespace_seg.nodes.segmentation_node', '--ros-args',
            *ros_args]


def _env():
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env['PYTHONUNBUFFERED'] = '1'
    return env


@pytest.mark.parametrize('problem', ['missing', 'corrupt', 'no_card'])
def test_bad_model_file_exits_non_zero_with_a_clear_message(tmp_path, tiny_model, problem):
    path = tiny_model
    if problem == 'missing':
        path = str(tmp_path / 'does_not_exist.onnx')
        expect = 'not found'
    elif problem == 'corrupt':
        with open(path, 'wb') as f:
            f.write(b'garbage')
        expect = 'cannot load ONNX model'
    else:
        os.remove(path[:-5] + '.yaml')
        expect = 'model card not found'
    proc = subprocess.run(_node_cmd('-p', f'model_file_path:={path}'), env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert expect in proc.stderr
    assert 'Traceback' not in proc.stderr


@pytest.mark.parametrize('arg, expect', [
    ('overlay_alpha:=2.0', 'overlay_alpha'),           # outside the descriptor's range
    ('overlay_alpha:=abc', 'overlay_alpha: wrong type'),
    ('overlay_alpha:=1', 'decimal point'),             # an integer for a double
    ('image_transport:=theora', 'image_transport'),    # not one of the allowed values
])
def test_bad_parameter_on_the_command_line_exits_2_with_a_reason(tiny_model, arg, expect):
    proc = subprocess.run(_node_cmd('-p', f'model_file_path:={tiny_model}', '-p', arg),
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert 'invalid parameters' in proc.stderr and expect in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_signals_exit_cleanly(tiny_model, sig):
    proc = subprocess.Popen(_node_cmd('-p', f'model_file_path:={tiny_model}', '-r',
                                      f'__ns:={unique_namespace()}'),
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if 'listening on' in line or not line:
                break
        assert any('listening on' in x for x in lines), ''.join(lines)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert 'Traceback' not in err


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_with_camera_sized_frames_in_flight_exits_cleanly(ros_init, tmp_path, sig):
    """
    SIGINT/SIGTERM while 1280x720 frames stream in at 30 Hz and outputs stream out.

    The tiny model takes camera-sized input, so a frame keeps the worker busy for about a
    frame period. The signal is sent from the mask callback, while the worker is still making
    the overlay of that frame and the next frames are on their way.
    """
    model = write_tiny_model(tmp_path, 1280, 720)
    ns = unique_namespace('inflight')
    proc = subprocess.Popen(_node_cmd('-p', f'model_file_path:={model}', '-p',
                                      'num_threads:=1', '-r', f'__ns:={ns}'),
                            env=node_environment(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    ready = threading.Event()

    def pump():
        for line in proc.stderr:
            lines.append(line)
            if 'listening on' in line:
                ready.set()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    h = Harness(ns)
    stop = threading.Event()
    sent = []
    masks = []
    signalled = []

    def on_mask(msg):
        masks.append(msg)
        if len(masks) == 5 and not signalled:
            proc.send_signal(sig)
            signalled.append(len(sent))

    def camera(pub, msg):
        start = time.monotonic()
        while not stop.is_set():
            msg.header.stamp.sec = len(sent)
            pub.publish(msg)
            sent.append(msg.header.stamp.sec)
            stop.wait(max(0.0, start + len(sent) / 30.0 - time.monotonic()))
    publisher = None
    try:
        assert ready.wait(timeout=60), ''.join(lines)
        h.client.create_subscription(Image, 'segmentation/mask', on_mask, 10)
        overlays = h.collect(Image, 'segmentation/overlay')
        pub = h.publisher(Image, 'image', reliable=False)
        assert h.wait_for_subscribers(pub, timeout=30)
        frame = stamped(array_to_image(green_red_image(1280, 720, 240), 'rgb8'), 0)
        publisher = threading.Thread(target=camera, args=(pub, frame), daemon=True)
        publisher.start()
        # Without the large-image profile in this process too, no frame reaches the node.
        assert h.wait_for(lambda: signalled, timeout=30), \
            (len(sent), len(masks), ''.join(lines))
        code = proc.wait(timeout=20)
        sent_during = len(sent) - signalled[0]
    finally:
        stop.set()
        if publisher is not None:
            publisher.join(timeout=5)
        h.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    err = ''.join(lines)
    assert code == 0, err
    assert (masks[0].width, masks[0].height) == (1280, 720) and overlays
    assert sent_during > 0            # the camera was still publishing when the node stopped
    assert 'Traceback' not in err and 'Fatal Python error' not in err, err
    # The frame in flight is finished or dropped, never failed half-way by the teardown.
    assert 'failed to process a frame' not in err, err
