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

import os
from types import SimpleNamespace

import cv2
from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.frame import (CameraInfoHistory, FrameProcessor, GROUND_OUTPUTS,
                                        GROUND_PARAMS, GroundParams, NetworkShrink, OUTPUTS,
                                        projector_for_camera_info, shrink_for_ground, TOPICS)
from freespace_seg.ground.geometry import CameraIntrinsics
from freespace_seg.ground.grid import PLAIN_RULE
from freespace_seg.ground.scan import ScanLayout
from freespace_seg.nodes.params import SEGMENTATION_PARAMS
from freespace_seg.perception.pipeline import SegmentationPipeline
from freespace_seg.perception.preprocess import Letterbox
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


def camera_info_for(intrinsics):
    from freespace_seg.nodes.msgs import camera_info_from_intrinsics

    return camera_info_from_intrinsics(intrinsics)


def _info(stamp=(1, 5)):
    info = camera_info_for(CameraIntrinsics.from_fov(W, H, 1.5))
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
    # The mask alone: looked up once, for the horizon cut; the confidence alone: not at all.
    frames.process(_frame(), {'mask'}, info, mount)
    assert calls == ['info', 'mount']
    calls.clear()
    frames.process(_frame(), {'confidence'}, info, mount)
    assert calls == []
    # No ground output and no horizon cut asked for: neither is looked up.
    _processor(pipe, mask_horizon=False).process(_frame(), {'mask', 'free'}, info, mount)
    assert calls == []


def test_an_unusable_camera_info_costs_only_the_ground(pipe):
    info = _info()
    info.distortion_model = 'fov'          # no model the projection reads
    out = _processor(pipe).process(_frame(), {'mask', 'grid'}, info)
    assert isinstance(out.ground_error, ValueError) and out.ground is None
    assert out.mask is not None and not out.has_ground


def test_a_fisheye_camera_info_gives_the_fisheye_grid(pipe):
    lens = CameraIntrinsics.from_fov(W, H, 2.4, (0.02, -0.01, 0.0, 0.0), 'equidistant')
    info = camera_info_for(lens)
    assert info.distortion_model == 'equidistant' and len(info.d) == 4
    frames = _processor(pipe)
    rgb = _frame()
    out = frames.process(rgb, {'grid'}, info)
    assert out.ground_error is None and frames.projector.intrinsics == lens
    params = frames.ground_params
    mask, confidence = pipe.segment_with_confidence(rgb)
    projector = projector_for_camera_info(None, info, mask.shape, params.mount,
                                          params.grid_spec)
    ground = projector.ground(pipe.free_mask(mask), confidence, params.rule)
    np.testing.assert_array_equal(out.grid, ground.grid)
    assert (out.grid == 0).sum() > 20
    # Not the grid of a pinhole with the same K.
    info.distortion_model, info.d = 'plumb_bob', [0.0] * 5
    assert not np.array_equal(_processor(pipe).process(rgb, {'grid'}, info).grid, out.grid)


def _ceiling_frame():
    """
    Free (green) above the horizon of the default mount and in the floor; a red wall between.

    Columns 40-47 are green from top to bottom (a corridor's far end), so there the free
    pixels above the horizon join the floor; a red speckle lies on the floor.
    """
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[..., 1] = 200
    rgb[14:24, :40] = (200, 0, 0)
    rgb[14:24, 48:] = (200, 0, 0)
    rgb[3:6, 10:20] = (200, 0, 0)           # a blocked bit of ceiling stays blocked
    rgb[H - 8:H - 6, 20:26] = (200, 0, 0)
    return rgb


@pytest.mark.parametrize('rule', [{}, {'grid_min_obstacle_run': 0.0,
                                       'grid_cut_confidence': 0.0}], ids=['default', 'plain'])
def test_free_pixels_above_the_horizon_come_out_blocked_and_the_grid_is_unchanged(pipe, rule):
    from freespace_seg.ground.frame import mask_intrinsics
    from freespace_seg.ground.horizon import HorizonCut

    rgb, info = _ceiling_frame(), _info()
    frames = _processor(pipe, **rule)
    out = frames.process(rgb, set(OUTPUTS), info)
    params = frames.ground_params
    assert params.mask_horizon and params.horizon_margin_deg == 1.0
    cut = HorizonCut(mask_intrinsics(info, (H, W)), params.mount, 1.0).mask
    assert out.horizon is frames.horizon and 'horizon' in out.timings
    np.testing.assert_array_equal(frames.horizon.mask, cut)
    # The default mount (pitched 0.3 rad down) sees the horizon near row 12 of 48.
    assert 10 * W < cut.sum() < 14 * W and not cut[H // 2:].any()
    model_mask, model_conf = pipe.segment_with_confidence(rgb)
    model_free = pipe.free_mask(model_mask)
    assert (model_free[cut] > 0).mean() > 0.7         # the model calls most of it free
    np.testing.assert_array_equal(out.mask, np.where(cut, 0, model_mask))
    np.testing.assert_array_equal(out.free, np.where(cut, 0, model_free))
    np.testing.assert_array_equal(out.free, pipe.free_mask(out.mask))
    colored = pipe.colorize(out.mask)
    np.testing.assert_array_equal(out.colored, colored)
    np.testing.assert_array_equal(out.overlay, pipe.overlay(rgb, colored, 0.5))
    np.testing.assert_array_equal(out.confidence, model_conf)   # the model's P(free)
    # The grid, points and scan: as without the cut, and as from the model's own mask.
    uncut = _processor(pipe, mask_horizon=False, **rule).process(rgb, set(OUTPUTS), info)
    np.testing.assert_array_equal(uncut.mask, model_mask)
    assert uncut.horizon is None and 'horizon' not in uncut.timings
    np.testing.assert_array_equal(out.grid, uncut.grid)
    np.testing.assert_array_equal(out.points, uncut.points)
    np.testing.assert_array_equal(out.scan, uncut.scan)
    assert (out.grid == 0).any() and (out.grid == 100).any()
    # Without a CameraInfo: the model's masks.
    alone = frames.process(rgb, {'mask', 'free'})
    np.testing.assert_array_equal(alone.mask, model_mask)
    assert alone.horizon is None


def test_the_horizon_cut_follows_the_camera_info_pose_and_margin(pipe):
    from freespace_seg.ground.frame import mask_intrinsics
    from freespace_seg.ground.geometry import CameraMount
    from freespace_seg.ground.horizon import HorizonCut

    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[..., 1] = 200                       # free everywhere
    frames = _processor(pipe)
    info = _info()
    frames.process(rgb, {'mask'}, info)
    cut = frames.horizon
    frames.process(rgb, {'free'}, info)
    assert frames.horizon is cut and cut.rebuild_count == 1   # kept for the next frame
    # A CameraInfo of twice the mask's size: the intrinsics are scaled to the mask.
    big = camera_info_for(CameraIntrinsics.from_fov(2 * W, 2 * H, 1.5))
    out = frames.process(rgb, {'mask'}, big)
    expect = HorizonCut(mask_intrinsics(big, (H, W)), frames.ground_params.mount, 1.0)
    np.testing.assert_array_equal(out.mask == 0, expect.mask)
    # A pose per frame (TF), here a level camera: the rows down to the principal point.
    level = CameraMount(z=0.25, pitch=0.0).transform_base_from_optical()
    out = frames.process(rgb, {'mask'}, info, lambda: level)
    blocked_rows = np.flatnonzero((out.mask == 0).all(axis=1))
    assert blocked_rows.max() < H // 2 - 1 and blocked_rows.max() > H // 2 - 4
    # Another margin: fewer rows; off: none.
    wide = _processor(pipe, horizon_margin_deg=20.0).process(rgb, {'mask'}, info, lambda: level)
    assert 0 < (wide.mask == 0).sum() < (out.mask == 0).sum()
    off = _processor(pipe, mask_horizon=False).process(rgb, {'mask'}, info, lambda: level)
    assert (off.mask == 1).all()


def test_an_unusable_camera_info_leaves_the_masks_uncut(pipe):
    info = _info()
    info.distortion_model = 'equidistant'
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[..., 1] = 200
    out = _processor(pipe).process(rgb, {'mask'}, info)
    assert isinstance(out.ground_error, ValueError) and out.horizon is None
    assert (out.mask == 1).all()


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
    with pytest.raises(ValueError, match='horizon_margin_deg'):
        GroundParams.from_params({**DEFAULTS, 'horizon_margin_deg': -1.0})
    with pytest.raises(ValueError, match='grid_mask_width'):
        GroundParams.from_params({**DEFAULTS, 'grid_mask_width': -1})
    params = GroundParams.from_params({**DEFAULTS, 'mask_horizon': False,
                                       'horizon_margin_deg': 2.5})
    assert params.mask_horizon is False and params.horizon_margin_deg == 2.5


def _wide_frame():
    """Return a rendered 1280x720 room with boxes, its CameraInfo, and the shipped model."""
    from freespace_seg.nodes.msgs import camera_info_from_intrinsics
    from freespace_seg.sim import Box, default_intrinsics, render, Scene

    intrinsics = default_intrinsics(1280, 720)
    mount = GroundParams.from_params(DEFAULTS).mount
    boxes = [Box(1.2, -0.5, 0.4, 0.3, 0.3), Box(1.8, 0.6, 0.3, 0.5, 0.5),
             Box(2.4, -0.2, 0.6, 0.2, 0.2)]
    frame = render(Scene.empty(size=(6.0, 6.0), obstacles=boxes), intrinsics, mount)
    model = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'models',
                         'freespace_lite0_int8.onnx')
    return (frame.image, camera_info_from_intrinsics(intrinsics),
            SegmentationPipeline(os.path.abspath(model), 'onnxruntime', 1))


def test_the_ground_shrinks_a_wide_mask_and_projects_it_at_its_own_scale():
    free = np.zeros((720, 1280), np.uint8)
    free[400:] = 255
    conf = np.full((720, 1280), 200, np.uint8)
    assert shrink_for_ground(free, conf, 0) == (free, conf)
    assert shrink_for_ground(free, None, 1280) == (free, None)
    small, small_conf = shrink_for_ground(free, conf, 640)
    assert small.shape == small_conf.shape == (360, 640)
    assert (small[201:] == 255).all() and (small[:200] == 0).all()
    speck = free.copy()
    speck[600, 700] = 0  # one blocked pixel stays blocked
    assert (shrink_for_ground(speck, None, 640)[0] == 0).sum() == (small == 0).sum() + 1
    # The frame path: a 1280x720 frame projected 640 wide gives (nearly) the same grid.
    rgb, info, shipped = _wide_frame()
    full = _processor(shipped, grid_mask_width=0).process(rgb, {'grid'}, info)
    shrunk = _processor(shipped, grid_mask_width=640).process(rgb, {'grid'}, info)
    shipped.close()
    assert shrunk.ground is not None and full.ground is not None
    known = (full.grid >= 0) | (shrunk.grid >= 0)
    assert known.sum() > 100
    assert (full.grid == shrunk.grid)[known].mean() >= 0.95
    # shrinking keeps every blocked pixel: next to no cell turns from occupied to free
    assert ((full.grid == 100) & (shrunk.grid == 0)).sum() <= 0.01 * (shrunk.grid == 0).sum()


@pytest.mark.parametrize('src,width', [((1280, 720), 640), ((640, 480), 320),
                                       ((1920, 1080), 640), ((800, 600), 333),
                                       ((1280, 720), 480), ((481, 271), 200)])
def test_the_network_shrink_equals_the_shrink_of_the_camera_sized_masks(src, width):
    rng = np.random.default_rng(width)
    lb = Letterbox.compute(src[0], src[1], 480, 272)
    for _ in range(3):
        blocks = (rng.random((34, 60)) > 0.4).astype(np.uint8) * 255
        net = cv2.resize(blocks, (480, 272), interpolation=cv2.INTER_NEAREST)
        net[rng.random(net.shape) < 0.01] = 0  # single blocked pixels survive
        conf = rng.integers(0, 256, (272, 480), dtype=np.uint8)
        want_free, want_conf = shrink_for_ground(lb.mask_to_source(net),
                                                 lb.mask_to_source(conf), width)
        shrink = NetworkShrink(lb, width)
        assert shrink.size == want_free.shape[::-1]
        assert np.array_equal(shrink(net), want_free)
        assert np.array_equal(shrink(conf), want_conf)


def test_a_wide_camera_s_grid_from_the_network_sized_masks_is_the_same_grid():
    """With grid_mask_width the frame path shrinks the network's masks: the same grid."""
    rgb, info, shipped = _wide_frame()
    try:
        processor = _processor(shipped, grid_mask_width=640)
        out = processor.process(rgb, {'mask', 'grid', 'scan'}, info)
        assert 'shrink' in out.timings and out.free is None and out.confidence is None
        # The camera-sized way: the masks at 1280x720, then shrunk.
        mask, conf = shipped.segment_with_confidence(rgb)
        free, conf = shrink_for_ground(shipped.free_mask(mask), conf, 640)
        want = processor.projector.ground(free, conf, processor.ground_params.rule)
        assert np.array_equal(out.grid, want.grid)
        assert (out.grid == 0).sum() > 100
        # Asking for the camera-sized masks too changes nothing on the ground.
        both = processor.process(rgb, {'mask', 'free', 'confidence', 'grid'}, info)
        assert np.array_equal(both.grid, out.grid)
        assert both.free.shape == both.confidence.shape == (720, 1280)
    finally:
        shipped.close()
