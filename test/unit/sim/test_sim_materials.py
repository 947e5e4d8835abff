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

"""Stone floors, pale rooms and floor-like tops: appearance only, the labels stay."""

import dataclasses
import functools
import importlib

from freespace_seg.sim import (default_intrinsics, make_scene, random_sample,
                               RandomizationConfig, render)
from freespace_seg.sim.render import material_albedo
from freespace_seg.sim.scene import DEFAULT_OBJECT, SHIFTED_FLOOR_KINDS, STONE_FLOOR_KINDS
from freespace_seg.sim.scene.surfaces import (corridor_like, is_raised_top, stone_floor_material,
                                              TOPS_P)
import numpy as np
import pytest
from support.sim import render_radiance

SMALL = default_intrinsics(160, 90)
FACTORS = ('stone_floors', 'pale_rooms', 'floorlike_tops')
rays_module = importlib.import_module('freespace_seg.sim.render.rays')


def _rng(seed):
    return np.random.default_rng(seed)


@functools.lru_cache(maxsize=None)
def _scenes(factor, count=80):
    """Scenes of seeds 0..count-1 with everything on and with ``factor`` off."""
    off = RandomizationConfig().without(factor)
    return [(make_scene(_rng(seed)), make_scene(_rng(seed), off)) for seed in range(count)]


def _drawn(factor, count=80):
    """Seeds whose room ``factor`` changes."""
    return [seed for seed, (on, off) in enumerate(_scenes(factor, count))
            if on.appearance != off.appearance or on.obstacles != off.obstacles]


def _geometry(scene):
    return ([dataclasses.replace(o, material=DEFAULT_OBJECT) for o in scene.obstacles],
            scene.outline, scene.wall_height, scene.doors, scene.decals, scene.wall_decals)


@pytest.mark.parametrize('factor', FACTORS)
def test_factor_changes_no_geometry_and_undrawn_rooms_not_at_all(factor):
    drawn = set(_drawn(factor))
    for seed, (on, off) in enumerate(_scenes(factor)):
        assert _geometry(on) == _geometry(off)
        if seed not in drawn:
            assert on.appearance == off.appearance and on.obstacles == off.obstacles
    # Never in the shifted style: its frames stay as they were.
    for seed in sorted(drawn)[:4]:
        shifted = RandomizationConfig(style='shifted')
        assert make_scene(_rng(seed), shifted).appearance == \
            make_scene(_rng(seed), shifted.without(factor)).appearance


@pytest.mark.parametrize('factor, low, high', [('stone_floors', 0.07, 0.26),
                                               ('pale_rooms', 0.07, 0.26),
                                               ('floorlike_tops', 0.25, 0.6)])
def test_factor_share_of_rooms(factor, low, high):
    share = len(_drawn(factor)) / 80.0
    assert low <= share <= high, share


@pytest.mark.parametrize('factor', FACTORS)
def test_factor_changes_the_image_not_the_labels(factor):
    off = RandomizationConfig().without(factor)
    checked = 0
    for seed in _drawn(factor)[:6]:
        on_frame = random_sample(_rng(seed), SMALL)
        off_frame = random_sample(_rng(seed), SMALL, off)
        np.testing.assert_array_equal(on_frame.free, off_frame.free)
        np.testing.assert_array_equal(on_frame.depth, off_frame.depth)
        assert on_frame.robot_pose == off_frame.robot_pose
        assert on_frame.mount == off_frame.mount and on_frame.intrinsics == off_frame.intrinsics
        checked += int(not np.array_equal(on_frame.image, off_frame.image))
        if checked >= 2:
            break
    assert checked >= 2, f'{factor} (almost) never changes the image'


# --- stone floors ----------------------------------------------------------------------

def _luma(albedo):
    return 0.2126 * albedo[0] + 0.7152 * albedo[1] + 0.0722 * albedo[2]


def test_stone_materials_are_veined_or_speckled_and_polished():
    config = RandomizationConfig()
    u, v = np.meshgrid(np.linspace(0.0, 2.0, 300), np.linspace(0.0, 2.0, 300))
    kinds = set()
    for seed in range(24):
        mat = stone_floor_material(_rng(seed), config)
        kinds.add(mat.kind)
        assert mat.kind in STONE_FLOOR_KINDS and mat.specular >= 0.2
        near = _luma(material_albedo(mat, u, v, 0.0005))
        far = _luma(material_albedo(mat, u, v, 0.5))
        assert np.all(np.isfinite(near)) and np.all(np.isfinite(far))
        ground = _luma(np.asarray(mat.color))
        if mat.kind == 'marble':  # veins: a small share of pixels far off the ground tone
            off_ground = np.abs(near - ground) > 0.3 * abs(_luma(np.asarray(mat.color2)) - ground)
            assert 0.005 < off_ground.mean() < 0.5, (seed, off_ground.mean())
        else:  # granite: many small specks, a busy but fine texture
            assert np.std(near) > 0.02 * max(ground, 0.05), seed
        # Far away the pattern fades to a calm mean instead of aliasing.
        assert np.std(far) < np.std(near)
    assert kinds == set(STONE_FLOOR_KINDS)
    assert not set(STONE_FLOOR_KINDS) & set(SHIFTED_FLOOR_KINDS)


def test_stone_floors_change_the_floor_pixels(monkeypatch):
    seen = 0
    plain = RandomizationConfig().without('reflections')
    for seed in _drawn('stone_floors')[:6]:
        frame = random_sample(_rng(seed), SMALL)
        scene = make_scene(_rng(seed), plain)
        assert scene.appearance.floor.kind in STONE_FLOOR_KINDS
        off = make_scene(_rng(seed), plain.without('stone_floors'))
        args = (SMALL, frame.mount, frame.robot_pose)
        rad_on = _radiance(monkeypatch, scene, *args)
        rad_off = _radiance(monkeypatch, off, *args)
        changed = np.abs(rad_on - rad_off).max(axis=0) > 1e-6
        free = frame.free > 0
        if free.mean() < 0.2:
            continue
        seen += 1
        # The floor changes (rugs stay); what changes is floor, objects that follow it or the
        # floor seen through glass.
        assert changed[free].mean() > 0.3
        followers = any(o.material.kind in STONE_FLOOR_KINDS for o in scene.obstacles)
        assert followers or changed[~free].mean() < 0.1
    assert seen >= 2


def _radiance(monkeypatch, scene, intrinsics, mount, pose, config=None):
    return render_radiance(monkeypatch, scene, intrinsics, mount, pose,
                           randomization=config)[1]


# --- pale rooms ------------------------------------------------------------------------

def _wall_and_floor_luma(frame):
    """Mean sRGB luma (0-255) of the wall pixels and of the floor pixels of a clean frame."""
    img = render(frame.scene, frame.intrinsics, frame.mount, frame.robot_pose).image
    luma = img.astype(np.float64) @ np.array([0.2126, 0.7152, 0.0722])
    origin, _ = rays_module.camera_in_world(frame.mount, frame.robot_pose)
    _, dx, dy, dz = rays_module.world_rays(frame.intrinsics, frame.mount, frame.robot_pose)
    t = np.where(np.isfinite(frame.depth), frame.depth, 0.0)
    x, y, z = origin[0] + t * dx, origin[1] + t * dy, origin[2] + t * dz
    scene = frame.scene
    near_wall = (scene.clearance(x, y) < 0.01) & (z > 0.3) & (z < scene.wall_height - 0.2)
    on_obstacle = np.zeros_like(near_wall)
    for o in scene.obstacles:
        on_obstacle |= o.contains_xy(x, y) & (z >= o.bottom - 0.01) & (z <= o.height + 0.01)
    wall = near_wall & ~on_obstacle & np.isfinite(frame.depth)
    floor = frame.free > 0
    if wall.sum() < 50 or floor.sum() < 50:
        return None
    return float(luma[wall].mean()), float(luma[floor].mean())


def test_pale_rooms_are_bright_and_of_low_contrast():
    off = RandomizationConfig().without('pale_rooms')
    pale, plain = [], []
    for seed in _drawn('pale_rooms')[:10]:
        on_frame = random_sample(_rng(seed), SMALL)
        app = on_frame.scene.appearance
        assert app.exposure > 1.0 and min(app.wall.color) > 0.5 and app.ceiling_color[0] > 0.6
        assert _luma(np.asarray(app.floor.color)) > 0.3
        got = _wall_and_floor_luma(on_frame)
        if got is None:
            continue
        pale.append(got)
        plain.append(_wall_and_floor_luma(random_sample(_rng(seed), SMALL, off)))
        if len(pale) >= 4:
            break
    assert len(pale) >= 2, 'walls and floor (almost) never both in view'
    walls, floors = np.array(pale).T
    assert np.median(walls) > 140 and np.median(floors) > 110, pale
    assert np.median(np.abs(walls - floors)) < 60, pale
    plain = [p for p in plain if p is not None]
    if plain:  # brighter than the same rooms without the factor
        assert np.median(floors) > np.median([f for _, f in plain])


def test_pale_rooms_prefer_corridors():
    corridors = [on for on, _ in _scenes('pale_rooms') if corridor_like(on)]
    others = [on for on, _ in _scenes('pale_rooms') if not corridor_like(on)]
    assert corridors and others
    share = [np.mean([s.appearance.exposure != 1.0 for s in group])
             for group in (corridors, others)]
    assert share[0] > share[1], share


# --- floor-like tops -------------------------------------------------------------------

def test_floorlike_tops_take_the_floors_look():
    changed = 0
    for seed in _drawn('floorlike_tops'):
        on, off = _scenes('floorlike_tops')[seed]
        floor = on.appearance.floor
        assert on.appearance == off.appearance
        for a, b in zip(on.obstacles, off.obstacles):
            if a.material == b.material:
                continue
            changed += 1
            assert is_raised_top(a) and a.label != 'glass'
            assert dataclasses.replace(a.material, seed=0, angle=0.0, offset=(0.0, 0.0)) == \
                dataclasses.replace(floor, seed=0, angle=0.0, offset=(0.0, 0.0))
            assert a.material == floor or a.material.angle != floor.angle
    assert changed >= 10 and 0.0 < TOPS_P < 1.0


def test_floorlike_tops_look_like_the_floor_in_the_image():
    off = RandomizationConfig().without('floorlike_tops')
    closer = []
    for seed in _drawn('floorlike_tops'):
        on_frame = random_sample(_rng(seed), SMALL)
        off_frame = random_sample(_rng(seed), SMALL, off)
        img_on = render(on_frame.scene, SMALL, on_frame.mount, on_frame.robot_pose).image
        img_off = render(off_frame.scene, SMALL, off_frame.mount, off_frame.robot_pose).image
        free = on_frame.free > 0
        tops = (np.abs(img_on.astype(int) - img_off.astype(int)).max(axis=2) > 12) & ~free
        if tops.sum() < 30 or free.sum() < 100:
            continue
        floor_colour = img_on[free].mean(axis=0)
        d_on = np.linalg.norm(img_on[tops].mean(axis=0) - floor_colour)
        d_off = np.linalg.norm(img_off[tops].mean(axis=0) - img_off[free].mean(axis=0))
        closer.append(d_on < d_off)
        if len(closer) >= 3:
            break
    assert len(closer) >= 2, 'floor-like tops (almost) never in view'
    assert np.mean(closer) >= 0.6, closer
