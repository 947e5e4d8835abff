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

"""grid-rules --data: the grid rules on the frames of a dataset folder (generate2, generate)."""

import json
import math
import os
import shutil

from freespace_seg.cli import main as cli_main
from freespace_seg.tools.grid_rules import camera_of, DEFAULT_RULES
import pytest
from support import REPO

MODEL = os.path.join(REPO, 'models', 'freespace_lite0_int8.onnx')
RULES = DEFAULT_RULES.split(',')
MEASURES = ('free_iou', 'false_free', 'missed', 'called_free', 'phantom')


@pytest.fixture(scope='module')
def scenes2(tmp_path_factory):
    """Four frames of generate2 (seed 9: two pinhole, two equidistant lenses), 160x90."""
    out = str(tmp_path_factory.mktemp('grid_rules') / 'scenes2')
    assert cli_main(['generate2', '--out', out, '--num', '4', '--seed', '9', '--width', '160',
                     '--height', '90']) == 0
    return out


def _run(args, tmp_path):
    out, js = str(tmp_path / 'rules.md'), str(tmp_path / 'rules.json')
    rc = cli_main(['grid-rules'] + args + ['--out', out, '--json', js])
    with open(js, encoding='utf-8') as f:
        data = json.load(f)
    with open(out, encoding='utf-8') as f:
        return rc, data, f.read()


def test_the_model_is_scored_on_a_folder_with_every_rule_and_measure(scenes2, tmp_path, capsys):
    rc, data, text = _run(['--data', scenes2, '--model', MODEL, '--by-lens'], tmp_path)
    assert rc == 0
    sets = ['scenes2/test', 'scenes2/test, equidistant', 'scenes2/test, pinhole']
    assert list(data['result']) == sets
    for name in sets:
        assert list(data['result'][name]) == RULES
        for rule in RULES:
            r = data['result'][name][rule]
            assert all(0.0 <= r[m] <= 1.0 for m in MEASURES), (name, rule, r)
    assert data['frames']['scenes2/test']['scored'] == 4
    assert data['frames']['scenes2/test, equidistant']['scored'] == 2
    assert data['result']['scenes2/test']['plain']['frames'] == 4
    assert text.startswith(f'`python -m freespace_seg grid-rules --data {scenes2} --split test '
                           '--by-lens`; model `freespace_lite0_int8.onnx`; scenes2/test: 4 '
                           'frames, 4 scored;')
    assert len([line for line in text.splitlines() if line.startswith('| scenes2')]) == 18
    printed = capsys.readouterr().out
    assert 'scenes2/test: 4 frames, 4 scored' in printed
    assert '| scenes2/test | `plain` |' in printed


def test_the_true_mask_has_no_false_free_cells_on_a_folder(scenes2, tmp_path):
    rc, data, _ = _run(['--data', scenes2, '--perception', 'truth'], tmp_path)
    assert rc == 0
    rows = data['result']['scenes2/test']
    for rule in RULES:
        assert rows[rule]['false_free'] == 0.0 and rows[rule]['phantom'] == 0.0, rule
        assert rows[rule]['free_iou'] > 0.9, rule
    assert rows['plain']['free_iou'] == 1.0 and rows['plain']['missed'] == 0.0


def test_mask_widths_score_each_rule_on_the_node_s_narrower_copy(scenes2, tmp_path):
    rules = 'plain,run0.1+conf0.97+mark0.5+free0.6+behind0.97'
    rc, data, text = _run(['--data', scenes2, '--model', MODEL, '--rules', rules,
                           '--mask-widths', '0,80'], tmp_path)
    assert rc == 0
    names = rules.split(',')
    rows = data['result']['scenes2/test']
    assert list(rows) == names + [f'{n} @80' for n in names]
    # Width 0 is the rule as scored alone; half the width projects another (coarser) mask.
    _, alone, _ = _run(['--data', scenes2, '--model', MODEL, '--rules', rules], tmp_path)
    assert {n: rows[n] for n in names} == alone['result']['scenes2/test']
    assert rows['plain @80'] != rows['plain'] and rows['plain @80']['frames'] == 4
    assert '--mask-widths 0,80`' in text.splitlines()[0]
    assert '| scenes2/test | `plain` @80 | ' in text
    # The true mask, shrunk as the node shrinks it (an erosion), is never free off the floor.
    rc, truth, _ = _run(['--data', scenes2, '--perception', 'truth', '--rules', rules,
                         '--mask-widths', '80,40'], tmp_path)
    assert rc == 0
    for key, r in truth['result']['scenes2/test'].items():
        assert r['false_free'] == 0.0, key


def test_frames_that_cannot_be_projected_are_counted(scenes2, tmp_path):
    folder = str(tmp_path / 'set')
    shutil.copytree(scenes2, folder)
    path = os.path.join(folder, 'samples.jsonl')
    with open(path, encoding='utf-8') as f:
        records = [json.loads(line) for line in f]
    records[0]['mount']['z'] = -0.2              # under the floor
    records[1]['mount']['pitch'] = -1.5          # looking at the ceiling
    records[2]['intrinsics']['distortion_model'] = 'fov'
    with open(path, 'w', encoding='utf-8') as f:
        f.writelines(json.dumps(r) + '\n' for r in records)
    rc, data, text = _run(['--data', folder, '--perception', 'truth'], tmp_path)
    assert rc == 0
    counts = data['frames']['set/test']
    assert counts['frames'] == 4 and counts['scored'] == 1
    reasons = sorted(counts['skipped'])
    assert len(reasons) == 3 and sum(counts['skipped'].values()) == 3
    assert reasons[0].startswith('cannot be projected: the camera must be above the floor')
    assert reasons[1].startswith('cannot be projected: unsupported distortion model')
    assert reasons[2] == 'no pixel ray meets the floor within 3 m'
    assert [s['frame'] for s in counts['skipped_frames']] == [
        '000000_image.png', '000001_image.png', '000002_image.png']
    assert data['result']['set/test']['plain']['frames'] == 1
    assert '1 scored, 3 not scored (' in text


def test_a_first_generator_folder_keeps_its_base_frame_mount(tmp_path):
    folder = str(tmp_path / 'sim')
    assert cli_main(['generate', '--out', folder, '--num', '2', '--seed', '4', '--width', '160',
                     '--height', '90', '--splits', '0,0,1']) == 0
    rc, data, _ = _run(['--data', folder, '--perception', 'truth', '--rules', 'plain'],
                       tmp_path)
    assert rc == 0 and data['frames']['sim/test']['scored'] == 2
    assert data['result']['sim/test']['plain']['free_iou'] == 1.0
    with open(os.path.join(folder, 'samples.jsonl'), encoding='utf-8') as f:
        record = json.loads(f.readline())
    _, mount = camera_of(record)
    assert (mount.yaw, mount.pitch) == (record['mount']['yaw'], record['mount']['pitch'])


def test_a_second_generator_mount_is_put_under_the_camera():
    record = {'intrinsics': {'width': 160, 'height': 90, 'fx': 60.0, 'fy': 60.0, 'cx': 79.5,
                             'cy': 44.5, 'distortion_model': 'equidistant',
                             'distortion': [0.0] * 4},
              'mount': {'x': 3.1, 'y': 6.0, 'z': 0.3, 'roll': 0.01, 'pitch': 0.4,
                        'yaw': -2.5}}
    intrinsics, mount = camera_of(record)
    assert intrinsics.is_fisheye
    assert (mount.x, mount.y, mount.z, mount.roll, mount.pitch, mount.yaw) == (
        0.0, 0.0, 0.3, 0.01, 0.4, 0.0)
    assert math.isclose(intrinsics.fx, 60.0)


def test_bad_input_exits_2(scenes2, tmp_path, capsys):
    def refused(args, message):
        assert cli_main(['grid-rules', '--perception', 'truth'] + args) == 2
        assert message in capsys.readouterr().err

    refused(['--data', str(tmp_path / 'none')], 'no dataset folder')
    empty = tmp_path / 'empty'
    empty.mkdir()
    refused(['--data', str(empty)], 'has no samples.jsonl')
    refused(['--data', scenes2, '--split', 'train'], "has no frame of split 'train'")
    refused(['--data', scenes2, '--frames', '3'], '--frames only apply to rendered rooms')
    refused(['--data', scenes2, '--limit', '0'], '--limit must be at least 1')
    refused(['--limit', '2'], '--limit and --by-lens only apply to --data')
    refused(['--data', scenes2, '--mask-widths', '640px'], '--mask-widths takes whole numbers')
    refused(['--data', scenes2, '--mask-widths', ','], '--mask-widths needs at least one width')
    broken = tmp_path / 'broken'
    shutil.copytree(scenes2, broken)
    with open(broken / 'samples.jsonl', encoding='utf-8') as f:
        records = [json.loads(line) for line in f]
    del records[1]['mount']
    (broken / 'samples.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in records))
    refused(['--data', str(broken)], 'line 2 (test/000001_image.png) has no intrinsics or no '
                                     'mount')
    records[1]['mount'] = {'x': 0.0}
    (broken / 'samples.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in records))
    refused(['--data', str(broken)], 'mount.y is missing or not a number')
    records[1]['mount'] = {'x': 0.0, 'y': 0.0, 'z': 0.3, 'roll': 0.0, 'pitch': 0.3, 'yaw': 0.0}
    (broken / 'samples.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in records))
    os.remove(broken / 'test' / '000003_mask.png')
    refused(['--data', str(broken)], '000003_mask.png')


def test_drives_score_each_rule_with_and_without_agreement_in_odom(tmp_path, capsys):
    args = ['--drives', '1', '--drive-seconds', '1.5', '--frame-every', '0.25', '--sets', '1',
            '--width', '160', '--height', '90', '--rules', 'plain', '--agreement', '1,3,3/2']
    rc, data, text = _run(args + ['--perception', 'truth'], tmp_path)
    assert rc == 0
    rows = data['result']['held-out']
    assert list(rows) == ['plain', 'plain ~3/3', 'plain ~3/2']
    # The two frames before the third are the warm-up of 3 grids: 6 - 2 frames scored.
    assert data['frames'] == {'held-out': 4}
    for row in rows.values():
        assert row['false_free'] == 0.0 and row['frames'] == 4
    # Agreement only takes free cells away: never a higher free IoU than the grids alone.
    assert rows['plain ~3/3']['free_iou'] <= rows['plain ~3/2']['free_iou'] <= \
        rows['plain']['free_iou']
    assert '`plain ~3/3`' in text and '--drives 1' in text
    rc, data, _ = _run(args + ['--model', MODEL], tmp_path)
    assert rc == 0 and 0.0 <= data['result']['held-out']['plain']['free_iou'] <= 1.0


def test_drives_score_each_rule_with_an_occlusion_memory_before_the_agreement(tmp_path):
    args = ['--drives', '1', '--drive-seconds', '2', '--frame-every', '0.25', '--sets', '1',
            '--width', '160', '--height', '90', '--rules', 'plain', '--agreement', '1,2',
            '--occlusion', '0,10']
    rc, data, text = _run(args + ['--perception', 'truth'], tmp_path)
    assert rc == 0
    rows = data['result']['held-out']
    assert list(rows) == ['plain', 'plain ~2/2', 'plain occ10', 'plain occ10 ~2/2']
    for row in rows.values():
        assert row['false_free'] == 0.0 and row['frames'] == 7
    # The memory only takes free cells away.
    assert rows['plain occ10']['free_iou'] <= rows['plain']['free_iou']
    assert rows['plain occ10 ~2/2']['free_iou'] <= rows['plain ~2/2']['free_iou']
    assert '`plain occ10`' in text and '--occlusion 0,10' in text


@pytest.mark.parametrize('extra, message', [
    (['--occlusion', '-1'], 'grid occlusion memory'),
    (['--occlusion', 'ten'], "bad --occlusion 'ten'"),
    (['--agreement', '3/4'], 'grid agreement'),
    (['--drives', '0'], '--drives must be at least 1'),
    (['--frame-every', '0'], '--frame-every must be > 0'),
    (['--frames', '10'], '--frames does not apply to --drives'),
    (['--mask-widths', '0,640'], '--mask-widths does not apply'),
])
def test_bad_drive_options_exit_2(extra, message, capsys):
    assert cli_main(['grid-rules', '--drives', '1', '--perception', 'truth'] + extra) == 2
    assert message in capsys.readouterr().err


def test_drive_options_without_drives_exit_2(capsys):
    assert cli_main(['grid-rules', '--agreement', '3', '--perception', 'truth']) == 2
    assert '--agreement only apply to --drives' in capsys.readouterr().err


def test_exact_int8_is_named_in_the_table(scenes2, tmp_path):
    """``--exact-int8`` scores the INT8 copy as a CPU with VNNI computes it, and says so."""
    rc, data, text = _run(['--data', scenes2, '--model', MODEL, '--exact-int8',
                           '--rules', 'plain'], tmp_path)
    assert rc == 0 and data['result']['scenes2/test']['plain']['frames'] == 4
    assert 'model `freespace_lite0_int8.onnx`, exact INT8 arithmetic (--exact-int8)' in text
