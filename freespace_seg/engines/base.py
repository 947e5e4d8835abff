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


class EngineError(RuntimeError):
    """A model could not be loaded or run; the message says why."""


class BackendUnavailable(EngineError):
    """The backend's runtime is not installed or cannot run on this machine."""


class Engine(abc.ABC):
    """One loaded model on one backend."""

    #: backend name, e.g. ``onnxruntime``
    backend = ''

    def __init__(self):
        #: what the backend actually runs on, e.g. ['CPUExecutionProvider']
        self.devices = []

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
    'tensorrt': 'freespace_seg.engines.tensorrt:TensorRTEngine',
    'onnxruntime': 'freespace_seg.engines.onnxruntime:OnnxRuntimeEngine',
}
#: order tried by ``backend: auto``: fastest first, the CPU last
AUTO_ORDER = ('tensorrt', 'onnxruntime')
BACKENDS = ('auto',) + tuple(_BACKEND_CLASSES)


def _engine_class(name):
    module_name, class_name = _BACKEND_CLASSES[name].split(':')
    return getattr(importlib.import_module(module_name), class_name)


def create_engine(card, backend='auto', num_threads=0, **options):
    """
    Load the model described by ``card`` on ``backend``.

    Returns ``(engine, notes)`` where ``notes`` lists, for ``auto``, why each skipped
    backend was skipped (``'tensorrt: skipped: ...'``) and which one was chosen.
    Raises :class:`EngineError` when the model is bad, or the named backend is unavailable.
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
        return engine, notes
    raise BackendUnavailable('no backend could load the model: ' + '; '.join(notes))
