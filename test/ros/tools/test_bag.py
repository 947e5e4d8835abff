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

"""``bag``: rosbag2 in, the node's outputs out, written and read back with rosbags."""

import os
import subprocess
import sys

import cv2
from freespace_seg.training.data import IGNORE_INDEX, read_user_image_pair, user_image_pairs
import numpy as np
import pytest

rosbags = pytest.importorskip('rosbags', reason='the bag command needs rosbags: pip install '
                              'rosbags')
from rosbags.rosbag2 import Reader, StoragePlugin, Writer  # noqa: E402
from rosbags.typesys import get_typestore, Stores  # noqa: E402
from support import green_red_image, REPO, write_tiny_model  # noqa: E402

W, H = 64, 48  # the tiny model's input size: no resampling, exact masks


def _header(store, i):
    t = store.types
    return t['std_msgs/msg/Header'](stamp=t['builtin_interfaces/msg/Time'](sec=100 + i,
                                                                           nanosec=5),
                                    frame_id='cam_optical')


def frame(i):
    """Frame i: the bottom 16 + 2 i rows green (free for the tiny model), the rest red."""
    return green_red_image(W, H, 16 + 2 * (i % 10))


def write_bag(path, n=5, storage='mcap', compressed=False, info=True, distro='ROS2_KILTED',
              bad_frames=(), topic='/cam/image_raw', make_frame=None):
    """Write a test bag with rosbags: n frames (bad_frames with an unknown encoding)."""
    make_frame = make_frame or frame
    store = get_typestore(getattr(Stores, distro))
    t = store.types
    with Writer(path, version=9 if distro != 'ROS2_HUMBLE' else 8,
                storage_plugin=StoragePlugin[storage.upper()]) as w:
        if compressed:
            img_conn = w.add_connection(topic + '/compressed', 'sensor_msgs/msg/CompressedImage',
                                        typestore=store)
        else:
            img_conn = w.add_connection(topic, 'sensor_msgs/msg/Image', typestore=store)
        info_conn = w.add_connection('/cam/camera_info', 'sensor_msgs/msg/CameraInfo',
                                     typestore=store) if info else None
        other = w.add_connection('/chatter', 'std_msgs/msg/String', typestore=store)
        for i in range(n):
            header = _header(store, i)
            stamp = 1_000_000_000 * (i + 1)
            rgb = make_frame(i)
            if compressed:
                ok, png = cv2.imencode('.png', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
                assert ok
                msg = t['sensor_msgs/msg/CompressedImage'](header=header, format='png',
                                                           data=png.reshape(-1))
                w.write(img_conn, stamp, store.serialize_cdr(msg, img_conn.msgtype))
            else:
                enc = 'bayer_weird8' if i in bad_frames else 'rgb8'
                msg = t['sensor_msgs/msg/Image'](header=header, height=H, width=W, encoding=enc,
                                                 is_bigendian=0, step=W * 3,
                                                 data=rgb.reshape(-1))
                w.write(img_conn, stamp, store.serialize_cdr(msg, img_conn.msgtype))
            if info_conn is not None:
                f = 80.0
                k = np.array([f, 0, W / 2, 0, f, H / 2, 0, 0, 1], np.float64)
                p = np.array([f, 0, W / 2, 0, 0, f, H / 2, 0, 0, 0, 1, 0], np.float64)
                roi = t['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0,
                                                            width=0, do_rectify=False)
                msg = t['sensor_msgs/msg/CameraInfo'](
                    header=header, height=H, width=W, distortion_model='plumb_bob',
                    d=np.zeros(5), k=k, r=np.eye(3).reshape(-1), p=p, binning_x=0,
                    binning_y=0, roi=roi)
                w.write(info_conn, stamp - 1000, store.serialize_cdr(msg, info_conn.msgtype))
            w.write(other, stamp, store.serialize_cdr(t['std_msgs/msg/String'](data=f'hi {i}'),
                                                      'std_msgs/msg/String'))
    return path


def read_bag(path):
    """Return {topic: [(bag time, message)]} of a bag, deserialized with rosbags."""
    store = get_typestore(Stores.ROS2_KILTED)
    out = {}
    with Reader(path) as r:
        for conn, stamp, raw in r.messages():
            out.setdefault(conn.topic, []).append((stamp, store.deserialize_cdr(raw,
                                                                                conn.msgtype)))
    return out


def run_bag(*argv, timeout=300):
    """Run ``python -m freespace_seg bag`` in a subprocess; return the CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    return subprocess.run([sys.executable, '-m', 'freespace_seg', 'bag', *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope='module')
def model(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp('model'))


def _pipeline(model):
    from freespace_seg.perception.pipeline import SegmentationPipeline
    return SegmentationPipeline(model, 'onnxruntime', 1)


@pytest.mark.parametrize('storage,compressed,info', [('mcap', False, True),
                                                     ('sqlite3', True, False),
                                                     ('sqlite3', False, True),
                                                     ('mcap', True, False)])
def test_bag_outputs_equal_the_pipeline(tmp_path, model, storage, compressed, info):
    """
    Every output topic, with the input's header and bag time, equals SegmentationPipeline's.

    The node runs exactly this pipeline (segment, free_mask, colorize, overlay; see
    segmentation_node._process), so the comparison is with the pipeline directly.
    """
    src = write_bag(tmp_path / 'in', n=4, storage=storage, compressed=compressed, info=info)
    proc = run_bag(src, tmp_path / 'out', '--model', model, '--backend', 'onnxruntime',
                   '--num-threads', '1')
    assert proc.returncode == 0, proc.stderr
    assert '4 frames segmented' in proc.stdout
    got = read_bag(tmp_path / 'out')
    image_topic = '/cam/image_raw/compressed' if compressed else '/cam/image_raw'
    assert len(got[image_topic]) == 4 and len(got['/chatter']) == 4
    pipe = _pipeline(model)
    for i in range(4):
        rgb = frame(i)
        mask = pipe.segment(rgb)
        free = pipe.free_mask(mask)
        colored = pipe.colorize(mask)
        expect = {'/cam/segmentation/mask': (mask, 'mono8'),
                  '/cam/free_space/mask': (free, 'mono8'),
                  '/cam/segmentation/colored_mask': (colored, 'rgb8'),
                  '/cam/segmentation/overlay': (pipe.overlay(rgb, colored, 0.5), 'rgb8')}
        for topic, (array, encoding) in expect.items():
            stamp, msg = got[topic][i]
            assert stamp == got[image_topic][i][0] == 1_000_000_000 * (i + 1)
            assert msg.header.stamp.sec == 100 + i and msg.header.stamp.nanosec == 5
            assert msg.header.frame_id == 'cam_optical' and msg.encoding == encoding
            np.testing.assert_array_equal(msg.data.reshape(array.shape), array)
        assert np.count_nonzero(free) == W * (16 + 2 * i)
    if info:
        grids = got['/cam/free_space/grid']
        assert len(grids) == 4
        assert grids[0][1].header.frame_id == 'base_link'
        assert (grids[0][1].data == 0).any()   # free floor in front of the camera
    else:
        assert '/cam/free_space/grid' not in got
        assert 'no CameraInfo' in proc.stdout


def test_humble_bag_and_single_file_and_no_metadata(tmp_path, model):
    """A Humble bag; its .mcap file alone; the directory without metadata.yaml."""
    src = write_bag(tmp_path / 'in', n=3, distro='ROS2_HUMBLE')
    files = [f for f in os.listdir(src) if f.endswith('.mcap')]
    assert len(files) == 1
    for n, path in enumerate([src, src / files[0]]):
        proc = run_bag(path, tmp_path / f'out{n}', '--model', model, '--keep', 'none',
                       '--storage', 'sqlite3')
        assert proc.returncode == 0, proc.stderr
        got = read_bag(tmp_path / f'out{n}')
        assert '/chatter' not in got and len(got['/cam/segmentation/mask']) == 3
    os.remove(src / 'metadata.yaml')
    proc = run_bag(src, tmp_path / 'out2', '--model', model)
    assert proc.returncode == 0, proc.stderr


def test_bad_frames_are_counted_and_skipped(tmp_path, model):
    src = write_bag(tmp_path / 'in', n=5, bad_frames=(1, 3))
    proc = run_bag(src, tmp_path / 'out', '--model', model)
    assert proc.returncode == 0, proc.stderr
    assert '3 frames segmented' in proc.stdout and '2 skipped' in proc.stdout
    assert "skipped 2: Image 64x48: unsupported encoding 'bayer_weird8'" in proc.stdout
    got = read_bag(tmp_path / 'out')
    assert [s for s, _ in got['/cam/segmentation/mask']] == [1e9, 3e9, 5e9]


@pytest.mark.parametrize('case', ['missing', 'truncated', 'garbage', 'no_images', 'exists',
                                  'all_bad', 'wrong_topic', 'bad_rule', 'bad_margin'])
def test_bad_input_one_line_and_nothing_written(tmp_path, model, case):
    out = tmp_path / 'out'
    src = tmp_path / 'in'
    extra = []
    if case == 'missing':
        src = tmp_path / 'nope'
    elif case == 'truncated':
        write_bag(src, n=5)
        mcap = next(p for p in src.iterdir() if p.suffix == '.mcap')
        mcap.write_bytes(mcap.read_bytes()[:mcap.stat().st_size // 2])
    elif case == 'garbage':
        src = tmp_path / 'x.db3'
        src.write_bytes(b'not a database' * 100)
    elif case == 'no_images':
        store = get_typestore(Stores.ROS2_KILTED)
        with Writer(src, version=9, storage_plugin=StoragePlugin.MCAP) as w:
            c = w.add_connection('/chatter', 'std_msgs/msg/String', typestore=store)
            w.write(c, 1, store.serialize_cdr(store.types['std_msgs/msg/String'](data='x'),
                                              'std_msgs/msg/String'))
    elif case == 'exists':
        write_bag(src, n=2)
        out.mkdir()
        (out / 'keep.txt').write_text('mine')
    elif case == 'all_bad':
        write_bag(src, n=2, bad_frames=(0, 1))
    elif case == 'wrong_topic':
        write_bag(src, n=2)
        extra = ['--image-topic', '/cam/other']
    elif case == 'bad_rule':
        write_bag(src, n=2)
        extra = ['--grid-cut-confidence', '1.5']
    elif case == 'bad_margin':
        write_bag(src, n=2)
        extra = ['--horizon-margin-deg', '45']
    proc = run_bag(src, out, '--model', model, *extra)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [x for x in proc.stderr.strip().splitlines() if not x.startswith('bag: ') or
             x.startswith('bag: error:')]   # the progress bar's lines start 'bag: NN%'
    assert len(lines) == 1 and lines[0].startswith('bag: error:'), proc.stderr
    if case == 'bad_rule':
        assert '--grid-cut-confidence' in lines[0]
    if case == 'bad_margin':
        assert '--horizon-margin-deg must be <= 30.0' in lines[0], lines[0]
    if case == 'exists':
        assert (out / 'keep.txt').read_text() == 'mine'
        proc = run_bag(src, out, '--model', model, '--overwrite')
        assert proc.returncode == 0, proc.stderr
        assert not (out / 'keep.txt').exists() and (out / 'metadata.yaml').exists()
    else:
        assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if '.partial-' in p.name]


def test_label_export_round_trip_through_eval(tmp_path, model):
    """The label export is the --images folder that eval and finetune read."""
    src = write_bag(tmp_path / 'in', n=6)
    labels = tmp_path / 'labels'
    proc = run_bag(src, tmp_path / 'out', '--model', model, '--export-labels', labels,
                   '--label-every', '2', '--label-ignore-band', '2')
    assert proc.returncode == 0, proc.stderr
    assert 'exported 3 label pairs' in proc.stdout
    pairs = user_image_pairs(str(labels))
    assert len(pairs) == 3
    rgb, label = read_user_image_pair(*pairs[0])
    np.testing.assert_array_equal(rgb, frame(0))
    assert set(np.unique(label)) == {0, 1, IGNORE_INDEX}
    assert (label[-10:] == 1).all() and (label[:28] == 0).all()   # bottom 16 rows free
    assert (label[H - 17:H - 15] == IGNORE_INDEX).all()          # the unchecked band
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    ev = subprocess.run([sys.executable, '-m', 'freespace_seg', 'eval', '--model', model,
                         '--images', str(labels), '--out', str(tmp_path / 'eval'),
                         '--latency-runs', '0', '--figures', '0', '--threads', '1'],
                        capture_output=True, text=True, timeout=300, env=env)
    assert ev.returncode == 0, ev.stdout + ev.stderr
    assert 'miou' in (ev.stdout + ev.stderr).lower()


@pytest.mark.slow
def test_own_data_loop(tmp_path, shipped_model):
    """
    The loop of docs/own_data.md on tiny data: bag --export-labels -> finetune -> eval --images.

    The masks are used as exported (a user would correct them first); held-out frames come
    from a second bag.
    """
    pytest.importorskip('torch', reason='finetune needs torch')
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    for name, n in (('train', 4), ('held_out', 2)):
        src = write_bag(tmp_path / f'{name}_bag', n=n)
        proc = run_bag(src, tmp_path / f'{name}_out', '--export-labels', tmp_path / name,
                       '--label-every', '1', '--num-threads', '1')
        assert proc.returncode == 0, proc.stderr
    new = tmp_path / 'mine.onnx'
    ft = subprocess.run([sys.executable, '-m', 'freespace_seg', 'finetune', '--images',
                         str(tmp_path / 'train'), '--out', str(new), '--steps', '2',
                         '--batch-size', '2', '--val-fraction', '0.25', '--threads', '1',
                         '--log-every', '0'],
                        capture_output=True, text=True, timeout=600, env=env)
    assert ft.returncode == 0, ft.stdout + ft.stderr
    assert 'held-out mIoU' in ft.stdout
    ev = subprocess.run([sys.executable, '-m', 'freespace_seg', 'eval', '--model', str(new),
                         '--images', str(tmp_path / 'held_out'), '--out',
                         str(tmp_path / 'eval'), '--latency-runs', '0', '--figures', '0',
                         '--threads', '1'],
                        capture_output=True, text=True, timeout=300, env=env)
    assert ev.returncode == 0, ev.stdout + ev.stderr
    assert 'miou' in (ev.stdout + ev.stderr).lower()


def test_bag_never_imports_rclpy(tmp_path, model):
    src = write_bag(tmp_path / 'in', n=2)
    code = ('import sys; from freespace_seg import cli; '
            f'rc = cli.main(["bag", {str(src)!r}, {str(tmp_path / "out")!r}, "--model", '
            f'{model!r}]); assert rc == 0, rc; '
            'assert not [m for m in sys.modules if m.startswith("rclpy")], "rclpy imported"')
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr


def _node_rule():
    """Return the node's GridRule (from its grid_* parameters' defaults) and the defaults."""
    from freespace_seg.ground.grid import GridRule
    from freespace_seg.nodes.params import SEGMENTATION_PARAMS
    d = {spec.name: spec.default for spec in SEGMENTATION_PARAMS}
    return GridRule(d['grid_min_obstacle_run'], d['grid_cut_confidence'],
                    d['grid_mark_confidence'], d['grid_free_confidence'],
                    d['grid_behind_confidence']), d


def speckled_frame(i):
    """frame(i) with a 2-row red speckle across the green floor: short blocked runs."""
    rgb = frame(i).copy()
    rgb[H - 6:H - 4] = (180, 0, 0)
    return rgb


def test_scan_and_grid_follow_the_node(tmp_path, model):
    """
    The scan and the grid: input stamp, bag time, base_frame, and the node's computation.

    Both equal one GroundProjector.ground under the node's default GridRule (not the plain
    rule, whose grid differs for these frames), the scan from ground.scan's ScanLayout.
    """
    from freespace_seg.ground.frame import GroundParams, projector_for_camera_info
    from freespace_seg.ground.grid import PLAIN_RULE
    from freespace_seg.ground.scan import ScanLayout

    n = 4
    src = write_bag(tmp_path / 'in', n=n, make_frame=speckled_frame)
    proc = run_bag(src, tmp_path / 'out', '--model', model, '--confidence')
    assert proc.returncode == 0, proc.stderr
    assert f'free_space/scan: {n} scans' in proc.stdout
    got = read_bag(tmp_path / 'out')
    info = got['/cam/camera_info'][0][1]
    rule, d = _node_rule()
    assert not rule.plain
    ground_params = GroundParams.from_params(d)
    mount, spec = ground_params.mount, ground_params.grid_spec
    pipe = _pipeline(model)
    plain_differs = False
    for i in range(n):
        mask, confidence = pipe.segment_with_confidence(speckled_frame(i))
        free = pipe.free_mask(mask)
        projector = projector_for_camera_info(None, info, free.shape, mount, spec)
        ground = projector.ground(free, confidence, rule)
        layout = ScanLayout(projector, d['scan_angle_increment'])
        ranges = layout.ranges(ground)
        stamp, scan = got['/cam/free_space/scan'][i]
        assert stamp == got['/cam/image_raw'][i][0] == 1_000_000_000 * (i + 1)
        assert scan.header.stamp.sec == 100 + i and scan.header.stamp.nanosec == 5
        assert scan.header.frame_id == 'base_link'
        assert scan.angle_min == pytest.approx(layout.angle_min)
        assert scan.angle_max == pytest.approx(layout.angle_max)
        assert scan.angle_increment == pytest.approx(d['scan_angle_increment'])
        assert scan.range_min == pytest.approx(layout.range_min)
        assert scan.range_max == pytest.approx(layout.range_max)
        assert scan.ranges.dtype == np.float32 and scan.ranges.size == layout.size > 0
        np.testing.assert_array_equal(scan.ranges, ranges)
        assert np.isfinite(ranges).any()   # the speckle is seen as an obstacle
        gstamp, grid = got['/cam/free_space/grid'][i]
        assert gstamp == stamp and grid.header.stamp == scan.header.stamp
        np.testing.assert_array_equal(grid.data.reshape(ground.grid.shape), ground.grid)
        plain = projector.ground(free, confidence, PLAIN_RULE).grid
        plain_differs |= not np.array_equal(plain, ground.grid)
        cstamp, conf = got['/cam/segmentation/confidence'][i]
        assert cstamp == stamp and conf.encoding == 'mono8'
        np.testing.assert_array_equal(conf.data.reshape(confidence.shape), confidence)
    assert plain_differs, 'the test frames do not tell the node rule from the plain one'


def test_grid_rule_options_reach_the_grid(tmp_path, model):
    """--grid-min-obstacle-run 0 --grid-cut-confidence 0 --grid-free-confidence 0: plain."""
    from freespace_seg.ground.frame import GroundParams, projector_for_camera_info
    from freespace_seg.ground.grid import PLAIN_RULE

    src = write_bag(tmp_path / 'in', n=2, make_frame=speckled_frame)
    proc = run_bag(src, tmp_path / 'out', '--model', model, '--grid-min-obstacle-run', '0',
                   '--grid-cut-confidence', '0', '--grid-free-confidence', '0', '--no-scan')
    assert proc.returncode == 0, proc.stderr
    got = read_bag(tmp_path / 'out')
    assert '/cam/free_space/scan' not in got and '/cam/segmentation/confidence' not in got
    _, d = _node_rule()
    ground_params = GroundParams.from_params(d)
    mount, spec = ground_params.mount, ground_params.grid_spec
    pipe = _pipeline(model)
    for i in range(2):
        free = pipe.free_mask(pipe.segment(speckled_frame(i)))
        projector = projector_for_camera_info(None, got['/cam/camera_info'][i][1], free.shape,
                                              mount, spec)
        expect = projector.ground(free, None, PLAIN_RULE).grid
        np.testing.assert_array_equal(got['/cam/free_space/grid'][i][1].data.reshape(
            expect.shape), expect)


def free_frame(i):
    """Green (free for the tiny model) everywhere, with a red band low in the image."""
    rgb = green_red_image(W, H, H).copy()
    rgb[H - 10 - i:H - 7 - i] = (180, 0, 0)
    return rgb


def test_masks_are_blocked_above_the_horizon_with_camera_info(tmp_path, model):
    """
    A level camera (--camera-pitch 0) that the model says sees free floor everywhere.

    The masks are the model's below the horizon's 1 degree margin and blocked above it, the
    grid is the same as with --no-mask-horizon, and --no-mask-horizon keeps the model's masks.
    """
    from freespace_seg.ground.frame import mask_intrinsics
    from freespace_seg.ground.geometry import CameraMount
    from freespace_seg.ground.horizon import HorizonCut

    n = 2
    src = write_bag(tmp_path / 'in', n=n, make_frame=free_frame)
    level = ['--model', model, '--camera-pitch', '0', '--no-scan']
    proc = run_bag(src, tmp_path / 'cut', *level)
    assert proc.returncode == 0, proc.stderr
    off = run_bag(src, tmp_path / 'off', *level, '--no-mask-horizon')
    assert off.returncode == 0, off.stderr
    cut_bag, off_bag = read_bag(tmp_path / 'cut'), read_bag(tmp_path / 'off')
    info = cut_bag['/cam/camera_info'][0][1]
    _, d = _node_rule()
    cut = HorizonCut(mask_intrinsics(info, (H, W)),
                     CameraMount(z=d['camera_height'], pitch=0.0), 1.0).mask
    # fy = 80, cy = 24: the rows above 24 - 80 tan(1 deg) = 22.6 are cut at the centre.
    assert cut[:22].all() and not cut[23:].any()
    pipe = _pipeline(model)
    for i in range(n):
        model_mask = pipe.segment(free_frame(i))
        expect_mask = np.where(cut, 0, model_mask)
        for topic, array in (('/cam/segmentation/mask', expect_mask),
                             ('/cam/free_space/mask', pipe.free_mask(expect_mask)),
                             ('/cam/segmentation/colored_mask', pipe.colorize(expect_mask))):
            np.testing.assert_array_equal(cut_bag[topic][i][1].data.reshape(array.shape), array)
        np.testing.assert_array_equal(
            off_bag['/cam/segmentation/mask'][i][1].data.reshape(H, W), model_mask)
        assert (model_mask[cut] == 1).all()
        np.testing.assert_array_equal(cut_bag['/cam/free_space/grid'][i][1].data,
                                      off_bag['/cam/free_space/grid'][i][1].data)
        assert (cut_bag['/cam/free_space/grid'][i][1].data == 100).any()


def test_no_camera_info_no_scan(tmp_path, model):
    src = write_bag(tmp_path / 'in', n=2, info=False)
    proc = run_bag(src, tmp_path / 'out', '--model', model)
    assert proc.returncode == 0, proc.stderr
    got = read_bag(tmp_path / 'out')
    assert '/cam/free_space/scan' not in got and '/cam/free_space/grid' not in got


#: G - R of the unsure frames: the nearer 0, the less sure the tiny model (P(free) =
#: sigmoid(4 (G - R) / 255)); frames 3 and 1 are the least sure, then 5, 4, 2, 0
UNSURE_DIFFS = (90, 4, 60, 1, 30, -8)


def unsure_frame(i):
    """Return a uniform frame with G - R = UNSURE_DIFFS[i]."""
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[..., 0] = 100
    rgb[..., 1] = 100 + UNSURE_DIFFS[i]
    return rgb


@pytest.mark.parametrize('every,count,expect', [(1, 2, (1, 3)), (2, 2, (2, 4)),
                                                (1, 3, (1, 3, 5)), (1, 10, range(6))])
def test_label_export_least_confident(tmp_path, model, every, count, expect):
    """--label-least-confident K: the K least sure of every --label-every-th frame, no other."""
    from freespace_seg.tools.labels import frame_uncertainty

    src = write_bag(tmp_path / 'in', n=len(UNSURE_DIFFS), make_frame=unsure_frame)
    labels = tmp_path / 'labels'
    proc = run_bag(src, tmp_path / 'out', '--model', model, '--export-labels', labels,
                   '--label-every', every, '--label-least-confident', count,
                   '--label-ignore-band', '0')
    assert proc.returncode == 0, proc.stderr
    assert f'exported {len(expect)} label pairs' in proc.stdout
    names = sorted(os.listdir(labels))
    stems = [f'cam_image_raw_{1_000_000_000 * (i + 1):019d}' for i in expect]
    assert names == sorted([s + '.png' for s in stems] + [s + '_mask.png' for s in stems])
    pairs = user_image_pairs(str(labels))
    rgb, _ = read_user_image_pair(*pairs[0])
    np.testing.assert_array_equal(rgb, unsure_frame(expect[0]))
    # the known order is the pipeline's own: frame_uncertainty of segment_with_confidence
    pipe = _pipeline(model)
    u = [frame_uncertainty(pipe.segment_with_confidence(unsure_frame(i))[1])
         for i in range(len(UNSURE_DIFFS))]
    assert sorted(range(0, len(u), every), key=lambda i: -u[i])[:count] == \
        sorted(expect, key=lambda i: -u[i])


def test_frame_uncertainty():
    from freespace_seg.tools.labels import frame_uncertainty
    assert frame_uncertainty(np.array([[0, 255]], np.uint8)) == 0.0
    assert frame_uncertainty(np.array([[51, 204]], np.uint8)) == pytest.approx(0.2)


def test_worker_plan_shares_the_threads():
    from freespace_seg.tools.bag import worker_plan
    assert worker_plan(0, 2, 2) == (2, 1)      # auto: two frames at once on two threads
    assert worker_plan(0, 1, 16) == (1, 1)     # one thread: one worker
    assert worker_plan(0, 0, 16) == (2, 8)     # every CPU, shared by two workers
    assert worker_plan(3, 2, 2) == (3, 1)      # at least one thread per worker
    assert worker_plan(1, 0, 4) == (1, 4)


def test_jobs_write_the_same_bag(tmp_path, model):
    """
    --jobs 3 (frames segmented in threads, written in order) writes what --jobs 1 writes.

    Every topic's messages and bag times, bit for bit, with a bad frame in the middle (a
    skip must not shift the frames after it), CameraInfo (grid and scan), the confidence
    and the least-confident label export, which sees the frames in order.
    """
    src = write_bag(tmp_path / 'in', n=12, bad_frames=(5,))
    outs = {}
    for jobs in (1, 3):
        proc = run_bag(src, tmp_path / f'out{jobs}', '--model', model, '--backend',
                       'onnxruntime', '--num-threads', '3', '--jobs', jobs, '--confidence',
                       '--export-labels', tmp_path / f'labels{jobs}', '--label-every', '2',
                       '--label-least-confident', '2')
        assert proc.returncode == 0, proc.stderr
        assert '11 frames segmented' in proc.stdout and 'skipped 1:' in proc.stdout
        assert (f'{jobs} worker' in proc.stdout), proc.stdout
        outs[jobs] = read_bag(tmp_path / f'out{jobs}')
    one, three = outs[1], outs[3]
    assert sorted(one) == sorted(three)
    assert len(one['/cam/free_space/scan']) == 11
    for topic in one:
        assert len(one[topic]) == len(three[topic]), topic
        for (s1, m1), (s3, m3) in zip(one[topic], three[topic]):
            assert s1 == s3, topic
            for field in ('data', 'ranges'):
                if hasattr(m1, field):
                    np.testing.assert_array_equal(getattr(m1, field), getattr(m3, field))
    assert sorted(os.listdir(tmp_path / 'labels1')) == sorted(os.listdir(tmp_path / 'labels3'))
    assert len(os.listdir(tmp_path / 'labels1')) == 4   # 2 pairs


def test_grid_agreement_filters_the_grids_with_the_bag_s_odometry(tmp_path, model):
    """--grid-agreement-frames reads the bag's Odometry; without one the grids pass."""
    from freespace_seg.ground.geometry import CameraMount
    from freespace_seg.sim import default_intrinsics, Scene
    from freespace_seg.sim.render import free_mask
    from freespace_seg.sim.wander import wander
    from freespace_seg.tools.sim_bag import write_drive_bag

    scene = Scene.empty(size=(5.0, 5.0))
    drive = wander(scene, np.random.default_rng(0), duration=2.0, pose=(-1.5, 0.0, 0.0),
                   curves=False)
    intr = default_intrinsics(W, H)
    mount = CameraMount(z=0.3, pitch=0.3)

    def image_at(t, pose):
        free = free_mask(scene, intr, mount, pose).astype(bool)
        return np.where(free[..., None], np.uint8([30, 200, 30]), np.uint8([200, 30, 30]))

    grids = {}
    for via in ('odom', 'tf'):
        bag = str(tmp_path / via)
        write_drive_bag(bag, drive, intr, mount, image_at, frame_every=0.25, pose_via=via,
                        hazard='none', image_topic='/cam/image_raw',
                        info_topic='/cam/camera_info', camera_frame='camera_optical')
        out = tmp_path / f'{via}_out'
        r = run_bag(bag, out, '--model', model, '--grid-agreement-frames', '3',
                    '--camera-height', '0.3', '--camera-pitch', '0.3', '--jobs', '2')
        assert r.returncode == 0, r.stderr
        grids[via] = [g.data for _, g in read_bag(str(out))['/cam/free_space/grid']]
        n = len(grids[via])
        assert n >= 6, r.stdout
        if via == 'odom':
            assert f'grid agreement (3 of the last 3 grids, odometry /odom): applied to {n} ' \
                'grids, 0 passed unfiltered' in r.stdout
            assert '1 worker' in r.stdout
        else:
            assert f'odometry none in the bag): applied to 0 grids, {n} passed' in r.stdout
    # Without odometry every grid is the plain frame's; with it the first two have no free
    # cell (fewer than 3 grids), and the later ones keep only floor the grids before saw.
    for g in grids['tf']:
        assert (g == 0).sum() > 20
    assert [(g == 0).sum() for g in grids['odom'][:2]] == [0, 0]
    for with_odom, alone in zip(grids['odom'][2:], grids['tf'][2:]):
        assert 0 < (with_odom == 0).sum() <= (alone == 0).sum()
    # The occlusion memory reads the same odometry; with no obstacle in range (an empty
    # room, its walls out of view) it takes nothing away.
    out = tmp_path / 'occlusion_out'
    r = run_bag(str(tmp_path / 'odom'), out, '--model', model, '--grid-occlusion-memory', '10',
                '--camera-height', '0.3', '--camera-pitch', '0.3', '--jobs', '2')
    assert r.returncode == 0, r.stderr
    held = [g.data for _, g in read_bag(str(out))['/cam/free_space/grid']]
    assert f'occlusion memory (obstacles of the last 10 s, odometry /odom): applied to ' \
        f'{len(held)} grids, 0 passed unfiltered' in r.stdout
    assert '1 worker' in r.stdout
    assert len(held) == len(grids['tf'])
    for with_memory, alone in zip(held, grids['tf']):
        np.testing.assert_array_equal(with_memory, alone)
        assert not ((with_odom == 0) & (alone != 0)).any()
