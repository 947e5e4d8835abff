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
import math
import os
import re
import statistics
import sys
import time

from freespace_seg.common.machine import cpu_label, machine_info
from freespace_seg.common.values import round4
from freespace_seg.perception import metrics
from freespace_seg.perception.timing import measure_latency
from freespace_seg.sim.generate import add_camera_arguments, camera_overrides
from freespace_seg.sim.randomization import STYLES
from freespace_seg.training import data as datasets
from freespace_seg.training.camera_effects import EFFECTS, P_EFFECT, parse_effects, with_effects
from freespace_seg.training.card import update_card
from freespace_seg.training.errors import EvalError
from freespace_seg.training.figures import (ERROR_LEGEND, resolve_layers, write_case_figures,
                                            write_layers)
from freespace_seg.training.report import card_scores, markdown_report, write_reports
import numpy as np

DEFAULT_MODEL = os.path.join('models', 'freespace_lite0.onnx')


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
    src.add_argument('--style', default='default', choices=STYLES,
                     help='look of the rendered frames: the training one, "shifted", '
                          'material families and lighting that training never sees (same '
                          'ground truth rule; scored as evaluation.synthetic_shifted), or '
                          '"one_floor", that look with one crimson rubber floor in every room '
                          "(the own-floor loop's user floor; evaluation.synthetic_one_floor) "
                          '(default: %(default)s)')
    add_camera_arguments(src.add_argument)
    src.add_argument('--camera-effects', metavar='all|EFFECT,...',
                     help='pass every frame (of --data, --render or --images) through camera '
                          'effects that the renderer does not draw: "all" or some of '
                          + ', '.join(EFFECTS) + '; each frame draws its own from --seed and '
                          'its index (scored as evaluation.<set>_camera_effects)')
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
    parser.add_argument('--exact-int8', action='store_true',
                        help="run an INT8 (QDQ) model's quantized operators as written, without "
                             "ONNX Runtime's fused integer kernels: the scores of a CPU with "
                             'VNNI (up to float rounding) on any CPU, several times slower; '
                             'the report and card say so')
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
        return {'mean': round4(statistics.fmean(self.scores)),
                'median': round4(statistics.median(self.scores)),
                'min': round4(min(self.scores)), 'max': round4(max(self.scores)),
                'images': len(self.scores)}


def evaluate_frames(model_path, frames, total=None, threads=2, desc='eval', cases=None,
                    surfaces=None, exact_int8=False):
    """
    Segment (rgb, mask) frames with the ONNX pipeline and score them.

    Returns ``(summary, seconds_per_image)`` where ``summary`` is
    :func:`freespace_seg.perception.metrics.summarize` of the accumulated confusion matrix plus
    ``images``. With a :class:`CaseCollector` as ``cases``, every image's own mIoU is
    offered to it (the timing covers the pipeline only). With a
    :class:`~freespace_seg.training.surfaces.SurfaceErrors` as ``surfaces``, the frames are
    (rgb, mask, (codes, names)) triples (see :func:`surface_frames`) and every prediction
    is added to it as well. ``exact_int8``: see
    :func:`freespace_seg.perception.engines.onnxruntime.session_options`.
    """
    from freespace_seg.common.progress import progress
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model_path, backend='onnxruntime', num_threads=threads,
                                engine_options={'exact_int8': exact_int8})
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


#: how ``eval --exact-int8`` names its arithmetic in reports and cards
EXACT_INT8 = ('exact INT8 arithmetic (eval --exact-int8: QDQ operators unfused, as a CPU with '
              'VNNI computes them up to float rounding)')


def saturation_note(card, machine, exact_int8=False):
    """
    Return a note when a full-range INT8 copy is scored on an x86-64 CPU without VNNI.

    Not with ``exact_int8`` (``eval --exact-int8``), which does not use those kernels.

    ONNX Runtime's u8 x s8 kernels saturate there and such a copy scores up to 0.018 mIoU
    below its card (docs/model/int8_cpus.md); 7-bit copies (``quantize --weights
    int8-reduced``) and fp32 models do not. None otherwise.
    """
    quant = card.raw.get('quantization')
    weights = str(quant.get('weights', '')) if isinstance(quant, dict) else ''
    if exact_int8 or machine.get('vnni') is not False or not weights.startswith('int8,'):
        return None
    return (f'{card.name} has full-range int8 weights and this x86-64 CPU has no VNNI '
            f'({machine.get("cpu") or "unknown"}): ONNX Runtime\'s int8 kernels saturate '
            'here, so it scores lower than on a CPU with VNNI (up to 0.018 mIoU for the '
            'shipped copy); score its 7-bit copy (quantize --weights int8-reduced) or the '
            'fp32 model for a fair comparison, or score it with --exact-int8')


def latency_key(threads, shape):
    """Card key for a latency figure, e.g. ``onnxruntime_cpu_2threads_480x272_median``."""
    return f'onnxruntime_cpu_{int(threads)}threads_{shape[-1]}x{shape[-2]}_median'


# ---------------------------------------------------------------------------------------------
# Command


def image_pairs(folder):
    """
    Return sorted (image_path, mask_path) pairs of a folder of user images.

    See :func:`freespace_seg.training.data.user_image_pairs` for the layout; EvalError with
    its message for a missing folder, a folder without images or an image without mask.
    """
    try:
        return datasets.user_image_pairs(folder)
    except datasets.UserImagesError as e:
        raise EvalError(f'--images: {e}')


def read_user_pair(image_path, mask_path, free_id=1, blocked_id=0):
    """Read a user image (RGB) and its mask as class ids: 0 -> blocked, 1 -> free, 255 kept."""
    try:
        rgb, free = datasets.read_user_image_pair(image_path, mask_path)
    except datasets.UserImagesError as e:
        raise EvalError(f'--images: {e}')
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
    """Return (frames, total, split_seed, desc, short, card_key, names), with camera effects."""
    spec = getattr(args, 'camera_effects', None)
    if spec is None:
        return _plain_source(args, card)
    try:
        effects = parse_effects(spec)
    except ValueError as e:
        raise EvalError(f'--camera-effects: {e}')
    if getattr(args, 'by_surface', False):
        raise EvalError('--by-surface and --camera-effects do not go together (the lens moves '
                        'pixels away from their surface codes)')
    frames, total, split_seed, desc, short, key, names = _plain_source(args, card)
    label = 'all' if effects == EFFECTS else '-'.join(effects)
    desc += (f'; camera effects ({", ".join(effects)}; each with probability {P_EFFECT:g}, '
             f'at least one; seed {args.seed})')
    return (with_effects(frames, args.seed, effects), total, split_seed, desc,
            f'{short} effects {label}', f'{key}_camera_effects'
            + ('' if effects == EFFECTS else '_' + '_'.join(effects)), names)


def _plain_source(args, card=None):
    given = [args.data is not None, args.render is not None,
             getattr(args, 'images', None) is not None]
    if sum(given) != 1:
        raise EvalError('give exactly one of --data DIR, --render N or --images DIR')
    if args.render is None and (getattr(args, 'style', None) or 'default') != 'default':
        raise EvalError('--style only applies to --render N')
    if args.render is None and getattr(args, 'without', ''):
        raise EvalError('--without only applies to --render N')
    if args.render is None and camera_overrides(args):
        raise EvalError('--camera-height and --camera-pitch only apply to --render N')
    if args.render is None and getattr(args, 'by_surface', False):
        raise EvalError('--by-surface only applies to --render N (only rendered frames '
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
        # The second generator's sets get their own card key, one per dataset seed
        # (scenes2_seed5000_test): two samples of it must not overwrite each other.
        if meta.get('generator') == datasets.SECOND_GENERATOR:
            key = f'scenes2_seed{seed}_{args.split}'
        else:
            key = f'synthetic_{args.split}'
        return frames, total, seed, desc, short, key, names
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
        raise EvalError(f'--without: {e}')
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
                 'sees' + (', one crimson rubber floor in every room' if style == 'one_floor'
                           else '') + ')')
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
    try:
        return evaluate(args)
    except EvalError as e:
        raise SystemExit(f'eval: {e}') from None


def evaluate(args):
    """Run the ``eval`` described by parsed ``args``; return the exit code, raise EvalError."""
    from freespace_seg.perception.model_card import card_path_for_model, load_card

    if not os.path.isfile(args.model):
        print(f'eval: model not found: {args.model}', file=sys.stderr)
        return 2
    card = load_card(card_path_for_model(args.model))
    figures_k = getattr(args, 'figures', 0) or 0
    if figures_k < 0:
        raise EvalError('--figures must be 0 or more')
    layers_spec = getattr(args, 'layers', None)
    # Check the layer names before the long scoring run.
    layer_names = resolve_layers(args.model, layers_spec) if layers_spec else None
    frames, total, split_seed, desc, short, card_key, names = _source(args, card)
    machine = machine_info()
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
    exact = bool(getattr(args, 'exact_int8', False))
    note = saturation_note(card, machine, exact)
    if note:
        print(f'eval: note: {note}', file=sys.stderr)
    summary, sec = evaluate_frames(args.model, frames, total, args.threads, cases=cases,
                                   surfaces=surfaces, exact_int8=exact)
    result = {
        'model': args.model,
        'model_name': card.name,
        'source': desc,
        'source_short': short,
        'split_seed': split_seed,
        'threads': args.threads,
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'pipeline_ms_per_image': round(sec * 1000.0, 2),
        'machine': machine,
        'metrics': summary,
    }
    if exact:
        result['int8_math'] = EXACT_INT8
    if note:
        result['note'] = note
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
        entry['cpu'] = (f'{EXACT_INT8}, on ' if exact else '') + cpu_label(machine)
        latency = None
        if args.latency_runs > 0:
            lat = result['latency_ms']
            latency = {latency_key(lat['threads'], lat['shape']): lat['p50_ms']}
        update_card(card.path, {card_key: entry}, latency)
        print(f'eval: updated {card.path} (evaluation.{card_key})')
    if summary['images'] == 0:
        print('eval: no frames were scored', file=sys.stderr)
        return 1
    return 0
