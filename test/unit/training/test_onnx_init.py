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

"""Training on from an ONNX model (`train --init model.onnx`): BatchNorm statistics restored."""

import importlib

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
import pytest
from support import trained_looking

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='rebuilding from ONNX needs the onnx package')
pytest.importorskip('onnxruntime', reason='the rebuild is checked with onnxruntime')
unet = importlib.import_module('freespace_seg.training.model')
export = importlib.import_module('freespace_seg.training.export')
errors = importlib.import_module('freespace_seg.training.errors')
rebuild = importlib.import_module('freespace_seg.training.rebuild')
loop = importlib.import_module('freespace_seg.training.loop')

pytestmark = pytest.mark.usefixtures('torch_one_thread')

WIDTHS = (8, 8, 16, 16, 24)


@pytest.fixture
def exported(tmp_path):
    model = trained_looking(unet.build_model(widths=WIDTHS, context=True))
    path = str(tmp_path / 'm.onnx')
    export.export_onnx(model, path, 96, 64)
    return model, path


def test_unfolded_batchnorm_keeps_the_function_and_trains_from_it(exported):
    original, path = exported
    rebuilt = rebuild.rebuild_torch_model(path)
    torch.manual_seed(3)
    x = torch.randn(6, 3, 64, 96)
    with torch.no_grad():
        want = original(x)

    # As rebuilt, every BatchNorm is an identity normalization: exact in eval mode, but a
    # training batch normalizes by its own statistics and computes something else.
    plain = unet.build_model(widths=WIDTHS, context=True)
    plain.load_state_dict(rebuilt.state_dict())
    with torch.no_grad():
        assert torch.allclose(plain.eval()(x), want, atol=1e-4)
        assert (plain.train()(x) - want).abs().max() > 0.1

    rebuild.unfold_batchnorm(rebuilt, x, batch_size=len(x))
    model = unet.build_model(widths=WIDTHS, context=True)
    model.load_state_dict(rebuilt.state_dict())
    bn = next(m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert bn.running_var.min() > 0
    assert not torch.allclose(bn.running_mean, torch.zeros_like(bn.running_mean))
    with torch.no_grad():
        assert torch.allclose(model.eval()(x), want, atol=1e-4)
    # As close to ONNX Runtime as the model that was exported (float rounding only).
    exported_diff = export.compare_with_torch(original, path, inputs=x[:2].numpy())
    assert export.compare_with_torch(model, path, inputs=x[:2].numpy()) <= exported_diff + 1e-4
    with torch.no_grad():
        # The statistics were measured on this very batch, so a training-mode pass over it
        # normalizes every layer exactly as eval mode does.
        assert torch.allclose(model.train()(x), want, atol=1e-3), \
            (model(x) - want).abs().max()


def test_unfold_needs_frames(exported):
    rebuilt = rebuild.rebuild_torch_model(exported[1])
    with pytest.raises(rebuild.RebuildError, match='no frames'):
        rebuild.unfold_batchnorm(rebuilt, torch.zeros(0, 3, 64, 96))


def test_onnx_init_state_measures_on_training_frames(exported):
    _, path = exported
    torch.manual_seed(4)
    x = torch.randint(0, 256, (10, 3, 64, 96), dtype=torch.uint8)
    y = torch.randint(0, 2, (10, 64, 96), dtype=torch.uint8)
    state = loop.onnx_init_state(path, x, y, frames=4)
    assert state['widths'] == list(WIDTHS) and state['context'] is True
    assert state['batchnorm_frames'] == 4
    assert state['rebuild_max_abs_diff_vs_onnx'] < 1e-3
    model = unet.build_model(widths=WIDTHS, context=True)
    assert unet.load_weights(model, state['model']) == []
    assert export.compare_with_torch(model, path) < 1e-3
    with pytest.raises(errors.TrainError, match='no such file'):
        loop.onnx_init_state(path + '.missing.onnx', x, y)


def test_train_init_from_the_shipped_onnx_model_widens(tmp_path, capsys):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    shipped = 'models/freespace_unet.onnx'
    base = load_card(shipped).raw['training']
    argv = ['train', '--render', '4', '--render-val', '2', '--render-size', '120x68',
            '--steps', '2', '--batch-size', '2', '--input-size', '128x80',
            '--val-every', '2', '--log-every', '1', '--latency-runs', '2', '--threads', '1',
            '--context', '--init', shipped]
    # Same widths: loads as is. Wider: only with --widen, as from a checkpoint.
    out = str(tmp_path / 'same.onnx')
    assert cli.main(argv + ['--out', out, '--work-dir', str(tmp_path / 'a')]) == 0
    printed = capsys.readouterr().out
    assert 'BatchNorm statistics from 4 training frames' in printed
    training = load_card(out).raw['training']
    assert training['init']['checkpoint'] == shipped
    assert training['init']['rebuilt_from_onnx']['batchnorm_frames'] == 4
    assert training['init']['rebuilt_from_onnx']['rebuild_max_abs_diff_vs_onnx'] < 1e-3
    assert training['init']['val_miou'] == base['best_val_miou']
    # The chain of commands carries on from the shipped model's.
    assert training['command'].startswith(base['command'] + ' && ')
    assert '--init ' + shipped in training['command'].split(' && ')[-1]

    wide = argv + ['--widths', ','.join(map(str, (24, 32, 64, 128, 192)))]
    with pytest.raises(SystemExit, match=r'does not fit.*train --widen'):
        cli.main(wide + ['--out', str(tmp_path / 'no.onnx'), '--work-dir', str(tmp_path / 'b')])
    out = str(tmp_path / 'wide.onnx')
    assert cli.main(wide + ['--widen', '--out', out, '--work-dir', str(tmp_path / 'c')]) == 0
    assert 'widened in 18 blocks' in capsys.readouterr().out
    init = load_card(out).raw['training']['init']
    assert init['widened_from'] == [16, 24, 48, 96, 128]
    assert init['widened_blocks']['bottom.1'] == [128, 192]


def test_train_init_refuses_an_onnx_model_that_is_not_the_unet(tmp_path):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    bad = tmp_path / 'bad.onnx'
    bad.write_bytes(b'not an onnx file')
    argv = ['train', '--render', '2', '--render-val', '1', '--render-size', '64x36',
            '--steps', '1', '--batch-size', '1', '--input-size', '64x48', '--threads', '1',
            '--init', str(bad), '--out', str(tmp_path / 'x.onnx'),
            '--work-dir', str(tmp_path / 'w')]
    with pytest.raises(SystemExit, match=r'--init .*bad.onnx: cannot load ONNX model'):
        cli.main(argv)
    # A missing file is refused before any frame is rendered.
    argv[argv.index('--init') + 1] = str(tmp_path / 'missing.onnx')
    cache = tmp_path / 'cache'
    with pytest.raises(SystemExit, match=r'--init .*missing.onnx: no such file'):
        cli.main(argv + ['--render-cache', str(cache)])
    assert not cache.exists()
