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
``python -m freespace_seg eval``: IoU, mIoU, F1 and pixel accuracy of an ONNX model.

Inference goes through :class:`freespace_seg.perception.pipeline.SegmentationPipeline` on ONNX
Runtime (CPU), reading the model card beside the ``.onnx``, so the scores are those of what
the robot runs: the same letterbox, normalization and mapping of the mask back to camera
pixels. No torch is needed.

Three data sources, exactly one per run:

* ``--data DIR``: a split of a dataset written by ``python -m freespace_seg generate``;
* ``--render N``: N frames rendered on the fly by the synthetic renderer; with
  ``--style shifted`` in a held-out look (other floor and wall materials, other lighting)
  that training never sees, to measure robustness to a change of appearance;
* ``--images DIR``: your own images (``.png``, ``.jpg``, ``.jpeg``), each with a PNG mask
  named ``<stem>_mask.png`` beside it or ``masks/<stem>.png`` in a ``masks/`` subfolder;
  mask value 0 is blocked, any other value free floor.

Examples::

    python -m freespace_seg eval --model models/freespace_unet.onnx --data data/synth --split test
    python -m freespace_seg eval --model models/freespace_unet.onnx --render 300 --seed 7 \
        --update-card
    python -m freespace_seg eval --images data/my_photos --figures 5 --layers auto

Results are printed and saved as ``metrics.json`` and ``metrics.md`` in ``--out``, with
pictures of the ``--figures`` K worst and best images by per-image mIoU (``worst_1.png``,
``best_1.png``, ...: input | prediction overlay | error map) and, with ``--layers``, the
feature maps of some layers of the network on the first image (``layers.png``).
"""

import datetime
import heapq
import json
import math
import os
import re
import statistics
import sys
import time

import cv2
from freespace_seg.common.markdown import number, table
from freespace_seg.perception import metrics
from freespace_seg.perception.timing import measure_latency
from freespace_seg.sim.generate import add_camera_arguments, camera_overrides
from freespace_seg.training import data as datasets
from freespace_seg.training.card import update_card
import numpy as np

DEFAULT_MODEL = os.path.join('models', 'freespace_lite0.onnx')
ROUND = 4


def add_arguments(parser):
    """Add the ``eval`` options to ``parser``."""
    parser.add_argument('--model', default=DEFAULT_MODEL,
                        help='ONNX model with its card (same stem, .yaml) beside it '
                             '(default: %(default)s)')
    src = parser.add_argument_group('data (one of --data, --render or --images)')
    src.add_argument('--data', metavar='DIR',
                     help='dataset directory written by `python -m freespace_seg generate`')
    src.add_argument('--split', default='test', choices=datasets.SPLITS,
                     help='split of --data to score (default: %(default)s)')
    src.add_argument('--render', type=int, metavar='N',
                     help='render N frames on the fly with the synthetic renderer instead')
    src.add_argument('--images', metavar='DIR',
                     help='score your own images instead: DIR holds .png/.jpg/.jpeg images, '
                          'each with a PNG mask <stem>_mask.png beside it or masks/<stem>.png '
                          '(0 = blocked, any other value = free; in a mask with an alpha '
                          'channel, alpha 0 = not labelled)')
    src.add_argument('--seed', type=int, default=1000,
                     help='seed of the rendered frames (default: %(default)s; use one that '
                          'training never saw)')
    src.add_argument('--without', default='', metavar='FACTOR,...',
                     help='with --render: switch these randomization factors off, e.g. the '
                          'ones a model was trained without (scored as '
                          'evaluation.synthetic_test_without_<factors>)')
    src.add_argument('--style', default='default', choices=('default', 'shifted'),
                     help='look of the rendered frames: the training one, or "shifted", '
                          'material families and lighting that training never sees (same '
                          'ground truth rule; scored as evaluation.synthetic_shifted) '
                          '(default: %(default)s)')
    add_camera_arguments(src.add_argument)
    src.add_argument('--by-surface', action='store_true',
                     help='with --render: also break the errors down by what each pixel shows '
                          '(floor, wall, ceiling, the top and the sides of each kind of '
                          'obstacle): an "Errors by surface" table in the report and '
                          '"surfaces" in metrics.json')
    src.add_argument('--width', type=int, default=480,
                     help='width of rendered frames (default: %(default)s)')
    src.add_argument('--height', type=int, default=270,
                     help='height of rendered frames (default: %(default)s)')
    src.add_argument('--limit', type=int, help='score at most this many frames')
    parser.add_argument('--out', metavar='DIR',
                        help='where to write metrics.json, metrics.md and the pictures '
                             '(default: data/eval/<model>-<source>)')
    parser.add_argument('--figures', type=int, default=3, metavar='K',
                        help='write worst_1.png .. worst_K.png and best_1.png .. best_K.png: '
                             'the K images with the lowest and highest per-image mIoU as '
                             'input | prediction overlay | error map (red: predicted free but '
                             'blocked); 0 to skip (default: %(default)s)')
    parser.add_argument('--layers', metavar='NAMES',
                        help='also write layers.png, the first 16 channels of these ONNX '
                             'tensors (comma-separated names, or "auto" for the last ReLU of '
                             'each encoder stage and of the last decoder stage) on the first '
                             'image; needs the onnx package')
    parser.add_argument('--threads', type=int, default=2,
                        help='ONNX Runtime intra-op threads (default: %(default)s)')
    parser.add_argument('--latency-runs', type=int, default=50,
                        help='timed runs of the bare model for the latency figure, 0 to skip '
                             '(default: %(default)s)')
    parser.add_argument('--update-card', action='store_true',
                        help='write the scores (and latency) into the model card as '
                             'evaluation.synthetic_<split> (evaluation.user_images_<folder> with '
                             '--images, evaluation.synthetic_shifted with --style shifted)')


# ---------------------------------------------------------------------------------------------
# Scoring


def image_miou(pred, label, num_classes, ignore_index=datasets.IGNORE_INDEX):
    """
    Return the mIoU of one image alone (``nan`` when it has no labelled pixel).

    Label pixels equal to ``ignore_index`` are not counted; a class that is neither in the
    label nor in the prediction of this image is left out of the mean.
    """
    cm = metrics.confusion_matrix(pred, label, num_classes, ignore_index)
    return metrics.mean_iou(cm), cm


class CaseCollector:
    """
    Keep the ``k`` worst and ``k`` best images by per-image mIoU, and optionally the first.

    Only those frames are held (two heaps of at most ``k`` entries each), not every frame.
    Ties go to the earlier image. Images without a labelled pixel are not ranked.
    """

    def __init__(self, k, keep_first=False, names=None):
        self.k = max(int(k), 0)
        self.keep_first = bool(keep_first)
        self.names = names
        self.first = None
        self.scores = []
        self._worst = []  # max-heap on (miou, index): the root is the least bad kept
        self._best = []   # min-heap on (miou, -index): the root is the least good kept

    def name(self, index):
        """Return a readable name of image ``index`` (its file name when known)."""
        if self.names is not None and index < len(self.names):
            return self.names[index]
        return f'frame {index}'

    def add(self, index, miou, rgb, label, pred):
        """Offer one scored image."""
        if self.keep_first and self.first is None:
            self.first = (index, rgb)
        if miou is None or math.isnan(miou):
            return
        self.scores.append(float(miou))
        if self.k == 0:
            return
        item = (index, float(miou), rgb, label, pred)
        worst_key = (-miou, -index)
        if len(self._worst) < self.k:
            heapq.heappush(self._worst, (worst_key, item))
        elif worst_key > self._worst[0][0]:
            heapq.heapreplace(self._worst, (worst_key, item))
        best_key = (miou, -index)
        if len(self._best) < self.k:
            heapq.heappush(self._best, (best_key, item))
        elif best_key > self._best[0][0]:
            heapq.heapreplace(self._best, (best_key, item))

    def worst(self):
        """Return the kept worst images, worst first, as (index, miou, rgb, label, pred)."""
        return [item for _, item in sorted(self._worst, reverse=True)]

    def best(self):
        """Return the kept best images, best first, as (index, miou, rgb, label, pred)."""
        return [item for _, item in sorted(self._best, reverse=True)]

    def stats(self):
        """Return mean, median, min and max of the per-image mIoU (None when empty)."""
        if not self.scores:
            return None
        return {'mean': _r(statistics.fmean(self.scores)),
                'median': _r(statistics.median(self.scores)),
                'min': _r(min(self.scores)), 'max': _r(max(self.scores)),
                'images': len(self.scores)}


def evaluate_frames(model_path, frames, total=None, threads=2, desc='eval', cases=None,
                    surfaces=None):
    """
    Segment (rgb, mask) frames with the ONNX pipeline and score them.

    Returns ``(summary, seconds_per_image)`` where ``summary`` is
    :func:`freespace_seg.perception.metrics.summarize` of the accumulated confusion matrix plus
    ``images``. With a :class:`CaseCollector` as ``cases``, every image's own mIoU is
    offered to it (the timing covers the pipeline only). With a
    :class:`~freespace_seg.training.surfaces.SurfaceErrors` as ``surfaces``, the frames are
    (rgb, mask, (codes, names)) triples (see :func:`surface_frames`) and every prediction
    is added to it as well.
    """
    from freespace_seg.common.progress import progress
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model_path, backend='onnxruntime', num_threads=threads)
    names = list(pipe.card.class_names)
    acc = metrics.ConfusionAccumulator(len(names))
    seconds = 0.0
    for index, item in enumerate(progress(frames, total=total, desc=desc)):
        rgb, label = item[0], item[1]
        t0 = time.perf_counter()
        pred = pipe.segment(rgb)
        seconds += time.perf_counter() - t0
        if surfaces is not None:
            codes, surface_names = item[2]
            surfaces.add(pred, label, codes, surface_names, free_ids=pipe.card.free_space,
                         ignore_index=acc.ignore_index)
        if cases is None:
            acc.update(pred, label)
            continue
        miou, cm = image_miou(pred, label, len(names), acc.ignore_index)
        acc.matrix += cm
        acc.images += 1
        cases.add(index, miou, rgb, label, pred)
    pipe.close()
    positive = names[pipe.card.free_space[0]]
    summary = metrics.summarize(acc.matrix, names, positive_class=positive)
    summary['images'] = acc.images
    return summary, seconds / max(acc.images, 1)


def latency_key(threads, shape):
    """Card key for a latency figure, e.g. ``onnxruntime_cpu_2threads_480x272_median``."""
    return f'onnxruntime_cpu_{int(threads)}threads_{shape[-1]}x{shape[-2]}_median'


# ---------------------------------------------------------------------------------------------
# Pictures: best and worst images, feature maps

#: RGB colours of the error map
ERROR_COLORS = {
    'free_correct': (0, 110, 40),       # free floor, predicted free: dark green
    'blocked_correct': (64, 64, 64),    # blocked, predicted blocked: dark grey
    'false_free': (235, 20, 20),        # predicted free but blocked: red, the dangerous error
    'false_blocked': (255, 180, 0),     # predicted blocked but free: orange
    'other': (150, 60, 200),            # two blocked (or two free) classes confused: purple
    'ignored': (0, 0, 0),               # label 255: not scored
}
ERROR_LEGEND = ('dark green: free, correct; dark grey: blocked, correct; red: predicted free '
                'but blocked (the dangerous error); orange: predicted blocked but free; '
                'black: not labelled (ignored)')
LAYER_CHANNELS = 16
AUTO_LAYERS = 7


def error_map(pred, label, free_ids, ignore_index=datasets.IGNORE_INDEX):
    """Return an (H, W, 3) uint8 RGB picture of where a prediction is right or wrong."""
    from freespace_seg.perception.postprocess import class_lut

    is_free = class_lut(free_ids, true_value=1).astype(bool)
    pred_free = is_free[pred]
    label_free = is_free[label]
    valid = label != ignore_index
    correct = pred == label
    out = np.zeros(label.shape + (3,), np.uint8)
    out[valid & correct & label_free] = ERROR_COLORS['free_correct']
    out[valid & correct & ~label_free] = ERROR_COLORS['blocked_correct']
    out[valid & ~correct & (pred_free == label_free)] = ERROR_COLORS['other']
    out[valid & pred_free & ~label_free] = ERROR_COLORS['false_free']
    out[valid & ~pred_free & label_free] = ERROR_COLORS['false_blocked']
    return out


def _caption(bgr, text, height):
    """Return ``bgr`` with a black strip of ``height`` pixels on top holding ``text``."""
    width = bgr.shape[1]
    strip = np.zeros((height, width, 3), np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    scale = height / 34.0
    (tw, th), _ = cv2.getTextSize(text, font, scale, 1)
    if tw > width - 6:
        scale *= (width - 6) / tw
        (tw, th), _ = cv2.getTextSize(text, font, scale, 1)
    cv2.putText(strip, text, (3, (height + th) // 2), font, scale, (255, 255, 255), 1,
                cv2.LINE_AA)
    return np.vstack([strip, bgr])


def case_figure(rgb, label, pred, card, title, miou, alpha=0.5):
    """
    Return one BGR figure: input | prediction overlay | error map, each with a caption.

    The overlay paints the prediction in the model card's palette, as the node does.
    """
    from freespace_seg.perception.postprocess import colorize, overlay, palette_lut

    colored = colorize(np.ascontiguousarray(pred, np.uint8), palette_lut(card.palette))
    panels = [(rgb, f'{title}, mIoU {miou:.3f}'),
              (overlay(rgb, colored, alpha), f'prediction, mIoU {miou:.3f}'),
              (error_map(pred, label, card.free_space),
               'errors: red = false free, orange = false blocked')]
    height = int(max(18, round(rgb.shape[0] * 0.08)))
    gap = np.full((rgb.shape[0] + height, 2, 3), 255, np.uint8)
    tiles = []
    for img, text in panels:
        if tiles:
            tiles.append(gap)
        tiles.append(_caption(cv2.cvtColor(img, cv2.COLOR_RGB2BGR), text, height))
    return np.hstack(tiles)


def write_case_figures(cases, card, out_dir):
    """Write ``worst_<i>.png`` and ``best_<i>.png``; return their list for the reports."""
    os.makedirs(out_dir, exist_ok=True)
    written = {'worst': [], 'best': []}
    for kind, items in (('worst', cases.worst()), ('best', cases.best())):
        for rank, (index, miou, rgb, label, pred) in enumerate(items, 1):
            name = cases.name(index)
            figure = case_figure(rgb, label, pred, card, f'{kind} {rank}: {name}', miou)
            path = os.path.join(out_dir, f'{kind}_{rank}.png')
            if not cv2.imwrite(path, figure):
                raise OSError(f'cannot write {path}')
            written[kind].append({'file': os.path.basename(path), 'image': name,
                                  'index': index, 'miou': _r(miou)})
    return written


def _load_onnx(model_path):
    try:
        import onnx
    except ImportError:
        raise SystemExit('eval: --layers needs the onnx package (pip install onnx)')
    return onnx.load(model_path)


def tensor_names(model):
    """Return the names of the tensors computed by the graph's nodes, in graph order."""
    return [name for node in model.graph.node for name in node.output if name]


def auto_layers(model, limit=AUTO_LAYERS):
    """
    Pick a few ReLU outputs worth looking at: the last one of each top-level block.

    ReLU outputs are those of ``Relu`` and ``Clip`` (ReLU6) nodes and tensors named
    ``.../Relu...`` or ``.../Clip...`` (a quantized graph fuses the ReLU into its Conv but
    keeps the name; its float copies after ``DequantizeLinear`` are then picked). In an
    EfficientNet-Lite model (``/encoder/_blocks.N/...``) every MBConv block counts as one.
    Blocks are named by the first part of the tensor name (``/enc2/enc2.1/...`` is in
    ``enc2``). Every encoder block is kept (``stem``, ``enc1`` ... ``bottom``), of the
    decoder blocks (``dec*``, ``up*``) only the last one, at
    most ``limit`` layers in all. The global-context branch (1x1 maps) is left out.
    """
    last = {}
    for node in model.graph.node:
        name = node.output[0] if node.output else ''
        # A quantized graph fuses Conv + ReLU but keeps the ReLU's output name.
        if not name or (node.op_type not in ('Relu', 'Clip')
                        and not name.rsplit('/', 1)[-1].startswith(('Relu', 'Clip'))):
            continue
        parts = [p for p in name.split('/') if p]
        block = parts[0] if len(parts) > 1 else name
        if block == 'encoder' and len(parts) > 2:
            block = f'encoder/{parts[1]}'   # a pretrained encoder: one block per MBConv
        if block == 'context':
            continue  # the global-context branch: 1x1 maps, nothing to look at
        last.pop(block, None)  # keep the block where it last appears
        last[block] = name
    encoder = [n for b, n in last.items() if not b.lower().startswith(('dec', 'up'))]
    decoder = [n for b, n in last.items() if b.lower().startswith(('dec', 'up'))]
    picked = encoder + decoder[-1:]
    if len(picked) > limit:
        keep = np.unique(np.linspace(0, len(picked) - 1, limit).round().astype(int))
        picked = [picked[i] for i in keep]
    return picked


def resolve_layers(model_path, spec):
    """Return the tensor names that ``--layers`` asks for; SystemExit if one is unknown."""
    model = _load_onnx(model_path)
    if spec.strip() == 'auto':
        names = auto_layers(model)
        if not names:
            raise SystemExit(f'eval: --layers auto found no ReLU output in {model_path}; '
                             'name the tensors instead, e.g. '
                             + ', '.join(tensor_names(model)[:6]))
        return names
    names = [n.strip() for n in spec.split(',') if n.strip()]
    valid = tensor_names(model)
    known = set(valid)
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        hints = auto_layers(model) or valid
        raise SystemExit(f'eval: --layers: no tensor named {", ".join(unknown) or "?"} in '
                         f'{model_path} ({len(valid)} tensors); valid names are e.g. '
                         + ', '.join(hints[:6]) + ' (or use --layers auto)')
    return names


def layer_outputs(model_path, tensor, names, threads=2):
    """
    Run the model with ``names`` added as graph outputs; return their arrays in order.

    The tensors are appended to a copy of the graph's outputs (element type from shape
    inference, float when unknown, no shape), and an ONNX Runtime session is built from the
    modified model's bytes.
    """
    import onnx
    from onnx import helper
    import onnxruntime as ort

    model = _load_onnx(model_path)
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            types[vi.name] = vi.type.tensor_type.elem_type
    except Exception:  # noqa: B902 -- the types are only a refinement
        pass
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            elem = types.get(name) or onnx.TensorProto.FLOAT
            model.graph.output.append(helper.make_tensor_value_info(name, elem, None))
            present.add(name)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), sess_options=opts,
                                   providers=['CPUExecutionProvider'])
    feed = {session.get_inputs()[0].name: tensor}
    return session.run(list(names), feed)


def _feature_tile(channel, tile_w, tile_h):
    ch = np.nan_to_num(np.asarray(channel, np.float32))
    lo, hi = float(ch.min()), float(ch.max())
    if hi > lo:
        u8 = ((ch - lo) * (255.0 / (hi - lo))).astype(np.uint8)
    else:
        u8 = np.zeros(ch.shape, np.uint8)
    interp = cv2.INTER_NEAREST if u8.shape[1] < tile_w else cv2.INTER_AREA
    u8 = cv2.resize(u8, (tile_w, tile_h), interpolation=interp)
    return cv2.applyColorMap(u8, cv2.COLORMAP_VIRIDIS)


def layers_figure(network_rgb, outputs, names, title, channels=LAYER_CHANNELS, tile_w=96):
    """
    Return a BGR picture of feature maps: one row per layer of its first ``channels`` maps.

    Each map is min-max normalized on its own to 0..255 (viridis colours) and resized to a
    common tile; the first row shows the network input, each row has its layer name (and
    shape) as caption. 4-D outputs are read as (1, C, H, W).
    """
    in_h, in_w = network_rgb.shape[:2]
    tile_h = max(8, int(round(tile_w * in_h / in_w)))
    gap = 2
    width = channels * tile_w + (channels - 1) * gap
    cap_h = 18
    rows = []
    head = np.zeros((tile_h, width, 3), np.uint8)
    head[:, :tile_w] = cv2.resize(cv2.cvtColor(network_rgb, cv2.COLOR_RGB2BGR),
                                  (tile_w, tile_h), interpolation=cv2.INTER_AREA)
    rows.append(_caption(head, f'network input: {title}', cap_h))
    for name, out in zip(names, outputs):
        arr = np.asarray(out)
        if arr.ndim == 4:
            maps = arr[0]
        elif arr.ndim == 3:
            maps = arr
        elif arr.ndim == 2:
            maps = arr[None]
        else:
            raise SystemExit(f'eval: --layers: {name} has shape {arr.shape}, not a feature map')
        row = np.zeros((tile_h, width, 3), np.uint8)
        for c in range(min(channels, maps.shape[0])):
            x = c * (tile_w + gap)
            row[:, x:x + tile_w] = _feature_tile(maps[c], tile_w, tile_h)
        shape = 'x'.join(str(d) for d in arr.shape)
        rows.append(_caption(row, f'{name}  ({shape}, first {min(channels, maps.shape[0])} '
                                  'channels)', cap_h))
    sep = np.full((gap, width, 3), 255, np.uint8)
    stacked = []
    for row in rows:
        if stacked:
            stacked.append(sep)
        stacked.append(row)
    return np.vstack(stacked)


def write_layers(model_path, rgb, names, out_dir, title, threads=2):
    """Run the model on one image, write ``layers.png``; return its entry for the reports."""
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model_path, backend='onnxruntime', num_threads=threads)
    pre = pipe.preprocessor(rgb.shape[1], rgb.shape[0])
    tensor = np.array(pre(rgb), copy=True)
    network_rgb = np.array(pre.padded_image, copy=True)
    pipe.close()
    outputs = layer_outputs(model_path, tensor, names, threads)
    figure = layers_figure(network_rgb, outputs, names, title)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, 'layers.png')
    if not cv2.imwrite(path, figure):
        raise OSError(f'cannot write {path}')
    return {'file': 'layers.png', 'image': title,
            'layers': [{'name': n, 'shape': list(np.asarray(o).shape)}
                       for n, o in zip(names, outputs)]}


# ---------------------------------------------------------------------------------------------
# Reports and the model card


def _r(x):
    return None if x is None else round(float(x), ROUND)


def card_scores(summary, split_seed, source):
    """Return the card's ``evaluation.synthetic_<split>`` entry for a summary."""
    names = list(summary['iou'])
    positive = [k for k in summary if k.startswith('f1_') and k != 'f1_macro']
    entry = {
        'miou': _r(summary['miou']),
        'iou': {n: _r(summary['iou'][n]) for n in names},
    }
    for key in positive:
        entry[key] = _r(summary[key])
    entry.update({
        'f1_macro': _r(summary['f1_macro']),
        'pixel_accuracy': _r(summary['pixel_accuracy']),
        'images': int(summary['images']),
        'split_seed': split_seed,
        'source': source,
    })
    return entry


def _fmt(x):
    return number(x, 4, missing='n/a')


#: the rule cell of the evaluation report's tables (``| --- |``)
_RULE = ' --- '


def markdown_report(result):
    """Return a Markdown summary: one headline row plus a per-class table."""
    s = result['metrics']
    names = list(s['iou'])
    f1_pos = [k for k in s if k.startswith('f1_') and k != 'f1_macro']
    pos = f1_pos[0] if f1_pos else None
    lines = [
        f'# Evaluation of `{result["model_name"]}`',
        '',
        f'- model: `{result["model"]}`',
        f'- data: {result["source"]}',
        f'- images: {s["images"]} ({s["pixels"]} labelled pixels)',
        f'- engine: ONNX Runtime CPU, {result["threads"]} threads, through the node\'s pipeline',
        f'- date: {result["date"]}',
        '',
    ]
    head = (['Model', 'Data', 'mIoU'] + [f'IoU {n}' for n in names]
            + ([f'F1 {pos[3:]}'] if pos else []) + ['F1 macro', 'Pixel accuracy'])
    cells = ([result['model_name'], result['source_short'], _fmt(s['miou'])]
             + [_fmt(s['iou'][n]) for n in names] + ([_fmt(s[pos])] if pos else [])
             + [_fmt(s['f1_macro']), _fmt(s['pixel_accuracy'])])
    lines += table(head, [cells], cell=_RULE) + ['']
    lines += table(['Class', 'IoU', 'F1', 'Precision', 'Recall'],
                   [[n] + [_fmt(s[k][n]) for k in ('iou', 'f1', 'precision', 'recall')]
                    for n in names], cell=_RULE)
    lines += ['', 'Confusion matrix (rows: label, columns: prediction):', '']
    lines += table(['label \\ pred'] + names,
                   [[n] + list(row) for n, row in zip(names, s['confusion'])], cell=_RULE)
    if result.get('latency_ms'):
        lat = result['latency_ms']
        lines += ['', f'Bare model latency (ONNX Runtime CPU, {lat["threads"]} threads, input '
                  f'{lat["shape"]}): median {lat["median"]} ms, p90 {lat["p90"]} ms; '
                  f'whole pipeline {result["pipeline_ms_per_image"]} ms per image.']
    if result.get('surfaces'):
        from freespace_seg.training.surfaces import markdown as surfaces_markdown
        lines += ['', surfaces_markdown(result['surfaces']).rstrip('\n')]
    lines += _figures_markdown(result)
    return '\n'.join(lines) + '\n'


def _figures_markdown(result):
    lines = []
    figures = result.get('figures')
    if figures and (figures['worst'] or figures['best']):
        stats = figures.get('per_image_miou')
        lines += ['', '## Worst and best images', '',
                  'By the mIoU of each image alone. Each figure shows the input, the '
                  'prediction over it and an error map (' + ERROR_LEGEND + ').', '']
        if stats:
            lines += [f'Per-image mIoU over {stats["images"]} images: mean '
                      f'{_fmt(stats["mean"])}, median {_fmt(stats["median"])}, min '
                      f'{_fmt(stats["min"])}, max {_fmt(stats["max"])}.', '']
        lines += table(['Figure', 'Image', 'mIoU'],
                       [[f'[{e["file"]}]({e["file"]})', e['image'], _fmt(e['miou'])]
                        for kind in ('worst', 'best') for e in figures[kind]], cell=_RULE)
    layers = result.get('layers')
    if layers:
        lines += ['', '## Feature maps', '',
                  f'[{layers["file"]}]({layers["file"]}): the first {LAYER_CHANNELS} channels '
                  f'of each layer on {layers["image"]}, each channel min-max normalized on its '
                  'own.', '']
        lines += table(['Layer', 'Shape'],
                       [[f'`{e["name"]}`', e['shape']] for e in layers['layers']], cell=_RULE)
    return lines


def write_reports(result, out_dir):
    """Write ``metrics.json`` and ``metrics.md`` into ``out_dir``; return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, 'metrics.json')
    md_path = os.path.join(out_dir, 'metrics.md')
    with open(json_path, 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=2)
        f.write('\n')
    with open(md_path, 'w', encoding='utf-8') as f:
        f.write(markdown_report(result))
    return json_path, md_path


# ---------------------------------------------------------------------------------------------
# Command


def image_pairs(folder):
    """
    Return sorted (image_path, mask_path) pairs of a folder of user images.

    See :func:`freespace_seg.training.data.user_image_pairs` for the layout; SystemExit with
    its message for a missing folder, a folder without images or an image without mask.
    """
    try:
        return datasets.user_image_pairs(folder)
    except datasets.UserImagesError as e:
        raise SystemExit(f'eval: --images: {e}')


def read_user_pair(image_path, mask_path, free_id=1, blocked_id=0):
    """Read a user image (RGB) and its mask as class ids: 0 -> blocked, 1 -> free, 255 kept."""
    try:
        rgb, free = datasets.read_user_image_pair(image_path, mask_path)
    except datasets.UserImagesError as e:
        raise SystemExit(f'eval: --images: {e}')
    label = np.where(free != 0, free_id, blocked_id)
    label[free == datasets.IGNORE_INDEX] = datasets.IGNORE_INDEX  # alpha 0: not labelled
    return rgb, label.astype(np.uint8)


def user_frames(pairs, free_id=1, blocked_id=0):
    """Yield (rgb, class-id label) for each pair of :func:`image_pairs`."""
    for image_path, mask_path in pairs:
        yield read_user_pair(image_path, mask_path, free_id, blocked_id)


def surface_frames(samples):
    """Yield (rgb, mask, (codes, names)) for rendered frames (see :mod:`.surfaces`)."""
    from freespace_seg.training.surfaces import surface_map

    for frame in samples:
        yield datasets.frame_arrays(frame) + (surface_map(frame),)


def _source(args, card=None):
    given = [args.data is not None, args.render is not None,
             getattr(args, 'images', None) is not None]
    if sum(given) != 1:
        raise SystemExit('eval: give exactly one of --data DIR, --render N or --images DIR')
    if args.render is None and (getattr(args, 'style', None) or 'default') != 'default':
        raise SystemExit('eval: --style only applies to --render N')
    if args.render is None and getattr(args, 'without', ''):
        raise SystemExit('eval: --without only applies to --render N')
    if args.render is None and camera_overrides(args):
        raise SystemExit('eval: --camera-height and --camera-pitch only apply to --render N')
    if args.render is None and getattr(args, 'by_surface', False):
        raise SystemExit('eval: --by-surface only applies to --render N (only rendered frames '
                         'know what each pixel shows)')
    if args.data is not None:
        meta = datasets.read_meta(args.data)
        total = datasets.count_frames(args.data, args.split, args.limit)
        frames = datasets.dataset_frames(args.data, args.split, args.limit)
        seed = meta.get('seed')
        desc = f'{args.data} split {args.split} ({total} frames, dataset seed {seed})'
        short = f'{os.path.basename(os.path.normpath(args.data))}/{args.split}'
        names = [os.path.basename(image)
                 for image, _ in datasets.list_split(args.data, args.split)[:total]]
        return frames, total, seed, desc, short, f'synthetic_{args.split}', names
    if args.images is not None:
        pairs = image_pairs(args.images)
        if args.limit is not None:
            pairs = pairs[:max(int(args.limit), 0)]
        free_id, blocked_id = 1, 0
        if card is not None:
            free_id = card.free_space[0]
            blocked_id = next(i for i in range(len(card.class_names))
                              if i not in card.free_space)
        frames = user_frames(pairs, free_id, blocked_id)
        folder = os.path.basename(os.path.normpath(args.images))
        desc = (f'{len(pairs)} user images with masks from {args.images} '
                '(mask 0 = blocked, nonzero = free)')
        names = [os.path.basename(image) for image, _ in pairs]
        key = 'user_images_' + re.sub(r'[^0-9A-Za-z]+', '_', folder).strip('_').lower()
        return frames, len(pairs), None, desc, f'images {folder}', key, names
    n = args.render if args.limit is None else min(args.render, args.limit)
    style = getattr(args, 'style', None) or 'default'
    without = [w.strip() for w in (getattr(args, 'without', '') or '').split(',') if w.strip()]
    from freespace_seg.sim import RandomizationConfig
    try:
        RandomizationConfig().without(*without)   # unknown names: a clear error, now
    except ValueError as e:
        raise SystemExit(f'eval: --without: {e}')
    camera = camera_overrides(args)
    if getattr(args, 'by_surface', False):
        frames = surface_frames(datasets.rendered_samples(
            n, args.seed, args.width, args.height, style=style, without=without, camera=camera))
    else:
        frames = datasets.rendered_frames(n, args.seed, args.width, args.height, style=style,
                                          without=without, camera=camera)
    desc = (f'{n} frames rendered on the fly by freespace_seg.sim at '
            f'{args.width}x{args.height}, seed {args.seed}, renderer source '
            f'{datasets.renderer_fingerprint()}')
    short = f'render {n} seed {args.seed}'
    key = 'synthetic_test'
    if style != 'default':
        desc += (f', {style} style (material families and lighting that training never '
                 'sees)')
        short += f' {style}'
        key = f'synthetic_{style}'
    if without:
        desc += ', randomization factors off: ' + ', '.join(sorted(without))
        short += ' without ' + '-'.join(sorted(without))
        key += '_without_' + '_'.join(sorted(without))
    if 'camera_height' in camera:
        low, high = camera['camera_height']
        desc += f', camera {low:g}-{high:g} m above the floor'
        short += f' height {low:g}-{high:g} m'
        key += f'_height_{round(low * 100)}_{round(high * 100)}cm'
    if 'camera_pitch' in camera:
        low, high = camera['camera_pitch']
        desc += f', pitched {low:g} to {high:g} rad down'
        short += f' pitch {low:g}-{high:g} rad'
        key += f'_pitch_{round(low * 1000)}_{round(high * 1000)}mrad'
    return frames, n, args.seed, desc, short, key, None


def run(args):
    """Score a model and write the reports; returns the process exit code."""
    from freespace_seg.perception.model_card import card_path_for_model, load_card

    if not os.path.isfile(args.model):
        print(f'eval: model not found: {args.model}', file=sys.stderr)
        return 2
    card = load_card(card_path_for_model(args.model))
    figures_k = getattr(args, 'figures', 0) or 0
    if figures_k < 0:
        raise SystemExit('eval: --figures must be 0 or more')
    layers_spec = getattr(args, 'layers', None)
    # Check the layer names before the long scoring run.
    layer_names = resolve_layers(args.model, layers_spec) if layers_spec else None
    frames, total, split_seed, desc, short, card_key, names = _source(args, card)
    stem = os.path.splitext(os.path.basename(args.model))[0]
    out_dir = args.out or os.path.join(
        'data', 'eval', f'{stem}-' + short.replace('/', '-').replace(' ', '-'))

    cases = None
    if figures_k > 0 or layer_names:
        cases = CaseCollector(figures_k, keep_first=bool(layer_names), names=names)
    surfaces = None
    if getattr(args, 'by_surface', False):
        from freespace_seg.training.surfaces import SurfaceErrors
        surfaces = SurfaceErrors()
    summary, sec = evaluate_frames(args.model, frames, total, args.threads, cases=cases,
                                   surfaces=surfaces)
    result = {
        'model': args.model,
        'model_name': card.name,
        'source': desc,
        'source_short': short,
        'split_seed': split_seed,
        'threads': args.threads,
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'pipeline_ms_per_image': round(sec * 1000.0, 2),
        'metrics': summary,
    }
    if surfaces is not None:
        result['surfaces'] = surfaces.summary()
    if figures_k > 0:
        result['figures'] = dict(write_case_figures(cases, card, out_dir), k=figures_k,
                                 per_image_miou=cases.stats(), legend=ERROR_LEGEND)
    if layer_names and cases.first is not None:
        index, rgb = cases.first
        result['layers'] = write_layers(args.model, rgb, layer_names, out_dir,
                                        cases.name(index), args.threads)
    if args.latency_runs > 0:
        result['latency_ms'] = measure_latency(args.model, args.threads, args.latency_runs)
    json_path, md_path = write_reports(result, out_dir)
    print(markdown_report(result))
    print(f'eval: wrote {json_path} and {md_path}')

    if args.update_card:
        entry = card_scores(summary, split_seed, desc)
        latency = None
        if args.latency_runs > 0:
            lat = result['latency_ms']
            latency = {latency_key(lat['threads'], lat['shape']): lat['median']}
        update_card(card.path, {card_key: entry}, latency)
        print(f'eval: updated {card.path} (evaluation.{card_key})')
    if summary['images'] == 0:
        print('eval: no frames were scored', file=sys.stderr)
        return 1
    return 0
