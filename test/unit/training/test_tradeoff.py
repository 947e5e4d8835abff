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

"""The tradeoff command: re-exports of a real (tiny) UNet at other sizes, scored and timed."""

import argparse
import contextlib
import importlib
import io
import json
import os

import cv2
from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
from freespace_seg.perception.pipeline import packaged_model_path, PACKAGED_UNET_MODEL
import numpy as np
import pytest
from support import randomize_batchnorm, write_tiny_model

torch = pytest.importorskip('torch', reason='re-exports need torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='the ONNX -> torch rebuild needs the onnx package')
ort = pytest.importorskip('onnxruntime', reason='the scores need onnxruntime')
# Imported only once torch is known to be there.
export = importlib.import_module('freespace_seg.training.export')
model_lib = importlib.import_module('freespace_seg.training.model')
train = importlib.import_module('freespace_seg.training.train')
tradeoff = importlib.import_module('freespace_seg.training.tradeoff')
dump_card = importlib.import_module('freespace_seg.training.card').dump_card

BASE_W, BASE_H = 64, 48
WIDTHS = (4, 6, 8, 8, 8)
FRAME = '96x64'


# Torch on one thread, restored after each test (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures('torch_one_thread')


@pytest.fixture(scope='module')
def base(tmp_path_factory):
    """Export a tiny FreespaceUNet with non-trivial BatchNorm at 64x48, with its card."""
    torch.manual_seed(0)
    model = randomize_batchnorm(model_lib.build_model(widths=WIDTHS), mean=0.2).eval()
    folder = tmp_path_factory.mktemp('base')
    path = str(folder / 'tinyunet.onnx')
    export.export_and_verify(model, path, BASE_W, BASE_H)
    card = train.build_card('tinyunet', 'tinyunet.onnx', BASE_W, BASE_H, training={},
                            evaluation={}, latency={}, data_seed=0)
    dump_card(card, str(folder / 'tinyunet.yaml'))
    return model, path


def folded_params(model):
    """Conv weights plus one bias per output channel: the count after BatchNorm folding."""
    return sum(m.weight.numel() + m.out_channels for m in model.modules()
               if isinstance(m, torch.nn.Conv2d))


def test_parse_sizes():
    assert tradeoff.parse_size('480x272') == (480, 272)
    assert tradeoff.parse_size(' 64X48 ') == (64, 48)
    assert tradeoff.parse_sizes('32x32,64x48,32x32,') == [(32, 32), (64, 48)]
    with pytest.raises(tradeoff.TradeoffError, match='expected WIDTHxHEIGHT'):
        tradeoff.parse_size('480by272')
    with pytest.raises(tradeoff.TradeoffError, match='multiples of 16'):
        tradeoff.parse_size('480x270')
    assert tradeoff.parse_size('480x270', multiple=None) == (480, 270)
    assert tradeoff.parse_sizes('384x216', multiple=8) == [(384, 216)]
    with pytest.raises(tradeoff.TradeoffError, match='no size'):
        tradeoff.parse_sizes(' , ')


def _parsed(argv):
    parser = argparse.ArgumentParser()
    tradeoff.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.model is None:
        args.model = packaged_model_path(PACKAGED_UNET_MODEL)
    return args


def test_reproduce_command_spells_out_every_option():
    """The recorder writes the command line: defaults spelled out, repeats kept, INT8 gated."""
    common = ('--render 200 --seed 1000 --style default --frame-size 480x270 --threads 1 '
              '--runs 100 --rounds 5 --warmup 10')
    out = '--out data/tradeoff --work-dir data/tradeoff/models'
    assert tradeoff.reproduce_command(_parsed([])) == (
        f'python -m freespace_seg tradeoff --sizes {tradeoff.DEFAULT_SIZES} {common} {out}')
    args = _parsed(['--model', 'm.onnx', '--sizes', '320x176', '--size-multiple', '8',
                    '--extra-model', 'a b.onnx', '--extra-model', 'c.onnx', '--int8',
                    '--int8-sizes', '320x176', '--calib-frames', '8'])
    assert tradeoff.reproduce_command(args) == (
        'python -m freespace_seg tradeoff --model m.onnx --sizes 320x176 --size-multiple 8 '
        f"--extra-model 'a b.onnx' --extra-model c.onnx {common} --int8 --calib-frames 8 "
        f'--int8-sizes 320x176 {out}')
    # without --int8, its options are left out even when given
    args = _parsed(['--calib-frames', '8', '--int8-sizes', '320x176'])
    assert '--calib-frames' not in tradeoff.reproduce_command(args)
    assert '--int8-sizes' not in tradeoff.reproduce_command(args)


def test_reexport_has_the_size_and_the_original_logits(base, tmp_path):
    model, path = base
    rebuilt, card, diff = tradeoff.load_base_model(path)
    assert diff <= 1e-4 and list(rebuilt.widths) == list(WIDTHS)
    out, card_path, export_diff = tradeoff.export_size(rebuilt, card, path, 96, 32,
                                                       str(tmp_path))
    assert os.path.basename(out) == 'tinyunet_96x32.onnx' and export_diff <= 1e-3
    assert tradeoff.onnx_input_shape(out) == [1, 3, 32, 96]
    new_card = load_card(out)
    assert new_card.path == card_path and new_card.name == 'tinyunet_96x32'
    assert (new_card.input_width, new_card.input_height) == (96, 32)
    assert new_card.raw['reexport']['trained_input_size'] == [BASE_W, BASE_H]
    assert new_card.class_names == card.class_names and new_card.mean == card.mean

    # The re-export computes what the original torch network computes at that size.
    x = np.random.default_rng(3).uniform(-1, 1, size=(1, 3, 32, 96)).astype(np.float32)
    session = ort.InferenceSession(out, providers=['CPUExecutionProvider'])
    got = session.run(None, {'input': x})[0]
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert got.shape == want.shape == (1, 2, 32, 96)
    assert np.abs(got - want).max() <= 1e-4

    params, precision = tradeoff.onnx_info(out)
    assert precision == 'fp32' and params == folded_params(model)


@pytest.fixture(scope='module')
def run_result(base, tmp_path_factory):
    """Run the command once: two sizes (fp32 and INT8) and an extra model."""
    _, path = base
    folder = tmp_path_factory.mktemp('run')
    extra = write_tiny_model(str(folder), width=64, height=48, name='extra')
    out, work = folder / 'out', folder / 'work'
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        rc = cli.main(['tradeoff', '--model', path, '--sizes', '32x32,64x48', '--render', '3',
                       '--frame-size', FRAME, '--runs', '3', '--rounds', '3', '--warmup', '1',
                       '--threads', '1', '--int8', '--calib-frames', '2', '--extra-model', extra,
                       '--out', str(out), '--work-dir', str(work)])
    return rc, out, work, stdout.getvalue()


def test_run_writes_one_row_per_size(base, run_result):
    model, _ = base
    rc, out, work, stdout = run_result
    assert rc == 0
    with open(out / 'tradeoff.json') as f:
        result = json.load(f)
    labels = [r['label'] for r in result['rows']]
    assert labels == ['32x32', '32x32 int8', '64x48', '64x48 int8',
                      'tiny_green_is_free 64x48']
    assert result['reference'] == '64x48'
    assert result['settings']['frames'] == 3 and result['settings']['threads'] == 1
    for row in result['rows']:
        assert 0.0 <= row['miou'] <= 1.0 and row['images'] == 3
        assert set(row['iou']) == {'blocked', 'free'}
        assert row['latency']['runs'] == 3 and row['latency']['rounds'] == 3
        assert row['latency']['threads'] == 1
        assert row['latency']['p50_ms'] > 0 and row['latency']['p95_ms'] > 0
        assert os.path.isfile(row['path'])
        assert tradeoff.onnx_input_shape(row['path'])[2:] == row['input'][::-1]
    rows = {r['label']: r for r in result['rows']}
    assert rows['32x32']['input'] == [32, 32] and rows['64x48 int8']['input'] == [64, 48]
    # 96x64 frames: 32x21 in 32x32 (5 rows above, 6 below), 64x43 in 64x48 (2 and 3).
    assert rows['32x32']['letterbox_pad'] == [0, 5, 0, 6]
    assert rows['64x48']['letterbox_pad'] == [0, 2, 0, 3]
    extra = rows['tiny_green_is_free 64x48']
    assert [rows['32x32']['precision'], rows['32x32 int8']['precision'],
            extra['precision']] == ['fp32', 'int8', 'fp32']
    # The INT8 copy counts the same weights; the 1x1-conv extra model has 6 weights.
    assert rows['32x32']['params'] == rows['32x32 int8']['params'] == folded_params(model)
    assert extra['params'] == 6 and extra['kind'] == 'extra'
    assert rows['64x48']['p50_vs_ref'] == 1.0 and rows['64x48']['miou_vs_ref'] == 0.0
    assert rows['32x32 int8']['p50_vs_ref'] == pytest.approx(
        rows['32x32 int8']['latency']['p50_ms'] / rows['64x48']['latency']['p50_ms'], abs=1e-3)
    assert sorted(os.listdir(work)) == sorted(
        f'tinyunet_{s}{q}.{e}' for s in ('32x32', '64x48') for q in ('', '_int8')
        for e in ('onnx', 'yaml'))
    assert load_card(str(work / 'tinyunet_32x32_int8.onnx')).input_shape == (1, 3, 32, 32)

    md = (out / 'tradeoff.md').read_text()
    table = [line for line in md.splitlines() if line.startswith('| ')]
    assert len(table) == 1 + 5  # header and one line per row
    assert '**64x48** (ref)' in md and 'p50 ms' in table[0] and 'IoU free' in table[0]
    assert '| 32x32 | 5+6 rows | fp32 |' in table[1]
    assert 'not what a model trained for that size would score' in md
    assert table[1] in stdout and 'tradeoff.png' in stdout


def test_plot_is_a_real_png(run_result):
    _, out, _, _ = run_result
    with open(out / 'tradeoff.png', 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    img = cv2.imread(str(out / 'tradeoff.png'))
    assert img is not None and img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert (img < 128).any() and (img == 255).any()  # drawn on, not blank


def test_time_models_interleaves_rounds(tiny_model, tmp_path):
    other = write_tiny_model(str(tmp_path), width=96, height=64, name='other')
    stats = tradeoff.time_models([tiny_model, other], threads=1, runs=5, warmup=1, rounds=2)
    assert len(stats) == 2
    for st in stats:
        assert st['runs'] == 6 and st['rounds'] == 2  # 5 runs in 2 rounds: 3 per round
        assert 0 < st['p50_ms'] <= st['p95_ms'] <= st['max_ms']
        # fps = 1000 / mean (both rounded: a tiny model's mean is a few hundredths of a ms)
        assert st['fps'] == pytest.approx(1000.0 / st['mean_ms'], rel=0.1)


@pytest.mark.parametrize('extra_args, message', [
    (['--sizes', '480by272'], 'expected WIDTHxHEIGHT'),
    (['--sizes', '64x50'], 'multiples of 16'),
    (['--render', '0'], '--render must be at least 1'),
    (['--size-multiple', '0'], '--size-multiple must be at least 1'),
    (['--rounds', '0'], '--rounds must be at least 1'),
    (['--frame-size', 'big'], '--frame-size'),
    (['--int8-sizes', '32x32'], '--int8-sizes needs --int8'),
    (['--int8', '--int8-sizes', '96x96'], 'not in --sizes'),
    (['--extra-model', 'no/such.onnx'], '--extra-model not found'),
])
def test_bad_options_exit_2(base, tmp_path, capsys, extra_args, message):
    _, path = base
    out = tmp_path / 'out'
    rc = cli.main(['tradeoff', '--model', path, '--sizes', '32x32', '--out', str(out),
                   '--work-dir', str(tmp_path / 'work')] + extra_args)
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and 'Traceback' not in err
    assert not out.exists()


def test_bad_models_exit_2(tmp_path, capsys, tiny_model):
    out = tmp_path / 'out'
    args = ['--render', '1', '--out', str(out), '--work-dir', str(tmp_path / 'work')]
    assert cli.main(['tradeoff', '--model', str(tmp_path / 'missing.onnx')] + args) == 2
    assert 'model not found' in capsys.readouterr().err
    # A model with a valid card that is not the UNet of this package cannot be re-exported.
    assert cli.main(['tradeoff', '--model', tiny_model] + args) == 2
    assert 'expected the 4-level UNet' in capsys.readouterr().err
    assert not out.exists()
