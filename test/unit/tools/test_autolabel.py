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

"""Drive-over labels (#34): the rule against the renderer's truth, and the bag command."""

import io
import math
import os

from freespace_seg import cli
from freespace_seg.ground import autolabel as al
from freespace_seg.ground.geometry import CameraMount
from freespace_seg.sim import Box, default_intrinsics, make_scene, RandomizationConfig, Scene
from freespace_seg.sim.render import free_mask
from freespace_seg.sim.wander import wander
from freespace_seg.tools.sim_bag import write_drive_bag
from freespace_seg.training.evaluate import image_pairs, read_user_pair
import numpy as np
import pytest

rosbags = pytest.importorskip('rosbags', reason='the autolabel command needs rosbags')

W, H = 160, 90
MOUNT = CameraMount(z=0.3, pitch=0.3)


@pytest.fixture(scope='module')
def room():
    """Return a seeded room and a 20 s bump-and-turn drive through it."""
    rng = np.random.default_rng(3)
    scene = make_scene(rng, RandomizationConfig())
    return scene, wander(scene, rng, duration=20.0)


def wall_drive():
    """Return an empty 4 x 4 m room where the robot drives 1.2 m straight into a wall."""
    scene = Scene.empty(size=(4.0, 4.0))
    return scene, wander(scene, np.random.default_rng(0), duration=7.0, pose=(0.6, 0.0, 0.0),
                         curves=False)


def score(labels, truth):
    free = labels.mask == al.FREE
    blocked = labels.mask == al.BLOCKED
    return (int((free & (truth == 1)).sum()), int(free.sum()),
            int((blocked & (truth == 0)).sum()), int(blocked.sum()))


def test_free_labels_are_right_against_the_renderer(room):
    scene, drive = room
    intrinsics = default_intrinsics(W, H)
    camera = al.CameraFloor(intrinsics, MOUNT, al.AutoLabelConfig())
    ok = n = 0
    for t0 in np.arange(0.0, 16.0, 2.0):
        pose = drive.pose_at(t0)
        labels = al.label_frame(camera, pose, t0, drive.path[:, 0], drive.path[:, 1:],
                                drive.hazards)
        f_ok, f_n, b_ok, b_n = score(labels, free_mask(scene, intrinsics, MOUNT, pose))
        ok, n = ok + f_ok, n + f_n
        assert b_ok >= 0.95 * b_n
        assert labels.free + labels.blocked + labels.unchecked == W * H
    assert n > 0.05 * 8 * W * H
    assert ok >= 0.99 * n


def test_horizon_rule_blocks_what_rises_and_nothing_is_free_without_a_drive():
    intrinsics = default_intrinsics(W, H)
    config = al.AutoLabelConfig(horizon_margin_px=3.0)
    camera = al.CameraFloor(intrinsics, CameraMount(z=0.3, pitch=0.0), config)
    labels = al.label_frame(camera, (0.0, 0.0, 0.0), 0.0, [0.0], [(0.0, 0.0, 0.0)])
    rows = np.arange(H)
    # the margin is an angle: 3 px at the centre, up to 3 px x 1.2 at the sides of a 69 deg lens
    assert (labels.mask[rows < intrinsics.cy - 3.0 * 1.25] == al.BLOCKED).all()
    assert (labels.mask[rows > intrinsics.cy - 3.0] == al.UNCHECKED).all()
    assert labels.free == 0 and labels.horizon == labels.blocked


def test_line_of_sight_keeps_hidden_floor_unchecked():
    # a box stands in front; the robot drives round it: the floor behind it was swept, but the
    # camera never saw it, so it must not be labelled free
    scene = Scene.empty(size=(6.0, 6.0), obstacles=[Box(1.2, 0.0, 0.3, 0.6, 0.5)])
    xs = np.linspace(0.0, 2.5, 60)
    around = np.stack([xs, 0.6 * np.sin(np.pi * xs / 2.5), np.zeros_like(xs)], axis=1)
    behind = np.stack([np.linspace(2.5, 1.7, 20), np.zeros(20), np.full(20, np.pi)], axis=1)
    poses = np.vstack([around, behind])
    times = np.arange(len(poses)) * 0.5
    intrinsics = default_intrinsics(W, H)
    truth = free_mask(scene, intrinsics, MOUNT, (-0.5, 0.0, 0.0))
    for los, good in ((True, True), (False, False)):
        config = al.AutoLabelConfig(line_of_sight=los, lookahead_distance=8.0)
        camera = al.CameraFloor(intrinsics, MOUNT, config)
        labels = al.label_frame(camera, (-0.5, 0.0, 0.0), -0.1, times, poses)
        f_ok, f_n, _, _ = score(labels, truth)
        assert f_n > 0
        assert (f_ok == f_n) == good


def test_bumps_block_the_floor_beyond_the_bumper():
    scene, drive = wall_drive()
    assert drive.hazards, 'the drive must hit the wall'
    t_hit, pose_hit, bearing = drive.hazards[0]
    assert abs(bearing) < math.radians(5.0)
    intrinsics = default_intrinsics(W, H)
    camera = al.CameraFloor(intrinsics, MOUNT, al.AutoLabelConfig())
    t0 = 1.0
    pose = drive.pose_at(t0)
    truth = free_mask(scene, intrinsics, MOUNT, pose)
    # with the contact bearing: every bump; without (a Bool bumper): the frontal one only,
    # where the band of +-30 deg also takes in some floor just in front of the wall
    frontal = [(t, p) for t, p, b in drive.hazards if abs(b) < 0.1]
    for hazards, precision in ((drive.hazards, 0.98), (frontal, 0.75)):
        labels = al.label_frame(camera, pose, t0, drive.path[:, 0], drive.path[:, 1:],
                                hazards)
        assert labels.hazard > 0
        hazard = (labels.mask == al.BLOCKED) & ~camera.sky
        assert (truth[hazard] == 0).mean() >= precision
    none = al.label_frame(camera, pose, t0, drive.path[:, 0], drive.path[:, 1:], [])
    assert none.hazard == 0


def test_trajectory_interpolates_and_refuses_gaps():
    track = al.Trajectory([0.0, 1.0, 3.0], [(0, 0, 3.1), (1, 0, -3.1), (2, 0, 0)], max_gap=1.5)
    x, y, yaw = track.pose_at(0.5)
    assert x == pytest.approx(0.5) and abs(math.remainder(yaw - math.pi, math.tau)) < 0.01
    assert track.pose_at(2.0) is None and track.pose_at(-1.0) is None


# --- the bag command ----------------------------------------------------------------------

def write_bag(path, scene, drive, frame_every=1.0, **kw):
    """Write a rosbag2 of ``drive``: truth-coloured images, CameraInfo, odom or TF, bumps."""
    intrinsics = default_intrinsics(W, H)

    def image_at(t, pose):
        # green where the floor is free, red elsewhere: the tiny test model reads that
        free = free_mask(scene, intrinsics, MOUNT, pose).astype(bool)
        return np.where(free[..., None], np.uint8([30, 200, 30]), np.uint8([200, 30, 30]))

    write_drive_bag(path, drive, intrinsics, MOUNT, image_at, frame_every=frame_every,
                    image_topic='/cam/image_raw', info_topic='/cam/camera_info',
                    camera_frame='camera_optical', **kw)
    return path


def autolabel(tmp_path, bag, *extra):
    out = str(tmp_path / 'labels')
    rc = cli.main(['autolabel', str(bag), out, *extra])
    return rc, out


@pytest.fixture(scope='module')
def wall():
    return wall_drive()


def test_bag_labels_in_the_eval_folder_format(tmp_path, wall, capsys):
    scene, drive = wall
    bag = write_bag(str(tmp_path / 'drive'), scene, drive)
    rc, out = autolabel(tmp_path, bag)
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert 'mount from static TF base_link -> camera_optical' in printed
    assert '2 from /hazard_detection' in printed
    pairs = image_pairs(out)
    assert len(pairs) == 7
    intrinsics = default_intrinsics(W, H)
    free_ok = free_n = 0
    for (image_path, mask_path), tt in zip(pairs, np.arange(0.0, 7.0, 1.0)):
        rgb, label = read_user_pair(image_path, mask_path)
        assert rgb.shape == (H, W, 3) and set(np.unique(label)) <= {0, 1, 255}
        truth = free_mask(scene, intrinsics, MOUNT, drive.pose_at(tt))
        free_ok += int(((label == 1) & (truth == 1)).sum())
        free_n += int((label == 1).sum())
        assert ((label == 0) & (truth == 0)).sum() >= 0.95 * (label == 0).sum()
    assert free_n > 0 and free_ok >= 0.99 * free_n
    assert not [n for n in os.listdir(tmp_path) if n.startswith('.labels')]


def test_bag_with_tf_and_bool_bumps(tmp_path, wall, capsys):
    scene, drive = wall
    bag = write_bag(str(tmp_path / 'tf'), scene, drive, pose_via='tf', hazard='bool',
                    static_tf=False)
    rc, out = autolabel(tmp_path, bag, '--hazard-topic', '/hazard', '--camera-height', '0.3',
                        '--camera-pitch', '0.3')
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert '/tf (odom -> base_link)' in printed and 'mount from options' in printed
    assert '2 from /hazard (std_msgs/msg/Bool)' in printed
    assert len(image_pairs(out)) == 7


@pytest.mark.parametrize('kind, message', [
    ('no pose', 'no odometry and no TF'),
    ('no info', 'no CameraInfo'),
])
def test_bag_errors_leave_nothing(tmp_path, wall, capsys, kind, message):
    scene, drive = wall
    bag = write_bag(str(tmp_path / 'bad'), scene, drive,
                    pose_via='none' if kind == 'no pose' else 'odom', info=kind != 'no info')
    rc, out = autolabel(tmp_path, bag)
    assert rc == 1
    assert message in capsys.readouterr().err
    assert not os.path.exists(out)
    assert sorted(os.listdir(tmp_path)) == ['bad']


def test_bag_clock_jump_teleport_and_a_robot_that_never_moves(tmp_path, wall, capsys):
    scene, drive = wall
    bag = write_bag(str(tmp_path / 'jump'), scene, drive, clock_jump=True)
    rc, out = autolabel(tmp_path, bag)
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert 'path cut 1 time(s) at a clock jump' in printed
    # the stamps after 3.5 s went back 3 s: 100.6..103.5 is there twice, and the frames
    # stamped 101, 102, 103 (three before the jump, three after) cannot be labelled
    assert 'skipped 6 frames: clock jump (two stretches of path at this time)' in printed
    assert '1 of 7 frames' in printed
    bag = write_bag(str(tmp_path / 'teleport'), scene, drive, teleport=True)
    rc, out = autolabel(tmp_path, bag, '--overwrite')
    printed = capsys.readouterr().out
    assert rc == 0 and 'path cut 1 time(s) at a teleport' in printed
    still = wander(scene, np.random.default_rng(0), duration=3.0, pose=(0.0, 0.0, 0.0),
                   speed=0.0, curves=False)
    bag = write_bag(str(tmp_path / 'still'), scene, still)
    rc, out = autolabel(tmp_path, bag, '--overwrite')
    printed = capsys.readouterr().out
    assert rc == 0 and 'never left its first footprint' in printed
    assert 'pixels: free 0.0 %' in printed
    rc, _ = autolabel(tmp_path, bag)
    assert rc == 1 and 'exists' in capsys.readouterr().err


def autolabel_sim(*options):
    """Run ``autolabel-sim`` with ``options``; return what it printed."""
    import contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(['autolabel-sim', '--rooms', '1', *options]) == 0
    return out.getvalue()


def test_autolabel_sim_prints_a_table():
    text = autolabel_sim('--duration', '6', '--frame-every', '2', '--width', '96', '--height',
                         '54', '--conditions', 'exact,drift', '--per-room')
    assert '| exact | 3 |' in text and '| drift | 3 |' in text
    assert 'parallax precision' not in text


def test_autolabel_sim_scores_the_parallax_labels_apart():
    text = autolabel_sim('--first-seed', '3', '--duration', '4', '--width', '160', '--height',
                         '90', '--conditions', 'exact', '--parallax')
    line = next(x for x in text.splitlines() if x.startswith('| exact |'))
    assert '| parallax precision |' in text and line.endswith(' of 7 |')


def label_with_model(tmp_path, wall, capsys, name, *options):
    """
    Label the wall drive plainly and with ``options`` and the tiny model.

    Return the line of the second summary that names ``options[0]``, and the values that the
    second labelling adds to the pixels the first left unchecked, after checking that it
    keeps every drive-over label.
    """
    from support import write_tiny_model

    model = write_tiny_model(str(tmp_path))
    scene, drive = wall
    bag = write_bag(str(tmp_path / 'drive'), scene, drive, hazard='none')
    rc, plain = autolabel(tmp_path, bag)
    assert rc == 0
    other = str(tmp_path / name)
    rc = cli.main(['autolabel', bag, other, *options, '--model', model])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    added = []
    for pair_a, pair_b in zip(image_pairs(plain), image_pairs(other)):
        a = read_user_pair(*pair_a)[1]
        b = read_user_pair(*pair_b)[1]
        checked = a != 255
        assert (b[checked] == a[checked]).all()  # the drive-over labels stay
        added.append(b[~checked][b[~checked] != 255])
    line = next(x for x in printed.splitlines() if options[0] in x)
    return line, np.concatenate(added), bag, model


def test_model_fill_takes_only_unchecked_pixels_the_model_is_sure_of(tmp_path, wall, capsys):
    mask = np.array([[al.FREE, al.UNCHECKED, al.UNCHECKED, al.UNCHECKED]], np.uint8)
    p = np.array([[0.0, 0.99, 0.5, 0.01]])
    assert al.fill_confident(mask, p, 0.98) == (1, 1)
    assert mask.tolist() == [[al.FREE, al.FREE, al.UNCHECKED, al.BLOCKED]]
    line, added, _, _ = label_with_model(tmp_path, wall, capsys, 'filled', '--model-fill', '0.6')
    assert 'free 0.0 %' not in line and 'blocked 0.0 %' not in line
    assert added.size > 0


def test_grow_adds_free_labels_and_keeps_the_drive_over_ones(tmp_path, wall, capsys):
    line, added, bag, model = label_with_model(tmp_path, wall, capsys, 'grown', '--grow', '6',
                                               '--grow-min-p-free', '0')
    assert 'free 0.0 %' not in line
    assert added.size > 0 and (added == 1).all()  # it only adds free
    for bad in (['--grow', '-1'], ['--grow', '6', '--grow-min-p-free', '1.5'],
                ['--grow', '6', '--grow-superpixels', '0']):
        rc = cli.main(['autolabel', bag, str(tmp_path / 'bad')] + bad + ['--model', model])
        assert rc == 1 and '--grow' in capsys.readouterr().err
        assert not os.path.exists(tmp_path / 'bad')


def test_mount_from_a_transform_round_trips():
    from freespace_seg.tools.autolabel_inputs import mount_from_matrix

    mount = CameraMount(x=0.05, y=-0.02, z=0.4, roll=0.03, pitch=0.35, yaw=-0.1)
    back = mount_from_matrix(mount.transform_base_from_optical())
    for name in ('x', 'y', 'z', 'roll', 'pitch', 'yaw'):
        assert getattr(back, name) == pytest.approx(getattr(mount, name), abs=1e-9)


def test_parallax_adds_blocked_labels_below_the_horizon(tmp_path, capsys):
    from freespace_seg.sim.render import render

    look = RandomizationConfig(style='shifted')
    rng = np.random.default_rng(301)
    scene = make_scene(rng, look)
    drive = wander(scene, rng, duration=15.0)
    intrinsics = default_intrinsics(480, 270)
    mount = CameraMount(z=0.23, pitch=0.45)

    def image_at(t, pose):
        return render(scene, intrinsics, mount, pose, randomization=look).image

    bag = str(tmp_path / 'drive')
    times = write_drive_bag(bag, drive, intrinsics, mount, image_at, frame_every=0.5)
    plain, other = str(tmp_path / 'plain'), str(tmp_path / 'parallax')
    assert cli.main(['autolabel', bag, plain, '--min-interval', '0.4']) == 0
    capsys.readouterr()
    assert cli.main(['autolabel', bag, other, '--min-interval', '0.4', '--parallax']) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if '--parallax' in x)
    assert 'blocked from parallax' in line and 'frame pairs' in line
    added = right = 0
    for k, (pair_a, pair_b) in enumerate(zip(image_pairs(plain), image_pairs(other))):
        a = read_user_pair(*pair_a)[1]
        b = read_user_pair(*pair_b)[1]
        new = a != b
        assert (a[new] == 255).all() and (b[new] == 0).all()  # only unchecked -> blocked
        truth = free_mask(scene, intrinsics, mount, drive.pose_at(times[k]))
        added += int(new.sum())
        right += int((new & (truth == 0)).sum())
    assert added > 5000 and right >= 0.95 * added
    rc = cli.main(['autolabel', bag, str(tmp_path / 'bad'), '--parallax',
                   '--parallax-max-dt', '0'])
    assert rc == 1 and '--parallax-max-dt' in capsys.readouterr().err
    rc = cli.main(['autolabel', bag, str(tmp_path / 'bad'), '--parallax',
                   '--parallax-min-height', '-1'])
    assert rc == 1 and '--parallax' in capsys.readouterr().err
    assert not os.path.exists(tmp_path / 'bad')
