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

"""The seeds command: one recipe, several training seeds, the spread of their scores."""

import importlib
import json

from freespace_seg import cli
import numpy as np
import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='export checks need the onnx package')
seeds = importlib.import_module('freespace_seg.training.seeds')

RECIPE = ['--render', '4', '--render-val', '2', '--render-size', '64x36', '--steps', '3',
          '--batch-size', '2', '--input-size', '64x48', '--widths', '4,4,8,8,8',
          '--val-every', '3', '--log-every', '3', '--latency-runs', '1', '--threads', '1']


def _run(out_dir, seed_text):
    return cli.main(['seeds', '--seeds', seed_text, '--test-render', '3', '--test-size',
                     '64x36', '--threads', '1', '--out-dir', str(out_dir), '--name', 'm',
                     '--', *RECIPE])


def _weights(path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(path))
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def test_spread_is_the_mean_and_sample_std():
    s = seeds.spread([0.9, 0.92, 0.94])
    assert s['mean'] == pytest.approx(0.92)
    assert s['std'] == pytest.approx(0.02)
    assert (s['min'], s['max']) == (0.9, 0.94)


@pytest.mark.parametrize('text, fragment', [('0', 'at least two'), ('1,1', 'repeated'),
                                            ('a,b', 'integers')])
def test_bad_seed_lists_are_rejected(text, fragment):
    with pytest.raises(seeds.SeedsError, match=fragment):
        seeds.parse_seeds(text)


def test_options_owned_by_seeds_and_bad_recipes_exit_2(tmp_path, capsys):
    rc = cli.main(['seeds', '--out-dir', str(tmp_path), '--', '--render', '4', '--seed', '3'])
    assert rc == 2 and '--seed' in capsys.readouterr().err
    rc = cli.main(['seeds', '--out-dir', str(tmp_path), '--', '--no-such-option'])
    assert rc == 2 and 'do not parse' in capsys.readouterr().err
    rc = cli.main(['seeds', '--out-dir', str(tmp_path)])
    assert rc == 2 and 'recipe' in capsys.readouterr().err


@pytest.mark.slow
def test_two_seeds_train_score_and_report_a_reproducible_spread(tmp_path):
    assert _run(tmp_path / 'a', '0,1') == 0
    result = json.loads((tmp_path / 'a' / 'seeds.json').read_text())
    rows = result['runs']
    assert [r['seed'] for r in rows] == [0, 1]
    for r in rows:
        assert 0.0 <= r['test_miou'] <= 1.0 and 0.0 <= r['best_val_miou'] <= 1.0
    values = [r['test_miou'] for r in rows]
    assert result['spread']['test_miou']['mean'] == pytest.approx(np.mean(values))
    assert result['spread']['test_miou']['std'] == pytest.approx(np.std(values, ddof=1))
    report = (tmp_path / 'a' / 'seeds.md').read_text()
    assert report.count('\n| 0 |') == 1 and '| **std** |' in report
    # Different seeds train different weights...
    w0 = _weights(tmp_path / 'a' / 'seed0' / 'm_seed0.onnx')
    w1 = _weights(tmp_path / 'a' / 'seed1' / 'm_seed1.onnx')
    assert any(not np.array_equal(w0[k], w1[k]) for k in w0)
    # ... and the same seed, run again, the same ones and the same scores.
    assert _run(tmp_path / 'b', '0,2') == 0
    again = json.loads((tmp_path / 'b' / 'seeds.json').read_text())['runs'][0]
    assert again['seed'] == 0 and again['test_miou'] == rows[0]['test_miou']
    w0b = _weights(tmp_path / 'b' / 'seed0' / 'm_seed0.onnx')
    assert all(np.array_equal(w0[k], w0b[k]) for k in w0)
