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

"""OcclusionMemory: no free cell behind an obstacle that the last grids saw."""

import math

from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED, UNKNOWN
from freespace_seg.ground.occlusion import OcclusionMemory, OcclusionParams
from freespace_seg.ground.projection import GroundProjector
import numpy as np
import pytest

SPEC = GridSpec(resolution=0.05, width=4.0, height=4.0, origin=(0.0, -2.0), max_range=3.0)
CAMERA = (0.0, 0.0, 0.4)
NONE = np.zeros((0, 3))


def _all_free(spec=SPEC, near=0.0):
    """Return a grid that calls every cell from ``near`` to the range free (a fooled model)."""
    x, y = spec.cell_centers()
    grid = np.full(spec.shape, UNKNOWN, np.int8)
    r = np.hypot(x, y)
    grid[(r >= near) & (r <= spec.max_range)] = FREE
    return grid


def _marked(occluders, near=0.0):
    """Return :func:`_all_free` with the occluders' cells occupied (the grid sees them now)."""
    grid = _all_free(near=near)
    row, col = SPEC.cell_of(occluders[:, 0], occluders[:, 1])
    grid[row[row >= 0], col[row >= 0]] = OCCUPIED
    return grid


def _wall(x, y0, y1, height=math.inf, step=0.05):
    """Return occluders of a wall at base-frame x, from y0 to y1."""
    y = np.arange(y0, y1 + 1e-9, step)
    return np.column_stack([np.full(y.size, x), y, np.full(y.size, height)])


def _free_at(grid, x, y, spec=SPEC):
    row, col = spec.cell_of(np.array([x]), np.array([y]))
    return grid[row[0], col[0]] == FREE


def test_off_passes_every_grid_unchanged():
    memory = OcclusionMemory(OcclusionParams(0.0))
    grid = _all_free()
    assert memory.apply(grid, SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA, _wall(1.0, -1, 1)) is grid
    assert memory.apply(grid, SPEC, (0.5, 0.0, 0.0), 0.1, CAMERA, NONE) is grid
    assert len(memory) == 0


def test_a_wall_seen_from_afar_hides_what_a_fooled_grid_frees_behind_it():
    memory = OcclusionMemory(OcclusionParams(10.0))
    # From the start, a wall 1.5 m ahead (odom x = 1.5), 1 m wide: its foot cut the columns.
    first = memory.apply(_all_free(), SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA,
                         _wall(1.5, -0.5, 0.5))
    assert np.array_equal(first, _all_free())          # its own obstacles act from the next
    # 1.2 m on, the wall (0.3 m ahead now) fills the view and the model calls it floor: the
    # grid is free from the nearest floor the camera can see (0.4 m) out to 3 m.
    fooled = _all_free(near=0.4)
    out = memory.apply(fooled, SPEC, (1.2, 0.0, 0.0), 1.2, CAMERA, NONE)
    for x in (0.45, 1.0, 2.5):                           # behind the wall
        assert _free_at(fooled, x, 0.0)
        assert out[SPEC.cell_of(np.array([x]), np.array([0.0]))][0] == UNKNOWN, x
    assert _free_at(out, 1.0, 1.5)                       # beside the wall's shadow
    hidden = (fooled == FREE) & (out != FREE)
    assert hidden.sum() > 100
    assert not (out == OCCUPIED).any()                   # nothing is invented


def test_a_low_box_shadows_only_the_floor_a_camera_cannot_see_over_it():
    memory = OcclusionMemory(OcclusionParams(10.0))
    # A box 0.1 m high, 1 m ahead of a camera 0.4 m up: the floor is hidden from its foot
    # to 1 * 0.4 / (0.4 - 0.1) = 1.33 m, and seen beyond.
    box = _wall(1.0, -0.2, 0.2, 0.1)
    memory.apply(_marked(box), SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA, box)
    out = memory.apply(_marked(box), SPEC, (0.0, 0.0, 0.0), 0.1, CAMERA, NONE)
    assert _free_at(out, 0.8, 0.0)
    assert not _free_at(out, 1.1, 0.0)
    assert not _free_at(out, 1.25, 0.0)
    assert _free_at(out, 1.5, 0.0)
    assert _free_at(out, 2.5, 0.0)


def test_a_remembered_obstacle_on_floor_the_grid_sees_now_is_not_used():
    memory = OcclusionMemory(OcclusionParams(10.0))
    wall = _wall(1.0, -0.5, 0.5)
    memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA, wall)
    out = memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 0.1, CAMERA, NONE)
    assert not _free_at(out, 2.0, 0.0)
    # A grid that calls the wall's own cells free (the camera sees floor there now) and the
    # floor behind them: the remembered wall does not hide it.
    x, y = SPEC.cell_centers()
    grid = np.full(SPEC.shape, UNKNOWN, np.int8)
    grid[(x > 0.8) & (x < 2.2) & (np.abs(y) < 0.3)] = FREE
    out = memory.apply(grid, SPEC, (0.0, 0.0, 0.0), 0.2, CAMERA, NONE)
    assert np.array_equal(out, grid)
    assert len(memory) > 0                               # still remembered


def test_obstacles_are_forgotten_after_the_memory_under_the_robot_and_without_odometry():
    memory = OcclusionMemory(OcclusionParams(2.0, footprint=0.17))
    wall = _wall(1.0, -0.5, 0.5)
    memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA, wall)
    n = len(memory)
    assert n > 0
    assert not _free_at(memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 1.9, CAMERA, NONE),
                        2.0, 0.0)
    # 2.1 s after it was seen: gone.
    out = memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 2.1, CAMERA, NONE)
    assert np.array_equal(out, _marked(wall))
    assert len(memory) == 0
    # The robot stands where a remembered obstacle was: that one is forgotten.
    memory.apply(_all_free(), SPEC, (0.0, 0.0, 0.0), 3.0, CAMERA, _wall(1.0, -0.5, 0.5))
    memory.apply(_all_free(), SPEC, (1.0, 0.0, 0.0), 3.1, CAMERA, NONE)
    assert 0 < len(memory) < n
    # No odometry: everything is forgotten and the grid passes.
    grid = _all_free()
    assert memory.apply(grid, SPEC, None, 3.2, CAMERA, NONE) is grid
    assert len(memory) == 0


def test_a_replayed_clock_starts_over():
    memory = OcclusionMemory(OcclusionParams(10.0))
    wall = _wall(1.0, -0.5, 0.5)
    memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 100.0, CAMERA, wall)
    assert not _free_at(memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 100.1, CAMERA,
                                     NONE), 2.0, 0.0)
    out = memory.apply(_marked(wall), SPEC, (0.0, 0.0, 0.0), 5.0, CAMERA, NONE)
    assert np.array_equal(out, _marked(wall))
    assert len(memory) == 0


def test_the_newest_look_at_a_spot_replaces_the_older_ones():
    memory = OcclusionMemory(OcclusionParams(10.0))
    # First seen tall (a box in front of a wall: one blocked run), then low once the floor
    # between them shows: the floor beyond the low box's shadow is free again.
    tall, low = _wall(1.0, -0.2, 0.2), _wall(1.0, -0.2, 0.2, 0.1)
    grid = _marked(tall)
    memory.apply(grid, SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA, tall)
    assert not _free_at(memory.apply(grid, SPEC, (0.0, 0.0, 0.0), 0.1, CAMERA, NONE), 2.5, 0.0)
    n = len(memory)
    memory.apply(grid, SPEC, (0.0, 0.0, 0.0), 0.2, CAMERA, low)
    assert len(memory) == n
    out = memory.apply(grid, SPEC, (0.0, 0.0, 0.0), 0.3, CAMERA, NONE)
    assert _free_at(out, 2.5, 0.0)
    assert not _free_at(out, 1.2, 0.0)


def test_odd_heights_and_points_are_taken_safely():
    memory = OcclusionMemory(OcclusionParams(10.0))
    odd = np.array([[1.0, 0.0, np.nan], [1.0, 0.5, -0.3], [np.nan, 0.0, 0.1]])
    memory.apply(_marked(odd[:2]), SPEC, (0.0, 0.0, 0.0), 0.0, CAMERA, odd)
    assert len(memory) == 2
    out = memory.apply(_marked(odd[:2]), SPEC, (0.0, 0.0, 0.0), 0.1, CAMERA, NONE)
    assert not _free_at(out, 2.5, 0.0)                   # no height: as tall as the camera
    assert _free_at(out, 2.5, 1.25)                      # below the floor: no shadow


@pytest.mark.parametrize('kwargs', [{'memory': -1.0}, {'memory': 61.0},
                                    {'memory': float('nan')}, {'memory': True},
                                    {'memory': '5'}, {'footprint': -0.1}])
def test_bad_params_are_refused_with_their_name(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f'grid occlusion {name}'):
        OcclusionParams(**kwargs)


def test_the_projector_measures_how_high_a_cut_run_reaches():
    """A box face 0.12 m high at 1.2 m, then a wall that fills the view: heights as seen."""
    intr = CameraIntrinsics.from_fov(320, 240, math.radians(90))
    mount = CameraMount(z=0.3, pitch=0.35)
    proj = GroundProjector(intr, mount, SPEC)
    rot, pos = mount.rotation_base_from_optical(), mount.position

    def row_of(x, z):
        p = rot.T @ (np.array([x, 0.0, z]) - pos)
        return intr.project(p[None])[0, 1]

    foot, top = row_of(1.2, 0.0), row_of(1.2, 0.12)
    mask = np.ones((240, 320), np.uint8)
    mask[int(math.ceil(top)):int(math.floor(foot)) + 1, 150:170] = 0     # the box's face
    occ = proj.ground(mask).occluders
    assert occ.shape == (20, 3)
    assert np.allclose(occ[:, 0], 1.2, atol=0.03)
    assert np.allclose(occ[:, 2], 0.12, atol=0.015)
    # The same columns blocked from the foot to the image's top: as tall as the camera.
    mask[:int(math.floor(foot)) + 1, 150:170] = 0
    occ = proj.ground(mask).occluders
    assert occ.shape == (20, 3)
    assert np.isinf(occ[:, 2]).all()
    # No blocked pixel: nothing cuts.
    assert proj.ground(np.ones((240, 320), np.uint8)).occluders.shape == (0, 3)
