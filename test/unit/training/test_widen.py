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

"""Widening a trained UNet (`train --init narrow.pt --widen --widths ...`)."""

import importlib

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
import pytest
from support import trained_looking

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='export checks need the onnx package')
pytest.importorskip('onnxruntime', reason='export checks need onnxruntime')
unet = importlib.import_module('freespace_seg.training.model')

pytestmark = pytest.mark.usefixtures('torch_one_thread')

NARROW = (8, 8, 16, 16, 24)
WIDE = (12, 16, 24, 32, 40)


@pytest.mark.parametrize('narrow_branch, wide_branch',
                         [(False, False), (True, True), (False, True)])
def test_the_widened_model_computes_what_the_checkpoint_did(narrow_branch, wide_branch):
    narrow = trained_looking(unet.build_model(widths=NARROW, context=narrow_branch))
    torch.manual_seed(1)
    wide = unet.build_model(widths=WIDE, context=wide_branch)
    widened = unet.widen_weights(wide, narrow.state_dict())
    assert widened['bottom.1'] == (24, 40) and widened['dec1.conv.1'] == (8, 12)
    assert len(widened) == len(unet.BLOCKS)
    wide.eval()
    x = torch.randn(2, 3, 64, 96)
    with torch.no_grad():
        before, after = narrow(x), wide(x)
    assert after.shape == before.shape
    assert torch.allclose(before, after, atol=1e-4), (before - after).abs().max()
    # The new channels are live, and the zero weights by which old channels read them get a
    # gradient: training brings them in.
    wide.train()
    wide(x)[:, 1].mean().backward()
    reading_new = wide.dec1.conv[0][0].weight.grad[:8, 8:16]   # old rows, new upsampled inputs
    assert reading_new.abs().sum() > 0
    assert wide.head.weight.grad[:, 8:].abs().sum() > 0


def test_a_pruned_checkpoint_widens_back_to_full_width():
    cut = {'enc3.0': 10, 'dec2.conv.0': 5}
    pruned = trained_looking(unet.build_model(widths=WIDE, channels=cut))
    full = unet.build_model(widths=WIDE)
    assert unet.widen_weights(full, pruned.state_dict()) == {'enc3.0': (10, 24),
                                                             'dec2.conv.0': (5, 16)}
    full.eval()
    x = torch.randn(1, 3, 48, 64)
    with torch.no_grad():
        assert torch.allclose(pruned(x), full(x), atol=1e-4)


def test_checkpoints_that_cannot_widen_are_refused():
    narrow = unet.build_model(widths=NARROW).state_dict()
    with pytest.raises(ValueError, match=r'wider than the model at .*bottom\.0 \(40 > 24\)'):
        unet.widen_weights(unet.build_model(widths=NARROW), unet.build_model(
            widths=WIDE).state_dict())
    with pytest.raises(ValueError, match='--context'):
        unet.widen_weights(unet.build_model(widths=WIDE),
                           unet.build_model(widths=NARROW, context=True).state_dict())
    with pytest.raises(ValueError, match='3 classes'):
        unet.widen_weights(unet.build_model(widths=WIDE),
                           unet.build_model(num_classes=3, widths=NARROW).state_dict())
    with pytest.raises(ValueError, match='not a FreespaceUNet checkpoint'):
        unet.widen_weights(unet.build_model(widths=WIDE), {'stem.0.weight': narrow[
            'stem.0.weight']})


@pytest.mark.slow
def test_train_widen_continues_from_a_narrower_checkpoint(tmp_path, capsys):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    narrow = tmp_path / 'narrow.pt'
    torch.save({'model': trained_looking(unet.build_model(widths=NARROW)).state_dict(),
                'step': 5, 'widths': list(NARROW)}, str(narrow))
    argv = ['train', '--render', '4', '--render-val', '2', '--render-size', '64x36',
            '--steps', '2', '--batch-size', '2', '--input-size', '64x48',
            '--widths', ','.join(map(str, WIDE)), '--val-every', '2', '--log-every', '1',
            '--latency-runs', '2', '--threads', '1', '--init', str(narrow)]
    # Without --widen the width mismatch is refused, with a pointer to the flag.
    with pytest.raises(SystemExit, match=r'does not fit.*train --widen'):
        cli.main(argv + ['--out', str(tmp_path / 'no.onnx'), '--work-dir', str(tmp_path / 'a')])
    out = str(tmp_path / 'wide.onnx')
    assert cli.main(argv + ['--widen', '--out', out, '--work-dir', str(tmp_path / 'b')]) == 0
    assert 'widened in 18 blocks' in capsys.readouterr().out
    training = load_card(out).raw['training']
    assert '--widen' in training['command']
    assert training['init']['widened_from'] == list(NARROW)
    assert training['init']['widened_blocks']['bottom.1'] == [24, 40]
    best = torch.load(str(tmp_path / 'b' / 'best.pt'), map_location='cpu')
    assert list(best['widths']) == list(WIDE)
