"""ONNX Runtime backend (CPU execution provider)."""

import os

from freespace_seg.engines.base import BackendUnavailable, Engine, EngineError

_ORT_TYPES = {'tensor(float)': 'float32', 'tensor(float16)': 'float16', 'tensor(uint8)': 'uint8'}


def _check_shape(kind, name, actual, expected):
    if len(actual) != len(expected):
        raise EngineError(f'model {kind} {name!r} has rank {len(actual)} {list(actual)}, the card '
                          f'says {list(expected)}')
    for a, e in zip(actual, expected):
        # Symbolic or unknown dimensions (str / None) accept anything.
        if isinstance(a, int) and a > 0 and a != e:
            raise EngineError(f'model {kind} {name!r} has shape {list(actual)}, the card says '
                              f'{list(expected)}')


class OnnxRuntimeEngine(Engine):
    """Runs an ONNX model with ONNX Runtime and checks it against its card at load time."""

    backend = 'onnxruntime'

    def __init__(self, card, num_threads=0, providers=('CPUExecutionProvider',), **_):
        super().__init__()
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise BackendUnavailable(f'onnxruntime is not importable ({e})') from e
        path = card.model_path
        if not os.path.isfile(path):
            raise EngineError(f'model file not found: {path}')
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.intra_op_num_threads = int(num_threads)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(path, sess_options=opts,
                                                 providers=list(providers))
        except Exception as e:  # noqa: B902 - ORT raises its own exception types
            raise EngineError(f'cannot load ONNX model {path}: {e}') from e
        self.devices = self._session.get_providers()
        self._check(card)
        self._input = card.input_name
        self._outputs = [card.output_name]

    def _check(self, card):
        inputs = {i.name: i for i in self._session.get_inputs()}
        outputs = {o.name: o for o in self._session.get_outputs()}
        if card.input_name not in inputs:
            raise EngineError(f"model has no input {card.input_name!r} (the card's input.name); "
                              f'it has {sorted(inputs)}')
        if card.output_name not in outputs:
            raise EngineError(f"model has no output {card.output_name!r} (the card's "
                              f'output.name); it has {sorted(outputs)}')
        inp = inputs[card.input_name]
        _check_shape('input', inp.name, inp.shape, card.input_shape)
        dtype = _ORT_TYPES.get(inp.type, inp.type)
        if dtype != card.dtype:
            raise EngineError(f'model input {inp.name!r} is {dtype}, the card says {card.dtype}')
        out = outputs[card.output_name]
        if card.output_kind != 'argmax' and len(out.shape) == 4:
            channels = out.shape[1] if card.output_layout == 'NCHW' else out.shape[3]
            if isinstance(channels, int) and channels not in (1, card.num_classes):
                raise EngineError(f'model output {out.name!r} has {channels} channels, the card '
                                  f'lists {card.num_classes} classes')

    def run(self, tensor):
        """Run one input tensor and return the first requested output."""
        if self._session is None:
            raise EngineError('engine is closed')
        return self._session.run(self._outputs, {self._input: tensor})[0]

    def close(self):
        self._session = None


def available_providers():
    """List the execution providers this onnxruntime build offers (they may still fail)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())
