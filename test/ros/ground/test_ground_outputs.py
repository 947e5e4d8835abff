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

"""The ground outputs without ROS: confidence, the speckle-tolerant grid rule, the scan."""

import math
import os

from freespace_seg.ground.geometry import CameraMount
from freespace_seg.ground.grid import GridRule, GridSpec, PLAIN_RULE
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.ground.scan import scan_layout, ScanLayout
from freespace_seg.perception.pipeline import SegmentationPipeline
from freespace_seg.perception.postprocess import decode_classes, free_probability
from freespace_seg.sim import (Box, Cylinder, default_intrinsics, default_mount,
                               make_scene, render, Scene)
import numpy as np
import pytest
from support import REPO, write_tiny_model
import yaml

W, H = 640, 360


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def as_u8(p):
    return np.floor(np.clip(np.asarray(p, np.float64) * 255.0 + 0.5, 0, 255)).astype(np.uint8)


# -- confidence -------------------------------------------------------------------------------

def test_free_probability_of_two_class_logits_is_the_sigmoid_of_the_difference():
    rng = np.random.default_rng(0)
    out = rng.normal(0.0, 4.0, (1, 2, 30, 40)).astype(np.float32)
    conf = free_probability(out, 'logits', (1,))
    expected = as_u8(sigmoid(out[0, 1].astype(np.float64) - out[0, 0]))
    assert conf.dtype == np.uint8 and conf.shape == (30, 40)
    assert np.abs(conf.astype(int) - expected).max() <= 1
    # Free where decode_classes says free: the two agree on every pixel but exact ties.
    free = decode_classes(out, 'logits') == 1
    assert np.all(conf[free] >= 128) and np.all(conf[~free] <= 128)
    # Class 0 free: the complement.
    other = free_probability(out, 'logits', (0,))
    assert np.abs(other.astype(int) + conf - 255).max() <= 1
    # NHWC gives the same.
    nhwc = free_probability(np.moveaxis(out, 1, -1), 'logits', (1,), layout='NHWC')
    np.testing.assert_array_equal(nhwc, conf)


def test_free_probability_of_other_outputs():
    rng = np.random.default_rng(1)
    logits = rng.normal(0.0, 2.0, (1, 4, 8, 9)).astype(np.float32)
    e = np.exp(logits[0].astype(np.float64))
    soft = e / e.sum(axis=0)
    conf = free_probability(logits, 'logits', (1, 3))
    assert np.abs(conf.astype(int) - as_u8(soft[1] + soft[3])).max() <= 1
    probs = soft[None].astype(np.float32)
    conf = free_probability(probs, 'probabilities', (2,))
    assert np.abs(conf.astype(int) - as_u8(soft[2])).max() <= 1
    single = rng.normal(0.0, 2.0, (1, 1, 8, 9)).astype(np.float32)
    conf = free_probability(single, 'logits', (1,))
    assert np.abs(conf.astype(int) - as_u8(sigmoid(single[0, 0]))).max() <= 1
    ids = rng.integers(0, 3, (1, 1, 8, 9)).astype(np.int64)
    conf = free_probability(ids, 'argmax', (2,))
    np.testing.assert_array_equal(conf, np.where(ids[0, 0] == 2, 255, 0))


def test_pipeline_confidence_matches_a_direct_computation(tmp_path):
    """The tiny model: logit(free) - logit(blocked) = 2 (G - R) / 127.5 on the raw pixels."""
    pytest.importorskip('onnxruntime')
    model = write_tiny_model(tmp_path, 64, 48)
    pipe = SegmentationPipeline(model, 'onnxruntime', 1)
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)  # network size: no resize
    mask, conf = pipe.segment_with_confidence(rgb)
    assert 'confidence' in pipe.timings
    np.testing.assert_array_equal(mask, pipe.segment(rgb))
    assert 'confidence' not in pipe.timings
    d = 2.0 * (rgb[..., 1].astype(np.float64) - rgb[..., 0]) / 127.5
    assert np.abs(conf.astype(int) - as_u8(sigmoid(d))).max() <= 1
    # A camera twice the network size: nearest-neighbour, like the mask.
    big = np.repeat(np.repeat(rgb, 2, axis=0), 2, axis=1)
    mask2, conf2 = pipe.segment_with_confidence(big)
    assert conf2.shape == (96, 128)
    np.testing.assert_array_equal(conf2[::2, ::2], conf)
    np.testing.assert_array_equal(mask2[::2, ::2], mask)
    pipe.close()


# -- the grid rule ----------------------------------------------------------------------------

def test_grid_rule_limits_and_validation():
    assert GridRule().confidence_limit() == 7          # P(blocked) > 0.97: P(free) x 255 <= 7
    assert GridRule().confidence_limit(0.5) == 127     # the tie (P = 0.5, 128) is left out
    assert GridRule(0.1).run_rows(360) == 37          # odd
    assert PLAIN_RULE.plain and not GridRule().plain
    for bad in (-0.1, 1.5, float('nan')):
        with pytest.raises(ValueError):
            GridRule(min_run=bad)
    with pytest.raises(ValueError):
        GridRule(cut_confidence=2.0)


def _leg_and_cable_scene():
    legs = [Cylinder(x, y, 0.012, 0.45) for x in (1.2, 1.6) for y in (-0.5, -0.1)]
    cable = Box(1.5, 0.55, 0.015, 0.7, 0.01)  # 1.5 cm wide, 1 cm high, y = 0.2 .. 0.9 m
    return Scene.empty(size=(8.0, 8.0), obstacles=legs + [cable]), legs, cable


@pytest.fixture(scope='module')
def legs_and_cable():
    scene, legs, cable = _leg_and_cable_scene()
    intr, mount = default_intrinsics(W, H), default_mount()
    frame = render(scene, intr, mount)
    return GroundProjector(intr, mount, GridSpec()), frame, legs, cable


def _near_occupied(grid, spec, x, y, cells=1.0):
    xs, ys = spec.cell_centers()
    return bool(np.any((grid == 100) & (np.hypot(xs - x, ys - y) <= (cells + 0.75)
                                        * spec.resolution)))


@pytest.mark.parametrize('with_confidence', [False, True])
def test_chair_legs_and_a_cable_stay_occupied(legs_and_cable, with_confidence):
    proj, frame, legs, cable = legs_and_cable
    spec = proj.grid_spec
    free = frame.free
    conf = np.where(free > 0, 255, 0).astype(np.uint8) if with_confidence else None
    plain = proj.ground(free, None, PLAIN_RULE).grid
    grid = proj.ground(free, conf, GridRule()).grid
    for leg in legs:
        assert _near_occupied(plain, spec, leg.x, leg.y), (leg.x, leg.y)
        assert _near_occupied(grid, spec, leg.x, leg.y), (leg.x, leg.y)
    # The cable is a few pixel rows tall: it cuts no column any more, yet every 5 cm of it is
    # occupied (the bottoms of the short runs), as with the plain rule.
    along = np.arange(0.25, 0.86, 0.05)
    assert all(_near_occupied(plain, spec, cable.x, y) for y in along)
    assert all(_near_occupied(grid, spec, cable.x, y) for y in along)
    # What the rule opens (free here, not in the plain grid) is floor: no cell centre in or
    # within half a cell of a leg or the cable. (Columns that graze a slanted leg edge over a
    # few rows now see the floor beside and behind it.)
    xs, ys = spec.cell_centers()
    opened = (grid == 0) & (plain != 0)
    for thing in legs + [cable]:
        assert np.all(thing.distance_xy(xs[opened], ys[opened]) > 0.5 * spec.resolution)
    # The legs still cut their columns: right behind each leg the floor stays unknown.
    for leg in legs:
        row, col = spec.cell_of(leg.x + 0.35 * math.cos(math.atan2(leg.y, leg.x)),
                                leg.y + 0.35 * math.sin(math.atan2(leg.y, leg.x)))
        assert plain[row, col] == -1 or grid[row, col] == plain[row, col]
    # The floor seen over the cable is free now; the plain rule left it unknown.
    over = (xs > 1.7) & (xs < 2.5) & (ys > 0.3) & (ys < 0.8)
    assert np.mean(plain[over] == -1) > 0.9
    assert np.mean(grid[over] == 0) > 0.9
    # And nothing is occupied that the plain rule does not mark.
    np.testing.assert_array_equal(grid == 100, plain == 100)


@pytest.fixture(scope='module')
def clean_room():
    scene = Scene.empty(size=(8.0, 8.0), obstacles=[Box(2.4, 0.2, 0.5, 0.5, 0.6)])
    intr, mount = default_intrinsics(W, H), default_mount()
    frame = render(scene, intr, mount)
    proj = GroundProjector(intr, mount, GridSpec())
    return proj, frame.free.copy()


def _speckled(free, proj, count=60, seed=3, width=8):
    """``count`` false-blocked blobs of 3 rows x ``width`` px on the floor of a mask."""
    rng = np.random.default_rng(seed)
    noisy = free.copy()
    spots = []
    lut = proj.lut
    while len(spots) < count:
        r, c = int(rng.integers(H // 2, H - 4)), int(rng.integers(0, W - width))
        if free[r:r + 3, c:c + width].all() and lut[r + 2, c] >= 0:
            noisy[r:r + 3, c:c + width] = 0
            spots.append((r, c))
    return noisy, spots


def _confidence(free, noisy, p_speckle, p_free=250):
    """P(free) x 255: sure floor, sure obstacles (blocked in ``free``), speckle at p_speckle."""
    conf = np.where(noisy > 0, p_free, 0).astype(np.uint8)
    conf[(noisy == 0) & (free > 0)] = p_speckle
    return conf


@pytest.mark.parametrize('p_blocked', [0.75, 1.0, None])
def test_speckle_no_longer_cuts_columns(clean_room, p_blocked):
    """3x3 px false-blocked blobs: confident or not, too short to cut; marked where sure."""
    proj, free = clean_room
    spec = proj.grid_spec
    noisy, spots = _speckled(free, proj)
    clean = proj.ground(free, None, PLAIN_RULE).grid
    if p_blocked is None:
        conf = None   # an argmax model: the run length alone decides
    else:
        conf = _confidence(free, noisy, as_u8(1.0 - p_blocked))
    plain = proj.ground(noisy, conf, PLAIN_RULE).grid
    grid = proj.ground(noisy, conf, GridRule()).grid
    lost_plain = np.count_nonzero((clean == 0) & (plain != 0))
    lost = (clean == 0) & (grid != 0)
    assert lost_plain > 150       # the plain rule throws the floor above each blob away
    # The new rule loses only the cells next to the blobs themselves, where they are marked.
    lut = proj.lut
    blob_cells = np.unique([lut[r + 2, c + k] for r, c in spots for k in range(8)])
    blob_cells = blob_cells[blob_cells >= 0]
    near = np.zeros(spec.size, bool)
    rows, cols = np.divmod(blob_cells, spec.nx)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            ok = (rows + dr >= 0) & (rows + dr < spec.ny) & (cols + dc >= 0) & \
                (cols + dc < spec.nx)
            near[(rows + dr)[ok] * spec.nx + (cols + dc)[ok]] = True
    assert np.all(near.reshape(spec.shape)[lost])
    assert np.count_nonzero(lost) < lost_plain / 3
    assert np.count_nonzero(grid == 100) >= np.count_nonzero(clean == 100)


def test_tied_pixels_neither_cut_nor_mark(clean_room):
    """P(free) exactly 0.5 (128; the mask says blocked): with mark_confidence 0.5, no trace."""
    proj, free = clean_room
    noisy, _ = _speckled(free, proj)
    conf = _confidence(free, noisy, 128)
    clean = proj.ground(free, None, PLAIN_RULE)
    tied = proj.ground(noisy, conf, GridRule())
    np.testing.assert_array_equal(tied.grid, clean.grid)
    marked = proj.ground(noisy, conf, GridRule(mark_confidence=0.0))
    assert np.count_nonzero(marked.grid == 100) > np.count_nonzero(clean.grid == 100)


def test_rules_without_a_run_or_confidence_are_the_plain_rule(clean_room):
    proj, free = clean_room
    noisy, _ = _speckled(free, proj)
    plain = proj.ground(noisy)
    grid, points = plain.grid, plain.points
    for rule, conf in ((PLAIN_RULE, None), (GridRule(0.0, 0.97), None),
                       (GridRule(0.0, 0.0, 0.0, 0.0), np.zeros_like(noisy))):
        g = proj.ground(noisy, conf, rule)
        np.testing.assert_array_equal(g.grid, grid)
        np.testing.assert_allclose(g.points, points, atol=1e-6)


def test_grid_and_points_agree_under_the_rule(clean_room):
    proj, free = clean_room
    noisy, _ = _speckled(free, proj)
    conf = _confidence(free, noisy, 60)
    g = proj.ground(noisy, conf, GridRule())
    np.testing.assert_array_equal(g.point_cells, np.flatnonzero(g.grid.ravel() == 100))
    assert len(g.points) == len(g.point_cells)
    np.testing.assert_array_equal(proj.grid_spec.flat_index(g.points[:, 0], g.points[:, 1]),
                                  g.point_cells)
    assert np.all(g.points[:, 2] == 0.0)
    # Every marking pixel is blocked and lands in an occupied cell.
    assert np.all(noisy[g.rows, g.cols] == 0)
    assert np.all(np.isin(proj.lut[g.rows, g.cols], g.point_cells))


# -- the scan ---------------------------------------------------------------------------------

def _check_scan(layout, ground, spec):
    """Every ray against the grid and the points; returns the counts of each kind of ray."""
    ranges = layout.ranges(ground)
    flat = ground.grid.ravel()
    assert ranges.dtype == np.float32 and ranges.shape == (layout.size,)
    kinds = {'finite': 0, 'inf': 0, 'nan': 0}
    for i, r in enumerate(ranges):
        crossed = layout.crossed_cells(i)
        values = flat[crossed]
        if np.isfinite(r):
            kinds['finite'] += 1
            first = int(np.argmax(values == 100))
            assert values[first] == 100 and not np.any(values[:first] == 100)
            point = ground.points[np.searchsorted(ground.point_cells, crossed[first])]
            assert r == pytest.approx(math.hypot(point[0], point[1]), abs=1e-5)
            assert layout.range_min - 1e-6 <= r <= layout.range_max + spec.resolution
        elif np.isinf(r):
            kinds['inf'] += 1
            assert r > 0 and not np.any(values == 100)
            # Free within a cell of the farthest cell the ray can see (at most 3 cells).
            assert np.any(values[-3:] == 0)
        else:
            kinds['nan'] += 1
            assert not np.any(values == 100)
    return ranges, kinds


def test_scan_layout_follows_laserscan_conventions():
    proj = GroundProjector(default_intrinsics(W, H), default_mount(), GridSpec())
    layout = ScanLayout(proj, 0.01)
    # Whole multiples of the increment; ray 0 of a forward camera is +x; symmetric here.
    k = np.array([layout.angle_min, layout.angle_max]) / 0.01
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)
    assert layout.angle_min == pytest.approx(-layout.angle_max)
    assert layout.size == int(round((layout.angle_max - layout.angle_min) / 0.01)) + 1
    # The rays span the bearings of the floor the camera sees (counter-clockwise positive:
    # the left image edge, +y, has the largest angle).
    lut = proj.lut
    r, c = np.nonzero(lut >= 0)
    gx, gy = proj.pixel_to_ground(c.astype(float), r.astype(float))
    bearing = np.arctan2(gy, gx)
    assert bearing.min() >= layout.angle_min - 0.005 and bearing.max() <= layout.angle_max + 0.005
    left = np.arctan2(*proj.pixel_to_ground(np.array([0.0]), np.array([H - 1.0]))[::-1])
    assert left[0] > 0.5
    assert 0.2 < layout.range_min < 0.8 and layout.range_max == pytest.approx(3.0, abs=0.06)
    # Reused while the projector's table stays, rebuilt when it changes or the step does.
    assert scan_layout(layout, proj, 0.01) is layout
    assert scan_layout(layout, proj, 0.02) is not layout
    proj.update(mount=CameraMount(z=0.3, pitch=0.3))
    assert scan_layout(layout, proj, 0.01) is not layout


def test_scan_of_an_empty_floor_is_inf_and_of_a_wall_is_its_distance():
    intr, mount = default_intrinsics(W, H), default_mount()
    proj = GroundProjector(intr, mount, GridSpec())
    layout = ScanLayout(proj, 0.01)
    empty = render(Scene.empty(size=(20.0, 20.0)), intr, mount)
    ranges, kinds = _check_scan(layout, proj.ground(empty.free, None, GridRule()), proj.grid_spec)
    # Free to the range limit: +inf; the outer rays leave the view before it: NaN.
    assert layout.range_limited.sum() >= 0.6 * layout.size
    np.testing.assert_array_equal(np.isposinf(ranges), layout.range_limited)
    assert kinds['finite'] == 0 and kinds['nan'] == layout.size - layout.range_limited.sum()
    # A wall across the room at x = 2 m (its face): every ray that reaches it sees 2 / cos(a).
    wall = Scene.empty(size=(20.0, 20.0), obstacles=[Box(2.1, 0.0, 0.2, 8.0, 1.0)])
    frame = render(wall, intr, mount)
    ground = proj.ground(frame.free, None, GridRule())
    ranges, kinds = _check_scan(layout, ground, proj.grid_spec)
    finite = np.isfinite(ranges)
    assert kinds['inf'] == 0 and finite.sum() >= 0.8 * layout.size
    expected = 2.0 / np.cos(layout.angles[finite])
    assert np.all(np.abs(ranges[finite] - expected) <= 0.06)


@pytest.mark.parametrize('seed', [1000, 1001, 1002, 1003])
def test_scan_grid_and_points_never_disagree_on_rooms(seed):
    intr, mount = default_intrinsics(W, H), default_mount()
    proj = GroundProjector(intr, mount, GridSpec())
    layout = ScanLayout(proj, 0.01)
    rng = np.random.default_rng(seed)
    scene = make_scene(rng)
    frame = render(scene, intr, mount, robot_pose=scene.sample_free_pose(rng, clearance=0.3))
    noisy, _ = _speckled(frame.free, proj, count=10, seed=seed) \
        if frame.free[H // 2:].mean() > 0.5 else (frame.free, [])
    conf = _confidence(frame.free, noisy, 40)
    for rule in (PLAIN_RULE, GridRule()):
        ground = proj.ground(noisy, conf, rule)
        np.testing.assert_array_equal(ground.point_cells,
                                      np.flatnonzero(ground.grid.ravel() == 100))
        _, kinds = _check_scan(layout, ground, proj.grid_spec)
        assert sum(kinds.values()) == layout.size


# -- the Nav2 example -------------------------------------------------------------------------

def test_nav2_obstacle_layer_example_uses_the_scan_for_marking_and_clearing():
    from freespace_seg.nodes.params import SEGMENTATION_PARAMS, spec_by_name

    with open(os.path.join(REPO, 'config', 'nav2_obstacle_layer_scan.yaml')) as f:
        data = yaml.safe_load(f)
    params = data['local_costmap']['local_costmap']['ros__parameters']
    assert 'obstacle_layer' in params['plugins']
    layer = params['obstacle_layer']
    assert layer['plugin'] == 'nav2_costmap_2d::ObstacleLayer'
    sources = layer['observation_sources'].split()
    assert sources == ['free_space_scan']
    src = layer['free_space_scan']
    assert src['topic'].endswith('free_space/scan') and src['data_type'] == 'LaserScan'
    assert src['marking'] is True and src['clearing'] is True and src['inf_is_valid'] is True
    # The points lie at z = 0: the height filter must let them through.
    assert src['min_obstacle_height'] < 0.0 < src['max_obstacle_height']
    # Nav2 turns +inf into range_max - 0.1 mm: that point must clear, never mark.
    max_range = spec_by_name(SEGMENTATION_PARAMS, 'max_range').default
    assert src['obstacle_max_range'] < max_range - 0.01
    assert max_range - 0.1 <= src['raytrace_max_range'] <= max_range
    assert src['raytrace_min_range'] == 0.0 and src['obstacle_min_range'] == 0.0
    assert params['global_frame'] and params['robot_base_frame'] == 'base_link'


# -- the benchmark's ground-output conditions -------------------------------------------------

def test_bench_compares_the_ground_outputs_before_and_after():
    import argparse

    from freespace_seg.tools.bench import report, run, topics

    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    args = parser.parse_args(['--quick', '--ground-outputs', '--no-naive'])
    _, _, conds = run.plan(args, [('fp32', 'a.onnx'), ('int8', 'b.onnx')])
    ground = [c for c in conds if c.ground]
    assert [(c.ground, c.model_label, c.rate) for c in ground] == [
        ('before', 'int8', 30.0), ('after', 'int8', 30.0)]
    before_cmd, _ = topics.TopicBench._command(None, ground[0], '/ns', 'n')
    after_cmd, _ = topics.TopicBench._command(None, ground[1], '/ns', 'n')
    assert 'grid_cut_confidence:=0.0' in before_cmd and 'grid_cut_confidence:=0.0' not in \
        after_cmd
    assert {t for t, _ in topics.ground_topics('after')} == {
        'free_space/obstacles', 'free_space/grid_image', 'free_space/scan',
        'segmentation/confidence'}
    assert 'free_space/scan' not in {t for t, _ in topics.ground_topics('before')}
    plain = {'kind': 'node', 'model': 'int8', 'threads': 2, 'rate_hz': 30.0,
             'input': 'rgb8 1280x720', 'fps': 30.0, 'p95_ms': 40.0, 'camera_fps': 30.0}
    rows = [plain, dict(plain, ground='before', fps=29.0, p95_ms=50.0),
            dict(plain, ground='after', fps=25.0, p95_ms=52.0)]
    assert report.find(rows, 'node', 'int8', 2, rate=30.0) is plain
    _, goals = report.ratios_and_goals(rows, [2], [30.0], ['int8'])
    by_name = {g['goal']: g for g in goals}
    fps = by_name['every ground output within 10 % of before (fps)']
    assert fps['value'] == pytest.approx(25.0 / 29.0) and not fps['met']
    assert by_name['every ground output within 10 % of before (p95)']['met']
