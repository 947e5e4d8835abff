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

"""Pictures and data sources of ``python -m freespace_seg eval`` on the shipped model."""

import json
import os

import cv2
from freespace_seg import cli
from freespace_seg.training import data as datasets
from freespace_seg.training import evaluate
from freespace_seg.training import figures as figures_mod
import numpy as np
import pytest

W, H = 160, 90


@pytest.fixture(scope='module')
def model(shipped_model):
    return shipped_model


def _eval(model, out, *extra):
    return cli.main(['eval', '--model', model, '--out', str(out), '--latency-runs', '0',
                     *extra])


def _render_args(n=4, seed=5):
    return ['--render', str(n), '--seed', str(seed), '--width', str(W), '--height', str(H)]


def _result(out):
    with open(os.path.join(str(out), 'metrics.json'), encoding='utf-8') as f:
        return json.load(f)


def _write_folder(folder, n, seed, layout=('beside', 'masks', 'beside_255')):
    """Write rendered frames as user images; return the (rgb, mask) pairs written."""
    os.makedirs(os.path.join(folder, 'masks'), exist_ok=True)
    frames = list(datasets.rendered_frames(n, seed, W, H))
    for i, (rgb, mask) in enumerate(frames):
        stem = f'img{i:02d}'
        cv2.imwrite(os.path.join(folder, f'{stem}.png'), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        kind = layout[i % len(layout)]
        if kind == 'masks':
            cv2.imwrite(os.path.join(folder, 'masks', f'{stem}.png'), mask)
        elif kind == 'beside_255':
            cv2.imwrite(os.path.join(folder, f'{stem}_mask.png'), mask * 255)
        else:
            cv2.imwrite(os.path.join(folder, f'{stem}_mask.png'), mask)
    return frames


def test_error_map_colours():
    pred = np.array([[1, 0, 1, 0, 1]], np.uint8)
    label = np.array([[1, 0, 0, 1, 255]], np.uint8)
    out = figures_mod.error_map(pred, label, free_ids=(1,))
    colors = figures_mod.ERROR_COLORS
    assert tuple(out[0, 0]) == colors['free_correct']
    assert tuple(out[0, 1]) == colors['blocked_correct']
    assert tuple(out[0, 2]) == colors['false_free']
    assert tuple(out[0, 3]) == colors['false_blocked']
    assert tuple(out[0, 4]) == colors['ignored']
    assert colors['false_free'][0] > 200 and colors['false_free'][1] < 60  # red


def test_case_collector_keeps_only_k_extremes():
    cases = evaluate.CaseCollector(2, keep_first=True)
    scores = [0.5, 0.9, 0.1, 0.7, 0.9, float('nan'), 0.3]
    for i, s in enumerate(scores):
        cases.add(i, s, np.full((1, 1, 3), i, np.uint8), None, None)
    assert [(i, m) for i, m, *_ in cases.worst()] == [(2, 0.1), (6, 0.3)]
    assert [(i, m) for i, m, *_ in cases.best()] == [(1, 0.9), (4, 0.9)]
    assert len(cases._worst) == 2 and len(cases._best) == 2
    assert cases.first[0] == 0
    assert cases.stats()['images'] == 6 and cases.stats()['min'] == 0.1


def test_figures_best_and_worst(model, tmp_path):
    out = tmp_path / 'report'
    assert _eval(model, out, *_render_args(4), '--figures', '2') == 0
    for name in ('worst_1', 'worst_2', 'best_1', 'best_2'):
        img = cv2.imread(str(out / f'{name}.png'))
        assert img is not None, name
        assert H < img.shape[0] < 1.5 * H
        assert abs(img.shape[1] - 3 * W) <= 0.05 * 3 * W
        assert img.std() > 5  # not a blank picture
    assert not (out / 'worst_3.png').exists() and not (out / 'best_3.png').exists()
    # The error panel of the worst image has some wrong pixels, in red or orange.
    worst = cv2.cvtColor(cv2.imread(str(out / 'worst_1.png')), cv2.COLOR_BGR2RGB)
    errors = worst[-H:, -W:].reshape(-1, 3)
    wrong = [figures_mod.ERROR_COLORS['false_free'], figures_mod.ERROR_COLORS['false_blocked']]
    assert any((errors == np.array(c, np.uint8)).all(axis=1).any() for c in wrong)

    figures = _result(out)['figures']
    worst_m = [e['miou'] for e in figures['worst']]
    best_m = [e['miou'] for e in figures['best']]
    assert worst_m == sorted(worst_m) and best_m == sorted(best_m, reverse=True)
    assert worst_m[0] <= best_m[0]
    assert max(worst_m) <= min(best_m)
    assert figures['per_image_miou']['min'] == worst_m[0]
    assert figures['per_image_miou']['max'] == best_m[0]
    md = (out / 'metrics.md').read_text()
    assert 'worst_1.png' in md and 'best_2.png' in md


def test_figures_zero_writes_none(model, tmp_path):
    out = tmp_path / 'report'
    assert _eval(model, out, *_render_args(2), '--figures', '0') == 0
    assert not any(p.suffix == '.png' for p in out.iterdir())
    assert 'figures' not in _result(out)


def test_images_folder_scores_like_render(model, tmp_path):
    folder = tmp_path / 'photos'
    _write_folder(str(folder), 3, seed=11)
    rendered, mine = tmp_path / 'rendered', tmp_path / 'mine'
    assert _eval(model, rendered, *_render_args(3, seed=11), '--figures', '1') == 0
    assert _eval(model, mine, '--images', str(folder), '--figures', '1') == 0
    a, b = _result(rendered), _result(mine)
    assert b['metrics']['images'] == 3  # the *_mask.png files are not taken for images
    assert abs(a['metrics']['miou'] - b['metrics']['miou']) < 1e-6
    assert a['metrics']['confusion'] == b['metrics']['confusion']
    assert 'user images' in b['source']
    assert b['figures']['worst'][0]['image'].startswith('img0')
    assert abs(a['figures']['worst'][0]['miou'] - b['figures']['worst'][0]['miou']) < 1e-6


def test_images_folder_update_card_key_and_unlabelled_pixels(model, tmp_path):
    import shutil
    import yaml
    local = tmp_path / 'm.onnx'
    shutil.copy(model, local)
    shutil.copy(model[:-5] + '.yaml', tmp_path / 'm.yaml')
    folder = tmp_path / 'My Garage-2'
    frames = _write_folder(str(folder), 2, seed=4)
    assert _eval(str(local), tmp_path / 'full', '--images', str(folder), '--update-card') == 0
    full = _result(tmp_path / 'full')['metrics']
    card = yaml.safe_load((tmp_path / 'm.yaml').read_text())
    assert card['evaluation']['user_images_my_garage_2']['images'] == 2
    # The card and the report say which CPU scored it, and whether it has VNNI.
    from freespace_seg.common.machine import cpu_has_vnni, cpu_label, machine_info
    assert card['evaluation']['user_images_my_garage_2']['cpu'] == cpu_label(machine_info())
    assert _result(tmp_path / 'full')['machine']['vnni'] is cpu_has_vnni()
    assert '- CPU: ' in (tmp_path / 'full' / 'metrics.md').read_text()
    # Alpha 0 marks pixels as not labelled: the left half of every mask drops out of the score.
    for name in os.listdir(folder):
        path = folder / name
        if name.endswith('_mask.png'):
            mask = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
            alpha = np.full_like(mask, 255)
            alpha[:, :mask.shape[1] // 2] = 0
            cv2.imwrite(str(path), np.dstack([mask, mask, mask, alpha]))
    for name in os.listdir(folder / 'masks') if (folder / 'masks').is_dir() else []:
        path = folder / 'masks' / name
        mask = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        alpha = np.full_like(mask, 255)
        alpha[:, :mask.shape[1] // 2] = 0
        cv2.imwrite(str(path), np.dstack([mask, mask, mask, alpha]))
    assert _eval(str(local), tmp_path / 'half', '--images', str(folder)) == 0
    half = _result(tmp_path / 'half')['metrics']
    labelled = [sum(sum(row) for row in m['confusion']) for m in (full, half)]
    assert labelled[1] == labelled[0] - 2 * H * (W // 2)
    assert len(frames) == 2


def test_images_folder_errors(model, tmp_path):
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(SystemExit, match='no images in'):
        _eval(model, tmp_path / 'r0', '--images', str(empty))

    folder = tmp_path / 'nomask'
    frames = _write_folder(str(folder), 2, seed=3)
    os.remove(str(folder / 'masks' / 'img01.png'))  # img01 has its mask in masks/
    with pytest.raises(SystemExit, match=r'without a mask, e\.g\. .*img01\.png'):
        _eval(model, tmp_path / 'r1', '--images', str(folder))

    folder = tmp_path / 'badsize'
    folder.mkdir()
    cv2.imwrite(str(folder / 'a.png'), cv2.cvtColor(frames[0][0], cv2.COLOR_RGB2BGR))
    cv2.imwrite(str(folder / 'a_mask.png'), np.zeros((H // 2, W // 2), np.uint8))
    with pytest.raises(SystemExit, match='is 80x45 but its image'):
        _eval(model, tmp_path / 'r2', '--images', str(folder))

    with pytest.raises(SystemExit, match='exactly one of'):
        _eval(model, tmp_path / 'r3', '--images', str(folder), '--render', '2')


def test_layers_auto_and_bad_name(model, tmp_path):
    pytest.importorskip('onnx')
    from freespace_seg.perception.pipeline import PACKAGED_LITE0_MODEL
    from freespace_seg.perception.pipeline import packaged_model_path, PACKAGED_UNET_MODEL
    lite = tmp_path / 'lite'
    assert _eval(packaged_model_path(PACKAGED_LITE0_MODEL), lite, *_render_args(1),
                 '--figures', '0', '--layers', 'auto') == 0
    names = [e['name'] for e in _result(lite)['layers']['layers']]
    # The EfficientNet-Lite0 candidate: ReLU6 (Clip) outputs of the encoder and the decoder.
    assert 3 <= len(names) <= 7 and all(n.rsplit('/', 1)[-1].startswith(('Clip', 'Relu'))
                                        for n in names), names
    assert any(n.startswith('/encoder/_blocks.') for n in names)
    assert any(n.startswith('/ups.') for n in names)
    # The UNet: one layer per encoder stage and the last decoder stage.
    model = packaged_model_path(PACKAGED_UNET_MODEL)
    out = tmp_path / 'report'
    assert _eval(model, out, *_render_args(1), '--figures', '0', '--layers', 'auto') == 0
    img = cv2.imread(str(out / 'layers.png'))
    assert img is not None and img.shape[1] > 10 * W // 2 and img.std() > 5
    layers = _result(out)['layers']
    names = [e['name'] for e in layers['layers']]
    assert 3 <= len(names) <= 7
    assert any(n.startswith('/enc1/') for n in names)
    assert any(n.startswith('/bottom/') for n in names)
    assert all(n.endswith('Relu_output_0') for n in names)
    assert all(len(e['shape']) == 4 for e in layers['layers'])
    assert img.shape[0] > len(names) * 40  # one row per layer
    assert 'layers.png' in (out / 'metrics.md').read_text()

    with pytest.raises(SystemExit, match=r'no tensor named /nope.*Relu_output_0'):
        _eval(model, tmp_path / 'bad', *_render_args(1), '--layers', '/nope')
    assert not (tmp_path / 'bad').exists()  # fails before scoring


def test_without_switches_factors_off_and_scores_under_its_own_key(model, tmp_path):
    import shutil
    import yaml
    local = tmp_path / 'm.onnx'
    shutil.copy(model, local)
    shutil.copy(model[:-5] + '.yaml', tmp_path / 'm.yaml')
    factors = ['glass', 'lens_distortion', 'reflections', 'steps', 'wall_clutter']
    rc = _eval(str(local), tmp_path / 'r', *_render_args(n=3), '--without', ','.join(factors),
               '--update-card')
    assert rc == 0
    result = json.loads((tmp_path / 'r' / 'metrics.json').read_text())
    assert 'factors off: glass, lens_distortion' in result['source']
    card = yaml.safe_load((tmp_path / 'm.yaml').read_text())
    entry = card['evaluation']['synthetic_test_without_' + '_'.join(factors)]
    assert entry['images'] == 3
    # The frames really are the reduced ones: they differ from the full randomization's.
    full = list(datasets.rendered_frames(3, 5, W, H))
    reduced = list(datasets.rendered_frames(3, 5, W, H, without=factors))
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(full, reduced))
    with pytest.raises(SystemExit, match='unknown randomization factors'):
        _eval(str(local), tmp_path / 'r2', *_render_args(n=1), '--without', 'unicorns')


def test_a_full_range_int8_copy_scored_without_vnni_gets_a_note():
    """Only full-range int8 weights on an x86-64 CPU without VNNI: the saturating case."""
    from freespace_seg.perception.model_card import load_card
    from freespace_seg.training.report import markdown_report
    models = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'models')
    full = load_card(os.path.join(models, 'freespace_lite0_int8.yaml'))
    reduced = load_card(os.path.join(models, 'freespace_lite0_int8r.yaml'))
    fp32 = load_card(os.path.join(models, 'freespace_lite0.yaml'))
    no_vnni = {'cpu': 'AMD EPYC', 'vnni': False, 'onnxruntime': '1.32.0'}
    note = evaluate.saturation_note(full, no_vnni)
    assert 'no VNNI' in note and 'AMD EPYC' in note and 'int8-reduced' in note
    for card, machine in ((full, dict(no_vnni, vnni=True)), (full, dict(no_vnni, vnni=None)),
                          (reduced, no_vnni), (fp32, no_vnni)):
        assert evaluate.saturation_note(card, machine) is None, (card.name, machine)
    summary = {'miou': 0.9, 'iou': {'blocked': 0.9, 'free': 0.9}, 'f1': {}, 'precision': {},
               'recall': {}, 'f1_macro': 0.9, 'pixel_accuracy': 0.9, 'images': 1,
               'pixels': 4, 'confusion': [[1, 1], [1, 1]]}
    for k in ('f1', 'precision', 'recall'):
        summary[k] = {'blocked': 0.9, 'free': 0.9}
    text = markdown_report({'model_name': full.name, 'model': 'm.onnx', 'source': 's',
                            'source_short': 's', 'threads': 2, 'date': 'd',
                            'machine': no_vnni, 'note': note, 'metrics': summary})
    assert '- CPU: AMD EPYC (no VNNI), ONNX Runtime 1.32.0' in text
    assert f'- note: {note}' in text


def test_exact_int8_runs_the_quantized_graph_as_written(tmp_path):
    """``--exact-int8``: no fused integer kernels; the report and the card say so."""
    import shutil
    import onnxruntime as ort
    import yaml
    from freespace_seg.perception.pipeline import SegmentationPipeline
    models = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'models')
    int8 = os.path.join(models, 'freespace_lite0_int8.onnx')
    levels = []
    for options in (None, {'exact_int8': True}):
        pipe = SegmentationPipeline(int8, 'onnxruntime', 1, engine_options=options)
        levels.append(pipe.engine._session.get_session_options().graph_optimization_level)
        pipe.close()
    assert levels == [ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                      ort.GraphOptimizationLevel.ORT_DISABLE_ALL]
    local = tmp_path / 'm_int8.onnx'
    shutil.copy(int8, local)
    shutil.copy(int8[:-5] + '.yaml', tmp_path / 'm_int8.yaml')
    assert _eval(str(local), tmp_path / 'x', *_render_args(n=1), '--figures', '0',
                 '--exact-int8', '--update-card') == 0
    result = _result(tmp_path / 'x')
    assert result['int8_math'] == evaluate.EXACT_INT8 and 'note' not in result
    assert f'- arithmetic: {evaluate.EXACT_INT8}' in (tmp_path / 'x' / 'metrics.md').read_text()
    card = yaml.safe_load((tmp_path / 'm_int8.yaml').read_text())
    entry = next(e for e in card['evaluation'].values() if e.get('images') == 1)
    assert entry['cpu'].startswith(evaluate.EXACT_INT8 + ', on ')
    # Its scores need no saturation note, whatever the CPU.
    from freespace_seg.perception.model_card import load_card
    no_vnni = {'cpu': 'AMD EPYC', 'vnni': False, 'onnxruntime': '1.32.0'}
    assert evaluate.saturation_note(load_card(int8[:-5] + '.yaml'), no_vnni, True) is None
