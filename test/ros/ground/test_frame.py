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

"""ground.frame: one frame path makes only the outputs asked for, as the parts make them."""

from types import SimpleNamespace

from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.frame import (CameraInfoHistory, FrameProcessor, GROUND_OUTPUTS,
                                        GROUND_PARAMS, GroundParams, OUTPUTS,
                                        projector_for_camera_info, TOPICS)
from freespace_seg.ground.geometry import CameraIntrinsics
from freespace_seg.ground.grid import PLAIN_RULE
from freespace_seg.ground.scan import ScanLayout
from freespace_seg.nodes.params import SEGMENTATION_PARAMS
from freespace_seg.perception.pipeline import SegmentationPipeline
import numpy as np
import pytest

W, H = 64, 48
DEFAULTS = {spec.name: spec.default for spec in SEGMENTATION_PARAMS}


@pytest.fixture
def pipe(tiny_model):
    pipeline = SegmentationPipeline(tiny_model, 'onnxruntime', 1)
    yield pipeline
    pipeline.close()


def _frame():
    """Red (blocked) above a wavy line, green (free) below, a red speckle in the floor."""
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[..., 0] = 200
    line = (H * 0.45 + 4 * np.sin(np.arange(W) / 5.0)).astype(int)
    floor = np.arange(H)[:, None] >= line[None, :]
    rgb[floor] = (0, 200, 0)
    rgb[H - 8:H - 6, 20:26] = (200, 0, 0)
    return rgb


def _info(stamp=(1, 5)):
    from freespace_seg.nodes.msgs import camera_info_from_intrinsics

    info = camera_info_from_intrinsics(CameraIntrinsics.from_fov(W, H, 1.5))
    info.header.stamp.sec, info.header.stamp.nanosec = stamp
    return info


def _processor(pipe, **params):
    return FrameProcessor(pipe, GroundParams.from_params({**DEFAULTS, **params}))


def test_only_what_is_asked_is_made(pipe):
    frames = _processor(pipe)
    out = frames.process(_frame(), {'mask'})
    assert out.mask.shape == (H, W) and 'confidence' not in pipe.timings
    assert out.confidence is None and out.free is None and out.colored is None
    assert out.overlay is None and out.ground is None and out.grid is None
    out = frames.process(_frame(), {'overlay'})
    assert out.colored is not None and out.overlay is not None and out.free is None
    # Ground outputs without a CameraInfo: none, and no confidence for the rule.
    out = frames.process(_frame(), {'grid', 'scan'})
    assert out.ground is None and out.ground_error is None and out.confidence is None
    assert frames.projector is None
    with pytest.raises(ValueError):
        frames.process(_frame(), {'grid_picture'})


def test_the_outputs_are_what_the_parts_make(pipe):
    frames = _processor(pipe)
    rgb, info = _frame(), _info()
    out = frames.process(rgb, set(OUTPUTS), info)
    params = frames.ground_params
    assert params.rule.needs_confidence
    mask, confidence = pipe.segment_with_confidence(rgb)
    free = pipe.free_mask(mask)
    np.testing.assert_array_equal(out.mask, mask)
    np.testing.assert_array_equal(out.confidence, confidence)
    np.testing.assert_array_equal(out.free, free)
    colored = pipe.colorize(mask)
    np.testing.assert_array_equal(out.colored, colored)
    np.testing.assert_array_equal(out.overlay, pipe.overlay(rgb, colored, 0.5))
    projector = projector_for_camera_info(None, info, free.shape, params.mount,
                                          params.grid_spec)
    ground = projector.ground(free, confidence, params.rule)
    np.testing.assert_array_equal(out.grid, ground.grid)
    np.testing.assert_array_equal(out.points, ground.points)
    assert out.grid_spec == params.grid_spec
    layout = ScanLayout(projector, params.scan_angle_increment)
    np.testing.assert_array_equal(out.scan, layout.ranges(ground))
    assert out.scan_layout.size == layout.size
    np.testing.assert_array_equal(out.grid_image, render_grid(ground.grid, 0.17,
                                                              grid_spec=params.grid_spec))
    for stage in ('preprocess', 'inference', 'confidence', 'free', 'ground', 'scan'):
        assert stage in out.timings
    # The projector and the scan's rays are kept for the next frame of the same camera.
    before = (frames.projector, frames.projector.rebuild_count, frames.scan_layout)
    frames.process(rgb, {'scan'}, info)
    assert (frames.projector, frames.projector.rebuild_count, frames.scan_layout) == before


def test_the_plain_rule_needs_no_confidence(pipe):
    frames = _processor(pipe, grid_min_obstacle_run=0.0, grid_cut_confidence=0.0,
                        grid_free_confidence=0.0)
    assert frames.ground_params.rule == PLAIN_RULE and not PLAIN_RULE.needs_confidence
    out = frames.process(_frame(), {'grid'}, _info())
    assert out.confidence is None and out.grid is not None
    assert 'confidence' not in pipe.timings


def test_ready_reports_each_output_in_order_and_lookups_come_late(pipe):
    frames = _processor(pipe)
    seen, calls = [], []

    def info():
        calls.append('info')
        return _info()

    def mount():
        calls.append('mount')
        return None

    want = {'overlay', 'grid', 'mask', 'points'}
    out = frames.process(_frame(), want, info, mount,
                         ready=lambda name, o: seen.append((name, o.grid is not None)))
    assert [name for name, _ in seen] == [n for n in OUTPUTS if n in want]
    assert calls == ['info', 'mount'] and out.grid is not None
    calls.clear()
    frames.process(_frame(), {'mask'}, info, mount)
    assert calls == []   # no ground output asked for: neither is looked up


def test_an_unusable_camera_info_costs_only_the_ground(pipe):
    info = _info()
    info.distortion_model = 'equidistant'
    out = _processor(pipe).process(_frame(), {'mask', 'grid'}, info)
    assert isinstance(out.ground_error, ValueError) and out.ground is None
    assert out.mask is not None and not out.has_ground


def test_camera_info_history_matches_by_stamp():
    infos = CameraInfoHistory(size=3)
    image = SimpleNamespace(stamp=SimpleNamespace(sec=2, nanosec=7))
    assert infos.match(image) is None and len(infos) == 0
    for sec in range(1, 6):
        infos.add(SimpleNamespace(header=SimpleNamespace(
            stamp=SimpleNamespace(sec=sec, nanosec=7))))
    assert [i.header.stamp.sec for i in infos] == [3, 4, 5]
    header = SimpleNamespace(stamp=SimpleNamespace(sec=4, nanosec=7))
    assert infos.match(header).header.stamp.sec == 4
    assert infos.match(image).header.stamp.sec == 5   # no match: the newest


def test_one_set_of_ground_parameters_and_topics():
    names = {spec.name for spec in SEGMENTATION_PARAMS}
    assert set(GROUND_PARAMS) <= names
    assert GROUND_OUTPUTS <= set(OUTPUTS) and set(TOPICS) == set(OUTPUTS)
    with pytest.raises(ValueError):
        GroundParams.from_params({**DEFAULTS, 'scan_angle_increment': 0.0})
    with pytest.raises(ValueError):
        GroundParams.from_params({**DEFAULTS, 'grid_resolution': -1.0})
