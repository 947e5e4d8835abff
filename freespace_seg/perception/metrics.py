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

"""
Segmentation metrics from a confusion matrix (numpy only).

All scores are computed from one confusion matrix accumulated over a whole data set
(pixel counts summed over images), not averaged per image, as is usual for semantic
segmentation benchmarks.

Conventions:

* ``confusion[t, p]`` counts pixels whose true class is ``t`` and predicted class is ``p``.
* Pixels whose label equals ``ignore_index`` (default 255) are not counted. Labels outside
  ``0 .. num_classes - 1`` that are not the ignore index raise ``ValueError``; predictions
  outside that range also raise.
* Empty classes: a class that appears neither in the labels nor in the predictions has no
  IoU or F1 (``tp + fp + fn == 0``), so its score is ``nan`` and it is left out of the
  means (``miou``, ``f1_macro``). A class that is absent from the labels but predicted
  somewhere scores 0. If every class is empty (no counted pixels), the means and the pixel
  accuracy are ``nan`` too.
"""

import math

import numpy as np

IGNORE_INDEX = 255


def confusion_matrix(pred, target, num_classes, ignore_index=IGNORE_INDEX):
    """
    Return the (num_classes, num_classes) int64 confusion matrix of two label arrays.

    ``pred`` and ``target`` are integer arrays of the same shape. Rows are true classes,
    columns predicted classes.
    """
    pred = np.asarray(pred)
    target = np.asarray(target)
    if pred.shape != target.shape:
        raise ValueError(f'pred shape {pred.shape} != target shape {target.shape}')
    num_classes = int(num_classes)
    if num_classes < 1:
        raise ValueError(f'num_classes must be >= 1, got {num_classes}')
    t = target.reshape(-1).astype(np.int64)
    p = pred.reshape(-1).astype(np.int64)
    if ignore_index is not None:
        keep = t != ignore_index
        t = t[keep]
        p = p[keep]
    if t.size and (t.min() < 0 or t.max() >= num_classes):
        raise ValueError(f'target has labels outside 0..{num_classes - 1} that are not the '
                         f'ignore index {ignore_index}')
    if p.size and (p.min() < 0 or p.max() >= num_classes):
        raise ValueError(f'pred has classes outside 0..{num_classes - 1}')
    counts = np.bincount(t * num_classes + p, minlength=num_classes * num_classes)
    return counts.reshape(num_classes, num_classes).astype(np.int64)


def _ratio(num, den):
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _parts(confusion):
    cm = np.asarray(confusion, dtype=np.int64)
    if cm.ndim != 2 or cm.shape[0] != cm.shape[1]:
        raise ValueError(f'confusion matrix must be square, got shape {cm.shape}')
    tp = np.diag(cm)
    fp = cm.sum(axis=0) - tp
    fn = cm.sum(axis=1) - tp
    return cm, tp, fp, fn


def per_class_iou(confusion):
    """Return IoU = tp / (tp + fp + fn) per class; ``nan`` for a class that is empty."""
    _, tp, fp, fn = _parts(confusion)
    return _ratio(tp, tp + fp + fn)


def per_class_f1(confusion):
    """F1 (Dice) = 2 tp / (2 tp + fp + fn) per class; ``nan`` for a class that is empty."""
    _, tp, fp, fn = _parts(confusion)
    return _ratio(2 * tp, 2 * tp + fp + fn)


def per_class_precision(confusion):
    """Precision = tp / (tp + fp) per class; ``nan`` for a class that is never predicted."""
    _, tp, fp, _ = _parts(confusion)
    return _ratio(tp, tp + fp)


def per_class_recall(confusion):
    """Recall = tp / (tp + fn) per class; ``nan`` for a class absent from the labels."""
    _, tp, _, fn = _parts(confusion)
    return _ratio(tp, tp + fn)


def _nanmean(values):
    values = np.asarray(values, dtype=np.float64)
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else math.nan


def mean_iou(confusion):
    """Mean IoU over the classes that are not empty (``nan`` if all are)."""
    return _nanmean(per_class_iou(confusion))


def macro_f1(confusion):
    """Mean F1 over the classes that are not empty (``nan`` if all are)."""
    return _nanmean(per_class_f1(confusion))


def pixel_accuracy(confusion):
    """Correct pixels / counted pixels (``nan`` if no pixel was counted)."""
    cm = np.asarray(confusion, dtype=np.int64)
    total = cm.sum()
    return float(np.trace(cm) / total) if total > 0 else math.nan


def _clean(x):
    x = float(x)
    return None if math.isnan(x) else x


def summarize(confusion, class_names, positive_class=None):
    """
    Return a JSON-ready dict of every score; ``nan`` becomes ``None``.

    ``positive_class`` (a class name or id, e.g. ``'free'``) adds ``f1_<name>``,
    ``precision_<name>`` and ``recall_<name>`` for that class, and ``blocked_called_free``:
    the share of labelled pixels of every other class that are predicted as it (the
    expensive error when it is the free class).
    """
    cm = np.asarray(confusion, dtype=np.int64)
    names = list(class_names)
    if len(names) != cm.shape[0]:
        raise ValueError(f'{len(names)} class names for a {cm.shape[0]}-class confusion matrix')
    iou = per_class_iou(cm)
    f1 = per_class_f1(cm)
    precision = per_class_precision(cm)
    recall = per_class_recall(cm)
    out = {
        'miou': _clean(mean_iou(cm)),
        'iou': {n: _clean(v) for n, v in zip(names, iou)},
        'f1': {n: _clean(v) for n, v in zip(names, f1)},
        'precision': {n: _clean(v) for n, v in zip(names, precision)},
        'recall': {n: _clean(v) for n, v in zip(names, recall)},
        'f1_macro': _clean(macro_f1(cm)),
        'pixel_accuracy': _clean(pixel_accuracy(cm)),
        'pixels': int(cm.sum()),
        'confusion': cm.tolist(),
    }
    if positive_class is not None:
        k = names.index(positive_class) if isinstance(positive_class, str) else int(positive_class)
        name = names[k]
        out[f'f1_{name}'] = _clean(f1[k])
        out[f'precision_{name}'] = _clean(precision[k])
        out[f'recall_{name}'] = _clean(recall[k])
        others = np.arange(cm.shape[0]) != k
        total = cm[others].sum()
        out['blocked_called_free'] = _clean(cm[others, k].sum() / total) if total else None
    return out


class ConfusionAccumulator:
    """Sums confusion matrices over many images."""

    def __init__(self, num_classes, ignore_index=IGNORE_INDEX):
        self.num_classes = int(num_classes)
        self.ignore_index = ignore_index
        self.matrix = np.zeros((self.num_classes, self.num_classes), np.int64)
        self.images = 0

    def update(self, pred, target, images=1):
        """Add a prediction / label pair; ``images`` says how many images the arrays hold."""
        self.matrix += confusion_matrix(pred, target, self.num_classes, self.ignore_index)
        self.images += int(images)
        return self
