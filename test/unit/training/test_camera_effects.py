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

"""Camera effects (``eval --camera-effects``) and the blocked-called-free score."""

import json
import shutil

from freespace_seg import cli
from freespace_seg.perception import metrics
from freespace_seg.training import camera_effects as ce
from freespace_seg.training import data as datasets
import numpy as np
import pytest
import yaml

W, H = 160, 90


def _frame(seed=0):
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 255, (H, W, 3), dtype=np.uint8)
    mask = np.zeros((H, W), np.uint8)
    mask[H // 2:] = 1
    return rgb, mask


def test_effects_are_seeded_and_change_the_image():
    rgb, mask = _frame()
    a = ce.apply_effects(rgb, mask, np.random.default_rng([1, 0]))
    b = ce.apply_effects(rgb, mask, np.random.default_rng([1, 0]))
    assert a[2] == b[2] and np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert a[0].shape == rgb.shape and a[0].dtype == np.uint8
    assert not np.array_equal(a[0], rgb)


@pytest.mark.parametrize('effect', [e for e in ce.EFFECTS if e != 'wide_lens'])
def test_only_the_lens_moves_labels(effect):
    rgb, mask = _frame()
    out, lab, applied = ce.apply_effects(rgb, mask, np.random.default_rng(3), (effect,))
    assert applied == [effect]
    assert np.array_equal(lab, mask) and not np.array_equal(out, rgb)


def test_wide_lens_warps_the_mask_with_the_image_and_ignores_the_outside():
    rgb = np.zeros((H, W, 3), np.uint8)
    mask = np.zeros((H, W), np.uint8)
    mask[H // 2:] = 1
    rgb[H // 2:] = (0, 200, 0)           # free pixels are green
    out, lab, _ = ce.apply_effects(rgb, mask, np.random.default_rng(0), ('wide_lens',))
    # Barrel distortion: the corners come from outside the view, the centre stays.
    assert lab[0, 0] == ce.IGNORE and lab[-1, -1] == ce.IGNORE
    assert lab[H // 2 + 5, W // 2] == 1 and lab[H // 2 - 5, W // 2] == 0
    # The horizon line bends: where the label is free, the image is green.
    seen = lab != ce.IGNORE
    green = out[..., 1] > 100
    agree = (green == (lab == 1))[seen].mean()
    assert agree > 0.98
    # At the left edge the image is compressed towards the middle: the boundary moves.
    assert not np.array_equal(lab[:, W // 8] == 1, mask[:, W // 8] == 1)


def test_parse_effects():
    assert ce.parse_effects('all') == ce.EFFECTS
    assert ce.parse_effects('jpeg,wide-lens') == ('wide_lens', 'jpeg')
    for bad in ('fog', '', 'all,jpeg'):
        with pytest.raises(ValueError, match='camera effects'):
            ce.parse_effects(bad)


def test_blocked_called_free_is_the_share_of_blocked_pixels_predicted_free():
    cm = np.array([[90, 10], [5, 95]])       # rows: label blocked, free
    s = metrics.summarize(cm, ['blocked', 'free'], positive_class='free')
    assert s['blocked_called_free'] == pytest.approx(0.1)
    assert s['blocked_called_free'] == pytest.approx(1.0 - s['recall']['blocked'])
    assert 'blocked_called_free' not in metrics.summarize(cm, ['blocked', 'free'])


def test_eval_camera_effects_scores_under_its_own_key(shipped_model, tmp_path):
    local = tmp_path / 'm.onnx'
    shutil.copy(shipped_model, local)
    shutil.copy(shipped_model[:-5] + '.yaml', tmp_path / 'm.yaml')
    base = ['eval', '--model', str(local), '--latency-runs', '0', '--figures', '0',
            '--render', '3', '--seed', '5', '--width', str(W), '--height', str(H)]
    assert cli.main(base + ['--out', str(tmp_path / 'plain')]) == 0
    assert cli.main(base + ['--out', str(tmp_path / 'fx'), '--camera-effects', 'all',
                            '--update-card']) == 0
    plain = json.loads((tmp_path / 'plain' / 'metrics.json').read_text())
    fx = json.loads((tmp_path / 'fx' / 'metrics.json').read_text())
    assert 'camera effects' in fx['source'] and fx['metrics']['images'] == 3
    assert fx['metrics']['confusion'] != plain['metrics']['confusion']
    assert 0.0 <= fx['metrics']['blocked_called_free'] <= 1.0
    card = yaml.safe_load((tmp_path / 'm.yaml').read_text())
    entry = card['evaluation']['synthetic_test_camera_effects']
    assert entry['images'] == 3 and 'blocked_called_free' in entry
    report = (tmp_path / 'fx' / 'metrics.md').read_text()
    assert 'Blocked called free' in report
    # The frames are the rendered ones through the effects, frame by frame.
    frames = list(datasets.rendered_frames(3, 5, W, H))
    again = list(ce.with_effects(frames, 5))
    assert len(again) == 3 and not np.array_equal(again[0][0], frames[0][0])
    with pytest.raises(SystemExit, match='camera effects'):
        cli.main(base + ['--out', str(tmp_path / 'bad'), '--camera-effects', 'fog'])
