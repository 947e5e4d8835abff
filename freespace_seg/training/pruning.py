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
Structured channel pruning of the package's UNet (torch): what ``prune`` cuts.

:func:`channel_importance` scores each output channel by the L1 norm of its
BatchNorm-folded kernel, :func:`select_channels` keeps the best of each block of a
``--scope`` (``inner``: only the blocks whose output feeds just the next convolution of the
same block; ``all``: every block), and :func:`prune_channels` builds the smaller UNet with
those channels, every consumer of a pruned block losing the matching input channels. The
command is :mod:`freespace_seg.training.prune`.
"""

from freespace_seg.training.errors import PruneError
from freespace_seg.training.model import BLOCKS, INPUTS
import torch

#: blocks whose output feeds only the next convolution of the same block
INNER = ('stem', 'enc2.0', 'enc3.0', 'enc4.0', 'bottom.0', 'dec4.conv.0', 'dec3.conv.0',
         'dec2.conv.0', 'dec1.conv.0')
SCOPES = {'inner': INNER, 'all': BLOCKS}


def _block(model, name):
    """Return (conv, batchnorm) of a block, e.g. ``enc2.0`` -> modules enc2.0.0, enc2.0.1."""
    seq = model.get_submodule(name)
    return seq[0], seq[1]


def channel_importance(model):
    """
    Return {block: float tensor (out channels,)}, the L1 norm of each BatchNorm-folded kernel.

    ``sum(|W_c|) * |gamma_c| / sqrt(running_var_c + eps)`` per output channel ``c``; for a
    model rebuilt from ONNX (identity normalization, scale in ``gamma``) it is the L1 norm
    of the kernel in the ONNX file.
    """
    scores = {}
    with torch.no_grad():
        for name in BLOCKS:
            conv, bn = _block(model, name)
            scale = bn.weight.abs() / torch.sqrt(bn.running_var + bn.eps)
            scores[name] = conv.weight.abs().sum(dim=(1, 2, 3)) * scale
    return scores


def kept_count(channels, ratio, min_channels=1, multiple=1):
    """Channels kept of ``channels`` when ``ratio`` of them go (see the module docstring)."""
    keep = int(round(channels * (1.0 - float(ratio))))
    keep = max(keep, int(min_channels), 1)
    multiple = max(int(multiple), 1)
    keep = -(-keep // multiple) * multiple
    return min(keep, channels)


def select_channels(model, ratio, scope='all', min_channels=1, multiple=1):
    """
    Return {block: sorted LongTensor of kept output channels} for the blocks of ``scope``.

    In each block the channels of lowest :func:`channel_importance` go (ties: the later
    channel goes first); blocks outside ``scope`` are not in the result (all kept).
    """
    if scope not in SCOPES:
        raise PruneError(f'scope {scope!r}: expected one of {", ".join(SCOPES)}')
    scores = channel_importance(model)
    keep = {}
    for name in SCOPES[scope]:
        score = scores[name]
        n = kept_count(score.numel(), ratio, min_channels, multiple)
        # Stable sort, highest first: among equal scores the lower index is kept.
        order = torch.sort(score, descending=True, stable=True).indices
        keep[name] = torch.sort(order[:n]).values
    return keep


def _input_index(name, keep, channels):
    """Old input channel indices a block's (or the head's) kept input channels come from."""
    parts = []
    offset = 0
    for src in INPUTS[name]:
        idx = keep.get(src)
        if idx is None:
            idx = torch.arange(channels[src])
        parts.append(idx + offset)
        offset += channels[src]
    return torch.cat(parts) if parts else None


def prune_channels(model, keep):
    """
    Return a new, smaller UNet of ``model``'s class with only the ``keep`` channels.

    ``keep`` maps block names to the output channels to keep (blocks not in it keep all).
    Kernels, BatchNorm parameters and statistics are copied; every consumer of a pruned
    block loses the matching input channels. ``model`` is not changed.
    """
    old = dict(model.channels)
    keep = {k: torch.as_tensor(v, dtype=torch.long).flatten() for k, v in keep.items()}
    new_channels = dict(old)
    for name, idx in keep.items():
        if name not in old:
            raise PruneError(f'unknown block {name!r}; expected one of {", ".join(BLOCKS)}')
        if idx.numel() == 0 or len(set(idx.tolist())) != idx.numel() or \
                int(idx.min()) < 0 or int(idx.max()) >= old[name]:
            raise PruneError(f'{name}: kept channels must be distinct indices in '
                             f'[0, {old[name]}), got {idx.tolist()}')
        keep[name] = torch.sort(idx).values
        new_channels[name] = idx.numel()
    context = getattr(model, 'context', None)
    pruned = type(model)(num_classes=model.num_classes, widths=model.widths,
                         channels=new_channels,
                         context=False if context is None else context.fc1.out_channels)
    with torch.no_grad():
        for name in BLOCKS:
            conv, bn = _block(model, name)
            new_conv, new_bn = _block(pruned, name)
            out_idx = keep.get(name, torch.arange(old[name]))
            weight = conv.weight[out_idx]
            in_idx = _input_index(name, keep, old)
            if in_idx is not None:
                weight = weight[:, in_idx]
            new_conv.weight.copy_(weight)
            if conv.bias is not None:
                new_conv.bias.copy_(conv.bias[out_idx])
            for attr in ('weight', 'bias', 'running_mean', 'running_var'):
                getattr(new_bn, attr).copy_(getattr(bn, attr)[out_idx])
            new_bn.num_batches_tracked.copy_(bn.num_batches_tracked)
        in_idx = _input_index('head', keep, old)
        pruned.head.weight.copy_(model.head.weight[:, in_idx])
        pruned.head.bias.copy_(model.head.bias)
        if context is not None:
            # The branch reads and writes the bottom block's channels: it follows their cut.
            idx = keep.get('bottom.1', torch.arange(old['bottom.1']))
            pruned.context.fc1.weight.copy_(context.fc1.weight[:, idx])
            pruned.context.fc1.bias.copy_(context.fc1.bias)
            pruned.context.fc2.weight.copy_(context.fc2.weight[idx])
            pruned.context.fc2.bias.copy_(context.fc2.bias[idx])
    for m_old, m_new in zip(model.modules(), pruned.modules()):
        for p_old, p_new in zip(m_old.parameters(recurse=False),
                                m_new.parameters(recurse=False)):
            p_new.requires_grad_(p_old.requires_grad)
    return pruned.train(model.training)


def prune_model(model, ratio, scope='all', min_channels=1, multiple=1):
    """Select (:func:`select_channels`) and cut (:func:`prune_channels`); return both."""
    keep = select_channels(model, ratio, scope, min_channels, multiple)
    return prune_channels(model, keep), keep


def multiply_adds(model, width, height):
    """Multiply-adds of one forward pass at ``width`` x ``height`` (convolutions only)."""
    total = 0
    hooks = []

    def count(module, inputs, output):
        nonlocal total
        k = module.weight[0].numel()  # cin / groups * kh * kw
        total += int(output.numel() // output.shape[0]) * k

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            hooks.append(m.register_forward_hook(count))
    was_training = model.training
    try:
        with torch.no_grad():
            model.eval()(torch.zeros(1, 3, int(height), int(width)))
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return total
