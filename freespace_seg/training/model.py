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
A small UNet for two-class free-space segmentation (torch).

Layout (for the default 1x3x272x480 input)::

    stem   3x3 conv stride 2              -> 1/2   (16 ch)
    enc1   3x3 conv                         1/2   (16)
    enc2   2x [3x3 conv], first stride 2  -> 1/4   (24)
    enc3                                  -> 1/8   (48)
    enc4                                  -> 1/16  (96)
    bottom                                -> 1/32  (128)
    context (optional) global average -> 1x1 conv -> ReLU -> 1x1 conv, added back  1/32
    dec4..dec1: bilinear x2, concat skip, 2x [3x3 conv]   back to 1/2
    head   1x1 conv -> 2 logits at 1/2, bilinear x2 to the input size

Every conv is followed by BatchNorm and ReLU. Upsampling goes to the skip's exact size, so
any input size works (it need not be a multiple of 32) and the export has static shapes.
The head works at half resolution and the logits are bilinearly upsampled: on two CPU
cores this halves the latency of a full-resolution head for the same accuracy.

``channels`` overrides the output channels of single convolutions, by the name of their
conv + BatchNorm + ReLU block (``stem``, ``enc1``, ``enc2.0``, ``enc2.1``, ...,
``bottom.1``, ``dec4.conv.0``, ..., ``dec1.conv.1``; see :func:`default_channels`): a
channel-pruned UNet (``python -m freespace_seg prune``). Every consumer of a block (the next
block, the skip concatenation into the decoder, the head) takes its input width from it.

``context=True`` adds a global-context branch at the bottleneck (as in ParseNet): the
bottom features are averaged over the whole image, passed through a small two-layer 1x1
MLP and added to every position. A 3x3 convolution at 1/32 sees about 200 input pixels;
the branch lets every pixel's decision depend on the whole frame (is there any floor in
view at all?), the cue missing when a wall or a box face fills the view. Its last layer
starts at zero, so a model without the branch loads into one with it unchanged
(:func:`load_weights`). It exports as GlobalAveragePool, two Conv, Relu and Add.
"""

import torch
from torch import nn
import torch.nn.functional as F

DEFAULT_WIDTHS = (16, 24, 48, 96, 128)
#: the conv + BatchNorm + ReLU blocks of the UNet, in the order of the forward pass
BLOCKS = ('stem', 'enc1', 'enc2.0', 'enc2.1', 'enc3.0', 'enc3.1', 'enc4.0', 'enc4.1',
          'bottom.0', 'bottom.1', 'dec4.conv.0', 'dec4.conv.1', 'dec3.conv.0', 'dec3.conv.1',
          'dec2.conv.0', 'dec2.conv.1', 'dec1.conv.0', 'dec1.conv.1')

#: where each conv + BatchNorm + ReLU block (and the head) takes its input from, in order
#: (a decoder's first conv reads the upsampled block, then the skip)
INPUTS = {
    'stem': (),
    'enc1': ('stem',),
    'enc2.0': ('enc1',), 'enc2.1': ('enc2.0',),
    'enc3.0': ('enc2.1',), 'enc3.1': ('enc3.0',),
    'enc4.0': ('enc3.1',), 'enc4.1': ('enc4.0',),
    'bottom.0': ('enc4.1',), 'bottom.1': ('bottom.0',),
    'dec4.conv.0': ('bottom.1', 'enc4.1'), 'dec4.conv.1': ('dec4.conv.0',),
    'dec3.conv.0': ('dec4.conv.1', 'enc3.1'), 'dec3.conv.1': ('dec3.conv.0',),
    'dec2.conv.0': ('dec3.conv.1', 'enc2.1'), 'dec2.conv.1': ('dec2.conv.0',),
    'dec1.conv.0': ('dec2.conv.1', 'enc1'), 'dec1.conv.1': ('dec1.conv.0',),
    'head': ('dec1.conv.1',),
}


def default_channels(widths=DEFAULT_WIDTHS):
    """Return {block name: output channels} of the UNet with the five level ``widths``."""
    w = [int(c) for c in widths]
    channels = {'stem': w[0], 'enc1': w[0]}
    for name, c in zip(('enc2', 'enc3', 'enc4', 'bottom'), w[1:]):
        channels[f'{name}.0'] = channels[f'{name}.1'] = c
    for name, c in zip(('dec4', 'dec3', 'dec2', 'dec1'), w[3::-1]):
        channels[f'{name}.conv.0'] = channels[f'{name}.conv.1'] = c
    return channels


def conv_bn_relu(cin, cout, stride=1):
    """3x3 convolution (no bias), BatchNorm, ReLU."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True))


class _Down(nn.Sequential):
    """Stride-2 conv then conv: half the resolution (``mid`` channels in between)."""

    def __init__(self, cin, cout, mid=None):
        mid = cout if mid is None else mid
        super().__init__(conv_bn_relu(cin, mid, stride=2), conv_bn_relu(mid, cout))


class _Up(nn.Module):
    """Bilinear upsampling to the skip's size, concatenation, two convs."""

    def __init__(self, cin, cskip, cout, mid=None):
        super().__init__()
        mid = cout if mid is None else mid
        self.conv = nn.Sequential(conv_bn_relu(cin + cskip, mid), conv_bn_relu(mid, cout))

    def forward(self, x, skip):
        x = F.interpolate(x, size=skip.shape[2:], mode='bilinear', align_corners=False)
        return self.conv(torch.cat([x, skip], dim=1))


class _Context(nn.Module):
    """Global average pool, 1x1 conv, ReLU, 1x1 conv (zero-initialised), added to the input."""

    def __init__(self, channels, hidden=None):
        super().__init__()
        hidden = max(1, channels // 2) if hidden is None else int(hidden)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)

    def zero_(self):
        """Make the branch add nothing (its output layer all zeros)."""
        nn.init.zeros_(self.fc2.weight)
        nn.init.zeros_(self.fc2.bias)
        return self

    def forward(self, x):
        """Return ``x`` plus the global term, broadcast over every position."""
        return x + self.fc2(F.relu(self.fc1(self.pool(x))))


class FreespaceUNet(nn.Module):
    """
    Four-level UNet; ``widths`` are the channels at 1/2, 1/4, 1/8, 1/16 and 1/32.

    ``context``: False, True (the global-context branch, hidden width half the bottom's) or
    the branch's hidden width.

    ``channels`` ({block name: output channels}, see :func:`default_channels`) overrides
    single blocks; ``self.channels`` holds the output channels of every block.
    """

    def __init__(self, num_classes=2, widths=DEFAULT_WIDTHS, channels=None, context=False):
        super().__init__()
        if len(widths) != 5:
            raise ValueError(f'widths must have 5 entries, got {widths!r}')
        c = default_channels(widths)
        unknown = sorted(set(channels or {}) - set(c))
        if unknown:
            raise ValueError(f'channels: unknown blocks {unknown}; expected some of {BLOCKS}')
        c.update({k: int(v) for k, v in (channels or {}).items()})
        if min(c.values()) <= 0:
            raise ValueError(f'channels must be positive, got {c!r}')
        self.channels = c
        self.widths = (c['enc1'], c['enc2.1'], c['enc3.1'], c['enc4.1'], c['bottom.1'])
        self.num_classes = int(num_classes)
        self.stem = conv_bn_relu(3, c['stem'], stride=2)
        self.enc1 = conv_bn_relu(c['stem'], c['enc1'])
        self.enc2 = _Down(c['enc1'], c['enc2.1'], c['enc2.0'])
        self.enc3 = _Down(c['enc2.1'], c['enc3.1'], c['enc3.0'])
        self.enc4 = _Down(c['enc3.1'], c['enc4.1'], c['enc4.0'])
        self.bottom = _Down(c['enc4.1'], c['bottom.1'], c['bottom.0'])
        # Before the decoder, so that the modules are in the order of the exported graph.
        self.context = None
        if context:
            self.context = _Context(c['bottom.1'], None if context is True else int(context))
        self.dec4 = _Up(c['bottom.1'], c['enc4.1'], c['dec4.conv.1'], c['dec4.conv.0'])
        self.dec3 = _Up(c['dec4.conv.1'], c['enc3.1'], c['dec3.conv.1'], c['dec3.conv.0'])
        self.dec2 = _Up(c['dec3.conv.1'], c['enc2.1'], c['dec2.conv.1'], c['dec2.conv.0'])
        self.dec1 = _Up(c['dec2.conv.1'], c['enc1'], c['dec1.conv.1'], c['dec1.conv.0'])
        self.head = nn.Conv2d(c['dec1.conv.1'], self.num_classes, 1)
        self._init_weights()
        if self.context is not None:
            self.context.zero_()

    def _init_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        """Return raw logits (N, num_classes, H, W) for a normalized (N, 3, H, W) input."""
        s1 = self.enc1(self.stem(x))
        s2 = self.enc2(s1)
        s3 = self.enc3(s2)
        s4 = self.enc4(s3)
        y = self.bottom(s4)
        if self.context is not None:
            y = self.context(y)
        y = self.dec4(y, s4)
        y = self.dec3(y, s3)
        y = self.dec2(y, s2)
        y = self.dec1(y, s1)
        y = self.head(y)
        return F.interpolate(y, size=x.shape[2:], mode='bilinear', align_corners=False)


#: the networks ``train --arch`` builds
ARCHS = ('unet', 'efficientnet-lite0', 'efficientnet-lite1', 'efficientnet-lite2')


def build_model(num_classes=2, widths=DEFAULT_WIDTHS, channels=None, context=False,
                arch='unet', pretrained=True, decoder=None):
    """
    Make a freshly initialised network.

    That is the :class:`FreespaceUNet`, or for an ``efficientnet-liteN`` ``arch`` a
    :class:`~freespace_seg.training.backbone.LiteUNet` whose encoder holds the ImageNet weights
    (``pretrained``) or random ones, and whose decoder has the widths ``decoder`` (1/16 to
    1/2; default :data:`~freespace_seg.training.backbone.DECODER_WIDTHS`).
    """
    if arch == 'unet':
        return FreespaceUNet(num_classes=num_classes, widths=widths, channels=channels,
                             context=context)
    if arch not in ARCHS:
        raise ValueError(f'unknown arch {arch!r}; expected one of {", ".join(ARCHS)}')
    from freespace_seg.training.backbone import DECODER_WIDTHS, LiteUNet
    return LiteUNet(arch.replace('efficientnet-', ''), num_classes=num_classes,
                    decoder=tuple(decoder or DECODER_WIDTHS), pretrained=pretrained)


def load_weights(model, state):
    """
    Load a state dict into ``model``; return the names of the parameters it did not hold.

    A checkpoint without the context branch loads into a model with one: the branch keeps
    its zero start, so the model computes what the checkpoint did. Anything else missing or
    unexpected (other widths, a checkpoint with a branch into a model without) is an error.
    """
    try:
        old = checkpoint_channels(state)
    except ValueError:
        old = None   # not a UNet state dict at all: torch names what is wrong
    if old is not None and old != model.channels:
        differ = [f'{b} {old[b]} vs {model.channels[b]}' for b in BLOCKS
                  if old[b] != model.channels[b]]
        wider = all(old[b] <= model.channels[b] for b in BLOCKS)
        raise ValueError(
            f"checkpoint channels differ from the model's in {len(differ)} blocks ("
            + ', '.join(differ[:3]) + (', ...' if len(differ) > 3 else '') + ')'
            + ('; the model is wider everywhere, so the checkpoint can be widened '
               '(train --widen)' if wider else ''))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ValueError(f'checkpoint has parameters the model lacks: {sorted(unexpected)[:4]} '
                         '(trained with the context branch? add --context)')
    other = [k for k in missing if not k.startswith('context.')]
    if other:
        raise ValueError(f'checkpoint lacks parameters of the model: {sorted(other)[:4]}')
    return list(missing)


def checkpoint_channels(state):
    """Return {block name: output channels} of a UNet checkpoint (a state dict)."""
    try:
        return {b: int(state[f'{b}.0.weight'].shape[0]) for b in BLOCKS}
    except KeyError as e:
        raise ValueError(f'not a FreespaceUNet checkpoint: no {e.args[0]}') from None


def widen_weights(model, state):
    """
    Load the checkpoint of a narrower UNet into ``model`` (Net2Net-style widening).

    Every old channel keeps its weights. The weights by which old channels read the new ones
    start at zero, so the widened model computes exactly what the checkpoint did; the new
    channels keep ``model``'s fresh initialisation and start to matter as training moves those
    zeros. A checkpoint without the context branch leaves the branch at zero, as in
    :func:`load_weights`. Returns {block: (old, new) channels} of the widened blocks; a
    checkpoint wider than ``model`` anywhere is a ValueError (see ``prune`` for the reverse).
    """
    old = checkpoint_channels(state)
    new = model.channels
    wider = sorted(b for b in BLOCKS if old[b] > new[b])
    if wider:
        raise ValueError('checkpoint is wider than the model at '
                         + ', '.join(f'{b} ({old[b]} > {new[b]})' for b in wider))
    has_branch = any(k.startswith('context.') for k in state)
    if has_branch and model.context is None:
        raise ValueError('checkpoint has the context branch, the model does not (add --context)')
    if state['head.weight'].shape[0] != model.num_classes:
        raise ValueError(f'checkpoint has {state["head.weight"].shape[0]} classes, '
                         f'the model {model.num_classes}')
    target = {k: v.clone() for k, v in model.state_dict().items()}

    def in_map(block):
        """Old input column ranges -> new ones: [(old_start, new_start, count)]."""
        if not INPUTS[block]:
            return [(0, 0, 3)]   # the stem reads the RGB image
        ranges, at_old, at_new = [], 0, 0
        for src in INPUTS[block]:
            ranges.append((at_old, at_new, old[src]))
            at_old, at_new = at_old + old[src], at_new + new[src]
        return ranges

    def put_conv(key, columns, old_rows):
        """Old output rows: the old weights at their new input columns, zero elsewhere."""
        w, o = target[key], state[key]
        w[:old_rows] = 0
        for a, b, n in columns:
            w[:old_rows, b:b + n] = o[:, a:a + n]

    for block in BLOCKS + ('head',):
        rows = model.num_classes if block == 'head' else old[block]
        key = 'head.weight' if block == 'head' else f'{block}.0.weight'
        put_conv(key, in_map(block), rows)
        if block == 'head':
            target['head.bias'] = state['head.bias'].clone()
            continue
        for name in ('weight', 'bias', 'running_mean', 'running_var'):
            target[f'{block}.1.{name}'][:rows] = state[f'{block}.1.{name}']
        target[f'{block}.1.num_batches_tracked'] = state[f'{block}.1.num_batches_tracked'].clone()
    if has_branch:
        hidden = int(state['context.fc1.weight'].shape[0])
        if hidden > model.context.fc1.weight.shape[0]:
            raise ValueError(f'checkpoint context branch is wider ({hidden} hidden channels)')
        bottom = old['bottom.1']
        put_conv('context.fc1.weight', [(0, 0, bottom)], hidden)
        target['context.fc1.bias'][:hidden] = state['context.fc1.bias']
        put_conv('context.fc2.weight', [(0, 0, hidden)], bottom)
        target['context.fc2.bias'][:bottom] = state['context.fc2.bias']
    model.load_state_dict(target)
    return {b: (old[b], new[b]) for b in BLOCKS if old[b] != new[b]}


def count_parameters(model):
    """Return the number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
