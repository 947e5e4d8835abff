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

"""Model cards: valid cards load, and every bad field is named in the error."""

import copy
import os
import re

from freespace_seg.perception.model_card import (card_from_dict, card_path_for_model, load_card,
                                                 ModelCardError, models_for_mount,
                                                 mount_outside_training)
import pytest
from support import REPO, tiny_card
import yaml


def test_valid_card_loads(tmp_path):
    path = tmp_path / 'm.yaml'
    path.write_text(yaml.safe_dump(tiny_card(64, 48)))
    card = load_card(str(path))
    assert (card.input_width, card.input_height) == (64, 48)
    assert card.class_names == ('blocked', 'free') and card.free_space == (1,)
    assert card.model_path == str(tmp_path / 'tiny.onnx')
    # Loading by the model's path finds the card beside it.
    assert card_path_for_model(str(tmp_path / 'm.onnx')) == str(path)
    assert load_card(str(tmp_path / 'm.onnx')).name == card.name


def _set(d, dotted, value):
    keys = dotted.split('.')
    for k in keys[:-1]:
        d = d[k]
    if value is KeyError:
        del d[keys[-1]]
    else:
        d[keys[-1]] = value


@pytest.mark.parametrize('field,value,fragment', [
    ('input.mean', [0.5, 0.5], 'input.mean'),
    ('input.std', [0.5, 0.0, 0.5], 'input.std'),
    ('input.layout', 'CHW', 'input.layout'),
    ('input.shape', [1, 3, 48], 'input.shape'),
    ('input.shape', [2, 3, 48, 64], 'batch'),
    ('input.shape', [1, 4, 48, 64], 'channels'),
    ('input.color_order', 'RGBA', 'input.color_order'),
    ('input.resize_mode', 'crop', 'input.resize_mode'),
    ('input.pad_value', 300, 'input.pad_value'),
    ('input.name', KeyError, 'input.name'),
    ('output.kind', 'softmax', 'output.kind'),
    ('output', KeyError, 'output'),
    ('classes.names', ['only'], 'classes.names'),
    ('classes.names', ['a', 'a'], 'duplicate'),
    ('classes.palette', [[0, 0, 0]], 'classes.palette'),
    ('classes.palette', [[0, 0, 0], [0, 0, 256]], 'classes.palette[1]'),
    ('classes.free_space', [2], 'classes.free_space'),
    ('classes.free_space', [0, 1], 'classes.free_space'),
    ('classes.free_space', [], 'classes.free_space'),
    ('model_file', '', 'model_file'),
    ('format_version', 9, 'format_version'),
])
def test_bad_field_is_named(field, value, fragment):
    card = copy.deepcopy(tiny_card(64, 48))
    _set(card, field, value)
    with pytest.raises(ModelCardError) as e:
        card_from_dict(card)
    assert fragment in str(e.value)


def test_missing_and_unparsable_card(tmp_path):
    with pytest.raises(ModelCardError, match='not found'):
        load_card(str(tmp_path / 'nothing.onnx'))
    bad = tmp_path / 'bad.yaml'
    bad.write_text('input: [unclosed')
    with pytest.raises(ModelCardError, match='YAML'):
        load_card(str(bad))
    bad.write_text('- a list\n- not a mapping\n')
    with pytest.raises(ModelCardError, match='mapping'):
        load_card(str(bad))


def test_shipped_card_is_valid():
    import os
    from freespace_seg.perception.pipeline import packaged_model_path, PACKAGED_INT8_MODEL
    path = packaged_model_path()
    if not os.path.isfile(card_path_for_model(path)):
        pytest.fail(f'the packaged model card is missing: {card_path_for_model(path)}')
    card = load_card(path)
    assert os.path.isfile(card.model_path)
    # The size goals of the default model: fp32 under 20 MB, its INT8 copy under 10 MB.
    assert os.path.getsize(card.model_path) < 20 * 1024 * 1024
    int8 = packaged_model_path(PACKAGED_INT8_MODEL)
    assert os.path.isfile(int8) and os.path.getsize(int8) < 10 * 1024 * 1024
    assert card.raw.get('data_sources'), 'every model card lists its data sources'
    assert card.evaluation, 'the shipped card records its own evaluation numbers'


def test_camera_ranges_and_the_mount_warning():
    bare = card_from_dict(tiny_card(64, 48))
    assert bare.camera_ranges == {}
    assert mount_outside_training(bare, 1.5, 1.2) is None   # a card that does not say
    data = {'camera_height': [0.1, 0.5], 'camera_pitch': [0.0, 0.6]}
    card = card_from_dict(tiny_card(64, 48, training={'data': data}))
    assert card.camera_ranges == {'camera_height': (0.1, 0.5), 'camera_pitch': (0.0, 0.6)}
    assert mount_outside_training(card, 0.25, 0.3) is None
    assert mount_outside_training(card, 0.5, 0.0) is None    # the ends are inside
    note = mount_outside_training(card, 1.0, 0.3)
    assert 'camera_height 1 m is outside the 0.1-0.5 m' in note and 'camera_pitch' not in note
    note = mount_outside_training(card, 1.0, 0.8)
    assert 'camera_height' in note and 'camera_pitch 0.8 rad' in note
    assert '--camera-height' in note and 'finetune' in note
    assert 'model_file_path:=' not in note   # no models folder given: no model to name


def test_the_mount_warning_names_a_packaged_model_that_fits(tmp_path):
    import yaml

    def write(name, height, pitch=(0.0, 0.6)):
        data = {'camera_height': list(height), 'camera_pitch': list(pitch)}
        card = tiny_card(64, 48, name=name, model_file=f'{name}.onnx', training={'data': data})
        (tmp_path / f'{name}.yaml').write_text(yaml.safe_dump(card))
        (tmp_path / f'{name}.onnx').write_bytes(b'')

    write('low', (0.1, 0.5))
    write('low_int8', (0.1, 0.5))
    write('high', (0.1, 1.5))
    write('high_int8', (0.1, 1.5))
    write('steep', (0.1, 1.5), pitch=(0.7, 1.2))
    (tmp_path / 'broken.yaml').write_text('name: [')
    low = load_card(str(tmp_path / 'low_int8.yaml'))
    assert mount_outside_training(low, 0.3, 0.3, models_dir=str(tmp_path)) is None
    note = mount_outside_training(low, 0.9, 0.3, models_dir=str(tmp_path))
    # The INT8 copy first, the card's own model never, a steeper model's range not.
    assert f'model_file_path:={tmp_path / "high_int8.onnx"}.' in note, note
    fits = [str(tmp_path / 'high_int8.onnx'), str(tmp_path / 'high.onnx')]
    assert models_for_mount(str(tmp_path), 0.9, 0.3) == fits
    assert models_for_mount(str(tmp_path), 0.9, 1.0) == [str(tmp_path / 'steep.onnx')]
    note = mount_outside_training(low, 1.8, 0.3, models_dir=str(tmp_path))
    assert 'camera_height 1.8 m' in note and 'model_file_path:=' not in note
    assert models_for_mount(str(tmp_path / 'missing'), 0.9, 0.3) == []
    # Broken or partial entries are ignored, not an error.
    odd = card_from_dict(tiny_card(64, 48, training={'data': {'camera_height': 'high',
                                                              'camera_pitch': [0.6, 0.1]}}))
    assert odd.camera_ranges == {}


#: the cards of the shipped models: the default EfficientNet-Lite0 model (run x, trained on with
#: cameras 0.1-1.5 m) and the small UNet (0.1-0.5 m)
SHIPPED_CARDS = ('freespace_lite0.yaml', 'freespace_lite0_int8.yaml',
                 'freespace_lite0_int8r.yaml')
UNET_CARDS = ('freespace_unet.yaml', 'freespace_unet_int8.yaml')


#: the candidate for cameras on a mast (run w): the default trained on with cameras 0.1-1.5 m
HIGH_CARDS = ('freespace_lite0_high.yaml', 'freespace_lite0_high_int8.yaml')


def test_shipped_cards_state_their_camera_ranges():
    for names, height in ((SHIPPED_CARDS, (0.1, 1.5)), (UNET_CARDS, (0.1, 0.5)),
                          (HIGH_CARDS, (0.1, 1.5))):
        for name in names:
            path = os.path.join(REPO, 'models', name)
            if not os.path.isfile(path):
                pytest.skip(f'shipped card missing: {path}')
            assert load_card(path).camera_ranges == {'camera_height': height,
                                                     'camera_pitch': (0.0, 0.6)}


def test_the_high_mount_candidate_lists_what_it_learnt_from():
    for name in HIGH_CARDS:
        path = os.path.join(REPO, 'models', name)
        if not os.path.isfile(path):
            pytest.skip(f'shipped card missing: {path}')
        card = load_card(path)
        assert os.path.isfile(card.model_path)
        sources = card.raw['data_sources']
        # The default's own sources (it starts from it), this run's frames, ImageNet.
        assert any(s.startswith('(through --init models/freespace_lite0.onnx)')
                   and 'seed 77' in s for s in sources), sources
        own = [s for s in sources if not s.startswith('(through')]
        assert any('data/hi78 (cameras 0.1-1.5 m), seed 78' in s for s in own), sources
        assert any('data/lo79 (--more-data) (cameras 0.1-0.5 m), seed 79' in s for s in own)
        assert any('chose the best step' in s for s in own)
        assert any('ImageNet' in s for s in sources)
        command = card.raw['training']['command']
        assert '--init models/freespace_lite0.onnx' in command
        assert command.index('generate --out data/probe77s') < command.index(
            'generate --out data/hi78') < command.index('generate --out data/lo79') \
            < command.index('--more-data data/lo79')
        assert {'synthetic_test', 'synthetic_shifted', 'synthetic_test_height_50_120cm',
                'scenes2_seed6000_test'} <= set(card.evaluation)


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def test_shipped_cards_reproduce_from_the_repository():
    """The training commands name paths inside a clone, not on the machine that trained."""
    for name in SHIPPED_CARDS + UNET_CARDS:
        path = os.path.join(REPO, 'models', name)
        if not os.path.isfile(path):
            pytest.skip(f'shipped card missing: {path}')
        training = load_card(path).raw['training']
        assert 'python -m freespace_seg train' in training['command']
        for text in _strings(training):
            for option in ('--init', '--out', '--work-dir', '--render-cache'):
                for value in re.findall(re.escape(option) + r'\s+(\S+)', text):
                    assert not value.startswith('/'), f'{name}: {option} {value} is absolute'
        if training.get('init'):
            assert not os.path.isabs(training['init']['checkpoint'])
