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
Training on several processes or devices: ``torchrun ... -m freespace_seg train``.

``torchrun`` starts one process per rank and tells each its ``RANK``, ``LOCAL_RANK`` and
``WORLD_SIZE`` (and where rank 0 listens). :func:`from_environment` joins the group: NCCL
when the run trains on CUDA GPUs (each rank on GPU ``LOCAL_RANK``), gloo on CPUs. Without
those variables it returns a :class:`Ranks` of one, and training is exactly the
single-process loop.

How the ranks share a run (:func:`~freespace_seg.training.loop.train_model`):

- every rank holds the same frames; one generator, seeded alike on every rank, draws each
  step's global batch of ``batch_size x world_size`` frames, and rank r trains on slice r
  of it (a DistributedSampler without a sampler);
- each rank augments its slice with its own generator, seeded by (seed, rank);
- DistributedDataParallel averages the gradients, so every rank takes the same step and the
  weights stay identical; BatchNorm statistics are broadcast from rank 0 at every forward;
- rank 0 alone logs, validates, writes checkpoints, exports the ONNX model and its card; a
  checkpoint holds every rank's augmentation generator, so ``--resume`` continues with the
  same number of ranks exactly where the run stopped;
- stops (``--time-limit``, ``--patience``) are decided by rank 0 and shared with the others
  at the same step.

If a rank dies, a collective on the others fails; they stop with a message that says so and
``torchrun`` ends the run with the failed rank's exit status.
"""

import datetime
import os

import torch
import torch.distributed as dist


class DistributedError(RuntimeError):
    """The group could not be joined, or a rank failed during training."""


class Ranks:
    """Where this process stands in a run: ``rank`` of ``world`` (1: no group)."""

    def __init__(self, rank=0, world=1, local_rank=0, backend=None):
        self.rank = int(rank)
        self.world = int(world)
        self.local_rank = int(local_rank)
        self.backend = backend

    @property
    def is_main(self):
        """Tell whether this is rank 0, the rank that logs, validates and writes."""
        return self.rank == 0

    @property
    def distributed(self):
        """Tell whether more than one rank trains."""
        return self.world > 1

    def wrap(self, model, device):
        """Return ``model`` in DistributedDataParallel over the group (itself for one rank)."""
        if not self.distributed:
            return model
        ids = [device.index if device.index is not None else self.local_rank] \
            if device.type == 'cuda' else None
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def agree(self, flag, device=None):
        """Return rank 0's ``flag`` on every rank (a collective: every rank must call it)."""
        if not self.distributed:
            return bool(flag)
        t = torch.tensor([1 if flag else 0], dtype=torch.int32,
                         device=device if self.backend == 'nccl' else 'cpu')
        _collective(dist.broadcast, t, src=0)
        return bool(t.item())

    def gather(self, obj):
        """Return the list of every rank's ``obj`` (a collective; ``[obj]`` for one rank)."""
        if not self.distributed:
            return [obj]
        out = [None] * self.world
        _collective(dist.all_gather_object, out, obj)
        return out

    def barrier(self):
        """Wait for every rank (no-op for one rank)."""
        if self.distributed:
            _collective(dist.barrier)

    def record(self, batch_size):
        """Return the card's ``training.distributed`` entry, or None for one rank."""
        if not self.distributed:
            return None
        return {'world_size': self.world, 'backend': self.backend,
                'batch_size_per_rank': int(batch_size),
                'global_batch_size': int(batch_size) * self.world,
                'learning_rate_scaling': 'none: --lr applies as given to the global batch of '
                                         'batch_size x world_size frames'}

    def close(self):
        """Leave the group."""
        if self.distributed and dist.is_initialized():
            dist.destroy_process_group()


def _collective(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (RuntimeError, dist.DistBackendError) as e:
        raise DistributedError(f'a collective failed ({e.__class__.__name__}: '
                               f'{str(e).splitlines()[0] if str(e) else e}); another rank has '
                               'probably failed: see its output') from None


def from_environment(device, timeout_s=600):
    """
    Join torchrun's group when ``WORLD_SIZE`` > 1 says there is one; return :class:`Ranks`.

    ``device`` is the resolved training device: CUDA uses NCCL and ``cuda:LOCAL_RANK``
    (returned as ``ranks.device``), the CPU uses gloo. ``timeout_s`` bounds how long a rank
    waits for the others in a collective.
    """
    world = int(os.environ.get('WORLD_SIZE', '1') or 1)
    if world <= 1:
        ranks = Ranks()
        ranks.device = device
        return ranks
    rank = int(os.environ.get('RANK', '0'))
    local = int(os.environ.get('LOCAL_RANK', '0'))
    if not dist.is_available():
        raise DistributedError('WORLD_SIZE is set, but this torch has no torch.distributed')
    backend = 'nccl' if device.type == 'cuda' else 'gloo'
    if device.type == 'cuda':
        torch.cuda.set_device(local)
        device = torch.device('cuda', local)
    try:
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
    except (RuntimeError, ValueError) as e:
        raise DistributedError(f'rank {rank} of {world} could not join the group over '
                               f'{backend}: {e}') from None
    ranks = Ranks(rank, world, local, backend)
    ranks.device = device
    return ranks
