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

"""The ground outputs of segmentation_node over real topics: grid, points, scan, picture."""

import array
import dataclasses
import math

from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.grid import GridRule, GridSpec, PLAIN_RULE
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.ground.scan import ScanLayout
from freespace_seg.nodes.msgs import array_to_image, camera_info_from_intrinsics
from freespace_seg.nodes.segmentation_node import start_segmentation_node
from freespace_seg.perception.image_codec import image_to_array
from freespace_seg.sim import Box, Cylinder, default_intrinsics, default_mount, render, Scene
from nav_msgs.msg import OccupancyGrid, Odometry
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image, LaserScan, PointCloud2
from std_msgs.msg import Header
from support import write_tiny_model
from support.ros import Harness, subscriptions_on, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

W, H = 640, 360


def _frame():
    scene = Scene.empty(size=(8.0, 8.0), obstacles=[
        Box(1.2, 0.3, 0.4, 0.4, 0.5), Cylinder(0.9, -0.6, 0.08, 0.7)])
    intr = default_intrinsics(W, H)
    return render(scene, intr, default_mount(), robot_pose=(0.0, 0.0, 0.0)), intr


def _truth_image(frame):
    """
    Green where the floor is free, red elsewhere: the tiny model reads it exactly.

    Full 255 / 0, so the tiny model is sure: its logit difference is 2 (G - R) / 127.5 = +-4,
    P = 0.982, more than the default grid_cut_confidence (0.97).
    """
    img = np.zeros((H, W, 3), np.uint8)
    img[..., 0] = np.where(frame.free > 0, 0, 255)
    img[..., 1] = np.where(frame.free > 0, 255, 0)
    return img


def _tiny_confidence(rgb):
    """P(free) x 255 of the tiny model, computed directly from the pixels."""
    d = 2.0 * (rgb[..., 1].astype(np.float64) - rgb[..., 0]) / 127.5
    return np.floor(255.0 / (1.0 + np.exp(-d)) + 0.5).astype(np.uint8)


def _rig(tmp_path, prefix, *extra):
    """
    Start a node on the tiny model, mounted as the renders; return its Harness.

    Network input = camera size: no resize, so the node's mask equals the ground truth.
    """
    model = write_tiny_model(tmp_path, W, H)
    ns = unique_namespace(prefix)
    node = start_segmentation_node(namespace=ns, parameter_overrides=[
        Parameter('model_file_path', value=model), Parameter('num_threads', value=1),
        Parameter('camera_height', value=0.25), Parameter('camera_pitch', value=0.3),
        *extra])
    h = Harness(ns, node)
    h.node = node
    return h


@pytest.fixture
def ground_rig(ros_init, tmp_path):
    h = _rig(tmp_path, 'g')
    yield h
    h.close()


def _publish(rig, frame, intr, sec, with_info=True):
    img = array_to_image(_truth_image(frame), 'rgb8')
    img.header.stamp.sec = sec
    img.header.frame_id = 'camera_optical_frame'
    if with_info:
        info = camera_info_from_intrinsics(intr, img.header)
        rig.info_pub.publish(info)
    rig.image_pub.publish(img)


def _setup_pubs(rig):
    rig.image_pub = rig.publisher(Image, 'image')
    rig.info_pub = rig.publisher(CameraInfo, 'camera_info')
    assert rig.wait_for_subscribers(rig.image_pub)
    assert rig.wait_for_subscribers(rig.info_pub)


def _wanted_outputs(rig, *outputs):
    """Collect each (type, topic) of ``outputs``, set up the inputs; wait until all are wanted."""
    got = [rig.collect(kind, topic) for kind, topic in outputs]
    _setup_pubs(rig)
    assert rig.wait_for(lambda: all(rig.node.wants(topic) for _, topic in outputs))
    return got


def test_grid_outputs_match_a_direct_projection_of_the_truth(ground_rig):
    rig = ground_rig
    grids, clouds, pictures = _wanted_outputs(
        rig, (OccupancyGrid, 'free_space/grid'), (PointCloud2, 'free_space/obstacles'),
        (Image, 'free_space/grid_image'))
    frame, intr = _frame()
    _publish(rig, frame, intr, 77)
    assert rig.wait_for(lambda: grids and clouds and pictures, timeout=15)
    msg = grids[0]
    spec = GridSpec()
    assert msg.header.frame_id == 'base_link' and msg.header.stamp.sec == 77
    assert (msg.info.width, msg.info.height) == (spec.nx, spec.ny)
    assert msg.info.resolution == pytest.approx(0.05)
    assert (msg.info.origin.position.x, msg.info.origin.position.y) == (0.0, -2.0)
    assert msg.info.origin.orientation.w == 1.0
    grid = np.frombuffer(array.array('b', msg.data), np.int8).reshape(spec.ny, spec.nx)
    # The node's default grid rule, with the confidence the tiny model gives.
    direct = GroundProjector(intr, default_mount(), spec).ground(
        frame.free, _tiny_confidence(_truth_image(frame)), GridRule()).grid
    np.testing.assert_array_equal(grid, direct)
    assert (grid == 0).sum() > 500 and (grid == 100).sum() > 5
    # The box at x = 1.0 .. 1.4 m, y = 0.1 .. 0.5 m: its front face meets the floor at x = 1.0.
    row, col = spec.cell_of(1.0 + 0.02, 0.3)
    assert grid[row, col] == 100
    cloud = clouds[0]
    assert cloud.header.frame_id == 'base_link' and cloud.header.stamp.sec == 77
    pts = np.frombuffer(bytes(cloud.data), '<f4').reshape(-1, 3)
    assert len(pts) == cloud.width == (grid == 100).sum()
    assert np.all(pts[:, 2] == 0.0)
    pic = pictures[0]
    assert pic.encoding == 'rgb8' and pic.header.stamp.sec == 77
    assert image_to_array(pic).shape[0] > spec.ny


def test_no_grid_until_camera_info_and_diagnostics_say_why(ground_rig):
    rig = ground_rig
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    masks = rig.collect(Image, 'free_space/mask')
    _setup_pubs(rig)
    node = rig.node
    assert rig.wait_for(lambda: node.wants('free_space/grid') and node.wants('free_space/mask'))
    frame, intr = _frame()
    _publish(rig, frame, intr, 5, with_info=False)
    assert rig.wait_for(lambda: masks)
    assert not grids
    status = node.diagnostics_status()
    assert 'grid not published' in status.message and 'CameraInfo' in status.message
    _publish(rig, frame, intr, 6, with_info=True)
    assert rig.wait_for(lambda: grids, timeout=15)
    assert grids[0].header.stamp.sec == 6


def test_late_transient_local_subscriber_gets_the_grid(ground_rig):
    """Nav2's StaticLayer subscribes transient_local by default: it must get the last grid."""
    rig = ground_rig
    first = rig.collect(OccupancyGrid, 'free_space/grid')
    _setup_pubs(rig)
    frame, intr = _frame()
    assert rig.wait_for(lambda: rig.node.wants('free_space/grid'))
    _publish(rig, frame, intr, 9)
    assert rig.wait_for(lambda: first, timeout=15)
    late = []
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    rig.client.create_subscription(OccupancyGrid, 'free_space/grid', late.append, qos)
    assert rig.wait_for(lambda: late, timeout=10)
    assert late[0].header.stamp.sec == 9


def test_mount_parameters_change_the_projection_at_run_time(ground_rig):
    rig = ground_rig
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    _setup_pubs(rig)
    node = rig.node
    frame, intr = _frame()
    assert rig.wait_for(lambda: node.wants('free_space/grid'))
    _publish(rig, frame, intr, 1)
    assert rig.wait_for(lambda: grids, timeout=15)
    builds = node.projector.rebuild_count
    bad = node.set_parameters([Parameter('camera_height', value=-1.0)])[0]
    assert not bad.successful and node.get_parameter('camera_height').value == 0.25
    bad = node.set_parameters([Parameter('grid_origin', value=[1.0])])[0]
    assert not bad.successful
    ok = node.set_parameters([Parameter('camera_pitch', value=0.5)])[0]
    assert ok.successful
    _publish(rig, frame, intr, 2)
    assert rig.wait_for(lambda: any(g.header.stamp.sec == 2 for g in grids), timeout=15)
    assert node.projector.rebuild_count == builds + 1
    g2 = [g for g in grids if g.header.stamp.sec == 2][0]
    # Same image read with a steeper pitch: the floor maps nearer, so the grid differs.
    assert bytes(g2.data) != bytes(grids[0].data)


def test_diagnostics_and_a_warning_say_how_near_the_camera_sees_the_floor(ground_rig):
    rig = ground_rig
    grids, scans, clouds = _wanted_outputs(
        rig, (OccupancyGrid, 'free_space/grid'), (LaserScan, 'free_space/scan'),
        (PointCloud2, 'free_space/obstacles'))
    node = rig.node
    frame, intr = _frame()
    values = {kv.key: kv.value for kv in node.diagnostics_status().values}
    assert values['nearest_floor_in_view_m'].startswith('n/a')
    _publish(rig, frame, intr, 1)
    assert rig.wait_for(lambda: grids, timeout=15)
    # 0.25 m up, pitched 0.3 rad down: the floor from about 0.32 m on, inside the driver's
    # default blind_distance (0.45 m): no warning.
    near = GroundProjector(intr, default_mount(), GridSpec()).nearest_floor
    assert 0.28 < near < 0.36
    assert rig.wait_for(lambda: node.checked_view is not None)
    values = {kv.key: kv.value for kv in node.diagnostics_status().values}
    assert values['nearest_floor_in_view_m'] == f'{near:.2f}'
    assert node.view_note is None
    # On a 1 m mast at the same pitch the floor starts 1.27 m out: the node says so.
    assert node.set_parameters([Parameter('camera_height', value=1.0)])[0].successful
    _publish(rig, frame, intr, 2)
    assert rig.wait_for(lambda: any(g.header.stamp.sec == 2 for g in grids), timeout=15)
    far = node.projector.nearest_floor
    assert 1.2 < far < 1.35
    assert rig.wait_for(lambda: node.view_note is not None)
    assert f'from {far:.2f} m on' in node.view_note and 'blind_distance (0.45 m' in node.view_note
    values = {kv.key: kv.value for kv in node.diagnostics_status().values}
    assert values['nearest_floor_in_view_m'] == f'{far:.2f}'
    # Pitched up so that no pixel sees the floor: every ground output still comes, empty.
    assert node.set_parameters([Parameter('camera_pitch', value=-0.45)])[0].successful
    _publish(rig, frame, intr, 3)
    assert rig.wait_for(lambda: all(any(m.header.stamp.sec == 3 for m in got)
                                    for got in (grids, scans, clouds)), timeout=15)
    assert node.projector.nearest_floor == float('inf')
    # The note follows the frame's outputs, which go out as soon as each is made.
    assert rig.wait_for(lambda: node.view_note is not None and 'floor nowhere' in node.view_note)
    [grid] = [g for g in grids if g.header.stamp.sec == 3]
    assert set(grid.data) == {-1}
    assert node.bad_frames == 0 and node.last_error == ''
    # Back on the low mount: the note clears.
    assert node.set_parameters([Parameter('camera_height', value=0.25),
                                Parameter('camera_pitch', value=0.3)])[0].successful
    _publish(rig, frame, intr, 4)
    assert rig.wait_for(lambda: any(g.header.stamp.sec == 4 for g in grids), timeout=15)
    assert rig.wait_for(lambda: node.view_note is None)


def _grid_array(msg, spec):
    return np.frombuffer(array.array('b', msg.data), np.int8).reshape(spec.ny, spec.nx)


def test_camera_info_is_matched_to_each_image_by_stamp(ground_rig):
    """Two CameraInfos, two stamps: each image is projected with its own intrinsics."""
    rig = ground_rig
    node = rig.node
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    _setup_pubs(rig)
    assert rig.wait_for_match(rig.info_pub, subscriptions_on(node, 'camera_info'))
    assert rig.wait_for(lambda: node.wants('free_space/grid'))
    frame, intr_a = _frame()
    # Same camera, principal point 40 px lower: the horizon moves, the floor maps elsewhere.
    intr_b = dataclasses.replace(intr_a, cy=intr_a.cy + 40.0)
    spec = GridSpec()
    conf = _tiny_confidence(_truth_image(frame))
    truth = {s: GroundProjector(i, default_mount(), spec).ground(frame.free, conf, GridRule())
             .grid for s, i in ((10, intr_a), (11, intr_b))}
    assert not np.array_equal(truth[10], truth[11])
    header = Header(frame_id='camera_optical_frame')
    for sec, intr in ((10, intr_a), (11, intr_b)):
        header.stamp.sec = sec
        rig.info_pub.publish(camera_info_from_intrinsics(intr, header))
        # One at a time: the camera_info subscription keeps one message (SENSOR_DATA).
        assert rig.wait_for(lambda: sec in [i.header.stamp.sec for i in node.camera_infos])

    def grid_for(sec, nth=1):
        _publish(rig, frame, None, sec, with_info=False)
        assert rig.wait_for(lambda: len([g for g in grids if g.header.stamp.sec == sec]) >= nth,
                            timeout=15), sec
        return _grid_array([g for g in grids if g.header.stamp.sec == sec][nth - 1], spec)
    # Stamp 10 while the newest CameraInfo is 11's, then 11, then 10 again.
    np.testing.assert_array_equal(grid_for(10), truth[10])
    np.testing.assert_array_equal(grid_for(11), truth[11])
    np.testing.assert_array_equal(grid_for(10, nth=2), truth[10])
    # No CameraInfo has stamp 12: the newest one (11's) is used.
    np.testing.assert_array_equal(grid_for(12), truth[11])


def test_footprint_radius_changes_the_grid_image_live(ground_rig):
    rig = ground_rig
    node = rig.node
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    pictures = rig.collect(Image, 'free_space/grid_image')
    _setup_pubs(rig)
    assert rig.wait_for(lambda: node.wants('free_space/grid')
                        and node.wants('free_space/grid_image'))
    frame, intr = _frame()
    spec = GridSpec()

    def picture_and_grid(sec):
        _publish(rig, frame, intr, sec)
        assert rig.wait_for(lambda: any(p.header.stamp.sec == sec for p in pictures)
                            and any(g.header.stamp.sec == sec for g in grids), timeout=15)
        picture = [p for p in pictures if p.header.stamp.sec == sec][0]
        grid = [g for g in grids if g.header.stamp.sec == sec][0]
        return image_to_array(picture), _grid_array(grid, spec)
    picture, grid = picture_and_grid(1)
    np.testing.assert_array_equal(picture, render_grid(grid, 0.17, grid_spec=spec))
    ok = node.set_parameters([Parameter('footprint_radius', value=0.6)])[0]
    assert ok.successful, ok.reason
    picture, grid = picture_and_grid(2)
    np.testing.assert_array_equal(picture, render_grid(grid, 0.6, grid_spec=spec))
    assert not np.array_equal(picture, render_grid(grid, 0.17, grid_spec=spec))


def test_use_tf_without_tf2_falls_back_to_parameters(ros_init, tmp_path):
    pytest.importorskip('rclpy')
    try:
        import tf2_ros  # noqa: F401
        pytest.skip('tf2_ros is installed here; the fallback path is not reachable')
    except ImportError:
        pass
    model = write_tiny_model(tmp_path, 64, 36)
    node = start_segmentation_node(namespace=unique_namespace('tf'), parameter_overrides=[
        Parameter('model_file_path', value=model), Parameter('use_tf', value=True)])
    try:
        assert 'tf2_ros is not importable' in node.pose_source.status
        assert node.pose_source.lookup('camera_optical_frame', None) is None
        values = {kv.key: kv.value for kv in node.diagnostics_status().values}
        assert 'tf2_ros is not importable' in values['camera_pose']
    finally:
        node.destroy_node()


def _ranges(msg):
    return np.frombuffer(array.array('f', msg.ranges).tobytes(), np.float32)


def test_masks_are_blocked_above_the_horizon_until_mask_horizon_is_off(ground_rig):
    """A picture the model calls free everywhere: no free pixel above the horizon comes out."""
    from freespace_seg.ground.horizon import HorizonCut

    rig = ground_rig
    node = rig.node
    masks = rig.collect(Image, 'free_space/mask')
    classes = rig.collect(Image, 'segmentation/mask')
    _setup_pubs(rig)
    assert rig.wait_for(lambda: node.wants('free_space/mask')
                        and node.wants('segmentation/mask'))
    assert node.horizon == (True, 1.0)
    intr = default_intrinsics(W, H)
    green = np.zeros((H, W, 3), np.uint8)
    green[..., 1] = 255

    def publish(sec):
        img = array_to_image(green, 'rgb8')
        img.header.stamp.sec = sec
        img.header.frame_id = 'camera_optical_frame'
        rig.info_pub.publish(camera_info_from_intrinsics(intr, img.header))
        rig.image_pub.publish(img)
        assert rig.wait_for(lambda: [m for m in masks if m.header.stamp.sec == sec] and
                            [m for m in classes if m.header.stamp.sec == sec], timeout=15)
        return (image_to_array([m for m in masks if m.header.stamp.sec == sec][0]),
                image_to_array([m for m in classes if m.header.stamp.sec == sec][0]))

    free, mask = publish(1)
    cut = HorizonCut(intr, node.mount, 1.0).mask
    assert 20 * W < cut.sum() < 30 * W                 # the top ~26 of 360 rows
    np.testing.assert_array_equal(free, np.where(cut, 0, 255))
    np.testing.assert_array_equal(mask, np.where(cut, 0, 1))
    assert node.horizon_cut is not None and node.horizon_cut.rebuild_count == 1
    # A wider margin at run time: fewer rows, one rebuild.
    assert node.set_parameters([Parameter('horizon_margin_deg', value=3.0)])[0].successful
    free, _ = publish(2)
    assert 0 < (free == 0).sum() < cut.sum() and node.horizon_cut.rebuild_count == 2
    assert node.set_parameters([Parameter('mask_horizon', value=False)])[0].successful
    free, mask = publish(3)
    assert (free == 255).all() and (mask == 1).all()


def test_confidence_topic_is_p_free_with_the_input_header(ground_rig):
    rig = ground_rig
    node = rig.node
    confs = rig.collect(Image, 'segmentation/confidence')
    _setup_pubs(rig)
    assert rig.wait_for(lambda: node.wants('segmentation/confidence'))
    # Nothing else is subscribed: the grid is not computed, the confidence is.
    assert node.wanted_outputs == [node.resolve_topic_name('segmentation/confidence')]
    rgb = np.random.default_rng(5).integers(0, 256, (H, W, 3), dtype=np.uint8)
    img = array_to_image(rgb, 'rgb8')
    img.header.stamp.sec, img.header.stamp.nanosec = 31, 500
    img.header.frame_id = 'cam_optical'
    rig.image_pub.publish(img)
    assert rig.wait_for(lambda: confs, timeout=15)
    msg = confs[0]
    assert msg.encoding == 'mono8' and (msg.width, msg.height) == (W, H)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (31, 500)
    assert msg.header.frame_id == 'cam_optical'
    conf = image_to_array(msg)
    assert np.abs(conf.astype(int) - _tiny_confidence(rgb)).max() <= 1
    assert conf.min() < 20 and conf.max() > 235


def test_scan_grid_and_cloud_match_a_direct_computation_and_each_other(ground_rig):
    rig = ground_rig
    node = rig.node
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    clouds = rig.collect(PointCloud2, 'free_space/obstacles')
    scans = rig.collect(LaserScan, 'free_space/scan')
    _setup_pubs(rig)
    assert rig.wait_for(lambda: all(node.wants(t) for t in (
        'free_space/grid', 'free_space/obstacles', 'free_space/scan')))
    frame, intr = _frame()
    _publish(rig, frame, intr, 44)
    assert rig.wait_for(lambda: grids and clouds and scans, timeout=15)
    spec = GridSpec()
    proj = GroundProjector(intr, default_mount(), spec)
    free = np.where(frame.free > 0, 255, 0).astype(np.uint8)
    direct = proj.ground(free, _tiny_confidence(_truth_image(frame)), GridRule())
    layout = ScanLayout(proj, 0.01)
    scan = scans[0]
    assert scan.header.frame_id == 'base_link' and scan.header.stamp.sec == 44
    assert scan.angle_increment == pytest.approx(0.01)
    assert scan.angle_min == pytest.approx(layout.angle_min, abs=1e-6)
    assert scan.angle_max == pytest.approx(layout.angle_max, abs=1e-6)
    assert scan.range_min == pytest.approx(layout.range_min, abs=1e-6)
    assert scan.range_max == pytest.approx(layout.range_max, abs=1e-6)
    assert len(scan.ranges) == layout.size == int(round(
        (scan.angle_max - scan.angle_min) / scan.angle_increment)) + 1
    ranges = _ranges(scan)
    np.testing.assert_array_equal(ranges, layout.ranges(direct))
    grid = _grid_array(grids[0], spec)
    np.testing.assert_array_equal(grid, direct.grid)
    # Sure pixels, tall obstacles: the plain rule's occupied cells; the rule only opens
    # floor that columns grazing a slanted obstacle edge see above it.
    plain = proj.ground(free, None, PLAIN_RULE).grid
    np.testing.assert_array_equal(grid == 100, plain == 100)
    assert np.all(grid[grid != plain] == 0) and np.all(plain[grid != plain] == -1)
    pts = np.frombuffer(bytes(clouds[0].data), '<f4').reshape(-1, 3)
    np.testing.assert_allclose(pts, direct.points, atol=1e-6)
    # They never disagree: one point per occupied cell, each finite range is a point's
    # distance in an occupied cell on the ray, and no ray passes an occupied cell unseen.
    cells = spec.flat_index(pts[:, 0], pts[:, 1])
    np.testing.assert_array_equal(np.sort(cells), np.flatnonzero(grid.ravel() == 100))
    dists = np.hypot(pts[:, 0], pts[:, 1])
    finite = np.flatnonzero(np.isfinite(ranges))
    assert finite.size >= 10 and np.isposinf(ranges).sum() >= 10
    for i in finite:
        j = int(np.argmin(np.abs(dists - ranges[i])))
        assert abs(dists[j] - ranges[i]) < 1e-4
        assert grid.ravel()[cells[j]] == 100 and cells[j] in layout.crossed_cells(i)
        angle = scan.angle_min + i * scan.angle_increment
        bearing = math.atan2(pts[j, 1], pts[j, 0])
        assert abs(bearing - angle) < math.atan2(1.5 * spec.resolution, ranges[i]) + 0.01
    for i in np.flatnonzero(~np.isfinite(ranges)):
        assert not np.any(grid.ravel()[layout.crossed_cells(i)] == 100)


def test_grid_rule_and_scan_parameters_apply_at_run_time(ground_rig):
    rig = ground_rig
    node = rig.node
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    scans = rig.collect(LaserScan, 'free_space/scan')
    _setup_pubs(rig)
    assert rig.wait_for(lambda: node.wants('free_space/grid') and node.wants('free_space/scan'))
    frame, intr = _frame()
    # Speckle on the floor: 3-row blobs the tiny model reads as unsure blocked (R = G + 40).
    img = _truth_image(frame)
    rng = np.random.default_rng(8)
    noisy = frame.free.copy()
    for _ in range(60):
        r, c = int(rng.integers(H // 2, H - 4)), int(rng.integers(0, W - 8))
        if frame.free[r:r + 3, c:c + 8].all():
            img[r:r + 3, c:c + 8] = (120, 80, 0)
            noisy[r:r + 3, c:c + 8] = 0
    spec = GridSpec()
    proj = GroundProjector(intr, default_mount(), spec)

    def grid_for(sec):
        msg = array_to_image(img, 'rgb8')
        msg.header.stamp.sec = sec
        msg.header.frame_id = 'camera_optical_frame'
        rig.info_pub.publish(camera_info_from_intrinsics(intr, msg.header))
        rig.image_pub.publish(msg)
        assert rig.wait_for(lambda: any(g.header.stamp.sec == sec for g in grids)
                            and any(s.header.stamp.sec == sec for s in scans), timeout=15)
        g = [g for g in grids if g.header.stamp.sec == sec][0]
        s = [s for s in scans if s.header.stamp.sec == sec][0]
        return _grid_array(g, spec), s
    conf = _tiny_confidence(img)
    grid, scan = grid_for(1)
    assert 'confidence' in node.pipeline.timings   # the default rule reads it
    np.testing.assert_array_equal(grid, proj.ground(noisy, conf, GridRule()).grid)
    assert len(scan.ranges) == ScanLayout(proj, 0.01).size
    ok = node.set_parameters([Parameter('grid_min_obstacle_run', value=0.0),
                              Parameter('grid_cut_confidence', value=0.0),
                              Parameter('grid_free_confidence', value=0.0),
                              Parameter('scan_angle_increment', value=0.02)])
    assert all(r.successful for r in ok)
    bad = node.set_parameters([Parameter('grid_cut_confidence', value=1.5)])[0]
    assert not bad.successful
    grid2, scan2 = grid_for(2)
    assert 'confidence' not in node.pipeline.timings   # the plain rule does not
    plain = proj.ground(noisy, None, PLAIN_RULE).grid
    np.testing.assert_array_equal(grid2, plain)
    assert np.count_nonzero(grid == 0) > np.count_nonzero(plain == 0) + 50
    assert scan2.angle_increment == pytest.approx(0.02)
    assert len(scan2.ranges) == ScanLayout(proj, 0.02).size


@pytest.fixture
def agreement_rig(ros_init, tmp_path):
    h = _rig(tmp_path, 'ga', Parameter('grid_agreement_frames', value=2))
    yield h
    h.close()


def _publish_odom(rig, sec, x=0.0):
    msg = Odometry()
    msg.header.stamp.sec = sec
    msg.header.frame_id = 'odom'
    msg.child_frame_id = 'base_link'
    msg.pose.pose.position.x = x
    msg.pose.pose.orientation.w = 1.0
    rig.odom_pub.publish(msg)
    assert rig.wait_for(lambda: rig.node.odom_pose_at(sec * 1_000_000_000) is not None)


def _with_odom(rig):
    """Set up the image, CameraInfo and odom publishers; return the grids as they come."""
    grids = rig.collect(OccupancyGrid, 'free_space/grid')
    _setup_pubs(rig)
    rig.odom_pub = rig.publisher(Odometry, 'odom')
    assert rig.wait_for_subscribers(rig.odom_pub)
    assert rig.wait_for(lambda: rig.node.wants('free_space/grid'))
    return grids


def test_grid_agreement_frees_a_cell_only_when_the_last_grids_agree_in_odom(agreement_rig):
    rig = agreement_rig
    grids, node = _with_odom(rig), rig.node
    assert node.agreement_status == '2 of the last 2 grids: no grid yet'
    frame, intr = _frame()
    spec = GridSpec()
    direct = GroundProjector(intr, default_mount(), spec).ground(
        frame.free, _tiny_confidence(_truth_image(frame)), GridRule()).grid

    def grid_of(sec):
        assert rig.wait_for(lambda: any(g.header.stamp.sec == sec for g in grids), timeout=15)
        return _grid_array([g for g in grids if g.header.stamp.sec == sec][0], spec)

    # The first grid has no grid before it: no free cell, obstacles at once.
    _publish_odom(rig, 10)
    _publish(rig, frame, intr, 10)
    first = grid_of(10)
    assert not (first == 0).any()
    np.testing.assert_array_equal(first == 100, direct == 100)
    # (the status is set once the frame is done, just after its grid went out)
    assert rig.wait_for(lambda: ': applied' in node.agreement_status)
    # The same floor from the same pose: the two grids agree, every free cell is back.
    _publish_odom(rig, 11)
    _publish(rig, frame, intr, 11)
    np.testing.assert_array_equal(grid_of(11), direct)
    # The same image 0.5 m further on: its floor lies elsewhere in odom, so the cells that
    # the grid before did not call free (within a cell) are unknown now.
    _publish_odom(rig, 12, x=0.5)
    _publish(rig, frame, intr, 12)
    moved = grid_of(12)
    assert 0 < (moved == 0).sum() < (direct == 0).sum()
    assert not ((moved == 0) & (direct != 0)).any()
    # No odometry at the image's stamp: the grid passes as it is, and diagnostics say so.
    _publish(rig, frame, intr, 40)
    np.testing.assert_array_equal(grid_of(40), direct)
    assert rig.wait_for(lambda: 'not applied, no odometry' in node.agreement_status)
    values = {kv.key: kv.value for kv in node.diagnostics_status().values}
    assert values['grid_agreement'] == node.agreement_status


def test_grid_agreement_parameters_are_checked_together(agreement_rig):
    node = agreement_rig.node
    bad = node.set_parameters([Parameter('grid_agreement_min_free', value=3)])[0]
    assert not bad.successful and 'min_free' in bad.reason
    ok = node.set_parameters([Parameter('grid_agreement_frames', value=1)])[0]
    assert ok.successful and node.agreement_status == 'off'


@pytest.fixture
def occlusion_rig(ros_init, tmp_path):
    h = _rig(tmp_path, 'go', Parameter('grid_occlusion_memory', value=10.0))
    yield h
    h.close()


def test_grid_occlusion_memory_keeps_the_floor_behind_a_box_seen_before_unknown(occlusion_rig):
    """A box cut the columns of the first grid; a later mask that frees behind it is held."""
    rig = occlusion_rig
    grids, node = _with_odom(rig), rig.node
    assert node.occlusion_status == 'obstacles of the last 10 s: no grid yet'
    frame, intr = _frame()
    spec = GridSpec()
    proj = GroundProjector(intr, default_mount(), spec)
    # The second mask keeps only the lowest 3 blocked rows of each column (too short to cut
    # the column, as a model that calls the box's face floor): the grid marks the feet and,
    # the tiny model being sure, frees the "floor" behind them.
    fooled = np.ones_like(frame.free, dtype=bool)
    for col in range(W):
        rows = np.flatnonzero(frame.free[:, col] == 0)
        if rows.size:
            fooled[max(0, rows.max() - 2):rows.max() + 1, col] = False
    fooled_frame = dataclasses.replace(frame, free=fooled)
    fooled_direct = proj.ground(fooled, _tiny_confidence(_truth_image(fooled_frame)),
                                GridRule()).grid

    def grid_of(sec):
        assert rig.wait_for(lambda: any(g.header.stamp.sec == sec for g in grids), timeout=15)
        return _grid_array([g for g in grids if g.header.stamp.sec == sec][0], spec)

    # Without odometry the memory has nothing to go on: the fooled grid passes as it is.
    _publish(rig, fooled_frame, intr, 5)
    np.testing.assert_array_equal(grid_of(5), fooled_direct)
    assert rig.wait_for(lambda: 'not applied, no odometry' in node.occlusion_status)
    _publish_odom(rig, 10)
    _publish(rig, frame, intr, 10)
    grid_of(10)
    assert rig.wait_for(lambda: ': applied' in node.occlusion_status)
    _publish_odom(rig, 11)
    _publish(rig, fooled_frame, intr, 11)
    held = grid_of(11)
    # Only free cells are taken away, and those lie behind the box or the cylinder.
    assert not ((held == 0) & (fooled_direct != 0)).any()
    np.testing.assert_array_equal(held == 100, fooled_direct == 100)
    hidden = (fooled_direct == 0) & (held != 0)
    x, y = spec.cell_centers()
    bearing, reach = np.arctan2(y, x), np.hypot(x, y)
    # The box spans bearings 0.07-0.46 rad from 1.0 m on, the cylinder -0.67 to -0.51 from
    # 1.0 m on (a margin of half a cell at their distance).
    behind_box = (bearing > 0.04) & (bearing < 0.5) & (reach > 0.95)
    behind_cylinder = (bearing > -0.72) & (bearing < -0.46) & (reach > 0.95)
    assert hidden.sum() > 20
    assert (hidden & behind_box).sum() > 10
    stray = hidden & ~behind_box & ~behind_cylinder
    assert not stray.any(), list(zip(x[stray], y[stray]))
    values = {kv.key: kv.value for kv in node.diagnostics_status().values}
    assert values['grid_occlusion'] == node.occlusion_status
    # Off at run time: the fooled grid passes again.
    assert node.set_parameters([Parameter('grid_occlusion_memory', value=0.0)])[0].successful
    assert node.occlusion_status == 'off'
    _publish_odom(rig, 12)
    _publish(rig, fooled_frame, intr, 12)
    np.testing.assert_array_equal(grid_of(12), fooled_direct)
