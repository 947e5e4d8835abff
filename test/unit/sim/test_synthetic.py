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

"""The synthetic renderer: exact labels, determinism, randomization switches, generate."""

import dataclasses
import glob as glob_module
import importlib
import io
import json
import math
import os

import cv2
from freespace_seg.cli import main as cli_main
from freespace_seg.common.progress import Progress, progress
from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
from freespace_seg.sim import (Box, Cylinder, default_intrinsics, default_mount, Frame,
                               jitter_camera, make_scene, random_sample, RandomizationConfig,
                               render, Scene, WallDecal)
from freespace_seg.sim.generate import sample_rng
from freespace_seg.sim.randomization import lens_is_valid
from freespace_seg.sim.scene import (Appearance, DEFAULT_FLOOR, DEFAULT_GLASS, DEFAULT_OBJECT,
                                     DEFAULT_WALL, GLASS_LABEL, glass_partition, Material,
                                     STEP_LABEL, STONE_FLOOR_KINDS, WALL_CLUTTER_LABEL)
import numpy as np
import pytest
from support import REPO
from support.frame_stats import Pins
from support.sim import render_radiance

SMALL = default_intrinsics(160, 90)
# The package exports a function named render: import the modules themselves.
render_module = importlib.import_module('freespace_seg.sim.render')
rays_module = importlib.import_module('freespace_seg.sim.render.rays')
glass_module = importlib.import_module('freespace_seg.sim.render.glass')


def _rng(seed):
    return np.random.default_rng(seed)


def _world_points(frame):
    """Hit points (H, W, 3) in the world from the frame's depth and its camera rays."""
    k = frame.intrinsics
    xn, yn = k.normalized_rays()
    rays = np.stack([xn, yn, np.ones_like(xn)], axis=-1)
    rays /= np.linalg.norm(rays, axis=-1, keepdims=True)
    x, y, yaw = frame.robot_pose
    c, s = math.cos(yaw), math.sin(yaw)
    r_wb = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    r_wo = r_wb @ frame.mount.rotation_base_from_optical()
    origin = r_wb @ frame.mount.position + np.array([x, y, 0.0])
    depth = np.where(np.isfinite(frame.depth), frame.depth, 0.0).astype(np.float64)
    return origin + (rays @ r_wo.T) * depth[..., None]


def _project_world(frame, points):
    """Pixel coordinates (N, 2) and optical depth (N,) of world points (robot at its pose)."""
    x, y, yaw = frame.robot_pose
    c, s = math.cos(yaw), math.sin(yaw)
    r_wb = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    r_wo = r_wb @ frame.mount.rotation_base_from_optical()
    origin = r_wb @ frame.mount.position + np.array([x, y, 0.0])
    p_opt = (np.asarray(points, dtype=np.float64) - origin) @ r_wo
    return frame.intrinsics.project(p_opt), p_opt[:, 2]


def _blocked_with_tolerance(scene, xs, ys, tol=1e-3):
    """Blocked, also a ``tol`` step away in every direction (ignores float rounding)."""
    blocked = np.ones(np.shape(xs), dtype=bool)
    for ox, oy in ((0, 0), (tol, 0), (-tol, 0), (0, tol), (0, -tol)):
        blocked &= scene.blocked_top_down(xs + ox, ys + oy)
    return blocked


# --- camera defaults and the public API ---------------------------------------------------

def test_default_camera_is_oak_d_like_on_a_turtlebot():
    k = default_intrinsics()
    assert (k.width, k.height) == (640, 360)
    hfov = math.degrees(2.0 * math.atan(k.width / (2.0 * k.fx)))
    assert 66.0 < hfov < 72.0
    assert k.fx == pytest.approx(k.fy)
    assert k.cx == pytest.approx((k.width - 1) / 2.0) and k.cy == pytest.approx((k.height - 1) / 2)
    m = default_mount()
    assert isinstance(m, CameraMount)
    assert m.z == pytest.approx(0.25) and m.pitch == pytest.approx(0.3)
    assert default_intrinsics(480, 270).width == 480


def test_frame_shapes_and_dtypes():
    frame = random_sample(_rng(0), SMALL)
    assert isinstance(frame, Frame)
    assert frame.image.shape == (90, 160, 3) and frame.image.dtype == np.uint8
    assert frame.free.shape == (90, 160) and frame.free.dtype == np.uint8
    assert frame.depth.shape == (90, 160) and frame.depth.dtype == np.float32
    assert set(np.unique(frame.free)) <= {0, 1}
    assert isinstance(frame.intrinsics, CameraIntrinsics)
    assert isinstance(frame.mount, CameraMount)
    assert len(frame.robot_pose) == 3
    assert np.all(frame.depth > 0.0)


def test_same_seed_same_sample_other_seed_other_sample():
    a = random_sample(_rng(7), SMALL)
    b = random_sample(_rng(7), SMALL)
    c = random_sample(_rng(8), SMALL)
    np.testing.assert_array_equal(a.image, b.image)
    np.testing.assert_array_equal(a.free, b.free)
    np.testing.assert_array_equal(a.depth, b.depth)
    assert a.robot_pose == b.robot_pose and a.mount == b.mount
    assert not np.array_equal(a.image, c.image)
    s1, s2 = make_scene(_rng(3)), make_scene(_rng(3))
    assert s1.outline == s2.outline and s1.obstacles == s2.obstacles
    assert s1.appearance == s2.appearance and s1.decals == s2.decals
    assert make_scene(_rng(4)).outline != s1.outline


def test_render_without_rng_is_deterministic():
    scene = make_scene(_rng(11))
    pose = scene.sample_free_pose(_rng(1))
    a = render(scene, SMALL, default_mount(), pose)
    b = render(scene, SMALL, default_mount(), pose)
    np.testing.assert_array_equal(a.image, b.image)


# --- the mask agrees with geometry --------------------------------------------------------

def test_camera_looking_straight_down_sees_only_floor():
    scene = Scene.empty((6.0, 6.0))
    mount = CameraMount(z=0.5, pitch=math.pi / 2)
    frame = render(scene, SMALL, mount, robot_pose=(0.3, -0.2, 0.7))
    assert frame.free.all()
    # The ray through the principal point is vertical: its length is the camera height.
    k = SMALL
    assert frame.depth[int(k.cy), int(k.cx)] == pytest.approx(0.5, abs=2e-3)
    assert frame.depth.max() < 0.5 / math.cos(math.radians(45.0))


def test_camera_looking_up_sees_no_floor_in_the_top_rows():
    scene = Scene.empty((6.0, 6.0))
    frame = render(scene, SMALL, CameraMount(z=0.25, pitch=-0.5), robot_pose=(0.0, 0.0, 0.0))
    assert frame.free[:SMALL.height // 3].sum() == 0
    assert frame.free.sum() == 0  # the whole view is above the horizon
    assert np.isfinite(frame.depth).all()  # walls and ceiling close the room


def test_endless_floor_horizon_and_sky():
    scene = Scene.empty(size=None)
    k = SMALL
    frame = render(scene, k, CameraMount(z=0.3, pitch=0.0))
    horizon = k.cy
    rows = np.arange(k.height)
    assert frame.free[rows < horizon - 1].sum() == 0
    assert np.isinf(frame.depth[rows < horizon - 1]).all()
    assert frame.free[rows > horizon + 1].all()


def test_box_in_front_blocks_the_pixels_it_projects_to():
    box = Box(2.0, 0.0, 0.4, 0.6, 0.5)
    scene = Scene.empty((8.0, 8.0), obstacles=[box])
    k = default_intrinsics(320, 180)
    frame = render(scene, k, default_mount(), robot_pose=(0.0, 0.0, 0.0))
    # Points on the box's front face (x = 1.8) project to blocked pixels at that distance.
    ys, zs = np.meshgrid(np.linspace(-0.25, 0.25, 5), np.linspace(0.02, 0.48, 7))
    face = np.stack([np.full(ys.size, 1.8), ys.ravel(), zs.ravel()], axis=1)
    uv, _ = _project_world(frame, face)
    inside = (uv[:, 0] > 0) & (uv[:, 0] < k.width - 1) & (uv[:, 1] > 0) & (uv[:, 1] < k.height - 1)
    assert inside.sum() >= 10
    origin = np.array([0.0, 0.0, 0.25])
    for (u, v), p in zip(uv[inside], face[inside]):
        iu, iv = int(round(u)), int(round(v))
        assert frame.free[iv, iu] == 0
        assert frame.depth[iv, iu] == pytest.approx(np.linalg.norm(p - origin), rel=0.03)
    # Floor between the robot and the box is free; floor right behind the box is hidden.
    uv, _ = _project_world(frame, [[1.0, 0.0, 0.0], [1.2, 0.8, 0.0]])
    for u, v in uv:
        assert frame.free[int(round(v)), int(round(u))] == 1
    uv, _ = _project_world(frame, [[2.5, 0.0, 0.0]])
    u, v = uv[0]
    assert frame.free[int(round(v)), int(round(u))] == 0
    assert frame.depth[int(round(v)), int(round(u))] < 2.0
    # Same scene without the box: those pixels are free floor.
    empty = render(Scene.empty((8.0, 8.0)), k, default_mount())
    assert empty.free.sum() > frame.free.sum()


def test_floor_under_a_raised_tabletop_is_free():
    top = Box(1.5, 0.0, 0.8, 1.2, 0.75, bottom=0.72)
    legs = [Cylinder(1.5 + sx * 0.35, sy * 0.55, 0.02, 0.72) for sx in (-1, 1) for sy in (-1, 1)]
    scene = Scene.empty((6.0, 6.0), obstacles=[top] + legs)
    assert not scene.blocked_top_down(1.5, 0.0)
    assert scene.blocked_top_down(1.85, 0.55)
    frame = render(scene, default_intrinsics(320, 180), default_mount())
    uv, _ = _project_world(frame, [[1.5, 0.0, 0.0]])
    u, v = uv[0]
    assert frame.free[int(round(v)), int(round(u))] == 1


@pytest.mark.parametrize('seed', [0, 1, 2, 3, 4, 5])
def test_free_pixels_hit_free_floor_and_the_rest_do_not(seed):
    frame = random_sample(_rng(100 + seed), SMALL)
    scene = frame.scene
    pts = _world_points(frame)
    free = frame.free.astype(bool)
    fp = pts[free]  # some views (facing a wall up close) have no free floor at all
    np.testing.assert_allclose(fp[:, 2], 0.0, atol=2e-3)
    assert not _blocked_with_tolerance(scene, fp[:, 0], fp[:, 1]).any()
    # Every blocked pixel with a hit is either above the floor or on blocked floor.
    hit = ~free & np.isfinite(frame.depth)
    bp = pts[hit]
    on_floor = np.abs(bp[:, 2]) < 1e-4
    interior = on_floor & (scene.clearance(bp[:, 0], bp[:, 1]) > 1e-3)
    assert not interior.any()


def test_render_with_lens_distortion_keeps_exact_labels():
    k = CameraIntrinsics(120, 68, 70.0, 70.0, 60.0, 33.0, (-0.2, 0.05, 0.0, 0.0, 0.0))
    box = Box(1.5, 0.3, 0.5, 0.5, 0.4, yaw=0.4)
    scene = Scene.empty((5.0, 5.0), obstacles=[box])
    frame = render(scene, k, default_mount())
    pts = _world_points(frame)
    free = frame.free.astype(bool)
    assert free.any() and (~free).any()
    np.testing.assert_allclose(pts[free][:, 2], 0.0, atol=2e-3)
    assert not _blocked_with_tolerance(scene, pts[free][:, 0], pts[free][:, 1]).any()


# --- top-down truth, collisions, poses ---------------------------------------------------

def test_blocked_top_down_is_exact_and_broadcasts():
    box = Box(1.0, 0.0, 0.6, 0.2, 0.3, yaw=math.pi / 2)  # 0.2 wide in x, 0.6 long in y
    pole = Cylinder(-1.0, 0.5, 0.2, 1.0)
    top = Box(0.0, -1.0, 0.5, 0.5, 0.8, bottom=0.7)
    scene = Scene.empty((4.0, 3.0), obstacles=[box, pole, top])
    check = {
        (1.0, 0.25): True, (1.0, 0.35): False, (1.08, 0.0): True, (1.15, 0.0): False,
        (-1.0, 0.5): True, (-1.0, 0.69): True, (-1.0, 0.75): False,
        (0.0, -1.0): False,  # under the raised top
        (0.0, 0.0): False, (1.9, 1.4): False, (2.1, 0.0): True, (0.0, -1.6): True,
    }
    for (x, y), expected in check.items():
        assert bool(scene.blocked_top_down(x, y)) == expected, (x, y)
    xs = np.linspace(-2.5, 2.5, 7)[:, None]
    ys = np.linspace(-2.0, 2.0, 5)[None, :]
    out = scene.blocked_top_down(xs, ys)
    assert out.shape == (7, 5) and out.dtype == bool
    assert out[0].all() and out[-1].all()  # x = +-2.5 is outside the room
    assert not scene.blocked_top_down(np.zeros((2, 3)), np.zeros((2, 3))).any()


def test_l_shaped_room_notch_is_blocked():
    outline = ((0, 0), (4, 0), (4, 2), (2, 2), (2, 4), (0, 4))
    scene = Scene(outline=outline)
    assert not scene.blocked_top_down(1.0, 3.0)
    assert not scene.blocked_top_down(3.0, 1.0)
    assert scene.blocked_top_down(3.0, 3.0)
    frame = render(scene, SMALL, default_mount(), robot_pose=(1.0, 1.0, math.pi / 4))
    pts = _world_points(frame)
    free = frame.free.astype(bool)
    assert free.any()
    assert not _blocked_with_tolerance(scene, pts[free][:, 0], pts[free][:, 1]).any()


def test_collides():
    scene = Scene.empty((4.0, 4.0), obstacles=[Cylinder(1.0, 0.0, 0.2, 0.5),
                                               Box(-1.0, -1.0, 0.4, 0.4, 0.3)])
    assert not scene.collides(0.0, 0.0, 0.3)
    assert scene.collides(0.5, 0.0, 0.31)  # 0.3 from the cylinder's rim
    assert not scene.collides(0.5, 0.0, 0.29)
    assert scene.collides(1.75, 1.0, 0.3)  # 0.25 from the wall at x = 2
    assert not scene.collides(1.65, 1.0, 0.3)
    assert scene.collides(-0.65, -1.0, 0.2)  # 0.15 from the box's side
    assert scene.collides(5.0, 0.0, 0.1)  # outside the room
    assert scene.collides(1.0, 0.0, 0.01)  # inside the cylinder


def test_sample_free_pose_keeps_clearance():
    for seed in range(5):
        scene = make_scene(_rng(seed))
        rng = _rng(50 + seed)
        for _ in range(5):
            x, y, yaw = scene.sample_free_pose(rng, clearance=0.3)
            assert scene.clearance(x, y) > 0.3
            assert not scene.collides(x, y, 0.29)
            assert -math.pi <= yaw <= math.pi
    with pytest.raises(RuntimeError):
        Scene.empty((1.0, 1.0)).sample_free_pose(_rng(0), clearance=0.6)


def test_random_scenes_have_content():
    kinds = set()
    for seed in range(12):
        scene = make_scene(_rng(seed))
        x0, y0, x1, y1 = scene.bounds()
        assert 2.0 <= x1 - x0 <= 10.0 + 1e-9 and 2.0 <= y1 - y0 <= 10.0 + 1e-9
        kinds |= {o.label for o in scene.obstacles}
        assert scene.appearance.lights
    assert {'box', 'table', 'chair', 'low'} <= kinds


# --- randomization switches --------------------------------------------------------------

def _follows_floor(scene, obstacle):
    """Return True when ``obstacle`` has the scene's floor material (photo floor followers)."""
    return (dataclasses.replace(obstacle.material, offset=(0.0, 0.0))
            == dataclasses.replace(scene.appearance.floor, offset=(0.0, 0.0)))


def _turned_floor(scene, obstacle):
    """Return True for a raised top in the floor's material turned against it (floor-like)."""
    def plain(mat):
        return dataclasses.replace(mat, seed=0, angle=0.0, offset=(0.0, 0.0))
    floor = scene.appearance.floor
    return plain(obstacle.material) == plain(floor) and obstacle.material.angle != floor.angle


SCENE_CHECKS = {
    'obstacles': lambda s: not [o for o in s.obstacles
                                if o.label not in (GLASS_LABEL, STEP_LABEL, WALL_CLUTTER_LABEL)],
    'furniture': lambda s: not {o.label for o in s.obstacles} & {'table', 'chair'},
    'low_objects': lambda s: not {o.label for o in s.obstacles} & {'low', 'cable'},
    'l_shaped_rooms': lambda s: len(s.outline) == 4,
    'doors': lambda s: not s.doors,
    'decals': lambda s: not s.decals,
    'floor_materials': lambda s: s.appearance.floor == DEFAULT_FLOOR,
    'wall_textures': lambda s: (s.appearance.wall == DEFAULT_WALL
                                and s.appearance.ceiling_color == (0.75, 0.75, 0.75)),
    'object_textures': lambda s: all(o.material == DEFAULT_OBJECT for o in s.obstacles
                                     if o.material.kind != 'glass'),
    'lighting': lambda s: (len(s.appearance.lights) == 1 and s.appearance.ambient == 0.35
                           and s.appearance.lights[0].intensity == 1.0),
    'shadows': lambda s: (not s.appearance.shadows
                          and all(li.radius == 0.0 for li in s.appearance.lights)),
    'specular': lambda s: (s.appearance.floor.specular == 0.0
                           and s.appearance.wall.specular == 0.0
                           and all(o.material.specular == 0.0 for o in s.obstacles)
                           and all(d.specular == 0.0 for d in s.wall_decals)),
    'color_temperature': lambda s: all(li.color == (1.0, 1.0, 1.0)
                                       for li in s.appearance.lights),
    'reflections': lambda s: (s.appearance.floor_reflectivity == 0.0
                              and s.appearance.floor_roughness == 0.0),
    'glass': lambda s: not any(o.label == GLASS_LABEL or o.material.kind == 'glass'
                               for o in s.obstacles),
    'steps': lambda s: not any(o.label == STEP_LABEL for o in s.obstacles),
    'wall_clutter': lambda s: (not s.wall_decals
                               and not any(o.label == WALL_CLUTTER_LABEL for o in s.obstacles)),
    'photo_textures': lambda s: (s.appearance.wall.kind != 'photo'
                                 and all(o.material.kind != 'photo' or _follows_floor(s, o)
                                         or _turned_floor(s, o) for o in s.obstacles)
                                 and all(d.photo < 0 for d in s.wall_decals)),
    'floor_photos': lambda s: s.appearance.floor.kind != 'photo',
    'stone_floors': lambda s: (s.appearance.floor.kind not in STONE_FLOOR_KINDS
                               and all(o.material.kind not in STONE_FLOOR_KINDS
                                       for o in s.obstacles)),
    'pale_rooms': lambda s: s.appearance.exposure == 1.0,
    'floorlike_tops': lambda s: not any(_turned_floor(s, o) for o in s.obstacles),
}


@pytest.mark.parametrize('factor', sorted(SCENE_CHECKS))
def test_scene_factor_can_be_switched_off(factor):
    check = SCENE_CHECKS[factor]
    on = [make_scene(_rng(seed)) for seed in range(16)]
    off_config = RandomizationConfig().without(factor)
    off = [make_scene(_rng(seed), off_config) for seed in range(16)]
    assert not all(check(s) for s in on), f'{factor} never varies when on'
    assert all(check(s) for s in off), f'{factor} still varies when off'


CAMERA_FACTORS = ('exposure', 'noise', 'blur', 'vignetting', 'compression', 'color_temperature')


def test_camera_factors_off_give_the_clean_image():
    scene = make_scene(_rng(5), RandomizationConfig.none(obstacles=True))
    pose = scene.sample_free_pose(_rng(5))
    clean = render(scene, SMALL, default_mount(), pose).image
    config = RandomizationConfig.none()
    for seed in range(3):
        img = render(scene, SMALL, default_mount(), pose, _rng(seed), config).image
        np.testing.assert_array_equal(img, clean)


@pytest.mark.parametrize('factor', CAMERA_FACTORS)
def test_camera_factor_switches_its_effect(factor):
    scene = make_scene(_rng(5), RandomizationConfig.none(obstacles=True))
    pose = scene.sample_free_pose(_rng(5))
    clean = render(scene, SMALL, default_mount(), pose).image
    only = RandomizationConfig.none(**{factor: True})
    changed = [not np.array_equal(
        render(scene, SMALL, default_mount(), pose, _rng(seed), only).image, clean)
        for seed in range(6)]
    assert any(changed), f'{factor} on never changes the image'
    without = RandomizationConfig.none().without()  # all off, as a control
    img = render(scene, SMALL, default_mount(), pose, _rng(0), without).image
    np.testing.assert_array_equal(img, clean)


def test_pose_jitter_switch():
    config = RandomizationConfig()
    mounts = [random_sample(_rng(seed), SMALL, config) for seed in range(4)]
    for frame in mounts:
        m = frame.mount
        assert config.camera_height[0] <= m.z <= config.camera_height[1]
        assert config.camera_pitch[0] <= m.pitch <= config.camera_pitch[1]
        assert abs(m.roll) <= config.camera_roll
    assert len({f.mount for f in mounts}) == 4
    assert len({f.intrinsics.fx for f in mounts}) == 4
    off = config.without('pose_jitter', 'lens_distortion')
    for seed in range(3):
        frame = random_sample(_rng(seed), SMALL, off)
        assert frame.mount == default_mount()
        assert frame.intrinsics == SMALL
    # Lens distortion is a switch of its own: without pose jitter only the lens varies.
    lens = [random_sample(_rng(seed), SMALL, config.without('pose_jitter')) for seed in range(6)]
    assert all(dataclasses.replace(f.intrinsics, distortion=()) == SMALL for f in lens)
    assert any(f.intrinsics.has_distortion for f in lens)


def test_config_helpers():
    config = RandomizationConfig()
    assert all(getattr(config, name) for name in config.switches())
    assert 'pose_jitter' in config.switches() and 'room_size' not in config.switches()
    none = RandomizationConfig.none()
    assert not any(getattr(none, name) for name in none.switches())
    assert RandomizationConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(ValueError):
        config.without('no_such_factor')
    assert dataclasses.replace(config, noise=False) == config.without('noise')


# --- glossy floors and glass -------------------------------------------------------------

def _glass_parts(scene):
    return [o for o in scene.obstacles if o.label == GLASS_LABEL]


#: Stone floors and pale rooms make some floors glossy too (a pale floor mirrors pale walls,
#: a change too faint for the checks below): the reflection tests leave them out.
MIRRORS = RandomizationConfig().without('stone_floors', 'pale_rooms')


def test_reflections_change_floor_pixels_not_labels(monkeypatch):
    seeds = [seed for seed in range(40)
             if make_scene(_rng(seed), MIRRORS).appearance.floor_reflectivity > 0.0
             and not _glass_parts(make_scene(_rng(seed), MIRRORS))][:2]
    assert len(seeds) == 2
    off = MIRRORS.without('reflections')
    for seed in seeds:
        on_frame = random_sample(_rng(seed), SMALL, MIRRORS)
        off_frame = random_sample(_rng(seed), SMALL, off)
        assert on_frame.scene.appearance.floor_reflectivity > 0.0
        assert off_frame.scene.appearance.floor_reflectivity == 0.0
        np.testing.assert_array_equal(on_frame.free, off_frame.free)
        np.testing.assert_array_equal(on_frame.depth, off_frame.depth)
        assert on_frame.robot_pose == off_frame.robot_pose and on_frame.mount == off_frame.mount
        assert not np.array_equal(on_frame.image, off_frame.image)
        # Same scene, same pose, the switch on and off at render time: the linear radiance is
        # the same wherever the ray does not hit floor and differs on the floor.
        args = (on_frame.scene, on_frame.intrinsics, on_frame.mount, on_frame.robot_pose)
        a, rad_on = render_radiance(monkeypatch, *args)
        b, rad_off = render_radiance(monkeypatch, *args, randomization=off)
        np.testing.assert_array_equal(a.free, b.free)
        diff = np.abs(rad_on - rad_off).max(axis=0)
        floor = a.free == 1
        assert floor.sum() > 100
        assert np.all(diff[~floor] == 0.0)
        assert np.mean(diff[floor] > 1e-4) > 0.5


def test_glossy_floor_mirrors_the_wall_colour(monkeypatch):
    blue = Material('plain', (0.05, 0.1, 0.8), variation=0.0)
    app = Appearance(floor=Material('plain', (0.3, 0.3, 0.3), variation=0.0), wall=blue,
                     baseboard_height=0.0)
    k = default_intrinsics(320, 180)
    mount = CameraMount(z=0.25, pitch=0.15)
    pose = (1.5, 0.0, 0.0)  # the wall at x = 3 is 1.5 m ahead
    matte, rad_m = render_radiance(monkeypatch, Scene.empty((6.0, 6.0), appearance=app), k,
                                   mount, pose)
    glossy, rad_g = render_radiance(monkeypatch, Scene.empty((6.0, 6.0), appearance=(
        dataclasses.replace(app, floor_reflectivity=0.5))), k, mount, pose)
    np.testing.assert_array_equal(glossy.free, matte.free)
    np.testing.assert_array_equal(glossy.depth, matte.depth)
    ys = np.linspace(-0.5, 0.5, 5)
    near_wall = np.stack([np.full(5, 2.8), ys, np.zeros(5)], axis=1)
    uv, _ = _project_world(matte, near_wall)
    for u, v in uv:
        iu, iv = int(round(u)), int(round(v))
        assert matte.free[iv, iu] == 1
        m, g = rad_m[:, iv, iu], rad_g[:, iv, iu]
        assert np.ptp(m) < 1e-6  # the matte floor is grey
        assert g[2] > 1.5 * g[0] and g[2] > 1.3 * g[1]  # the glossy one shows the blue wall
        assert g[2] / g.sum() > m[2] / m.sum() + 0.1
        img, grey = glossy.image[iv, iu].astype(int), matte.image[iv, iu].astype(int)
        assert img[2] > img[0] + 15 and abs(grey[2] - grey[0]) <= 2


def _glass_room(glass=True):
    red = Material('plain', (0.8, 0.05, 0.05), variation=0.0)
    box = Box(2.6, 0.0, 0.4, 1.2, 1.0, material=red)
    parts = glass_partition((1.5, -1.5), (1.5, 1.5), 2.1, panes=2, bottom_rail=0.1,
                            top_rail=0.05)
    return Scene.empty((8.0, 8.0), obstacles=(parts if glass else []) + [box])


def test_glass_is_blocked_but_shows_what_lies_behind(monkeypatch):
    k = default_intrinsics(320, 180)
    mount = CameraMount(z=0.25, pitch=0.2)
    with_glass, rad_g = render_radiance(monkeypatch, _glass_room(), k, mount)
    without, rad_n = render_radiance(monkeypatch, _glass_room(False), k, mount)
    # Through the pane (beside the middle stile, above the bottom rail) onto the red box.
    origin = np.array([0.0, 0.0, 0.25])
    target = np.array([2.4, 0.4, 0.6])
    uv, _ = _project_world(with_glass, [target])
    iu, iv = (int(round(c)) for c in uv[0])
    crossing = origin + (target - origin) * (1.495 / 2.4)  # where the ray meets the pane
    assert crossing[2] > 0.15 and abs(crossing[1]) > 0.1
    assert with_glass.free[iv, iu] == 0
    assert with_glass.depth[iv, iu] == pytest.approx(np.linalg.norm(crossing - origin), rel=0.02)
    assert without.depth[iv, iu] == pytest.approx(np.linalg.norm(target - origin), rel=0.02)
    seen, behind = rad_g[:, iv, iu], rad_n[:, iv, iu]
    assert seen[0] > 2.0 * max(seen[1], seen[2])  # red, seen through the glass
    assert 0.5 * behind[0] < seen[0] < behind[0]  # tinted: a little darker
    # Floor seen through the glass is blocked too, and floor-coloured.
    uv, _ = _project_world(with_glass, [[2.0, -0.8, 0.0]])
    iu, iv = (int(round(c)) for c in uv[0])
    assert without.free[iv, iu] == 1 and with_glass.free[iv, iu] == 0
    assert np.ptp(rad_g[:, iv, iu]) < 0.5 * rad_g[:, iv, iu].mean()
    # Every pixel whose ray first hits the pane or its frame is blocked; nothing new is free.
    first_hits_glass = with_glass.depth < without.depth  # (the floor is cast the same way)
    assert first_hits_glass.sum() > 1000
    assert not with_glass.free[first_hits_glass].any()
    assert not (with_glass.free.astype(bool) & ~without.free.astype(bool)).any()
    np.testing.assert_array_equal(with_glass.free[~first_hits_glass],
                                  without.free[~first_hits_glass])


def test_glass_footprint_is_blocked_top_down():
    scene = _glass_room()
    ys = np.linspace(-1.45, 1.45, 30)
    assert scene.blocked_top_down(np.full(30, 1.5), ys).all()
    assert not scene.blocked_top_down(np.full(30, 1.56), ys).any()
    assert not scene.blocked_top_down(np.full(30, 1.44), ys).any()
    assert scene.clearance(1.5, 0.3) == 0.0
    assert scene.collides(1.4, 0.3, 0.11) and not scene.collides(1.3, 0.3, 0.15)
    parts = _glass_parts(scene)
    panes = [o for o in parts if o.material.kind == 'glass']
    assert len(panes) == 1 and panes[0].standing and panes[0].material == DEFAULT_GLASS
    assert all(o.label == GLASS_LABEL for o in parts)
    with pytest.raises(ValueError):
        glass_partition((0.0, 0.0), (0.0, 0.0), 2.0)


def _glass_seeds(count):
    """Seeds whose random_sample frame has glass in its room."""
    seeds = []
    for seed in range(60):
        if _glass_parts(make_scene(_rng(seed))):
            seeds.append(seed)
        if len(seeds) == count:
            return seeds
    raise AssertionError('too few rooms with glass')


def test_random_glass_is_blocked_where_it_is_and_clear_of_the_robot():
    config = RandomizationConfig()
    glass_pixels = 0
    for seed in _glass_seeds(6):
        frame = random_sample(_rng(seed), SMALL)
        scene = frame.scene
        parts = _glass_parts(scene)
        assert any(o.material.kind == 'glass' and o.standing for o in parts)
        assert scene.clearance(*frame.robot_pose[:2]) > config.robot_clearance
        for part in parts:
            if part.standing:  # the footprint (shrunk a little) is blocked
                pts = part.outline()
                centre = pts.mean(axis=0)
                inner = centre + 0.9 * (pts - centre)
                assert scene.blocked_top_down(inner[:, 0], inner[:, 1]).all()
                assert scene.blocked_top_down(*centre)
        # Pixels whose first hit lies on a glass part are blocked.
        pts = _world_points(frame)[np.isfinite(frame.depth)]
        free = frame.free[np.isfinite(frame.depth)]
        on_glass = np.zeros(len(pts), dtype=bool)
        for part in parts:
            grown = dataclasses.replace(part, size_x=part.size_x + 2e-3,
                                        size_y=part.size_y + 2e-3)
            on_glass |= (grown.contains_xy(pts[:, 0], pts[:, 1]) & (pts[:, 2] > 1e-3)
                         & (pts[:, 2] >= part.bottom - 1e-3) & (pts[:, 2] <= part.height + 1e-3))
        assert not free[on_glass].any()
        glass_pixels += int(on_glass.sum())
        # The shifted style has the same glass.
        shifted = make_scene(_rng(seed), RandomizationConfig(style='shifted'))
        assert _glass_parts(shifted) == _glass_parts(make_scene(_rng(seed)))
    assert glass_pixels > 50


def test_reflection_and_glass_draws_leave_the_rest_of_the_room_alone():
    both_off = RandomizationConfig().without('reflections', 'glass')
    for seed in range(12):
        scene = make_scene(_rng(seed))
        old = make_scene(_rng(seed), both_off)
        assert dataclasses.replace(scene.appearance, floor_reflectivity=0.0,
                                   floor_roughness=0.0) == old.appearance
        assert scene.doors == old.doors and scene.decals == old.decals
        if not _glass_parts(scene):
            assert scene.obstacles == old.obstacles


# --- steps, wall clutter and lens distortion ---------------------------------------------

def _labelled(scene, label):
    return [o for o in scene.obstacles if o.label == label]


def _seeds_with(predicate, count, limit=80):
    """Return the first ``count`` seeds whose default room satisfies ``predicate``."""
    seeds = []
    for seed in range(limit):
        if predicate(make_scene(_rng(seed))):
            seeds.append(seed)
            if len(seeds) == count:
                return seeds
    raise AssertionError('too few such rooms')


def _on_part(frame, parts, tol=2e-3):
    """Pixels (H, W) whose first hit lies on one of the box or cylinder ``parts``."""
    pts = _world_points(frame)
    hit = np.isfinite(frame.depth)
    on = np.zeros(frame.free.shape, dtype=bool)
    for part in parts:
        if isinstance(part, Box):
            grown = dataclasses.replace(part, size_x=part.size_x + tol, size_y=part.size_y + tol)
        else:
            grown = dataclasses.replace(part, radius=part.radius + tol)
        on |= (hit & grown.contains_xy(pts[..., 0], pts[..., 1]) & (pts[..., 2] > tol)
               & (pts[..., 2] >= part.bottom - tol) & (pts[..., 2] <= part.height + tol))
    return on


def _floor_top_platform_room():
    wood = Material('wood', (0.45, 0.3, 0.18), (0.3, 0.2, 0.1), scale=0.12, scale2=1.2,
                    variation=0.15, seed=3)
    step = Box(2.0, 0.0, 0.8, 2.0, 0.1, material=wood, label=STEP_LABEL)
    scene = Scene.empty((8.0, 8.0), obstacles=[step],
                        appearance=Appearance(floor=wood, baseboard_height=0.0))
    return scene, step


def test_step_pixels_top_and_footprint_are_blocked_even_in_the_floors_material():
    scene, step = _floor_top_platform_room()
    assert step.material == scene.appearance.floor  # the hard case
    # Top-down: the footprint is blocked, the floor around it free.
    assert scene.blocked_top_down(2.0, 0.0) and scene.blocked_top_down(1.61, 0.99)
    assert not scene.blocked_top_down(1.55, 0.0) and not scene.blocked_top_down(2.0, 1.05)
    assert scene.clearance(1.3, 0.0) == pytest.approx(0.3)
    assert scene.collides(1.3, 0.0, 0.31) and not scene.collides(1.3, 0.0, 0.29)
    k = default_intrinsics(320, 180)
    frame = render(scene, k, default_mount())
    bare = render(Scene.empty((8.0, 8.0), appearance=scene.appearance), k, default_mount())
    pts = _world_points(frame)
    on_step = _on_part(frame, [step])
    top = on_step & (np.abs(pts[..., 2] - 0.1) < 1e-3)
    riser = on_step & (pts[..., 2] < 0.1 - 1e-3)
    assert top.sum() > 300 and riser.sum() > 100
    assert not frame.free[on_step].any()  # the top is not at z = 0: blocked
    assert bare.free[top].all()  # without the step the floor there is free
    # Nothing new is free; what changed is the step's own pixels (and the floor it hides).
    assert not (frame.free.astype(bool) & ~bare.free.astype(bool)).any()
    assert np.array_equal(frame.free[~on_step], bare.free[~on_step])
    # The tread continues the floor's pattern: the same albedo as the floor there would have.
    floor_near = frame.free.astype(bool) & (np.abs(pts[..., 0] - 1.45) < 0.1) \
        & (np.abs(pts[..., 1]) < 0.9)
    ratio = frame.image[top].mean(axis=0) / frame.image[floor_near].mean(axis=0)
    assert np.all(np.abs(ratio - 1.0) < 0.3)


def test_step_materials_and_shifted_style():
    seeds = _seeds_with(lambda s: any(o.material == s.appearance.floor
                                      for o in _labelled(s, STEP_LABEL)), 2, 120)
    for seed in seeds:
        # Floor-like tops act in the default style only: leave them out to compare.
        base = make_scene(_rng(seed), RandomizationConfig().without('floorlike_tops'))
        shifted = make_scene(_rng(seed), RandomizationConfig(style='shifted'))
        for a, b in zip(_labelled(base, STEP_LABEL), _labelled(shifted, STEP_LABEL)):
            assert dataclasses.replace(a, material=DEFAULT_OBJECT) == \
                dataclasses.replace(b, material=DEFAULT_OBJECT)
            if a.material == base.appearance.floor:  # follows the shifted floor
                assert b.material == shifted.appearance.floor != a.material


def test_steps_on_and_off_change_only_the_steps_and_what_avoids_them():
    off = RandomizationConfig().without('steps')
    with_steps = 0
    for seed in range(24):
        on_scene = make_scene(_rng(seed))
        off_scene = make_scene(_rng(seed), off)
        assert not _labelled(off_scene, STEP_LABEL)
        assert on_scene.outline == off_scene.outline
        assert on_scene.appearance == off_scene.appearance
        assert on_scene.doors == off_scene.doors and on_scene.decals == off_scene.decals
        assert _labelled(on_scene, GLASS_LABEL) == _labelled(off_scene, GLASS_LABEL)
        steps = _labelled(on_scene, STEP_LABEL)
        if not steps:  # a room drawn without steps is the room with the switch off
            assert on_scene.obstacles == off_scene.obstacles
            assert on_scene.wall_decals == off_scene.wall_decals
            continue
        with_steps += 1
        assert all(0.03 - 1e-9 <= o.height <= 0.2 + 0.002 + 1e-9 for o in steps)
        assert any(o.standing for o in steps)
        # Other obstacles keep clear of the steps' footprints.
        others = [o for o in on_scene.footprints() if o.label not in (STEP_LABEL, GLASS_LABEL)]
        for o in others:
            pts = o.outline()
            assert not any(s.contains_xy(pts[:, 0], pts[:, 1]).any()
                           for s in steps if s.standing)
    assert with_steps >= 4


@pytest.mark.parametrize('seed', [7, 16, 34])
def test_random_step_frames_are_blocked_where_the_steps_are(seed):
    frame = random_sample(_rng(seed), SMALL)
    scene = frame.scene
    steps = _labelled(scene, STEP_LABEL)
    assert steps, 'this seed no longer has steps: pick another'
    assert scene.clearance(*frame.robot_pose[:2]) > RandomizationConfig().robot_clearance
    for part in steps:
        if part.standing:
            pts = part.outline()
            centre = pts.mean(axis=0)
            inner = centre + 0.9 * (pts - centre)
            assert scene.blocked_top_down(inner[:, 0], inner[:, 1]).all()
    assert not frame.free[_on_part(frame, steps)].any()
    # Seen from a pose facing the first step, the step fills pixels, all blocked.
    step = steps[0]
    rng = _rng(1)
    for _ in range(2000):
        x, y, _ = scene.sample_free_pose(rng, 0.3)
        if 1.0 < math.hypot(step.x - x, step.y - y) < 3.0:
            break
    pose = (x, y, math.atan2(step.y - y, step.x - x))
    view = render(scene, SMALL, default_mount(), pose)
    on = _on_part(view, steps)
    assert on.sum() > 20 and not view.free[on].any()


def test_steps_keep_passages():
    from freespace_seg.sim.scene import keeps_passages
    rooms = 0
    for seed in range(60):
        scene = make_scene(_rng(seed))
        steps = [o for o in _labelled(scene, STEP_LABEL) if o.standing]
        if not steps:
            continue
        rooms += 1
        walls_only = Scene(outline=scene.outline, obstacles=_labelled(scene, GLASS_LABEL))
        assert keeps_passages(walls_only, steps), seed
    assert rooms >= 10
    # The check can fail: a curb from wall to wall cuts the room in two; one that leaves a
    # metre open does not.
    room = Scene.empty((6.0, 4.0))
    assert not keeps_passages(room, [Box(0.0, 0.0, 0.2, 4.2, 0.1, label=STEP_LABEL)])
    assert keeps_passages(room, [Box(0.0, -0.5, 0.2, 3.0, 0.1, label=STEP_LABEL)])


def _radiator_room(decals=True, radiator=True):
    blue = Material('plain', (0.2, 0.3, 0.7), variation=0.0)
    app = Appearance(floor=Material('plain', (0.4, 0.4, 0.4), variation=0.0),
                     wall=Material('plain', (0.7, 0.7, 0.7), variation=0.0),
                     baseboard_height=0.0)
    # On the wall x = 3 (edge 1 runs from (3, -3) to (3, 3): along it s = y + 3).
    poster = WallDecal(1, 3.1, 0.6, 0.3, 0.5, 'poster', (0.1, 0.5, 0.1), (0.3, 0.5, 0.9),
                       (0.9, 0.85, 0.6), 0.02, (0.95, 0.95, 0.95), seed=4)
    socket = WallDecal(1, 3.8, 0.08, 0.12, 0.08, 'socket', (0.95, 0.95, 0.95),
                       (0.7, 0.7, 0.7), (0.01, 0.01, 0.01))
    # A wall-hung radiator 0.1 m above the floor, 0.03 m off the wall, 0.1 m deep.
    rad = Box(3.0 - 0.03 - 0.05, -0.6, 0.1, 1.0, 0.6, 0.0, 0.1, blue, WALL_CLUTTER_LABEL)
    return Scene.empty((6.0, 6.0), obstacles=[rad] if radiator else [], appearance=app,
                       wall_decals=[poster, socket] if decals else [])


def test_wall_clutter_is_blocked_and_the_floor_under_a_radiator_is_free():
    k = default_intrinsics(320, 180)
    mount = CameraMount(z=0.25, pitch=0.1)
    pose = (1.6, 0.0, 0.0)
    frame = render(_radiator_room(), k, mount, pose)
    bare = render(_radiator_room(False, False), k, mount, pose)
    scene = frame.scene
    rad = _labelled(scene, WALL_CLUTTER_LABEL)[0]
    assert not rad.standing
    assert not scene.blocked_top_down(rad.x, rad.y)  # raised: no footprint
    pts = _world_points(frame)
    on_rad = _on_part(frame, [rad])
    assert on_rad.sum() > 200 and not frame.free[on_rad].any()
    under = frame.free.astype(bool) & rad.contains_xy(pts[..., 0], pts[..., 1])
    assert under.sum() > 5  # the floor under the radiator, seen below it, is free
    np.testing.assert_allclose(pts[under][:, 2], 0.0, atol=2e-3)
    # The poster and the socket are wall: blocked, and not the wall's colour.
    on_wall = np.abs(pts[..., 0] - 3.0) < 1e-3
    s = pts[..., 1] + 3.0
    in_poster = on_wall & (s > 3.15) & (s < 3.65) & (pts[..., 2] > 0.35) & (pts[..., 2] < 0.75)
    in_socket = on_wall & (np.abs(s - 3.84) < 0.03) & (np.abs(pts[..., 2] - 0.16) < 0.03)
    assert in_socket.sum() > 3 and not frame.free[in_socket].any()
    assert in_poster.sum() > 100 and not frame.free[in_poster].any()
    diff = np.abs(frame.image.astype(int) - bare.image.astype(int)).sum(axis=-1)
    assert np.mean(diff[in_poster] > 30) > 0.8
    assert np.mean(diff[in_socket] > 30) > 0.5
    # Labels: nothing new is free; only the radiator's pixels changed.
    assert not (frame.free.astype(bool) & ~bare.free.astype(bool)).any()
    np.testing.assert_array_equal(frame.free[~on_rad], bare.free[~on_rad])
    flat = render(_radiator_room(radiator=False), k, mount, pose)
    np.testing.assert_array_equal(flat.free, bare.free)  # flat things change no label


def test_wall_clutter_on_and_off(monkeypatch):
    off = RandomizationConfig().without('wall_clutter')
    seen = 0
    for seed in range(12):
        on_scene = make_scene(_rng(seed))
        off_scene = make_scene(_rng(seed), off)
        assert not off_scene.wall_decals and not _labelled(off_scene, WALL_CLUTTER_LABEL)
        assert on_scene.appearance == off_scene.appearance
        assert on_scene.doors == off_scene.doors and on_scene.decals == off_scene.decals
        # Wall clutter is drawn last: the rest of the room is the same.
        assert [o for o in on_scene.obstacles if o.label != WALL_CLUTTER_LABEL] == \
            off_scene.obstacles
        a, b = on_scene.walls()
        for d in on_scene.wall_decals:
            length = float(np.hypot(*(b[d.wall] - a[d.wall])))
            assert 0.0 < d.start and d.start + d.width < length
            assert 0.0 < d.bottom and d.bottom + d.height < on_scene.wall_height
        for o in _labelled(on_scene, WALL_CLUTTER_LABEL):  # against a wall, inside the room
            centre = np.array([o.x, o.y])
            dist = min(float(np.abs(np.cross(np.append(b[i] - a[i], 0), np.append(
                centre - a[i], 0))[2]) / np.hypot(*(b[i] - a[i]))) for i in range(len(a)))
            assert dist < 0.35 and on_scene.inside(o.x, o.y)
            assert o.standing == (o.bottom == 0.0)
            if o.standing:  # radiator feet and pipes only
                assert o.height <= 0.3
        if not on_scene.wall_decals:
            continue
        # Same scene and pose with the flat things taken off: only wall pixels change colour,
        # labels do not.
        pose = on_scene.sample_free_pose(_rng(seed))
        plain = RandomizationConfig().without('reflections')
        args = (SMALL, CameraMount(z=0.6, pitch=0.0), pose)
        frame, rad_on = render_radiance(monkeypatch, on_scene, *args, randomization=plain)
        bare, rad_off = render_radiance(monkeypatch, dataclasses.replace(
            on_scene, wall_decals=[]), *args, randomization=plain)
        np.testing.assert_array_equal(frame.free, bare.free)
        np.testing.assert_array_equal(frame.depth, bare.depth)
        changed = np.abs(rad_on - rad_off).max(axis=0) > 0.0
        pts = _world_points(frame)[changed]
        walls = Scene(outline=on_scene.outline)
        on_wall = walls.clearance(pts[:, 0], pts[:, 1]) < 1e-3
        through_glass = _on_part(frame, _labelled(on_scene, GLASS_LABEL))[changed]
        assert (on_wall | through_glass).all()  # glass shows them, and mirrors the room
        seen += int(on_wall.sum() > 0)
    assert seen >= 2, 'wall clutter never in view'


def test_lens_distortion_draws():
    config = RandomizationConfig()
    k0 = default_intrinsics(480, 270)
    drawn = []
    for seed in range(60):
        rng_on, rng_off = _rng(seed), _rng(seed)
        k_on, m_on = jitter_camera(rng_on, k0, default_mount(), config)
        k_off, m_off = jitter_camera(rng_off, k0, default_mount(),
                                     config.without('lens_distortion'))
        # A side stream: the pose, the field of view and what is drawn next do not move.
        assert m_on == m_off and dataclasses.replace(k_on, distortion=()) == k_off
        assert rng_on.random() == rng_off.random()
        assert not k_off.has_distortion
        if k_on.has_distortion:
            drawn.append(k_on)
            k1, k2, p1, p2, k3 = k_on.distortion
            assert -0.3 <= k1 <= 0.1 and k3 == 0.0
            assert 0.0 <= -k2 / k1 <= 0.4 + 1e-9 if k1 else k2 == 0.0
            assert abs(p1) <= 0.003 and abs(p2) <= 0.003
            assert lens_is_valid(k_on, k_on.distortion)
    assert 0.4 < len(drawn) / 60 < 0.9
    assert min(k.distortion[0] for k in drawn) < -0.15 and max(k.distortion[0] for k in drawn) > 0
    # A camera that has its own distortion keeps it.
    own = dataclasses.replace(k0, distortion=(-0.05, 0.01, 0.0, 0.0, 0.0))
    assert all(jitter_camera(_rng(s), own, default_mount(), config)[0].distortion ==
               own.distortion for s in range(5))
    # A lens that would fold the image is not drawn as it is.
    wide = CameraIntrinsics.from_fov(480, 270, math.radians(79.0))
    assert not lens_is_valid(wide, (-0.3, 0.0, 0.0, 0.0, 0.0))
    assert lens_is_valid(wide, (-0.3, 0.12, 0.0, 0.0, 0.0))


def test_lens_distortion_moves_pixels_as_the_intrinsics_say():
    # Red poles at known places near the image corners; barrel distortion pulls them in.
    red = Material('plain', (0.8, 0.05, 0.05), variation=0.0)
    poles = [Cylinder(2.5, y, 0.03, 1.2, material=red) for y in (-1.2, 0.0, 1.2)]
    scene = Scene.empty((8.0, 8.0), obstacles=poles)
    pinhole = default_intrinsics(320, 180)
    lens = dataclasses.replace(pinhole, distortion=(-0.25, 0.06, 0.001, -0.001, 0.0))
    mount = CameraMount(z=0.25, pitch=0.0)
    a = render(scene, lens, mount)
    b = render(scene, pinhole, mount)
    moved = 0
    for pole in poles:
        for z in (0.2, 0.6, 1.0):
            p = np.array([[pole.x - pole.radius, pole.y, z]])  # the front of the pole
            uv, _ = _project_world(a, p)
            uv0, _ = _project_world(b, p)
            u, v = (int(round(c)) for c in uv[0])
            if not (0 <= u < lens.width and 0 <= v < lens.height):
                continue
            dist = float(np.linalg.norm(p[0] - np.array([0.0, 0.0, 0.25])))
            assert a.depth[v, u] == pytest.approx(dist, rel=0.02)
            assert a.free[v, u] == 0
            moved += float(np.hypot(*(uv[0] - uv0[0]))) > 3.0
    assert moved >= 3
    # The same rays as the intrinsics' own undistortion, and every label fits its depth.
    pts = _world_points(a)
    free = a.free.astype(bool)
    np.testing.assert_allclose(pts[free][:, 2], 0.0, atol=2e-3)
    assert free.sum() > 1000 and not free[_on_part(a, poles)].any()
    xn, yn = lens.normalized_rays()
    uv = lens.project(np.stack([xn.ravel(), yn.ravel(), np.ones(xn.size)], axis=1))
    v, u = np.mgrid[0:lens.height, 0:lens.width]
    assert np.abs(uv - np.stack([u.ravel(), v.ravel()], axis=1)).max() < 1e-6
    rx, ry = rays_module._normalized_rays(lens)
    np.testing.assert_allclose(rx, xn, atol=1e-6)
    np.testing.assert_allclose(ry, yn, atol=1e-6)


@pytest.mark.parametrize('seed', [5, 123])
def test_lens_distortion_on_and_off_in_random_frames(seed, monkeypatch):
    on = random_sample(_rng(seed), SMALL)
    off = random_sample(_rng(seed), SMALL, RandomizationConfig().without('lens_distortion'))
    assert on.intrinsics.has_distortion and not off.intrinsics.has_distortion
    assert dataclasses.replace(on.intrinsics, distortion=()) == off.intrinsics
    assert on.mount == off.mount and on.robot_pose == off.robot_pose
    assert on.scene.obstacles == off.scene.obstacles
    assert not np.array_equal(on.free, off.free) and not np.array_equal(on.image, off.image)
    # Labels agree with depth through the distorted rays.
    pts = _world_points(on)
    free = on.free.astype(bool)
    np.testing.assert_allclose(pts[free][:, 2], 0.0, atol=2e-3)
    assert not _blocked_with_tolerance(on.scene, pts[free][:, 0], pts[free][:, 1]).any()
    # The screen rectangles through the lens miss nothing: casting every object over the
    # whole image gives the same frame.
    k = on.intrinsics
    for module in (render_module, glass_module):  # the direct view and the reflections
        monkeypatch.setattr(module, '_screen_rects',
                            lambda points, *rest: [(0, k.width, 0, k.height)] * len(points))
    full = render(on.scene, k, on.mount, on.robot_pose)
    np.testing.assert_array_equal(full.free, on.free)
    np.testing.assert_array_equal(full.depth, on.depth)


# --- python -m freespace_seg generate ----------------------------------------------------

def _generate(out, *extra):
    return cli_main(['generate', '--out', str(out), '--width', '64', '--height', '36', *extra])


def test_generate_writes_disjoint_seeded_splits(tmp_path, capsys):
    out = tmp_path / 'ds'
    assert _generate(out, '--num', '6', '--seed', '3', '--splits', '0.5,0.34,0.16') == 0
    meta = json.loads((out / 'meta.json').read_text())
    assert meta['seed'] == 3 and meta['counts'] == {'train': 3, 'val': 2, 'test': 1}
    assert meta['classes'] == {'0': 'blocked', '1': 'free'}
    assert RandomizationConfig.from_dict(meta['randomization']) == RandomizationConfig()
    records = [json.loads(line) for line in (out / 'samples.jsonl').read_text().splitlines()]
    assert len(records) == 6
    images = {}
    for rec in records:
        img = cv2.imread(str(out / rec['image']), cv2.IMREAD_UNCHANGED)
        mask = cv2.imread(str(out / rec['mask']), cv2.IMREAD_UNCHANGED)
        assert img.shape == (36, 64, 3) and mask.shape == (36, 64) and mask.dtype == np.uint8
        assert set(np.unique(mask)) <= {0, 1}
        assert rec['mask'] == f"{rec['split']}/{rec['index']:06d}_mask.png"
        assert rec['intrinsics']['width'] == 64
        images[(rec['split'], rec['index'])] = img
    names = sorted(os.listdir(out / 'train'))
    assert names == [f'{i:06d}_{kind}.png' for i in range(3) for kind in ('image', 'mask')]
    keys = list(images)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            assert not np.array_equal(images[a], images[b]), (a, b)
    assert 'generate' in capsys.readouterr().err  # the progress bar and summary

    # Sample i of a split does not depend on the split sizes.
    out2 = tmp_path / 'ds2'
    assert _generate(out2, '--num', '4', '--seed', '3', '--splits', '0.25,0.75,0') == 0
    val = cv2.imread(str(out2 / 'val' / '000001_image.png'))
    np.testing.assert_array_equal(val, cv2.imread(str(out / 'val' / '000001_image.png')))
    assert not (out2 / 'test').exists()
    # Another seed gives other images.
    out3 = tmp_path / 'ds3'
    assert _generate(out3, '--num', '1', '--seed', '4') == 0
    assert not np.array_equal(cv2.imread(str(out3 / 'train' / '000000_image.png')),
                              cv2.imread(str(out / 'train' / '000000_image.png')))


def test_generate_refuses_a_non_empty_directory(tmp_path, capsys):
    out = tmp_path / 'ds'
    out.mkdir()
    (out / 'keep.txt').write_text('x')
    assert _generate(out, '--num', '2') != 0
    assert 'not empty' in capsys.readouterr().err
    assert sorted(os.listdir(out)) == ['keep.txt']
    assert _generate(out, '--num', '2', '--overwrite', '--no-noise', '--no-blur') == 0
    meta = json.loads((out / 'meta.json').read_text())
    assert meta['randomization']['noise'] is False and meta['randomization']['blur'] is False
    assert meta['randomization']['lighting'] is True
    assert (out / 'keep.txt').exists()
    assert _generate(out, '--num', '1', '--overwrite') == 0
    assert sorted(os.listdir(out / 'train')) == ['000000_image.png', '000000_mask.png']
    assert _generate(tmp_path / 'bad', '--num', '2', '--splits', '1,2') != 0


def test_generate_without_reflections_and_glass(tmp_path):
    out = tmp_path / 'ds'
    assert _generate(out, '--num', '2', '--seed', '5', '--splits', '1,0,0', '--no-reflections',
                     '--no-glass') == 0
    meta = json.loads((out / 'meta.json').read_text())
    assert meta['randomization']['reflections'] is False
    assert meta['randomization']['glass'] is False
    assert meta['randomization']['specular'] is True
    config = RandomizationConfig().without('reflections', 'glass')
    assert RandomizationConfig.from_dict(meta['randomization']) == config
    for i in range(2):
        frame = random_sample(sample_rng(5, 0, i), default_intrinsics(64, 36), config)
        img = cv2.imread(str(out / 'train' / f'{i:06d}_image.png'))[..., ::-1]
        mask = cv2.imread(str(out / 'train' / f'{i:06d}_mask.png'), cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(img, frame.image)
        np.testing.assert_array_equal(mask, frame.free)


# Pins (support.frame_stats, in synthetic_pins.json) of (image, mask) of the samples of
# ``generate --num 3 --seed 5 --splits 1,0,0`` at 64x36 from before 'steps', 'wall_clutter',
# 'lens_distortion' and 'photo_textures' existed: with the four switched off (and the factors
# added since) they must not move. Statistics, not sha256 of the bytes: they survive a patch
# release of OpenCV or numpy (and of the PNG codec).
PINS = Pins(os.path.join(os.path.dirname(__file__), 'synthetic_pins.json'))


def test_generate_without_steps_wall_clutter_and_lens_distortion(tmp_path):
    out = tmp_path / 'ds'
    assert _generate(out, '--num', '3', '--seed', '5', '--splits', '1,0,0', '--no-steps',
                     '--no-wall-clutter', '--no-lens-distortion', '--no-photo-textures',
                     '--no-floor-photos', '--no-stone-floors', '--no-pale-rooms',
                     '--no-floorlike-tops') == 0
    meta = json.loads((out / 'meta.json').read_text())
    config = RandomizationConfig().without('steps', 'wall_clutter', 'lens_distortion',
                                           'photo_textures', 'floor_photos', 'stone_floors',
                                           'pale_rooms', 'floorlike_tops')
    assert RandomizationConfig.from_dict(meta['randomization']) == config
    for i in range(3):
        img = cv2.imread(str(out / 'train' / f'{i:06d}_image.png'))[..., ::-1]
        mask = cv2.imread(str(out / 'train' / f'{i:06d}_mask.png'), cv2.IMREAD_UNCHANGED)
        PINS.check(f'pre_steps_generate/{i}', img, mask)
    records = [json.loads(line) for line in (out / 'samples.jsonl').read_text().splitlines()]
    assert all(r['intrinsics']['distortion'] == [] for r in records)


def test_generate_records_the_lens_distortion(tmp_path):
    out = tmp_path / 'ds'
    assert _generate(out, '--num', '4', '--seed', '5', '--splits', '1,0,0') == 0
    records = [json.loads(line) for line in (out / 'samples.jsonl').read_text().splitlines()]
    distorted = 0
    for rec in records:
        frame = random_sample(sample_rng(5, 0, rec['index']), default_intrinsics(64, 36))
        assert rec['intrinsics']['distortion'] == list(frame.intrinsics.distortion)
        assert CameraIntrinsics(**{**rec['intrinsics'], 'distortion': tuple(
            rec['intrinsics']['distortion'])}) == frame.intrinsics
        distorted += len(rec['intrinsics']['distortion']) == 5
    assert distorted >= 1


# --- progress bar ------------------------------------------------------------------------

class _Tty(io.StringIO):

    def isatty(self):
        return True


def test_progress_prints_lines_when_not_a_terminal():
    buf = io.StringIO()
    items = list(progress(range(5), desc='work', file=buf))
    assert items == [0, 1, 2, 3, 4]
    last = buf.getvalue().strip().splitlines()[-1]
    assert last.startswith('work: 100%') and '5/5' in last and 'it/s' in last


def test_progress_final_line_on_early_exit_and_unknown_total():
    buf = io.StringIO()
    for i in progress(iter(range(100)), desc='gen', file=buf):
        if i == 2:
            break
    lines = buf.getvalue().splitlines()
    # A line when it starts, one when it ends; no carriage returns in a log.
    assert len(lines) == 2 and lines[-1].startswith('gen: 2it [') and '\r' not in lines[-1]

    tty = _Tty()
    bar = Progress(range(3), desc='train', file=tty, interval=0.0)
    for _ in bar:
        bar.set_postfix(loss=0.5)
    out = tty.getvalue()
    assert '\r' in out and out.endswith('\n') and 'loss=0.5' in out and '3/3' in out


# --- photo textures ------------------------------------------------------------------------

PHOTO_OFF = RandomizationConfig().without('photo_textures')


def _photo_scene(scene):
    """Return True when ``scene`` shows a photo anywhere (walls, obstacles, pictures)."""
    return not SCENE_CHECKS['photo_textures'](scene)


def test_photo_textures_change_appearance_not_labels():
    changed = 0
    for seed in range(8):
        on = random_sample(_rng(seed), SMALL)
        off = random_sample(_rng(seed), SMALL, PHOTO_OFF)
        np.testing.assert_array_equal(on.free, off.free)
        np.testing.assert_array_equal(on.depth, off.depth)
        assert on.robot_pose == off.robot_pose and on.mount == off.mount
        assert on.intrinsics == off.intrinsics and on.scene.outline == off.scene.outline
        assert [dataclasses.replace(o, material=DEFAULT_OBJECT) for o in on.scene.obstacles] \
            == [dataclasses.replace(o, material=DEFAULT_OBJECT) for o in off.scene.obstacles]
        assert on.scene.appearance.floor == off.scene.appearance.floor  # never a photo
        assert on.scene.decals == off.scene.decals  # rugs and mats stay as they are
        changed += int(not np.array_equal(on.image, off.image))
    assert changed >= 3, 'photos (almost) never change the image'


def test_photo_textures_draws():
    walls = objects = pictures = 0
    for seed in range(40):
        on = make_scene(_rng(seed))
        off = make_scene(_rng(seed), PHOTO_OFF)
        floor = off.appearance.floor
        walls += on.appearance.wall.kind == 'photo'
        for a, b in zip(on.obstacles, off.obstacles):
            if a.material != b.material:
                objects += 1
                assert a.material.kind == 'photo' and 0.3 <= a.material.scale <= 1.5
                assert b.material.kind != 'glass' and a.label != GLASS_LABEL
                assert dataclasses.replace(b.material, seed=0) != \
                    dataclasses.replace(floor, seed=0)
                assert a.material.specular == b.material.specular
        pictures += sum(d.photo >= 0 for d in on.wall_decals)
        assert all(d.photo < 0 for d in on.wall_decals if d.kind not in ('poster', 'picture'))
        # The shifted style keeps its brick and stone walls, the rest of the photos stay.
        shifted = make_scene(_rng(seed), RandomizationConfig(style='shifted'))
        assert shifted.appearance.wall.kind != 'photo'
        assert shifted.wall_decals == on.wall_decals
    assert 4 <= walls <= 22 and objects >= 20 and pictures >= 5


def test_photos_never_touch_free_floor(monkeypatch):
    # Without blur, JPEG and mirror reflections nothing spreads photo pixels onto the floor.
    plain = RandomizationConfig().without('blur', 'compression', 'reflections')
    seen = 0
    for seed in range(8):
        on = random_sample(_rng(seed), SMALL, plain)
        args = (on.scene, on.intrinsics, on.mount, on.robot_pose)
        _, rad_on = render_radiance(monkeypatch, *args, randomization=plain)
        off_scene = make_scene(_rng(seed), plain.without('photo_textures'))
        _, rad_off = render_radiance(monkeypatch, off_scene, *args[1:], randomization=plain)
        changed = np.abs(rad_on - rad_off).max(axis=0) > 1e-6
        if not changed.any():
            continue
        seen += 1
        assert (on.free[changed] == 0).mean() >= 0.99
        assert _photo_scene(on.scene)
    assert seen >= 3, 'photos never in view'


FLOOR_PHOTO_OFF = RandomizationConfig().without('floor_photos')


def _without_materials(obstacles):
    return [dataclasses.replace(o, material=DEFAULT_OBJECT) for o in obstacles]


def test_floor_photos_draws_and_followers():
    # Stone floors and pale rooms go where there is no photo floor, floor-like tops take the
    # photo: those three are left out to see the floor photo's own effect.
    base = RandomizationConfig().without('stone_floors', 'pale_rooms', 'floorlike_tops')
    photos = followers = 0
    for seed in range(60):
        on = make_scene(_rng(seed), base)
        off = make_scene(_rng(seed), base.without('floor_photos'))
        floor = off.appearance.floor
        assert on.outline == off.outline and on.decals == off.decals  # rugs and marks stay
        assert on.wall_decals == off.wall_decals
        assert _without_materials(on.obstacles) == _without_materials(off.obstacles)
        if on.appearance.floor.kind != 'photo':
            assert on.appearance == off.appearance and on.obstacles == off.obstacles
            continue
        photos += 1
        new = on.appearance.floor
        assert 0.5 <= new.scale <= 2.0 and new.specular == floor.specular
        assert dataclasses.replace(on.appearance, floor=floor) == off.appearance
        for a, b in zip(on.obstacles, off.obstacles):
            if b.material == floor:  # e.g. a step whose top is the floor itself
                assert a.material == new
                followers += 1
            elif dataclasses.replace(b.material, seed=0) == dataclasses.replace(floor, seed=0):
                assert a.material == dataclasses.replace(new, offset=a.material.offset)
                followers += 1
            else:
                assert a.material == b.material
        # Never in the shifted style, nor without floor materials.
        assert make_scene(_rng(seed), RandomizationConfig(style='shifted')).appearance.floor \
            .kind != 'photo'
        assert make_scene(_rng(seed), RandomizationConfig().without('floor_materials')) \
            .appearance.floor == DEFAULT_FLOOR
    assert 5 <= photos <= 22, photos
    assert followers >= 1, 'no object of the floor material followed a photo floor'


def test_floor_photos_change_the_image_not_the_labels():
    changed = 0
    for seed in range(12):
        on = random_sample(_rng(seed), SMALL)
        if on.scene.appearance.floor.kind != 'photo':
            continue
        off = random_sample(_rng(seed), SMALL, FLOOR_PHOTO_OFF)
        np.testing.assert_array_equal(on.free, off.free)
        np.testing.assert_array_equal(on.depth, off.depth)
        assert on.robot_pose == off.robot_pose and on.intrinsics == off.intrinsics
        floor = on.free > 0
        differs = np.abs(on.image.astype(int) - off.image.astype(int)).max(axis=2) > 8
        # The photo shows on the free floor.
        assert differs[floor].mean() > 0.2
        changed += 1
    assert changed >= 2, 'photo floors (almost) never drawn'


def test_object_floor_photos_off_gives_texture_like_floor_photos_in_the_same_rooms():
    from freespace_seg.sim.photos import texture_names
    from freespace_seg.sim.scene.photo_textures import TEXTURE_LIKE_PHOTOS, texture_like_indices
    names = texture_names()
    assert sorted(names[i].rsplit('.', 1)[0] for i in texture_like_indices()) == \
        sorted(TEXTURE_LIKE_PHOTOS)
    textures_only = RandomizationConfig().without('object_floor_photos')
    photos = objects_on = 0
    for seed in range(60):
        on = make_scene(_rng(seed))
        off = make_scene(_rng(seed), textures_only)
        # The same rooms get a photo floor; everything but the floor's photo is the same.
        assert (on.appearance.floor.kind == 'photo') == (off.appearance.floor.kind == 'photo')
        assert on.outline == off.outline and on.decals == off.decals
        assert _without_materials(on.obstacles) == _without_materials(off.obstacles)
        if off.appearance.floor.kind != 'photo':
            assert on.appearance == off.appearance
            continue
        photos += 1
        assert names[off.appearance.floor.seed].rsplit('.', 1)[0] in TEXTURE_LIKE_PHOTOS
        objects_on += names[on.appearance.floor.seed].rsplit('.', 1)[0] not in \
            TEXTURE_LIKE_PHOTOS
        assert 0.5 <= off.appearance.floor.scale <= 2.0
    assert photos >= 5, photos
    assert objects_on >= 1, 'with the factor on, no floor photo showed an object'


def test_photo_material_samples_the_texture_bank():
    from freespace_seg.sim.photos import load_texture, texture_names
    u, v = np.meshgrid(np.linspace(0.0, 2.0, 64), np.linspace(0.0, 2.0, 64))
    for index in range(len(texture_names())):
        mat = Material('photo', (1.0, 1.0, 1.0), scale=1.0, seed=index)
        near = material_albedo_of(mat, u, v, 0.001)
        far = material_albedo_of(mat, u, v, 0.5)
        assert np.all(np.isfinite(near)) and 0.0 <= near.min() and near.max() <= 1.0
        assert near.std(axis=1).max() > 0.01  # the photo shows
        assert far.std(axis=1).max() < near.std(axis=1).max()  # a coarser mip level far away
        # Wraps around: one repeat (the longer side) further gives the same albedo.
        h, w = load_texture(index).shape[:2]
        du = w / max(h, w)
        again = material_albedo_of(mat, u + du, v, 0.001)
        np.testing.assert_allclose(again, near, atol=2e-3)


def material_albedo_of(mat, u, v, fp):
    """Albedo (3, n) of ``mat`` at (u, v) (a thin wrapper for the photo tests)."""
    return render_module.material_albedo(mat, u, v, fp)


TEXTURE_DIR = os.path.join(REPO,
                           'freespace_seg', 'sim', 'textures')


def test_texture_bank_files_and_sources():
    from freespace_seg.sim import photos
    names = sorted(f for f in os.listdir(TEXTURE_DIR) if f.endswith('.jpg'))
    assert 8 <= len(names) <= 16
    assert photos.texture_names() == tuple(names)
    sources = open(os.path.join(TEXTURE_DIR, 'SOURCES.md')).read()
    rows = [line for line in sources.splitlines() if line.startswith('| ') and '.jpg' in line]
    assert sorted(row.split('|')[1].strip() for row in rows) == names
    total = 0
    for i, name in enumerate(names):
        image = photos.load_texture(i)
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
        assert max(image.shape[:2]) <= 256 and min(image.shape[:2]) >= 64
        total += os.path.getsize(os.path.join(TEXTURE_DIR, name))
        row = next(r for r in rows if r.split('|')[1].strip() == name)
        assert 'CC0' in row or 'public domain' in row
    assert total < 400_000
    # The Middlebury stereo pair is reserved for evaluation: never a texture.
    for text in names + [sources]:
        assert 'motorcycle' not in text.lower() and 'stereo' not in text.lower()
    tool = open(os.path.join(os.path.dirname(TEXTURE_DIR), '..', '..', 'tools',
                             'make_textures.py')).read()
    assert "'motorcycle" not in tool and 'stereo_motorcycle()' not in tool


def test_texture_bank_is_installed():
    text = open(os.path.join(os.path.dirname(TEXTURE_DIR), '..', '..', 'setup.py')).read()
    assert "'textures/*.jpg'" in text and "'textures/*.md'" in text
    import importlib.resources
    bank = importlib.resources.files('freespace_seg.sim') / 'textures'
    assert (bank / 'SOURCES.md').is_file()
    assert sorted(p.name for p in bank.iterdir() if p.name.endswith('.jpg')) == \
        sorted(f for f in os.listdir(TEXTURE_DIR) if f.endswith('.jpg'))
    installed = []
    for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        installed += glob_module.glob(os.path.join(
            prefix, 'lib', 'python3*', 'site-packages', 'freespace_seg', 'sim'))
    if not installed:
        pytest.skip('freespace_seg is not installed (AMENT_PREFIX_PATH)')
    for path in installed:
        assert sorted(os.listdir(os.path.join(path, 'textures'))) == \
            sorted(os.listdir(TEXTURE_DIR))
        assert os.path.isfile(os.path.join(path, 'photos.py'))


def test_close_views_put_the_robot_near_a_wall_or_obstacle_facing_it(tmp_path):
    from freespace_seg.sim.render import CLOSE_VIEW_BAND

    config = RandomizationConfig(close_views=1.0)
    close_free, free = [], []
    for seed in range(6):
        frame = random_sample(_rng(seed), SMALL, config)
        x, y, yaw = frame.robot_pose
        clearance = frame.scene.clearance(x, y)
        assert config.robot_clearance < clearance <= config.robot_clearance + CLOSE_VIEW_BAND
        # Something blocked within a metre ahead (the heading is within 0.3 rad of it).
        steps = np.linspace(0.05, 1.0, 39)
        cone = np.linspace(-0.35, 0.35, 15)[:, None] + yaw
        assert frame.scene.blocked_top_down(x + np.cos(cone) * steps,
                                            y + np.sin(cone) * steps).any()
        close_free.append(frame.free.mean())
        free.append(random_sample(_rng(seed), SMALL).free.mean())
    assert np.mean(close_free) < 0.5 * np.mean(free), (close_free, free)
    # Off (the default), a seed draws the frame it always drew: no draw for the factor.
    a = random_sample(_rng(3), SMALL, RandomizationConfig(close_views=0.0))
    b = random_sample(_rng(3), SMALL)
    assert a.robot_pose == b.robot_pose and np.array_equal(a.image, b.image)
    with pytest.raises(ValueError, match='close_views'):
        RandomizationConfig(close_views=1.5)
    out = str(tmp_path / 'close')
    assert cli_main(['generate', '--out', out, '--num', '2', '--width', '64', '--height', '36',
                     '--close-views', '1', '--splits', '1,0,0']) == 0
    assert json.load(open(os.path.join(out, 'meta.json')))['randomization']['close_views'] == 1
    with pytest.raises(SystemExit):
        cli_main(['generate', '--out', out, '--close-views', '2'])
