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

"""Robust fine-tuning options of ``train``: LP-FT, layer-wise rates, cosine, decoder widths."""

import importlib

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnxruntime', reason='the export checks need onnxruntime')
backbone = importlib.import_module('freespace_seg.training.backbone')
augment = importlib.import_module('freespace_seg.training.augment')
loop = importlib.import_module('freespace_seg.training.loop')

pytestmark = pytest.mark.usefixtures('torch_one_thread')


def _frames(n=2, h=32, w=48):
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 255, (n, 3, h, w), dtype=torch.uint8, generator=gen)
    y = torch.randint(0, 2, (n, h, w), dtype=torch.uint8, generator=gen)
    return x, y


def _train(model, steps, **kw):
    x, y = _frames()
    logs = []
    loop.train_model(model, x, y, steps=steps, batch_size=2, lr=1e-3, augment_data=False,
                     log_every=1, progress_bar=False, log=logs.append, **kw)
    return logs


def test_frozen_encoder_phase_trains_the_decoder_alone_then_everything():
    torch.manual_seed(0)
    model = backbone.LiteUNet('lite0', pretrained=False)
    enc = {k: v.clone() for k, v in model.encoder.state_dict().items()}
    dec = {k: v.clone() for k, v in model.ups.state_dict().items()}
    logs = _train(model, 2, encoder_frozen_steps=2)
    # Weights and BatchNorm statistics of the encoder are untouched; the decoder trained.
    assert all(torch.equal(v, model.encoder.state_dict()[k]) for k, v in enc.items())
    assert not all(torch.equal(v, model.ups.state_dict()[k]) for k, v in dec.items())
    assert any('decoder only' in m for m in logs)
    # Every parameter trains again afterwards.
    assert all(p.requires_grad for p in model.parameters())

    torch.manual_seed(0)
    model = backbone.LiteUNet('lite0', pretrained=False)
    logs = _train(model, 3, encoder_frozen_steps=2)
    changed = [k for k, v in enc.items() if not torch.equal(v, model.encoder.state_dict()[k])]
    assert changed and any('encoder trains too' in m for m in logs)


def test_encoder_stages_cover_the_encoder_once():
    model = backbone.LiteUNet('lite0', pretrained=False)
    stages = model.encoder_stages()
    assert len(stages) == 5 and all(stages)
    ids = [id(p) for s in stages for p in s]
    assert len(ids) == len(set(ids))
    assert set(ids) == {id(p) for p in model.encoder_parameters()}


def test_layer_wise_decay_gives_deeper_stages_higher_rates():
    model = backbone.LiteUNet('lite0', pretrained=False)
    seen = []
    real = torch.optim.AdamW

    class Spy(real):

        def __init__(self, groups, **kw):
            super().__init__(groups, **kw)
            seen.append(self)

    try:
        torch.optim.AdamW = Spy
        _train(model, 1, encoder_lr_scale=0.5, encoder_lr_decay=0.5)
    finally:
        torch.optim.AdamW = real
    # One-cycle keeps each group's peak in 'max_lr'.
    peaks = {id(p): g['max_lr'] for g in seen[0].param_groups for p in g['params']}
    stages = model.encoder_stages()
    for k, stage in enumerate(stages):
        want = 1e-3 * 0.5 * 0.5 ** (len(stages) - 1 - k)
        assert [peaks[id(p)] for p in stage] == pytest.approx([want] * len(stage))
    assert {peaks[id(p)] for p in model.head.parameters()} == {1e-3}


def test_cosine_schedule_warms_up_then_decays_to_zero():
    model = backbone.LiteUNet('lite0', pretrained=False)
    logs = _train(model, 4, schedule='cosine', warmup_steps=2)
    lrs = [float(m.split(' lr ')[1].split()[0]) for m in logs if ' lr ' in m]
    # After step i the rate is peak * min(1, (i + 1) / 2) * (1 + cos(pi * i / 4)) / 2.
    assert lrs == pytest.approx([8.5e-4, 5.0e-4, 1.5e-4, 0.0], abs=6e-6)
    with pytest.raises(ValueError, match='schedule'):
        _train(model, 1, schedule='linear')


def test_jitter_augmentation_is_seeded_and_keeps_labels():
    x = torch.rand(4, 3, 16, 24)
    y = torch.randint(0, 2, (4, 16, 24))
    a = augment.augment(x, y, torch.Generator().manual_seed(3), 'jitter')
    b = augment.augment(x, y, torch.Generator().manual_seed(3), 'jitter')
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert float(a[0].min()) >= 0.0 and float(a[0].max()) <= 1.0
    assert not torch.allclose(a[0], x) and not torch.allclose(a[0], x.flip(-1))
    # Labels are only flipped, never changed otherwise.
    for i in range(4):
        assert torch.equal(a[1][i], y[i]) or torch.equal(a[1][i], y[i].flip(-1))
    assert 'noise' in augment.augmentation_summary('jitter')


def test_lite_only_options_are_refused_for_the_unet(tmp_path):
    for extra in (['--decoder-widths', '8,8,8,8'], ['--encoder-lr-decay', '0.5'],
                  ['--encoder-frozen-steps', '3']):
        with pytest.raises(SystemExit, match='EfficientNet-Lite'):
            cli.main(['train', '--render', '2', '--steps', '1', '--out',
                      str(tmp_path / 'x.onnx')] + extra)


def test_train_records_robust_options_and_resumes(tmp_path):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    out = str(tmp_path / 'lite.onnx')
    base = ['train', '--arch', 'efficientnet-lite0', '--render', '4', '--render-val', '2',
            '--render-size', '96x54', '--steps', '4', '--batch-size', '2', '--input-size',
            '96x64', '--val-every', '2', '--log-every', '2', '--out', out, '--work-dir',
            str(tmp_path / 'run'), '--latency-runs', '2', '--threads', '1',
            '--decoder-widths', '24,16,16,8', '--schedule', 'cosine', '--warmup-steps', '1',
            '--encoder-frozen-steps', '2', '--encoder-lr-decay', '0.8', '--augment', 'jitter']
    assert cli.main(base + ['--time-limit', '0']) == 3
    assert cli.main(['train', '--resume', str(tmp_path / 'run'), '--latency-runs', '2']) == 0
    training = load_card(out).raw['training']
    assert training['decoder_widths'] == [24, 16, 16, 8]
    assert training['optimizer']['schedule'] == 'cosine after 1 warm-up steps'
    assert training['optimizer']['encoder_lr_decay'] == 0.8
    assert training['optimizer']['encoder_frozen_steps'] == 2
    for flag in ('--decoder-widths 24,16,16,8', '--schedule cosine', '--encoder-frozen-steps 2',
                 '--encoder-lr-decay 0.8', '--augment jitter'):
        assert flag in training['command']
    assert training['resumed_after_steps'] == [1]
