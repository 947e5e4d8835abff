"""segmentation_node over real rclpy topics, with a tiny real ONNX model built in the test."""

import os
import signal
import subprocess
import sys
import time

from conftest import green_red_image, REPO, TINY_PALETTE
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from freespace_seg.image_codec import array_to_compressed, array_to_image, image_to_array
from freespace_seg.nodes.ros_util import StartupError
from freespace_seg.nodes.segmentation_node import SegmentationNode
import numpy as np
import pytest
from rclpy.parameter import Parameter
from ros_harness import Harness, unique_namespace
from sensor_msgs.msg import CompressedImage, Image

OUTPUTS = {
    'segmentation/mask': 'mono8',
    'segmentation/colored_mask': 'rgb8',
    'segmentation/overlay': 'rgb8',
    'free_space/mask': 'mono8',
}


def make_node(namespace, model, **params):
    overrides = [Parameter('model_file_path', value=model), Parameter('num_threads', value=1)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return SegmentationNode(namespace=namespace, parameter_overrides=overrides)


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
    assert rig.wait_for(lambda: all(rig.node._wanted(p) for p in (
        rig.node._pub_mask, rig.node._pub_colored, rig.node._pub_overlay, rig.node._pub_free)))
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
    assert rig.wait_for(lambda: rig.node._wanted(rig.node._pub_free))
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
    assert rig.wait_for(lambda: rig.node._wanted(rig.node._pub_mask))
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
    assert rig.wait_for(lambda: rig.node._wanted(rig.node._pub_mask))
    corrupt = CompressedImage(format='jpeg', data=b'\xff\xd8\xff\xe0 definitely not a jpeg')
    pub.publish(stamped(corrupt, 1))
    assert rig.wait_for(lambda: rig.node.bad_frames == 1)
    pub.publish(stamped(array_to_compressed(green_red_image(64, 48, 8), 'png'), 2))
    assert rig.wait_for(lambda: box)
    assert box[0].header.stamp.sec == 2


def test_nothing_is_computed_without_subscribers(rig):
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    for i in range(3):
        pub.publish(stamped(array_to_image(green_red_image(64, 48, 8), 'rgb8'), i))
        time.sleep(0.05)
    assert rig.wait_for(lambda: rig.node.received == 3)
    time.sleep(0.3)
    assert rig.node.processed == 0


def test_only_the_newest_frame_is_processed_and_drops_are_counted(rig):
    box = rig.collect(Image, 'segmentation/mask', depth=100)
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: rig.node._wanted(rig.node._pub_mask))
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
    assert result.successful and node._alpha == 0.8
    result = node.set_parameters([Parameter('backend', value='tensorrt')])[0]
    assert not result.successful and node.get_parameter('backend').value == 'auto'
    result = node.set_parameters([Parameter('color_palette', value=[0xFF0000])])[0]
    assert not result.successful and '2 classes' in result.reason
    result = node.set_parameters([Parameter('color_palette', value=[0x0000FF, 0x00FF00])])[0]
    assert result.successful
    box = rig.collect(Image, 'segmentation/colored_mask')
    pub = rig.publisher(Image, 'image')
    assert rig.wait_for_subscribers(pub)
    assert rig.wait_for(lambda: node._wanted(node._pub_colored))
    pub.publish(stamped(array_to_image(green_red_image(64, 48, 8), 'rgb8'), 5))
    assert rig.wait_for(lambda: box)
    np.testing.assert_array_equal(image_to_array(box[0])[0, 0], [0, 0, 255])


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
