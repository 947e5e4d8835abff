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

"""Errors by surface: what each rendered pixel shows, and the eval report's breakdown."""

import dataclasses
import json

from freespace_seg import cli
from freespace_seg.perception import metrics
from freespace_seg.sim import Box, default_intrinsics, default_mount, render, Scene
from freespace_seg.sim.render import camera_in_world
from freespace_seg.training.surfaces import (markdown, surface_kind, surface_map, SurfaceError,
                                             SurfaceErrors)
import numpy as np
import pytest


def _pixel(frame, point):
    """Return (row, col) of a world point in the frame."""
    origin, r_wo = camera_in_world(frame.mount, frame.robot_pose)
    p_opt = (np.asarray([point], np.float64) - origin) @ r_wo
    u, v = frame.intrinsics.project(p_opt)[0]
    row, col = int(round(v)), int(round(u))
    assert 0 <= row < frame.free.shape[0] and 0 <= col < frame.free.shape[1], point
    return row, col


def test_surface_map_names_floor_walls_and_the_top_and_side_of_each_obstacle():
    step = Box(1.5, 0.0, 0.6, 1.0, 0.1, label='step')
    plain = Box(2.2, -0.9, 0.4, 0.4, 0.6)  # unlabelled
    scene = Scene.empty((6.0, 6.0), obstacles=[step, plain])
    frame = render(scene, default_intrinsics(320, 180), default_mount())
    codes, names = surface_map(frame)
    assert names[:4] == ['none', 'floor', 'ceiling', 'wall']
    assert {'step top', 'step side', 'object side'} <= set(names)
    assert codes.shape == frame.free.shape and codes.max() < len(names)
    shown = np.array(names)[codes]
    # Exactly the frame's free pixels are floor.
    assert np.array_equal(shown == 'floor', frame.free == 1)
    expect = {(1.5, 0.0, 0.1): 'step top', (1.2, 0.0, 0.05): 'step side',
              (0.9, -0.4, 0.0): 'floor', (3.0, -0.5, 0.3): 'wall', (2.0, -0.9, 0.3): 'object side'}
    for point, name in expect.items():
        assert shown[_pixel(frame, point)] == name, point


def test_a_frame_whose_labels_the_rays_do_not_reproduce_is_refused():
    scene = Scene.empty((6.0, 6.0), obstacles=[Box(1.5, 0.0, 0.6, 1.0, 0.1, label='step')])
    frame = render(scene, default_intrinsics(160, 90), default_mount())
    free = frame.free.copy()
    free[-1, 0] = 1 - free[-1, 0]
    with pytest.raises(SurfaceError, match='free mask'):
        surface_map(dataclasses.replace(frame, free=free))


def test_surface_errors_count_like_the_confusion_matrix():
    names = ['none', 'floor', 'ceiling', 'wall', 'box side']
    codes = np.array([[1, 1, 3, 3], [1, 1, 4, 4]])
    label = np.array([[1, 1, 0, 0], [1, 255, 0, 0]], np.uint8)
    pred = np.array([[0, 1, 1, 0], [1, 1, 1, 0]], np.uint8)
    errors = SurfaceErrors()
    errors.add(pred, label, codes, names)
    errors.add(pred, label, codes, names)
    assert dict(errors.pixels) == {'floor': 6, 'wall': 4, 'box side': 4}  # ignored pixel left out
    assert dict(errors.wrong) == {'floor': 2, 'wall': 2, 'box side': 2}
    rows = errors.rows()
    assert [r['surface'] for r in rows] == ['box side', 'floor', 'wall']  # ties: by name
    assert rows[1]['called_wrong'] == pytest.approx(2 / 6)
    assert sum(r['share_of_errors'] for r in rows) == pytest.approx(1.0)
    assert sum(r['pixel_share'] for r in rows) == pytest.approx(1.0)
    cm = metrics.confusion_matrix(pred, label, 2, 255) * 2
    assert errors.miou() == pytest.approx(metrics.mean_iou(cm))
    fixed = pred.copy()
    fixed[1, 2] = 0  # the box side called right
    assert errors.miou(right=['box side']) == pytest.approx(
        metrics.mean_iou(metrics.confusion_matrix(fixed, label, 2, 255)))
    summary = errors.summary()
    assert summary['miou_if_right'] == {
        'box': round(errors.miou(right=['box side']), 4),
        'floor': round(errors.miou(right=['floor']), 4),
        'wall': round(errors.miou(right=['wall']), 4)}
    assert surface_kind('step top') == 'step' and surface_kind('wall') == 'wall'
    assert errors.miou(right=['floor', 'wall', 'box side']) == 1.0
    text = markdown(summary)
    assert '| box side | blocked | 28.57 % | 2 | 50.0 % | 33.3 % |' in text
    with pytest.raises(ValueError, match='shapes differ'):
        errors.add(pred[:1], label, codes, names)


def test_eval_by_surface_adds_a_table_that_adds_up(tmp_path, shipped_model):
    pytest.importorskip('onnxruntime')
    out = tmp_path / 'report'
    rc = cli.main(['eval', '--model', shipped_model, '--render', '3', '--seed', '1000',
                   '--width', '160', '--height', '90', '--by-surface', '--figures', '0',
                   '--latency-runs', '0', '--out', str(out)])
    assert rc == 0
    result = json.loads((out / 'metrics.json').read_text())
    m, s = result['metrics'], result['surfaces']
    cm = np.array(m['confusion'])
    assert s['images'] == m['images'] == 3
    assert s['pixels'] == m['pixels'] == cm.sum()
    assert s['wrong_pixels'] == cm[0, 1] + cm[1, 0]
    assert s['miou'] == pytest.approx(m['miou'], abs=1e-4)
    assert any(r['surface'] == 'floor' for r in s['rows'])
    assert '## Errors by surface' in (out / 'metrics.md').read_text()


def test_by_surface_needs_rendered_frames(tmp_path, shipped_model):
    (tmp_path / 'imgs').mkdir()
    with pytest.raises(SystemExit, match='--by-surface only applies to --render'):
        cli.main(['eval', '--model', shipped_model, '--images', str(tmp_path / 'imgs'),
                  '--by-surface', '--out', str(tmp_path / 'r')])
