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
``python -m freespace_seg prune``: structured channel pruning with fine-tuning.

The command removes whole output channels of the UNet's convolutions, so the result is a
smaller dense UNet (fewer multiply-adds, a smaller file, no sparse kernels needed), fine-tunes
it on synthetic frames to win back what the cut lost, exports it with the project's exporter
and writes its model card, with its mIoU on held-out synthetic frames and its latency, both
measured beside those of the model it came from. ``--int8`` also quantizes the result.

Method:

* The source ONNX model is rebuilt as a torch UNet by
  :func:`freespace_seg.training.rebuild.rebuild_torch_model`: the exporter folded each
  BatchNorm into its convolution, so the rebuilt kernels are stored with unit RMS and the
  BatchNorm after each one holds the folded per-channel scale and bias, with an identity
  normalization. A plain L1 norm of the rebuilt kernels would be the same for every channel.
* Importance of an output channel: the L1 norm of its BatchNorm-folded kernel,
  ``sum |W_c| * |gamma_c| / sqrt(var_c + eps)``. For a rebuilt model that is exactly the
  L1 norm of the kernel in the ONNX file; for a model trained in torch it weighs the filter
  by its BatchNorm scale (a channel the BatchNorm switched off counts as unimportant).
* In every prunable convolution the ``--ratio`` share of the channels with the lowest
  importance is removed (at least ``--min-channels`` are kept, rounded up to a multiple of
  ``--channel-multiple``). ``--scope inner`` prunes only the channels inside the
  double-conv blocks (the stem and the first conv of each block, which feed only the next
  conv); ``--scope all`` (default) also prunes block outputs, and every consumer follows:
  the next block, the skip concatenation into the decoder (upsampled part first, then the
  skip) and the head. Bilinear upsampling works per channel, so it commutes with the cut.
* The kept kernels, BatchNorm parameters and statistics are copied into a
  :class:`~freespace_seg.training.model.FreespaceUNet` built with those channel counts
  (``channels=``). Before fine-tuning the command checks that it runs and scores it on the
  validation frames beside the source model.
* Fine-tuning uses ``train``'s loss (cross-entropy + Dice) and augmentations with the
  BatchNorm frozen as in ``finetune``, keeping the best state by validation mIoU. The
  rebuilt kernels have unit RMS, so an Adam step of ``--lr`` changes them by about that
  fraction: recovering from a cut of half the channels needs a larger rate (5e-3: at
  ratio 0.5 the shipped model reached 0.78 validation mIoU after 175 steps, against 0.74
  after 200 steps at 1e-3) than ``finetune``'s gentle 3e-4. The model is exported with
  :func:`~freespace_seg.training.export.export_and_verify`, scored through the node's ONNX
  pipeline on frames rendered with ``--eval-seed`` (1000, which training never renders),
  and timed with ONNX Runtime on 1 and 2 threads, interleaved
  with the source model so that both see the same machine load.

Training data: ``--render N`` renders frames (cached with ``--render-cache DIR``, as in
``train``); ``--frames-npz FILE`` (and ``--val-frames-npz FILE``) loads letterboxed frames
directly from such a cache file (arrays ``images`` (N, H, W, 3) and ``labels`` (N, H, W),
at the model's input size), whatever renderer source made them.

Example::

    python -m freespace_seg prune --model models/freespace_unet.onnx --ratio 0.5 \
        --frames-npz data/cache/render-n3000-s0-480x270-480x272-p0-d8b65937a045.npz \
        --val-frames-npz data/cache/render-n300-s1-480x270-480x272-p0-d8b65937a045.npz \
        --steps 700 --augment flip --val-every 175 --threads 1 --int8 \
        --out data/prune/freespace_unet_p50.onnx
"""

import argparse
import copy
import os
import re
import sys
import time
import zipfile

from freespace_seg.common.reproduce import OptionRecorder
from freespace_seg.common.values import display_path
from freespace_seg.perception import metrics
from freespace_seg.perception.engines.engine_cache import file_sha256
from freespace_seg.perception.pipeline import packaged_model_path, PACKAGED_UNET_MODEL
from freespace_seg.perception.timing import interleaved_runs
from freespace_seg.sim.randomization import RandomizationConfig
from freespace_seg.training import augment as augment_mod
from freespace_seg.training import data as datasets
from freespace_seg.training import loop
from freespace_seg.training import tensors as tensors_mod
from freespace_seg.training import train as base_train
from freespace_seg.training.card import dump_card, update_card
from freespace_seg.training.errors import PruneError, TrainingError
from freespace_seg.training.evaluate import evaluate_frames, latency_key
from freespace_seg.training.export import export_and_verify
from freespace_seg.training.model import count_parameters
from freespace_seg.training.pruning import multiply_adds, prune_model, SCOPES
from freespace_seg.training.rebuild import freeze_batchnorm, rebuild_checked
from freespace_seg.training.report import card_scores
import numpy as np
import torch

DEFAULT_EVAL_SEED = 1000
_NUM = r'-?[0-9.]+(?:e[-+]?\d+)?'
CACHE_NAME = re.compile(r'render-n(?P<n>\d+)-s(?P<seed>-?\d+)-(?P<w>\d+)x(?P<h>\d+)-'
                        r'(?P<nw>\d+)x(?P<nh>\d+)-p(?P<pad>\d+)'
                        rf'(?:-h(?P<h_lo>{_NUM})_(?P<h_hi>{_NUM}))?'
                        rf'(?:-pt(?P<p_lo>{_NUM})_(?P<p_hi>{_NUM}))?'
                        r'-(?P<hash>[0-9a-f]+)\.npz$')


# ---------------------------------------------------------------------------------------------
# Data


def _merge_sources(base, extra):
    """Return the source model's data sources followed by the new ones not already listed."""
    merged = list(base or [])
    return merged + [line for line in extra if line not in merged]


def _cache_record(path):
    """Return what a cache file's name says about its frames (seed, sizes, renderer)."""
    record = {'frames_npz': display_path(path)}
    m = CACHE_NAME.search(os.path.basename(path))
    if m:
        record.update({'seed': int(m.group('seed')),
                       'image_size': [int(m.group('w')), int(m.group('h'))],
                       'renderer_source_hash': m.group('hash')})
        # The name carries a camera range only where it differs from the default one.
        defaults = RandomizationConfig()
        record['camera_height'] = ([float(m.group('h_lo')), float(m.group('h_hi'))]
                                   if m.group('h_lo') else list(defaults.camera_height))
        record['camera_pitch'] = ([float(m.group('p_lo')), float(m.group('p_hi'))]
                                  if m.group('p_lo') else list(defaults.camera_pitch))
    return record


def load_frames_npz(path, width, height, limit=None, option='--frames-npz'):
    """Return the uint8 ``images`` (N, H, W, 3) and ``labels`` (N, H, W) of a cache file."""
    if not os.path.isfile(path):
        raise PruneError(f'{option} {path}: no such file')
    try:
        with np.load(path) as z:
            if 'images' not in z.files or 'labels' not in z.files:
                raise PruneError(f'{option} {path}: expected arrays "images" and "labels" '
                                 f'(a render cache file), found {z.files}')
            images, labels = z['images'], z['labels']
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise PruneError(f'{option} {path}: cannot read: {e}') from e
    if (images.ndim != 4 or images.shape[1:] != (height, width, 3)
            or labels.shape != images.shape[:3] or images.dtype != np.uint8
            or labels.dtype != np.uint8):
        raise PruneError(f'{option} {path}: holds images {images.shape} {images.dtype} and '
                         f'labels {labels.shape} {labels.dtype}; the model needs uint8 frames '
                         f'letterboxed to its input, (N, {height}, {width}, 3) and (N, {height}, '
                         f'{width})')
    if limit is not None:
        images, labels = images[:int(limit)], labels[:int(limit)]
    return images, labels


def _load_data(args, width, height):
    """Return (train_x, train_y, val_x, val_y, data record) as uint8 torch tensors."""
    rw, rh = args.render_size
    if args.frames_npz is not None:
        print(f'prune: loading {args.frames_npz}', flush=True)
        tx, ty = load_frames_npz(args.frames_npz, width, height, args.limit_train)
        record = dict(_cache_record(args.frames_npz), generator='freespace_seg.sim')
    else:
        tx, ty = datasets.rendered_letterboxed(
            args.render, args.data_seed, rw, rh, width, height, tensors_mod.PAD_VALUE,
            args.render_cache, desc='render train')
        if args.limit_train is not None:
            tx, ty = tx[:args.limit_train], ty[:args.limit_train]
        defaults = RandomizationConfig()
        record = {'generator': 'freespace_seg.sim', 'seed': args.data_seed,
                  'image_size': [rw, rh], 'renderer_source_hash': datasets.renderer_fingerprint(),
                  'camera_height': [float(v) for v in defaults.camera_height],
                  'camera_pitch': [float(v) for v in defaults.camera_pitch]}
    record['num_train'] = int(tx.shape[0])
    if args.val_frames_npz is not None:
        vx, vy = load_frames_npz(args.val_frames_npz, width, height, args.limit_val,
                                 '--val-frames-npz')
        record['val'] = _cache_record(args.val_frames_npz)
    else:
        n_val = args.render_val
        if n_val is None:
            n_val = max(8, args.render // 10) if args.render is not None else 0
        if args.limit_val is not None:
            n_val = min(n_val, args.limit_val)
        if n_val > 0:
            vx, vy = datasets.rendered_letterboxed(
                n_val, args.data_seed + 1, rw, rh, width, height, tensors_mod.PAD_VALUE,
                args.render_cache, desc='render val')
            record['val'] = {'seed': args.data_seed + 1, 'image_size': [rw, rh],
                             'renderer_source_hash': datasets.renderer_fingerprint()}
        else:
            vx = np.empty((0, height, width, 3), np.uint8)
            vy = np.empty((0, height, width), np.uint8)
    record['num_val'] = int(vx.shape[0])
    train_x, train_y = tensors_mod.to_tensors(tx, ty)
    val_x, val_y = tensors_mod.to_tensors(vx, vy)
    return train_x, train_y, val_x, val_y, record


# ---------------------------------------------------------------------------------------------
# Command

#: the options, in the order the card's reproducing command line spells them out
OPTIONS = OptionRecorder('prune')


def _size(text):
    try:
        return base_train._size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_arguments(parser):
    """Add the ``prune`` options to ``parser``."""
    OPTIONS.reset()
    opt = OPTIONS.add

    parser.description = (
        'Channel-prune a UNet model (default: the shipped UNet, models/freespace_unet.onnx): '
        'remove the output channels with the smallest BatchNorm-folded L1 norm in each '
        "convolution, keep the UNet's skip connections consistent, fine-tune the smaller "
        'model on synthetic frames, export it with its card, its held-out mIoU and its '
        "latency beside the source model's, and optionally an INT8 copy.")
    pr = parser.add_argument_group('pruning')
    opt(pr, '--model', metavar='ONNX',
        help='float ONNX UNet to prune, with its card (default: models/freespace_unet.onnx)')
    opt(pr, '--ratio', type=float, default=0.5,
        help='share of the channels removed in each pruned convolution, in (0, 1) '
             '(default: %(default)s)')
    opt(pr, '--scope', choices=tuple(SCOPES), default='all',
        help='inner: only the channels inside the double-conv blocks; all: also the block '
             'outputs, with the skip connections and the head adjusted (default: %(default)s)')
    opt(pr, '--min-channels', type=int, default=4,
        help='keep at least this many channels in each convolution (default: %(default)s)')
    opt(pr, '--channel-multiple', type=int, default=1,
        help='round the kept channels up to a multiple of this (default: %(default)s)')

    src = parser.add_argument_group('fine-tuning data (one of --frames-npz or --render)')
    opt(src, '--frames-npz', metavar='FILE',
        help='training frames from a render cache file (arrays images and labels, '
             'letterboxed to the model input), e.g. data/cache/render-n3000-s0-...npz')
    opt(src, '--val-frames-npz', metavar='FILE',
        help='validation frames (model selection) from a render cache file')
    opt(src, '--render', type=int, metavar='N', help='render N training frames instead')
    opt(src, '--render-val', type=int, metavar='M',
        help='validation frames rendered with seed --data-seed + 1 (default with --render: '
             'N/10, at least 8; otherwise none unless --val-frames-npz)')
    opt(src, '--data-seed', type=int, default=0,
        help='renderer seed of --render (default: %(default)s)')
    opt(src, '--render-size', type=_size, default=(480, 270), metavar='WxH',
        help='camera size of rendered frames, also of the evaluation frames (default: 480x270)')
    opt(src, '--render-cache', metavar='DIR',
        help='keep rendered frames in DIR and reuse them (as `train`)')
    opt(src, '--limit-train', type=int, metavar='N', help='use at most N training frames')
    opt(src, '--limit-val', type=int, metavar='N', help='use at most N validation frames')

    tr = parser.add_argument_group('fine-tuning')
    opt(tr, '--steps', type=int, default=400,
        help='optimizer steps; 0 exports the pruned model without fine-tuning '
             '(default: %(default)s)')
    opt(tr, '--batch-size', type=int, default=8, help='default: %(default)s')
    opt(tr, '--low-res-steps', type=int, default=0,
        help='train the first N steps at half resolution, as `train` (default: %(default)s)')
    opt(tr, '--lr', type=float, default=5e-3,
        help='peak learning rate of the one-cycle schedule; the rebuilt kernels have unit '
             'RMS, so this is about the relative size of a step (default: %(default)s)')
    opt(tr, '--augment', choices=augment_mod.AUGMENT_MODES + ('none',), default='full',
        help='augmentation as in `train` (default: %(default)s)')
    opt(tr, '--seed', type=int, default=0,
        help='seed of torch, numpy and random (default: %(default)s)')
    opt(tr, '--threads', type=int, default=2,
        help='torch and ONNX Runtime threads (default: %(default)s)')
    opt(tr, '--val-every', type=int, default=100,
        help='score on the validation frames every this many steps (default: %(default)s)')
    opt(tr, '--log-every', type=int, default=50, help='default: %(default)s')

    out = parser.add_argument_group('output and evaluation')
    opt(out, '--out', metavar='ONNX',
        help='ONNX file to write, its card beside it as .yaml (default: '
             'data/prune/<model stem>_p<ratio in percent>.onnx)')
    opt(out, '--eval-frames', type=int, default=300,
        help='held-out frames rendered with --eval-seed to score the result and the source '
             "model through the node's pipeline; 0 to skip (default: %(default)s)")
    opt(out, '--eval-seed', type=int, default=DEFAULT_EVAL_SEED,
        help='renderer seed of the evaluation frames (default: %(default)s)')
    opt(out, '--latency-runs', type=int, default=50,
        help='timed ONNX Runtime runs per model, thread count and round; 0 to skip '
             '(default: %(default)s)')
    opt(out, '--latency-rounds', type=int, default=3,
        help='rounds of latency measurement alternating between the source and pruned models; '
             'the median of the round medians is reported (default: %(default)s)')
    opt(out, '--int8', action='store_true',
        help='also write a static INT8 (QDQ) copy (`quantize`), scored and timed the same way')
    opt(out, '--int8-frames', type=int, default=64,
        help='calibration frames of --int8 (default: %(default)s)')


def reproduce_command(args):
    """Return the command line of this run with every option spelled out."""
    def skip(dest, value):
        if dest == 'model' and value == packaged_model_path(PACKAGED_UNET_MODEL):
            return True
        return args.render is None and dest in ('data_seed', 'render_cache', 'render_val')

    def show(dest, value):
        return f'{value[0]}x{value[1]}' if dest == 'render_size' else value

    return OPTIONS.command_line(args, skip, show)


def default_out(model_path, ratio):
    """``data/prune/<model stem>_p<percent>.onnx``."""
    stem = os.path.splitext(os.path.basename(model_path))[0]
    return os.path.join('data', 'prune', f'{stem}_p{int(round(100 * ratio))}.onnx')


def _check_args(args):
    if not 0.0 < args.ratio < 1.0:
        raise PruneError(f'--ratio must be in (0, 1), got {args.ratio:g}')
    if args.min_channels < 1 or args.channel_multiple < 1:
        raise PruneError('--min-channels and --channel-multiple must be at least 1')
    if args.steps < 0:
        raise PruneError('--steps must be 0 or more')
    if args.batch_size < 1 or args.threads < 1 or args.val_every < 1:
        raise PruneError('--batch-size, --threads and --val-every must be at least 1')
    if not args.lr > 0.0:
        raise PruneError('--lr must be positive')
    if min(args.eval_frames, args.latency_runs, args.low_res_steps) < 0:
        raise PruneError('--eval-frames, --latency-runs and --low-res-steps must be 0 or more')
    if args.latency_rounds < 1 or args.int8_frames < 1:
        raise PruneError('--latency-rounds and --int8-frames must be at least 1')
    if (args.frames_npz is None) == (args.render is None):
        raise PruneError('give exactly one of --frames-npz FILE or --render N')
    if args.render is not None and args.render < 1:
        raise PruneError('--render must be at least 1')
    if (args.limit_train is not None and args.limit_train < 1) or \
            (args.limit_val is not None and args.limit_val < 0):
        raise PruneError('--limit-train must be at least 1 and --limit-val 0 or more')
    if not os.path.isfile(args.model):
        raise PruneError(f'--model {args.model}: no such file')
    if not args.out.endswith('.onnx'):
        raise PruneError(f'--out {args.out}: expected an .onnx file name')
    if os.path.abspath(args.out) == os.path.abspath(args.model):
        raise PruneError('--out must differ from --model (the source model is kept)')


def compare_latency(paths, runs, rounds, threads=(1, 2), log=None):
    """
    Time several ONNX models in alternation; return {path: {threads: median of medians}}.

    Each round times every model once per thread count, ``runs`` runs each
    (:func:`~freespace_seg.perception.timing.interleaved_runs`), so a change of machine load
    during the measurement hits all models alike.
    """
    jobs = [(p, t) for p in paths for t in threads]
    samples = interleaved_runs(jobs, int(runs) * int(rounds), rounds=rounds, desc='latency')
    result = {p: {} for p in paths}
    for (p, t), per_round in zip(jobs, samples):
        medians = [round(float(np.median(times)), 2) for times in per_round]
        result[p][t] = round(float(np.median(medians)), 2)
    if log:
        for p, per in result.items():
            log(f'prune: latency {display_path(p)}: ' + ', '.join(
                f'{t} thread{"s" if t > 1 else ""} {v} ms' for t, v in per.items()))
    return result


def _latency_entry(per_threads, shape):
    return {latency_key(t, shape): v for t, v in per_threads.items()}


def _quantize(fp32_path, args):
    """Run the ``quantize`` command on the pruned model; return the INT8 path."""
    from freespace_seg.training import quantize

    int8 = quantize.int8_path_for(fp32_path)
    # quantize's own parser, so that every option it has gets its default here too.
    parser = argparse.ArgumentParser(prog='quantize')
    quantize.add_arguments(parser)
    ns = parser.parse_args(['--model', fp32_path, '--out', int8,
                            '--frames', str(args.int8_frames),
                            '--width', str(args.render_size[0]),
                            '--height', str(args.render_size[1])])
    rc = quantize.run(ns)
    if rc != 0:
        raise PruneError(f'quantizing {fp32_path} failed (exit code {rc})')
    return int8


def prune(args):
    """
    Run the pruning described by parsed ``args``; return the card dict.

    The steps: rebuild and cut the source model (:func:`prune_model`), check the cut
    (:func:`_before_finetuning`), fine-tune (:func:`_finetune`), export, write the card
    (:func:`_pruned_card`), quantize (``--int8``), then score and time the new model beside
    the source in one session (:func:`_same_session`).
    """
    from freespace_seg.training.quantize import int8_path_for

    t_begin = time.perf_counter()
    _check_args(args)
    torch.set_num_threads(args.threads)
    loop.seed_everything(args.seed)
    command = reproduce_command(args)
    print(f'prune: {command}', flush=True)

    # A RebuildError (bad card, not this package's UNet) exits 2 like a PruneError (run()).
    source, source_card, width, height, rebuild_diff = rebuild_checked(
        args.model, seed=args.seed, threads=args.threads)
    model, keep = prune_model(source, args.ratio, args.scope, args.min_channels,
                              args.channel_multiple)
    counts = {'source_channels': dict(source.channels),
              'params_before': count_parameters(source), 'params_after': count_parameters(model),
              'macs_before': multiply_adds(source, width, height),
              'macs_after': multiply_adds(model, width, height)}
    print(f'prune: {args.model}: {counts["params_before"]} -> {counts["params_after"]} '
          f'parameters ({100.0 * counts["params_after"] / counts["params_before"]:.1f} %), '
          f'{counts["macs_before"] / 1e9:.3f} -> {counts["macs_after"] / 1e9:.3f} GMAC per '
          'frame; channels kept: ' + ', '.join(
              f'{k} {model.channels[k]}/{source.channels[k]}' for k in keep), flush=True)

    data = _load_data(args, width, height)
    train_x, train_y, val_x, val_y, data_record = data
    print(f'prune: {train_x.shape[0]} training and {val_x.shape[0]} validation frames at '
          f'{width}x{height}', flush=True)
    sample, before = _before_finetuning(source, model, data, width, height)
    del source

    history, train_time = _finetune(model, args, data)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    diff = export_and_verify(model, args.out, width, height, inputs=sample.numpy())
    size_mb = os.path.getsize(args.out) / 1e6
    print(f'prune: wrote {args.out} ({size_mb:.2f} MB); ONNX Runtime vs torch max |diff| '
          f'{diff:.2e}', flush=True)

    training, pruning, card = _pruned_card(
        args, command, source_card, model, keep, counts, data_record, history, before,
        {'width': width, 'height': height, 'train_time': train_time, 'diff': diff,
         'rebuild_diff': rebuild_diff, 'size_mb': size_mb})
    card_path = os.path.splitext(args.out)[0] + '.yaml'
    dump_card(card, card_path)  # the pipeline needs the card to score the new model

    int8 = _quantize(args.out, args) if args.int8 else None
    models = {'pruned': args.out, 'source': args.model}
    if int8:
        models['pruned_int8'] = int8
        source_int8 = int8_path_for(args.model)
        if os.path.isfile(source_int8) and os.path.isfile(
                os.path.splitext(source_int8)[0] + '.yaml'):
            models['source_int8'] = source_int8
    _same_session(args, card, pruning, models, int8, width, height)
    training['wall_time_s'] = round(time.perf_counter() - t_begin, 1)
    dump_card(card, card_path)
    print(f'prune: wrote {card_path}' + (f', {int8} and its card' if int8 else '')
          + f'; wall time {training["wall_time_s"]:.0f} s', flush=True)
    return card


def _before_finetuning(source, model, data, width, height):
    """Check that the cut model runs; return (a normalized sample, its before-tuning scores)."""
    train_x, train_y, val_x, val_y, _ = data
    # The pruned model before fine-tuning: it runs, and how much the cut cost.
    sample_y = (val_y if val_y.shape[0] else train_y)[:1].long()
    sample_x = (val_x if val_x.shape[0] else train_x)[:1].float() / 255.0
    sample = tensors_mod.normalize(sample_x, sample_y)
    with torch.no_grad():
        cut_logits = model.eval()(sample)
        full_logits = source.eval()(sample)
    if tuple(cut_logits.shape) != (1, source.num_classes, height, width) or \
            not bool(torch.isfinite(cut_logits).all()):
        raise PruneError(f'the pruned model gives logits {tuple(cut_logits.shape)} '
                         'that are not finite or not of the input size')
    before = {'max_abs_logit_diff_vs_source': float(
        f'{float((cut_logits - full_logits).abs().max()):.3g}')}
    if val_x.shape[0]:
        for key, net in (('source_val_miou', source), ('pruned_val_miou', model)):
            before[key] = round(float(metrics.mean_iou(
                loop.validate(net, val_x, val_y))), 4)
        print(f'prune: before fine-tuning on {val_x.shape[0]} validation frames (torch): '
              f'source mIoU {before["source_val_miou"]:.4f}, pruned mIoU '
              f'{before["pruned_val_miou"]:.4f}', flush=True)
    return sample, before


def _finetune(model, args, data):
    """Fine-tune the pruned model in place (BatchNorm frozen); return (history, seconds)."""
    train_x, train_y, val_x, val_y, _ = data
    freeze_batchnorm(model)
    t_train = time.perf_counter()
    history = {'steps': 0, 'best_step': None, 'best_miou': None}
    if args.steps > 0:
        history = loop.train_model(
            model, train_x, train_y, val_x, val_y, steps=args.steps,
            batch_size=args.batch_size, lr=args.lr, weight_decay=0.0, dice_weight=1.0,
            seed=args.seed, augment_data=False if args.augment == 'none' else args.augment,
            val_every=args.val_every, log_every=args.log_every,
            log=lambda m: print(m, flush=True), low_res_steps=args.low_res_steps)
    train_time = time.perf_counter() - t_train
    model.eval()
    return history, train_time


def _pruned_card(args, command, source_card, model, keep, counts, data_record, history, before,
                 measured):
    """Return the ``training`` and ``pruning`` sections and the card dict of the new model."""
    width, height = measured['width'], measured['height']
    params_before, params_after = counts['params_before'], counts['params_after']
    macs_before, macs_after = counts['macs_before'], counts['macs_after']
    source_channels = counts['source_channels']
    train_time, diff = measured['train_time'], measured['diff']
    rebuild_diff, size_mb = measured['rebuild_diff'], measured['size_mb']
    source_raw = copy.deepcopy(source_card.raw)
    stem = os.path.splitext(os.path.basename(args.out))[0]
    source_name = source_card.name
    training = {
        'method': 'structured channel pruning of the source model (python -m freespace_seg '
                  'prune), then fine-tuning on synthetic frames; BatchNorm frozen (folded into '
                  'the convolutions)',
        'source_model': {
            'path': display_path(args.model),
            'name': source_name,
            'sha256': file_sha256(args.model),
            'params': params_before,
            'command': (source_raw.get('training') or {}).get('command'),
        },
        'seed': args.seed,
        'steps': history['steps'],
        'best_step': history.get('best_step'),
        'batch_size': args.batch_size,
        'low_res_steps': args.low_res_steps,
        'input_size': [width, height],
        'params': params_after,
        'wall_time_s': None,
        'train_time_s': round(train_time, 1),
        'command': command,
        'data': data_record,
        'optimizer': {'name': 'AdamW', 'lr': args.lr, 'weight_decay': 0.0,
                      'schedule': 'one-cycle'},
        'loss': 'cross-entropy + 1 * Dice',
        'augmentation': args.augment,
        'best_val_miou': None if history.get('best_miou') is None
        else round(float(history['best_miou']), 4),
        'rebuild_max_abs_diff_vs_onnx': float(f'{rebuild_diff:.3g}'),
        'torch': str(torch.__version__),
        'onnx_opset': 17,
        'onnx_max_abs_diff_vs_torch': float(f'{diff:.3g}'),
    }
    pruning = {
        'criterion': 'L1 norm of the BatchNorm-folded kernel of each output channel',
        'ratio': args.ratio,
        'scope': args.scope,
        'min_channels': args.min_channels,
        'channel_multiple': args.channel_multiple,
        'params': {'source': params_before, 'pruned': params_after,
                   'fraction': round(params_after / params_before, 4)},
        'gmac_per_frame': {'source': round(macs_before / 1e9, 4),
                           'pruned': round(macs_after / 1e9, 4)},
        'file_mb': {'source': round(os.path.getsize(args.model) / 1e6, 3),
                    'pruned': round(size_mb, 3)},
        'channels_kept': {k: f'{model.channels[k]}/{source_channels[k]}' for k in keep},
        'before_finetuning': before,
    }
    card = {
        'format_version': 1,
        'name': stem,
        'description': (f'{source_name} with {100 * args.ratio:g} % of the channels of each '
                        f'{"inner " if args.scope == "inner" else ""}convolution pruned '
                        f'({params_after} instead of {params_before} parameters) and '
                        f'fine-tuned {history["steps"]} steps on synthetic frames. Source: '
                        + str(source_raw.get('description', source_name))),
        'model_file': os.path.basename(args.out),
        'input': dict(source_raw['input'], shape=[1, 3, int(height), int(width)]),
        'output': source_raw['output'],
        'classes': source_raw['classes'],
        'evaluation': {},
        'training': training,
        'pruning': pruning,
        'data_sources': _merge_sources(
            source_raw.get('data_sources'), datasets.synthetic_data_sources(
                data_record.get('seed', 'unknown'),
                # Frames cached by an older renderer may predate the photo textures.
                data_record.get('renderer_source_hash') == datasets.renderer_fingerprint(),
                what='fine-tuning frames')),
        'latency_ms': {},
        'licence': source_raw.get('licence', 'Apache-2.0'),
    }
    return training, pruning, card


def _same_session(args, card, pruning, models, int8, width, height):
    """Score (``--eval-frames``) and time (``--latency-runs``) the models of one session."""
    from freespace_seg.common.progress import progress

    same = {key: {'path': display_path(path), 'file_mb': round(os.path.getsize(path) / 1e6, 3)}
            for key, path in models.items()}
    pruning['same_session'] = same
    shape = [1, 3, int(height), int(width)]
    if args.eval_frames > 0:
        rw, rh = args.render_size
        renderer = datasets.renderer_fingerprint()
        frames = list(progress(
            datasets.rendered_frames(args.eval_frames, args.eval_seed, rw, rh),
            total=args.eval_frames, desc='render eval'))
        desc = (f'{args.eval_frames} frames rendered on the fly by freespace_seg.sim at '
                f'{rw}x{rh}, seed {args.eval_seed}, renderer source hash {renderer}')
        for key, path in models.items():
            summary, _ = evaluate_frames(path, frames, len(frames), threads=args.threads,
                                         desc=f'eval {key}')
            entry = card_scores(summary, args.eval_seed, desc)
            same[key]['synthetic_test_miou'] = entry['miou']
            print(f'prune: {key} mIoU {summary["miou"]:.4f} on the {len(frames)} held-out '
                  'frames', flush=True)
            if key == 'pruned':
                card['evaluation'] = {'synthetic_test': entry}
            elif key == 'pruned_int8':
                update_card(os.path.splitext(int8)[0] + '.yaml', {'synthetic_test': entry})
        del frames
    if args.latency_runs > 0:
        lat = compare_latency(list(models.values()), args.latency_runs, args.latency_rounds,
                              log=lambda m: print(m, flush=True))
        for key, path in models.items():
            same[key]['latency_ms'] = _latency_entry(lat[path], shape)
        card['latency_ms'] = _latency_entry(lat[args.out], shape)
        if int8:
            update_card(os.path.splitext(int8)[0] + '.yaml',
                        latency=_latency_entry(lat[int8], shape))
        pruning['latency_note'] = (
            'ONNX Runtime CPU, bare model; median of the medians of '
            f'{args.latency_rounds} rounds of {args.latency_runs} runs, the models of '
            'same_session timed in alternation')


def run(args):
    """Prune, fine-tune, export and document; return the exit code (2 for unusable input)."""
    if args.model is None:
        args.model = packaged_model_path(PACKAGED_UNET_MODEL)
    if args.out is None:
        args.out = default_out(args.model, args.ratio if 0.0 < args.ratio < 1.0 else 0.5)
    try:
        prune(args)
    except TrainingError as e:  # PruneError, RebuildError
        print(f'prune: error: {e}', file=sys.stderr, flush=True)
        return 2
    return 0
