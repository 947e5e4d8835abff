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

"""Letterbox geometry, normalization and the mask's way back to camera resolution."""

import cv2
from freespace_seg.perception.model_card import card_from_dict
from freespace_seg.perception.postprocess import (class_lut, colorize, decode_classes,
                                                  free_space_mask, overlay, palette_lut)
from freespace_seg.perception.preprocess import (box_factor, Letterbox, Preprocessor,
                                                 resize_area_fast)
import numpy as np
import pytest
from support import tiny_card


@pytest.mark.parametrize('src,dst,expect', [
    ((1280, 720), (480, 272), (480, 270, 0, 1)),
    ((640, 480), (480, 272), (363, 272, 58, 0)),
    ((480, 272), (480, 272), (480, 272, 0, 0)),
    ((100, 1000), (480, 272), (27, 272, 226, 0)),
    ((333, 77), (64, 48), (64, 15, 0, 16)),
])
def test_letterbox_geometry(src, dst, expect):
    lb = Letterbox.compute(*src, *dst)
    assert (lb.content_w, lb.content_h, lb.pad_left, lb.pad_top) == expect
    # The content is centred: padding differs by at most one pixel on the two sides.
    assert abs((dst[0] - lb.content_w - lb.pad_left) - lb.pad_left) <= 1
    assert abs((dst[1] - lb.content_h - lb.pad_top) - lb.pad_top) <= 1


@pytest.mark.parametrize('src', [(1280, 720), (640, 480), (333, 77), (77, 333), (31, 17)])
def test_letterbox_point_round_trip(src):
    lb = Letterbox.compute(src[0], src[1], 64, 48)
    u = np.array([0.0, src[0] - 1.0, src[0] / 3.0])
    v = np.array([0.0, src[1] - 1.0, src[1] / 2.0])
    x, y = lb.to_network(u, v)
    assert np.all((x >= lb.pad_left - 0.5) & (x <= lb.pad_left + lb.content_w - 0.5))
    assert np.all((y >= lb.pad_top - 0.5) & (y <= lb.pad_top + lb.content_h - 0.5))
    u2, v2 = lb.to_source(x, y)
    np.testing.assert_allclose(u2, u, atol=1e-9)
    np.testing.assert_allclose(v2, v, atol=1e-9)


@pytest.mark.parametrize('src', [(1280, 720), (640, 480), (333, 77), (77, 333), (64, 48)])
def test_mask_round_trip_keeps_geometry_and_ids(src):
    """A source mask -> network -> source comes back nearly identical, with no new ids."""
    w, h = src
    lb = Letterbox.compute(w, h, 64, 48)
    mask = np.zeros((h, w), np.uint8)
    mask[h // 2:, :] = 1                       # lower half free
    mask[:, : w // 4] = 7                      # a left band of another class
    net = lb.image_to_network(mask, pad_value=255, interpolation=0)  # INTER_NEAREST
    rows, cols = lb.content_slice
    # Padding untouched, content present.
    assert np.all(np.delete(net, np.r_[rows], axis=0) == 255)
    back = lb.mask_to_source(net)
    assert back.shape == (h, w)
    assert set(np.unique(back)) <= {0, 1, 7}
    # Only a band at most one network pixel wide along each of the two boundaries may differ.
    assert np.mean(back != mask) <= 1.0 / lb.content_h + 1.0 / lb.content_w + 1e-9


def test_mask_to_source_is_nearest_not_blended():
    lb = Letterbox.compute(1280, 720, 480, 272)
    net = np.zeros((272, 480), np.uint8)
    net[:, ::2] = 2                            # alternating ids: any blending would make 1
    back = lb.mask_to_source(net)
    assert back.shape == (720, 1280)
    assert set(np.unique(back)) == {0, 2}


def test_padding_rows_do_not_leak_into_the_mask():
    lb = Letterbox.compute(1280, 720, 480, 272)
    net = np.full((272, 480), 1, np.uint8)
    net[0, :] = 5                              # padding row on top
    net[-1, :] = 5                             # and at the bottom
    back = lb.mask_to_source(net)
    assert not np.any(back == 5)


def test_preprocessor_normalizes_and_lays_out():
    card = card_from_dict(tiny_card(64, 48))
    pre = Preprocessor(card, 128, 96)          # same aspect: no padding
    img = np.zeros((96, 128, 3), np.uint8)
    img[..., 0] = 255
    img[..., 1] = 0
    img[..., 2] = 128
    t = pre(img)
    assert t.shape == (1, 3, 48, 64) and t.dtype == np.float32
    np.testing.assert_allclose(t[0, 0], 1.0, atol=1e-6)
    np.testing.assert_allclose(t[0, 1], -1.0, atol=1e-6)
    np.testing.assert_allclose(t[0, 2], 128 / 127.5 - 1.0, atol=1e-6)


def test_preprocessor_bgr_nhwc_and_padding():
    c = tiny_card(64, 48)
    c['input'].update({'layout': 'NHWC', 'shape': [1, 48, 64, 3], 'color_order': 'BGR',
                       'mean': [0.0, 0.0, 0.0], 'std': [1.0, 1.0, 1.0], 'pad_value': 51})
    card = card_from_dict(c)
    pre = Preprocessor(card, 64, 24)           # wide: 12 rows of padding top and bottom
    img = np.zeros((24, 64, 3), np.uint8)
    img[..., 0] = 255                          # red
    t = pre(img)
    assert t.shape == (1, 48, 64, 3)
    np.testing.assert_allclose(t[0, 24, 10], [0.0, 0.0, 1.0], atol=1e-6)   # BGR order
    np.testing.assert_allclose(t[0, 0, 0], [0.2, 0.2, 0.2], atol=1e-6)     # pad 51/255


def test_decode_two_class_matches_argmax():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(1, 2, 30, 40)).astype(np.float32)
    np.testing.assert_array_equal(decode_classes(logits, 'logits'),
                                  np.argmax(logits[0], axis=0))
    nhwc = np.moveaxis(logits, 1, -1)
    np.testing.assert_array_equal(decode_classes(nhwc, 'logits', 'NHWC'),
                                  np.argmax(logits[0], axis=0))


def test_decode_many_classes_single_channel_and_argmax_outputs():
    rng = np.random.default_rng(1)
    probs = rng.random((1, 5, 8, 9)).astype(np.float32)
    np.testing.assert_array_equal(decode_classes(probs, 'probabilities'),
                                  np.argmax(probs[0], axis=0))
    single = np.array([[[[0.7, 0.2], [0.5, 0.51]]]], np.float32)
    np.testing.assert_array_equal(decode_classes(single, 'probabilities'), [[1, 0], [0, 1]])
    np.testing.assert_array_equal(decode_classes(single - 0.5, 'logits'), [[1, 0], [0, 1]])
    ids = np.array([[[3, 1], [0, 2]]], np.int64)
    np.testing.assert_array_equal(decode_classes(ids, 'argmax'), [[3, 1], [0, 2]])
    with pytest.raises(ValueError):
        decode_classes(np.zeros((2, 3)), 'logits')


def test_free_mask_colorize_overlay():
    mask = np.array([[0, 1], [2, 1]], np.uint8)
    free = free_space_mask(mask, class_lut([1, 2]))
    np.testing.assert_array_equal(free, [[0, 255], [255, 255]])
    colored = colorize(mask, palette_lut([(10, 20, 30), (40, 50, 60), (70, 80, 90)]))
    np.testing.assert_array_equal(colored[1, 0], [70, 80, 90])
    rgb = np.full((2, 2, 3), 100, np.uint8)
    blended = overlay(rgb, colored, 0.5)
    np.testing.assert_array_equal(blended[0, 0], [55, 60, 65])
    np.testing.assert_array_equal(overlay(rgb, colored, 0.0), rgb)


def test_colorize_equals_the_table_lookup_for_every_id():
    """Colorize is ``lut[mask]`` for all 256 ids, odd sizes, a strided view and ``out=``."""
    rng = np.random.default_rng(5)
    lut = rng.integers(0, 256, (256, 3), dtype=np.uint8)
    mask = rng.integers(0, 256, (37, 51), dtype=np.uint8)
    np.testing.assert_array_equal(colorize(mask, lut), lut[mask])
    view = mask[::2, 1::3]
    np.testing.assert_array_equal(colorize(view, lut), lut[view])
    out = np.empty((37, 51, 3), np.uint8)
    assert colorize(mask, lut, out=out) is out
    np.testing.assert_array_equal(out, lut[mask])
    palette = palette_lut([(255, 0, 0), (0, 0, 255)])   # RGB order kept, not BGR
    np.testing.assert_array_equal(colorize(np.array([[0, 1, 2]], np.uint8), palette),
                                  [[[255, 0, 0], [0, 0, 255], [0, 0, 0]]])


@pytest.mark.parametrize('src,dst,k', [
    ((1280, 720), (480, 270), 2),
    ((1280, 720), (384, 216), 2),    # 3 does not divide 1280: the box step is 2x, then 1.67x
    ((1920, 1080), (480, 270), None),  # 4x exactly: INTER_AREA's own integer path
    ((1280, 720), (640, 360), None),
    ((1279, 719), (384, 216), None),  # no whole factor divides both sides
    ((2560, 1440), (384, 216), 5),     # 6 does not divide 2560
    ((2560, 1440), (200, 112), 10),    # 12 and 11 do not divide both sides
    ((1500, 600), (300, 120), None),   # 5x exactly
    ((1500, 600), (140, 56), 10),
    ((640, 360), (384, 216), None),    # under 2x: INTER_AREA
])
def test_box_factor(src, dst, k):
    assert box_factor(*src, *dst) == k


@pytest.mark.parametrize('src,dst', [((1280, 720), (384, 216)), ((1280, 720), (480, 270)),
                                     ((2560, 1440), (384, 216)), ((1279, 719), (384, 216))])
def test_resize_area_fast_is_close_to_inter_area(src, dst):
    rng = np.random.default_rng(3)
    coarse = rng.integers(0, 256, (src[1] // 40, src[0] // 40, 3), dtype=np.uint8)
    image = cv2.resize(coarse, src, interpolation=cv2.INTER_CUBIC)
    image[::37] = 255   # thin bright lines, which a plain bilinear shrink aliases
    out = np.zeros((dst[1], dst[0], 3), np.uint8)
    fast = resize_area_fast(image, dst, dst=out)
    area = cv2.resize(image, dst, interpolation=cv2.INTER_AREA)
    linear = cv2.resize(image, dst, interpolation=cv2.INTER_LINEAR)
    assert fast.shape == area.shape

    def error(x):
        return np.abs(x.astype(int) - area).mean()
    # measured: 1.6-1.8 grey levels where the box step is taken, against 2.9-4.9 bilinear
    assert error(fast) < 2.0
    assert error(fast) < 0.6 * error(linear)
