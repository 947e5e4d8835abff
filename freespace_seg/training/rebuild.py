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
Rebuild the torch UNet of an ONNX model of this package, checked against ONNX Runtime.

``finetune``, ``prune``, ``tradeoff`` and ``train --init MODEL.onnx`` start from it.

The exporter folds every BatchNorm into the convolution before it (the graph holds only
Conv + ReLU, each Conv named after its torch module, e.g. ``/enc2/enc2.0/enc2.0.0/Conv`` for
``enc2.0.0``). Each ONNX Conv is mapped by that name to its ``nn.Conv2d``. The BatchNorm
after it is made an exact identity normalization (running mean 0, running variance 1 - eps)
whose scale and shift hold the folded per-channel RMS of the kernel and the folded bias
(those convolutions have no bias of their own); the kernel itself is stored with unit RMS,
so that Adam's fixed-size steps stay small relative to it (with the raw folded kernels, mean
|w| ~0.01 in the deep layers, a short fine-tune at lr 3e-4 wrecked the model). The head has
no BatchNorm and takes the weight and bias directly. The BatchNorm layers are frozen during
fine-tuning (eval mode, scale and shift not trained): their statistics are already folded
into the weights, and re-estimating them from a few images would undo that.
:func:`unfold_batchnorm` instead gives them real statistics, for training with live
BatchNorm (``train --init``).

Every failure raises :class:`~freespace_seg.training.errors.RebuildError`.
"""

from freespace_seg.perception.model_card import load_card, ModelCardError
from freespace_seg.training import tensors
from freespace_seg.training.backbone import LiteUNet, VARIANTS
from freespace_seg.training.errors import RebuildError
from freespace_seg.training.export import compare_with_torch
from freespace_seg.training.model import FreespaceUNet
import numpy as np
import torch
from torch import nn

# Largest ONNX Runtime vs rebuilt-torch logit difference accepted.
REBUILD_TOLERANCE = 1e-3


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
            raise RebuildError('the base model is quantized; fine-tune the float model it '
                               'was made from')
        if node.op_type != 'Conv':
            continue
        if node.input[1] not in inits or (len(node.input) > 2 and node.input[2]
                                          and node.input[2] not in inits):
            raise RebuildError(f'ONNX Conv {node.name!r}: weights are not initializers')
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
            raise RebuildError(f'ONNX Conv {node.name!r} has {key} {attrs[key]} but torch '
                               f'{name} has {value}: not the UNet of this package')


def _unet_shell(proto, convs, onnx_path):
    """Return the :class:`FrozenBatchNormUNet` whose shape the ONNX convolutions describe."""
    strided = []
    for node, weight, _ in convs:
        strides = [a for a in node.attribute if a.name == 'strides']
        if strides and list(strides[0].ints) == [2, 2]:
            strided.append(weight.shape[0])
    if len(strided) != 5:
        raise RebuildError(f'{onnx_path}: expected the 4-level UNet of this package (5 '
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
    raise RebuildError(f'{onnx_path}: an EfficientNet-Lite encoder, but its {len(convs)} '
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
        raise RebuildError(f'cannot load ONNX model {onnx_path}: {e}') from e
    convs = _onnx_convs(proto)
    if not convs:
        raise RebuildError(f'{onnx_path}: no convolutions: not a model of this package')
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
        raise RebuildError(f'{onnx_path}: {len(convs)} convolutions, the UNet has '
                           f'{len(torch_convs)}')
    names = [onnx_module_path(node.name) for node, _, _ in convs]
    if sorted(n or '' for n in names) != sorted(torch_convs):
        names = list(torch_convs)  # names stripped: fall back to the order of the graph

    with torch.no_grad():
        for name, (node, weight, bias) in zip(names, convs):
            conv, bn = torch_convs[name]
            if tuple(conv.weight.shape) != weight.shape:
                raise RebuildError(f'ONNX Conv {node.name!r} weight {weight.shape} does not fit '
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
                raise RebuildError(f'ONNX Conv {node.name!r} has a bias but torch {name} '
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
        raise RebuildError('unfold_batchnorm: no frames to measure BatchNorm statistics on')
    stats = {id(m): [0.0, 0.0, 0] for m in bns}

    def record(module, args):
        # Per-channel sums accumulated in float64, without a float64 copy of the activations
        # (the copies made the Lite0 rebuild on 256 frames at 480x272 take 87 s against 71).
        z = args[0].detach()
        entry = stats[id(module)]
        entry[0] = entry[0] + z.sum(dim=(0, 2, 3), dtype=torch.float64)
        entry[1] = entry[1] + z.square().sum(dim=(0, 2, 3), dtype=torch.float64)
        entry[2] += z.numel() // module.num_features

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


def card_input_size(card, model_path):
    """Width and height of the network input; raise if the card does not match ``train``."""
    raw = card.raw['input']
    same = (card.layout == 'NCHW' and card.color_order == 'RGB'
            and list(card.mean) == tensors.MEAN and list(card.std) == tensors.STD
            and card.resize_mode == 'letterbox' and raw.get('dtype', 'float32') == 'float32')
    if not same or card.output_kind != 'logits':
        raise RebuildError(f'{model_path}: its card does not describe a model made by '
                           '`python -m freespace_seg train` (NCHW float32 RGB, mean/std 0.5, '
                           'letterbox, logits)')
    return card.input_width, card.input_height


def rebuild_checked(model_path, seed=0, threads=2):
    """
    Load the card and rebuild the torch UNet of ``model_path``, checked against ONNX Runtime.

    The rebuilt model's logits on a random input (``seed``) must match ONNX Runtime's within
    :data:`REBUILD_TOLERANCE`. Returns ``(model, card, width, height, max |logit diff|)``;
    raises :class:`RebuildError` for a bad card or a model that is not this package's UNet.
    """
    try:
        card = load_card(model_path)
    except ModelCardError as e:
        raise RebuildError(str(e)) from e
    width, height = card_input_size(card, model_path)
    model = rebuild_torch_model(model_path)
    probe = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(1, 3, height, width))
    diff = compare_with_torch(model, model_path, inputs=probe.astype(np.float32),
                              threads=threads)
    if not diff <= REBUILD_TOLERANCE:
        raise RebuildError(f'rebuilt torch model differs from {model_path} by {diff:.3g}'
                           f' (> {REBUILD_TOLERANCE:g}): not the UNet of this package?')
    return model, card, width, height, diff
