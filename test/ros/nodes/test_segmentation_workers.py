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

"""segmentation_node with ``num_workers`` > 1: the shipped model, real topics, outputs in order."""

import os
import threading
import time

from freespace_seg.nodes.msgs import array_to_image, camera_info_from_intrinsics
from freespace_seg.nodes.ros_util import InOrderGate, StartupError
from freespace_seg.nodes.segmentation_node import start_segmentation_node
from freespace_seg.nodes.synthetic_camera import render_frames
from freespace_seg.perception.pipeline import packaged_model_path
from freespace_seg.tools.child import node_environment
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from nav_msgs.msg import OccupancyGrid
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image
from support.ros import Harness, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

# As test_segmentation_node: camera-sized frames need the large-image Fast DDS profile.
os.environ.setdefault('FASTDDS_DEFAULT_PROFILES_FILE',
                      node_environment()['FASTDDS_DEFAULT_PROFILES_FILE'])

FRAME_ID = 'oakd_rgb_camera_optical_frame'
# Seed far from the training and validation seeds of the shipped model.
SEED = 778000


@pytest.fixture(scope='module')
def frames():
    return render_frames(2, 640, 360, SEED)


@pytest.fixture(scope='module')
def shipped():
    """Fail when the shipped model is missing: it ships with the package (test_shipped_model)."""
    if not os.path.isfile(packaged_model_path()):
        pytest.fail(f'the packaged model is missing: {packaged_model_path()}')


def make_node(ns, **params):
    """Start a node on the shipped model (the CPU picks its INT8 copy), 1 thread per worker."""
    overrides = [Parameter('num_threads', value=1)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return start_segmentation_node(namespace=ns, parameter_overrides=overrides)


def image_msg(frame, sec):
    msg = array_to_image(frame.image, 'rgb8')
    msg.header.stamp.sec = sec
    msg.header.stamp.nanosec = 500
    msg.header.frame_id = FRAME_ID
    return msg


def stamp_of(msg):
    return (msg.header.stamp.sec, msg.header.stamp.nanosec)


def transition(h, transition_id, node_name='freespace_segmentation'):
    """Ask for a transition over the node's lifecycle service, as a lifecycle manager would."""
    client = h.client.create_client(ChangeState, f'{node_name}/change_state')
    try:
        assert client.wait_for_service(timeout_sec=10)
        future = client.call_async(ChangeState.Request(transition=Transition(id=transition_id)))
        assert h.wait_for(future.done, timeout=60)
        return future.result().success
    finally:
        h.client.destroy_client(client)


# -- the ordering rule, driven step by step ---------------------------------------------------

def test_a_frame_finishing_after_a_later_one_is_dropped_and_counted():
    gate = InOrderGate()
    out = []
    assert gate.publish(1, lambda: out.append(1))
    # Frame 3 (one worker) finishes before frame 2 (the other): 3 goes out, 2 is late.
    assert gate.publish(3, lambda: out.append(3))
    assert not gate.publish(2, lambda: out.append(2))
    assert gate.late == 1
    assert gate.publish(4, lambda: out.append(4))
    # The same frame never goes out twice, nor an older one after a newer.
    assert not gate.publish(4, lambda: out.append(4))
    assert not gate.publish(1, lambda: out.append(1))
    assert out == [1, 3, 4] and gate.late == 3


def test_the_ordering_rule_with_two_worker_threads_stepped():
    """Worker a took frame 7, worker b frame 8; b finishes first, then a: a's is dropped."""
    gate = InOrderGate()
    out, result = [], {}
    b_published = threading.Event()

    def worker_a():
        assert b_published.wait(timeout=10)
        result['a'] = gate.publish(7, lambda: out.append(7))

    def worker_b():
        result['b'] = gate.publish(8, lambda: out.append(8))
        b_published.set()

    threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert result == {'a': False, 'b': True}
    assert out == [8] and gate.late == 1


# -- the node -----------------------------------------------------------------------------------

@pytest.mark.parametrize('workers', [0, 5])
def test_num_workers_out_of_range_is_refused_at_startup(ros_init, shipped, workers):
    with pytest.raises(StartupError) as e:
        make_node(unique_namespace('wk'), num_workers=workers)
    assert 'invalid parameters' in str(e.value) and 'num_workers' in str(e.value)


def test_two_workers_answer_a_burst_in_stamp_order(ros_init, shipped, frames):
    ns = unique_namespace('wk')
    node = make_node(ns, num_workers=2)
    h = Harness(ns, node)
    try:
        threads = node.worker_threads
        assert len(threads) == 2 and all(t.is_alive() for t in threads)
        assert sorted(t.name for t in threads) == ['segmentation_worker_0',
                                                   'segmentation_worker_1']
        assert node.worker_thread is threads[0]
        assert all(p is not None for p in node.pipelines)
        assert node.pipelines[0] is not node.pipelines[1]              # an engine each
        masks = h.collect(Image, 'segmentation/mask', depth=500)
        free = h.collect(Image, 'free_space/mask', depth=500)
        grids = h.collect(OccupancyGrid, 'free_space/grid', depth=500)
        pub = h.publisher(Image, 'image')
        info_pub = h.publisher(CameraInfo, 'camera_info')
        assert h.wait_for_subscribers(pub) and h.wait_for_subscribers(info_pub)
        assert h.wait_for(lambda: all(node.wants(t) for t in (
            'segmentation/mask', 'free_space/mask', 'free_space/grid')))
        # A camera faster than one worker: frames until both workers have computed some
        # (at least 30 frames, at most 400).
        sent = []
        for i in range(400):
            frame = frames[i % len(frames)]
            msg = image_msg(frame, 1000 + i)
            info_pub.publish(camera_info_from_intrinsics(frame.intrinsics, msg.header))
            pub.publish(msg)
            sent.append(stamp_of(msg))
            if i >= 30 and all(n > 0 for n in node.worker_frame_counts):
                break
            time.sleep(1 / 120)
        counts = node.worker_frame_counts
        assert all(n > 0 for n in counts), counts
        # The newest frame always comes out (no later frame can overtake it).
        assert h.wait_for(lambda: masks and stamp_of(masks[-1]) == sent[-1], timeout=60), \
            (len(masks), sent[-1], node.received)
        # Every frame that reached the node was published, dropped (replaced, or late) or bad.
        assert h.wait_for(lambda: node.processed + node.dropped + node.bad_frames
                          == node.received, timeout=30)
        assert node.bad_frames == 0
        assert sum(node.worker_frame_counts) == node.processed + node.late_dropped
        assert h.wait_for(lambda: grids and stamp_of(grids[-1]) == sent[-1], timeout=30)
        for box in (masks, free, grids):
            stamps = [stamp_of(m) for m in box]
            assert all(a < b for a, b in zip(stamps, stamps[1:])), stamps  # strictly in order
            assert set(stamps) <= set(sent)                    # each one an input's stamp
        assert all(m.header.frame_id == FRAME_ID for m in masks + free)
        assert all(g.header.frame_id == 'base_link' for g in grids)
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert values['workers'] == '2'
        assert values['frames_per_worker'] == ', '.join(str(n) for n in
                                                        node.worker_frame_counts)
        assert values['frames_dropped_late'] == str(node.late_dropped)
        assert int(values['frames_dropped']) >= node.late_dropped
    finally:
        h.close()


def test_two_workers_through_the_lifecycle_and_a_reload(ros_init, shipped, frames):
    ns = unique_namespace('wk')
    node = make_node(ns, num_workers=2)
    h = Harness(ns, node)
    try:
        first = node.worker_threads
        assert len(first) == 2 and all(t.is_alive() for t in first)
        # num_workers is read-only at run time; num_threads reloads every worker's engine.
        result = node.set_parameters([Parameter('num_workers', value=3)])[0]
        assert not result.successful and 'num_workers' in result.reason
        before = node.pipelines
        result = node.set_parameters([Parameter('num_threads', value=2)])[0]
        assert result.successful, result.reason
        after = node.pipelines
        assert len(after) == 2 and all(p is not None for p in after)
        assert all(a is not b for a in after for b in before) and after[0] is not after[1]

        assert transition(h, Transition.TRANSITION_DEACTIVATE)
        assert node.lifecycle_state == 'inactive'
        assert node.worker_threads == () and node.worker_thread is None
        assert not any(t.is_alive() for t in first)
        assert node.pipelines == (None, None)

        assert transition(h, Transition.TRANSITION_ACTIVATE)
        second = node.worker_threads
        assert len(second) == 2 and all(t.is_alive() for t in second)
        assert not set(second) & set(first)
        masks = h.collect(Image, 'segmentation/mask')
        pub = h.publisher(Image, 'image')
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('segmentation/mask'))
        pub.publish(image_msg(frames[0], 5))
        assert h.wait_for(lambda: any(m.header.stamp.sec == 5 for m in masks), timeout=30)

        assert transition(h, Transition.TRANSITION_ACTIVE_SHUTDOWN)
        assert node.lifecycle_state == 'finalized'
        assert node.worker_threads == () and not any(t.is_alive() for t in second)
        assert node.pipelines == (None, None)
    finally:
        h.close()
