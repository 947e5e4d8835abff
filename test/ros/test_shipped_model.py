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

"""The shipped model in the running node: rendered rooms it never trained on, over real topics."""

from freespace_seg.nodes.msgs import array_to_image, camera_info_from_intrinsics
from freespace_seg.nodes.segmentation_node import start_segmentation_node
from freespace_seg.nodes.synthetic_camera import render_frames
from freespace_seg.perception.image_codec import image_to_array
from freespace_seg.perception.pipeline import packaged_model_path
from nav_msgs.msg import OccupancyGrid
import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image
from support.ros import Harness, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

OUTPUTS = {
    'segmentation/mask': ('mono8', 1),
    'segmentation/colored_mask': ('rgb8', 3),
    'segmentation/overlay': ('rgb8', 3),
    'free_space/mask': ('mono8', 1),
}
# Seed far from the training and validation seeds of the shipped model.
SEED = 777000


@pytest.fixture(scope='module')
def frames():
    return render_frames(4, 640, 360, SEED)


def test_shipped_model_finds_the_free_floor(ros_init, frames):
    import os
    if not os.path.isfile(packaged_model_path()):
        pytest.fail(f'the packaged model is missing: {packaged_model_path()}')
    ns = unique_namespace('shipped')
    node = start_segmentation_node(namespace=ns, parameter_overrides=[
        Parameter('camera_height', value=0.25), Parameter('camera_pitch', value=0.3)])
    h = Harness(ns, node)
    try:
        boxes = {t: h.collect(Image, t) for t in OUTPUTS}
        grids = h.collect(OccupancyGrid, 'free_space/grid')
        pub = h.publisher(Image, 'image')
        info_pub = h.publisher(CameraInfo, 'camera_info')
        assert h.wait_for_subscribers(pub) and h.wait_for_subscribers(info_pub)
        assert h.wait_for(lambda: all(node.wants(t) for t in (
            'segmentation/mask', 'segmentation/colored_mask', 'segmentation/overlay',
            'free_space/mask', 'free_space/grid')))
        ious = []
        for i, frame in enumerate(frames):
            msg = array_to_image(frame.image, 'rgb8')
            msg.header.stamp.sec = 1000 + i
            msg.header.frame_id = 'oakd_rgb_camera_optical_frame'
            info_pub.publish(camera_info_from_intrinsics(frame.intrinsics, msg.header))
            pub.publish(msg)
            assert h.wait_for(lambda: all(
                any(m.header.stamp.sec == 1000 + i for m in b) for b in boxes.values())
                and any(g.header.stamp.sec == 1000 + i for g in grids), timeout=20), i
            for topic, (encoding, _) in OUTPUTS.items():
                out = [m for m in boxes[topic] if m.header.stamp.sec == 1000 + i][0]
                assert (out.width, out.height, out.encoding) == (640, 360, encoding), topic
                assert out.header.frame_id == 'oakd_rgb_camera_optical_frame', topic
            free = [m for m in boxes['free_space/mask'] if m.header.stamp.sec == 1000 + i][0]
            pred = image_to_array(free) > 0
            truth = frame.free > 0
            union = np.logical_or(pred, truth).sum()
            ious.append(np.logical_and(pred, truth).sum() / union if union else 1.0)
        # The card's bar is synthetic mIoU >= 0.90 over a test split; a few unseen rooms
        # must get the free floor mostly right.
        assert np.mean(ious) >= 0.85, ious
    finally:
        h.close()


def test_int8_variant_matches_fp32(frames):
    """The shipped INT8 model: within 0.01 mIoU of fp32 on every set of the cards."""
    import os

    from freespace_seg.perception.model_card import load_card
    from freespace_seg.perception.pipeline import SegmentationPipeline
    from freespace_seg.training.quantize import int8_path_for

    fp32_path = packaged_model_path()
    int8_path = int8_path_for(fp32_path)
    if not os.path.isfile(int8_path):
        pytest.fail(f'the INT8 variant is missing: {int8_path} (python -m freespace_seg '
                    'quantize writes it)')
    fp32_eval = load_card(fp32_path).evaluation
    int8_eval = load_card(int8_path).evaluation
    # Within 0.01 mIoU of fp32 on every set that both cards were scored on.
    shared = sorted(set(fp32_eval) & set(int8_eval))
    assert 'synthetic_test' in shared, shared
    for key in shared:
        assert abs(int8_eval[key]['miou'] - fp32_eval[key]['miou']) <= 0.01, key
    assert os.path.getsize(int8_path) < 0.5 * os.path.getsize(fp32_path)
    a = SegmentationPipeline(fp32_path, backend='onnxruntime', num_threads=1)
    b = SegmentationPipeline(int8_path, backend='onnxruntime', num_threads=1)
    try:
        for frame in frames:
            mask_a, conf = a.segment_with_confidence(frame.image)
            mask_b = b.segment(frame.image)
            # Where fp32 is sure (P(free) <= 0.25 or >= 0.75), INT8 gives the same class. A
            # pale or stone room leaves fp32 unsure on up to a third of its pixels, where
            # INT8's rounding may tip the class either way.
            sure = (conf <= 64) | (conf >= 191)
            assert sure.mean() >= 0.5, sure.mean()
            assert np.mean(mask_a[sure] == mask_b[sure]) >= 0.995
            assert np.mean(mask_a == mask_b) >= 0.94
    finally:
        a.close()
        b.close()


def test_the_default_model_on_the_cpu_is_the_int8_copy():
    from freespace_seg.perception.pipeline import packaged_int8_model, SegmentationPipeline

    default = SegmentationPipeline(backend='onnxruntime', num_threads=1)
    explicit = SegmentationPipeline(packaged_model_path(), backend='onnxruntime', num_threads=1)
    try:
        name = packaged_int8_model()   # this CPU's: 7-bit weights on x86-64 without VNNI
        assert default.card.name == name[:-len('.onnx')]
        assert default.card.model_file.endswith(name)
        assert any('INT8' in note for note in default.backend_notes), default.backend_notes
        # A model named explicitly is run as it is.
        assert explicit.card.name == 'freespace_lite0'
    finally:
        default.close()
        explicit.close()


def test_the_int8_copy_follows_the_cpu(tmp_path):
    """x86-64 without VNNI: the 7-bit copy; with VNNI, or on ARM: the full-range one."""
    from freespace_seg.perception.model_card import card_path_for_model, load_card
    from freespace_seg.perception.pipeline import (cpu_has_vnni, PACKAGED_INT8_MODEL,
                                                   PACKAGED_INT8R_MODEL, packaged_int8_model)

    flags = {'avx2': 'fpu sse2 avx avx2 fma', 'vnni': 'fpu avx2 avx512f avx512_vnni',
             'avxvnni': 'fpu avx2 avx_vnni'}
    for name, line in flags.items():
        (tmp_path / name).write_text(f'processor\t: 0\nflags\t\t: {line}\n')
    assert cpu_has_vnni(str(tmp_path / 'avx2'), machine='x86_64') is False
    assert cpu_has_vnni(str(tmp_path / 'vnni'), machine='x86_64') is True
    assert cpu_has_vnni(str(tmp_path / 'avxvnni'), machine='AMD64') is True
    assert cpu_has_vnni(str(tmp_path / 'avx2'), machine='aarch64') is None
    assert cpu_has_vnni(str(tmp_path / 'missing'), machine='x86_64') is None
    assert packaged_int8_model(has_vnni=False) == PACKAGED_INT8R_MODEL
    assert packaged_int8_model(has_vnni=True) == PACKAGED_INT8_MODEL
    assert packaged_int8_model(has_vnni=None) in (PACKAGED_INT8_MODEL, PACKAGED_INT8R_MODEL)
    r = load_card(card_path_for_model(packaged_model_path(PACKAGED_INT8R_MODEL)))
    assert '7-bit' in r.raw['quantization']['weights']
    assert '--weights int8-reduced' in r.raw['quantization']['command']
