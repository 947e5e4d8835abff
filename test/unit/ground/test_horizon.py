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

"""ground.horizon: the pixels whose ray rises above the horizon, and cutting masks there."""

import math

from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
from freespace_seg.ground.horizon import HorizonCut
from freespace_seg.ground.projection import GroundProjector
import numpy as np
import pytest

W, H = 64, 48
#: square pixels, principal point between rows 23 and 24 and columns 31 and 32
CAMERA = CameraIntrinsics(W, H, 40.0, 40.0, 31.5, 23.5)
DISTORTED = CameraIntrinsics(160, 120, 85.0, 84.5, 82.5, 62.5,
                             (-0.12, 0.03, 0.001, -0.0008, -0.004))


def normalized(intr=CAMERA):
    """(xn, yn) of every pixel centre of a camera without distortion."""
    v, u = np.mgrid[0:intr.height, 0:intr.width].astype(np.float64)
    return (u - intr.cx) / intr.fx, (v - intr.cy) / intr.fy


def test_a_level_camera_cuts_the_rows_above_the_principal_point():
    cut = HorizonCut(CAMERA, CameraMount(z=0.3, pitch=0.0), margin_deg=0.0)
    expect = np.zeros((H, W), bool)
    expect[:24] = True
    np.testing.assert_array_equal(cut.mask, expect)
    assert cut.count == 24 * W and cut.shape == (H, W)


def test_a_camera_pitched_down_cuts_fewer_rows():
    pitch = 0.3
    cut = HorizonCut(CAMERA, CameraMount(z=0.3, pitch=pitch), margin_deg=0.0)
    horizon_v = CAMERA.cy - CAMERA.fy * math.tan(pitch)         # 11.12
    expect = np.zeros((H, W), bool)
    expect[:int(math.floor(horizon_v)) + 1] = True               # rows 0..11
    np.testing.assert_array_equal(cut.mask, expect)
    # Pitched up, the horizon moves down the image.
    up = HorizonCut(CAMERA, CameraMount(z=0.3, pitch=-0.2), margin_deg=0.0)
    assert up.count == W * (int(math.floor(CAMERA.cy + CAMERA.fy * math.tan(0.2))) + 1)


@pytest.mark.parametrize('roll, pitch', [(0.3, 0.0), (-0.5, 0.2), (0.2, -0.1)])
def test_a_rolled_camera_cuts_along_a_tilted_line_per_pixel(roll, pitch):
    """
    Each pixel against the rolled, then pitched ray of the camera body.

    The body ray (1, -xn, -yn) rolled by r, then pitched by p, points up by
    -sin p - cos p (xn sin r + yn cos r); the pixel is cut where that is >= 0 (margin 0).
    """
    cut = HorizonCut(CAMERA, CameraMount(z=0.3, roll=roll, pitch=pitch, yaw=0.4), 0.0)
    xn, yn = normalized()
    up = -math.sin(pitch) - math.cos(pitch) * (xn * math.sin(roll) + yn * math.cos(roll))
    clear = np.abs(up) > 1e-9
    np.testing.assert_array_equal(cut.mask[clear], up[clear] >= 0.0)
    # A tilted line: the columns are cut to different rows, not one row for all.
    per_column = cut.mask.sum(axis=0)
    assert per_column.min() < per_column.max() - 5
    # Positive roll about the forward axis lifts the image's left side: more of it is cut.
    assert (per_column[0] > per_column[-1]) == (roll > 0)


def test_the_margin_keeps_a_band_above_the_horizon():
    margin = 4.0
    cut = HorizonCut(CAMERA, CameraMount(z=0.3, pitch=0.0), margin_deg=margin)
    xn, yn = normalized()
    # Elevation atan2(-yn, hypot(1, xn)) at least the margin.
    rise = -yn - math.tan(math.radians(margin)) * np.hypot(1.0, xn)
    clear = np.abs(rise) > 1e-9
    np.testing.assert_array_equal(cut.mask[clear], rise[clear] >= 0.0)
    level = HorizonCut(CAMERA, CameraMount(z=0.3, pitch=0.0), margin_deg=0.0)
    assert not (cut.mask & ~level.mask).any()                   # only ever fewer pixels
    # At the centre 40 tan(4 deg) = 2.8 px: rows 0 to 20 are cut, 21 to 23 kept; the line
    # curves up at the sides, where a pixel row rises less steeply.
    assert cut.mask[:, 31].sum() == 21
    assert cut.mask[:, 0].sum() < cut.mask[:, 31].sum()


@pytest.mark.parametrize('intr, mount', [
    (CAMERA, CameraMount(z=0.25, roll=0.1, pitch=0.3, yaw=-0.2)),
    (DISTORTED, CameraMount(x=0.05, z=0.15, roll=-0.05, pitch=0.25, yaw=-0.4)),
    (DISTORTED, CameraMount(z=1.0, roll=0.4, pitch=0.05)),
])
def test_with_no_margin_it_cuts_exactly_the_pixels_that_see_no_floor(intr, mount):
    cut = HorizonCut(intr, mount, margin_deg=0.0)
    projector = GroundProjector(intr, mount)
    v, u = np.mgrid[0:intr.height, 0:intr.width].astype(np.float64)
    gx, _ = projector.pixel_to_ground(u, v)
    np.testing.assert_array_equal(cut.mask, ~np.isfinite(gx))
    assert 0 < cut.count < intr.width * intr.height
    assert (projector.lut[cut.mask] == -1).all()


def test_a_transform_gives_the_same_cut_as_the_mount():
    mount = CameraMount(x=0.1, z=0.4, roll=0.2, pitch=0.1, yaw=0.3)
    a = HorizonCut(DISTORTED, mount, 1.0)
    b = HorizonCut(DISTORTED, mount.transform_base_from_optical(), 1.0)
    np.testing.assert_array_equal(a.mask, b.mask)


def test_it_is_rebuilt_only_when_an_input_changes():
    mount = CameraMount(z=0.3, pitch=0.1)
    cut = HorizonCut(CAMERA, mount, 1.0)
    before = cut.mask.copy()
    assert cut.rebuild_count == 1
    assert not cut.update(intrinsics=CAMERA, mount=CameraMount(z=0.3, pitch=0.1),
                          margin_deg=1.0)
    assert not cut.update(mount=mount.transform_base_from_optical())
    assert cut.rebuild_count == 1
    assert cut.update(margin_deg=3.0) and cut.margin_deg == 3.0
    assert cut.update(mount=CameraMount(z=0.3, pitch=0.2))
    assert cut.update(intrinsics=CAMERA.scaled(32, 24)) and cut.shape == (24, 32)
    assert cut.rebuild_count == 4
    assert cut.update(intrinsics=CAMERA, mount=mount, margin_deg=1.0)
    np.testing.assert_array_equal(cut.mask, before)
    with pytest.raises(ValueError):
        cut.mask[0, 0] = False                                    # a read-only view


def test_a_transform_changed_in_place_is_a_new_pose():
    transform = CameraMount(z=0.3, pitch=0.1).transform_base_from_optical()
    cut = HorizonCut(CAMERA, transform, 1.0)
    assert not cut.update(mount=transform) and not cut.update(mount=transform.copy())
    transform[:3, :3] = CameraMount(pitch=0.4).rotation_base_from_optical()
    assert cut.update(mount=transform) and cut.rebuild_count == 2
    np.testing.assert_array_equal(cut.mask,
                                  HorizonCut(CAMERA, CameraMount(z=0.3, pitch=0.4), 1.0).mask)
    with pytest.raises(ValueError, match='above the floor'):
        cut.update(mount=CameraMount(z=-0.1))
    assert not cut.update(mount=transform)


@pytest.mark.parametrize('margin', [-0.1, 90.0, float('nan')])
def test_a_margin_outside_0_to_90_degrees_is_refused(margin):
    with pytest.raises(ValueError, match='margin'):
        HorizonCut(CAMERA, CameraMount(), margin)
    with pytest.raises(ValueError, match='margin'):
        HorizonCut(CAMERA, CameraMount(), 1.0).update(margin_deg=margin)


def _rolled_cut():
    return HorizonCut(CAMERA, CameraMount(z=0.3, roll=0.3, pitch=0.05), 1.0)


def test_apply_sets_every_cut_pixel_in_place():
    cut = _rolled_cut()
    rng = np.random.default_rng(3)
    mask = rng.integers(0, 4, (H, W)).astype(np.uint8)
    before = mask.copy()
    assert cut.apply(mask, 7) is mask
    np.testing.assert_array_equal(mask, np.where(cut.mask, 7, before))
    # Twice, and with another value: the same pixels.
    cut.apply(mask, 0)
    np.testing.assert_array_equal(mask, np.where(cut.mask, 0, before))


def test_apply_with_classes_changes_only_those_classes():
    cut = _rolled_cut()
    rng = np.random.default_rng(4)
    mask = rng.integers(0, 4, (H, W)).astype(np.uint8)
    before = mask.copy()
    cut.apply(mask, 0, classes=(1, 3))
    free = (before == 1) | (before == 3)
    np.testing.assert_array_equal(mask, np.where(cut.mask & free, 0, before))
    assert ((before == 2) & cut.mask).any() and (mask[before == 2] == 2).all()


def test_apply_to_a_mask_that_is_not_c_contiguous():
    cut = _rolled_cut()
    rng = np.random.default_rng(5)
    mask = np.asfortranarray(rng.integers(0, 3, (H, W)).astype(np.uint8))
    before = mask.copy()
    cut.apply(mask, 0)
    np.testing.assert_array_equal(mask, np.where(cut.mask, 0, before))
    mask = np.asfortranarray(before)
    cut.apply(mask, 0, classes=(1,))
    np.testing.assert_array_equal(mask, np.where(cut.mask & (before == 1), 0, before))


def test_apply_refuses_a_mask_of_another_shape_or_type():
    cut = _rolled_cut()
    with pytest.raises(ValueError, match='shape'):
        cut.apply(np.zeros((H, W + 1), np.uint8), 0)
    with pytest.raises(ValueError, match='uint8'):
        cut.apply(np.zeros((H, W), np.int32), 0)
