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

"""Camera height and pitch ranges of the pose randomization, and the options that set them."""

import argparse
from dataclasses import replace
import json
import os
import shlex
import shutil

from freespace_seg import cli
from freespace_seg.sim import default_intrinsics, random_sample, RandomizationConfig
from freespace_seg.sim.generate import add_arguments, camera_range, config_from_args
from freespace_seg.sim.randomization import CAMERA_HEIGHT_LIMITS, CAMERA_PITCH_LIMITS
from freespace_seg.training import data as datasets
from freespace_seg.training import train
import numpy as np
import pytest
import yaml

SMALL = default_intrinsics(160, 90)
HIGH = {'camera_height': (0.9, 1.2)}


def _sample(seed, config):
    return random_sample(np.random.default_rng(seed), intrinsics=SMALL, randomization=config)


@pytest.mark.parametrize('field, value, message', [
    ('camera_height', (0.5, 0.1), 'min <= max'),
    ('camera_height', (0.0, 1.0), 'outside the allowed'),
    ('camera_height', (0.1, 2.5), 'outside the allowed'),
    ('camera_height', (0.1,), 'two numbers'),
    ('camera_height', ('a', 1.0), 'two numbers'),
    ('camera_height', (float('nan'), 1.0), 'min <= max'),
    ('camera_pitch', (-1.0, 0.3), 'outside the allowed'),
    ('camera_pitch', (0.3, 1.5), 'outside the allowed'),
])
def test_config_rejects_bad_camera_ranges(field, value, message):
    with pytest.raises(ValueError, match=message):
        RandomizationConfig(**{field: value})


def test_config_accepts_its_defaults_and_the_limits():
    config = RandomizationConfig()
    assert config.camera_height == (0.1, 0.5) and config.camera_pitch == (0.0, 0.6)
    wide = RandomizationConfig(camera_height=CAMERA_HEIGHT_LIMITS,
                               camera_pitch=CAMERA_PITCH_LIMITS)
    assert RandomizationConfig.from_dict(wide.to_dict()) == wide


def test_drawn_poses_stay_inside_the_ranges_and_only_the_pose_moves():
    high = RandomizationConfig(**HIGH, camera_pitch=(0.2, 0.3))
    for seed in range(6):
        base = _sample(seed, RandomizationConfig())
        frame = _sample(seed, high)
        assert 0.9 <= frame.mount.z <= 1.2 and 0.2 <= frame.mount.pitch <= 0.3
        assert 0.1 <= base.mount.z <= 0.5
        # The draw order does not depend on the range: same room, obstacles and yaw.
        assert frame.mount.yaw == base.mount.yaw and frame.robot_pose == base.robot_pose
        assert len(frame.scene.obstacles) == len(base.scene.obstacles)
        assert not np.array_equal(frame.free, base.free)


def test_ranges_without_pose_jitter_change_nothing():
    still = RandomizationConfig().without('pose_jitter')
    a = _sample(3, still)
    b = _sample(3, replace(still, camera_height=(1.0, 1.1)))
    np.testing.assert_array_equal(a.image, b.image)


def test_range_option_parses_and_explains_errors():
    parse = camera_range('camera_height')
    assert parse('0.2,1.2') == (0.2, 1.2)
    for bad in ('1.2', '0.2,1.2,2', '1.2,0.2', 'x,1', '0.01,1'):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)
    assert camera_range('camera_pitch')('-0.1,0.4') == (-0.1, 0.4)


def test_generate_takes_the_ranges():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(['--out', 'x', '--num', '1', '--camera-height', '0.3,1.1',
                              '--camera-pitch', '0.1,0.5'])
    config = config_from_args(args)
    assert config.camera_height == (0.3, 1.1) and config.camera_pitch == (0.1, 0.5)
    assert config_from_args(parser.parse_args(['--out', 'x', '--num', '1'])) == \
        RandomizationConfig()
    with pytest.raises(SystemExit):
        parser.parse_args(['--out', 'x', '--num', '1', '--camera-height', '1,0.5'])


def test_rendered_frames_and_cache_names_follow_the_ranges(tmp_path):
    base = list(datasets.rendered_frames(2, 4, 96, 54))
    high = list(datasets.rendered_frames(2, 4, 96, 54, camera=HIGH))
    assert not np.array_equal(base[0][1], high[0][1])
    assert datasets.camera_key(None) == '' and datasets.camera_key({}) == ''
    # The defaults written out share the default cache: the frames are the same.
    assert datasets.camera_key({'camera_height': (0.1, 0.5), 'camera_pitch': (0, 0.6)}) == ''
    assert datasets.camera_key(HIGH) == '-h0.9_1.2'
    cache = str(tmp_path)
    datasets.rendered_letterboxed(2, 4, 96, 54, 96, 56, cache_dir=cache)
    images, labels = datasets.rendered_letterboxed(2, 4, 96, 54, 96, 56, cache_dir=cache,
                                                   camera=HIGH)
    names = sorted(os.listdir(cache))
    assert len(names) == 2 and any('-h0.9_1.2-' in n for n in names)
    np.testing.assert_array_equal(labels[0, 1:-1], high[0][1])
    again, _ = datasets.rendered_letterboxed(2, 4, 96, 54, 96, 56, cache_dir=cache,
                                             camera=HIGH)
    np.testing.assert_array_equal(again, images)


def test_train_records_the_ranges_in_its_command():
    parser, sub = cli.build_parser()
    train.add_arguments(sub.choices['train'])
    args = parser.parse_args(['train', '--render', '4', '--camera-height', '0.1,1.2'])
    words = shlex.split(train.reproduce_command(args))
    assert words[words.index('--camera-height') + 1] == '0.1,1.2'
    assert '--camera-pitch' not in words
    again = parser.parse_args(words[3:])
    assert again.camera_height == (0.1, 1.2)
    with pytest.raises(SystemExit):
        parser.parse_args(['train', '--render', '4', '--camera-pitch', '0.5,0.1'])


def test_train_refuses_ranges_with_a_generated_dataset(tmp_path):
    with pytest.raises(SystemExit, match='--render only'):
        cli.main(['train', '--data', str(tmp_path), '--camera-height', '0.2,1.0',
                  '--out', str(tmp_path / 'm.onnx')])


@pytest.mark.slow
def test_train_with_ranges_renders_them_and_writes_them_to_the_card(tmp_path):
    from freespace_seg.perception.model_card import load_card

    out = str(tmp_path / 'm.onnx')
    rc = cli.main(['train', '--render', '4', '--render-val', '2', '--render-size', '64x36',
                   '--steps', '2', '--batch-size', '2', '--input-size', '64x48',
                   '--widths', '8,8,16,16,32', '--val-every', '2', '--log-every', '1',
                   '--camera-height', '0.8,1.2', '--camera-pitch', '0.1,0.4',
                   '--render-cache', str(tmp_path / 'cache'),
                   '--out', out, '--work-dir', str(tmp_path / 'run'), '--latency-runs', '0'])
    assert rc == 0
    data = load_card(out).raw['training']['data']
    assert data['camera_height'] == [0.8, 1.2] and data['camera_pitch'] == [0.1, 0.4]
    assert all('-h0.8_1.2-pt0.1_0.4-' in n for n in os.listdir(str(tmp_path / 'cache')))


def test_eval_scores_high_cameras_under_their_own_key(shipped_model, tmp_path):
    model = shipped_model
    copy = str(tmp_path / 'm.onnx')
    shutil.copyfile(model, copy)
    shutil.copyfile(os.path.splitext(model)[0] + '.yaml', str(tmp_path / 'm.yaml'))
    rc = cli.main(['eval', '--model', copy, '--render', '2', '--width', '160', '--height',
                   '90', '--camera-height', '0.9,1.2', '--latency-runs', '0', '--figures', '0',
                   '--out', str(tmp_path / 'out'), '--update-card'])
    assert rc == 0
    with open(str(tmp_path / 'out' / 'metrics.json'), encoding='utf-8') as f:
        result = json.load(f)
    assert '0.9-1.2 m above the floor' in result['source']
    assert result['metrics']['images'] == 2
    with open(str(tmp_path / 'm.yaml'), encoding='utf-8') as f:
        evaluation = yaml.safe_load(f)['evaluation']
    entry = evaluation['synthetic_test_height_90_120cm']
    assert entry['images'] == 2 and '0.9-1.2 m' in entry['source']


def test_eval_ranges_need_render(shipped_model, tmp_path):
    model = shipped_model
    with pytest.raises(SystemExit, match='only apply to --render'):
        cli.main(['eval', '--model', model, '--images', str(tmp_path), '--camera-height',
                  '0.9,1.2', '--latency-runs', '0', '--out', str(tmp_path / 'out')])


@pytest.mark.slow
def test_generated_dataset_carries_its_ranges_into_the_card(tmp_path):
    from freespace_seg.perception.model_card import load_card

    data = str(tmp_path / 'set')
    assert cli.main(['generate', '--out', data, '--num', '10', '--width', '64', '--height',
                     '36', '--camera-height', '0.3,1.1']) == 0
    with open(os.path.join(data, 'meta.json'), encoding='utf-8') as f:
        assert json.load(f)['randomization']['camera_height'] == [0.3, 1.1]
    out = str(tmp_path / 'm.onnx')
    assert cli.main(['train', '--data', data, '--steps', '2', '--batch-size', '2',
                     '--input-size', '64x48', '--widths', '8,8,16,16,32', '--val-every', '2',
                     '--out', out, '--work-dir', str(tmp_path / 'run'),
                     '--latency-runs', '0']) == 0
    card = load_card(out)
    assert card.camera_ranges == {'camera_height': (0.3, 1.1), 'camera_pitch': (0.0, 0.6)}
