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

"""The driver's frontier layer: the floor map, geodesic targets, and the loop in toy worlds."""

from dataclasses import replace
import math

from freespace_seg.driving.driver_logic import _visit_keys, DriverConfig, DriverLogic
from freespace_seg.driving.exploration import FloorMap, geodesic
from freespace_seg.ground.grid import FREE, OCCUPIED, UNKNOWN
import numpy as np
import pytest
from support.floor_world import FloorWorld, run, SPEC

OLD = DriverConfig(frontier_weight=0.0)        # the driver before the frontier layer
NEW = DriverConfig()
#: the frontier layer without narrow or tight paths (the defaults until 2026-12-07)
PLAIN = DriverConfig(tight_path_speed=0.0, frontier_narrow_room=0.15)
TIGHT = replace(PLAIN, tight_path_speed=0.15)   # tight paths on, no narrow plan


def test_geodesic_distances_go_around_walls():
    passable = np.ones((9, 9), dtype=bool)
    passable[1:9, 4] = False                       # a wall with a way round at the top row
    seeds = np.full(passable.shape, np.inf, dtype=np.float32)
    seeds[8, 0] = 0.0
    dist = geodesic(passable, seeds)
    assert dist[8, 1] == pytest.approx(1.0)
    assert dist[7, 1] == pytest.approx(math.sqrt(2.0), abs=1e-6)
    assert np.all(np.isinf(dist[1:9, 4]))
    # Straight across it is 8 cells; round the wall's end (row 0) about 2 x 8.
    assert dist[8, 8] > 14.0
    # A closed wall: nothing beyond it is reachable.
    passable[0, 4] = False
    assert np.all(np.isinf(geodesic(passable, seeds)[:, 5:]))


def _floor(size=80):
    return FloorMap(size=size, clearance=0.22, robot_radius=0.17)


def test_floor_map_keeps_seen_free_seen_blocked_and_swept_in_odometry():
    f = _floor()
    g = np.full(SPEC.shape, UNKNOWN, dtype=np.int8)
    xs, ys = SPEC.cell_centers()
    g[(xs >= 0.5) & (xs < 1.0) & (np.abs(ys) < 0.5)] = FREE
    g[(xs >= 1.0) & (xs < 1.1) & (np.abs(ys) < 0.5)] = OCCUPIED
    # Robot at odometry (2, 3) facing +y: the grid's x axis is odometry +y.
    f.add_grid(g, SPEC, (2.0, 3.0, math.pi / 2))

    def state(x, y):
        row, col = (int(v) for v in f._cell(x, y))
        return f.free[row, col], f.blocked[row, col], f.seen[row, col]

    assert state(2.0, 3.75) == (True, False, True)
    assert state(2.0, 4.05) == (False, True, True)
    assert state(2.0, 4.5) == (False, False, False)          # never seen
    assert state(3.0, 3.0) == (False, False, False)
    # Three free sightings of a blocked cell make it free again, one does not.
    free = np.full(SPEC.shape, UNKNOWN, dtype=np.int8)
    free[(xs >= 1.0) & (xs < 1.1) & (np.abs(ys) < 0.5)] = FREE
    f.add_grid(free, SPEC, (2.0, 3.0, math.pi / 2))
    assert state(2.0, 4.05)[1]
    for _ in range(2):
        f.add_grid(free, SPEC, (2.0, 3.0, math.pi / 2))
    assert state(2.0, 4.05) == (True, False, True)
    # Swept floor is free and seen, whatever a grid said.
    f.sweep(2.05, 4.05)
    assert state(2.05, 4.05) == (True, False, True)
    assert f.swept.sum() == 9                      # cell centres within 0.17 m: a 3 x 3 block


def test_floor_map_memory_is_a_bounded_window_that_follows_the_robot():
    f = _floor(size=40)                            # 4 m x 4 m
    g = np.full(SPEC.shape, FREE, dtype=np.int8)
    shapes = set()
    for i in range(60):                            # 30 m along +x
        x = 0.5 * i
        f.add_grid(g, SPEC, (x, 0.0, 0.0))
        f.sweep(x, 0.0)
        shapes.add((f.seen.shape, f.vote.shape, f.swept.shape))
        row, col = (int(v) for v in f._cell(x, 0.0))
        assert 10 <= row < 30 and 10 <= col < 30    # the robot stays away from the edges
    assert shapes == {((40, 40), (40, 40), (40, 40))}
    # What lies behind the window is forgotten.
    row, col = f._cell(0.0, 0.0)
    assert col < 0
    # The give-up list is bounded too.
    for i in range(200):
        f.give_up(float(i), 0.0, until=1e9)
    assert len(f._give_up) <= 64


def _room_map(f, walls=(), free_box=(0.0, 6.0, 0.0, 4.0)):
    """Fill ``f`` with seen-free floor in ``free_box`` (odometry), walled, and ``walls``."""
    x0, x1, y0, y1 = free_box
    f.follow(0.5 * (x0 + x1), 0.5 * (y0 + y1))
    rows, cols = np.mgrid[0:f.size, 0:f.size]
    cx, cy = f.cell_center(rows, cols)
    inside = (cx > x0) & (cx < x1) & (cy > y0) & (cy < y1)
    ring = (cx > x0 - 0.1) & (cx < x1 + 0.1) & (cy > y0 - 0.1) & (cy < y1 + 0.1) & ~inside
    f.seen[inside | ring] = True
    f.vote[inside] = 2
    f.vote[ring] = -4
    for wx0, wx1, wy0, wy1 in walls:
        wall = (cx > wx0) & (cx < wx1) & (cy > wy0) & (cy < wy1)
        f.seen[wall] = True
        f.vote[wall] = -4
    return cx, cy


def test_target_is_the_nearest_reachable_new_floor_by_path_not_by_line():
    f = _floor()
    # A wall across the room at y = 2 with a door at its right end (x 5..6); the robot below
    # it, at the left, facing the wall. Everything above the wall and the right part below
    # is new floor.
    cx, cy = _room_map(f, walls=[(0.0, 5.0, 1.9, 2.1)])
    left = (cx < 3.0) & (cy < 1.9)
    f.swept[left] = True                           # the robot swept the lower left part
    f.vote[left] = 4
    target = f.plan(1.0, 1.0, heading=math.pi / 2, turn_cost=0.5)
    assert target is not None
    # The floor just above the wall is nearer as the crow flies, and ahead, but the lower
    # right part is nearer by path: that one.
    assert target[1] < 1.9 and target[0] > 3.0
    assert f.robot_distance == pytest.approx(math.hypot(target[0] - 1.0, target[1] - 1.0),
                                             abs=0.25)
    # The distance field leads there: it falls along the path.
    assert f.distance_at(2.5, 1.0) < f.distance_at(1.5, 1.0) < f.distance_at(0.5, 1.0)
    # With the whole lower half swept, the upper half is the goal, through the door.
    lower = cy < 2.0                               # the door's lower half too
    f.swept[lower] = True
    f.vote[lower] = 4
    target = f.plan(1.0, 1.0, keep=False, heading=math.pi / 2, turn_cost=0.5)
    assert target is not None and target[1] > 2.0
    assert f.robot_distance > 4.0                  # round by the door at x > 5
    # A door narrower than the planning clearance: no way up, no target.
    f.vote[(cx > 5.0) & (cx < 5.7) & (cy > 1.9) & (cy < 2.1)] = -4
    assert f.plan(1.0, 1.0, keep=False) is None


def test_a_door_the_centre_passed_through_is_a_tight_path_when_nothing_else_is_reachable():
    f = FloorMap(size=80, clearance=0.37, robot_radius=0.17)      # the driver's clearance
    # A wall across the room at y = 2 with a door of 0.5 m (x 5.0..5.5): narrower than the
    # planning clearance allows. The lower half swept: the new floor is above the wall.
    cx, cy = _room_map(f, walls=[(0.0, 5.0, 1.9, 2.1), (5.5, 6.0, 1.9, 2.1)])
    lower = cy < 1.9
    f.swept[lower] = True
    f.vote[lower] = 4
    assert f.plan(1.0, 1.0, keep=False, tight=True) is None and not f.tight
    # The robot's centre went up through the door and back: now that line is a path.
    for y in np.arange(1.0, 2.6, 0.05):
        f.sweep(5.25, y)
    assert f.plan(4.5, 1.0, keep=False) is None                  # only with tight paths
    target = f.plan(4.5, 1.0, keep=False, heading=0.0, turn_cost=0.5, tight=True)
    assert target is not None and target[1] > 2.0 and f.tight
    pts, tight = f.path(4.5, 1.0, 3.0)
    assert len(pts) >= 5 and np.all(np.diff([f.distance_at(*p) for p in pts]) < 0)
    # The tight cells are the door's (the centre's line where the wall is near).
    assert tight.any() and np.all(np.abs(pts[tight, 1] - 2.0) < 0.45)
    assert np.all(np.abs(pts[tight, 0] - 5.25) < 0.1)
    # It stays tight while it is kept; a goal reachable at the clearance wins again.
    assert f.plan(4.5, 1.0, keep=True) == target and f.tight
    f.vote[(cy > 1.9) & (cy < 2.1) & (cx > 1.0) & (cx < 2.0)] = 2      # a wide door
    f.seen[(cy > 1.9) & (cy < 2.1) & (cx > 1.0) & (cx < 2.0)] = True
    f.give_up(*target, until=10.0)
    assert f.plan(1.5, 1.0, keep=False, heading=math.pi / 2, turn_cost=0.5,
                  tight=True) is not None
    assert not f.tight


def test_a_door_narrower_than_the_clearance_is_planned_through_at_the_narrow_clearance():
    # A wall across the room at y = 2 with a door of 0.55 m (x 5.0..5.55): blocked cell
    # centres 0.7 m apart, so no cell of the door keeps the driver's 0.37 m, but 0.25 m.
    def door_map(narrow):
        f = FloorMap(size=80, clearance=0.37, robot_radius=0.17, narrow_clearance=narrow)
        cx, cy = _room_map(f, walls=[(0.0, 5.0, 1.9, 2.1), (5.55, 6.0, 1.9, 2.1)])
        lower = cy < 1.9
        f.swept[lower] = True
        f.vote[lower] = 4
        return f

    assert door_map(0.0).plan(1.0, 1.0, keep=False, tight=True) is None
    f = door_map(0.25)
    target = f.plan(1.0, 1.0, keep=False, heading=0.0, turn_cost=0.5)
    assert target is not None and target[1] > 2.0
    assert f.target_clearance == pytest.approx(0.25) and not f.tight
    assert 4.0 < f.robot_distance < 6.0                # round by the door
    assert f.distance_at(5.25, 2.0) < f.distance_at(4.0, 1.0) < f.distance_at(2.0, 1.0)
    # Kept at the clearance it was planned with; a goal at the wide clearance wins again.
    assert f.plan(1.0, 1.0, keep=True) == target
    rows, cols = np.mgrid[0:f.size, 0:f.size]
    cx, cy = f.cell_center(rows, cols)
    door = (cy > 1.9) & (cy < 2.1) & (cx > 1.0) & (cx < 2.0)
    f.vote[door] = 2                                   # a wide door near the robot
    f.give_up(*target, until=10.0)
    assert f.plan(1.5, 1.0, keep=False, heading=math.pi / 2, turn_cost=0.5) is not None
    assert f.target_clearance == pytest.approx(0.37)
    with pytest.raises(ValueError):
        FloorMap(size=80, clearance=0.37, narrow_clearance=0.4)


def test_given_up_targets_are_skipped_until_their_time():
    f = _floor()
    _room_map(f)
    first = f.plan(1.0, 1.0, heading=0.0, turn_cost=0.5)
    f.give_up(*first, until=10.0)
    second = f.plan(1.0, 1.0, now=5.0, keep=False, heading=0.0, turn_cost=0.5)
    assert second is not None and math.dist(first, second) > 0.35
    assert f.plan(1.0, 1.0, now=11.0, keep=False, heading=0.0, turn_cost=0.5) == first


# -- the driver with the frontier layer ------------------------------------------------------

def _corridor_and_room():
    """Return a corridor 1 m wide along y = 0..1 with a door (x 2.6..3.3) to a room above."""
    return FloorWorld(4.0, 3.0).wall(0.0, 2.6, 1.0, 1.1).wall(3.3, 4.0, 1.0, 1.1)


def test_old_driver_loops_in_the_corridor_the_new_one_reaches_the_side_room():
    # The robot drives along the corridor past the door (seeing the room through it), then
    # the whole corridor counts as swept: the room is the only new floor. Before that the
    # corridor's own unswept corners are targets too, and where the robot turns decides
    # whether the door comes into view first (by chance, for some speed ramps).
    for ramp in (0.5, 1.0):                                     # slow_distance: default, before
        world = _corridor_and_room()
        d = DriverLogic(replace(NEW, slow_distance=ramp))
        r = run(world, (0.5, 0.5, 0.0), 8.0, logic=d)
        _swept(d, 0.0, 4.0, 0.0, 1.0)
        pose = tuple(r['path'][-1])
        assert 2.5 < pose[0] < 3.5 and pose[1] < 1.0
        r_new = run(world, pose, 30.0, logic=d)
        r_old = run(world, pose, 30.0, replace(OLD, slow_distance=ramp))
        assert r_new['collisions'] == 0 and r_old['collisions'] == 0
        # Without the frontier layer the robot drives up and down the corridor: the most
        # open way is along it, and the floor beyond the door never pulls it.
        assert np.all(r_old['path'][:, 1] < 1.0), ramp
        # With it, the seen floor beyond the door is the nearest new floor, and the robot
        # drives through the door into the room.
        assert np.max(r_new['path'][:, 1]) > 1.8, ramp
        assert d.frontier_give_ups == 0


def _pocket(door=0.45):
    """Return a room 5 m x 4 m, a pocket 1.3 m x 1 m in its corner, its door ``door`` m wide."""
    world = FloorWorld(5.0, 4.0)
    world.wall(0.0, 1.4, 1.0, 1.1)                  # the pocket: x 0..1.3, y 0..1.0
    world.wall(1.3, 1.4, 0.0, 0.3)
    world.wall(1.3, 1.4, 0.3 + door, 1.1)           # its door: y 0.3..0.3 + door, x 1.3
    return world


def _in_pocket(cfg, door, reach):
    """
    Return the world, a driver and its pose inside ``_pocket(door)``, its floor map filled.

    The whole room is seen free, the pocket swept, and every cell with a point within
    ``reach`` m (in x and y) of its centre on a wall seen blocked.
    """
    world = _pocket(door=door)
    d = DriverLogic(cfg)
    r = run(world, (0.6, 0.5, math.pi), 0.2, logic=d)
    f = d.floor_map
    _seen_free(f, 0.0, 5.0, 0.0, 4.0)
    rows, cols = np.mgrid[0:f.size, 0:f.size]
    cx, cy = f.cell_center(rows, cols)
    wall = np.zeros(cx.shape, dtype=bool)
    for ox in {-reach, reach}:
        for oy in {-reach, reach}:
            wall |= world.is_blocked(cx + ox, cy + oy)
    f.vote[wall] = -4
    _swept(d, 0.2, 1.1, 0.2, 0.8)
    return world, d, tuple(r['path'][-1])


def test_a_robot_leaves_a_pocket_through_the_tight_door_it_came_in_by():
    # The robot came into the pocket through its door (0.45 m: the arcs need 0.48 m): its
    # centre's line runs from the room through the door. All it can see inside is swept;
    # the room beyond is new floor.

    def start(cfg):
        world, d, pose = _in_pocket(cfg, door=0.45, reach=0.0)
        for x in np.arange(2.4, 0.55, -0.05):
            d.floor_map.sweep(x, 0.525)
        return world, d, pose

    world, d, pose = start(TIGHT)
    r = run(world, pose, 60.0, logic=d)
    assert r['collisions'] == 0
    out = np.flatnonzero(r['path'][:, 0] > 1.6)
    assert out.size, 'never left the pocket'
    assert 'drive (path)' in r['modes'] or 'rotate (path)' in r['modes']
    # Without tight paths it stays inside for the whole minute.
    world, d, pose = start(PLAIN)
    r = run(world, pose, 60.0, logic=d)
    assert r['collisions'] == 0 and np.max(r['path'][:, 0]) < 1.3


def test_a_robot_leaves_a_pocket_through_a_door_it_saw_but_never_passed():
    # The pocket of the test above with a door of 0.5 m (y 0.3..0.8), the robot placed
    # inside: no trail of its centre leads out. The door keeps no cell 0.37 m from the walls
    # (the planning clearance), but 0.25 m (frontier_narrow_room 0.03, the default).
    narrow = NEW

    def start(cfg):
        return _in_pocket(cfg, door=0.5, reach=0.04)  # any part of a cell on a wall

    world, d, pose = start(narrow)
    assert d.floor_map.plan(*pose[:2], keep=False, tight=True) is not None
    assert d.floor_map.narrow                   # only at the narrow clearance
    r = run(world, pose, 60.0, logic=d)
    assert r['collisions'] == 0
    assert np.max(r['path'][:, 0]) > 1.6, 'never left the pocket'
    # The door is followed as a path: its cells keep less than the clearance.
    assert 'drive (path)' in r['modes']
    # Without the narrow clearance no target lies beyond the door (the robot's centre never
    # passed it), so no path is followed: the arcs decide (this toy world's axis-aligned
    # 0.5 m door they may take; the closed loop's rooms have gaps they miss).
    world, d, pose = start(TIGHT)
    assert d.floor_map.plan(*pose[:2], keep=False, tight=True) is None
    r = run(world, pose, 60.0, logic=d)
    assert r['collisions'] == 0 and 'drive (path)' not in r['modes']


def _swept(d, x0, x1, y0, y1):
    """Let ``d`` remember the floor in the box as swept (both memories: arcs and targets)."""
    f = d.floor_map
    for x in np.arange(x0 + 0.05, x1, 0.1):
        for y in np.arange(y0 + 0.05, y1, 0.1):
            f.sweep(x, y)
            d._visited[int(_visit_keys(x, y))] = None
    d._visited_sorted = None


def _seen_free(f, x0, x1, y0, y1):
    rows, cols = np.mgrid[0:f.size, 0:f.size]
    cx, cy = f.cell_center(rows, cols)
    box = (cx > x0) & (cx < x1) & (cy > y0) & (cy < y1)
    f.seen[box] = True
    f.vote[box] = np.maximum(f.vote[box], 2)


def test_target_behind_the_robot_turns_it_in_place_towards_it():
    # The robot faces +x; all the floor ahead of it is swept, the new floor lies behind it.
    world = FloorWorld(6.0, 3.0)
    d = DriverLogic(NEW)
    r = run(world, (3.0, 1.5, 0.0), 0.5, logic=d)      # a grid and a pose: the map starts
    _seen_free(d.floor_map, 0.1, 5.9, 0.1, 2.9)
    _swept(d, 2.6, 5.9, 0.1, 2.9)
    old = DriverLogic(OLD)
    r_old = run(world, tuple(r['path'][-1]), 20.0, logic=old)
    r = run(world, tuple(r['path'][-1]), 3.0, logic=d)
    assert d.frontier_target is not None and d.frontier_target[0] < 2.6
    turning = [m for m in r['modes'] if m == 'rotate (frontier)']
    assert len(turning) > 10                      # half a second at least
    # Then it heads for the new floor and drives into it. The old driver never gets there
    # in 20 s: it drives on over the swept floor ahead, where the most open way is.
    r = run(world, tuple(r['path'][-1]), 22.0, logic=d)
    assert np.min(r['path'][:, 0]) < 2.0 and r['collisions'] == 0
    assert np.min(r_old['path'][:, 0]) > 2.6 and r_old['collisions'] == 0


def test_a_frontier_target_never_picks_an_arc_that_cannot_be_driven():
    """Random clutter and a target behind it: a drive plan always has room to drive."""
    rng = np.random.default_rng(7)
    xs, ys = SPEC.cell_centers()
    cfg = DriverConfig(frontier_weight=2.0)
    with_target = 0
    for trial in range(40):
        g = np.full(SPEC.shape, FREE, dtype=np.int8)
        for _ in range(rng.integers(1, 6)):
            cx, cy, r = rng.uniform(0.3, 1.5), rng.uniform(-1.0, 1.0), rng.uniform(0.05, 0.4)
            g[np.hypot(xs - cx, ys - cy) < r] = OCCUPIED
        g[(np.abs(np.arctan2(ys, xs)) > math.radians(40)) | (xs < 0.3)] = UNKNOWN
        d = DriverLogic(cfg)
        view = np.full(SPEC.shape, FREE, dtype=np.int8)
        view[(np.abs(np.arctan2(ys, xs)) > math.radians(40)) | (xs < 0.3)] = UNKNOWN
        d.set_grid(view, SPEC, pose=(0.0, 0.0, 0.0), stamp=0.0)   # what the camera sees
        # New floor beyond the clutter, and the floor up to it swept: a target.
        _seen_free(d.floor_map, -1.0, 4.0, -2.0, 2.0)
        _swept(d, -1.0, 1.6, -2.0, 2.0)
        d.set_grid(g, SPEC, pose=(0.0, 0.0, 0.0), stamp=0.05)
        for step in range(10):
            p = d.plan(motion=(0.0, 0.0, 0.0))
            if p.mode == 'drive':
                lengths, _ = d.free_lengths([p.curvature])
                assert p.free_distance == pytest.approx(lengths[0])
                assert p.free_distance > cfg.stop_distance, trial
                assert p.linear > 0.0
            d.step(0.05, motion=(0.0, 0.0, 0.0))
        with_target += d.frontier_target is not None
    assert with_target >= 30


def test_a_target_it_cannot_get_closer_to_is_given_up():
    cfg = DriverConfig(frontier_timeout=3.0, recovery_after=0.0)
    d = DriverLogic(cfg)
    d.set_grid(np.full(SPEC.shape, FREE, dtype=np.int8), SPEC, pose=(3.0, 1.5, 0.0), stamp=0.0)
    _seen_free(d.floor_map, 0.5, 5.5, 0.5, 2.5)
    _swept(d, 2.0, 5.5, 0.5, 2.5)
    # A path of seen floor to new floor at x < 2, but every grid now shows nothing free: the
    # robot turns in place and never gets closer.
    blocked = np.full(SPEC.shape, UNKNOWN, dtype=np.int8)
    targets = set()
    for i in range(int(8.0 / 0.05)):
        d.set_grid(blocked, SPEC, pose=(3.0, 1.5, 0.0), stamp=0.05 * (i + 1))
        d.step(0.05, motion=(0.0, 0.0, 0.0))
        assert d.last_plan.linear == 0.0
        if d.frontier_target is not None:
            targets.add(d.frontier_target)
    assert d.frontier_give_ups >= 1 and len(targets) >= 2


def test_frontier_config_is_validated_and_zero_weight_turns_it_off():
    with pytest.raises(ValueError):
        DriverConfig(frontier_map_size=5.0)           # < 4 x lookahead
    with pytest.raises(ValueError):
        DriverConfig(frontier_replan=0.0)
    with pytest.raises(ValueError):
        DriverConfig(frontier_weight=-1.0)
    with pytest.raises(ValueError):
        DriverConfig(tight_path_speed=-0.1)
    with pytest.raises(ValueError):
        DriverConfig(frontier_narrow_room=0.2)        # > the first clearance's 0.15 m
    d = DriverLogic(OLD)
    run(FloorWorld(3.0, 3.0), (1.0, 1.5, 0.0), 1.0, logic=d)
    assert d.floor_map is None and d.frontier_target is None
    # Switching it off at run time drops the map.
    d = DriverLogic(NEW)
    run(FloorWorld(3.0, 3.0), (1.0, 1.5, 0.0), 1.0, logic=d)
    assert d.floor_map is not None
    d.set_config(OLD)
    assert d.floor_map is None


@pytest.mark.parametrize('cfg', [OLD, NEW], ids=['old', 'new'])
def test_a_leg_seen_earlier_blocks_beside_the_robot_after_the_memory_forgot_it(cfg):
    cfg = cfg.with_values(memory_time=0.5)
    xs, ys = SPEC.cell_centers()
    view = (np.abs(np.arctan2(ys, xs)) > math.radians(40)) | (xs < 0.3)
    d = DriverLogic(cfg)
    # A thin leg ahead on the right, in view...
    g = np.where(view, UNKNOWN, FREE).astype(np.int8)
    g[np.hypot(xs - 0.61, ys + 0.2) < 0.03] = OCCUPIED
    d.set_grid(g, SPEC, pose=(0.0, 0.0, 0.0), stamp=0.0)
    # ...and 0.45 m on, a second later: 0.26 m from the robot's centre, ahead on its right,
    # out of view, forgotten by the obstacle memory; the grid shows only free floor.
    d.set_grid(np.where(view, UNKNOWN, FREE).astype(np.int8), SPEC, pose=(0.45, 0.0, 0.0),
               stamp=1.0)
    assert len(d.memory) == 0
    straight = d.free_lengths([0.0])[0][0]
    if cfg.frontier_weight > 0.0:
        # The floor map still holds the leg's cell blocked: driving on would touch it.
        assert straight < 0.05
        assert d.plan(motion=(0.0, 0.0, 0.0)).mode == 'rotate'
    else:
        assert straight == pytest.approx(cfg.lookahead)      # the blind zone hid it


def test_a_target_the_robot_gets_closer_to_stays_its_target():
    """Progress keeps the target: newer, nearer floor does not take it over on the way."""
    d = DriverLogic(DriverConfig(frontier_timeout=30.0))
    unknown = np.full(SPEC.shape, UNKNOWN, dtype=np.int8)
    d.set_grid(unknown, SPEC, pose=(4.0, 1.5, math.pi), stamp=0.0)
    _seen_free(d.floor_map, 0.5, 5.5, 0.5, 2.5)
    _swept(d, 1.0, 5.5, 0.5, 2.5)
    t, x = 0.0, 4.0
    targets = []
    for i in range(int(6.0 / 0.05)):
        if i == 40:                       # new floor ahead-left, nearer than the target
            _seen_free(d.floor_map, 1.8, 2.6, 2.4, 3.2)
        if i % 20 == 0 and i:             # 0.3 m closer to the target every second
            x -= 0.3
        t += 0.05
        d.set_grid(unknown, SPEC, pose=(x, 1.5, math.pi), stamp=t)
        d.step(0.05, motion=(0.0, 0.0, 0.0))
        targets.append(d.frontier_target)
    assert targets[10] is not None and targets[10][0] < 1.2     # the floor at x < 1
    assert set(targets[10:]) == {targets[10]}
    assert d.frontier_give_ups == 0
    # The new floor is the nearer goal: a fresh choice from where the robot is now takes it.
    d.floor_map.plan(x, 1.5, t, keep=False, heading=math.pi, turn_cost=0.3)
    assert d.floor_map.target[1] > 2.4
