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

"""The grid rule's fields that take free cells away: free_confidence and behind_confidence."""

import hashlib
import math

from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
from freespace_seg.ground.grid import GridRule, GridSpec, PLAIN_RULE
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.tools.grid_rules import parse_rule
import numpy as np
import pytest

W, H = 320, 180


def _projector():
    intr = CameraIntrinsics.from_fov(W, H, math.radians(90.0))
    return GroundProjector(intr, CameraMount(z=0.25, pitch=0.3), GridSpec())


def _noisy_frame():
    """Floor below row 70 with 60 random blocked blobs, and a random confidence of each class."""
    rng = np.random.default_rng(33)
    free = np.ones((H, W), np.uint8)
    free[:70] = 0
    for _ in range(60):
        r, c = rng.integers(70, 178), rng.integers(0, 316)
        free[r:r + rng.integers(1, 30), c:c + rng.integers(1, 5)] = 0
    conf = np.where(free > 0, rng.integers(128, 256, free.shape),
                    rng.integers(0, 129, free.shape)).astype(np.uint8)
    return free, conf


def _digest(ground):
    h = hashlib.sha256()
    for a in (ground.grid, ground.rows, ground.cols, np.round(ground.points, 4),
              ground.point_cells):
        h.update(np.ascontiguousarray(a).astype(np.float64).tobytes())
    return h.hexdigest()[:16]


# Made by the projector before free_confidence and behind_confidence existed (a7c1ff0):
# (min_run, cut_confidence, mark_confidence), with a confidence image -> digest of the grid,
# the marking pixels and the obstacle points.
BEFORE = {
    (0.0, 0.0, 0.0): '740c14af1800febf',
    (0.1, 0.97, 0.5): '2c6b2a6f2fab91a4',
    (0.1, 0.0, 0.0): '0c7651d0616e587d',
    (0.0, 0.9, 0.0): '6b39307a7ea01081',
    (0.05, 0.8, 0.7): 'e65f446cb3fbc6f8',
}


@pytest.mark.parametrize('fields', sorted(BEFORE))
def test_the_new_fields_off_give_the_outputs_of_before(fields):
    proj = _projector()
    free, conf = _noisy_frame()
    rule = GridRule(*fields, free_confidence=0.0, behind_confidence=0.0)
    assert _digest(proj.ground(free, conf, rule)) == BEFORE[fields]
    # behind_confidence is a no-op where every blocked pixel cuts (no run is left below one).
    if fields[0] == 0.0 and fields[1] == 0.0:
        assert _digest(proj.ground(free, conf, GridRule(*fields, 0.0, 1.0))) == BEFORE[fields]


def test_rule_fields_are_checked_and_read_the_confidence():
    rule = GridRule(0.0, 0.0, 0.0, free_confidence=0.9)
    assert not rule.plain and rule.needs_confidence
    assert GridRule(free_confidence=0.9).free_limit() == 229   # P(free) > 0.9: x 255 > 229.5
    assert GridRule(free_confidence=0.6).free_limit() == 153   # 153 / 255 = 0.6 is not more
    for bad in (-0.1, 1.5, float('nan'), True):
        with pytest.raises(ValueError):
            GridRule(free_confidence=bad)
        with pytest.raises(ValueError):
            GridRule(behind_confidence=bad)


def test_rule_names():
    assert parse_rule('plain') == PLAIN_RULE
    assert parse_rule('run0.1+conf0.97+mark0.5') == GridRule(0.1, 0.97, 0.5, 0.0, 0.0)
    assert parse_rule('run0.1+conf0.97+mark0.5+free0.6+behind0.97') == GridRule()   # default
    assert parse_rule('run0.1+conf0.97+mark0.5+free0.9+behind') == GridRule(
        0.1, 0.97, 0.5, 0.9, 1.0)
    assert parse_rule('behind0.9+run0.1') == GridRule(0.1, 0.0, 0.0, 0.0, 0.9)
    assert parse_rule('free0.8') == GridRule(0.0, 0.0, 0.0, 0.8, 0.0)
    for bad in ('behind+behind', 'free', 'fre0.9', 'run0.1+', 'run0.1+run0.2', 'behind2'):
        with pytest.raises(ValueError):
            parse_rule(bad)


def _cells_seen_only_by(proj, rows):
    """Cells all of whose samples lie in ``rows``, and cells none of whose samples do."""
    r, _, cell = proj.samples
    inside = np.isin(r, rows)
    spec = proj.grid_spec
    some_in = np.bincount(cell[inside], minlength=spec.size) > 0
    some_out = np.bincount(cell[~inside], minlength=spec.size) > 0
    return (some_in & ~some_out).reshape(spec.shape), (some_out & ~some_in).reshape(spec.shape)


@pytest.mark.parametrize('rule', [GridRule(0.1, 0.97, 0.5, 0.0, 0.0), PLAIN_RULE])
def test_a_strip_of_unsure_floor_is_unknown_not_free(rule):
    """Floor pixels with P(free) 0.6 in rows 120-134: unknown under free0.9; no cut."""
    proj = _projector()
    free = np.ones((H, W), np.uint8)
    free[:70] = 0
    conf = np.where(free > 0, 255, 0).astype(np.uint8)
    strip = np.arange(120, 135)
    conf[strip] = 153                                  # P(free) = 0.6, still the free class
    only_strip, outside = _cells_seen_only_by(proj, strip)
    beyond = _cells_seen_only_by(proj, np.arange(70, 120))[0]
    nearer = _cells_seen_only_by(proj, np.arange(135, H))[0]
    assert np.count_nonzero(only_strip) > 20
    assert np.count_nonzero(beyond) > 200 and np.count_nonzero(nearer) > 20

    before = proj.ground(free, conf, rule)
    assert np.all(before.grid[only_strip] == 0)        # today: the unsure floor is free
    sure = GridRule(rule.min_run, rule.cut_confidence, rule.mark_confidence, 0.9, 0.0)
    after = proj.ground(free, conf, sure)
    assert np.all(after.grid[only_strip] == -1)        # now unknown, not free
    # It does not cut: the floor beyond the strip stays as free as before, the obstacles (the
    # foot of the wall above row 70) stay the same.
    np.testing.assert_array_equal(after.grid[outside], before.grid[outside])
    assert np.all(after.grid[beyond] == 0) and np.all(after.grid[nearer] == 0)
    np.testing.assert_array_equal(after.grid == 100, before.grid == 100)
    np.testing.assert_array_equal(after.points, before.points)
    # Changed cells only go from free to unknown.
    changed = after.grid != before.grid
    assert np.all(before.grid[changed] == 0) and np.all(after.grid[changed] == -1)
    # At 0.5 every free-class pixel is surer than the limit: nothing changes.
    half = GridRule(rule.min_run, rule.cut_confidence, rule.mark_confidence, 0.5, 0.0)
    np.testing.assert_array_equal(proj.ground(free, conf, half).grid, before.grid)
    # Without a confidence image (an argmax model) the field has nothing to read.
    np.testing.assert_array_equal(proj.ground(free, None, sure).grid,
                                  proj.ground(free, None, rule).grid)


def _floor_with_a_short_run(p_free_of_run, p_free_of_floor=255):
    free = np.ones((H, W), np.uint8)
    free[:70] = 0
    free[140:144, 150:170] = 0                         # 4 rows: too short to cut under run0.1
    conf = np.where(free > 0, p_free_of_floor, 0).astype(np.uint8)
    conf[140:144, 150:170] = p_free_of_run
    return free, conf


def _seen_only_over_the_run(proj):
    """Cells seen only by floor pixels of columns 150-169 above row 140 (behind the run)."""
    r, c, cell = proj.samples
    size = proj.grid_spec.size
    over = np.bincount(cell[(c >= 150) & (c < 170) & (r >= 70) & (r < 140)], minlength=size) > 0
    elsewhere = np.bincount(cell[(c < 150) | (c >= 170) | (r < 70) | (r >= 140)],
                            minlength=size) > 0
    return (over & ~elsewhere).reshape(proj.grid_spec.shape)


def test_floor_behind_a_run_that_does_not_cut_is_free_only_where_sure():
    proj = _projector()
    free, conf = _floor_with_a_short_run(0)            # a sure blocked run
    rule = GridRule(0.1, 0.97, 0.5, 0.0, 0.0)
    generous = proj.ground(free, conf, rule)
    behind = proj.ground(free, conf, GridRule(0.1, 0.97, 0.5, behind_confidence=1.0))
    plain = proj.ground(free, conf, PLAIN_RULE)
    hidden = _seen_only_over_the_run(proj)
    below = _cells_seen_only_by(proj, np.arange(144, H))[0]
    assert np.count_nonzero(hidden) > 10 and np.count_nonzero(below) > 20
    assert np.all(generous.grid[hidden] == 0)          # the rule without it calls it free
    assert np.all(behind.grid[hidden] == -1)           # behind1: unknown, as under plain
    np.testing.assert_array_equal(behind.grid == 0, plain.grid == 0)
    # The run still marks its cell: the same obstacles as without behind_confidence.
    np.testing.assert_array_equal(behind.grid == 100, generous.grid == 100)
    assert np.count_nonzero(behind.grid[~hidden] == 100) > 0
    np.testing.assert_array_equal(behind.point_cells, np.flatnonzero(behind.grid.ravel() == 100))
    # The floor below the run is free either way.
    assert np.all(behind.grid[below] == 0) and np.all(generous.grid[below] == 0)
    # Also without a confidence image (an argmax model), behind1 leaves it unknown.
    assert np.all(proj.ground(free, None, GridRule(0.1, 0.97, 0.5, 0.0, 1.0)).grid[hidden]
                  == -1)

    # Below 1, sure floor behind the run stays free, unsure floor does not.
    some = GridRule(0.1, 0.97, 0.5, behind_confidence=0.9)
    np.testing.assert_array_equal(proj.ground(free, conf, some).grid, generous.grid)
    free, unsure = _floor_with_a_short_run(0, p_free_of_floor=200)   # P(free) = 0.78
    grid = proj.ground(free, unsure, some).grid
    assert np.all(grid[hidden] == -1) and np.all(grid[below] == 0)
    np.testing.assert_array_equal(
        proj.ground(free, unsure, GridRule(0.1, 0.97, 0.5, behind_confidence=0.7)).grid,
        generous.grid)


def test_a_tied_run_ends_the_sure_floor_without_a_mark():
    """A tied run (P(free) = 0.5) marks nothing; under behind1 the floor behind it is unknown."""
    proj = _projector()
    free, conf = _floor_with_a_short_run(128)
    clean = np.ones((H, W), np.uint8)
    clean[:70] = 0
    before = proj.ground(clean, None, PLAIN_RULE).grid
    np.testing.assert_array_equal(
        proj.ground(free, conf, GridRule(0.1, 0.97, 0.5, 0.0, 0.0)).grid, before)
    behind = proj.ground(free, conf, GridRule(0.1, 0.97, 0.5, behind_confidence=1.0)).grid
    np.testing.assert_array_equal(behind == 100, before == 100)
    hidden = _seen_only_over_the_run(proj)
    assert np.all(behind[hidden] == -1)
    changed = behind != before
    assert np.all(before[changed] == 0) and np.all(behind[changed] == -1)
