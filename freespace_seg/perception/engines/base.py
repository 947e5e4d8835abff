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
The engine interface and backend selection.

An engine takes the model's input tensor (as the model card describes it) and returns the
model's output array. :func:`create_engine` picks a backend:

* ``auto`` tries each backend in :data:`AUTO_ORDER` and takes the first that loads, recording
  why each earlier one was skipped;
* naming a backend explicitly either gives that backend or raises :class:`EngineError`
  with the reason: an explicit choice never falls back silently.
"""

import abc
import importlib


#: default of the ``max_workspace_size`` engine option (bytes); the node parameter's default
DEFAULT_WORKSPACE = 512 << 20


class EngineError(RuntimeError):
    """A model could not be loaded or run; the message says why."""


class BackendUnavailable(EngineError):
    """The backend's runtime is not installed or cannot run on this machine."""


def check_shape(kind, name, actual, expected):
    """
    Raise :class:`EngineError` unless a model's tensor shape fits the card's shape.

    Dimensions that are symbolic or unknown in the model (a string, None, or a value <= 0
    such as TensorRT's -1) accept anything.
    """
    actual = list(actual)
    if len(actual) != len(expected):
        raise EngineError(f'model {kind} {name!r} has rank {len(actual)} {actual}, the card '
                          f'says {list(expected)}')
    for a, e in zip(actual, expected):
        if isinstance(a, int) and a > 0 and a != e:
            raise EngineError(f'model {kind} {name!r} has shape {actual}, the card says '
                              f'{list(expected)}')


class Engine(abc.ABC):
    """One loaded model on one backend."""

    #: backend name, e.g. ``onnxruntime``
    backend = ''

    def __init__(self):
        #: what the backend actually runs on, e.g. ['CPUExecutionProvider']
        self.devices = []
        #: things worth one log line at startup (engine cache decisions, dropped providers)
        self.notes = []

    @abc.abstractmethod
    def run(self, tensor):
        """Run one batch-1 input tensor and return the output array."""

    def close(self):
        """Release the model and its memory; the engine cannot run afterwards."""

    def describe(self):
        """Describe the engine in one line for logs and diagnostics."""
        return f'{self.backend} on {", ".join(self.devices) or "?"}'


# name -> 'module:class'. Modules are imported only when tried.
_BACKEND_CLASSES = {
    'tensorrt': 'freespace_seg.perception.engines.tensorrt:TensorRTEngine',
    'onnxruntime_gpu': 'freespace_seg.perception.engines.onnxruntime:OnnxRuntimeGpuEngine',
    'onnxruntime': 'freespace_seg.perception.engines.onnxruntime:OnnxRuntimeEngine',
    'triton': 'freespace_seg.perception.engines.triton:TritonEngine',
}
#: order tried by ``backend: auto``: fastest first, the CPU last
AUTO_ORDER = ('tensorrt', 'onnxruntime_gpu', 'onnxruntime')
#: backends that run off this machine: only ever used when named, never by ``auto``
REMOTE_BACKENDS = ('triton',)
BACKENDS = ('auto',) + AUTO_ORDER + REMOTE_BACKENDS


def _engine_class(name):
    module_name, class_name = _BACKEND_CLASSES[name].split(':')
    return getattr(importlib.import_module(module_name), class_name)


def create_engine(card, backend='auto', num_threads=0, **options):
    """
    Load the model described by ``card`` on ``backend``.

    Returns ``(engine, notes)`` where ``notes`` lists, for ``auto``, why each skipped
    backend was skipped (``'tensorrt: skipped: ...'``), which one was chosen, and then the
    chosen engine's own notes (``'tensorrt: engine cache: ...'``).
    Raises :class:`EngineError` when the model is bad, or the named backend is unavailable.
    ``options`` are backend options named like the node parameters (``enable_fp16``,
    ``engine_file_path``, ...); each backend takes the ones it knows and ignores the rest.
    """
    if backend not in BACKENDS:
        raise EngineError(f'unknown backend {backend!r}; choose one of {", ".join(BACKENDS)}')
    names = AUTO_ORDER if backend == 'auto' else (backend,)
    notes = []
    for name in names:
        cls = _engine_class(name)
        try:
            engine = cls(card, num_threads=num_threads, **options)
        except BackendUnavailable as e:
            if backend != 'auto':
                raise BackendUnavailable(f'backend {name!r} was requested but is not '
                                         f'available: {e}') from e
            notes.append(f'{name}: skipped: {e}')
            continue
        notes.append(f'{name}: chosen: {engine.describe()}')
        notes.extend(f'{name}: {note}' for note in engine.notes)
        return engine, notes
    raise BackendUnavailable('no backend could load the model: ' + '; '.join(notes))
