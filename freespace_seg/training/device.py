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

"""The device a run trains on, and how the card records it."""

from freespace_seg.training.errors import TrainError
import torch


#: Choices of ``--device``.
DEVICES = ('auto', 'cpu', 'cuda')


def resolve_device(name):
    """
    Return the torch device for ``--device`` ``name`` (``auto``, ``cpu`` or ``cuda``).

    ``auto`` is ``cuda`` when torch sees a CUDA device, else ``cpu``. ``cuda`` without one
    exits with a message that says why (a CPU build of torch, or no driver or GPU).
    """
    if name not in DEVICES:
        raise TrainError(f'--device {name}: expected one of {", ".join(DEVICES)}')
    if name == 'cpu':
        return torch.device('cpu')
    if torch.cuda.is_available():
        return torch.device('cuda')
    if name == 'cuda':
        build = torch.version.cuda
        why = ('this torch is a CPU build' if build is None else
               f'this torch is built for CUDA {build}, but no GPU or driver answers')
        raise TrainError(f'--device cuda: torch {torch.__version__} sees no CUDA device '
                         f'({why}); use --device cpu')
    return torch.device('cpu')


def device_record(device):
    """Return the card's ``training.device``: ``cpu``, or ``cuda (<GPU name>)``."""
    if device.type == 'cuda':
        return f'cuda ({torch.cuda.get_device_name(device)})'
    return device.type
