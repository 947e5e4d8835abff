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

"""Training, ONNX export and the eval command, on tiny inputs (torch CPU, a few seconds)."""

import importlib
import json
import math
import os
import shlex

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
from freespace_seg.training import data as datasets
from freespace_seg.training import evaluate
import numpy as np
import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnx', reason='export checks need the onnx package')
pytest.importorskip('onnxruntime', reason='export checks need onnxruntime')
# Imported only once torch is known to be there.
export = importlib.import_module('freespace_seg.training.export')
unet = importlib.import_module('freespace_seg.training.model')
train = importlib.import_module('freespace_seg.training.train')
metrics = importlib.import_module('freespace_seg.perception.metrics')
augment_mod = importlib.import_module('freespace_seg.training.augment')
device_mod = importlib.import_module('freespace_seg.training.device')
loop = importlib.import_module('freespace_seg.training.loop')
losses_mod = importlib.import_module('freespace_seg.training.losses')
sampler_mod = importlib.import_module('freespace_seg.training.sampler')
tensors = importlib.import_module('freespace_seg.training.tensors')

W, H = 64, 48


def toy_frames(n, width=W, height=36, seed=0):
    """Floor below a random horizon is free, except for a few boxes standing on it."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        img = np.empty((height, width, 3), np.uint8)
        img[:] = rng.integers(0, 256, 3)
        mask = np.zeros((height, width), np.uint8)
        horizon = int(rng.integers(height // 4, height // 2))
        img[horizon:] = rng.integers(0, 256, 3)
        mask[horizon:] = 1
        for _ in range(2):
            x0 = int(rng.integers(0, width - 8))
            y0 = int(rng.integers(horizon, height - 4))
            img[y0:y0 + 6, x0:x0 + 10] = rng.integers(0, 256, 3)
            mask[y0:y0 + 6, x0:x0 + 10] = 0
        yield img, mask


def toy_tensors(n, seed=0):
    images, labels = _stack(toy_frames(n, seed=seed), W, H)
    return tensors.to_tensors(images, labels)


def _stack(frames, width, height):
    pairs = [datasets.letterbox_pair(rgb, mask, width, height) for rgb, mask in frames]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def test_letterbox_pair_pads_labels_with_ignore():
    rgb, mask = next(toy_frames(1))
    image, label = datasets.letterbox_pair(rgb, mask, W, H)
    assert image.shape == (H, W, 3) and label.shape == (H, W)
    # 64x36 in 64x48: 6 rows of padding top and bottom.
    assert (label[:6] == 255).all() and (label[-6:] == 255).all()
    assert (image[:6] == 0).all()
    np.testing.assert_array_equal(label[6:-6], mask)


def test_model_shapes_and_size():
    net = unet.build_model()
    assert 500_000 <= unet.count_parameters(net) <= 1_000_000
    with torch.no_grad():
        out = net.eval()(torch.zeros(1, 3, 272, 480))
    assert tuple(out.shape) == (1, 2, 272, 480)


def test_geometric_augmentation_keeps_labels_aligned():
    x, y = toy_tensors(6)
    # An image that is its own label: label 1 -> white, 0 -> black.
    y = y.long()
    img = (y == 1).float().unsqueeze(1).repeat(1, 3, 1, 1)
    gen = torch.Generator().manual_seed(1)
    xa, ya = augment_mod._geometric(img, y, gen, p_zoom=1.0, p_roll=1.0)
    valid = ya != 255
    agree = ((xa[:, 0] > 0.5).long() == ya)[valid].float().mean().item()
    assert agree > 0.97
    assert set(torch.unique(ya).tolist()) <= {0, 1, 255}


def test_dice_loss_is_zero_for_a_perfect_prediction():
    y = torch.randint(0, 2, (2, 16, 16), generator=torch.Generator().manual_seed(0))
    y[:, 0] = 255
    logits = torch.stack([(y == 0).float(), (y == 1).float()], dim=1) * 50.0
    assert losses_mod.dice_loss(logits, y).item() < 1e-3
    assert losses_mod.dice_loss(-logits, y).item() > 0.9


def test_training_smoke_loss_decreases_and_export_matches_torch(tmp_path):
    torch.manual_seed(0)
    tx, ty = toy_tensors(8)
    vx, vy = toy_tensors(4, seed=1)
    net = unet.build_model(widths=(8, 8, 16, 16, 32))
    hist = loop.train_model(net, tx, ty, vx, vy, steps=40, batch_size=4, lr=5e-3, seed=0,
                            augment_data=False, val_every=20, log_every=0,
                            progress_bar=False, log=lambda m: None)
    losses = hist['loss']
    assert len(losses) == 40
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    assert hist['best_miou'] is not None and len(hist['val']) == 2

    path = str(tmp_path / 'tiny_unet.onnx')
    sample = tensors.normalize(vx[:2].float() / 255.0, vy[:2].long()).numpy()
    diff = export.export_and_verify(net, path, W, H, inputs=sample)
    assert diff < 1e-4
    import onnx
    proto = onnx.load(path)
    assert [i.name for i in proto.graph.input] == ['input']
    assert [o.name for o in proto.graph.output] == ['logits']
    assert proto.opset_import[0].version == 17
    assert os.path.getsize(path) < 10 * 1024 * 1024


def test_augment_runs_on_a_batch():
    x, y = toy_tensors(4)
    xa, ya = augment_mod.augment(x.float() / 255.0, y.long(), torch.Generator().manual_seed(0))
    assert xa.shape == x.shape and ya.shape == y.shape
    assert 0.0 <= float(xa.min()) and float(xa.max()) <= 1.0


def test_hue_rotation_keeps_grey_and_is_a_rotation():
    angles = torch.tensor([0.0, 0.7, -2.0, math.pi])
    rot = augment_mod._hue_rotation(angles)
    eye = torch.eye(3).expand(4, 3, 3)
    assert torch.allclose(rot[0], torch.eye(3), atol=1e-6)
    assert torch.allclose(rot @ rot.transpose(1, 2), eye, atol=1e-5)
    grey = torch.full((4, 3, 1), 0.4)
    assert torch.allclose(rot @ grey, grey, atol=1e-6)
    # A half turn maps pure red onto the opposite side of the grey axis (cyan-ish).
    red = rot[3] @ torch.tensor([1.0, 0.0, 0.0])
    assert red[0] < red[1] and abs(float(red[1] - red[2])) < 1e-5


def test_colour_shift_changes_colour_not_shape():
    x, y = toy_tensors(6)
    x = x.float() / 255.0
    gen = torch.Generator().manual_seed(0)
    xa = augment_mod._colour_shift(x, gen, p_hue=1.0, p_gray=0.0, p_tint=1.0, p_ramp=1.0)
    assert xa.shape == x.shape
    assert 0.0 <= float(xa.min()) and float(xa.max()) <= 1.0
    assert float((xa - x).abs().mean()) > 0.02
    same = augment_mod._colour_shift(x, gen, p_hue=0.0, p_gray=0.0, p_tint=0.0, p_ramp=0.0)
    assert torch.allclose(same, x.clamp(0, 1), atol=1e-6)
    grey = augment_mod._colour_shift(x, gen, p_hue=0.0, p_gray=1.0, p_tint=0.0, p_ramp=0.0)
    assert torch.allclose(grey[:, 0], grey[:, 1]) and torch.allclose(grey[:, 1], grey[:, 2])


def test_strong_augment_keeps_labels_of_full_and_rejects_unknown_modes():
    x, y = toy_tensors(4)
    x = x.float() / 255.0
    _, y_full = augment_mod.augment(x, y.long(), torch.Generator().manual_seed(5), 'full')
    xs, y_strong = augment_mod.augment(x, y.long(), torch.Generator().manual_seed(5), 'strong')
    # The colour shift draws after the geometry, so both modes crop and flip alike.
    assert torch.equal(y_full, y_strong)
    assert 0.0 <= float(xs.min()) and float(xs.max()) <= 1.0
    with pytest.raises(ValueError, match='unknown augmentation'):
        augment_mod.augment(x, y.long(), torch.Generator().manual_seed(5), 'wild')
    assert 'hue rotation' in augment_mod.augmentation_summary('strong')


def test_light_augment_flips_and_jitters_colour_only():
    x, y = toy_tensors(8)
    x = x.float() / 255.0
    xf, y_flip = augment_mod.augment(x, y.long(), torch.Generator().manual_seed(3), 'flip')
    xl, y_light = augment_mod.augment(x, y.long(), torch.Generator().manual_seed(3), 'light')
    # The same flips and no crop or roll: the labels equal those of flips alone ...
    assert torch.equal(y_flip, y_light) and not torch.equal(y_flip, y.long())
    # ... and the colours change.
    assert float((xl - xf).abs().mean()) > 0.01
    assert 0.0 <= float(xl.min()) and float(xl.max()) <= 1.0
    assert augment_mod.augmentation_summary('light') == 'hflip, colour jitter, gamma'


def test_synthetic_data_sources_name_the_photo_textures():
    from freespace_seg.sim import photos

    with_photos = datasets.synthetic_data_sources(7)
    assert len(with_photos) == 2 and 'seed 7' in with_photos[0]
    assert f'{len(photos.texture_names())} crops' in with_photos[1]
    assert 'CC0' in with_photos[1] and 'public domain' in with_photos[1]
    assert datasets.synthetic_data_sources(7, photo_textures=False) == with_photos[:1]


def test_frame_sampler_without_mining_walks_the_old_shuffled_passes():
    # hard_fraction 0 must give exactly the order training always used (so runs made
    # before hard-frame mining reproduce): each pass a fresh randperm of the same generator.
    n, bs = 10, 4
    sampler = sampler_mod.FrameSampler(n, torch.Generator().manual_seed(3))
    got = [sampler.draw(bs).tolist() for _ in range(6)]
    gen = torch.Generator().manual_seed(3)
    order, cursor, want = torch.randperm(n, generator=gen), 0, []
    for _ in range(6):
        if cursor + bs > n:
            order, cursor = torch.randperm(n, generator=gen), 0
        want.append(order[cursor:cursor + bs].tolist())
        cursor += bs
    assert got == want
    assert sampler.hard_drawn == 0


def test_frame_sampler_brings_hard_frames_back_and_never_repeats_in_a_batch():
    n, bs = 50, 8
    sampler = sampler_mod.FrameSampler(n, torch.Generator().manual_seed(0), hard_fraction=0.25)
    assert sampler.hard_count(bs) == 2 and sampler.hard_count(1) == 0
    sampler.update(torch.arange(n), torch.full((n,), 0.01))
    sampler.update(torch.tensor([7]), torch.tensor([5.0]))  # one frame the model gets wrong
    hits = 0
    for _ in range(100):
        idx = sampler.draw(bs)
        assert len(idx) == bs and len(set(idx.tolist())) == bs
        hits += int(7 in idx.tolist())
    # Uniform passes alone would bring frame 7 back in about 100 * 6 / 50 = 12 batches.
    assert hits >= 80
    assert sampler.hard_drawn == 200
    # Frames never seen are drawn as if they had the mean seen loss.
    fresh = sampler_mod.FrameSampler(4, torch.Generator().manual_seed(0), hard_fraction=0.5)
    fresh.update(torch.tensor([0, 1]), torch.tensor([1.0, 3.0]))
    assert fresh.weights().tolist() == [1.0, 3.0, 2.0, 2.0]
    with pytest.raises(ValueError, match='hard_fraction'):
        sampler_mod.FrameSampler(4, torch.Generator(), hard_fraction=1.0)


def test_per_frame_loss_ignores_pads_and_ranks_frames():
    logits = torch.zeros(2, 2, 3, 3)
    logits[:, 1] = 4.0  # confident "free" everywhere
    target = torch.ones(2, 3, 3, dtype=torch.long)
    target[1, 0] = 0  # frame 1: its top row is really blocked
    target[0, 0] = metrics.IGNORE_INDEX  # frame 0: its top row is padding
    loss = losses_mod.per_frame_loss(logits, target)
    assert loss.shape == (2,) and float(loss[1]) > 10 * float(loss[0])
    assert float(loss[0]) == pytest.approx(math.log1p(math.exp(-4.0)), rel=1e-5)


def test_edge_pixels_lie_beside_the_other_class_and_never_beside_pads():
    target = torch.ones(1, 8, 8, dtype=torch.long)
    target[0, 5:, 3:5] = 0                       # an obstacle's foot on the floor
    target[0, :, 7] = metrics.IGNORE_INDEX       # a letterbox pad on the right
    edge = losses_mod.edge_pixels(target, 1)[0]
    rows, cols = torch.nonzero(edge, as_tuple=True)
    # Every edge pixel is within one pixel (a square) of the other class ...
    for r, c in zip(rows.tolist(), cols.tolist()):
        window = target[0, max(0, r - 1):r + 2, max(0, c - 1):c + 2]
        assert ((window != target[0, r, c]) & (window != metrics.IGNORE_INDEX)).any()
    # ... every pixel with such a neighbour is one, and the pads and the floor beside them
    # (column 6, far from the obstacle) are not.
    assert edge[4:8, 2:6].all() and int(edge.sum()) == 4 * 4  # the foot and the floor around
    assert not edge[:, 6:].any()


def test_edge_weight_weighs_the_errors_at_edges_more():
    target = torch.ones(1, 8, 8, dtype=torch.long)
    target[0, 5:, 3:5] = 0
    logits = torch.zeros(1, 2, 8, 8)
    logits[:, 1] = 3.0                            # "free" everywhere: wrong on the obstacle
    plain = losses_mod.segmentation_loss(logits, target, 0.0)
    assert float(losses_mod.segmentation_loss(logits, target, 0.0, 0.0)) == float(plain)
    weighted = losses_mod.segmentation_loss(logits, target, 0.0, edge_weight=4.0,
                                            edge_radius=1)
    # The wrong pixels (the obstacle) are all edge pixels, so they gain weight.
    assert float(weighted) > 1.5 * float(plain)
    # Right everywhere: both losses are small, and the weighting is a weighted mean.
    good = torch.stack([(target == 0).float(), (target == 1).float()], dim=1) * 20.0
    assert float(losses_mod.segmentation_loss(good, target, 0.0, edge_weight=4.0)) < 1e-6


def _train_toy(**options):
    """30 steps of a tiny UNet on toy frames with these train_model options: the history."""
    torch.manual_seed(0)
    tx, ty = toy_tensors(8)
    net = unet.build_model(widths=(8, 8, 16, 16, 32))
    return loop.train_model(net, tx, ty, steps=30, batch_size=4, lr=5e-3, seed=0,
                            augment_data=False, log_every=0, progress_bar=False,
                            log=lambda m: None, **options)


def test_training_with_edge_weight_learns():
    hist = _train_toy(edge_weight=3.0)
    assert np.mean(hist['loss'][-5:]) < 0.7 * np.mean(hist['loss'][:5])


def test_edge_weight_option_is_checked_and_reproduced():
    parser, sub = cli.build_parser()
    train.add_arguments(sub.choices['train'])
    args = parser.parse_args(['train', '--render', '4', '--edge-weight', '2'])
    assert args.edge_weight == 2.0
    words = shlex.split(train.reproduce_command(args))
    assert words[words.index('--edge-weight') + 1] == '2.0'
    assert '--edge-weight' not in train.reproduce_command(parser.parse_args(['train']))
    for bad in ('-1', 'inf', 'nan'):
        with pytest.raises(SystemExit):
            parser.parse_args(['train', '--edge-weight', bad])


def test_training_with_hard_frames_draws_them_and_learns():
    hist = _train_toy(hard_frames=0.5)
    assert hist['hard_drawn'] == 30 * 2
    assert np.mean(hist['loss'][-5:]) < 0.7 * np.mean(hist['loss'][:5])


def test_hard_frames_option_is_checked():
    parser, sub = cli.build_parser()
    train.add_arguments(sub.choices['train'])
    assert parser.parse_args(['train', '--hard-frames', '0.25']).hard_frames == 0.25
    with pytest.raises(SystemExit):
        parser.parse_args(['train', '--hard-frames', '1.5'])


def test_reproduce_command_parses_back():
    parser, sub = cli.build_parser()
    train.add_arguments(sub.choices['train'])
    argv = ['train', '--render', '4', '--steps', '3', '--input-size', '64x48',
            '--widths', '8,8,16,16,32', '--no-augment', '--hard-frames', '0.25']
    args = parser.parse_args(argv)
    command = train.reproduce_command(args)
    words = shlex.split(command)
    assert words[:4] == ['python', '-m', 'freespace_seg', 'train']
    again = parser.parse_args(words[3:])
    for key, value in vars(args).items():
        assert getattr(again, key) == value, key


def test_render_without_parses_and_reproduces():
    parser, sub = cli.build_parser()
    train.add_arguments(sub.choices['train'])
    args = parser.parse_args(['train', '--render', '4', '--render-without',
                              'floor-photos,photo_textures,floor_photos'])
    assert args.render_without == ('floor_photos', 'photo_textures')
    words = shlex.split(train.reproduce_command(args))
    assert words[words.index('--render-without') + 1] == 'floor_photos,photo_textures'
    assert parser.parse_args(words[3:]).render_without == args.render_without
    # Off by default, and then not in the command.
    plain = parser.parse_args(['train', '--render', '4'])
    assert plain.render_without == () and '--render-without' not in \
        train.reproduce_command(plain)
    with pytest.raises(SystemExit):
        parser.parse_args(['train', '--render', '4', '--render-without', 'floor_photo'])


def test_render_without_reaches_the_frames_and_the_cache(tmp_path):
    """The factor is off in the rendered frames, and the cache keeps the two apart."""
    on = datasets.rendered_letterboxed(12, 5, 64, 36, 64, 48, cache_dir=str(tmp_path))
    off = datasets.rendered_letterboxed(12, 5, 64, 36, 64, 48, cache_dir=str(tmp_path),
                                        without=('floor_photos',))
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and any('-no_floor_photos-' in n for n in names)
    expect = np.stack([datasets.letterbox_pair(rgb, mask, 64, 48)[0] for rgb, mask in
                       datasets.rendered_frames(12, 5, 64, 36, without=('floor_photos',))])
    np.testing.assert_array_equal(off[0], expect)
    # Labels never depend on the factor; the pictures do (some of 12 rooms have photo floors).
    np.testing.assert_array_equal(on[1], off[1])
    assert not np.array_equal(on[0], off[0])
    lines = datasets.synthetic_data_sources(0, True, floor_photos=False)
    assert 'floor_photos off' in lines[1] and 'floors' not in lines[1].split(':')[0]


@pytest.mark.slow
def test_train_and_eval_commands_on_rendered_frames(tmp_path):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    pytest.importorskip('freespace_seg.common.progress', reason='needs the progress bar module')
    out = str(tmp_path / 'm.onnx')
    rc = cli.main(['train', '--render', '4', '--render-val', '2', '--render-size', '64x36',
                   '--steps', '4', '--batch-size', '2', '--input-size', '64x48',
                   '--widths', '8,8,16,16,32', '--val-every', '2', '--log-every', '2',
                   '--out', out, '--work-dir', str(tmp_path / 'run'), '--latency-runs', '2',
                   '--render-jobs', '2', '--device', 'auto'])
    assert rc == 0
    card = load_card(out)
    assert card.input_shape == (1, 3, 48, 64)
    assert card.raw['training']['steps'] == 4
    # Where it ran is recorded; how it rendered and where it trained are no part of the
    # command that reproduces it.
    assert card.raw['training']['device'] == ('cpu' if not torch.cuda.is_available()
                                              else device_mod.device_record(torch.device('cuda')))
    assert '--render-jobs' not in card.raw['training']['command']
    assert '--device' not in card.raw['training']['command']
    with pytest.raises(SystemExit):
        cli.main(['train', '--render', '4', '--render-jobs', '0'])
    assert 'synthetic_val' in card.raw['evaluation']
    # Rendered frames carry photo textures: the card must say where they come from.
    sources = card.raw['data_sources']
    assert any('seed 0' in s and 'freespace_seg.sim' in s for s in sources)
    assert any('scikit-image' in s and 'SOURCES.md' in s for s in sources)

    report = tmp_path / 'report'
    rc = cli.main(['eval', '--model', out, '--render', '3', '--seed', '99', '--width', '64',
                   '--height', '36', '--out', str(report), '--latency-runs', '2',
                   '--update-card'])
    assert rc == 0
    with open(report / 'metrics.json') as f:
        result = json.load(f)
    assert result['metrics']['images'] == 3
    assert 0.0 <= result['metrics']['miou'] <= 1.0
    assert set(result['metrics']['iou']) == {'blocked', 'free'}
    assert '| mIoU |' in (report / 'metrics.md').read_text()
    card = load_card(out)
    test_entry = card.raw['evaluation']['synthetic_test']
    assert test_entry['images'] == 3 and test_entry['split_seed'] == 99
    assert evaluate.latency_key(2, [1, 3, 48, 64]) in card.raw['latency_ms']


def _tiny_resumable_run(tmp_path, name, tx, ty, vx, vy, **extra):
    torch.manual_seed(0)
    net = unet.build_model(widths=(8, 8, 16, 16, 32), context=True)
    hist = loop.train_model(net, tx, ty, vx, vy, steps=12, batch_size=4, lr=5e-3, seed=3,
                            augment_data='strong', val_every=4, log_every=0,
                            progress_bar=False, log=lambda m: None, hard_frames=0.5,
                            work_dir=str(tmp_path / name), **extra)
    return net, hist


def test_interrupted_training_resumes_exactly_where_it_stopped(tmp_path):
    tx, ty = toy_tensors(8)
    vx, vy = toy_tensors(4, seed=1)
    whole, h_whole = _tiny_resumable_run(tmp_path, 'whole', tx, ty, vx, vy)
    assert not h_whole['interrupted'] and h_whole['resumed_after'] == []

    # Stopped between two validations (4 and 8), so last.pt is written by the stop itself.
    part, h_part = _tiny_resumable_run(tmp_path, 'part', tx, ty, vx, vy, stop_after=6)
    assert h_part['interrupted'] and h_part['steps'] == 6 and len(h_part['loss']) == 6
    state = torch.load(str(tmp_path / 'part' / 'last.pt'), map_location='cpu')
    assert state['step'] == 6 and state['resume']['step'] == 6

    # Whatever weights the new model starts with, the resume replaces them.
    again, h_again = _tiny_resumable_run(tmp_path, 'part', tx, ty, vx, vy,
                                         resume=state['resume'])
    assert h_again['resumed_after'] == [6] and not h_again['interrupted']
    # The same losses at every step (same batches, augmentation, optimizer and schedule) and
    # the same final (best) weights as the run that never stopped.
    assert h_again['loss'] == h_whole['loss']
    assert h_again['best_step'] == h_whole['best_step']
    assert [v['miou'] for v in h_again['val']] == [v['miou'] for v in h_whole['val']]
    for key, value in whole.state_dict().items():
        assert torch.equal(value, again.state_dict()[key]), key
    # The model comes back in the usual memory order, ready for export.
    assert all(p.is_contiguous() for p in again.parameters())

    with pytest.raises(ValueError, match='schedule'):
        torch.manual_seed(0)
        net = unet.build_model(widths=(8, 8, 16, 16, 32), context=True)
        loop.train_model(net, tx, ty, steps=13, batch_size=4, progress_bar=False,
                         log=lambda m: None, log_every=0, resume=state['resume'],
                         hard_frames=0.5)


def test_channels_last_step_computes_what_the_contiguous_one_does():
    torch.manual_seed(0)
    net = unet.build_model(widths=(8, 8, 16, 16, 32), context=True).eval()
    x = torch.randn(2, 3, H, W)
    ref = net(x)
    net.to(memory_format=torch.channels_last)
    out = net(tensors.channels_last(x))
    assert tensors.channels_last(x).is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(out, ref, atol=1e-5)


@pytest.mark.slow
def test_train_time_limit_and_resume_commands(tmp_path):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    ort = pytest.importorskip('onnxruntime')
    common = ['--render', '4', '--render-val', '2', '--render-size', '64x36', '--steps', '5',
              '--batch-size', '2', '--input-size', '64x48', '--widths', '8,8,16,16,32',
              '--val-every', '2', '--log-every', '0', '--latency-runs', '2', '--seed', '7']
    whole = str(tmp_path / 'whole.onnx')
    assert cli.main(['train', *common, '--out', whole, '--work-dir',
                     str(tmp_path / 'whole')]) == 0

    part = str(tmp_path / 'part.onnx')
    work = str(tmp_path / 'part')
    rc = cli.main(['train', *common, '--out', part, '--work-dir', work, '--time-limit', '0'])
    assert rc == train.EXIT_INTERRUPTED
    assert not os.path.exists(part)  # nothing exported from a run that has not finished
    assert os.path.isfile(os.path.join(work, 'last.pt'))

    with pytest.raises(SystemExit, match='--steps'):
        cli.main(['train', '--resume', work, '--steps', '9'])
    with pytest.raises(SystemExit, match='no checkpoint'):
        cli.main(['train', '--resume', str(tmp_path / 'nowhere')])
    with pytest.raises(SystemExit, match='no resume state'):
        cli.main(['train', '--resume', str(tmp_path / 'whole' / 'best.pt')])

    # Where a sitting trains and renders may change between sittings.
    assert cli.main(['train', '--resume', work, '--log-every', '1', '--device', 'cpu',
                     '--render-jobs', '2']) == 0
    card = load_card(part)
    assert card.raw['training']['steps'] == 5
    assert card.raw['training']['resumed_after_steps'] == [1]
    assert '--time-limit' not in card.raw['training']['command']
    # The first invocation's options, with the one given to the resume (--log-every).
    expected = load_card(whole).raw['training']['command'].replace('whole', 'part')
    assert card.raw['training']['command'] == expected.replace('--log-every 0',
                                                               '--log-every 1')
    # Bit for bit the model of the run that never stopped (same thread count).
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 64)).astype(np.float32)
    outs = [ort.InferenceSession(p, providers=['CPUExecutionProvider']).run(None, {'input': x})[0]
            for p in (whole, part)]
    assert np.array_equal(outs[0], outs[1])


def test_a_selection_set_chooses_the_best_step(tmp_path):
    tx, ty = toy_tensors(8)
    vx, vy = toy_tensors(4, seed=1)
    sx, sy = toy_tensors(4, seed=2)
    torch.manual_seed(0)
    net = unet.build_model(widths=(8, 8, 16, 16, 32))
    hist = loop.train_model(net, tx, ty, vx, vy, steps=12, batch_size=4, lr=5e-3, seed=3,
                            val_every=3, log_every=0, progress_bar=False, log=lambda m: None,
                            work_dir=str(tmp_path / 'sel'), select_x=sx, select_y=sy)
    scores = [v['select_miou'] for v in hist['val']]
    assert len(scores) == 4
    best = hist['val'][int(np.argmax(scores))]   # the first of equal scores
    assert hist['best_step'] == best['step'] and hist['best_select_miou'] == max(scores)
    assert hist['best_miou'] == best['miou']    # the validation score of the chosen step
    # the model that comes back is the chosen step's: it scores the same on the set again
    assert metrics.mean_iou(loop.validate(net, sx, sy)) == pytest.approx(max(scores))
    saved = torch.load(str(tmp_path / 'sel' / 'best.pt'), map_location='cpu')
    assert saved['step'] == best['step']
    with pytest.raises(ValueError, match='validation frames'):
        loop.train_model(net, tx, ty, steps=2, batch_size=4, progress_bar=False,
                         log=lambda m: None, log_every=0, select_x=sx, select_y=sy)


def test_train_select_data_is_recorded_and_checked(tmp_path):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    sel = str(tmp_path / 'other')
    assert cli.main(['generate', '--out', sel, '--num', '6', '--width', '64', '--height',
                     '36', '--seed', '5']) == 0
    out = str(tmp_path / 'm.onnx')
    common = ['train', '--render', '4', '--render-val', '2', '--render-size', '64x36',
              '--steps', '4', '--batch-size', '2', '--input-size', '64x48',
              '--widths', '8,8,16,16,32', '--val-every', '2', '--log-every', '2',
              '--latency-runs', '2']
    rc = cli.main(common + ['--out', out, '--work-dir', str(tmp_path / 'run'),
                            '--select-data', sel, '--select-split', 'train'])
    assert rc == 0
    training = load_card(out).raw['training']
    assert training['data']['selection'] == {'dataset': os.path.normpath(sel),
                                             'split': 'train', 'frames': 5}
    assert 0.0 <= training['best_selection_miou'] <= 1.0
    assert f'--select-data {sel} --select-split train' in training['command']
    assert any(s.startswith(f'5 frames of {os.path.normpath(sel)} (train split) chose the best')
               for s in load_card(out).raw['data_sources'])
    for bad, message in ((str(tmp_path / 'missing'), 'no such folder'),
                         (sel + ' --select-split nope', 'cannot list')):
        with pytest.raises(SystemExit, match=message):
            cli.main(common + ['--out', str(tmp_path / 'x.onnx'), '--select-data']
                     + bad.split())


def test_train_more_data_adds_training_frames_and_is_recorded(tmp_path):
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    low, high = str(tmp_path / 'low'), str(tmp_path / 'high')
    assert cli.main(['generate', '--out', low, '--num', '6', '--width', '64', '--height',
                     '36', '--seed', '5', '--splits', '0.5,0.5,0']) == 0
    assert cli.main(['generate', '--out', high, '--num', '4', '--width', '64', '--height',
                     '36', '--seed', '6', '--splits', '1,0,0', '--camera-height',
                     '0.5,1.5']) == 0
    second = str(tmp_path / 'second')   # a folder of the second scene generator
    assert cli.main(['generate2', '--out', second, '--num', '3', '--width', '64', '--height',
                     '36', '--seed', '7', '--splits', '1,0,0']) == 0
    out = str(tmp_path / 'm.onnx')
    common = ['train', '--data', low, '--steps', '2', '--batch-size', '2', '--input-size',
              '64x48', '--widths', '8,8,16,16,32', '--val-every', '2', '--log-every', '2',
              '--latency-runs', '2']
    assert cli.main(common + ['--out', out, '--work-dir', str(tmp_path / 'run'),
                              '--more-data', high, '--more-data', second]) == 0
    card = load_card(out).raw
    data = card['training']['data']
    assert data['num_train'] == 3 + 4 + 3 and data['num_val'] == 3
    assert data['more_data'] == [
        {'dataset': os.path.normpath(high), 'num_train': 4, 'seed': 6,
         'generator': 'freespace_seg.sim', 'camera_height': [0.5, 1.5],
         'camera_pitch': data['more_data'][0]['camera_pitch']},
        {'dataset': os.path.normpath(second), 'num_train': 3, 'seed': 7,
         'generator': 'freespace_seg.scenes2', 'camera_height': [0.1, 1.5],
         'camera_pitch': [0.0, 0.7]}]
    assert data['camera_height'] == [0.1, 1.5]   # the union: what the mount check reads
    assert f'--more-data {high}' in card['training']['command']
    sources = card['data_sources']
    # Each folder with its frames, seed and cameras (the --data folder's own, not the union).
    assert sources[0].endswith('seed 5') and f'3 training and 3 validation frames of {low}' \
        in sources[0], sources
    assert 'cameras 0.5-1.5 m' not in sources[0]
    assert sources[1].endswith('seed 6') and f'4 more training frames of {high}' in sources[1]
    assert 'cameras 0.5-1.5 m' in sources[1]
    # A second-generator folder is named as such, not as the renderer with its photos.
    assert sources[2].startswith('the second scene generator (freespace_seg.scenes2') \
        and f'3 more training frames of {second}' in sources[2] and sources[2].endswith('seed 7')
    assert not any('photo textures' in s for s in sources[:3]), sources
    assert 'and by the second scene generator' in card['description']
    for extra, message in (([], 'give --data'), ([low], 'the --data folder itself'),
                           ([str(tmp_path / 'missing')], 'no such folder')):
        args = common + ['--out', str(tmp_path / 'x.onnx')] + [
            a for e in extra for a in ('--more-data', e)]
        if not extra:
            args = [a for a in args if a not in ('--data', low)]
            args += ['--render', '4', '--more-data', high]
        with pytest.raises(SystemExit, match=message):
            cli.main(args)
