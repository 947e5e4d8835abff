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
``python -m freespace_seg finetune``: adapt a sim-trained model to your own camera images.

A few dozen real images with hand-made masks narrow the sim-to-real gap far more than more
synthetic data. The command starts from an ONNX model (by default the shipped one), rebuilds
the torch UNet from it, trains a few hundred small steps on the user's images with the same
loss and augmentations as ``train``, and exports the result with the project's exporter, with
a model card that the node loads like any other.

Input folder (``--images DIR``): images ``*.png``, ``*.jpg`` or ``*.jpeg`` with a mask of the
same size named ``<stem>_mask.png`` beside each, or ``DIR/masks/<stem>.png``. In a mask 0 is
blocked and any other value is free floor. A part of the images (``--val-fraction``, at least
one when there are two or more) is held out: it is never trained on, and the command scores
the model on it through the node's ONNX pipeline before and after fine-tuning.

The torch UNet is rebuilt from the ONNX file by :mod:`freespace_seg.training.rebuild`; its
BatchNorm layers are frozen during fine-tuning (eval mode, scale and shift not trained): their
statistics are already folded into the weights, and re-estimating them from a few images
would undo that.

Example::

    python -m freespace_seg finetune --images data/real --steps 300 \
        --out models/freespace_unet_finetuned.onnx
"""

import copy
import os
import sys
import time

from freespace_seg.common.reproduce import OptionRecorder
from freespace_seg.common.values import display_path, round4
from freespace_seg.perception import metrics
from freespace_seg.perception.pipeline import packaged_model_path
from freespace_seg.training import augment as augment_mod
from freespace_seg.training import data as datasets
from freespace_seg.training import loop
from freespace_seg.training import tensors
from freespace_seg.training.card import dump_card
from freespace_seg.training.data import letterbox_pair
from freespace_seg.training.errors import FinetuneError, TrainingError
from freespace_seg.training.export import export_and_verify
from freespace_seg.training.model import count_parameters
from freespace_seg.training.rebuild import freeze_batchnorm, rebuild_checked
import numpy as np
import torch

DEFAULT_OUT = os.path.join('models', 'freespace_unet_finetuned.onnx')

# ---------------------------------------------------------------------------------------------
# The user's images


def split_pairs(pairs, val_fraction, seed):
    """Shuffle with ``seed`` and hold out ``val_fraction`` (at least 1 of >= 2; 0: none)."""
    n = len(pairs)
    n_val = 0
    if val_fraction > 0.0 and n >= 2:
        n_val = min(n - 1, max(1, int(round(val_fraction * n))))
    order = np.random.default_rng(int(seed)).permutation(n)
    val = sorted(pairs[i] for i in order[:n_val])
    train = sorted(pairs[i] for i in order[n_val:])
    return train, val


# ---------------------------------------------------------------------------------------------
# Scoring through the node's pipeline


def score_model(model_path, frames, threads=2, desc='val'):
    """Segment (rgb, label) frames with the ONNX pipeline; return metrics.summarize(...)."""
    from freespace_seg.common.progress import progress
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model_path, backend='onnxruntime', num_threads=threads)
    try:
        names = list(pipe.card.class_names)
        acc = metrics.ConfusionAccumulator(len(names))
        for rgb, label in progress(frames, total=len(frames), desc=desc):
            acc.update(pipe.segment(rgb), label)
    finally:
        pipe.close()
    return metrics.summarize(acc.matrix, names, positive_class=pipe.card.free_space[0])


def _rounded(summary):
    return {'miou': round4(summary['miou']),
            'iou': {k: round4(v) for k, v in summary['iou'].items()},
            'pixel_accuracy': round4(summary['pixel_accuracy'])}


# ---------------------------------------------------------------------------------------------
# Command

#: the options, in the order the card's reproducing command line spells them out
OPTIONS = OptionRecorder('finetune')


def add_arguments(parser):
    """Add the ``finetune`` options to ``parser``."""
    OPTIONS.reset()

    def opt(flag, **kw):
        return OPTIONS.add(parser, flag, **kw)

    parser.description = (
        'Fine-tune a model (default: the shipped one) on your own images with masks, e.g. a '
        'few dozen real camera frames, and export it with its card. Images *.png/*.jpg/*.jpeg '
        'in --images DIR, each with a mask <stem>_mask.png beside it or DIR/masks/<stem>.png '
        '(0 = blocked, nonzero = free). Some images are held out and scored before and after.')
    opt('--images', required=True, metavar='DIR', help='folder of images and masks')
    opt('--model', metavar='ONNX',
        help='float ONNX model to start from, with its card (default: the shipped model)')
    opt('--out', default=DEFAULT_OUT,
        help='ONNX file to write; the card goes beside it as .yaml (default: %(default)s)')
    opt('--steps', type=int, default=300, help='optimizer steps (default: %(default)s)')
    opt('--batch-size', type=int, default=4, help='default: %(default)s')
    opt('--lr', type=float, default=3e-4,
        help='peak learning rate of the one-cycle schedule (default: %(default)s)')
    opt('--augment', choices=augment_mod.AUGMENT_MODES + ('none',), default='full',
        help='augmentation as in `train` (default: %(default)s)')
    opt('--val-fraction', type=float, default=0.2,
        help='share of the images held out for validation, at least one when there are two '
             'or more; 0 holds out none (default: %(default)s)')
    opt('--seed', type=int, default=0,
        help='seed of the split, torch, numpy and random (default: %(default)s)')
    opt('--threads', type=int, default=2, help='torch and ONNX Runtime threads '
        '(default: %(default)s)')
    opt('--replay', metavar='DIR', default=None,
        help="a synthetic dataset (`generate`, e.g. the base model's own training frames): "
             'its train split is mixed into the fine-tuning so that the model keeps what it '
             'knew; needed when the images are only partly labelled (autolabel)')
    opt('--replay-frames', type=int, default=0,
        help='synthetic frames to mix in (default: as many as the training images)')
    opt('--log-every', type=int, default=50, help='default: %(default)s')


def reproduce_command(args):
    """Return the command line of this run with every option spelled out."""
    return OPTIONS.command_line(
        args, skip=lambda dest, value: dest == 'model' and value == packaged_model_path())


def _check_args(args):
    if args.steps < 1 or args.batch_size < 1 or args.threads < 1:
        raise FinetuneError('--steps, --batch-size and --threads must be at least 1')
    if not args.lr > 0.0:
        raise FinetuneError('--lr must be positive')
    if not 0.0 <= args.val_fraction < 1.0:
        raise FinetuneError('--val-fraction must be in [0, 1)')
    if not args.out.endswith('.onnx'):
        raise FinetuneError(f'--out {args.out}: expected an .onnx file name')
    if os.path.abspath(args.out) == os.path.abspath(args.model):
        raise FinetuneError('--out must differ from --model (the base model is kept)')
    if not os.path.isfile(args.model):
        raise FinetuneError(f'--model {args.model}: no such file')
    if args.replay_frames < 0:
        raise FinetuneError('--replay-frames must be at least 0')
    if args.replay and not os.path.isdir(args.replay):
        raise FinetuneError(f'--replay {args.replay}: no such folder')


def finetune(args):
    """Run the fine-tuning described by parsed ``args``; return the card dict."""
    t_begin = time.perf_counter()
    _check_args(args)
    torch.set_num_threads(args.threads)
    loop.seed_everything(args.seed)
    command = reproduce_command(args)
    print(f'finetune: {command}', flush=True)

    try:
        pairs = datasets.user_image_pairs(args.images)
        frames = {pair: datasets.read_user_image_pair(*pair) for pair in pairs}
    except datasets.UserImagesError as e:
        raise FinetuneError(str(e)) from None
    train_pairs, val_pairs = split_pairs(pairs, args.val_fraction, args.seed)
    print(f'finetune: {len(pairs)} images: {len(train_pairs)} for training, {len(val_pairs)} '
          'held out for validation', flush=True)
    if not val_pairs:
        print('finetune: no validation images: the before/after scores are skipped',
              file=sys.stderr, flush=True)

    model, base_card, width, height, rebuild_diff = rebuild_checked(
        args.model, seed=args.seed, threads=args.threads)
    print(f'finetune: rebuilt torch {getattr(model, "arch", "UNet")} (widths '
          f'{list(model.widths)}) from {args.model}; max |logit diff| vs ONNX Runtime '
          f'{rebuild_diff:.2e}', flush=True)

    val_frames = [frames[p] for p in val_pairs]
    before = score_model(args.model, val_frames, args.threads, 'val before') if val_frames \
        else None
    if before is not None:
        print(f'finetune: base model on {len(val_frames)} held-out images: mIoU '
              f'{before["miou"]:.4f}', flush=True)

    boxed = [letterbox_pair(*frames[p], width, height, tensors.PAD_VALUE)
             for p in train_pairs]
    images = np.stack([b[0] for b in boxed])
    labels = np.stack([b[1] for b in boxed])
    replayed = 0
    if args.replay:
        want = args.replay_frames or len(train_pairs)
        try:
            have = datasets.count_frames(args.replay, 'train')
        except (OSError, ValueError) as e:
            raise FinetuneError(f'--replay {args.replay}: {e}') from None
        if have < 1:
            raise FinetuneError(f'--replay {args.replay}: no training frames')
        extra_x, extra_y = datasets.stack_letterboxed(
            datasets.dataset_frames(args.replay, 'train', limit=want), min(want, have), width,
            height, tensors.PAD_VALUE, desc='finetune: replay')
        images = np.concatenate([images, extra_x])
        labels = np.concatenate([labels, extra_y])
        replayed = len(extra_x)
        print(f'finetune: {replayed} synthetic frames of {args.replay} mixed in', flush=True)
    train_x, train_y = tensors.to_tensors(images, labels)
    freeze_batchnorm(model)
    t_train = time.perf_counter()
    history = loop.train_model(
        model, train_x, train_y, None, None, steps=args.steps, batch_size=args.batch_size,
        lr=args.lr, weight_decay=0.0, dice_weight=1.0, seed=args.seed,
        augment_data=False if args.augment == 'none' else args.augment,
        log_every=args.log_every, log=lambda m: print(m, flush=True))
    train_time = time.perf_counter() - t_train

    sample = tensors.normalize(train_x[:1].float() / 255.0, train_y[:1].long()).numpy()
    diff = export_and_verify(model, args.out, width, height, inputs=sample)
    print(f'finetune: wrote {args.out}; ONNX Runtime vs torch max |diff| {diff:.2e}',
          flush=True)

    base_raw = copy.deepcopy(base_card.raw)
    stem = os.path.splitext(os.path.basename(args.out))[0]
    images_dir = display_path(args.images)
    training = {
        'method': 'fine-tune of the base model on user images (python -m freespace_seg '
                  'finetune); BatchNorm frozen (folded into the convolutions)',
        'base_model': {
            'path': display_path(args.model),
            'name': base_card.name,
            'command': (base_raw.get('training') or {}).get('command'),
            'evaluation': base_raw.get('evaluation') or None,
        },
        'seed': args.seed,
        'steps': history['steps'],
        'batch_size': args.batch_size,
        'input_size': [width, height],
        'trainable_params': count_parameters(model),
        'wall_time_s': None,
        'train_time_s': round(train_time, 1),
        'command': command,
        'data': {
            'source': 'user images',
            'images_dir': images_dir,
            'num_images': len(pairs),
            'num_train': len(train_pairs),
            'num_val': len(val_pairs),
            'val_fraction': args.val_fraction,
            'val_images': [os.path.basename(p[0]) for p in val_pairs],
            'replay': ({'dataset': display_path(args.replay), 'frames': replayed}
                       if args.replay else None),
        },
        'optimizer': {'name': 'AdamW', 'lr': args.lr, 'weight_decay': 0.0,
                      'schedule': 'one-cycle'},
        'loss': 'cross-entropy + 1 * Dice',
        'augmentation': args.augment,
        'rebuild_max_abs_diff_vs_onnx': float(f'{rebuild_diff:.3g}'),
        'torch': str(torch.__version__),
        'onnx_opset': 17,
        'onnx_max_abs_diff_vs_torch': float(f'{diff:.3g}'),
    }
    card = {
        'format_version': 1,
        'name': stem,
        'description': (f'{base_card.name} fine-tuned on {len(train_pairs)} user images '
                        f'from {images_dir} ({len(val_pairs)} more held out for the '
                        'evaluation). Base model: '
                        + str(base_raw.get('description', base_card.name))),
        'model_file': os.path.basename(args.out),
        'input': dict(base_raw['input'], shape=[1, 3, int(height), int(width)]),
        'output': base_raw['output'],
        'classes': base_raw['classes'],
        'evaluation': {},
        'training': training,
        'data_sources': list(base_raw.get('data_sources') or []) + [
            f'{len(train_pairs)} user images with masks from {images_dir} (fine-tuning)'] + (
            [f'{replayed} synthetic frames of {display_path(args.replay)} (replayed in the '
             'fine-tuning)'] if args.replay else []),
        'licence': base_raw.get('licence', 'Apache-2.0'),
    }
    card_path = os.path.splitext(args.out)[0] + '.yaml'
    dump_card(card, card_path)  # the pipeline needs the card to score the new model
    if val_frames:
        after = score_model(args.out, val_frames, args.threads, 'val after')
        card['evaluation'] = {'user_val': {
            'images': len(val_frames),
            'before': _rounded(before),
            'after': _rounded(after),
            'miou_before': round4(before['miou']),
            'miou_after': round4(after['miou']),
            'source': 'held-out user images (not trained on), through the ONNX pipeline at '
                      'camera resolution',
        }}
        print(f'finetune: held-out mIoU {before["miou"]:.4f} -> {after["miou"]:.4f} on '
              f'{len(val_frames)} images', flush=True)
    training['wall_time_s'] = round(time.perf_counter() - t_begin, 1)
    dump_card(card, card_path)
    print(f'finetune: wrote {card_path}; wall time {training["wall_time_s"]:.0f} s', flush=True)
    return card


def run(args):
    """Fine-tune and export; return the exit code (2 for unusable input)."""
    if args.model is None:
        args.model = packaged_model_path()
    try:
        finetune(args)
    except TrainingError as e:  # FinetuneError, RebuildError
        print(f'finetune: error: {e}', file=sys.stderr, flush=True)
        return 2
    return 0
