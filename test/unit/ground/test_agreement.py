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

"""GridAgreement: a free cell stays free only where the last grids, in odom, agree."""

import math

from freespace_seg.ground.agreement import AgreementParams, GridAgreement
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED, UNKNOWN
import numpy as np
import pytest

SPEC = GridSpec(resolution=0.1, width=2.0, height=2.0, origin=(0.0, -1.0), max_range=3.0)


def _grid_with_free_square(spec, x0, x1, y0, y1):
    """Return a grid of ``spec`` free where base-frame x0 <= x < x1, y0 <= y < y1."""
    x, y = spec.cell_centers()
    grid = np.full(spec.shape, UNKNOWN, np.int8)
    grid[(x >= x0) & (x < x1) & (y >= y0) & (y < y1)] = FREE
    return grid


def test_floor_that_stays_in_place_in_odom_stays_free_while_the_robot_moves():
    agree = GridAgreement(AgreementParams(3))
    # The same floor square, x 1.0-1.5 m in odom, seen from poses 0.2 m apart.
    out = None
    for i, px in enumerate((0.0, 0.2, 0.4)):
        grid = _grid_with_free_square(SPEC, 1.0 - px, 1.5 - px, -0.3, 0.3)
        out = agree.apply(grid, SPEC, (px, 0.0, 0.0), stamp=0.1 * i)
    assert np.array_equal(out, grid)
    assert (out == FREE).sum() == 5 * 6


def test_a_speck_that_moves_with_the_robot_becomes_unknown():
    agree = GridAgreement(AgreementParams(3))
    # A table top seen from above: the same place in the robot's frame at every pose, so
    # it moves in odom as the robot drives.
    for i, px in enumerate((0.0, 0.3, 0.6)):
        grid = _grid_with_free_square(SPEC, 1.0, 1.2, -0.1, 0.1)
        out = agree.apply(grid, SPEC, (px, 0.0, 0.0), stamp=0.1 * i)
    assert (grid == FREE).sum() == 4
    assert not (out == FREE).any()
    assert (out == UNKNOWN).all()


def test_a_flicker_of_one_frame_is_dropped_and_obstacles_pass_at_once():
    agree = GridAgreement(AgreementParams(2))
    first = _grid_with_free_square(SPEC, 0.5, 1.5, -0.5, 0.5)
    agree.apply(first, SPEC, (0.0, 0.0, 0.0), stamp=0.0)
    second = first.copy()
    second[0, 0] = FREE      # a new free speck, seen once
    second[10, 10] = OCCUPIED  # an obstacle where the floor was free
    out = agree.apply(second, SPEC, (0.0, 0.0, 0.0), stamp=0.1)
    assert out[0, 0] == UNKNOWN
    assert out[10, 10] == OCCUPIED
    assert (out == FREE).sum() == (first == FREE).sum() - 1


def test_a_turn_in_place_keeps_the_floor_where_it_is():
    agree = GridAgreement(AgreementParams(2))
    spec = GridSpec(resolution=0.05, width=4.0, height=4.0, origin=(-2.0, -2.0), max_range=3.0)
    x, y = spec.cell_centers()
    # Free floor in a disc at odom (1, 0.5); the robot turns by 30 degrees at the origin.
    for i, yaw in enumerate((0.0, math.radians(30.0))):
        c, s = math.cos(yaw), math.sin(yaw)
        wx, wy = c * x - s * y, s * x + c * y
        grid = np.where((wx - 1.0) ** 2 + (wy - 0.5) ** 2 < 0.4 ** 2, FREE,
                        UNKNOWN).astype(np.int8)
        out = agree.apply(grid, spec, (0.0, 0.0, yaw), stamp=0.1 * i)
    # Only cells on the disc's rim may miss their vote (nearest-cell lookup).
    kept = (out == FREE).sum() / (grid == FREE).sum()
    assert kept > 0.9


def test_m_of_k_and_the_start():
    agree = GridAgreement(AgreementParams(3, 2))
    grid = _grid_with_free_square(SPEC, 0.5, 1.0, -0.2, 0.2)
    # The first grid has no grid before it: one vote of the two needed.
    assert not (agree.apply(grid, SPEC, (0.0, 0.0, 0.0), stamp=0.0) == FREE).any()
    assert np.array_equal(agree.apply(grid, SPEC, (0.0, 0.0, 0.0), stamp=0.1), grid)


def test_old_grids_and_missing_odometry_do_not_vote():
    agree = GridAgreement(AgreementParams(2, max_age=0.5))
    grid = _grid_with_free_square(SPEC, 0.5, 1.0, -0.2, 0.2)
    agree.apply(grid, SPEC, (0.0, 0.0, 0.0), stamp=0.0)
    assert not (agree.apply(grid, SPEC, (0.0, 0.0, 0.0), stamp=2.0) == FREE).any()
    assert len(agree) == 1
    # No pose: the grid as it is, and the history starts again.
    assert agree.apply(grid, SPEC, None, stamp=2.1) is grid
    assert len(agree) == 0


def test_one_frame_is_off_and_parse_names():
    grid = _grid_with_free_square(SPEC, 0.5, 1.0, -0.2, 0.2)
    assert GridAgreement(AgreementParams(1)).apply(grid, SPEC, (0.0, 0.0, 0.0)) is grid
    assert AgreementParams.parse('3').name == '3/3'
    assert AgreementParams.parse('5/4').needed == 4
    assert AgreementParams.parse('1').name == '1'
    assert not AgreementParams.parse('4/1').active


@pytest.mark.parametrize('text', ['0', '3/4', 'x', '2/', '31', '-1', '2.5'])
def test_bad_agreements_are_refused(text):
    with pytest.raises(ValueError, match='grid agreement'):
        AgreementParams.parse(text)


def test_sparse_far_floor_survives_a_shift_of_less_than_a_cell_with_the_tolerance():
    # Far floor is every other cell (rays of single pixels): a shift of the robot by less
    # than a cell can move the pattern by one cell.
    grid = np.full(SPEC.shape, UNKNOWN, np.int8)
    grid[::2, 10::2] = FREE
    kept = {}
    for tolerance in (0, 1):
        agree = GridAgreement(AgreementParams(2, tolerance=tolerance))
        agree.apply(grid, SPEC, (0.0, 0.0, 0.0), stamp=0.0)
        shifted = np.full(SPEC.shape, UNKNOWN, np.int8)
        shifted[1::2, 10::2] = FREE
        out = agree.apply(shifted, SPEC, (0.0, 0.0, 0.0), stamp=0.1)
        kept[tolerance] = (out == FREE).sum() / (shifted == FREE).sum()
    assert kept[0] == 0.0 and kept[1] == 1.0
