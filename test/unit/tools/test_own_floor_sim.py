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

"""own-floor-sim: drive, record a bag, autolabel, finetune, quantize, check, on tiny settings."""

import json
import os

from freespace_seg import cli
import pytest
import yaml

pytest.importorskip('rosbags', reason='own-floor-sim writes and reads rosbag2 with rosbags')
pytest.importorskip('torch', reason='own-floor-sim fine-tunes with torch')


def test_the_loop_writes_bags_labels_models_and_checks(tmp_path, capsys):
    out = tmp_path / 'loop'
    rc = cli.main(['own-floor-sim', str(out), '--rooms', '2', '--minutes', '0.1',
                   '--frame-every', '1.0', '--width', '240', '--height', '135',
                   '--steps', '2', '--batch-size', '2', '--eval-frames', '2',
                   '--quantize-frames', '2', '--threads', '1', '--grow', '6'])
    text = capsys.readouterr().out
    assert rc == 0
    assert sorted(os.listdir(out / 'bags')) == ['room_300', 'room_301']
    labels = os.listdir(out / 'labels')
    assert any(n.startswith('room_300_') for n in labels)
    assert any(n.startswith('room_301_') for n in labels)
    assert len([n for n in labels if n.endswith('_mask.png')]) * 2 == len(labels)
    for name in ('own_floor.onnx', 'own_floor.yaml', 'own_floor_int8.onnx'):
        assert (out / 'model' / name).is_file()
    # synthetic frames replayed in the fine-tuning (generated into OUT/replay by default)
    card = yaml.safe_load((out / 'model' / 'own_floor.yaml').read_text())
    assert card['training']['data']['replay']['frames'] >= 1
    assert any('replayed in the fine-tuning' in s for s in card['data_sources'])
    data = json.loads((out / 'summary.json').read_text())
    total = data['labels']['all']
    assert total['frames'] == len(labels) // 2
    # drive-over labels, grown where the model agrees, against the renderer's exact masks
    assert total['free_precision'] >= 0.995
    checks = {(c['model'], c['style']) for c in data['checks']}
    assert checks == {(m, s) for m in ('base fp32', 'base INT8', 'fine-tuned fp32',
                                       'fine-tuned INT8') for s in ('shifted', 'default')}
    assert all(0.0 < c['miou'] <= 1.0 for c in data['checks'])
    # the change rows: fine-tuned minus base, per precision and style
    by = {(c['model'], c['style']): c for c in data['checks']}
    assert len(data['changes']) == 4
    for change in data['changes']:
        p, s = change['precision'], change['style']
        assert change['miou'] == pytest.approx(
            by[(f'fine-tuned {p}', s)]['miou'] - by[(f'base {p}', s)]['miou'], abs=1e-4)
        assert change['blocked_called_free'] == pytest.approx(
            by[(f'fine-tuned {p}', s)]['blocked_called_free']
            - by[(f'base {p}', s)]['blocked_called_free'], abs=1e-4)
    assert '| change, fp32 |' in text and '| change, INT8 |' in text
    assert '## Labels' in text and 'fine-tuned INT8' in text
    assert text.strip().endswith((out / 'summary.md').read_text().strip())


def test_held_out_rooms_of_the_style_are_seen_from_the_drive_s_camera_heights():
    import argparse

    from freespace_seg.tools import own_floor_sim

    parser = argparse.ArgumentParser()
    own_floor_sim.add_arguments(parser)
    assert own_floor_sim._eval_cameras(parser.parse_args(['out'])) == []
    high = parser.parse_args(['out', '--camera-height', '0.6', '1'])
    assert own_floor_sim._eval_cameras(high) == ['--camera-height', '0.6,1']
    # eval takes the option as it is given
    eval_parser = argparse.ArgumentParser()
    from freespace_seg.training import evaluate
    evaluate.add_arguments(eval_parser)
    args = eval_parser.parse_args(['--render', '2'] + own_floor_sim._eval_cameras(high))
    assert args.camera_height == (0.6, 1.0)


def test_the_robot_is_as_tall_as_asked_or_as_its_camera():
    import argparse

    from freespace_seg.ground.geometry import CameraMount
    from freespace_seg.tools import own_floor_sim

    parser = argparse.ArgumentParser()
    own_floor_sim.add_arguments(parser)
    mount = CameraMount(z=0.8, pitch=0.3)
    assert own_floor_sim.robot_height(parser.parse_args(['out']), mount) is None
    assert own_floor_sim.robot_height(parser.parse_args(['out', '--robot-height', '1.1']),
                                      mount) == 1.1
    camera = parser.parse_args(['out', '--robot-height', 'camera'])
    assert abs(own_floor_sim.robot_height(camera, mount) - 0.85) < 1e-9


def test_bad_options_and_an_existing_out_are_refused(tmp_path, capsys):
    assert cli.main(['own-floor-sim', str(tmp_path / 'a'), '--rooms', '0']) == 2
    assert '--rooms' in capsys.readouterr().err
    assert cli.main(['own-floor-sim', str(tmp_path / 'b'), '--camera-height', '0.5',
                     '0.1']) == 2
    assert '--camera-height' in capsys.readouterr().err
    assert cli.main(['own-floor-sim', str(tmp_path / 'd'), '--grow', '-1']) == 2
    assert '--grow' in capsys.readouterr().err
    assert cli.main(['own-floor-sim', str(tmp_path / 'e'), '--robot-height', 'tall']) == 2
    assert '--robot-height takes a height in metres' in capsys.readouterr().err
    (tmp_path / 'c').mkdir()
    assert cli.main(['own-floor-sim', str(tmp_path / 'c')]) == 2
    assert 'exists' in capsys.readouterr().err
    assert not any((tmp_path / n).exists() for n in 'abd')
