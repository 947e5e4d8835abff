"""
A small UNet for two-class free-space segmentation (torch).

Layout (for the default 1x3x272x480 input)::

    stem   3x3 conv stride 2              -> 1/2   (16 ch)
    enc1   3x3 conv                         1/2   (16)
    enc2   2x [3x3 conv], first stride 2  -> 1/4   (24)
    enc3                                  -> 1/8   (48)
    enc4                                  -> 1/16  (96)
    bottom                                -> 1/32  (128)
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
"""

import torch
from torch import nn
import torch.nn.functional as F

DEFAULT_WIDTHS = (16, 24, 48, 96, 128)
#: the conv + BatchNorm + ReLU blocks of the UNet, in the order of the forward pass
BLOCKS = ('stem', 'enc1', 'enc2.0', 'enc2.1', 'enc3.0', 'enc3.1', 'enc4.0', 'enc4.1',
          'bottom.0', 'bottom.1', 'dec4.conv.0', 'dec4.conv.1', 'dec3.conv.0', 'dec3.conv.1',
          'dec2.conv.0', 'dec2.conv.1', 'dec1.conv.0', 'dec1.conv.1')


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


class FreespaceUNet(nn.Module):
    """
    Four-level UNet; ``widths`` are the channels at 1/2, 1/4, 1/8, 1/16 and 1/32.

    ``channels`` ({block name: output channels}, see :func:`default_channels`) overrides
    single blocks; ``self.channels`` holds the output channels of every block.
    """

    def __init__(self, num_classes=2, widths=DEFAULT_WIDTHS, channels=None):
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
        self.dec4 = _Up(c['bottom.1'], c['enc4.1'], c['dec4.conv.1'], c['dec4.conv.0'])
        self.dec3 = _Up(c['dec4.conv.1'], c['enc3.1'], c['dec3.conv.1'], c['dec3.conv.0'])
        self.dec2 = _Up(c['dec3.conv.1'], c['enc2.1'], c['dec2.conv.1'], c['dec2.conv.0'])
        self.dec1 = _Up(c['dec2.conv.1'], c['enc1'], c['dec1.conv.1'], c['dec1.conv.0'])
        self.head = nn.Conv2d(c['dec1.conv.1'], self.num_classes, 1)
        self._init_weights()

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
        y = self.dec4(y, s4)
        y = self.dec3(y, s3)
        y = self.dec2(y, s2)
        y = self.dec1(y, s1)
        y = self.head(y)
        return F.interpolate(y, size=x.shape[2:], mode='bilinear', align_corners=False)


def build_model(num_classes=2, widths=DEFAULT_WIDTHS, channels=None):
    """Make a freshly initialised :class:`FreespaceUNet`."""
    return FreespaceUNet(num_classes=num_classes, widths=widths, channels=channels)


def count_parameters(model):
    """Return the number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
