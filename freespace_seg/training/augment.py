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

"""Batched augmentation in torch: geometry, photometry, colour shifts."""

import math

from freespace_seg.perception import metrics
import torch
import torch.nn.functional as F


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


def _jitter(x, gen, p_gray=0.1):
    """
    Photometric jitter of the pretrained-encoder probe (the ``jitter`` mode), on [0, 1] images.

    Per sample: a gain of 0.6-1.4 times a per-channel 0.85-1.15, a brightness offset of
    +-30/255, contrast 0.7-1.3 about the image mean, Gaussian sensor noise with a sigma drawn
    from 0-8/255, and greyscale with probability ``p_gray``. No geometry, blur or gamma.
    """
    n = x.shape[0]
    shape = (n, 1, 1, 1)
    dev = x.device
    gain = (_uniform(n, 0.6, 1.4, gen).view(shape)
            * _uniform(n * 3, 0.85, 1.15, gen).view(n, 3, 1, 1))
    x = x * gain.to(dev) + (_uniform(n, -30.0, 30.0, gen) / 255.0).view(shape).to(dev)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = (x - mean) * _uniform(n, 0.7, 1.3, gen).view(shape).to(dev) + mean
    sigma = _uniform(n, 0.0, 8.0 / 255.0, gen).view(shape)
    x = x + (sigma * torch.randn(x.shape, generator=gen)).to(dev)
    gray = (torch.rand(n, generator=gen) < p_gray).float().view(shape).to(dev)
    x = gray * x.mean(dim=1, keepdim=True).expand_as(x) + (1.0 - gray) * x
    return x.clamp(0.0, 1.0)


#: Choices of ``--augment``.
AUGMENT_MODES = ('full', 'strong', 'flip', 'light', 'jitter')


def augment(x, y, gen, mode='full'):
    """
    Augment a batch: x float (N, 3, H, W) in [0, 1], y long (N, H, W) with ignore pads.

    ``mode`` ``full``: flip, zoom/crop, roll, colour jitter, gamma, blur, noise; ``strong``:
    ``full`` plus hue rotation, greyscale, coloured light and brightness ramps
    (:func:`_colour_shift`); ``flip``: horizontal flips only; ``light``: flips and colour
    jitter and gamma, no geometry, blur or noise; ``jitter``: flips and the probe's gain,
    offset, contrast, noise and greyscale (:func:`_jitter`).
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
    if mode == 'jitter':
        return _jitter(x, gen), y
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
            'jitter': 'hflip, gain 0.6-1.4 x channel 0.85-1.15, offset +-30/255, contrast '
                      '0.7-1.3, noise sigma 0-8/255, greyscale 10 %',
            'strong': full + ', hue rotation, greyscale, coloured light, brightness ramp'}[mode]
