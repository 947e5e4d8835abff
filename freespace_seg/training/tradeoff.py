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
``python -m freespace_seg tradeoff``: network input size against mIoU against latency.

The UNet is fully convolutional, so one set of weights runs at any input size. The command
rebuilds the torch UNet from an ONNX model (by default the shipped fp32 UNet,
models/freespace_unet.onnx; see
:func:`freespace_seg.training.rebuild.rebuild_torch_model`), re-exports it at each of
``--sizes`` (width and height multiples of ``--size-multiple``, 16 by default), each with
its own model card (the card's input size drives the node's letterbox), and for each size
measures

* the scores on the same rendered frames, through the node's own pipeline
  (:func:`freespace_seg.training.evaluate.evaluate_frames`: letterbox to that size, ONNX
  Runtime, mask mapped back to camera pixels), so every row is scored at camera resolution
  against the same labels;
* the latency of the bare model (ONNX Runtime on the CPU, ``--threads`` intra-op threads, a
  fixed random input, no pre- or postprocessing): p50 and p95 over ``--runs`` runs, and fps
  as 1000 / mean; the runs of all rows are interleaved in ``--rounds`` rounds, so that load
  from other processes on a shared machine touches every row alike;
* with ``--int8``, the same for a static INT8 (QDQ) copy of each size, quantized as the
  ``quantize`` command does (calibration frames of their own seed, through the node's
  Preprocessor).

``--extra-model PATH`` (repeatable) adds other models, each measured as given at its own
card's size: a model trained at another size, a pruned one, an INT8 one, so the one table
also covers other model shapes. Rows are compared with the fp32 row at the base model's own
input size (480x272 for the shipped model): latency as a ratio, mIoU as a difference.

The table also gives each row's letterbox padding for the camera frames: the shipped model
was trained with 480x270 frames in 480x272, one padded row at the top and one at the bottom,
and wider bands of padding are a change of input it never saw.

Caveat: the weights were trained at one input size (480x272 for the shipped model). At any
other size the rows show the same weights looking at the scene at another scale, not what a
model trained for that size would score; a size that looks promising deserves its own
training run (``python -m freespace_seg train --input-size WxH``), which can then be
compared here with ``--extra-model``.

Writes ``tradeoff.md`` (the table), ``tradeoff.json`` (every number, the machine and the
settings) and ``tradeoff.png`` (mIoU against p50 latency, points labelled by size, drawn
with matplotlib; see :mod:`.tradeoff_report`) into ``--out``; the re-exported models and
their cards go to ``--work-dir``.

Examples::

    python -m freespace_seg tradeoff --render 200 --int8 --threads 1 --out data/tradeoff
    # the table in docs/model/: also 384x216, exactly 16:9 (216 is not a multiple of 16)
    python -m freespace_seg tradeoff --render 200 --int8 --runs 200 --size-multiple 8 \
        --sizes 256x144,320x176,384x216,384x224,480x272,512x288,640x368,960x544 \
        --out docs/model
"""

import datetime
import os
import sys

from freespace_seg.common.progress import progress
from freespace_seg.common.reproduce import OptionRecorder
from freespace_seg.common.values import display_path, round4, split_size
from freespace_seg.perception.engines.engine_cache import file_sha256
from freespace_seg.perception.model_card import card_from_dict, load_card, ModelCardError
from freespace_seg.perception.timing import interleaved_runs
from freespace_seg.training.errors import RebuildError, TradeoffError
from freespace_seg.training.tradeoff_report import table_lines, write_reports
import numpy as np

DEFAULT_SIZES = '256x144,320x176,384x224,480x272,512x288,640x368,960x544'
DEFAULT_OUT = os.path.join('data', 'tradeoff')
DEFAULT_WORK_DIR = os.path.join('data', 'tradeoff', 'models')
DEFAULT_FRAME_SIZE = '480x270'
#: width and height of every re-export are multiples of this (see :func:`parse_size`)
SIZE_MULTIPLE = 16
#: seed of the evaluation frames: the held-out test seed of the card (training: 0 and 1)
EVAL_SEED = 1000
WEIGHT_OPS = ('Conv', 'ConvTranspose', 'Gemm', 'MatMul')


# ---------------------------------------------------------------------------------------------
# Options


def parse_size(text, multiple=SIZE_MULTIPLE, what='size'):
    """
    Parse ``WIDTHxHEIGHT`` into (width, height); raise :class:`TradeoffError` if it is bad.

    With ``multiple`` both must be multiples of it. The UNet runs at any size, but 16 keeps
    the four stride-2 levels down to 1/16 exact halvings, as at the training size 480x272
    (272 = 17 * 16), so the levels line up as they did in training.
    """
    try:
        width, height = split_size(text)
    except ValueError:
        raise TradeoffError(f'{what} {text!r}: expected WIDTHxHEIGHT, e.g. 480x272') from None
    if width < 1 or height < 1:
        raise TradeoffError(f'{what} {text!r}: width and height must be positive')
    if multiple and (width % multiple or height % multiple):
        raise TradeoffError(f'{what} {width}x{height}: width and height must be multiples of '
                            f'{multiple} (e.g. {_round_to(width, multiple)}x'
                            f'{_round_to(height, multiple)})')
    return width, height


def _round_to(value, multiple):
    return max(multiple, int(round(value / multiple)) * multiple)


def parse_sizes(text, multiple=SIZE_MULTIPLE):
    """Parse a comma-separated list of sizes; duplicates are dropped, the order kept."""
    sizes = []
    for part in str(text).split(','):
        if not part.strip():
            continue
        size = parse_size(part, multiple)
        if size not in sizes:
            sizes.append(size)
    if not sizes:
        raise TradeoffError(f'--sizes {text!r}: no size given (e.g. {DEFAULT_SIZES})')
    return sizes


#: the options, in the order the reproducing command line spells them out
OPTIONS = OptionRecorder('tradeoff')


def add_arguments(parser):
    """Add the ``tradeoff`` options to ``parser``."""
    OPTIONS.reset()
    opt = OPTIONS.add

    parser.description = (
        'Re-export a UNet model (default: the shipped UNet) at several network input sizes and '
        'measure mIoU (node pipeline, rendered frames) and bare-model latency (ONNX Runtime, '
        'CPU) for each, optionally also an INT8 copy of each and further models; writes '
        'tradeoff.md, tradeoff.json and tradeoff.png. The weights were trained at one size: '
        'other sizes show them at another scale, not a model trained for that size.')
    opt(parser, '--model', metavar='ONNX',
        help='fp32 ONNX model of this package with its card beside it '
             '(default: the shipped UNet, models/freespace_unet.onnx)')
    opt(parser, '--sizes', default=DEFAULT_SIZES,
        help='network input sizes WIDTHxHEIGHT, comma-separated, multiples of '
             "--size-multiple; the model's own size is added when missing "
             '(default: %(default)s)')
    opt(parser, '--size-multiple', type=int, default=SIZE_MULTIPLE, metavar='N',
        help='width and height of --sizes must be multiples of N; 16 keeps the '
             'four stride-2 levels down to 1/16 exact halvings as in training, '
             '8 also allows e.g. 384x216, exactly 16:9 (default: %(default)s)')
    opt(parser, '--extra-model', action='append', default=[], metavar='ONNX',
        help='another model with its card, measured as given at its own size '
             '(e.g. trained at another size, pruned, INT8); repeatable')
    opt(parser, '--render', type=int, default=200, metavar='N',
        help='evaluation frames rendered once and reused for every row '
             '(default: %(default)s)')
    opt(parser, '--seed', type=int, default=EVAL_SEED,
        help="renderer seed of the evaluation frames; the card's held-out "
             'test seed by default (default: %(default)s)')
    opt(parser, '--style', default='default', choices=('default', 'shifted'),
        help='look of the rendered frames, as in `eval` (default: %(default)s)')
    opt(parser, '--frame-size', default=DEFAULT_FRAME_SIZE, metavar='WxH',
        help='camera size of the rendered frames; scores are taken at this '
             'size (default: %(default)s, as in `eval`)')
    opt(parser, '--threads', type=int, default=1,
        help='ONNX Runtime intra-op threads for scoring and timing, and torch '
             'threads for the export. 1 by default: on a small shared CPU one '
             'thread gives the steadiest figures, and the table compares sizes, '
             'not thread counts (default: %(default)s)')
    opt(parser, '--runs', type=int, default=100,
        help='timed runs of each bare model (default: %(default)s)')
    opt(parser, '--rounds', type=int, default=5,
        help='the timed runs are split into this many rounds, every model in '
             'turn, so that load from other processes touches every row alike '
             '(default: %(default)s)')
    opt(parser, '--warmup', type=int, default=10,
        help='untimed runs before them (default: %(default)s)')
    opt(parser, '--int8', action='store_true',
        help='also quantize each size (static INT8 QDQ, as `quantize`) and '
             'measure it')
    opt(parser, '--calib-frames', type=int, default=64,
        help='INT8 calibration frames, rendered at --frame-size with the '
             'calibration seed of `quantize` (default: %(default)s, as '
             '`quantize`)')
    opt(parser, '--int8-sizes', metavar='SIZES',
        help='with --int8, quantize only these of --sizes (default: all)')
    opt(parser, '--out', default=DEFAULT_OUT,
        help='folder for tradeoff.md, tradeoff.json and tradeoff.png '
             '(default: %(default)s)')
    opt(parser, '--work-dir', default=DEFAULT_WORK_DIR,
        help='folder for the re-exported models and their cards '
             '(default: %(default)s)')


def _check_args(args):
    """Validate the options before any long work; return (sizes, int8 sizes, frame size)."""
    if args.render is None or args.render < 1:
        raise TradeoffError(f'--render must be at least 1, got {args.render}')
    for flag, value, low in (('--threads', args.threads, 1), ('--runs', args.runs, 1),
                             ('--rounds', args.rounds, 1),
                             ('--warmup', args.warmup, 0),
                             ('--calib-frames', args.calib_frames, 1)):
        if value < low:
            raise TradeoffError(f'{flag} must be at least {low}, got {value}')
    if args.size_multiple < 1:
        raise TradeoffError(f'--size-multiple must be at least 1, got {args.size_multiple}')
    sizes = parse_sizes(args.sizes, args.size_multiple)
    frame_size = parse_size(args.frame_size, multiple=None, what='--frame-size')
    int8_sizes = []
    if args.int8_sizes and not args.int8:
        raise TradeoffError('--int8-sizes needs --int8')
    if args.int8:
        int8_sizes = list(sizes)
        if args.int8_sizes:
            int8_sizes = parse_sizes(args.int8_sizes, args.size_multiple)
        missing = [f'{w}x{h}' for w, h in int8_sizes if (w, h) not in sizes]
        if missing:
            raise TradeoffError(f'--int8-sizes {", ".join(missing)}: not in --sizes')
    if not os.path.isfile(args.model):
        raise TradeoffError(f'model not found: {args.model}')
    for path in args.extra_model:
        if not os.path.isfile(path):
            raise TradeoffError(f'--extra-model not found: {path}')
    same = os.path.abspath(args.out) == os.path.abspath(args.work_dir)
    if same:
        raise TradeoffError('--work-dir must differ from --out (models are not reports)')
    return sizes, int8_sizes, frame_size


def reproduce_command(args):
    """Return this run's command line with every option spelled out."""
    from freespace_seg.perception.pipeline import packaged_model_path, PACKAGED_UNET_MODEL

    packaged = os.path.abspath(packaged_model_path(PACKAGED_UNET_MODEL))

    def skip(dest, value):
        if dest == 'model':
            return os.path.abspath(value) == packaged
        if dest == 'size_multiple':
            return value == SIZE_MULTIPLE
        return not args.int8 and dest in ('calib_frames', 'int8_sizes')

    return OPTIONS.command_line(args, skip)


# ---------------------------------------------------------------------------------------------
# Models


def onnx_info(path):
    """
    Return (weight count, precision) of an ONNX file.

    The weight count is the number of elements of the initializers that feed a Conv,
    ConvTranspose, Gemm or MatMul directly or through a DequantizeLinear (so a fp32 model and
    its INT8 copy count the same); precision is ``int8`` when the graph holds QuantizeLinear
    / DequantizeLinear or QLinear nodes, else ``fp32``.
    """
    import onnx

    graph = onnx.load(path, load_external_data=False).graph
    sizes = {t.name: int(np.prod(t.dims, dtype=np.int64)) for t in graph.initializer}
    dequant = {n.output[0]: n.input[0] for n in graph.node
               if n.op_type == 'DequantizeLinear' and n.output}
    counted = set()
    for node in graph.node:
        if node.op_type not in WEIGHT_OPS:
            continue
        for name in node.input[1:]:
            name = dequant.get(name, name)
            if name in sizes:
                counted.add(name)
    quantized = any(n.op_type in ('QuantizeLinear', 'DequantizeLinear')
                    or n.op_type.startswith('QLinear') for n in graph.node)
    return sum(sizes[n] for n in counted), 'int8' if quantized else 'fp32'


def onnx_input_shape(path):
    """Return the static input shape of an ONNX file as a list (dim names for dynamic dims)."""
    import onnx

    graph = onnx.load(path, load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    inp = next(i for i in graph.input if i.name not in inits)
    return [d.dim_value if d.HasField('dim_value') else d.dim_param
            for d in inp.type.tensor_type.shape.dim]


def load_base_model(model_path, threads=1):
    """
    Rebuild the torch UNet of ``model_path`` and check it against ONNX Runtime.

    Returns (model, card, rebuild max |logit diff|); raises :class:`TradeoffError` for a
    model that is not the float UNet of this package or whose card does not fit.
    """
    from freespace_seg.training.rebuild import rebuild_checked

    try:
        model, card, _, _, diff = rebuild_checked(model_path, seed=0, threads=threads)
    except RebuildError as e:
        raise TradeoffError(str(e)) from e
    return model, card, diff


def resized_card(base_card, model_file, width, height, source_path, export_diff):
    """
    Return the card dict of the base model re-exported at ``width`` x ``height``.

    A copy of the base card with the name, model file and input shape changed, its
    ``evaluation`` and ``latency_ms`` emptied (they were measured at the base size) and a
    ``reexport`` section that says where the weights come from.
    """
    from freespace_seg.training.resize_input import card_at_size

    base_w, base_h = base_card.input_width, base_card.input_height
    return card_at_size(
        base_card, model_file, width, height,
        f'{base_card.name} re-exported at {width}x{height} (trained at {base_w}x{base_h}) by '
        'python -m freespace_seg tradeoff.',
        {'source_model': os.path.basename(source_path),
         'source_model_sha256': file_sha256(source_path),
         'trained_input_size': [base_w, base_h],
         'input_size': [int(width), int(height)],
         'onnx_max_abs_diff_vs_torch': float(f'{export_diff:.3g}'),
         'note': 'the same weights (BatchNorm folded) at another input size: the scene at '
                 'another scale, not a model trained for this size'})


def export_size(model, base_card, source_path, width, height, work_dir):
    """
    Export ``model`` at ``width`` x ``height`` into ``work_dir`` with its card.

    Returns (onnx path, card path, ONNX Runtime vs torch max |logit diff|).
    """
    from freespace_seg.training.card import dump_card
    from freespace_seg.training.export import export_and_verify

    stem = os.path.splitext(os.path.basename(source_path))[0]
    path = os.path.join(work_dir, f'{stem}_{int(width)}x{int(height)}.onnx')
    diff = export_and_verify(model, path, int(width), int(height))
    card = resized_card(base_card, path, width, height, source_path, diff)
    card_path = os.path.splitext(path)[0] + '.yaml'
    card_from_dict(card, card_path)  # a valid card?
    dump_card(card, card_path)
    return path, card_path, diff


def quantize_size(fp32_path, calib_frames, log=None):
    """Write ``<stem>_int8.onnx`` and its card beside a re-export; return its path."""
    from freespace_seg.training.quantize import (calibration_tensors, CALIBRATION_SEED,
                                                 int8_path_for, quantize_model, write_card)

    card = load_card(fp32_path)
    out = int8_path_for(fp32_path)
    tensors = calibration_tensors(card, calib_frames)
    info = quantize_model(fp32_path, out, tensors, card.input_name, log=log)
    info['calibration'] = {
        'frames': len(tensors), 'seed': CALIBRATION_SEED,
        'image_size': [int(calib_frames[0][0].shape[1]), int(calib_frames[0][0].shape[0])],
        'source': 'freespace_seg.training.data.rendered_frames, through '
                  'freespace_seg.perception.preprocess.Preprocessor '
                  '(python -m freespace_seg tradeoff)'}
    info['source_model'] = os.path.basename(fp32_path)
    write_card(card.path, out, info)
    return out


# ---------------------------------------------------------------------------------------------
# Measuring


def latency_stats(samples_ms, threads, rounds=1):
    """Return p50, p95, mean and max (ms), fps (1000 / mean), runs, rounds and threads."""
    times = np.asarray(samples_ms, np.float64)
    mean = float(times.mean())
    return {'p50_ms': round(float(np.percentile(times, 50)), 4),
            'p95_ms': round(float(np.percentile(times, 95)), 4),
            'mean_ms': round(mean, 4), 'max_ms': round(float(times.max()), 4),
            'fps': round(1000.0 / mean, 2) if mean > 0 else None,
            'runs': int(len(times)), 'rounds': int(rounds), 'threads': int(threads)}


def time_models(model_paths, threads=1, runs=100, warmup=10, rounds=1):
    """
    Time one bare ONNX Runtime run of each model (fixed random input of its static shape).

    The runs are interleaved in ``rounds`` rounds
    (:func:`~freespace_seg.perception.timing.interleaved_runs`), so that a burst of load on a
    shared machine touches every model alike. Returns one :func:`latency_stats` per model.
    """
    samples = interleaved_runs([(path, threads) for path in model_paths], runs, warmup,
                               rounds, desc='tradeoff: timing')
    return [latency_stats([t for times in per_job for t in times], threads, rounds)
            for per_job in samples]


def time_model(model_path, threads=1, runs=100, warmup=10):
    """Time one model alone; see :func:`time_models`."""
    return time_models([model_path], threads, runs, warmup)[0]


def letterbox_padding(card, frame_width, frame_height):
    """Return the network-input pixels of padding around a frame: left, top, right, bottom."""
    from freespace_seg.perception.preprocess import Letterbox

    box = Letterbox.compute(int(frame_width), int(frame_height), card.input_width,
                            card.input_height, card.resize_mode)
    return [box.pad_left, box.pad_top, box.dst_w - box.content_w - box.pad_left,
            box.dst_h - box.content_h - box.pad_top]


def measure(model_path, frames, threads, label):
    """Score ``model_path`` on ``frames`` through the pipeline; return a row (no latency)."""
    from freespace_seg.training.evaluate import evaluate_frames

    card = load_card(model_path)
    frame_h, frame_w = frames[0][0].shape[:2]
    params, precision = onnx_info(model_path)
    summary, sec = evaluate_frames(model_path, frames, total=len(frames), threads=threads,
                                   desc=f'tradeoff: {label}: evaluating')
    free = card.class_names[card.free_space[0]]
    return {
        'label': label,
        'model': os.path.basename(model_path),
        'path': model_path,
        'card_name': card.name,
        'input': [card.input_width, card.input_height],
        'letterbox_pad': letterbox_padding(card, frame_w, frame_h),
        'precision': precision,
        'params': int(params),
        'model_mb': round(os.path.getsize(model_path) / 1e6, 3),
        'miou': round4(summary['miou']),
        'iou': {k: round4(v) for k, v in summary['iou'].items()},
        'f1_free': round4(summary.get(f'f1_{free}')),
        'pixel_accuracy': round4(summary['pixel_accuracy']),
        'images': summary['images'],
        'pipeline_ms_per_image': round(sec * 1000.0, 2),
        'latency': None,
    }


def add_ratios(rows, reference):
    """Add ``p50_vs_ref``, ``fps_vs_ref`` and ``miou_vs_ref`` against the reference row."""
    for row in rows:
        ref_p50, p50 = reference['latency']['p50_ms'], row['latency']['p50_ms']
        ref_fps, fps = reference['latency']['fps'], row['latency']['fps']
        row['p50_vs_ref'] = round(p50 / ref_p50, 3) if ref_p50 else None
        row['fps_vs_ref'] = round(fps / ref_fps, 3) if ref_fps and fps else None
        row['miou_vs_ref'] = (None if row['miou'] is None or reference['miou'] is None
                              else round(row['miou'] - reference['miou'], 4))
    return rows


# ---------------------------------------------------------------------------------------------
# Command


def tradeoff(args):
    """Measure every size (and extra model) described by parsed ``args``; return the result."""
    import torch

    from freespace_seg.common.machine import machine_info
    from freespace_seg.training.data import renderer_fingerprint, rendered_frames
    from freespace_seg.training.quantize import CALIBRATION_SEED

    sizes, int8_sizes, frame_size = _check_args(args)
    command = reproduce_command(args)
    log = _log
    log(f'tradeoff: {command}')
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        model, base_card, rebuild_diff = load_base_model(args.model, args.threads)
        base_size = (base_card.input_width, base_card.input_height)
        if base_size not in sizes:
            sizes.append(base_size)
            sizes.sort(key=lambda s: s[0] * s[1])
            log(f"tradeoff: added the model's own size {base_size[0]}x{base_size[1]} to "
                '--sizes (the reference row)')
        extras = []
        for path in args.extra_model:
            try:
                extras.append((path, load_card(path)))
            except ModelCardError as e:
                raise TradeoffError(f'--extra-model {path}: {e}') from e
        log(f'tradeoff: rebuilt the torch UNet (widths {list(model.widths)}) from '
            f'{args.model}; max |logit diff| vs ONNX Runtime {rebuild_diff:.2e}')
        machine = machine_info()
        frames = list(progress(rendered_frames(args.render, args.seed, *frame_size,
                                               style=args.style),
                               total=args.render, desc='tradeoff: rendering'))
        calib = []
        if int8_sizes:
            calib = list(progress(rendered_frames(args.calib_frames, CALIBRATION_SEED,
                                                  *frame_size),
                                  total=args.calib_frames,
                                  desc='tradeoff: rendering calibration frames'))

        rows = []
        total = len(sizes) + len(int8_sizes) + len(extras)
        for width, height in sizes:
            label = f'{width}x{height}'
            log(f'tradeoff: [{len(rows) + 1}/{total}] {label}: exporting')
            path, _, diff = export_size(model, base_card, args.model, width, height,
                                        args.work_dir)
            row = measure(path, frames, args.threads, label)
            row.update(kind='resize', onnx_max_abs_diff_vs_torch=float(f'{diff:.3g}'))
            rows.append(row)
            _log_row(row, len(rows), total)
            if (width, height) in int8_sizes:
                log(f'tradeoff: [{len(rows) + 1}/{total}] {label} int8: quantizing')
                int8_path = quantize_size(path, calib, log=log)
                row = measure(int8_path, frames, args.threads, f'{label} int8')
                row.update(kind='resize')
                rows.append(row)
                _log_row(row, len(rows), total)
        for path, card in extras:
            label = f'{card.name} {card.input_width}x{card.input_height}'
            log(f'tradeoff: [{len(rows) + 1}/{total}] {label}: extra model')
            row = measure(path, frames, args.threads, label)
            row.update(kind='extra')
            rows.append(row)
            _log_row(row, len(rows), total)
        log(f'tradeoff: timing {len(rows)} models, {args.runs} runs each in {args.rounds} '
            f'interleaved rounds, {args.threads} thread(s)')
        latencies = time_models([r['path'] for r in rows], args.threads, args.runs,
                                args.warmup, args.rounds)
        for row, latency in zip(rows, latencies):
            row['latency'] = latency
            _log(f'tradeoff: {row["label"]}: p50 {latency["p50_ms"]:.1f} ms, p95 '
                 f'{latency["p95_ms"]:.1f} ms')
    finally:
        torch.set_num_threads(torch_threads)

    reference = f'{base_size[0]}x{base_size[1]}'
    add_ratios(rows, next(r for r in rows if r['label'] == reference))
    return {
        'command': command,
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'base_model': {'path': display_path(args.model), 'name': base_card.name,
                       'input': list(base_size), 'sha256': file_sha256(args.model),
                       'rebuild_max_abs_diff_vs_onnx': float(f'{rebuild_diff:.3g}')},
        'reference': reference,
        'class_names': list(base_card.class_names),
        'settings': {'frames': len(frames), 'seed': args.seed, 'style': args.style,
                     'frame_size': list(frame_size),
                     'renderer_source_hash': renderer_fingerprint(), 'threads': args.threads,
                     'runs': args.runs, 'rounds': args.rounds, 'warmup': args.warmup,
                     'sizes': [f'{w}x{h}' for w, h in sizes],
                     'int8_sizes': [f'{w}x{h}' for w, h in int8_sizes],
                     'calib_frames': args.calib_frames if int8_sizes else None,
                     'calib_seed': CALIBRATION_SEED if int8_sizes else None,
                     'work_dir': display_path(args.work_dir), 'load_end': _load()},
        'caveat': f'the {base_card.name} rows are its weights, trained at {base_size[0]}x'
                  f'{base_size[1]}, re-exported at other input sizes: the scene at another '
                  'scale, not a model trained for that size',
        'machine': machine,
        'rows': rows,
    }


def _load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _log(text):
    print(text, file=sys.stderr, flush=True)


def _log_row(row, index, total):
    _log(f'tradeoff: [{index}/{total}] {row["label"]}: mIoU {row["miou"]:.4f} on '
         f'{row["images"]} frames')


def run(args):
    """Measure the trade-off and write the reports; return the exit code (2: bad input)."""
    from freespace_seg.perception.pipeline import packaged_model_path, PACKAGED_UNET_MODEL

    if args.model is None:
        args.model = packaged_model_path(PACKAGED_UNET_MODEL)
    try:
        result = tradeoff(args)
    except TradeoffError as e:
        print(f'tradeoff: error: {e}', file=sys.stderr, flush=True)
        return 2
    paths = write_reports(result, args.out)
    print('\n'.join(table_lines(result)))
    print(f'tradeoff: wrote {", ".join(paths)}; models and cards in {args.work_dir}')
    return 0
