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

"""The equidistant (fisheye) lens: rays, projection, CameraInfo and the ground grid."""

import math

import cv2
from freespace_seg.ground.camera_info import (intrinsics_from_camera_info,
                                              intrinsics_from_camera_info_msg)
from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount, pixel_rays_in_base
from freespace_seg.ground.grid import GridSpec, PLAIN_RULE
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.scenes2 import Camera, render_mask
from freespace_seg.scenes2.layout import random_scene
import numpy as np
import pytest

D = (0.04, -0.012, 0.002, -0.0003)
FISHEYE = CameraIntrinsics(640, 480, 300.0, 305.0, 321.3, 238.7, D, 'equidistant')
K = [300.0, 0.0, 321.3, 0.0, 305.0, 238.7, 0.0, 0.0, 1.0]


def _directions(rng, n, max_deg):
    """Return unit directions in the optical frame up to ``max_deg`` degrees off the axis."""
    theta = np.radians(rng.uniform(0.0, max_deg, n))
    phi = rng.uniform(-math.pi, math.pi, n)
    return np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi),
                     np.cos(theta)], axis=1)


def test_fisheye_projection_matches_opencv_and_round_trips():
    rng = np.random.default_rng(4)
    front = _directions(rng, 400, 85.0) * rng.uniform(0.3, 5.0, (400, 1))
    uv = FISHEYE.project(front)
    want, _ = cv2.fisheye.projectPoints(front.reshape(-1, 1, 3), np.zeros(3), np.zeros(3),
                                        FISHEYE.k, np.array(D))
    np.testing.assert_allclose(uv, want.reshape(-1, 2), atol=1e-6)
    # Project then undistort: the same rays, past 90 degrees off the axis too (D has no fold
    # before 120 degrees).
    rays = _directions(rng, 400, 120.0)
    x, y, z = FISHEYE.optical_rays(*FISHEYE.project(rays).T)
    np.testing.assert_allclose(np.stack([x, y, z], axis=1), rays, atol=1e-9)
    xn, yn = FISHEYE.normalized_rays(*uv.T)
    und = cv2.fisheye.undistortPoints(uv.reshape(-1, 1, 2), FISHEYE.k, np.array(D))
    np.testing.assert_allclose(np.stack([xn, yn], axis=1), und.reshape(-1, 2), atol=1e-7)
    np.testing.assert_allclose(xn, front[:, 0] / front[:, 2], rtol=1e-7, atol=1e-9)
    # Behind the camera there is no normalized point, only the ray.
    back = FISHEYE.project(np.array([[0.3, 0.2, -0.1]]))
    assert np.isnan(FISHEYE.normalized_rays(*back.T)[0]).all()
    assert FISHEYE.optical_rays(*back.T)[2][0] < 0.0


def test_a_fisheye_without_coefficients_is_still_a_fisheye():
    lens = CameraIntrinsics.from_fov(480, 270, math.radians(140.0), distortion_model='equidistant')
    pinhole = CameraIntrinsics(480, 270, lens.fx, lens.fy, lens.cx, lens.cy)
    assert lens.is_fisheye and not lens.has_distortion
    xn, _ = lens.normalized_rays(np.array([479.0]), np.array([lens.cy]))
    angle = (479.0 - lens.cx) / lens.fx
    assert xn[0] == pytest.approx(math.tan(angle))
    assert pinhole.normalized_rays(np.array([479.0]), np.array([lens.cy]))[0][0] == \
        pytest.approx(angle)
    assert lens.scaled(240, 135).is_fisheye
    assert CameraIntrinsics(8, 8, 1, 1, 4, 4, (), 'plumb_bob').distortion_model == ''
    with pytest.raises(ValueError, match='unsupported distortion model'):
        CameraIntrinsics(8, 8, 1, 1, 4, 4, (), 'kannala')
    with pytest.raises(ValueError, match='k1, k2, k3, k4'):
        CameraIntrinsics(8, 8, 1, 1, 4, 4, (0.1,) * 5, 'equidistant')


def test_camera_info_keeps_the_fisheye():
    class Roi:
        x_offset, y_offset, width, height, do_rectify = 0, 0, 0, 0, False

    class Info:
        k, d, width, height = K, list(D), 640, 480
        binning_x, binning_y, roi, distortion_model = 2, 2, Roi(), 'equidistant'
        p = [280.0, 0.0, 320.0, 0.0, 0.0, 280.0, 240.0, 0.0, 0.0, 0.0, 1.0, 0.0]

    binned = intrinsics_from_camera_info_msg(Info())
    assert binned == FISHEYE.scaled(320, 240) and binned.is_fisheye
    # Binning keeps the rays of the pixel centres' floor points.
    rays = _directions(np.random.default_rng(1), 50, 80.0)
    np.testing.assert_allclose(binned.project(rays), (FISHEYE.project(rays) + 0.5) / 2 - 0.5,
                               atol=1e-9)
    rect = intrinsics_from_camera_info_msg(Info(), rectified=True)
    assert not rect.is_fisheye and rect.fx == pytest.approx(140.0)
    assert intrinsics_from_camera_info(K, [], 640, 480, distortion_model='equidistant') == \
        CameraIntrinsics.from_k(640, 480, K, (), 'equidistant')
    Info.d = list(D) + [0.0]
    with pytest.raises(ValueError, match='4 coefficients'):
        intrinsics_from_camera_info_msg(Info())
    Info.distortion_model = 'fov'
    with pytest.raises(ValueError, match='unsupported distortion model'):
        intrinsics_from_camera_info_msg(Info())


def _camera_intrinsics(camera, width, height):
    """Return the intrinsics the second generator records for ``camera`` (samples.jsonl)."""
    d = camera.intrinsics(width, height)
    return CameraIntrinsics(d['width'], d['height'], d['fx'], d['fy'], d['cx'], d['cy'],
                            tuple(d['distortion']), d.get('distortion_model', ''))


@pytest.mark.parametrize('lens,fov', [('pinhole', 90.0), ('equidistant', 140.0)])
def test_rays_are_those_of_the_second_generator(lens, fov):
    # The generator's pose (roll, pitch, yaw; z up) is a CameraMount's: same rays.
    camera = Camera((2.0, 3.0, 0.4), 0.7, 0.35, 0.02, fov, lens)
    want, _ = camera.rays(160, 90)
    mount = CameraMount(0.0, 0.0, 0.4, camera.roll, camera.pitch, camera.yaw)
    got = pixel_rays_in_base(_camera_intrinsics(camera, 160, 90), mount)
    got /= np.linalg.norm(got, axis=-1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_a_fisheye_frame_projects_its_floor_where_the_pinhole_one_does():
    """
    The same room and pose seen through a 90 degree pinhole and a 140 degree fisheye.

    The true masks of the second generator, projected with the plain rule: the pinhole's
    free cells are free in the fisheye's grid too. Read as a pinhole, the fisheye mask puts
    them elsewhere.
    """
    width, height = 320, 180
    spec = GridSpec()
    both = fisheye = wrong = 0
    for seed in range(4):
        scene, camera, _ = random_scene(np.random.default_rng(seed), (0.25, 0.5), (0.2, 0.5))
        mount = CameraMount(0.0, 0.0, float(camera.position[2]), camera.roll, camera.pitch, 0.0)
        grids = {}
        for lens, fov in (('pinhole', 90.0), ('equidistant', 140.0)):
            view = Camera(camera.position, camera.yaw, camera.pitch, camera.roll, fov, lens)
            mask = render_mask(scene, view, width, height)
            intr = _camera_intrinsics(view, width, height)
            grids[lens] = GroundProjector(intr, mount, spec).ground(mask, None, PLAIN_RULE).grid
            if lens == 'equidistant':
                as_pinhole = CameraIntrinsics(width, height, intr.fx, intr.fy, intr.cx, intr.cy)
                grids['wrong'] = GroundProjector(as_pinhole, mount, spec).ground(mask).grid
        free = grids['pinhole'] == 0
        both += int(free.sum())
        fisheye += int((free & (grids['equidistant'] == 0)).sum())
        wrong += int((free & (grids['wrong'] == 0)).sum())
    assert both > 3000
    assert fisheye / both >= 0.97
    assert wrong / both < 0.93
