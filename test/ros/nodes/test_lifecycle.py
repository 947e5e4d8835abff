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

"""segmentation_node as a managed node: transitions over the real lifecycle services."""

import os

from diagnostic_msgs.msg import DiagnosticStatus
from freespace_seg.nodes.msgs import array_to_image
from freespace_seg.nodes.segmentation_node import SegmentationNode, start_segmentation_node
from freespace_seg.perception.image_codec import image_to_array
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import Image
from support import green_red_image, write_tiny_model
from support.ros import Harness, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it


def _node(ns, model, **params):
    overrides = [Parameter('model_file_path', value=model), Parameter('num_threads', value=1)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return start_segmentation_node(namespace=ns, parameter_overrides=overrides)


class LifecycleClient:
    """Drive a node through its lifecycle services, as a lifecycle manager would."""

    def __init__(self, harness, node_name='freespace_segmentation'):
        self.h = harness
        self.change = harness.client.create_client(ChangeState, f'{node_name}/change_state')
        self.get = harness.client.create_client(GetState, f'{node_name}/get_state')
        assert self.change.wait_for_service(timeout_sec=10)
        assert self.get.wait_for_service(timeout_sec=10)

    def _call(self, client, request):
        future = client.call_async(request)
        assert self.h.wait_for(future.done, timeout=20)
        return future.result()

    def transition(self, transition_id):
        return self._call(self.change, ChangeState.Request(
            transition=Transition(id=transition_id))).success

    def state(self):
        return self._call(self.get, GetState.Request()).current_state.id


def _send(h, pub, sec, free_rows=16):
    msg = array_to_image(green_red_image(64, 48, free_rows), 'rgb8')
    msg.header.stamp.sec = sec
    pub.publish(msg)


def test_transitions_over_the_lifecycle_services(ros_init, tiny_model):
    ns = unique_namespace('lc')
    node = _node(ns, tiny_model, autostart=False)
    h = Harness(ns, node)
    try:
        lc = LifecycleClient(h)
        assert lc.state() == State.PRIMARY_STATE_UNCONFIGURED
        assert node.lifecycle_state == 'unconfigured'
        assert node.pipeline is None
        image_topic = f'{ns}/image'
        assert h.client.count_subscribers(image_topic) == 0

        assert lc.transition(Transition.TRANSITION_CONFIGURE)
        assert lc.state() == State.PRIMARY_STATE_INACTIVE
        assert node.lifecycle_state == 'inactive'
        assert node.pipeline is not None                       # model and engine loaded
        assert h.client.count_subscribers(image_topic) == 0    # but not listening yet

        masks = h.collect(Image, 'segmentation/mask')
        pub = h.publisher(Image, 'image')
        assert lc.transition(Transition.TRANSITION_ACTIVATE)
        assert lc.state() == State.PRIMARY_STATE_ACTIVE
        assert node.lifecycle_state == 'active'
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('segmentation/mask'))
        _send(h, pub, 1)
        assert h.wait_for(lambda: masks)

        assert lc.transition(Transition.TRANSITION_DEACTIVATE)
        assert lc.state() == State.PRIMARY_STATE_INACTIVE
        assert node.lifecycle_state == 'inactive'
        assert node.pipeline is None                           # engine memory released
        assert h.wait_for(lambda: h.client.count_subscribers(image_topic) == 0)
        _send(h, pub, 2)
        assert not h.wait_for(lambda: any(m.header.stamp.sec == 2 for m in masks),
                              timeout=1.0)

        assert lc.transition(Transition.TRANSITION_ACTIVATE)   # loads the engine again
        assert node.pipeline is not None
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('segmentation/mask'))
        _send(h, pub, 3)
        assert h.wait_for(lambda: any(m.header.stamp.sec == 3 for m in masks))

        assert lc.transition(Transition.TRANSITION_DEACTIVATE)
        assert lc.transition(Transition.TRANSITION_CLEANUP)
        assert lc.state() == State.PRIMARY_STATE_UNCONFIGURED
        assert node.lifecycle_state == 'unconfigured'
        assert node.pipeline is None and node.output_topics == []
        assert lc.transition(Transition.TRANSITION_UNCONFIGURED_SHUTDOWN)
        assert lc.state() == State.PRIMARY_STATE_FINALIZED
        assert node.lifecycle_state == 'finalized'
    finally:
        h.close()


def test_configure_fails_with_the_reason_on_a_bad_model(ros_init, tmp_path):
    missing = str(tmp_path / 'missing.onnx')
    ns = unique_namespace('lcbad')
    node = _node(ns, missing, autostart=False)
    h = Harness(ns, node)
    try:
        lc = LifecycleClient(h)
        assert not lc.transition(Transition.TRANSITION_CONFIGURE)
        assert lc.state() == State.PRIMARY_STATE_UNCONFIGURED
        assert node.lifecycle_state == 'unconfigured'
        assert 'missing.onnx' in node.failure and 'not found' in node.failure
        status = node.diagnostics_status()
        assert status.level == DiagnosticStatus.ERROR and 'not found' in status.message
    finally:
        h.close()


def test_the_constructor_makes_no_transition_autostart_does(ros_init, tiny_model):
    """The constructor leaves autostart to main() (start_segmentation_node)."""
    node = SegmentationNode(namespace=unique_namespace('lcinit'), parameter_overrides=[
        Parameter('model_file_path', value=tiny_model), Parameter('num_threads', value=1)])
    try:
        assert node.get_parameter('autostart').value is True
        assert node.lifecycle_state == 'unconfigured' and node.pipeline is None
        node.autostart()
        assert node.lifecycle_state == 'active' and node.pipeline is not None
    finally:
        node.trigger_shutdown()
        node.destroy_node()


def test_an_activate_that_raises_ends_unconfigured_as_rclpy_says(ros_init, tiny_model):
    """A callback that raises goes through on_error: released, unconfigured, as rclpy says."""
    ns = unique_namespace('lcerr')
    node = _node(ns, tiny_model, autostart=False)
    h = Harness(ns, node)
    try:
        lc = LifecycleClient(h)
        assert lc.transition(Transition.TRANSITION_CONFIGURE)

        def broken(*args, **kwargs):
            raise RuntimeError('no subscription today')

        node.create_subscription = broken
        assert not lc.transition(Transition.TRANSITION_ACTIVATE)
        assert lc.state() == State.PRIMARY_STATE_UNCONFIGURED
        assert node.lifecycle_state == 'unconfigured'
        assert node.pipeline is None and node.output_topics == []         # on_error released them
        del node.create_subscription                              # the real one again
        assert lc.transition(Transition.TRANSITION_CONFIGURE)
        assert lc.transition(Transition.TRANSITION_ACTIVATE)
        assert lc.state() == State.PRIMARY_STATE_ACTIVE
        assert node.lifecycle_state == 'active'
    finally:
        h.close()


def test_shutdown_from_active_releases_everything(ros_init, tiny_model):
    ns = unique_namespace('lcsd')
    node = _node(ns, tiny_model)
    assert node.lifecycle_state == 'active'
    worker = node.worker_thread
    assert worker.is_alive()
    node.trigger_shutdown()
    assert node.lifecycle_state == 'finalized'
    assert node.pipeline is None and node.worker_thread is None and not worker.is_alive()
    node.destroy_node()


def test_model_swaps_live_and_a_bad_model_is_rejected(ros_init, tmp_path):
    green = write_tiny_model(tmp_path, name='green')
    red = write_tiny_model(tmp_path, name='red', invert=True)
    ns = unique_namespace('swap')
    node = _node(ns, green)
    h = Harness(ns, node)
    try:
        masks = h.collect(Image, 'free_space/mask')
        pub = h.publisher(Image, 'image')
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('free_space/mask'))
        _send(h, pub, 1)
        assert h.wait_for(lambda: masks)
        first = image_to_array(masks[-1]).copy()

        result = node.set_parameters([Parameter('model_file_path',
                                                value=str(tmp_path / 'nope.onnx'))])[0]
        assert not result.successful and 'not found' in result.reason
        assert node.get_parameter('model_file_path').value == green
        assert node.pipeline.card.model_path == os.path.abspath(green)

        result = node.set_parameters([Parameter('model_file_path', value=red)])[0]
        assert result.successful, result.reason
        assert node.pipeline.card.model_path == os.path.abspath(red)
        _send(h, pub, 2)
        assert h.wait_for(lambda: any(m.header.stamp.sec == 2 for m in masks))
        second = image_to_array([m for m in masks if m.header.stamp.sec == 2][0])
        # The inverted model calls free exactly what the first one called blocked.
        np.testing.assert_array_equal(second, 255 - first)
    finally:
        h.close()


def test_backend_and_threads_reconfigure_live(ros_init, tiny_model):
    ns = unique_namespace('reconf')
    node = _node(ns, tiny_model, backend='onnxruntime')
    h = Harness(ns, node)
    try:
        masks = h.collect(Image, 'segmentation/mask')
        pub = h.publisher(Image, 'image')
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('segmentation/mask'))
        first = node.pipeline
        result = node.set_parameters([Parameter('num_threads', value=2)])[0]
        assert result.successful, result.reason
        assert node.pipeline is not first and node.get_parameter('num_threads').value == 2
        second = node.pipeline
        # An explicit backend that cannot run here is rejected; the running engine stays.
        if node.pipeline.engine.backend == 'onnxruntime':
            result = node.set_parameters([Parameter('backend', value='tensorrt')])[0]
            if not result.successful:
                assert 'tensorrt' in result.reason
                assert node.pipeline is second
                assert node.get_parameter('backend').value == 'onnxruntime'
        result = node.set_parameters([Parameter('backend', value='auto')])[0]
        assert result.successful, result.reason
        assert node.pipeline is not second
        _send(h, pub, 4)
        assert h.wait_for(lambda: any(m.header.stamp.sec == 4 for m in masks))
    finally:
        h.close()


@pytest.mark.parametrize('timeout', [0.2])
def test_stale_input_turns_diagnostics_warn_then_error(ros_init, tiny_model, timeout):
    ns = unique_namespace('stale')
    node = _node(ns, tiny_model, input_stale_timeout=timeout)
    h = Harness(ns, node)
    try:
        masks = h.collect(Image, 'segmentation/mask')
        pub = h.publisher(Image, 'image')
        assert h.wait_for_subscribers(pub)
        assert h.wait_for(lambda: node.wants('segmentation/mask'))
        _send(h, pub, 1)
        assert h.wait_for(lambda: masks)
        assert node.diagnostics_status().level == DiagnosticStatus.OK
        assert h.wait_for(lambda: node.diagnostics_status().level == DiagnosticStatus.WARN,
                          timeout=5)
        assert 'stale' in node.diagnostics_status().message
        assert h.wait_for(lambda: node.diagnostics_status().level == DiagnosticStatus.ERROR,
                          timeout=5)
        _send(h, pub, 2)
        assert h.wait_for(lambda: node.diagnostics_status().level == DiagnosticStatus.OK)
    finally:
        h.close()
