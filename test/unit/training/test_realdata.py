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

"""Stereo ground truth for the real-photo evaluation set: synthetic scenes and the real pair."""

import math
import struct
import sys
import zlib

import cv2
from freespace_seg import cli
from freespace_seg.training import data as datasets
from freespace_seg.training import evaluate
from freespace_seg.training import real_set as realdata
import numpy as np
import pytest

# A small camera (cx, cy off the pixel grid so that no ray is exactly axis-parallel).
CALIB = realdata.StereoCalibration(focal=150.0, cx=99.5, cy=74.5, doffs=2.0, baseline_m=0.1)
W, H = 200, 150
SKIMAGE_REASON = 'scikit-image is not installed (tools/bootstrap.sh --train)'


def camera_axes(pitch):
    """Return world up and world forward (horizontal) in the frame of a camera pitched down."""
    up = np.array([0.0, -math.cos(pitch), -math.sin(pitch)])
    forward = np.array([0.0, -math.sin(pitch), math.cos(pitch)])
    return up, forward


def render_scene(height=0.3, pitch=0.2, wall_m=3.0, floor=True, ceiling_m=None,
                 box=(-0.3, 0.1, 1.0, 1.3, 0.25)):
    """
    Ray-cast a scene; return (disparity, floor_truth) for the calibration CALIB.

    The camera is ``height`` above a floor (if ``floor``), pitched down by ``pitch``; a wall
    faces it ``wall_m`` ahead, an optional ceiling is ``ceiling_m`` above the camera and
    ``box`` = (x0, x1, f0, f1, top) stands on the floor (x right, f forward, metres).
    ``floor_truth`` is True where the floor is the nearest surface.
    """
    up, forward = camera_axes(pitch)
    u, v = np.meshgrid(np.arange(W, dtype=float), np.arange(H, dtype=float))
    rays = np.stack([(u - CALIB.cx) / CALIB.focal, (v - CALIB.cy) / CALIB.focal,
                     np.ones_like(u)], axis=-1)
    r_up, r_fwd, r_x = rays @ up, rays @ forward, rays[..., 0]
    inf = np.full((H, W), np.inf)
    with np.errstate(divide='ignore', invalid='ignore'):
        t_floor = np.where(r_up < 0, -height / r_up, inf) if floor else inf
        t_wall = np.where(r_fwd > 0, wall_m / r_fwd, inf)
        t_ceiling = (np.where(r_up > 0, ceiling_m / r_up, inf) if ceiling_m is not None
                     else inf)
        t_box = inf
        if box is not None:
            x0, x1, f0, f1, top = box
            slabs = [(x0 / r_x, x1 / r_x), (f0 / r_fwd, f1 / r_fwd),
                     (-height / r_up, (top - height) / r_up)]
            near = np.max([np.minimum(a, b) for a, b in slabs], axis=0)
            far = np.min([np.maximum(a, b) for a, b in slabs], axis=0)
            t_box = np.where((near <= far) & (near > 0), near, inf)
    depth = np.min([t_floor, t_wall, t_ceiling, t_box], axis=0)
    assert np.isfinite(depth).all()
    disp = CALIB.baseline_m * CALIB.focal / depth - CALIB.doffs
    truth = t_floor <= np.min([t_wall, t_ceiling, t_box], axis=0)
    return disp.astype(np.float32), truth


def punch_holes(disp):
    """Set NaN (and Middlebury's inf) holes; return the hole mask."""
    holes = np.zeros(disp.shape, bool)
    holes[10:30, 20:60] = True
    holes[120:130, 90:140] = True
    disp[10:30, 20:60] = np.nan
    disp[120:130, 90:140] = np.inf
    return holes


def iou(a, b):
    """Return the IoU of two boolean masks."""
    return np.count_nonzero(a & b) / np.count_nonzero(a | b)


@pytest.mark.parametrize('noise_px', [0.0, 0.05])
def test_floor_labels_recover_the_floor_height_and_pitch(noise_px):
    disp, truth = render_scene(height=0.3, pitch=0.2)
    if noise_px:
        disp = disp + np.random.default_rng(1).normal(0.0, noise_px, disp.shape)
    holes = punch_holes(disp)
    labels, plane = realdata.floor_labels(disp, CALIB, tolerance_m=0.02, return_plane=True)
    assert labels.dtype == np.uint8 and labels.shape == (H, W)
    assert (labels[holes] == 255).all()
    assert set(np.unique(labels[~holes]).tolist()) == {0, 1}
    free = labels == 1
    assert iou(free[~holes], truth[~holes]) > 0.98
    # The box (0.25 m high) and the wall are blocked.
    assert not free[:40].any()
    assert plane.camera_height_m == pytest.approx(0.3, abs=0.01)
    assert plane.pitch_rad == pytest.approx(0.2, abs=0.01)
    assert plane.roll_rad == pytest.approx(0.0, abs=0.01)
    # The height convention: the camera is above the floor, floor points are at height ~0.
    points = realdata.disparity_to_points(disp, CALIB)
    assert np.nanmax(np.abs(plane.height(points[truth & ~holes]))) < 0.02
    assert plane.height(np.zeros(3)) == pytest.approx(0.3, abs=0.01)


def test_points_below_the_floor_beyond_the_tolerance_are_blocked():
    disp, truth = render_scene(height=0.3, pitch=0.2)
    points = realdata.disparity_to_points(disp, CALIB)
    _, plane = realdata.floor_labels(disp, CALIB, return_plane=True)
    # Push a floor patch 5 cm down along its rays (a pit): depth scales with the height.
    pit = np.zeros_like(truth)
    pit[135:145, 60:80] = True
    assert truth[pit].all()
    scale = 0.35 / 0.3
    pitted = disp.copy()
    pitted[pit] = CALIB.baseline_m * CALIB.focal / (points[pit][:, 2] * scale) - CALIB.doffs
    labels = realdata.floor_labels(pitted, CALIB, tolerance_m=0.02)
    assert (labels[pit] == 0).all()
    assert (labels[pit.nonzero()[0].max() + 1:, 60:80] == 1).all()
    # With a tolerance above the pit's depth it is floor again.
    assert (realdata.floor_labels(pitted, CALIB, tolerance_m=0.06)[pit] == 1).all()
    assert plane.camera_height_m == pytest.approx(0.3, abs=1e-3)


def test_disparity_to_points_follows_the_calibration():
    disp = np.array([[8.0, np.nan, np.inf, -2.0, -5.0]])
    points = realdata.disparity_to_points(disp, CALIB)
    z = CALIB.baseline_m * CALIB.focal / (8.0 + CALIB.doffs)
    np.testing.assert_allclose(points[0, 0], [(0 - CALIB.cx) * z / CALIB.focal,
                                              (0 - CALIB.cy) * z / CALIB.focal, z])
    assert np.isnan(points[0, 1:]).all()


def test_ransac_prefers_a_floor_to_a_bigger_wall():
    # Looking slightly up at a near wall: the wall has far more points than the floor.
    disp, truth = render_scene(height=0.3, pitch=-0.1, wall_m=1.5, box=None)
    assert np.count_nonzero(~truth) > 2 * np.count_nonzero(truth)
    points = realdata.disparity_to_points(disp, CALIB)
    plane = realdata.fit_floor_plane(points, np.random.default_rng(0))
    assert plane.camera_height_m == pytest.approx(0.3, abs=0.005)
    assert plane.pitch_rad == pytest.approx(-0.1, abs=0.005)
    # Without the "normal near vertical" constraint the wall would win.
    wall = realdata.fit_floor_plane(points, np.random.default_rng(0), max_tilt_deg=90.0)
    assert wall.camera_height_m == pytest.approx(1.5, abs=0.01)


def test_ransac_ignores_a_ceiling_bigger_than_the_floor():
    disp, truth = render_scene(height=0.3, pitch=-0.15, wall_m=4.0, ceiling_m=0.3, box=None)
    points = realdata.disparity_to_points(disp, CALIB)
    up, _ = camera_axes(-0.15)
    ceiling = np.abs(points @ up - 0.3) < 1e-6
    assert np.count_nonzero(ceiling) > 1.5 * np.count_nonzero(truth)
    plane = realdata.fit_floor_plane(points, np.random.default_rng(0))
    assert plane.camera_height_m == pytest.approx(0.3, abs=0.005)
    assert plane.pitch_rad == pytest.approx(-0.15, abs=0.005)


def test_no_floor_raises_a_clear_error():
    # A wall and a ceiling above the camera: the ceiling is horizontal but not below it.
    disp, _ = render_scene(height=0.3, pitch=-0.2, floor=False, ceiling_m=0.4, box=None)
    with pytest.raises(ValueError, match='no floor plane'):
        realdata.floor_labels(disp, CALIB)
    with pytest.raises(ValueError, match='no floor plane'):
        realdata.floor_labels(np.full((H, W), np.nan, np.float32), CALIB)


def test_warp_moves_a_constant_disparity_patch_by_d_columns():
    disp = np.full((6, 20), np.nan)
    labels = np.full((6, 20), 255, np.uint8)
    disp[1:4, 10:15] = 3.0
    labels[1:4, 10:15] = 1
    disp[4, 10:15] = 3.4  # rounds to a 3-column shift too (truncating would give 4)
    labels[4, 10:15] = 0
    out = realdata.warp_labels_left_to_right(labels, disp)
    expected = np.full((6, 20), 255, np.uint8)
    expected[1:4, 7:12] = 1
    expected[4, 7:12] = 0
    np.testing.assert_array_equal(out, expected)


def test_warp_keeps_the_nearer_pixel_and_leaves_holes_unlabelled():
    disp = np.full((1, 20), 1.0)
    labels = np.zeros((1, 20), np.uint8)
    disp[0, 10:15] = 4.0  # a near object in front of a far background
    labels[0, 10:15] = 1
    out = realdata.warp_labels_left_to_right(labels, disp)[0]
    # Object: left 10..14 -> right 6..10, hiding the background that lands on 6..8.
    assert out[6:11].tolist() == [1] * 5
    # Background: left 0..9 -> right -1..8 (0..5 visible), left 15..19 -> right 14..18.
    assert out[:6].tolist() == [0] * 6 and out[14:19].tolist() == [0] * 5
    # Disoccluded in the right view (11..13) and the right border (19): not labelled.
    assert out[11:14].tolist() == [255] * 3 and out[19] == 255


def write_png_grey_alpha(path, grey_alpha):
    """Write an (H, W, 2) uint8 array as an 8-bit grey+alpha PNG (OpenCV cannot)."""
    h, w, _ = grey_alpha.shape
    raw = b''.join(b'\x00' + grey_alpha[i].tobytes() for i in range(h))

    def chunk(kind, data):
        return (struct.pack('>I', len(data)) + kind + data
                + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))

    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 4, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def test_read_user_image_pair_alpha_zero_is_not_labelled(tmp_path):
    image = str(tmp_path / 'a.png')
    cv2.imwrite(image, np.full((2, 3, 3), 100, np.uint8))
    grey = np.array([[0, 255, 7], [255, 0, 255]], np.uint8)
    alpha = np.array([[255, 255, 0], [0, 9, 255]], np.uint8)
    expected = [[0, 1, 255], [255, 0, 1]]

    rgba = str(tmp_path / 'rgba_mask.png')
    cv2.imwrite(rgba, np.dstack([grey, grey, grey, alpha]))
    rgb, labels = datasets.read_user_image_pair(image, rgba)
    assert rgb.shape == (2, 3, 3)
    assert labels.tolist() == expected

    grey_alpha = str(tmp_path / 'la_mask.png')
    write_png_grey_alpha(grey_alpha, np.dstack([grey, alpha]))
    assert datasets.read_user_image_pair(image, grey_alpha)[1].tolist() == expected

    # eval keeps them out of the scores.
    assert evaluate.read_user_pair(image, rgba)[1].tolist() == expected


def test_read_user_image_pair_without_alpha_is_unchanged(tmp_path):
    image = str(tmp_path / 'a.png')
    cv2.imwrite(image, np.full((2, 3, 3), 100, np.uint8))
    grey = np.array([[0, 255, 7], [255, 0, 1]], np.uint8)
    cv2.imwrite(str(tmp_path / 'grey.png'), grey)
    labels = datasets.read_user_image_pair(image, str(tmp_path / 'grey.png'))[1]
    assert labels.tolist() == [[0, 1, 1], [1, 0, 1]]
    colour = np.zeros((2, 3, 3), np.uint8)
    colour[0, 1, 2] = 200
    cv2.imwrite(str(tmp_path / 'colour.png'), colour)
    labels = datasets.read_user_image_pair(image, str(tmp_path / 'colour.png'))[1]
    assert labels.tolist() == [[0, 1, 0], [0, 0, 0]]


def test_real_set_without_scikit_image_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'skimage', None)
    with pytest.raises(ImportError, match=r'pip install scikit-image==0\.26\.0'):
        realdata.write_motorcycle_set(str(tmp_path))
    assert cli.main(['real-set', '--out', str(tmp_path / 'set')]) == 2
    assert 'pip install scikit-image==0.26.0' in capsys.readouterr().err


def check_real_set(out_dir, stats):
    """Check the written Motorcycle set and its stats."""
    for name in ('motorcycle_left', 'motorcycle_right'):
        image = out_dir / f'{name}.png'
        mask = out_dir / f'{name}_mask.png'
        assert image.is_file() and mask.is_file()
        rgb, labels = datasets.read_user_image_pair(str(image), str(mask))
        assert rgb.shape == (500, 741, 3) and labels.shape == (500, 741)
        labelled = labels != 255
        free_share = np.count_nonzero(labels == 1) / np.count_nonzero(labelled)
        assert labelled.mean() > 0.8
        assert 0.2 < free_share < 0.45
        s = stats['images'][name]
        assert s['labelled_share'] == pytest.approx(labelled.mean())
        assert s['free_share'] == pytest.approx(free_share)
        # No floor in the top third (walls, shelves, the motorcycle's top).
        assert not (labels[:160] == 1).any()
    # The concrete floor at the bottom centre is free, the motorcycle's tank blocked.
    rgb, labels = datasets.read_user_image_pair(str(out_dir / 'motorcycle_left.png'),
                                                str(out_dir / 'motorcycle_left_mask.png'))
    assert (labels[460:500, 280:420] == 1).mean() > 0.95
    tank = labels[170:220, 380:440]
    assert (tank != 1).all() and (tank == 0).mean() > 0.9
    assert 0.3 < stats['camera_height_m'] < 3.0
    assert 0.0 < stats['pitch_rad'] < 0.6
    source = (out_dir / 'SOURCE.md').read_text(encoding='utf-8')
    for words in ('Middlebury 2014', 'Scharstein', 'GCPR 2014', 'scikit-image',
                  'reserved for evaluation; never train on it', '994.978', '193.001 mm'):
        assert words in source


def test_motorcycle_set_is_written_and_readable(tmp_path):
    pytest.importorskip('skimage', reason=SKIMAGE_REASON)
    stats = realdata.write_motorcycle_set(str(tmp_path))
    check_real_set(tmp_path, stats)
    assert stats['tolerance_m'] == 0.03


def test_real_set_command_end_to_end(tmp_path, capsys):
    pytest.importorskip('skimage', reason=SKIMAGE_REASON)
    assert cli.main(['real-set', '--out', str(tmp_path), '--tolerance', '0.02']) == 0
    out = capsys.readouterr().out
    assert 'motorcycle_left.png' in out and 'motorcycle_right.png' in out
    assert 'tolerance 0.02 m' in out
    assert '0.02 m' in (tmp_path / 'SOURCE.md').read_text(encoding='utf-8')
    # The masks are those of the labelling rule at that tolerance.
    from skimage import data as skdata
    _, _, disp = skdata.stereo_motorcycle()
    expected = realdata.floor_labels(disp, realdata.MOTORCYCLE_CALIBRATION, tolerance_m=0.02)
    for name, want in (('left', expected),
                       ('right', realdata.warp_labels_left_to_right(expected, disp))):
        got = datasets.read_user_image_pair(str(tmp_path / f'motorcycle_{name}.png'),
                                            str(tmp_path / f'motorcycle_{name}_mask.png'))[1]
        np.testing.assert_array_equal(got, want)
    assert 'real-set' in cli.COMMANDS


@pytest.mark.parametrize('bad', ['0', '-0.02', 'nan', 'inf', 'abc'])
def test_real_set_rejects_a_bad_tolerance_with_a_usage_error(tmp_path, bad, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(['real-set', '--out', str(tmp_path / 'set'), '--tolerance', bad])
    assert exc.value.code == 2
    assert '--tolerance' in capsys.readouterr().err
    assert not (tmp_path / 'set').exists()
