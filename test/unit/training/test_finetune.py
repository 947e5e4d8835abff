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

"""The finetune command: ONNX -> torch rebuild of the shipped model, a tiny real fine-tune."""

import importlib
import os

import cv2
from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
from freespace_seg.perception.pipeline import (packaged_model_path, PACKAGED_UNET_MODEL,
                                               SegmentationPipeline)
from freespace_seg.training import data as datasets
import numpy as np
import pytest

torch = pytest.importorskip('torch', reason='fine-tuning needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='the ONNX -> torch rebuild needs the onnx package')
pytest.importorskip('onnxruntime', reason='the checks need onnxruntime')
# Imported only once torch is known to be there.
export = importlib.import_module('freespace_seg.training.export')
rebuild = importlib.import_module('freespace_seg.training.rebuild')

W, H = 160, 90


# Torch on one thread, restored after each test (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures('torch_one_thread')


def write_user_images(folder, n=6, seed=5):
    """Write n tinted rendered frames with 0/255 masks, half beside, half in masks/."""
    os.makedirs(os.path.join(folder, 'masks'), exist_ok=True)
    for i, (rgb, mask) in enumerate(datasets.rendered_frames(n, seed, W, H)):
        # A warm tint and lower contrast: a visible shift away from the synthetic domain.
        tinted = np.clip(rgb.astype(np.float32) * [1.0, 0.8, 0.6] * 0.7 + 40, 0, 255)
        bgr = cv2.cvtColor(tinted.astype(np.uint8), cv2.COLOR_RGB2BGR)
        stem = f'real_{i:02d}'
        if i % 2:
            cv2.imwrite(os.path.join(folder, stem + '.png'), bgr)
            cv2.imwrite(os.path.join(folder, stem + '_mask.png'), mask * 255)
        else:
            cv2.imwrite(os.path.join(folder, stem + '.jpg'), bgr)
            cv2.imwrite(os.path.join(folder, 'masks', stem + '.png'), mask)


def test_rebuilt_shipped_unet_matches_onnxruntime():
    path = packaged_model_path(PACKAGED_UNET_MODEL)
    model = rebuild.rebuild_torch_model(path)
    card = load_card(path)
    assert list(model.widths) == [16, 24, 48, 96, 128]
    assert model.num_classes == card.num_classes
    x = np.random.default_rng(0).uniform(
        -1.0, 1.0, size=(1, 3, card.input_height, card.input_width)).astype(np.float32)
    diff = export.compare_with_torch(model, path, inputs=x, threads=1)
    assert diff <= 1e-4
    # BatchNorm stays in eval mode (its statistics are folded into the convs) in train().
    model.train()
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert model.training and len(bns) == 18 and not any(m.training for m in bns)
    assert torch.equal(bns[0].running_mean, torch.zeros_like(bns[0].running_mean))


def test_module_path_from_node_names():
    assert rebuild.onnx_module_path('/enc2/enc2.0/enc2.0.0/Conv') == 'enc2.0.0'
    assert rebuild.onnx_module_path('/dec4/conv/conv.0/conv.0.0/Conv') == 'dec4.conv.0.0'
    assert rebuild.onnx_module_path('/head/Conv') == 'head'
    assert rebuild.onnx_module_path('Conv_3') is None


def test_finetune_end_to_end(tmp_path, capsys):
    images = tmp_path / 'real'
    write_user_images(str(images))
    out = tmp_path / 'ft' / 'mine.onnx'
    rc = cli.main(['finetune', '--images', str(images), '--out', str(out), '--steps', '5',
                   '--batch-size', '2', '--val-fraction', '0.34', '--threads', '1',
                   '--seed', '1', '--log-every', '0'])
    assert rc == 0
    text = capsys.readouterr().out
    assert 'held-out mIoU' in text

    card = load_card(str(out))
    assert card.name == 'mine' and card.model_file == 'mine.onnx'
    base = load_card(packaged_model_path())
    assert card.input_shape == base.input_shape
    assert card.class_names == base.class_names and card.free_space == base.free_space
    assert card.palette == base.palette
    training = card.raw['training']
    assert training['base_model']['name'] == base.name   # the packaged default
    assert training['data']['num_images'] == 6
    assert training['data']['num_train'] == 4 and training['data']['num_val'] == 2
    assert len(training['data']['val_images']) == 2
    assert training['steps'] == 5 and training['seed'] == 1
    assert 'finetune' in training['command'] and '--steps 5' in training['command']
    assert training['rebuild_max_abs_diff_vs_onnx'] <= 1e-4
    val = card.raw['evaluation']['user_val']
    assert val['images'] == 2
    assert 0.0 <= val['miou_before'] <= 1.0 and 0.0 <= val['miou_after'] <= 1.0

    pipe = SegmentationPipeline(str(out), backend='onnxruntime', num_threads=1)
    try:
        rgb, _ = next(datasets.rendered_frames(1, 99, W, H))
        mask = pipe.segment(rgb)
    finally:
        pipe.close()
    assert mask.shape == (H, W) and mask.dtype == np.uint8
    assert set(np.unique(mask)) <= {0, 1}


def test_replay_mixes_synthetic_frames_in_and_the_card_says_so(tmp_path, capsys):
    images = tmp_path / 'real'
    write_user_images(str(images), n=4)
    replay = tmp_path / 'synthetic'
    assert cli.main(['generate', '--out', str(replay), '--num', '10', '--width', str(W),
                     '--height', str(H), '--seed', '3']) == 0
    out = tmp_path / 'ft' / 'mine.onnx'
    rc = cli.main(['finetune', '--images', str(images), '--out', str(out), '--steps', '2',
                   '--batch-size', '2', '--val-fraction', '0.25', '--threads', '1',
                   '--log-every', '0', '--replay', str(replay), '--replay-frames', '5'])
    assert rc == 0
    assert '5 synthetic frames of' in capsys.readouterr().out
    card = load_card(str(out))
    data = card.raw['training']['data']
    assert data['num_train'] == 3 and data['replay']['frames'] == 5
    assert any('synthetic frames of' in s and 'replayed' in s for s in card.raw['data_sources'])
    assert '--replay' in card.raw['training']['command']

    assert cli.main(['finetune', '--images', str(images), '--out', str(tmp_path / 'b.onnx'),
                     '--replay', str(tmp_path / 'nowhere')]) == 2
    assert 'no such folder' in capsys.readouterr().err


def test_clear_errors(tmp_path, capsys):
    empty = tmp_path / 'empty'
    empty.mkdir()
    assert cli.main(['finetune', '--images', str(empty), '--out', str(tmp_path / 'a.onnx')]) == 2
    assert 'no images' in capsys.readouterr().err

    lonely = tmp_path / 'lonely'
    lonely.mkdir()
    cv2.imwrite(str(lonely / 'cam.png'), np.zeros((H, W, 3), np.uint8))
    assert cli.main(['finetune', '--images', str(lonely), '--out', str(tmp_path / 'a.onnx')]) == 2
    err = capsys.readouterr().err
    assert 'without a mask' in err and 'cam_mask.png' in err

    cv2.imwrite(str(lonely / 'cam_mask.png'), np.zeros((H // 2, W, 3), np.uint8))
    assert cli.main(['finetune', '--images', str(lonely), '--out', str(tmp_path / 'a.onnx')]) == 2
    assert 'size mismatch' in capsys.readouterr().err
    assert not (tmp_path / 'a.onnx').exists()
