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

"""Tests for the ground projection (inverse perspective mapping) of free-floor masks."""

import math

from freespace_seg.ground.camera_info import (intrinsics_from_camera_info,
                                              intrinsics_from_camera_info_msg)
from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount, pixel_rays_in_base
from freespace_seg.ground.grid import GridRule, GridSpec
from freespace_seg.ground.metrics import false_free, grid_iou
from freespace_seg.ground.projection import GroundProjector
import numpy as np
import pytest

PLAIN = CameraIntrinsics.from_fov(640, 480, math.radians(90.0))
OFFSET = CameraIntrinsics(640, 480, 330.0, 310.0, 345.5, 221.0)
DISTORTED = CameraIntrinsics(640, 480, 340.0, 338.0, 330.0, 250.0,
                             (-0.12, 0.03, 0.001, -0.0008, -0.004))

CONFIGS = {
    'level_low': (PLAIN, CameraMount(z=0.35, pitch=0.0)),
    'pitched': (PLAIN, CameraMount(z=0.2, pitch=0.3)),
    'roll_yaw_offset_pp': (OFFSET, CameraMount(x=0.1, y=-0.05, z=0.5, roll=0.1, pitch=0.45,
                                               yaw=0.3)),
    'distorted': (DISTORTED, CameraMount(x=0.05, z=0.15, roll=-0.05, pitch=0.25, yaw=-0.4)),
    'distorted_high_steep': (DISTORTED, CameraMount(z=1.0, roll=0.03, pitch=0.9, yaw=0.2)),
    'looking_up_a_bit': (OFFSET, CameraMount(z=0.25, pitch=-0.05, yaw=0.5)),
}


def to_optical(points_base, mount):
    """Base-frame points (N, 3) into the optical frame of a mount."""
    rot = mount.rotation_base_from_optical()
    return (np.asarray(points_base, dtype=np.float64) - mount.position) @ rot


def camera_range(spec_x, spec_y, mount):
    """Floor distance from the point below the optical centre."""
    return np.hypot(spec_x - mount.x, spec_y - mount.y)


def visible_cell_centres(intr, mount, spec, margin=1.0):
    """Cell centres in range that project into the image; their (u, v) and Jacobians."""
    xs, ys = spec.cell_centers()
    xs, ys = xs.ravel(), ys.ravel()
    keep = camera_range(xs, ys, mount) <= spec.max_range
    pts = np.stack([xs[keep], ys[keep], np.zeros(keep.sum())], axis=1)
    opt = to_optical(pts, mount)
    front = opt[:, 2] > 0.05
    pts, opt = pts[front], opt[front]
    # Stay where the distortion polynomial is monotonic, so projectPoints is trustworthy.
    radius = np.hypot(opt[:, 0] / opt[:, 2], opt[:, 1] / opt[:, 2])
    pts, opt = pts[radius < 1.0], opt[radius < 1.0]
    uv = intr.project(opt)
    inside = (uv[:, 0] >= margin) & (uv[:, 0] <= intr.width - 1 - margin) & \
        (uv[:, 1] >= margin) & (uv[:, 1] <= intr.height - 1 - margin)
    pts, uv = pts[inside], uv[inside]
    step = 1e-4
    jac = np.empty((pts.shape[0], 2, 2))
    for axis in range(2):
        moved = pts.copy()
        moved[:, axis] += step
        jac[:, :, axis] = (intr.project(to_optical(moved, mount)) - uv) / step
    return pts, uv, jac


@pytest.fixture(scope='module')
def projectors():
    return {name: GroundProjector(intr, mount, GridSpec())
            for name, (intr, mount) in CONFIGS.items()}


# -- geometry against known ground points ------------------------------------------------


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_subpixel_floor_points_match_forward_projection(projectors, name):
    intr, mount = CONFIGS[name]
    proj = projectors[name]
    spec = proj.grid_spec
    pts, uv, _ = visible_cell_centres(intr, mount, spec)
    assert pts.shape[0] > 200
    gx, gy = proj.pixel_to_ground(uv[:, 0], uv[:, 1])
    err = np.hypot(gx - pts[:, 0], gy - pts[:, 1])
    assert err.max() < 0.02 * spec.resolution


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_lut_maps_pixels_to_the_right_cell(projectors, name):
    intr, mount = CONFIGS[name]
    proj = projectors[name]
    spec = proj.grid_spec
    pts, uv, jac = visible_cell_centres(intr, mount, spec)
    ui = np.rint(uv[:, 0]).astype(int)
    vi = np.rint(uv[:, 1]).astype(int)
    got = proj.lut[vi, ui]
    truth = spec.flat_index(pts[:, 0], pts[:, 1])
    # How far on the floor rounding to the pixel centre (<= 0.71 px) can move the point.
    slack = np.linalg.norm(np.linalg.inv(jac), ord=2, axis=(1, 2)) * 0.5 * math.sqrt(2.0)
    rng = camera_range(pts[:, 0], pts[:, 1], mount)
    sure = (slack < 0.4 * spec.resolution) & (rng < spec.max_range - 2 * slack)
    assert sure.sum() > 30
    np.testing.assert_array_equal(got[sure], truth[sure])
    # Elsewhere the pixel's cell is still next to the point: within the rounding slack.
    x0, y0 = spec.origin
    edge = np.minimum.reduce([pts[:, 0] - x0, x0 + spec.width - pts[:, 0],
                              pts[:, 1] - y0, y0 + spec.height - pts[:, 1]])
    mapped = (rng < spec.max_range - 1.5 * slack) & (edge > 1.5 * slack)
    assert np.all(got[mapped] >= 0)
    xs, ys = spec.cell_centers()
    cx, cy = xs.ravel()[got[mapped]], ys.ravel()[got[mapped]]
    dist = np.hypot(cx - pts[mapped, 0], cy - pts[mapped, 1])
    assert np.all(dist <= 1.2 * slack[mapped] + 0.71 * spec.resolution)


def test_transform_gives_the_same_table_as_the_mount(projectors):
    intr, mount = CONFIGS['distorted']
    from_tf = GroundProjector(intr, mount.transform_base_from_optical())
    np.testing.assert_array_equal(from_tf.lut, projectors['distorted'].lut)


def test_bad_poses_are_rejected():
    with pytest.raises(ValueError):
        GroundProjector(PLAIN, np.eye(3))
    bad = np.eye(4)
    bad[:3, :3] *= 2.0
    bad[2, 3] = 0.2
    with pytest.raises(ValueError):
        GroundProjector(PLAIN, bad)
    with pytest.raises(ValueError):
        GroundProjector(PLAIN, CameraMount(z=-0.1))


# -- horizon and range --------------------------------------------------------------------


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_pixels_at_or_above_the_horizon_never_map(projectors, name):
    intr, mount = CONFIGS[name]
    rays = pixel_rays_in_base(intr, mount)
    lut = projectors[name].lut
    assert np.all(lut[rays[..., 2] >= 0.0] == -1)
    assert np.any(lut >= 0)


@pytest.mark.parametrize('name', ['looking_up_a_bit', 'roll_yaw_offset_pp'])
def test_rays_above_the_horizon_do_not_land_behind_the_camera(name):
    # A grid all around the robot: a rising ray continued backwards would hit it.
    intr, mount = CONFIGS[name]
    spec = GridSpec(width=8.0, height=8.0, origin=(-4.0, -4.0), max_range=3.5)
    proj = GroundProjector(intr, mount, spec)
    rays = pixel_rays_in_base(intr, mount)
    assert np.all(proj.lut[rays[..., 2] >= 0.0] == -1)
    xs, ys = spec.cell_centers()
    forward = np.cos(mount.yaw) * (xs - mount.x) + np.sin(mount.yaw) * (ys - mount.y)
    assert np.all(forward.ravel()[proj.lut[proj.lut >= 0]] > 0.0)
    grid = proj.ground(np.ones(proj.mask_shape, np.uint8)).grid
    assert np.count_nonzero(grid == 0) > 100 and np.all(forward[grid == 0] > 0.0)


def test_level_camera_maps_only_the_lower_half():
    proj = GroundProjector(PLAIN, CameraMount(z=0.3, pitch=0.0))
    top = int(math.floor(PLAIN.cy))
    assert np.all(proj.lut[:top + 1] == -1)
    assert np.any(proj.lut[top + 1:] >= 0)


def test_camera_looking_up_sees_no_floor():
    narrow = CameraIntrinsics.from_fov(64, 48, math.radians(40.0))
    proj = GroundProjector(narrow, CameraMount(z=0.3, pitch=-0.6))
    assert np.all(proj.lut == -1)
    grid = proj.ground(np.ones((48, 64), np.uint8)).grid
    assert np.all(grid == -1)
    assert proj.ground(np.zeros((48, 64), np.uint8)).points.shape == (0, 3)
    # The default rule too, with and without a confidence image (its empty band once
    # crashed the node: OpenCV returns None for an empty array).
    for confidence in (np.full((48, 64), 250, np.uint8), None):
        for mask in (np.ones((48, 64), np.uint8), np.zeros((48, 64), np.uint8)):
            ground = proj.ground(mask, confidence, GridRule())
            assert np.all(ground.grid == -1) and ground.points.shape == (0, 3)
    assert proj.nearest_floor == math.inf


@pytest.mark.parametrize('z, pitch', [(0.25, 0.3), (0.57, 0.2), (1.0, 0.5), (0.35, 0.0)])
def test_nearest_floor_is_where_the_bottom_row_meets_the_floor(z, pitch):
    # A pinhole camera without roll: image rows map to floor lines of constant x, and the
    # bottom row's centre (v = H - 0.5) is the nearest floor point, straight ahead.
    mount = CameraMount(x=0.1, z=z, pitch=pitch)
    proj = GroundProjector(PLAIN, mount)
    below = pitch + math.atan((PLAIN.height - 0.5 - PLAIN.cy) / PLAIN.fy)
    expected = 0.1 + z / math.tan(below)
    x, y = proj.pixel_to_ground(np.arange(PLAIN.width) + 0.5, np.full(PLAIN.width, 479.5))
    assert np.nanmin(np.hypot(x, y)) == pytest.approx(expected, abs=1e-3)
    assert proj.nearest_floor == pytest.approx(expected, abs=2e-3)


@pytest.mark.parametrize('max_range', [1.0, 2.2, 3.0])
def test_max_range_is_respected(max_range):
    intr, mount = CONFIGS['roll_yaw_offset_pp']
    spec = GridSpec(resolution=0.05, width=5.0, height=6.0, origin=(-0.5, -3.0),
                    max_range=max_range)
    proj = GroundProjector(intr, mount, spec)
    v, u = np.nonzero(proj.lut >= 0)
    gx, gy = proj.pixel_to_ground(u, v)
    assert np.all(camera_range(gx, gy, mount) <= max_range + 1e-9)
    # Every pixel whose floor point is well inside the range and the grid is mapped.
    vv, uu = np.mgrid[0:intr.height, 0:intr.width]
    gx, gy = proj.pixel_to_ground(uu, vv)
    with np.errstate(invalid='ignore'):
        near = camera_range(gx, gy, mount) < max_range - 1e-6
    inside = spec.flat_index(gx, gy) >= 0
    assert np.all(proj.lut[near & inside] >= 0)
    # With everything free, no cell lies beyond the range.
    grid = proj.ground(np.ones((intr.height, intr.width), np.uint8)).grid
    xs, ys = spec.cell_centers()
    far = camera_range(xs, ys, mount) > max_range + spec.resolution * 0.75
    assert np.all(grid[far] == -1)
    assert np.count_nonzero(grid == 0) > 50


# -- grid spec ---------------------------------------------------------------------------


def test_grid_spec_layout_follows_occupancy_grid():
    spec = GridSpec()
    assert spec.shape == (80, 80) and spec.size == 6400
    # Cell (row 0, col 0) has its corner at the origin; rows along +y, columns along +x.
    assert spec.flat_index(0.01, -1.99) == 0
    assert spec.flat_index(0.06, -1.99) == 1
    assert spec.flat_index(0.01, -1.94) == 80
    assert spec.flat_index(1.0 + 0.025, 0.5 + 0.025) == 20 + 50 * 80
    assert spec.flat_index(-0.01, 0.0) == -1
    assert spec.flat_index(4.01, 0.0) == -1
    assert spec.flat_index(1.0, 2.01) == -1
    xs, ys = spec.cell_centers()
    assert xs[0, 1] == pytest.approx(0.075) and ys[1, 0] == pytest.approx(-1.925)


@pytest.mark.parametrize('kwargs', [
    {'resolution': 0.0}, {'resolution': -0.05}, {'resolution': float('nan')},
    {'width': 0.0}, {'height': -1.0}, {'width': 0.01}, {'max_range': 0.0},
    {'max_range': float('inf')}, {'origin': (0.0,)}, {'origin': 'xy'},
])
def test_grid_spec_rejects_bad_values(kwargs):
    with pytest.raises(ValueError):
        GridSpec(**kwargs)


# -- CameraInfo: binning and ROI ----------------------------------------------------------


K = [600.0, 0.0, 641.3, 0.0, 598.0, 355.7, 0.0, 0.0, 1.0]
D = [-0.11, 0.025, 0.0007, -0.0004, -0.003]


def test_camera_info_without_roi_or_binning_is_k():
    intr = intrinsics_from_camera_info(K, D, 1280, 720)
    assert intr == CameraIntrinsics.from_k(1280, 720, K, D)
    assert intrinsics_from_camera_info(K, D, 1280, 720, 1, 1, (0, 0, 0, 0)) == intr
    assert intrinsics_from_camera_info(K, [0.0] * 5, 1280, 720).has_distortion is False


def test_binning_matches_scaled_intrinsics():
    full = CameraIntrinsics.from_k(1280, 720, K, D)
    binned = intrinsics_from_camera_info(K, D, 1280, 720, binning_x=2, binning_y=4)
    expected = full.scaled(640, 180)
    assert (binned.width, binned.height) == (640, 180)
    for field in ('fx', 'fy', 'cx', 'cy'):
        assert getattr(binned, field) == pytest.approx(getattr(expected, field))
    assert binned.distortion == tuple(D)


@pytest.mark.parametrize('binning,roi', [
    ((1, 1), (100, 60, 800, 500)),
    ((2, 2), None),
    ((2, 2), (321, 17, 640, 480)),
    ((3, 2), (10, 20, 901, 600)),
])
def test_binning_and_roi_see_the_same_points(binning, roi):
    full = CameraIntrinsics.from_k(1280, 720, K, D)
    got = intrinsics_from_camera_info(K, D, 1280, 720, binning[0], binning[1], roi)
    x_off, y_off, w, h = roi if roi else (0, 0, 1280, 720)
    assert (got.width, got.height) == (w // binning[0], h // binning[1])
    rng = np.random.default_rng(3)
    pts = np.stack([rng.uniform(-0.6, 0.6, 200), rng.uniform(-0.4, 0.4, 200),
                    np.ones(200)], axis=1) * rng.uniform(0.5, 4.0, (200, 1))
    uv_full = full.project(pts)
    uv = got.project(pts)
    # A delivered pixel j covers full-resolution pixels [off + b*j, off + b*(j+1)).
    expect_u = (uv_full[:, 0] - x_off + 0.5) / binning[0] - 0.5
    expect_v = (uv_full[:, 1] - y_off + 0.5) / binning[1] - 0.5
    np.testing.assert_allclose(uv[:, 0], expect_u, atol=1e-6)
    np.testing.assert_allclose(uv[:, 1], expect_v, atol=1e-6)


def test_rectified_camera_info_drops_distortion_and_crops_inside():
    p = [560.0, 0.0, 640.0, 0.0, 0.0, 560.0, 360.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    raw = CameraIntrinsics.from_k(1280, 720, K, D)
    rect = intrinsics_from_camera_info(K, D, 1280, 720, do_rectify=True, p=p)
    assert not rect.has_distortion
    assert (rect.fx, rect.fy, rect.cx, rect.cy) == (560.0, 560.0, 640.0, 360.0)
    roi = (200, 100, 700, 500)
    cropped = intrinsics_from_camera_info(K, D, 1280, 720, 2, 2, roi, do_rectify=True, p=p)
    # Corners of the rectified crop, taken back into the raw image, lie inside the raw ROI.
    corners = np.array([[-0.5, -0.5], [cropped.width - 0.5, -0.5],
                        [-0.5, cropped.height - 0.5],
                        [cropped.width - 0.5, cropped.height - 0.5]])
    xn, yn = cropped.normalized_rays(corners[:, 0], corners[:, 1])
    uv = raw.project(np.stack([xn, yn, np.ones(4)], axis=1))
    assert np.all(uv[:, 0] >= roi[0] - 0.5 - 1e-6)
    assert np.all(uv[:, 0] <= roi[0] + roi[2] - 0.5 + 2.0)
    assert np.all(uv[:, 1] >= roi[1] - 0.5 - 1e-6)
    assert np.all(uv[:, 1] <= roi[1] + roi[3] - 0.5 + 2.0)
    assert cropped.width > 250 and cropped.height > 180


@pytest.mark.parametrize('kwargs', [
    {'roi': (1000, 0, 400, 100)}, {'roi': (-1, 0, 10, 10)}, {'roi': (5, 5, 0, 0)},
    {'binning_x': -1}, {'k': [1.0, 2.0]}, {'d': [0.1, 0.2, 0.3]},
])
def test_bad_camera_info_is_rejected(kwargs):
    args = {'k': K, 'd': D, 'width': 1280, 'height': 720}
    args.update(kwargs)
    with pytest.raises(ValueError):
        intrinsics_from_camera_info(**args)


# -- projection semantics: analytic boxes ------------------------------------------------


def box_mask(intr, mount, boxes):
    """Exact free-floor mask for axis-aligned boxes (x0, x1, y0, y1, height) on the floor."""
    rays = pixel_rays_in_base(intr, mount).reshape(-1, 3)
    pos = mount.position
    with np.errstate(divide='ignore', invalid='ignore'):
        t_floor = np.where(rays[:, 2] < 0, -pos[2] / rays[:, 2], np.inf)
        t_box = np.full(rays.shape[0], np.inf)
        for x0, x1, y0, y1, top in boxes:
            lo = np.array([x0, y0, 0.0])
            hi = np.array([x1, y1, top])
            t1 = (lo - pos) / rays
            t2 = (hi - pos) / rays
            near = np.nanmax(np.minimum(t1, t2), axis=1)
            far = np.nanmin(np.maximum(t1, t2), axis=1)
            hit = (far >= near) & (far > 0)
            t_box = np.where(hit, np.minimum(t_box, np.maximum(near, 0.0)), t_box)
    free = np.isfinite(t_floor) & (t_floor < t_box)
    return free.reshape(intr.height, intr.width).astype(np.uint8)


LOW_BOX = (1.025, 1.325, -0.275, 0.225, 0.08)
SCENE_MOUNT = CameraMount(z=0.25, pitch=0.35)


@pytest.fixture(scope='module')
def box_scene():
    proj = GroundProjector(PLAIN, SCENE_MOUNT)
    mask = box_mask(PLAIN, SCENE_MOUNT, [LOW_BOX])
    return proj, mask, proj.ground(mask).grid


def test_obstacle_foot_is_occupied(box_scene):
    proj, mask, grid = box_scene
    spec = proj.grid_spec
    x0, x1, y0, y1, _ = LOW_BOX
    # The front edge of the box (x = 1.025, the centre of column 20) is occupied along its
    # whole width.
    rows = np.arange(spec.flat_index(0.0, y0) // spec.nx, spec.flat_index(0.0, y1) // spec.nx + 1)
    assert np.all(grid[rows, 20] == 100)
    # Nothing else is. With a pitched camera the image columns are not vertical planes: those
    # that graze a vertical edge of the box meet it above the floor, and that "foot" would
    # land a cell or two behind the box; it is hidden behind a nearer foot and dropped.
    xs, ys = spec.cell_centers()
    dx = np.maximum(np.maximum(x0 - xs, xs - x1), 0.0)
    dy = np.maximum(np.maximum(y0 - ys, ys - y1), 0.0)
    assert np.all(np.hypot(dx, dy)[grid == 100] <= spec.resolution)
    off_edge = np.count_nonzero(grid == 100) - np.count_nonzero(grid[rows, 20] == 100)
    assert off_edge <= 1
    # The floor between robot and box is free.
    front = (xs > 0.6) & (xs < 0.95) & (np.abs(ys + 0.025) < 0.2)
    assert np.all(grid[front] == 0)


def test_cells_behind_an_obstacle_stay_unknown(box_scene):
    proj, mask, grid = box_scene
    spec = proj.grid_spec
    x0, x1, y0, y1, _ = LOW_BOX
    xs, ys = spec.cell_centers()
    bearing = np.arctan2(ys - SCENE_MOUNT.y, xs - SCENE_MOUNT.x)
    lo = math.atan2(y0, x0) + 0.06
    hi = math.atan2(y1, x0) - 0.06
    shadow = (bearing > lo) & (bearing < hi) & (xs > x1 + 0.1) & \
        (camera_range(xs, ys, SCENE_MOUNT) < spec.max_range - 0.1)
    assert shadow.sum() > 40
    # The box is low: the camera sees floor over it, and those pixels do land in the shadow,
    # so ignoring the occlusion rule would mark these cells free.
    lut = proj.lut
    seen_over = np.unique(lut[(mask != 0) & (lut >= 0)])
    assert np.isin(np.flatnonzero(shadow), seen_over).sum() > 20
    assert np.all(grid[shadow] == -1)


def test_occupied_wins_over_free_in_one_cell(box_scene):
    proj, mask, grid = box_scene
    lut = proj.lut
    free_cells = set()
    for c in range(mask.shape[1]):
        blocked = np.flatnonzero(mask[:, c] == 0)
        lowest = blocked.max() if blocked.size else -1
        below = lut[lowest + 1:, c]
        free_cells.update(below[below >= 0].tolist())
    both = [cell for cell in np.flatnonzero(grid.ravel() == 100) if cell in free_cells]
    assert len(both) > 5
    assert np.all(grid.ravel()[both] == 100)


def test_far_floor_has_no_holes_and_stops_at_the_obstacle():
    # 640x360, 69 degrees: at 3 m one pixel row spans ~8 cm of floor, more than a cell.
    intr = CameraIntrinsics.from_fov(640, 360, math.radians(69.0))
    mount = CameraMount(z=0.25, pitch=0.3)
    proj = GroundProjector(intr, mount)
    spec = proj.grid_spec
    xs, ys = spec.cell_centers()
    grid = proj.ground(np.ones((360, 640), np.uint8)).grid
    opt = to_optical(np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1), mount)
    uv = intr.project(opt)
    inside = (opt[:, 2] > 0) & (uv[:, 0] > 2) & (uv[:, 0] < 637) & (uv[:, 1] > 2) & \
        (uv[:, 1] < 357)
    seen = inside.reshape(xs.shape) & (camera_range(xs, ys, mount) < spec.max_range - 0.1)
    far = seen & (xs > 2.0)
    assert far.sum() > 300
    assert np.all(grid[seen] == 0)
    # A far box, at several distances: free space ends at its front face, never inside it.
    for x0 in np.linspace(2.2, 2.6, 9):
        box = (x0, x0 + 0.4, -0.4, 0.3, 0.3)
        grid = proj.ground(box_mask(intr, mount, [box])).grid
        # Cells mostly inside the box (centre at least a fifth of a cell inside).
        inside_box = (xs > box[0] + 0.01) & (xs < box[1]) & (ys > box[2]) & (ys < box[3])
        assert np.all(grid[inside_box] != 0)
        assert np.count_nonzero(grid[inside_box & (xs < box[0] + 0.12)] == 100) >= 10
        before = (xs > 2.0) & (xs < box[0] - 0.05) & (ys > box[2]) & (ys < box[3])
        assert np.all(grid[before] == 0)


def reference_project(proj, mask):
    """Slow, obvious version of the plain rule's GroundProjector.ground grid, same table."""
    rows, cols, cells = proj.samples
    lowest = np.full(mask.shape[1], -1)
    for c in range(mask.shape[1]):
        blocked = np.flatnonzero(mask[:, c] == 0)
        if blocked.size:
            lowest[c] = blocked.max()
    out = np.full(proj.grid_spec.size, -1, dtype=np.int8)
    out[cells[rows > lowest[cols]]] = 0
    # Feet: only lowest non-floor pixels of their columns, and all of them when they are
    # mapped unless another column's foot hides them (checked in test_hidden_feet_...).
    ground = proj.ground(mask)
    foot_rows, foot_cols = ground.rows, ground.cols
    np.testing.assert_array_equal(foot_rows, lowest[foot_cols])
    out[proj.lut[foot_rows, foot_cols]] = 100
    return out.reshape(proj.grid_spec.shape), lowest


@pytest.mark.parametrize('dtype', [np.uint8, np.bool_, np.int64])
def test_project_matches_a_plain_reference(projectors, dtype):
    # 'distorted_high_steep' maps more than 255 image rows: this crosses the chunked scan.
    for name in ('distorted_high_steep', 'roll_yaw_offset_pp'):
        proj = projectors[name]
        if name == 'distorted_high_steep':
            first_mapped_row = np.flatnonzero((proj.lut >= 0).any(axis=1))[0]
            assert proj.mask_shape[0] - first_mapped_row > 255
        rng = np.random.default_rng(11)
        for _ in range(3):
            mask = np.ones(proj.mask_shape, np.uint8)
            for _ in range(12):
                r, c = rng.integers(0, proj.mask_shape[0]), rng.integers(0, proj.mask_shape[1])
                mask[r:r + rng.integers(1, 80), c:c + rng.integers(1, 120)] = 0
            mask[rng.random(mask.shape) < 0.0005] = 0
            value = mask.astype(dtype) * (255 if dtype is np.uint8 else 1)
            expected, _ = reference_project(proj, mask)
            ground = proj.ground(value)
            np.testing.assert_array_equal(ground.grid, expected)
            np.testing.assert_array_equal(ground.points, proj.ground(mask).points)


def test_obstacle_points_are_the_occupied_feet(box_scene):
    proj, mask, grid = box_scene
    points = proj.ground(mask).points
    assert points.dtype == np.float32 and points.ndim == 2 and points.shape[1] == 3
    assert np.all(points[:, 2] == 0.0)
    cells = proj.grid_spec.flat_index(points[:, 0], points[:, 1])
    # One point per occupied cell, each inside its cell.
    np.testing.assert_array_equal(np.sort(cells), np.flatnonzero(grid.ravel() == 100))
    x0, x1, y0, y1, _ = LOW_BOX
    dx = np.maximum(np.maximum(x0 - points[:, 0], points[:, 0] - x1), 0.0)
    dy = np.maximum(np.maximum(y0 - points[:, 1], points[:, 1] - y1), 0.0)
    assert np.all(np.hypot(dx, dy) < 0.06)
    # On the front face the feet are on its floor line, a pixel's footprint (~1.4 cm) behind
    # at most: the lowest box pixel's centre is up to one pixel above the floor line.
    front = cells % proj.grid_spec.nx == 20
    assert front.sum() >= 10
    assert np.all((points[front, 0] > x0 - 0.002) & (points[front, 0] < x0 + 0.02))


def test_mask_errors():
    proj = GroundProjector(CameraIntrinsics.from_fov(64, 48, 1.5), CameraMount())
    with pytest.raises(ValueError):
        proj.ground(np.ones((48, 64, 3), np.uint8)).grid


# -- resolution changes and caching -------------------------------------------------------


def test_low_resolution_mask_uses_scaled_intrinsics():
    cam = CameraIntrinsics(1280, 720, 640.0, 641.0, 652.3, 350.2, (-0.05, 0.01, 0.0, 0.0, 0.0))
    mount = CameraMount(x=0.1, z=0.22, pitch=0.3, yaw=0.05)
    proj = GroundProjector(cam, mount, mask_shape=(272, 480))
    assert proj.mask_intrinsics == cam.scaled(480, 272)
    assert proj.lut.shape == (272, 480)
    spec = proj.grid_spec
    pts, uv, _ = visible_cell_centres(cam, mount, spec)
    # A plain resize maps full-resolution pixel u to (u + 0.5) * 480 / 1280 - 0.5.
    um = (uv[:, 0] + 0.5) * 480 / 1280 - 0.5
    vm = (uv[:, 1] + 0.5) * 272 / 720 - 0.5
    gx, gy = proj.pixel_to_ground(um, vm)
    assert np.hypot(gx - pts[:, 0], gy - pts[:, 1]).max() < 0.02 * spec.resolution


def test_lut_is_rebuilt_only_when_inputs_change():
    cam = CameraIntrinsics.from_fov(160, 120, 1.4)
    mount = CameraMount(z=0.2, pitch=0.3)
    proj = GroundProjector(cam, mount)
    assert proj.rebuild_count == 1
    mask = np.ones((120, 160), np.uint8)
    for _ in range(5):
        assert proj.ground(mask).points.shape[1] == 3
    assert proj.rebuild_count == 1
    assert proj.update(intrinsics=CameraIntrinsics.from_fov(160, 120, 1.4),
                       mount=CameraMount(z=0.2, pitch=0.3), grid_spec=GridSpec(),
                       mask_shape=(120, 160)) is False
    assert proj.update(mount=mount.transform_base_from_optical()) is False
    assert proj.rebuild_count == 1
    before = proj.lut.copy()
    assert proj.update(mount=CameraMount(z=0.2, pitch=0.35)) is True
    assert proj.rebuild_count == 2
    assert not np.array_equal(before, proj.lut)
    proj.ground(np.ones((60, 80), np.uint8)).grid
    assert proj.rebuild_count == 3 and proj.mask_shape == (60, 80)
    proj.ground(np.ones((60, 80), bool)).grid
    assert proj.rebuild_count == 3
    proj.update(grid_spec=GridSpec(resolution=0.1))
    assert proj.rebuild_count == 4 and proj.ground(np.ones((60, 80))).grid.shape == (40, 40)
    proj.update(intrinsics=CameraIntrinsics.from_fov(160, 120, 1.2))
    assert proj.rebuild_count == 5 and proj.mask_shape == (60, 80)
    # Without a mask shape, masks follow the camera resolution.
    other = GroundProjector(cam, mount)
    other.update(intrinsics=CameraIntrinsics.from_fov(320, 240, 1.4))
    assert other.rebuild_count == 2 and other.mask_shape == (240, 320)
    other.ground(np.ones((240, 320), np.uint8)).grid
    assert other.rebuild_count == 2


# -- rendering and metrics ----------------------------------------------------------------


def test_render_grid_orientation_and_colours():
    spec = GridSpec()
    grid = np.full(spec.shape, -1, np.int8)
    grid[spec.cell_of(1.0 + 0.025, -1.0 + 0.025)] = 0     # ahead and to the right
    grid[spec.cell_of(2.0 + 0.025, 1.0 + 0.025)] = 100    # further ahead and to the left
    image = render_grid(grid, scale=3)
    assert image.shape == (3 * spec.nx, 3 * spec.ny, 3) and image.dtype == np.uint8

    def pixel(x, y):
        # x forward is up, y left is left: image row from x, image column from y.
        row = int((spec.nx - (x - spec.origin[0]) / spec.resolution) * 3)
        col = int((spec.ny - (y - spec.origin[1]) / spec.resolution) * 3)
        return tuple(image[row, col])

    free, occupied, unknown = pixel(1.025, -0.975), pixel(2.025, 1.025), pixel(3.0, 0.0)
    assert len({free, occupied, unknown}) == 3
    assert pixel(1.025 + 0.05, -0.975) == unknown and pixel(1.025, -0.975 + 0.05) == unknown
    # Occupied cell is up (forward) and left of the free one in the image.
    rows, cols = np.nonzero(np.all(image == occupied, axis=2))
    frows, fcols = np.nonzero(np.all(image == free, axis=2))
    assert rows.mean() < frows.mean() and cols.mean() < fcols.mean()
    # The footprint circle is drawn around the base origin (bottom middle of this grid).
    ring = np.any(image != unknown, axis=2)
    ring[rows, cols] = False
    ring[frows, fcols] = False
    rr, cc = np.nonzero(ring)
    assert rr.size > 20
    centre_row, centre_col = 3 * spec.nx, 3 * spec.ny / 2
    radius = np.hypot(rr - centre_row + 0.5, cc - centre_col + 0.5)
    assert np.all(radius < 0.17 / 0.05 * 3 + 3)


def test_false_free_counts_free_cells_away_from_visible_floor():
    exact = np.full((6, 6), -1)
    exact[2:4, 2:4] = 0                      # the floor the true mask shows
    pred = np.full((6, 6), -1)
    pred[1:5, 1:5] = 0                       # one cell around it: within the tolerance
    assert false_free(pred, exact) == (0, 16)
    pred[0, 0] = 0                           # two cells away: free where no floor is seen
    pred[5, 2] = 100
    assert false_free(pred, exact) == (1, 17)
    assert false_free(exact, exact) == (0, 4)
    assert false_free(pred, exact, tolerance_cells=2) == (0, 17)
    with pytest.raises(ValueError, match='shapes differ'):
        false_free(pred, exact[:5])


def test_the_true_mask_has_no_false_free_cells_under_any_rule():
    from freespace_seg.tools.grid_rules import DEFAULT_RULES, measure, parse_rule

    def truth(frame):
        free = frame.free > 0
        return np.where(free, 255, 0).astype(np.uint8), np.where(free, 255, 0).astype(np.uint8)

    rules = {n: parse_rule(n) for n in DEFAULT_RULES.split(',')}
    result = measure(truth, rules, ['held-out', 'style-shifted'], 3, 5, 160, 90,
                     log=lambda m: None)
    for name, rows in result.items():
        for rule, r in rows.items():
            assert r['false_free'] == 0.0 and r['free_iou'] > 0.5, (name, rule, r)


def test_grid_iou():
    pred = np.array([[0, 0, -1], [100, 0, -1]], np.int8)
    truth = np.array([[1, 0, 0], [0, 1, 1]], bool)
    assert grid_iou(pred, truth) == pytest.approx(2 / 4)
    valid = np.array([[1, 1, 1], [1, 1, 0]], bool)
    assert grid_iou(pred, truth, valid) == pytest.approx(2 / 3)
    assert grid_iou(np.full((2, 2), -1), np.zeros((2, 2), bool)) == 1.0
    with pytest.raises(ValueError):
        grid_iou(pred, truth[:, :2])


# -- against exact truth from the synthetic renderer --------------------------------------


def _base_to_world(pose, bx, by):
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    return x + c * bx - s * by, y + s * bx + c * by


def visible_free_truth(scene, intr, mount, pose, spec, sub=6):
    """
    Classify grid cells against the scene's exact geometry: (truth_free, valid).

    "Truly visible free floor" is floor that is free (Scene.blocked_top_down is False), in
    the camera's field of view, within max_range of the camera (on the floor, from the point
    below the optical centre) and not hidden: the straight line on the floor from the camera
    to it crosses no obstacle footprint or wall. That is visibility with obstacles treated as
    infinitely tall, the projector's rule: floor seen over a low obstacle stays unknown.
    Obstacles raised off the floor (table tops, chair seats) are all above these cameras and
    hide nothing.

    Each cell is sampled at sub x sub points including its edges. A cell is truly free when
    all its points surely are visible free floor, truly not free when none possibly is, and
    otherwise ambiguous (partly free, partly seen, on a shadow or FOV edge, within a bearing
    bin or a pixel of it); ``valid`` excludes the ambiguous cells. Also returns the fraction
    of each cell's points that surely are visible free floor.
    """
    offs = np.linspace(1e-6, 1.0 - 1e-6, sub) * spec.resolution
    bx = spec.origin[0] + (np.arange(spec.nx)[:, None] * spec.resolution + offs).ravel()
    by = spec.origin[1] + (np.arange(spec.ny)[:, None] * spec.resolution + offs).ravel()
    bx, by = np.meshgrid(bx, by)
    free = ~scene.blocked_top_down(*_base_to_world(pose, bx, by))
    dist = np.hypot(bx - mount.x, by - mount.y)
    # Field of view: where the floor point projects into the image (half a pixel of doubt).
    opt = to_optical(np.stack([bx.ravel(), by.ravel(), np.zeros(bx.size)], axis=1), mount)
    front = opt[:, 2] > 1e-3
    uv = intr.project(np.where(front[:, None], opt, 1.0))
    margin = np.minimum.reduce([uv[:, 0] + 0.5, intr.width - 0.5 - uv[:, 0],
                                uv[:, 1] + 0.5, intr.height - 0.5 - uv[:, 1]])
    margin = np.where(front, margin, -np.inf).reshape(bx.shape)
    # Occlusion: march along bearings from the camera to the first blocked floor point.
    n_bins = 6000
    bearing = np.arctan2(by - mount.y, bx - mount.x)
    bins = np.rint((bearing + math.pi) / (2 * math.pi) * n_bins).astype(int) % n_bins
    used = np.unique(bins[(margin > -1.0) & (dist <= spec.max_range + 0.05)])
    used = np.unique(np.concatenate([used - 1, used, used + 1]) % n_bins)
    angles = used * (2 * math.pi / n_bins) - math.pi
    steps = np.arange(0.005, spec.max_range + 0.1, 0.005)
    rx = mount.x + np.cos(angles)[:, None] * steps
    ry = mount.y + np.sin(angles)[:, None] * steps
    blocked = scene.blocked_top_down(*_base_to_world(pose, rx, ry))
    first = np.full(n_bins, np.inf)
    first[used] = np.where(blocked.any(axis=1), steps[np.argmax(blocked, axis=1)], np.inf)
    near = np.stack([first[(bins + k) % n_bins] for k in (-1, 0, 1)])
    sure = free & (margin > 0.5) & (dist < spec.max_range - 1e-3) & \
        (dist < near.min(axis=0) - 0.01)
    maybe = free & (margin > -0.5) & (dist <= spec.max_range + 1e-3) & \
        (dist < near.max(axis=0) + 0.01)
    fraction = sure.reshape(spec.ny, sub, spec.nx, sub).mean(axis=(1, 3))
    maybe = maybe.reshape(spec.ny, sub, spec.nx, sub).any(axis=(1, 3))
    return fraction == 1.0, (fraction == 1.0) | ~maybe, fraction


SYNTHETIC_CAMERAS = {
    'default': None,
    'low_steep_rolled': (CameraIntrinsics.from_fov(480, 270, math.radians(80.0)),
                         CameraMount(x=0.08, y=0.02, z=0.18, roll=0.03, pitch=0.45, yaw=-0.06)),
}


@pytest.mark.parametrize('camera', sorted(SYNTHETIC_CAMERAS))
def test_free_space_matches_exact_truth_on_synthetic_rooms(camera):
    synthetic = pytest.importorskip('freespace_seg.sim')
    if SYNTHETIC_CAMERAS[camera] is None:
        intr, mount = synthetic.default_intrinsics(), synthetic.default_mount()
    else:
        intr, mount = SYNTHETIC_CAMERAS[camera]
    spec = GridSpec()
    proj = GroundProjector(intr, mount, spec)
    xs, ys = spec.cell_centers()
    majority = []
    for seed in range(1000, 1012):
        rng = np.random.default_rng(seed)
        scene = synthetic.make_scene(rng)
        pose = scene.sample_free_pose(rng, clearance=0.3)
        truth, valid, fraction = visible_free_truth(scene, intr, mount, pose, spec)
        if truth.sum() < 300:
            continue  # looking at a wall from close by: too little floor to score
        frame = synthetic.render(scene, intr, mount, robot_pose=pose)
        grid = proj.ground(frame.free).grid
        assert grid_iou(grid, truth, valid) >= 0.95
        # Nowhere free where no part of the cell is visible free floor.
        assert np.count_nonzero((grid == 0) & valid & ~truth) <= 0.005 * truth.sum()
        # Ambiguous cells are the rim of the seen floor, not most of it.
        assert np.count_nonzero(~valid) < 0.4 * np.count_nonzero(~valid | truth)
        # Occupied cells are where obstacles or walls meet the floor.
        wx, wy = _base_to_world(pose, xs[grid == 100], ys[grid == 100])
        assert np.all(scene.clearance(wx, wy) <= 1.5 * spec.resolution)
        # Rim cells included, scored as free when most of the cell is visible free floor:
        # lower (occupied wins in the cell where an obstacle starts, the conservative top of
        # each column's floor run), but no gross errors.
        majority.append(grid_iou(grid, fraction >= 0.5))
        if len(majority) == 3:
            break
    assert len(majority) == 3
    assert np.mean(majority) >= 0.85


def test_hand_built_scene_obstacles_and_shadows():
    synthetic = pytest.importorskip('freespace_seg.sim')
    box = synthetic.Box(1.6, 0.3, 0.4, 0.6, 0.5)
    low = synthetic.Box(1.2, -0.7, 0.3, 0.3, 0.06)
    pole = synthetic.Cylinder(2.2, -0.1, 0.12, 1.0)
    scene = synthetic.Scene.empty(size=(10.0, 10.0), obstacles=[box, low, pole])
    intr, mount = synthetic.default_intrinsics(), synthetic.default_mount()
    pose = (0.0, 0.0, 0.0)
    frame = synthetic.render(scene, intr, mount, robot_pose=pose)
    proj = GroundProjector(intr, mount)
    grid = proj.ground(frame.free).grid
    spec = proj.grid_spec
    xs, ys = spec.cell_centers()
    occupied = grid == 100
    clearance = scene.clearance(xs, ys)
    assert np.all(clearance[occupied] <= 1.5 * spec.resolution)
    # Each obstacle's near face is marked.
    for obj in (box, low, pole):
        assert np.count_nonzero(occupied & (obj.distance_xy(xs, ys) <= 0.06)) >= 3
    # Behind the low box the camera sees floor, yet its shadow stays unknown.
    bearing = np.arctan2(ys - mount.y, xs - mount.x)
    shadow = (np.abs(bearing - math.atan2(-0.7, 1.2)) < 0.05) & (xs > 1.5) & \
        (np.hypot(xs, ys) < 2.8)
    assert shadow.sum() >= 10
    assert np.all(grid[shadow] == -1)
    truth, valid, _ = visible_free_truth(scene, intr, mount, pose, spec)
    assert grid_iou(grid, truth, valid) >= 0.95


def test_camera_info_message_fields_are_used():
    class Roi:
        x_offset, y_offset, width, height, do_rectify = 100, 40, 800, 600, True

    class Info:
        k, d, width, height = K, D, 1280, 720
        binning_x, binning_y, roi, distortion_model = 2, 2, Roi(), 'plumb_bob'
        p = [560.0, 0.0, 640.0, 0.0, 0.0, 560.0, 360.0, 0.0, 0.0, 0.0, 1.0, 0.0]

    raw = intrinsics_from_camera_info_msg(Info())
    assert raw == intrinsics_from_camera_info(K, D, 1280, 720, 2, 2, (100, 40, 800, 600))
    assert raw.has_distortion
    rect = intrinsics_from_camera_info_msg(Info(), rectified=True)
    assert not rect.has_distortion and rect.fx == pytest.approx(280.0)
    Info.distortion_model = 'equidistant'
    with pytest.raises(ValueError):
        intrinsics_from_camera_info_msg(Info())
