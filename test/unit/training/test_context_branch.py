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

"""The UNet's optional global-context branch (`train --context`): load, export, rebuild, prune."""

import importlib

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
import numpy as np
import pytest
from support import randomize_batchnorm

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
onnx = pytest.importorskip('onnx', reason='export checks need the onnx package')
pytest.importorskip('onnxruntime', reason='export checks need onnxruntime')
# Imported only once torch is known to be there.
figures = importlib.import_module('freespace_seg.training.figures')
export = importlib.import_module('freespace_seg.training.export')
rebuild = importlib.import_module('freespace_seg.training.rebuild')
pruning = importlib.import_module('freespace_seg.training.pruning')
unet = importlib.import_module('freespace_seg.training.model')

pytestmark = pytest.mark.usefixtures('torch_one_thread')

WIDTHS = (8, 8, 16, 16, 32)
BRANCH = ['context.fc1.bias', 'context.fc1.weight', 'context.fc2.bias', 'context.fc2.weight']


def small(context, seed=0, live=False):
    """Return a small UNet in eval mode; ``live``: random (non-zero) branch output weights."""
    torch.manual_seed(seed)
    model = randomize_batchnorm(unet.build_model(widths=WIDTHS, context=context), mean=0.1,
                                var=(0.5, 1.5), affine=False)
    with torch.no_grad():
        if context and live:
            torch.nn.init.normal_(model.context.fc2.weight, std=0.5)
            torch.nn.init.normal_(model.context.fc2.bias, std=0.5)
    return model.eval()


def test_a_plain_checkpoint_loads_into_the_branch_unchanged_and_the_branch_learns():
    plain = small(False)
    model = small(True, seed=1)
    assert sorted(unet.load_weights(model, plain.state_dict())) == BRANCH
    x = torch.randn(2, 3, 48, 64)
    with torch.no_grad():
        assert torch.equal(plain(x), model(x))
    # Zero output weights, but a gradient: training moves the branch off zero.
    model.train()
    model(x)[:, 1].mean().backward()
    assert model.context.fc2.weight.grad.abs().sum() > 0
    assert unet.count_parameters(model) - unet.count_parameters(plain) == 32 * 16 * 2 + 16 + 32


def test_checkpoints_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match='--context'):
        unet.load_weights(small(False), small(True).state_dict())
    other = unet.build_model(widths=(8, 8, 16, 16, 48), context=True)
    with pytest.raises(ValueError, match=r'in 2 blocks \(bottom.0 32 vs 48, bottom.1 32 vs 48\); '
                       r'the model is wider everywhere.*train --widen'):
        unet.load_weights(other, small(False).state_dict())
    with pytest.raises(ValueError, match=r'bottom.1 48 vs 32\)$'):
        unet.load_weights(small(True), other.state_dict())


def test_every_pixel_sees_the_whole_image_only_with_the_branch():
    # 640 px wide: the plain UNet's receptive field does not reach across.
    x = torch.randn(1, 3, 64, 640)
    y = x.clone()
    y[:, :, :, :16] += 3.0  # change only the left edge
    with torch.no_grad():
        for context, reaches in ((False, False), (True, True)):
            model = small(context, live=True)
            right = (model(x) - model(y))[..., -16:].abs().max().item()
            assert (right > 1e-4) == reaches, (context, right)


def test_export_and_rebuild_keep_the_branch(tmp_path):
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 48, 64)).astype(np.float32)
    for context in (True, False):
        path = str(tmp_path / f'm{int(context)}.onnx')
        model = small(context, live=True)
        assert export.export_and_verify(model, path, 64, 48, inputs=x) <= 1e-4
        proto = onnx.load(path)
        ops = [n.op_type for n in proto.graph.node]
        assert ('GlobalAveragePool' in ops) == context
        # The feature-map figure skips the branch's 1x1 maps.
        assert not any('context' in name for name in figures.auto_layers(proto))
        rebuilt = rebuild.rebuild_torch_model(path)
        assert (rebuilt.context is not None) == context
        assert export.compare_with_torch(rebuilt, path, inputs=x, threads=1) <= 1e-4


def test_pruning_the_bottom_block_cuts_the_branch_alike():
    model = small(True, live=True)
    x = torch.randn(1, 3, 48, 64)
    with torch.no_grad():
        same = pruning.prune_channels(model, {})
        assert torch.allclose(same(x), model(x), atol=1e-6)
        keep = torch.tensor([0, 3, 4, 9, 17, 30])
        cut = pruning.prune_channels(model, {'bottom.1': keep})
        assert tuple(cut.context.fc1.weight.shape) == (16, 6, 1, 1)
        assert tuple(cut.context.fc2.weight.shape) == (6, 16, 1, 1)
        # The same as the full model with the dropped channels silenced, branch included.
        gone = torch.ones(32, dtype=torch.bool)
        gone[keep] = False
        bn = model.bottom[1][1]
        bn.weight[gone] = 0.0
        bn.bias[gone] = 0.0
        model.context.fc2.weight[gone] = 0.0
        model.context.fc2.bias[gone] = 0.0
        assert torch.allclose(cut(x), model(x), atol=1e-5)


@pytest.mark.slow
def test_train_context_starts_from_a_plain_checkpoint(tmp_path, capsys):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    plain = tmp_path / 'plain.pt'
    torch.save({'model': small(False).state_dict(), 'step': 7}, str(plain))
    out = str(tmp_path / 'ctx.onnx')
    argv = ['train', '--render', '4', '--render-val', '2', '--render-size', '64x36',
            '--steps', '2', '--batch-size', '2', '--input-size', '64x48',
            '--widths', ','.join(map(str, WIDTHS)), '--val-every', '2', '--log-every', '1',
            '--work-dir', str(tmp_path / 'run'), '--latency-runs', '2', '--threads', '1']
    assert cli.main(argv + ['--context', '--init', str(plain), '--out', out]) == 0
    printed = capsys.readouterr().out
    assert '4 context-branch tensors start at zero' in printed
    assert 'with the global-context branch' in printed
    card = load_card(out)
    assert card.raw['training']['context_branch'] is True
    assert '--context' in card.raw['training']['command']
    assert 'global-context branch' in card.raw['description']
    best = torch.load(str(tmp_path / 'run' / 'best.pt'), map_location='cpu')
    assert best['context'] is True
    assert any(n.op_type == 'GlobalAveragePool' for n in onnx.load(out).graph.node)
    # Its checkpoint does not go into a model without the branch.
    with pytest.raises(SystemExit, match='does not fit'):
        cli.main(argv + ['--init', str(tmp_path / 'run' / 'best.pt'),
                         '--out', str(tmp_path / 'plain.onnx')])
