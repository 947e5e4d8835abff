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

"""Free labels grown over floor of the same look (#34): drawn images, then rendered rooms."""

import os

from freespace_seg.ground import autolabel as al
from freespace_seg.ground.autolabel_grow import grow_free, superpixels
from freespace_seg.ground.geometry import CameraMount
import numpy as np
import pytest

W, H = 160, 120
FLOOR = (150, 120, 90)
WALL = (90, 140, 200)


def drawn():
    """
    Return a drawn frame: a wall above row 40, a shaded floor below, a floor-coloured box.

    The floor brightens by 20 levels from row 40 to the bottom (slow shading). The box
    (rows 60-90, columns 110-140) has the floor's colour but 60 levels darker: an edge.
    """
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[:40] = WALL
    shade = np.linspace(0, 20, H - 40)[:, None, None]
    rgb[40:] = np.clip(np.array(FLOOR)[None, None] + shade, 0, 255).astype(np.uint8)
    rgb[60:90, 110:140] = np.array(FLOOR) - 60
    floor = np.zeros((H, W), bool)
    floor[40:] = True
    floor[60:90, 110:140] = False
    return rgb, floor


def seeded():
    """Return a mask with a small drive-over patch of free floor at the bottom centre."""
    mask = np.full((H, W), al.UNCHECKED, np.uint8)
    mask[100:, 60:100] = al.FREE
    return mask


def test_superpixels_cover_the_image_and_follow_an_edge():
    rgb, floor = drawn()
    regions = superpixels(rgb, 48)
    assert regions.shape == (H, W) and regions.min() == 0
    assert 30 <= regions.max() + 1 <= 60
    # no region straddles the wall's foot by more than a row of pixels
    for r in np.unique(regions):
        rows = np.nonzero(regions == r)[0]
        assert rows.max() < 42 or rows.min() > 38


def test_growth_covers_the_floor_and_stops_at_edges():
    rgb, floor = drawn()
    mask = seeded()
    before = (mask == al.FREE).sum()
    added = grow_free(mask, rgb, np.ones((H, W)), superpixel_count=48)
    free = mask == al.FREE
    assert added == free.sum() - before
    assert (free & ~floor).sum() <= 0.005 * free.sum()  # not the wall, not the box
    assert free[floor].mean() > 0.9  # the shaded floor, far from the seed


def test_the_model_must_agree_and_blocked_labels_stay():
    rgb, floor = drawn()
    mask = seeded()
    mask[45:50] = al.BLOCKED  # a bump's band across the floor
    p = np.ones((H, W))
    p[:, :30] = 0.2  # the model says blocked on the left
    grow_free(mask, rgb, (255 * p).astype(np.uint8), superpixel_count=48)
    assert (mask[:, :30] != al.FREE).all()
    assert (mask[45:50] == al.BLOCKED).all()
    assert (mask[100:, 60:100] == al.FREE).all()
    assert (mask[70:, 40:100] == al.FREE).mean() > 0.9


def test_a_region_with_a_blocked_label_is_never_grown_into():
    noise = np.random.default_rng(0).integers(-2, 3, (H, W, 3))
    rgb = (np.array(FLOOR)[None, None] + noise).astype(np.uint8)  # one colour everywhere
    mask = seeded()
    mask[:10] = al.BLOCKED  # the horizon's band at the top
    before = mask.copy()
    grow_free(mask, rgb, np.ones((H, W)), superpixel_count=48)
    regions = superpixels(rgb, 48)
    near = np.isin(regions, np.unique(regions[:10]))
    assert (mask[near] == before[near]).all()
    assert (mask == al.FREE).mean() > 0.5


def test_off_without_seeds_and_on_bad_sizes():
    rgb, _ = drawn()
    mask = seeded()
    assert grow_free(mask, rgb, np.ones((H, W)), color_distance=0.0) == 0
    empty = np.full((H, W), al.UNCHECKED, np.uint8)
    assert grow_free(empty, rgb, np.ones((H, W))) == 0
    assert (empty == al.UNCHECKED).all()
    with pytest.raises(ValueError, match='same size'):
        grow_free(mask, rgb, np.ones((H, W + 1)))


def test_grown_labels_stay_right_in_rendered_rooms():
    """
    Drive-over labels grown with the shipped model stay >= 0.995 precise and cover more.

    Rendered rooms of both styles, 480x270, a frame every 2 s of a bump-and-turn drive;
    the truth is the renderer's exact mask.
    """
    from freespace_seg.perception.pipeline import SegmentationPipeline
    from freespace_seg.sim import default_intrinsics, make_scene, RandomizationConfig
    from freespace_seg.sim.render import free_mask, render
    from freespace_seg.sim.wander import wander

    model = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'models',
                         'freespace_lite0.onnx')
    pipe = SegmentationPipeline(os.path.abspath(model))
    intrinsics = default_intrinsics(480, 270)
    mount = CameraMount(z=0.25, pitch=0.3)
    camera = al.CameraFloor(intrinsics, mount, al.AutoLabelConfig())
    ok = n = base = truth_free = 0
    for seed, style in ((301, 'shifted'), (7, 'default')):
        look = RandomizationConfig(style=style)
        rng = np.random.default_rng(seed)
        scene = make_scene(rng, look)
        drive = wander(scene, rng, duration=40.0)
        for t0 in np.arange(0.0, 30.0, 2.0):
            pose = drive.pose_at(t0)
            labels = al.label_frame(camera, pose, t0, drive.path[:, 0], drive.path[:, 1:],
                                    drive.hazards)
            rgb = render(scene, intrinsics, mount, pose, randomization=look).image
            truth = free_mask(scene, intrinsics, mount, pose) > 0
            base += int((labels.mask == al.FREE).sum())
            _, p_free = pipe.segment_with_confidence(rgb)
            grow_free(labels.mask, rgb, p_free, color_distance=6.0)
            free = labels.mask == al.FREE
            ok, n = ok + int((free & truth).sum()), n + int(free.sum())
            truth_free += int(truth.sum())
    assert base > 0
    assert ok >= 0.995 * n
    assert n >= 1.5 * base
