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

"""The prune command: channel selection, exact cuts through the skips, a tiny real run."""

import importlib
import os

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
from freespace_seg.perception.pipeline import (packaged_model_path, PACKAGED_UNET_MODEL,
                                               SegmentationPipeline)
from freespace_seg.training import data as datasets
import numpy as np
import pytest

torch = pytest.importorskip('torch', reason='pruning needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='the ONNX -> torch rebuild needs the onnx package')
pytest.importorskip('onnxruntime', reason='the checks need onnxruntime')
# Imported only once torch is known to be there.
export = importlib.import_module('freespace_seg.training.export')
rebuild = importlib.import_module('freespace_seg.training.rebuild')
prune = importlib.import_module('freespace_seg.training.prune')
pruning = importlib.import_module('freespace_seg.training.pruning')
card_mod = importlib.import_module('freespace_seg.training.card')
evaluate = importlib.import_module('freespace_seg.training.evaluate')
unet = importlib.import_module('freespace_seg.training.model')

W, H = 64, 48          # network input (not a multiple of 32: odd skip sizes)
CAM_W, CAM_H = 64, 36  # rendered camera frames, letterboxed into W x H


# Torch on one thread, restored after each test (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures('torch_one_thread')


def randomized_model(widths, seed=0):
    """Return a UNet in eval mode with random BatchNorm scales, shifts and statistics."""
    torch.manual_seed(seed)
    model = unet.build_model(widths=widths)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=gen))
                m.bias.copy_(0.2 * torch.randn(n, generator=gen))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(n, generator=gen))
        model.head.bias.copy_(torch.randn(model.num_classes, generator=gen))
    return model.eval()


def kill_channels(model, block, idx):
    """Make output channels ``idx`` of ``block`` exactly zero after its ReLU."""
    conv, bn = model.get_submodule(block)[0], model.get_submodule(block)[1]
    with torch.no_grad():
        conv.weight[idx] = 0.0
        bn.weight[idx] = 0.0
        bn.bias[idx] = 0.0


@pytest.mark.parametrize('scope', ['all', 'inner'])
def test_cutting_dead_channels_keeps_the_logits(scope):
    model = randomized_model((8, 8, 8, 8, 8))
    rng = np.random.default_rng(1)
    dead = {}
    for block in pruning.SCOPES[scope]:
        dead[block] = sorted(rng.choice(8, size=2, replace=False).tolist())
        kill_channels(model, block, dead[block])
    x = torch.from_numpy(rng.uniform(-1, 1, (2, 3, H, W)).astype(np.float32))
    with torch.no_grad():
        want = model(x)

    # 25 % of 8 channels: exactly the two dead ones go, in every block of the scope.
    pruned, keep = pruning.prune_model(model, 0.25, scope=scope)
    assert set(keep) == set(pruning.SCOPES[scope])
    for block, idx in keep.items():
        assert idx.tolist() == [c for c in range(8) if c not in dead[block]]
        assert pruned.channels[block] == 6
    untouched = set(unet.BLOCKS) - set(pruning.SCOPES[scope])
    assert all(pruned.channels[b] == 8 for b in untouched)
    with torch.no_grad():
        got = pruned.eval()(x)
    assert got.shape == want.shape
    assert float((got - want).abs().max()) <= 1e-5
    assert unet.count_parameters(pruned) < unet.count_parameters(model)
    assert model.channels['enc1'] == 8  # the source is left as it was

    # Not vacuous: cutting live channels of a skip-connected block changes the logits.
    gone = dead.get('enc1', [])
    live = [c for c in range(8) if c not in gone]
    other = pruning.prune_channels(model, dict(keep, enc1=sorted(gone[:1] + live[1:6])))
    with torch.no_grad():
        assert float((other.eval()(x) - want).abs().max()) > 1e-3


def test_parameter_count_follows_the_ratio():
    model = unet.build_model()
    full = unet.count_parameters(model)
    pruned, keep = pruning.prune_model(model, 0.5, scope='all')
    # Every block keeps half of its channels: the UNet of half the widths, ~1/4 the weights.
    half = unet.build_model(widths=tuple(c // 2 for c in unet.DEFAULT_WIDTHS))
    assert unet.count_parameters(pruned) == unet.count_parameters(half)
    assert 0.23 <= unet.count_parameters(pruned) / full <= 0.27
    assert len(keep) == len(unet.BLOCKS)

    inner, _ = pruning.prune_model(model, 0.5, scope='inner')
    fraction = unet.count_parameters(inner) / full
    assert 0.5 <= fraction <= 0.75
    assert inner.channels['enc2.1'] == 24 and inner.channels['enc2.0'] == 12
    assert pruning.multiply_adds(pruned, 480, 272) < 0.3 * pruning.multiply_adds(model, 480, 272)


def test_kept_count_minimum_and_multiple():
    assert pruning.kept_count(16, 0.5) == 8
    assert pruning.kept_count(8, 0.25) == 6
    assert pruning.kept_count(8, 0.9, min_channels=4) == 4
    assert pruning.kept_count(3, 0.9, min_channels=4) == 3
    assert pruning.kept_count(24, 0.5, multiple=8) == 16
    assert pruning.kept_count(12, 0.99) == 1


def test_importance_of_a_rebuilt_model_is_the_l1_norm_of_its_onnx_kernels():
    import onnx

    path = packaged_model_path(PACKAGED_UNET_MODEL)
    model = rebuild.rebuild_torch_model(path)
    scores = pruning.channel_importance(model)
    # A plain L1 norm of the rebuilt (unit-RMS) kernels says nothing: the scale is in the BN.
    plain = model.enc3[0][0].weight.detach().abs().sum(dim=(1, 2, 3))
    assert float(plain.std() / plain.mean()) < 0.3
    convs = {rebuild.onnx_module_path(node.name): w
             for node, w, _ in rebuild._onnx_convs(onnx.load(path))}
    for block in ('stem', 'enc3.0', 'bottom.1', 'dec1.conv.1'):
        want = np.abs(convs[block + '.0']).sum(axis=(1, 2, 3))
        np.testing.assert_allclose(scores[block].numpy(), want, rtol=1e-4)


@pytest.fixture(scope='module')
def tiny_source(tmp_path_factory):
    """Export a tiny UNet with its card; write render cache files of letterboxed frames."""
    folder = tmp_path_factory.mktemp('source')
    torch.set_num_threads(1)
    model = randomized_model((8, 8, 16, 16, 16), seed=3)
    path = str(folder / 'tiny_unet.onnx')
    export.export_and_verify(model, path, W, H)
    card = card_mod.build_card('tiny_unet', 'tiny_unet.onnx', W, H,
                               {'command': 'python -m freespace_seg train --widths 8,8,16,16,16'},
                               {}, {}, 0)
    card_mod.dump_card(card, str(folder / 'tiny_unet.yaml'))
    cache = str(folder / 'cache')
    datasets.rendered_letterboxed(6, 0, CAM_W, CAM_H, W, H, 0, cache_dir=cache)
    datasets.rendered_letterboxed(2, 1, CAM_W, CAM_H, W, H, 0, cache_dir=cache)
    files = sorted(os.listdir(cache))
    train_npz = os.path.join(cache, next(f for f in files if '-n6-s0-' in f))
    val_npz = os.path.join(cache, next(f for f in files if '-n2-s1-' in f))
    return path, train_npz, val_npz


def test_prune_command_end_to_end(tmp_path, capsys, tiny_source):
    source, train_npz, val_npz = tiny_source
    out = tmp_path / 'pruned' / 'tiny_p50.onnx'
    rc = cli.main(['prune', '--model', source, '--ratio', '0.5', '--frames-npz', train_npz,
                   '--val-frames-npz', val_npz, '--render-size', f'{CAM_W}x{CAM_H}',
                   '--steps', '3', '--batch-size', '2', '--val-every', '2', '--log-every', '0',
                   '--threads', '1', '--eval-frames', '3', '--latency-runs', '2',
                   '--latency-rounds', '1', '--int8', '--int8-frames', '4', '--out', str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert 'before fine-tuning' in text and 'pruned mIoU' in text

    card = load_card(str(out))
    assert card.name == 'tiny_p50' and card.model_file == 'tiny_p50.onnx'
    assert card.input_shape == (1, 3, H, W)
    training, pruning = card.raw['training'], card.raw['pruning']
    assert training['steps'] == 3 and training['seed'] == 0
    assert training['source_model']['name'] == 'tiny_unet'
    assert '--ratio 0.5' in training['command'] and '--int8' in training['command']
    assert training['data']['num_train'] == 6 and training['data']['num_val'] == 2
    assert training['data']['seed'] == 0
    assert training['data']['renderer_source_hash'] == datasets.renderer_fingerprint()
    # Fine-tuned on the default camera ranges: the node checks its mount against them.
    assert card.camera_ranges == {'camera_height': (0.1, 0.5), 'camera_pitch': (0.0, 0.6)}
    assert any('freespace_seg.sim' in s for s in card.raw['data_sources'])
    assert pruning['ratio'] == 0.5 and pruning['scope'] == 'all'
    half = unet.count_parameters(unet.build_model(widths=(4, 4, 8, 8, 8)))
    assert training['params'] == pruning['params']['pruned'] == half
    assert pruning['params']['source'] == unet.count_parameters(
        unet.build_model(widths=(8, 8, 16, 16, 16)))
    test = card.raw['evaluation']['synthetic_test']
    assert test['images'] == 3 and test['split_seed'] == 1000
    assert datasets.renderer_fingerprint() in test['source']
    same = pruning['same_session']
    assert set(same) == {'pruned', 'source', 'pruned_int8'}
    assert all(0.0 <= same[k]['synthetic_test_miou'] <= 1.0 for k in same)
    assert set(card.raw['latency_ms']) == {'onnxruntime_cpu_1threads_64x48_median',
                                           'onnxruntime_cpu_2threads_64x48_median'}

    int8_path = str(tmp_path / 'pruned' / 'tiny_p50_int8.onnx')
    int8_card = load_card(int8_path)
    assert 'quantization' in int8_card.raw
    assert int8_card.raw['evaluation']['synthetic_test']['images'] == 3
    assert int8_card.raw['latency_ms']

    rgb, _ = next(datasets.rendered_frames(1, 99, CAM_W, CAM_H))
    for path in (str(out), int8_path):
        pipe = SegmentationPipeline(path, backend='onnxruntime', num_threads=1)
        try:
            mask = pipe.segment(rgb)
        finally:
            pipe.close()
        assert mask.shape == (CAM_H, CAM_W) and set(np.unique(mask)) <= {0, 1}

    assert os.path.getsize(out) < os.path.getsize(source)
    # Uniform pruning of every block gives a plain narrower UNet, which `finetune` rebuilds.
    rebuilt = rebuild.rebuild_torch_model(str(out))
    assert rebuilt.widths == (4, 4, 8, 8, 8)
    assert export.compare_with_torch(rebuilt, str(out), threads=1) <= 1e-4


def test_prune_without_finetuning_renders_its_frames(tmp_path, tiny_source):
    source, _, _ = tiny_source
    out = tmp_path / 'p.onnx'
    rc = cli.main(['prune', '--model', source, '--ratio', '0.25', '--scope', 'inner',
                   '--render', '2', '--render-val', '0', '--render-size', f'{CAM_W}x{CAM_H}',
                   '--steps', '0', '--threads', '1', '--eval-frames', '0',
                   '--latency-runs', '0', '--out', str(out)])
    assert rc == 0
    card = load_card(str(out))
    assert card.raw['training']['steps'] == 0
    assert card.raw['pruning']['channels_kept']['enc2.0'] == '6/8'
    assert 'enc2.1' not in card.raw['pruning']['channels_kept']
    assert card.raw['evaluation'] == {} and card.raw['latency_ms'] == {}


@pytest.mark.parametrize('extra, message', [
    (['--ratio', '1.5'], '--ratio must be in (0, 1)'),
    (['--ratio', '0'], '--ratio must be in (0, 1)'),
    (['--model', 'no/such/model.onnx'], 'no such file'),
    (['--render', '4'], 'exactly one of --frames-npz'),
    (['--frames-npz', 'no/such.npz', '--steps', '1'], '--frames-npz no/such.npz: no such file'),
    (['--min-channels', '0'], '--min-channels'),
])
def test_bad_arguments_exit_2(tmp_path, capsys, tiny_source, extra, message):
    source, train_npz, _ = tiny_source
    args = ['prune', '--model', source, '--frames-npz', train_npz, '--threads', '1',
            '--out', str(tmp_path / 'x.onnx')]
    if '--frames-npz' in extra:
        args = args[:3] + args[5:]
    rc = cli.main(args + extra)
    assert rc == 2
    err = capsys.readouterr().err
    assert message in err and 'Traceback' not in err
    assert not (tmp_path / 'x.onnx').exists()


def test_frames_of_another_size_are_refused(tmp_path, capsys, tiny_source):
    source, _, _ = tiny_source
    wrong = str(tmp_path / 'wrong.npz')
    np.savez(wrong, images=np.zeros((2, 36, 64, 3), np.uint8),
             labels=np.zeros((2, 36, 64), np.uint8))
    rc = cli.main(['prune', '--model', source, '--frames-npz', wrong, '--threads', '1',
                   '--out', str(tmp_path / 'x.onnx')])
    assert rc == 2
    err = capsys.readouterr().err
    assert '(N, 48, 64, 3)' in err and 'Traceback' not in err
    rc = cli.main(['prune', '--model', source, '--frames-npz', wrong, '--threads', '1',
                   '--out', source])
    assert rc == 2
    assert '--out must differ from --model' in capsys.readouterr().err


def test_cache_record_reads_the_camera_ranges_from_the_name():
    base = 'render-n40-s4-480x270-480x272-p0'
    plain = prune._cache_record(f'/x/{base}-a2047a84672d.npz')
    assert plain['seed'] == 4 and plain['image_size'] == [480, 270]
    assert plain['renderer_source_hash'] == 'a2047a84672d'
    assert plain['camera_height'] == [0.1, 0.5] and plain['camera_pitch'] == [0.0, 0.6]
    high = prune._cache_record(f'{base}-h0.1_1.2-pt-0.1_0.8-a2047a84672d.npz')
    assert high['camera_height'] == [0.1, 1.2] and high['camera_pitch'] == [-0.1, 0.8]
    assert high['renderer_source_hash'] == 'a2047a84672d'
    assert datasets.camera_key({'camera_height': (0.1, 1.2), 'camera_pitch': (-0.1, 0.8)}) \
        == '-h0.1_1.2-pt-0.1_0.8'
    assert 'seed' not in prune._cache_record('frames.npz')
