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

"""Checkpoints: atomic saves, the options they keep, and what --resume restores."""

import argparse
import hashlib
import os

from freespace_seg.training.errors import TrainError
import numpy as np
import torch

# Options that may differ between the first invocation of a run and its ``--resume``.
_RESUME_MAY_CHANGE = ('threads', 'log_every', 'latency_runs')


# Options that are never written into the checkpoint's options: each invocation gives its own.
_PER_INVOCATION = ('resume', 'time_limit', 'device', 'render_jobs')


def _saved_args(args):
    """Return the parsed options as a plain dict for the checkpoint (``--resume`` reads it)."""
    return {k: v for k, v in vars(args).items() if k not in _PER_INVOCATION}


def _atomic_save(obj, path):
    """torch.save through a temporary file, so that a kill never leaves half a checkpoint."""
    tmp = path + '.tmp'
    torch.save(obj, tmp)
    os.replace(tmp, path)


def data_fingerprint(*tensors):
    """Return a short hash of the shapes and a strided sample of the pixels of ``tensors``."""
    h = hashlib.sha1()
    for t in tensors:
        h.update(str(tuple(t.shape)).encode())
        h.update(np.ascontiguousarray(t.numpy()[..., ::7, ::7]).tobytes())
    return h.hexdigest()[:16]


def resume_checkpoint(args, defaults):
    """
    Return ``(args, checkpoint)`` for ``--resume``.

    ``args`` are the first invocation's options from the checkpoint, with this one's
    ``--time-limit``, ``--device`` and ``--render-jobs`` and, where given, ``--threads``,
    ``--log-every`` and ``--latency-runs``; ``checkpoint``
    is the loaded ``last.pt``. ``defaults`` are the options' defaults (``train.OPTIONS``): an
    option given with another value is refused. Exits with a message when it cannot resume.
    """
    path = args.resume
    if os.path.isdir(path):
        path = os.path.join(path, 'last.pt')
    if not os.path.isfile(path):
        raise TrainError(f'--resume {args.resume}: no checkpoint at {path}')
    given = sorted('--' + dest.replace('_', '-') for dest, default in defaults.items()
                   if dest not in _RESUME_MAY_CHANGE and getattr(args, dest, default) != default)
    if given:
        raise TrainError('--resume takes every option from the checkpoint; drop '
                         + ', '.join(given))
    state = torch.load(path, map_location='cpu')
    if 'resume' not in state or 'args' not in state:
        raise TrainError(f'{path} cannot be resumed: it has no resume state (it is '
                         'a best.pt, or was written before --resume existed); start a new run '
                         f'with --init {path} instead')
    restored = argparse.Namespace(**state['args'])
    for dest in _RESUME_MAY_CHANGE:
        if getattr(args, dest, None) != defaults[dest]:
            setattr(restored, dest, getattr(args, dest))
    for dest in _PER_INVOCATION:
        setattr(restored, dest, getattr(args, dest, None))
    return restored, state
