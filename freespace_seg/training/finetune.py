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

Rebuilding torch weights from ONNX: the exporter folds every BatchNorm into the convolution
before it (the graph holds only Conv + ReLU, each Conv named after its torch module, e.g.
``/enc2/enc2.0/enc2.0.0/Conv`` for ``enc2.0.0``). Each ONNX Conv is mapped by that name to
its ``nn.Conv2d``. The BatchNorm after it is made an exact identity normalization (running
mean 0, running variance 1 - eps) whose scale and shift hold the folded per-channel RMS of the
kernel and the folded bias (those convolutions have no bias of their own); the kernel itself
is stored with unit RMS, so that Adam's fixed-size steps stay small relative to it (with the
raw folded kernels, mean |w| ~0.01 in the deep layers, a short fine-tune at lr 3e-4 wrecked
the model). The head has no BatchNorm and takes the weight and bias directly. The BatchNorm
layers are frozen during fine-tuning (eval mode, scale and shift not trained): their
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
from freespace_seg.perception import metrics
from freespace_seg.perception.model_card import load_card, ModelCardError
from freespace_seg.perception.pipeline import packaged_model_path
from freespace_seg.training import augment as augment_mod
from freespace_seg.training import data as datasets
from freespace_seg.training import loop
from freespace_seg.training import tensors
from freespace_seg.training.backbone import LiteUNet, VARIANTS
from freespace_seg.training.data import letterbox_pair
from freespace_seg.training.evaluate import dump_card
from freespace_seg.training.export import compare_with_torch, export_and_verify
from freespace_seg.training.model import count_parameters, FreespaceUNet
import numpy as np
import torch
from torch import nn

DEFAULT_OUT = os.path.join('models', 'freespace_unet_finetuned.onnx')
# Largest ONNX Runtime vs rebuilt-torch logit difference accepted before training.
REBUILD_TOLERANCE = 1e-3


class FinetuneError(ValueError):
    """Unusable input (images, masks, base model); the message says what to fix."""


# ---------------------------------------------------------------------------------------------
# The user's images


def find_pairs(folder):
    """Sorted (image_path, mask_path) pairs of a folder; raise :class:`FinetuneError`."""
    try:
        return datasets.user_image_pairs(folder)
    except datasets.UserImagesError as e:
        raise FinetuneError(str(e)) from None


def read_user_pair(image_path, mask_path):
    """Read an RGB image and its mask as (H, W, 3) uint8 and (H, W) uint8 0 blocked / 1 free."""
    try:
        return datasets.read_user_image_pair(image_path, mask_path)
    except datasets.UserImagesError as e:
        raise FinetuneError(str(e)) from None


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
# ONNX -> torch


class _FrozenBatchNorm:
    """Mixin: the model's BatchNorm layers stay in eval mode in ``train()``."""

    def train(self, mode=True):
        """Set train mode except for BatchNorm (its statistics are folded into the convs)."""
        super().train(mode)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        return self


class FrozenBatchNormUNet(_FrozenBatchNorm, FreespaceUNet):
    """:class:`FreespaceUNet` whose BatchNorm layers stay in eval mode in ``train()``."""


class FrozenBatchNormLiteUNet(_FrozenBatchNorm, LiteUNet):
    """:class:`~freespace_seg.training.backbone.LiteUNet` with BatchNorm kept in eval mode."""


def freeze_batchnorm(model):
    """Stop training every BatchNorm (statistics, scale and shift); return ``model``."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eval()
            for p in m.parameters():
                p.requires_grad_(False)
    return model


def onnx_module_path(node_name):
    """
    Return the torch module path a node name refers to, e.g. ``enc2.0.0`` or ``dec4.conv.0.0``.

    The exporter names nodes by their scopes, ``/enc2/enc2.0/enc2.0.0/Conv`` or
    ``/dec4/conv/conv.0/conv.0.0/Conv``: a scope that extends the one before it adds its
    suffix, any other adds itself. Returns None for a name without scopes.
    """
    scopes = [p for p in (node_name or '').split('/') if p][:-1]
    if not scopes:
        return None
    path = prev = scopes[0]
    for scope in scopes[1:]:
        path += scope[len(prev):] if scope.startswith(prev + '.') else '.' + scope
        prev = scope
    return path


def _onnx_convs(proto):
    """(node, weight, bias or None) of every Conv in graph order; raise if one is odd."""
    from onnx import numpy_helper

    inits = {t.name: t for t in proto.graph.initializer}
    convs = []
    for node in proto.graph.node:
        if node.op_type in ('QuantizeLinear', 'DequantizeLinear', 'QLinearConv'):
            raise FinetuneError('the base model is quantized; fine-tune the float model it '
                                'was made from')
        if node.op_type != 'Conv':
            continue
        if node.input[1] not in inits or (len(node.input) > 2 and node.input[2]
                                          and node.input[2] not in inits):
            raise FinetuneError(f'ONNX Conv {node.name!r}: weights are not initializers')
        weight = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)
        bias = None
        if len(node.input) > 2 and node.input[2]:
            bias = numpy_helper.to_array(inits[node.input[2]]).astype(np.float32)
        convs.append((node, weight, bias))
    return convs


def _check_attributes(node, conv, name):
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    want = {'strides': list(conv.stride), 'dilations': list(conv.dilation),
            'group': conv.groups, 'pads': list(conv.padding) * 2}
    for key, value in want.items():
        if key in attrs and list(np.atleast_1d(attrs[key])) != list(np.atleast_1d(value)):
            raise FinetuneError(f'ONNX Conv {node.name!r} has {key} {attrs[key]} but torch '
                                f'{name} has {value}: not the UNet of this package')


def _unet_shell(proto, convs, onnx_path):
    """Return the :class:`FrozenBatchNormUNet` whose shape the ONNX convolutions describe."""
    strided = []
    for node, weight, _ in convs:
        strides = [a for a in node.attribute if a.name == 'strides']
        if strides and list(strides[0].ints) == [2, 2]:
            strided.append(weight.shape[0])
    if len(strided) != 5:
        raise FinetuneError(f'{onnx_path}: expected the 4-level UNet of this package (5 '
                            f'stride-2 convolutions), found {len(strided)}')
    num_classes = convs[-1][1].shape[0]
    context = any(n.op_type == 'GlobalAveragePool' for n in proto.graph.node)
    hidden = [w.shape[0] for n, w, _ in convs if onnx_module_path(n.name) == 'context.fc1']
    context = hidden[0] if context and hidden else context
    return FrozenBatchNormUNet(num_classes=num_classes, widths=tuple(strided), context=context)


def _lite_shell(convs, onnx_path):
    """Return the :class:`FrozenBatchNormLiteUNet` whose convolutions match the model's."""
    names = {onnx_module_path(n.name): w for n, w, _ in convs}
    num_classes = convs[-1][1].shape[0]
    decoder = tuple(int(names[f'ups.{i}.0'].shape[0]) for i in range(4) if f'ups.{i}.0' in names)
    for variant in VARIANTS:
        model = FrozenBatchNormLiteUNet(variant, num_classes=num_classes, decoder=decoder,
                                        pretrained=False)
        torch_names = {n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)}
        if torch_names == set(names):
            return model
    raise FinetuneError(f'{onnx_path}: an EfficientNet-Lite encoder, but its {len(convs)} '
                        'convolutions match none of ' + ', '.join(VARIANTS))


def rebuild_torch_model(onnx_path):
    """
    Rebuild the torch UNet (BatchNorm folded, see the module docstring) from an ONNX file.

    The widths are read from the weights (output channels of the five stride-2 convolutions),
    the class count from the last one; a GlobalAveragePool means the global-context branch
    (``train --context``). Returns a :class:`FrozenBatchNormUNet` in eval mode, or for a model
    with an EfficientNet-Lite encoder (``train --arch efficientnet-liteN``; its node names
    start with ``/encoder``) a :class:`FrozenBatchNormLiteUNet`.
    """
    import onnx

    try:
        proto = onnx.load(onnx_path)
    except Exception as e:  # onnx raises several types for bad files
        raise FinetuneError(f'cannot load ONNX model {onnx_path}: {e}') from e
    convs = _onnx_convs(proto)
    if not convs:
        raise FinetuneError(f'{onnx_path}: no convolutions: not a model of this package')
    if any((onnx_module_path(n.name) or '').startswith('encoder.') for n, _, _ in convs):
        model = _lite_shell(convs, onnx_path)
    else:
        model = _unet_shell(proto, convs, onnx_path)

    modules = list(model.named_modules())
    torch_convs = {}
    for i, (name, m) in enumerate(modules):
        if isinstance(m, nn.Conv2d):
            bn = modules[i + 1][1] if i + 1 < len(modules) else None
            if not (isinstance(bn, nn.BatchNorm2d) and bn.num_features == m.out_channels):
                bn = None
            torch_convs[name] = (m, bn)
    if len(convs) != len(torch_convs):
        raise FinetuneError(f'{onnx_path}: {len(convs)} convolutions, the UNet has '
                            f'{len(torch_convs)}')
    names = [onnx_module_path(node.name) for node, _, _ in convs]
    if sorted(n or '' for n in names) != sorted(torch_convs):
        names = list(torch_convs)  # names stripped: fall back to the order of the graph

    with torch.no_grad():
        for name, (node, weight, bias) in zip(names, convs):
            conv, bn = torch_convs[name]
            if tuple(conv.weight.shape) != weight.shape:
                raise FinetuneError(f'ONNX Conv {node.name!r} weight {weight.shape} does not fit '
                                    f'torch {name} {tuple(conv.weight.shape)}')
            _check_attributes(node, conv, name)
            bias_t = torch.zeros(conv.out_channels) if bias is None else torch.from_numpy(bias)
            if bn is not None:
                # Unit-RMS kernels, the scale in the BatchNorm: Adam's steps stay small
                # relative to the kernels however small the folded weights are.
                w = torch.from_numpy(weight)
                scale = w.pow(2).mean(dim=(1, 2, 3)).sqrt()
                scale = torch.where(scale > 0, scale, torch.ones_like(scale))
                conv.weight.copy_(w / scale.view(-1, 1, 1, 1))
                bn.weight.copy_(scale)
                bn.running_mean.zero_()
                bn.running_var.fill_(1.0 - bn.eps)  # normalization is the identity
                bn.bias.copy_(bias_t)
                if conv.bias is not None:
                    conv.bias.zero_()
                continue
            conv.weight.copy_(torch.from_numpy(weight))
            if conv.bias is not None:
                conv.bias.copy_(bias_t)
            elif bias is not None and np.any(bias):
                raise FinetuneError(f'ONNX Conv {node.name!r} has a bias but torch {name} '
                                    'has neither a bias nor a BatchNorm')
    return model.eval()


@torch.no_grad()
def unfold_batchnorm(model, inputs, batch_size=16):
    """
    Give the folded BatchNorm layers of a rebuilt model real statistics; return ``model``.

    :func:`rebuild_torch_model` leaves each BatchNorm an identity normalization (running mean
    0, variance 1 - eps) with the folded scale and shift. That is exact in eval mode, but a
    BatchNorm that trains normalizes by the batch's statistics, which are nothing like 0 and
    1, so plain training from such a model starts from a broken network. This measures the
    per-channel mean and variance of every BatchNorm's input on ``inputs`` (normalized
    (N, 3, H, W) float frames) and sets running mean mu, running variance var, scale
    gamma * sqrt(var + eps) and shift beta + gamma * mu: the eval-mode output is unchanged
    (up to float rounding) and a training batch drawn like ``inputs`` normalizes to about
    what the model computed. One pass suffices, because no layer's output changes.
    """
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return model
    if inputs.shape[0] == 0:
        raise FinetuneError('unfold_batchnorm: no frames to measure BatchNorm statistics on')
    stats = {id(m): [0.0, 0.0, 0] for m in bns}

    def record(module, args):
        z = args[0].detach().double().transpose(0, 1).reshape(module.num_features, -1)
        entry = stats[id(module)]
        entry[0] = entry[0] + z.sum(dim=1)
        entry[1] = entry[1] + (z * z).sum(dim=1)
        entry[2] += z.shape[1]

    hooks = [m.register_forward_pre_hook(record) for m in bns]
    was_training = model.training
    model.eval()
    try:
        for i in range(0, inputs.shape[0], batch_size):
            model(inputs[i:i + batch_size])
    finally:
        for h in hooks:
            h.remove()
    for m in bns:
        s1, s2, n = stats[id(m)]
        mean = s1 / n
        var = (s2 / n - mean * mean).clamp(min=0.0)
        # The current normalization divides by sqrt(running_var + eps); fold it in exactly.
        old = (m.running_var.double() + m.eps).sqrt()
        gamma = m.weight.double() / old
        beta = m.bias.double() - gamma * m.running_mean.double()
        m.running_mean.copy_(mean)
        m.running_var.copy_(var)
        m.weight.copy_(gamma * (var + m.eps).sqrt())
        m.bias.copy_(beta + gamma * mean)
    model.train(was_training)
    return model


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


def _r4(x):
    return None if x is None else round(float(x), 4)


def _rounded(summary):
    return {'miou': _r4(summary['miou']),
            'iou': {k: _r4(v) for k, v in summary['iou'].items()},
            'pixel_accuracy': _r4(summary['pixel_accuracy'])}


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
    opt('--log-every', type=int, default=50, help='default: %(default)s')


def reproduce_command(args):
    """Return the command line of this run with every option spelled out."""
    return OPTIONS.command_line(
        args, skip=lambda dest, value: dest == 'model' and value == packaged_model_path())


def _display_path(path):
    rel = os.path.relpath(os.path.abspath(path))
    return os.path.abspath(path) if rel.startswith('..') else rel


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


def card_input_size(card, model_path):
    """Width and height of the network input; raise if the card does not match ``train``."""
    raw = card.raw['input']
    same = (card.layout == 'NCHW' and card.color_order == 'RGB'
            and list(card.mean) == tensors.MEAN and list(card.std) == tensors.STD
            and card.resize_mode == 'letterbox' and raw.get('dtype', 'float32') == 'float32')
    if not same or card.output_kind != 'logits':
        raise FinetuneError(f'{model_path}: its card does not describe a model made by '
                            '`python -m freespace_seg train` (NCHW float32 RGB, mean/std 0.5, '
                            'letterbox, logits)')
    return card.input_width, card.input_height


def rebuild_checked(model_path, seed=0, threads=2):
    """
    Load the card and rebuild the torch UNet of ``model_path``, checked against ONNX Runtime.

    The rebuilt model's logits on a random input (``seed``) must match ONNX Runtime's within
    :data:`REBUILD_TOLERANCE`. Returns ``(model, card, width, height, max |logit diff|)``;
    raises :class:`FinetuneError` for a bad card or a model that is not this package's UNet.
    """
    try:
        card = load_card(model_path)
    except ModelCardError as e:
        raise FinetuneError(str(e)) from e
    width, height = card_input_size(card, model_path)
    model = rebuild_torch_model(model_path)
    probe = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(1, 3, height, width))
    diff = compare_with_torch(model, model_path, inputs=probe.astype(np.float32),
                              threads=threads)
    if not diff <= REBUILD_TOLERANCE:
        raise FinetuneError(f'rebuilt torch model differs from {model_path} by {diff:.3g}'
                            f' (> {REBUILD_TOLERANCE:g}): not the UNet of this package?')
    return model, card, width, height, diff


def finetune(args):
    """Run the fine-tuning described by parsed ``args``; return the card dict."""
    t_begin = time.perf_counter()
    _check_args(args)
    torch.set_num_threads(args.threads)
    loop.seed_everything(args.seed)
    command = reproduce_command(args)
    print(f'finetune: {command}', flush=True)

    pairs = find_pairs(args.images)
    frames = {pair: read_user_pair(*pair) for pair in pairs}
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
    train_x, train_y = tensors.to_tensors(np.stack([b[0] for b in boxed]),
                                          np.stack([b[1] for b in boxed]))
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
    images_dir = _display_path(args.images)
    training = {
        'method': 'fine-tune of the base model on user images (python -m freespace_seg '
                  'finetune); BatchNorm frozen (folded into the convolutions)',
        'base_model': {
            'path': _display_path(args.model),
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
            f'{len(train_pairs)} user images with masks from {images_dir} (fine-tuning)'],
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
            'miou_before': _r4(before['miou']),
            'miou_after': _r4(after['miou']),
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
    except FinetuneError as e:
        print(f'finetune: error: {e}', file=sys.stderr, flush=True)
        return 2
    return 0
