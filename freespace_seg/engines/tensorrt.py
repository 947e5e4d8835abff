"""
TensorRT backend (NVIDIA GPUs and Jetson).

Only the availability check lives here for now; the engine build, cache and runner are
tracked separately. Requesting ``backend: tensorrt`` where TensorRT cannot run is an error
with the reason; ``backend: auto`` records the reason and moves on to ONNX Runtime.
"""

from freespace_seg.engines.base import BackendUnavailable, Engine


def tensorrt_unavailable_reason():
    """Return why TensorRT cannot be used here, or None if its Python module imports."""
    try:
        import tensorrt  # noqa: F401
    except ImportError as e:
        return f'the tensorrt Python module is not importable ({e})'
    return None


class TensorRTEngine(Engine):
    """Placeholder until the TensorRT runner lands: always reports itself unavailable."""

    backend = 'tensorrt'

    def __init__(self, card, num_threads=0, **_):
        super().__init__()
        reason = tensorrt_unavailable_reason()
        if reason is None:
            reason = 'the TensorRT runner is not implemented in this version'
        raise BackendUnavailable(reason)

    def run(self, tensor):
        raise NotImplementedError
