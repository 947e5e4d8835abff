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


"""The second scene generator (freespace_seg.scenes2): the label rule, seeds, generate2."""

import ast
import glob
import json
import math
import os

import cv2
from freespace_seg.cli import main as cli_main
from freespace_seg.scenes2 import Camera, render_frame, render_mask, Scene
from freespace_seg.scenes2.generate import render_sample, split_counts
from freespace_seg.scenes2.geometry import BOX, cast, FLOOR, OBSTACLE, WALL
from freespace_seg.scenes2.render import render_linear
from freespace_seg.training import data as datasets
import numpy as np
import pytest
from support import REPO

PACKAGE = os.path.join(REPO,
                       'freespace_seg', 'scenes2')
W, H = 160, 90


def plain(kind='plain', grey=0.5, reflect=0.0):
    return {'kind': kind, 'c1': [grey] * 3, 'c2': [grey * 0.5] * 3, 'scale': 0.5,
            'gloss': 0.2, 'shine': 40.0, 'reflect': reflect, 'rough': 0.0}


def room(size=8.0, ceiling=2.5, floor=None, wall_grey=0.8):
    """Return a square room [0, size]^2 with four walls, not yet frozen."""
    scene = Scene(ceiling, [(0.0, 0.0, size, size)])
    scene.floor_mat = scene.add_material(floor or plain('tile'))
    scene.ceil_mat = scene.add_material(plain(grey=0.9))
    wall = scene.add_material(plain('paint', wall_grey))
    half = size / 2
    for c, h in (((-0.05, half), (0.05, half)), ((size + 0.05, half), (0.05, half)),
                 ((half, -0.05), (half, 0.05)), ((half, size + 0.05), (half, 0.05))):
        scene.add_box((c[0], c[1], ceiling / 2), (h[0], h[1], ceiling / 2), 0.0, wall, WALL)
    return scene


def finish(scene):
    """Add what shading needs (noise, occlusion maps, one lamp) and freeze."""
    scene.lattices = np.random.default_rng(0).random((4, 64, 64)).astype(np.float32)
    scene.grid_origin = (0.0, 0.0)
    scene.dist_all = scene.dist_walls = np.full((400, 400), 5.0, dtype=np.float32)
    scene.ambient = 0.1
    scene.add_light((3.0, 3.0, scene.ceiling - 0.2), (1.0, 1.0, 1.0), 10.0, 0.1)
    return scene.freeze()


def first_hits(scene, camera):
    dirs, valid = camera.rays(W, H)
    t, kind, index = cast(scene, camera.position.astype(np.float32), dirs.reshape(-1, 3))
    return kind.reshape(H, W), dirs


def test_a_camera_facing_a_wall_sees_only_blocked_pixels():
    scene = finish(room())
    camera = Camera((1.0, 4.0, 0.5), math.pi, 0.0, 0.0, 60.0)
    kind, _ = first_hits(scene, camera)
    assert (kind == BOX).all()
    assert render_mask(scene, camera, W, H).max() == 0


@pytest.mark.parametrize('lens, fov', [('pinhole', 90.0), ('equidistant', 150.0)])
def test_an_empty_floor_is_free_below_the_horizon(lens, fov):
    scene = finish(room(size=40.0))
    camera = Camera((20.0, 20.0, 0.5), 0.3, 0.35, 0.02, fov, lens)
    mask = render_mask(scene, camera, W, H)
    kind, dirs = first_hits(scene, camera)
    down = dirs[:, :, 2] < 0
    assert not mask[~down].any(), 'free above the horizon'
    assert mask[dirs[:, :, 2] < -0.05].all(), 'blocked floor under the horizon'
    assert (mask == (kind == FLOOR)).all()


def test_a_tabletop_and_the_floor_under_it_are_blocked():
    scene = room()
    mat = scene.add_material(plain('wood', 0.6))
    scene.add_box((4.0, 4.0, 0.72), (0.6, 0.4, 0.02), 0.3, mat, OBSTACLE)
    finish(scene)
    # From above, the tabletop looks like floor: it is blocked.
    above = Camera((2.0, 4.0, 1.4), 0.0, 0.6, 0.0, 80.0)
    kind, _ = first_hits(scene, above)
    mask = render_mask(scene, above, W, H)
    assert (kind == BOX).sum() > 200
    assert not mask[kind == BOX].any()
    assert mask[kind == FLOOR].any()
    # From below the top, the floor under it is seen but blocked (inside the footprint).
    below = Camera((2.0, 4.0, 0.3), 0.0, 0.1, 0.0, 80.0)
    dirs, valid = below.rays(W, H)
    t, kind, _ = cast(scene, below.position.astype(np.float32), dirs.reshape(-1, 3))
    p = below.position + dirs.reshape(-1, 3) * t[:, None]
    under = (kind == FLOOR) & (np.abs(p[:, 0] - 4.0) < 0.3) & (np.abs(p[:, 1] - 4.0) < 0.2)
    assert under.sum() > 20
    assert not render_mask(scene, below, W, H).reshape(-1)[under].any()


def test_a_rug_is_free():
    bare, rugged = room(), room()
    rugged.add_rug((4.0, 4.0), (1.0, 0.7), 0.4, rugged.add_material(
        {'kind': 'rug', 'c1': [0.8, 0.1, 0.1], 'c2': [0.1, 0.1, 0.8], 'scale': 0.1,
         'gloss': 0.0, 'shine': 10.0, 'reflect': 0.0}))
    finish(bare)
    finish(rugged)
    camera = Camera((2.0, 4.0, 0.6), 0.0, 0.4, 0.0, 80.0)
    mask = render_mask(rugged, camera, W, H)
    assert (mask == render_mask(bare, camera, W, H)).all()
    kind, dirs = first_hits(rugged, camera)
    t, _, _ = cast(rugged, camera.position.astype(np.float32), dirs.reshape(-1, 3))
    p = camera.position + dirs.reshape(-1, 3) * t[:, None]
    on_rug = (rugged.rug_at(p[:, 0], p[:, 1]) >= 0) & (kind.reshape(-1) == FLOOR)
    assert on_rug.sum() > 100 and mask.reshape(-1)[on_rug].all()
    a = render_linear(rugged, camera, np.random.default_rng(1), W, H)[0]
    b = render_linear(bare, camera, np.random.default_rng(1), W, H)[0]
    assert np.abs(a - b).reshape(-1, 3)[on_rug].mean() > 0.01


def test_a_mirror_floor_keeps_the_floor_label():
    matte = finish(room(floor=plain('tile', 0.3), wall_grey=0.9))
    glossy = finish(room(floor=plain('tile', 0.3, reflect=0.8), wall_grey=0.9))
    camera = Camera((6.0, 4.0, 0.4), math.pi, 0.25, 0.0, 80.0)
    mask = render_mask(glossy, camera, W, H)
    assert (mask == render_mask(matte, camera, W, H)).all()
    floor = mask == 1
    assert floor.sum() > 0.3 * mask.size
    a = render_linear(glossy, camera, np.random.default_rng(1), W, H)[0]
    b = render_linear(matte, camera, np.random.default_rng(1), W, H)[0]
    # The mirrored white wall brightens the dark floor.
    assert a[floor].mean() > b[floor].mean() * 1.3
    assert np.allclose(a[~floor], b[~floor], rtol=0.3, atol=0.05)


def test_frames_are_seeded():
    a = render_sample(11, 2, 3, W, H)
    b = render_sample(11, 2, 3, W, H)
    c = render_sample(12, 2, 3, W, H)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all() and a[2] == b[2]
    assert not (a[0].shape == c[0].shape and (a[0] == c[0]).all())
    assert a[0].shape == (H, W, 3) and a[0].dtype == np.uint8
    assert a[1].shape == (H, W) and set(np.unique(a[1])) <= {0, 1}


def test_random_frames_hold_both_classes_on_average():
    fractions = [render_sample(3, 2, i, W, H)[1].mean() for i in range(6)]
    assert 0.1 < np.mean(fractions) < 0.9


def test_split_counts():
    assert split_counts(10, [0, 0, 1]) == {'train': 0, 'val': 0, 'test': 10}
    assert split_counts(10, [8, 1, 1]) == {'train': 8, 'val': 1, 'test': 1}


def test_generate2_writes_a_dataset_that_the_readers_take(tmp_path):
    out = str(tmp_path / 'set')
    assert cli_main(['generate2', '--out', out, '--num', '3', '--seed', '7', '--width',
                     str(W), '--height', str(H)]) == 0
    meta = datasets.read_meta(out)
    assert meta['generator'] == 'freespace_seg.scenes2' and meta['seed'] == 7
    assert meta['counts'] == {'train': 0, 'val': 0, 'test': 3}
    assert meta['options']['width'] == W
    pairs = datasets.list_split(out, 'test')
    assert [os.path.basename(i) for i, _ in pairs] == [f'00000{k}_image.png' for k in range(3)]
    with open(os.path.join(out, 'samples.jsonl'), encoding='utf-8') as f:
        samples = [json.loads(line) for line in f]
    assert [s['index'] for s in samples] == [0, 1, 2]
    for (image, mask_path), sample in zip(pairs, samples):
        rgb, mask = datasets.read_pair(image, mask_path)
        want_rgb, want_mask, _ = render_sample(7, 2, sample['index'], W, H)
        assert (rgb == want_rgb).all() and (mask == want_mask).all()
        assert cv2.imread(mask_path, cv2.IMREAD_UNCHANGED).dtype == np.uint8
        assert sample['free_fraction'] == pytest.approx(mask.mean())
    assert not glob.glob(os.path.join(out, 'train', '*'))


def test_two_samples_of_generate2_keep_their_own_card_entries(tmp_path):
    from support import write_tiny_model
    import yaml

    model = write_tiny_model(tmp_path, W, H)
    for seed in (7, 8):
        out = str(tmp_path / f'set{seed}')
        assert cli_main(['generate2', '--out', out, '--num', '2', '--seed', str(seed),
                         '--width', str(W), '--height', str(H)]) == 0
        assert cli_main(['eval', '--model', model, '--data', out, '--split', 'test',
                         '--latency-runs', '0', '--figures', '0', '--update-card',
                         '--out', str(tmp_path / f'ev{seed}')]) == 0
    with open(str(tmp_path / 'tiny.yaml'), encoding='utf-8') as f:
        evaluation = yaml.safe_load(f)['evaluation']
    assert evaluation['scenes2_seed7_test']['split_seed'] == 7
    assert evaluation['scenes2_seed8_test']['split_seed'] == 8
    assert 'set7 split test' in evaluation['scenes2_seed7_test']['source']


def test_generate2_frames_do_not_depend_on_jobs(tmp_path):
    one, two = str(tmp_path / 'one'), str(tmp_path / 'two')
    for out, jobs in ((one, '1'), (two, '2')):
        assert cli_main(['generate2', '--out', out, '--num', '2', '--seed', '5', '--jobs', jobs,
                         '--width', '96', '--height', '54']) == 0
    for name in ('000000_image.png', '000001_mask.png'):
        with open(os.path.join(one, 'test', name), 'rb') as a, \
                open(os.path.join(two, 'test', name), 'rb') as b:
            assert a.read() == b.read()


def test_render_frame_keeps_the_mask_at_the_output_size():
    scene = finish(room())
    camera = Camera((2.0, 4.0, 0.5), 0.0, 0.3, 0.0, 120.0, 'equidistant')
    rgb, mask = render_frame(scene, camera, np.random.default_rng(0), W, H, scale=0.5)
    assert rgb.shape == (H, W, 3) and (mask == render_mask(scene, camera, W, H)).all()


def test_scenes2_stands_apart_from_sim_and_stays_small():
    for path in sorted(glob.glob(os.path.join(PACKAGE, '*.py'))):
        with open(path, encoding='utf-8') as f:
            source = f.read()
        assert len(source.splitlines()) < 500, path
        for node in ast.walk(ast.parse(source)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or '']
            for name in names:
                assert not name.startswith(('freespace_seg.sim', 'freespace_seg.tools',
                                            'freespace_seg.nodes', 'freespace_seg.training',
                                            'torch', 'rclpy')), (path, name)
