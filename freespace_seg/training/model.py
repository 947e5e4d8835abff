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
"""

import torch
from torch import nn
import torch.nn.functional as F

DEFAULT_WIDTHS = (16, 24, 48, 96, 128)


def conv_bn_relu(cin, cout, stride=1):
    """3x3 convolution (no bias), BatchNorm, ReLU."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True))


class _Down(nn.Sequential):
    """Stride-2 conv then conv: half the resolution."""

    def __init__(self, cin, cout):
        super().__init__(conv_bn_relu(cin, cout, stride=2), conv_bn_relu(cout, cout))


class _Up(nn.Module):
    """Bilinear upsampling to the skip's size, concatenation, two convs."""

    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.conv = nn.Sequential(conv_bn_relu(cin + cskip, cout), conv_bn_relu(cout, cout))

    def forward(self, x, skip):
        x = F.interpolate(x, size=skip.shape[2:], mode='bilinear', align_corners=False)
        return self.conv(torch.cat([x, skip], dim=1))


class FreespaceUNet(nn.Module):
    """Four-level UNet; ``widths`` are the channels at 1/2, 1/4, 1/8, 1/16 and 1/32."""

    def __init__(self, num_classes=2, widths=DEFAULT_WIDTHS):
        super().__init__()
        if len(widths) != 5:
            raise ValueError(f'widths must have 5 entries, got {widths!r}')
        w = [int(c) for c in widths]
        self.widths = tuple(w)
        self.num_classes = int(num_classes)
        self.stem = conv_bn_relu(3, w[0], stride=2)
        self.enc1 = conv_bn_relu(w[0], w[0])
        self.enc2 = _Down(w[0], w[1])
        self.enc3 = _Down(w[1], w[2])
        self.enc4 = _Down(w[2], w[3])
        self.bottom = _Down(w[3], w[4])
        self.dec4 = _Up(w[4], w[3], w[3])
        self.dec3 = _Up(w[3], w[2], w[2])
        self.dec2 = _Up(w[2], w[1], w[1])
        self.dec1 = _Up(w[1], w[0], w[0])
        self.head = nn.Conv2d(w[0], self.num_classes, 1)
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


def build_model(num_classes=2, widths=DEFAULT_WIDTHS):
    """Make a freshly initialised :class:`FreespaceUNet`."""
    return FreespaceUNet(num_classes=num_classes, widths=widths)


def count_parameters(model):
    """Return the number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
