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

"""The ROS-free driver: steering, stopping and limits from hand-built occupancy grids."""

import math

from freespace_seg.driving.driver_logic import (arc_points, ClearanceMap, DriverConfig,
                                                DriverLogic, pose_after)
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED, UNKNOWN
import numpy as np
import pytest

SPEC = GridSpec()                      # 4 m x 4 m at 0.05 m, origin (0, -2): ahead of the robot
LAYOUT = SPEC
CFG = DriverConfig()


def grid(fill=FREE, spec=SPEC):
    return np.full(spec.shape, fill, dtype=np.int8)


def paint(g, x0, x1, y0, y1, value, spec=SPEC):
    """Set the cells whose centres lie in [x0, x1] x [y0, y1] (base frame, metres)."""
    xs, ys = spec.cell_centers()
    g[(xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)] = value
    return g


def seen(g, spec=SPEC):
    """
    Keep what the default camera sees, make the rest unknown.

    That is a cone of +-40 degrees from 0.3 m ahead on (the floor nearer than that is below
    the image, the floor beside the robot out of the field of view).
    """
    xs, ys = spec.cell_centers()
    g[(np.abs(np.arctan2(ys, xs)) > math.radians(40)) | (xs < 0.3)] = UNKNOWN
    return g


def wall_grid(distance, value=OCCUPIED, spec=SPEC):
    """Free floor up to a wall across the view at ``distance``; unknown behind it."""
    g = grid(spec=spec)
    paint(g, distance, distance + 0.1, -9, 9, value, spec)
    paint(g, distance + 0.1, 99, -9, 9, UNKNOWN, spec)
    return seen(g, spec)


def planned(g, config=CFG, layout=LAYOUT, teach=True, **kw):
    """Plan on ``g`` (after an open view, so the driver knows which cells the camera sees)."""
    d = DriverLogic(config)
    if teach:
        d.set_grid(seen(grid()), layout)
    d.set_grid(g, layout)
    return d.plan(**kw)


def run_to_steady(d, steps=40, dt=0.05):
    for _ in range(steps):
        v, w = d.step(dt)
    return v, w


def test_open_grid_drives_straight_at_max_speed():
    d = DriverLogic()
    d.set_grid(grid(), LAYOUT)
    v, w = run_to_steady(d)
    assert v == pytest.approx(CFG.max_linear)
    assert w == pytest.approx(0.0)
    assert d.last_plan.mode == 'drive' and d.last_plan.free_distance == pytest.approx(2.0)


def test_acceleration_is_limited():
    d = DriverLogic()
    d.set_grid(grid(), LAYOUT)
    v, _ = d.step(0.05)
    assert v == pytest.approx(CFG.max_linear_accel * 0.05)
    speeds = [d.step(0.05)[0] for _ in range(20)]
    steps = np.diff([v] + speeds)
    assert np.all(steps <= CFG.max_linear_accel * 0.05 + 1e-12)
    assert speeds[-1] == pytest.approx(CFG.max_linear)


def _world_grid(pose, wall_x, value=OCCUPIED, spec=SPEC):
    """
    Grid seen by a robot at ``pose`` in front of a wall at world x = wall_x (any y).

    Only what the default camera sees is known (see :func:`seen`).
    """
    xs, ys = spec.cell_centers()
    x, y, yaw = pose
    wx = x + math.cos(yaw) * xs - math.sin(yaw) * ys
    g = grid(spec=spec)
    g[(wx >= wall_x) & (wx < wall_x + 0.1)] = value
    g[wx >= wall_x + 0.1] = UNKNOWN
    return seen(g, spec)


@pytest.mark.parametrize('value', [OCCUPIED, UNKNOWN], ids=['occupied', 'unknown'])
def test_wall_ahead_stops_before_it_or_turns_away(value):
    """
    Drive a unicycle at a wall; the footprint + margin stay clear, then it drives along it.

    It either stops and turns in place (close to the wall, not miles away) or curves away
    early enough on an arc whose footprint plus margin stays clear.
    """
    d = DriverLogic()
    pose = [0.0, 0.0, 0.0]
    wall_x, dt = 2.0, 0.05
    gaps, stopped_at, stop_gap = [], None, None
    for i in range(600):
        d.set_grid(_world_grid(pose, wall_x, value), LAYOUT)
        v, w = d.step(dt)
        pose[0] += v * math.cos(pose[2]) * dt
        pose[1] += v * math.sin(pose[2]) * dt
        pose[2] += w * dt
        gaps.append(wall_x - pose[0] - CFG.robot_radius)
        if stopped_at is None and v == 0.0 and w != 0.0:
            stopped_at = i
            stop_gap = gaps[-1]
        if v > 0.1 and abs(pose[2]) > math.radians(60):
            break
    # The footprint plus the margin never touched the wall, and a stop was not miles away.
    assert min(gaps) >= CFG.safety_margin
    assert stop_gap is None or stop_gap < 0.5
    # It turned and drove off along the wall (heading at least 60 degrees away from it),
    # and it did not shy away from the wall by a metre either.
    assert min(gaps) < 1.0
    assert v > 0.1 and abs(pose[2]) > math.radians(60)


def test_unknown_ahead_is_as_blocked_as_occupied():
    for distance in (0.6, 1.0, 1.5):
        occ = planned(wall_grid(distance, OCCUPIED))
        unk = planned(wall_grid(distance, UNKNOWN))
        assert unk.ahead_distance == pytest.approx(occ.ahead_distance)
        # The inflated footprint stops short of the band.
        assert occ.ahead_distance <= distance - CFG.inflated_radius
    close = planned(wall_grid(0.35, UNKNOWN))
    assert close.mode == 'rotate' and close.linear == 0.0 and close.angular != 0.0
    # Unknown that the camera has never shown is the blind zone: it does not block.
    assert planned(wall_grid(0.35, UNKNOWN), teach=False).mode == 'drive'


def test_obstacle_on_the_left_turns_right_and_vice_versa():
    left = paint(grid(), 0.7, 1.1, -0.05, 0.6, OCCUPIED)
    p = planned(left)
    assert p.mode == 'drive' and p.angular < 0 and p.linear > 0
    right = paint(grid(), 0.7, 1.1, -0.6, 0.05, OCCUPIED)
    p = planned(right)
    assert p.mode == 'drive' and p.angular > 0 and p.linear > 0


@pytest.mark.parametrize('side', [1, -1], ids=['left', 'right'])
def test_blocked_ahead_rotates_towards_the_open_side(side):
    # A wall right ahead, with open floor seen beyond its end on one side only.
    g = grid(UNKNOWN)
    paint(g, 0.3, 0.35, -2, 2, FREE)
    paint(g, 0.35, 0.45, -2, 2, OCCUPIED)
    open_y = (0.3, 2.0) if side > 0 else (-2.0, -0.3)
    paint(g, 0.35, 4.0, *open_y, FREE)
    p = planned(seen(g))
    assert p.mode == 'rotate' and p.linear == 0.0
    assert p.angular == pytest.approx(side * CFG.rotate_speed)


def test_keeps_turning_until_there_is_room_to_resume():
    d = DriverLogic()
    d.set_grid(wall_grid(0.35), LAYOUT)
    assert d.plan().mode == 'rotate'
    # A little room (more than stop_distance, less than resume_distance) is not enough.
    d.set_grid(wall_grid(0.35 + CFG.stop_distance + 0.15), LAYOUT)
    assert d.plan().mode == 'rotate'
    d.set_grid(grid(), LAYOUT)
    assert d.plan().mode == 'drive'


def test_speed_drops_with_obstacle_distance():
    # Walls from just past the stop distance to well past slow_distance (the free length is
    # the wall's distance less robot_radius + safety_margin).
    distances = [0.4, 0.5, 0.6, 0.7, 0.9, 1.1, 1.3, 1.6, 2.6]
    speeds = [planned(wall_grid(x)).linear for x in distances]
    assert all(a <= b + 1e-12 for a, b in zip(speeds, speeds[1:])), speeds
    assert speeds[0] < 0.5 * speeds[-1]
    assert speeds[-1] == pytest.approx(CFG.max_linear)
    assert all(s >= CFG.min_linear for s in speeds[:-1])


def test_blind_zone_ignores_unknown_but_not_occupied():
    g = grid(UNKNOWN)
    paint(g, 0.3, 4.0, -0.9, 0.9, FREE)            # a corridor seen from 0.3 m on
    assert planned(g).linear == pytest.approx(CFG.max_linear)
    paint(g, 0.25, 0.3, -0.05, 0.05, OCCUPIED)      # something right in front of the bumper
    assert planned(g).mode == 'rotate'


def test_robot_already_inside_the_margin_may_leave_but_not_approach():
    g = grid()
    paint(g, 0.0, 4.0, 0.21, 0.35, OCCUPIED)        # a wall 0.2 m to the left, along x
    d = DriverLogic()
    d.set_grid(g, LAYOUT)
    here = float(d.clearance_map.at(0.0, 0.0))
    assert CFG.robot_radius < here < CFG.inflated_radius
    p = d.plan()
    assert p.mode == 'drive' and p.angular <= 0.0


def test_motion_since_the_image_is_accounted_for():
    d = DriverLogic()
    d.set_grid(wall_grid(1.5), LAYOUT)
    fresh = d.plan(grid_age=0.0).ahead_distance
    d.linear = 0.3
    late = d.plan(grid_age=0.5).ahead_distance
    assert late == pytest.approx(fresh - 0.15, abs=0.03)


def test_grid_layout_is_respected():
    # The same world in a grid centred on the robot gives the same decision.
    spec = GridSpec(width=6.0, height=6.0, origin=(-3.0, -3.0))
    g = grid(spec=spec)
    paint(g, -3, 0.0, -3, 3, UNKNOWN, spec)
    paint(g, 0.7, 1.1, -0.05, 0.6, OCCUPIED, spec)
    a = planned(g, layout=spec, teach=False)
    b = planned(paint(grid(), 0.7, 1.1, -0.05, 0.6, OCCUPIED), teach=False)
    assert a.curvature == pytest.approx(b.curvature)
    assert a.linear == pytest.approx(b.linear)
    # A grid rotated by 90 degrees (its x axis along base +y) with the wall on its -y side,
    # i.e. ahead of the robot.
    rot = GridSpec.of_cells(0.05, SPEC.nx, SPEC.ny, (2.0, -2.0), math.pi / 2)
    g = grid()
    xs, ys = SPEC.cell_centers()
    gy = ys - SPEC.origin[1]                        # grid-frame y from the corner
    g[gy <= 2.0 - 0.6] = OCCUPIED                   # base x = 2 - gy >= 0.6
    p = planned(g, layout=rot, teach=False)
    assert p.ahead_distance <= 0.6 - CFG.inflated_radius + 0.05


def test_outputs_never_exceed_limits():
    rng = np.random.default_rng(0)
    configs = [CFG, DriverConfig(max_linear=0.46, max_angular=1.9, rotate_speed=1.9),
               DriverConfig(max_linear=0.1, min_linear=0.02, max_angular=0.3,
                            rotate_speed=0.3, max_linear_accel=5.0, max_angular_accel=20.0)]
    for cfg in configs:
        d = DriverLogic(cfg)
        v0 = w0 = 0.0
        for i in range(300):
            if i % 5 == 0:
                g = rng.choice(np.array([FREE, OCCUPIED, UNKNOWN], dtype=np.int8),
                               size=SPEC.shape, p=[0.9, 0.05, 0.05])
                if i % 3 == 0:
                    g[:] = FREE
                d.set_grid(g, LAYOUT)
            dt = float(rng.uniform(0.01, 0.2))
            v, w = d.step(dt, grid_age=float(rng.uniform(0, 0.5)))
            assert 0.0 <= v <= cfg.max_linear + 1e-12
            assert abs(w) <= cfg.max_angular + 1e-12
            assert v - v0 <= cfg.max_linear_accel * dt + 1e-9
            assert v0 - v <= cfg.max_linear_decel * dt + 1e-9
            assert abs(w - w0) <= cfg.max_angular_accel * dt + 1e-9
            v0, w0 = v, w


def test_stop_is_immediate_and_no_grid_means_no_motion():
    d = DriverLogic()
    assert d.step(0.05) == (0.0, 0.0)
    d.set_grid(grid(), LAYOUT)
    run_to_steady(d)
    assert d.linear > 0
    assert d.stop() == (0.0, 0.0) and (d.linear, d.angular) == (0.0, 0.0)


def test_config_is_validated():
    for bad in ({'slow_distance': 0.05}, {'resume_distance': 0.05},
                {'lookahead': 0.3}, {'max_linear': -1.0}, {'robot_radius': 0.0},
                {'rotate_speed': 2.0}, {'occupied_threshold': 0}, {'num_arcs': 0},
                {'max_curvature': float('nan')}, {'memory_range': 0.0}):
        with pytest.raises(ValueError):
            DriverConfig(**bad)
    assert CFG.with_values(max_linear=0.2).max_linear == 0.2
    # min_linear above max_linear just means max_linear everywhere.
    slow = DriverConfig(max_linear=0.02, min_linear=0.05)
    assert planned(wall_grid(0.9), slow).linear == pytest.approx(0.02)


def test_geometry_helpers():
    x, y = arc_points(0.0, [0.0, 1.0])
    np.testing.assert_allclose([x[1], y[1]], [1.0, 0.0])
    x, y = arc_points(1.0, [math.pi / 2])             # quarter circle of radius 1, to the left
    np.testing.assert_allclose([x[0], y[0]], [1.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(pose_after(0.2, 0.0, 2.0), (0.4, 0.0, 0.0))
    np.testing.assert_allclose(pose_after(1.0, 1.0, math.pi), (0.0, 2.0, math.pi), atol=1e-12)
    m = ClearanceMap(paint(grid(), 0.97, 1.03, -2, 2, OCCUPIED), LAYOUT, CFG)
    # A lower bound of the true distance to the occupied cells' far edge (x = 1.05), at most
    # one cell diagonal below it.
    assert 0.95 - 0.05 * math.sqrt(2) - 1e-9 <= float(m.at(2.0, 0.0)) <= 0.95
    assert float(m.at(100.0, 0.0)) == 0.0


def test_obstacles_that_leave_the_view_are_remembered_with_odometry():
    # An obstacle ahead-left, in view; then the robot drives 0.2 m on and it is beside the
    # bumper, below the image's lower edge and inside the blind zone.
    first = seen(paint(grid(), 0.45, 0.5, 0.15, 0.2, OCCUPIED))
    later = seen(grid())

    forgetful = DriverLogic()
    forgetful.set_grid(first, LAYOUT)
    forgetful.set_grid(later, LAYOUT)
    assert forgetful.plan().ahead_distance > 1.0          # it would drive into it

    # Remembered from its first sighting (the default waits for three; see
    # test_memory_min_sightings_draws_only_cells_seen_occupied_that_often).
    once = DriverConfig(memory_min_sightings=1)
    d = DriverLogic(once)
    d.set_grid(first, LAYOUT, pose=(1.0, 2.0, 0.0), stamp=0.0)
    d.set_grid(later, LAYOUT, pose=(1.2, 2.0, 0.0), stamp=0.5)
    assert d.plan().ahead_distance < 0.1
    assert len(d.memory) >= 1
    # Seen from a turned robot the memory lands at the same place in the world.
    d2 = DriverLogic(once)
    d2.set_grid(first, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    d2.set_grid(seen(grid()), LAYOUT, pose=(0.0, 0.0, -0.5), stamp=0.5)
    np.testing.assert_allclose(d2.memory, d.memory - [1.0, 2.0], atol=1e-9)
    # Grids that show the cell free do not clear it (by default); age does.
    shows_free = paint(seen(grid()), 0.0, 1.0, -0.5, 0.5, FREE)
    for i in range(5):
        d.set_grid(shows_free, LAYOUT, pose=(1.0, 2.0, 0.0), stamp=1.0 + i)
    assert len(d.memory) >= 1
    d.set_grid(shows_free, LAYOUT, pose=(1.0, 2.0, 0.0), stamp=11.0)
    assert len(d.memory) == 0
    # memory_free_hits: forgotten after that many free sightings, and far ones are dropped.
    d3 = DriverLogic(DriverConfig(memory_free_hits=2, memory_min_sightings=1))
    d3.set_grid(first, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    d3.set_grid(shows_free, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.1)
    assert len(d3.memory) >= 1
    d3.set_grid(shows_free, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.2)
    assert len(d3.memory) == 0
    d2.set_grid(seen(grid()), LAYOUT, pose=(5.0, 0.0, -0.5), stamp=1.0)
    assert len(d2.memory) == 0


def test_memory_free_min_range_counts_only_free_sightings_from_far_enough():
    """A cell shown free from close by (a box face taken for floor) stays remembered."""
    first = seen(paint(grid(), 0.45, 0.5, 0.15, 0.2, OCCUPIED))   # about 0.5 m ahead-left
    shows_free = paint(seen(grid()), 0.0, 1.0, -0.5, 0.5, FREE)
    cfg = DriverConfig(memory_free_hits=2, memory_free_min_range=0.8, memory_min_sightings=1)
    close = DriverLogic(cfg)
    close.set_grid(first, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    for i in range(5):   # shown free five times from where it is 0.5 m away: kept
        close.set_grid(shows_free, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.1 * (i + 1))
    assert len(close.memory) >= 1
    # From 0.4 m further back the cell is 0.9 m away: two free sightings forget it.
    far = paint(seen(grid()), 0.0, 2.0, -0.5, 0.5, FREE)
    close.set_grid(far, LAYOUT, pose=(-0.4, 0.0, 0.0), stamp=0.6)
    assert len(close.memory) >= 1
    close.set_grid(far, LAYOUT, pose=(-0.4, 0.0, 0.0), stamp=0.7)
    assert len(close.memory) == 0
    with pytest.raises(ValueError, match='memory_free_min_range'):
        DriverConfig(memory_free_min_range=-0.1)


def test_memory_min_sightings_draws_only_cells_seen_occupied_that_often():
    """A one-frame speck is not remembered; an obstacle seen in two grids is."""
    speck = seen(paint(grid(), 0.45, 0.5, 0.15, 0.2, OCCUPIED))   # about 0.5 m ahead-left
    empty = seen(grid())
    # (no frontier layer, whose floor map also keeps blocked floor near the robot)
    cfg = DriverConfig(memory_min_sightings=2, frontier_weight=0.0)
    once = DriverLogic(cfg)
    once.set_grid(speck, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    assert len(once.memory) == 0
    once.set_grid(empty, LAYOUT, pose=(0.2, 0.0, 0.0), stamp=0.5)
    assert len(once.memory) == 0          # out of view and never confirmed: gone
    twice = DriverLogic(cfg)
    twice.set_grid(speck, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    twice.set_grid(speck, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.1)
    assert len(twice.memory) >= 1
    # Two sightings from poses 0.1 m apart land in the same odometry cells.
    moved = seen(paint(grid(), 0.35, 0.4, 0.15, 0.2, OCCUPIED))
    assert (moved == OCCUPIED).any()
    twice_moving = DriverLogic(cfg)
    twice_moving.set_grid(speck, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    twice_moving.set_grid(moved, LAYOUT, pose=(0.1, 0.0, 0.0), stamp=0.1)
    confirmed = twice_moving.memory
    assert len(confirmed) >= 1
    # ... and block once the obstacle left the view, as with a single sighting.
    twice_moving.set_grid(empty, LAYOUT, pose=(0.4, 0.0, 0.0), stamp=0.2)
    single = DriverLogic(DriverConfig(frontier_weight=0.0, memory_min_sightings=1))
    single.set_grid(speck, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.0)
    single.set_grid(moved, LAYOUT, pose=(0.1, 0.0, 0.0), stamp=0.1)
    single.set_grid(empty, LAYOUT, pose=(0.4, 0.0, 0.0), stamp=0.2)
    assert twice_moving.plan().ahead_distance == pytest.approx(single.plan().ahead_distance)
    assert once.plan().ahead_distance > single.plan().ahead_distance
    # The default waits for three sightings.
    assert DriverConfig().memory_min_sightings == 3
    default = DriverLogic(DriverConfig(frontier_weight=0.0))
    for i in range(3):
        assert len(default.memory) == 0
        default.set_grid(speck, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=0.1 * i)
    assert len(default.memory) >= 1
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match='memory_min_sightings'):
            DriverConfig(memory_min_sightings=bad)


def test_odometry_motion_replaces_the_command_estimate():
    d = DriverLogic()
    d.set_grid(wall_grid(1.5), LAYOUT)
    fresh = d.plan().ahead_distance
    assert d.plan(grid_age=0.5, motion=(0.2, 0.0, 0.0)).ahead_distance == pytest.approx(
        fresh - 0.2, abs=0.03)


def test_escape_turns_in_place_by_the_angle_first():
    d = DriverLogic()
    d.set_grid(grid(), LAYOUT)
    d.escape(math.pi / 2)
    turned, steps = 0.0, 0
    while d.escaping and steps < 400:
        v, w = d.step(0.05)
        assert v == 0.0
        turned += abs(w) * 0.05
        steps += 1
    # At least the angle; the turn is counted on the command, which lags it by a step or two.
    assert math.pi / 2 - 0.01 <= turned <= math.pi / 2 + 2 * d.config.rotate_speed * 0.05
    assert run_to_steady(d)[0] > 0.2               # then it drives on the open grid


# -- recovery and exploration (odometry: a pose with each grid, the motion since it) --------

def drive(d, pose, world, steps, dt=0.05, t0=0.0, log=None):
    """
    Close the loop on a unicycle: ``world(pose)`` gives the grid seen at ``pose``.

    Each step the grid comes with its odometry pose (the pose now, so no motion since);
    returns the pose after ``steps`` and appends (mode, reason, v, w, x, y, yaw) to ``log``.
    """
    x, y, yaw = pose
    for i in range(steps):
        d.set_grid(world((x, y, yaw)), LAYOUT, pose=(x, y, yaw), stamp=t0 + i * dt)
        v, w = d.step(dt, motion=(0.0, 0.0, 0.0))
        if log is not None:
            log.append((d.last_plan.mode, d.last_plan.reason, v, w, x, y, yaw))
        x += v * math.cos(yaw) * dt
        y += v * math.sin(yaw) * dt
        yaw += w * dt
    return x, y, yaw


def open_world(pose):
    return seen(grid())


def dead_end_world(pose):
    """Wherever the robot looks, no floor is seen beyond 0.3 m: no path anywhere."""
    return wall_grid(0.3, UNKNOWN)


def modes(log):
    """Return the modes of a log, repeats dropped: e.g. ['drive', 'rotate', 'backup']."""
    out = []
    for m in log:
        if not out or out[-1] != m[0]:
            out.append(m[0])
    return out


def test_dead_end_backs_up_along_the_path_then_turns_then_drives():
    cfg = DriverConfig(recovery_after=2.0)
    d = DriverLogic(cfg)
    pose = drive(d, (0.0, 0.0, 0.0), open_world, 40)            # ~0.45 m along +x
    assert pose[0] > 0.4 and d.last_plan.mode == 'drive'
    log = []
    pose = drive(d, pose, dead_end_world, 300, t0=2.0, log=log)
    assert modes(log)[:3] == ['rotate', 'backup', 'rotate']
    first_backup = next(i for i, m in enumerate(log) if m[0] == 'backup')
    stuck_x = log[first_backup][4]
    # It turned in place for recovery_after seconds first (give or take a step).
    assert first_backup * 0.05 == pytest.approx(cfg.recovery_after, abs=0.11)
    backup = [m for m in log if m[0] == 'backup']
    assert all(m[1] == 'dead end' for m in backup)
    assert all(m[2] <= 0.0 for m in backup) and min(m[2] for m in backup) < -0.05
    assert all(m[2] >= -cfg.backup_speed - 1e-12 for m in log)
    # Back along the path it came (the x axis): backup_distance, never off the path.
    end = next(i for i in range(first_backup, len(log)) if log[i][0] != 'backup')
    x_end = log[end][4]
    assert stuck_x - x_end == pytest.approx(cfg.backup_distance, abs=0.03)
    assert max(abs(m[5]) for m in log) <= cfg.backup_tolerance
    # Then it turned in place (at least recovery_turn) before anything else.
    turn = log[end:]
    first_other = next((i for i, m in enumerate(turn) if m[0] != 'rotate'), len(turn))
    assert sum(abs(m[3]) * 0.05 for m in turn[:first_other]) >= cfg.recovery_turn - 0.05
    assert d.recoveries >= 1
    # Floor opens up: it drives on (after the recovery under way, if any).
    log = []
    drive(d, pose, open_world, 300, t0=20.0, log=log)
    assert log[-1][0] == 'drive' and log[-1][2] > 0.1


def test_without_recovery_after_a_dead_end_only_turns():
    d = DriverLogic(DriverConfig(recovery_after=0.0))
    pose = drive(d, (0.0, 0.0, 0.0), open_world, 40)
    log = []
    drive(d, pose, dead_end_world, 300, t0=2.0, log=log)
    assert modes(log) == ['rotate'] and all(m[2] >= 0.0 for m in log)
    assert log[-1][2] == 0.0 and d.recoveries == 0


def test_a_dead_end_without_a_path_driven_turns_on_and_takes_the_first_opening():
    d = DriverLogic(DriverConfig(recovery_after=2.0))
    d.set_grid(seen(grid()), LAYOUT)                  # the cells the camera sees
    d.set_grid(wall_grid(0.3, UNKNOWN), LAYOUT)       # no odometry: no path driven
    for _ in range(45):                                 # past recovery_after
        assert d.step(0.05)[0] == 0.0
    assert d.last_plan.mode == 'rotate' and d.recoveries == 0
    d.set_grid(grid(), LAYOUT)
    # No forced turn: it drives as soon as a path opens.
    assert d.plan().mode == 'drive'


def test_hazard_backs_up_then_turns_then_drives():
    cfg = DriverConfig()
    d = DriverLogic(cfg)
    pose = drive(d, (0.0, 0.0, 0.0), open_world, 60)
    hit_x = pose[0]
    d.stop()                                      # the bumper: a safety stop...
    d.escape(math.pi / 2)                         # ...then, once it clears, the escape
    assert d.escaping
    log = []
    pose = drive(d, pose, open_world, 200, t0=5.0, log=log)
    assert modes(log)[:3] == ['backup', 'rotate', 'drive']
    backup = [m for m in log if m[0] == 'backup']
    assert all(m[1] == 'hazard' for m in backup) and min(m[2] for m in backup) < -0.05
    end = len(backup)
    assert hit_x - log[end][4] == pytest.approx(cfg.backup_distance, abs=0.03)
    turn = [m for m in log[end:] if m[0] == 'rotate']
    assert sum(abs(m[3]) * 0.05 for m in turn) == pytest.approx(math.pi / 2, abs=0.1)
    assert not d.escaping


def test_backup_never_leaves_the_path_driven():
    cfg = DriverConfig()
    # A path of 0.12 m only: the backup stops at its start, short of backup_distance.
    d = DriverLogic(cfg)
    start = (1.0, 2.0, 0.5)
    pose = drive(d, start, open_world, 12)
    driven = math.hypot(pose[0] - start[0], pose[1] - start[1])
    assert 0.05 < driven < 0.2
    d.stop()
    d.escape(0.0)
    log = []
    drive(d, pose, open_world, 100, t0=5.0, log=log)
    assert log[0][0] == 'backup'
    back = [m for m in log if m[0] == 'backup']
    # Measured along the heading it came with: never behind the path's first point.
    along = [(m[4] - start[0]) * math.cos(0.5) + (m[5] - start[1]) * math.sin(0.5)
             for m in log]
    assert min(along) >= -0.01
    assert len(back) < 100
    # Moved off its path (odometry jumps 0.3 m sideways): no backup at all, only the turn.
    d = DriverLogic(cfg)
    pose = drive(d, (0.0, 0.0, 0.0), open_world, 40)
    d.stop()
    d.escape(0.5)
    log = []
    drive(d, (pose[0], pose[1] + 0.3, pose[2]), open_world, 40, t0=5.0, log=log)
    assert all(m[0] != 'backup' and m[2] >= 0.0 for m in log)
    assert log[0][0] == 'rotate'
    # Without odometry there is no path driven: the old escape, a turn in place.
    d = DriverLogic(cfg)
    d.set_grid(grid(), LAYOUT)
    run_to_steady(d)
    d.stop()
    d.escape(0.5)
    assert all(d.step(0.05)[0] >= 0.0 for _ in range(40))
    assert len(d.trail) == 0


def test_the_path_driven_is_bounded_and_starts_afresh_after_a_jump():
    d = DriverLogic()
    pose = drive(d, (0.0, 0.0, 0.0), open_world, 40)
    n = len(d.trail)
    assert n > 10 and np.all(np.abs(d.trail[:, 1]) < 1e-9)
    assert np.all(np.diff(d.trail[:, 0]) >= 0.02 - 1e-9)
    drive(d, (pose[0] + 1.0, pose[1], pose[2]), open_world, 1, t0=5.0)
    assert len(d.trail) == 1


def _two_ways_grid():
    """Return a grid with an obstacle ahead and the same open floor to its left and right."""
    g = paint(grid(), 1.0, 1.4, -0.25, 0.25, OCCUPIED)
    assert np.array_equal(g, g[::-1])            # mirror-symmetric about y = 0
    return g


@pytest.mark.parametrize('visited_side', [1, -1], ids=['left_visited', 'right_visited'])
def test_exploration_prefers_floor_not_yet_visited(visited_side):
    g = _two_ways_grid()
    cfg = DriverConfig()
    d = DriverLogic(cfg)
    # Earlier, the robot drove along one side (in odometry: y = visited_side * 0.6).
    x, y = 0.3, visited_side * 0.6
    for i in range(40):
        d.set_grid(grid(), LAYOUT, pose=(x + 0.05 * i, y, 0.0), stamp=0.05 * i)
        d.step(0.05, motion=(0.0, 0.0, 0.0))
    assert len(d.visited) > 20
    d = _with_memory_of(d, cfg)
    d.set_grid(g, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=10.0)
    p = d.plan(motion=(0.0, 0.0, 0.0))
    assert p.mode == 'drive'
    assert p.curvature == pytest.approx(-visited_side * abs(p.curvature))
    assert p.curvature != 0.0
    # Both ways have the same room and length: only the memory of the floor decides.
    ks = np.array([p.curvature, -p.curvature])
    lengths, spare = d.free_lengths(ks)
    assert lengths[0] == pytest.approx(lengths[1]) and spare[0] == pytest.approx(spare[1])
    frac = d.unvisited_fractions(ks, lengths)
    assert frac[0] > frac[1]


def _with_memory_of(d, cfg):
    """Return a fresh driver (at the odometry origin) that knows ``d``'s visited floor only."""
    fresh = DriverLogic(cfg)
    fresh._visited = dict(d._visited)
    return fresh


def test_exploration_never_trades_room_beside_the_path():
    # Visited floor on the right, a wall close beside the left arcs: the roomier right wins.
    g = _two_ways_grid()
    paint(g, 0.3, 1.5, 0.75, 0.85, OCCUPIED)
    cfg = DriverConfig(explore_weight=2.0)
    d = DriverLogic(cfg)
    for i in range(40):
        d.set_grid(grid(), LAYOUT, pose=(0.3 + 0.05 * i, -0.6, 0.0), stamp=0.05 * i)
        d.step(0.05, motion=(0.0, 0.0, 0.0))
    walled = _with_memory_of(d, cfg)
    walled.set_grid(g, LAYOUT, pose=(0.0, 0.0, 0.0), stamp=10.0)
    p = walled.plan(motion=(0.0, 0.0, 0.0))
    assert p.mode == 'drive' and p.curvature < 0.0
    # Without the wall the same memory sends it left.
    d = _with_memory_of(d, cfg)
    d.set_grid(_two_ways_grid(), LAYOUT, pose=(0.0, 0.0, 0.0), stamp=10.0)
    assert d.plan(motion=(0.0, 0.0, 0.0)).curvature > 0.0


def test_clearance_is_a_tight_lower_bound_of_the_distance_to_blocked_cells():
    """At any point: at most the true distance to the blocked squares, and at most 0.04 m less."""
    rng = np.random.default_rng(3)
    g = grid()
    xs, ys = SPEC.cell_centers()
    g[rng.random(g.shape) < 0.01] = OCCUPIED
    m = ClearanceMap(g, LAYOUT, CFG)
    half = 0.5 * SPEC.resolution
    cx, cy = xs[g == OCCUPIED], ys[g == OCCUPIED]
    px = rng.uniform(0.5, 3.5, 2000)
    py = rng.uniform(-1.5, 1.5, 2000)
    # The exact distance from each point to the nearest occupied square.
    dx = np.maximum(np.abs(px[:, None] - cx[None, :]) - half, 0.0)
    dy = np.maximum(np.abs(py[:, None] - cy[None, :]) - half, 0.0)
    true = np.hypot(dx, dy).min(axis=1)
    got = m.at(px, py)
    assert np.all(got <= true + 1e-6)
    assert np.all(got >= true - 0.04)
    # The bound gives away much less than a cell's diagonal (0.071 m) on average.
    assert float(np.mean(true - got)) < 0.03


@pytest.mark.parametrize('resolution', [0.05, np.float32(0.05)], ids=['float64', 'float32'])
def test_a_drive_plan_always_moves(resolution):
    """
    Drive or turn, never stand in drive: walls swept through the stop distance.

    With the OccupancyGrid's float32 resolution, an arc one rounding error longer than
    stop_distance once gave a speed of 5e-5 m/s, and the robot stood still for minutes.
    """
    spec = GridSpec.of_cells(resolution, SPEC.nx, SPEC.ny, SPEC.origin, 0.0)
    plans = []
    for wall in np.arange(0.25, 0.45, 0.002):
        p = planned(wall_grid(float(wall), spec=spec), layout=spec, teach=False)
        plans.append(p)
        assert p.mode == 'rotate' or p.linear >= 0.5 * CFG.min_linear, (wall, p)
    assert {p.mode for p in plans} == {'rotate', 'drive'}
