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

"""Segmentation metrics against hand-computed cases."""

import math

from freespace_seg.perception import metrics
import numpy as np
import pytest


def test_confusion_matrix_rows_are_labels_columns_predictions():
    target = np.array([[0, 0, 1], [1, 1, 1]])
    pred = np.array([[0, 1, 1], [0, 1, 1]])
    cm = metrics.confusion_matrix(pred, target, 2)
    # label 0: predicted 0 once, 1 once; label 1: predicted 0 once, 1 three times.
    assert cm.tolist() == [[1, 1], [1, 3]]
    assert cm.dtype == np.int64


def test_hand_computed_scores():
    cm = np.array([[1, 1], [1, 3]])
    # class 0: tp 1, fp 1, fn 1 -> IoU 1/3, F1 2/4; class 1: tp 3, fp 1, fn 1 -> IoU 3/5, F1 6/8
    np.testing.assert_allclose(metrics.per_class_iou(cm), [1 / 3, 3 / 5])
    np.testing.assert_allclose(metrics.per_class_f1(cm), [0.5, 0.75])
    np.testing.assert_allclose(metrics.per_class_precision(cm), [0.5, 0.75])
    np.testing.assert_allclose(metrics.per_class_recall(cm), [0.5, 0.75])
    assert metrics.mean_iou(cm) == pytest.approx((1 / 3 + 3 / 5) / 2)
    assert metrics.macro_f1(cm) == pytest.approx(0.625)
    assert metrics.pixel_accuracy(cm) == pytest.approx(4 / 6)


def test_asymmetric_errors():
    # 10 blocked pixels, 2 of them called free; 5 free pixels, all right.
    target = np.array([0] * 10 + [1] * 5)
    pred = np.array([0] * 8 + [1] * 2 + [1] * 5)
    cm = metrics.confusion_matrix(pred, target, 2)
    assert cm.tolist() == [[8, 2], [0, 5]]
    iou = metrics.per_class_iou(cm)
    assert iou[0] == pytest.approx(8 / 10)
    assert iou[1] == pytest.approx(5 / 7)
    f1 = metrics.per_class_f1(cm)
    assert f1[1] == pytest.approx(10 / 12)
    assert metrics.pixel_accuracy(cm) == pytest.approx(13 / 15)


def test_ignore_index_is_not_counted():
    target = np.array([0, 1, 255, 255])
    pred = np.array([0, 1, 1, 0])
    cm = metrics.confusion_matrix(pred, target, 2)
    assert cm.tolist() == [[1, 0], [0, 1]]
    assert metrics.mean_iou(cm) == 1.0
    # No ignore index: 255 is then an invalid label.
    with pytest.raises(ValueError):
        metrics.confusion_matrix(pred, target, 2, ignore_index=None)


def test_invalid_inputs_raise():
    with pytest.raises(ValueError):
        metrics.confusion_matrix(np.zeros(3), np.zeros(4), 2)
    with pytest.raises(ValueError):
        metrics.confusion_matrix(np.array([0, 2]), np.array([0, 1]), 2)
    with pytest.raises(ValueError):
        metrics.confusion_matrix(np.array([0, 1]), np.array([0, 3]), 2)
    with pytest.raises(ValueError):
        metrics.per_class_iou(np.zeros((2, 3)))


def test_class_absent_everywhere_is_nan_and_left_out_of_means():
    # Only class 1 appears, in labels and predictions: class 0 has no IoU.
    cm = metrics.confusion_matrix(np.ones(5), np.ones(5), 2)
    iou = metrics.per_class_iou(cm)
    assert math.isnan(iou[0]) and iou[1] == 1.0
    assert metrics.mean_iou(cm) == 1.0
    assert metrics.macro_f1(cm) == 1.0


def test_class_absent_from_labels_but_predicted_scores_zero():
    cm = metrics.confusion_matrix(np.array([0, 1, 1]), np.array([1, 1, 1]), 2)
    iou = metrics.per_class_iou(cm)
    assert iou[0] == 0.0
    assert iou[1] == pytest.approx(2 / 3)
    assert metrics.mean_iou(cm) == pytest.approx(1 / 3)


def test_no_counted_pixels_gives_nan():
    cm = metrics.confusion_matrix(np.array([0, 1]), np.array([255, 255]), 2)
    assert cm.sum() == 0
    assert math.isnan(metrics.mean_iou(cm))
    assert math.isnan(metrics.macro_f1(cm))
    assert math.isnan(metrics.pixel_accuracy(cm))


def test_perfect_prediction():
    rng = np.random.default_rng(0)
    target = rng.integers(0, 3, size=(7, 9))
    cm = metrics.confusion_matrix(target, target, 3)
    np.testing.assert_array_equal(metrics.per_class_iou(cm), [1.0, 1.0, 1.0])
    assert metrics.pixel_accuracy(cm) == 1.0


def test_accumulator_sums_images():
    acc = metrics.ConfusionAccumulator(2)
    acc.update(np.array([0, 1]), np.array([0, 0]))
    acc.update(np.array([[1, 1], [0, 1]]), np.array([[1, 1], [1, 255]]), images=2)
    assert acc.images == 3
    assert acc.matrix.tolist() == [[1, 1], [1, 2]]


def test_summarize_is_json_ready():
    import json

    cm = np.array([[8, 2], [0, 5]])
    s = metrics.summarize(cm, ['blocked', 'free'], positive_class='free')
    assert s['iou']['blocked'] == pytest.approx(0.8)
    assert s['f1_free'] == pytest.approx(10 / 12)
    assert s['precision_free'] == pytest.approx(5 / 7)
    assert s['recall_free'] == pytest.approx(1.0)
    assert s['pixels'] == 15
    assert s['confusion'] == [[8, 2], [0, 5]]
    json.dumps(s)
    empty = metrics.summarize(np.zeros((2, 2), np.int64), ['a', 'b'])
    assert empty['miou'] is None and empty['iou'] == {'a': None, 'b': None}
    with pytest.raises(ValueError):
        metrics.summarize(cm, ['only_one'])
