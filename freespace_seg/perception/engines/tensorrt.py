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
TensorRT backend (NVIDIA GPUs and Jetson), written to the TensorRT 10 Python API.

Build: ONNX file -> ``trt.OnnxParser`` -> builder config (workspace limit, FP16, INT8 for a
QDQ-quantized model, DLA) -> ``build_serialized_network``; the result is kept in the engine
cache (:mod:`freespace_seg.perception.engines.engine_cache`), rebuilt when stale. Run:
deserialize, one execution context, every named I/O tensor bound once to a device buffer,
pinned host buffers, one CUDA stream, ``execute_async_v3``; optionally the enqueue is captured
once as a CUDA graph and replayed with ``cudaGraphLaunch``.

CUDA calls use cuda-python's runtime module: ``from cuda.bindings import runtime`` (what
TensorRT's current samples import), else the older ``from cuda import cudart``.

Requesting ``backend: tensorrt`` where TensorRT cannot run is an error with the reason;
``backend: auto`` records the reason and moves on.
"""

import ctypes
import dataclasses
import os
import sys

from freespace_seg.perception.engines.base import (BackendUnavailable, check_shape,
                                                   DEFAULT_WORKSPACE, Engine, EngineError)
from freespace_seg.perception.engines.engine_cache import (default_engine_path, EngineCache,
                                                           EngineKey, file_sha256)
import numpy as np

#: engine tensor dtypes the pipeline can exchange with numpy
_HOST_DTYPES = ('float32', 'float16', 'uint8', 'int8', 'int32', 'int64', 'bool')


def _import_tensorrt():
    try:
        import tensorrt
    except (ImportError, OSError, RuntimeError) as e:   # also: TensorRT libraries missing
        raise BackendUnavailable(f'the tensorrt Python module is not importable ({e})') from e
    return tensorrt


def _import_cudart():
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart
        except ImportError as e:
            raise BackendUnavailable(
                f'cuda-python is not importable ({e}); install the cuda-python release that '
                'matches your CUDA version') from e
    return cudart


def tensorrt_unavailable_reason():
    """Return why TensorRT cannot be used here, or None if its Python modules import."""
    try:
        _import_tensorrt()
        _import_cudart()
    except BackendUnavailable as e:
        return str(e)
    return None


def _call(cudart, result, what):
    """Check a cuda-python call's ``(error, *values)`` result; return the value(s)."""
    err, values = result[0], result[1:]
    if err != cudart.cudaError_t.cudaSuccess:
        name = cudart.cudaGetErrorName(err)[1]
        name = name.decode() if isinstance(name, bytes) else str(name)
        raise EngineError(f'{what} failed: {name}')
    if not values:
        return None
    return values[0] if len(values) == 1 else values


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One engine I/O tensor as TensorRT reports it (-1 marks a dynamic dimension)."""

    name: str
    is_input: bool
    shape: tuple
    dtype: str          # numpy dtype name, or TensorRT's name when numpy has none


def format_io(tensors):
    """Return one aligned line per tensor: direction, name, shape, dtype."""
    width = max((len(t.name) for t in tensors), default=0)
    return [f'{"input " if t.is_input else "output"} {t.name:<{width}} '
            f'{"x".join(str(d) for d in t.shape):<16} {t.dtype}' for t in tensors]


def check_io_against_card(tensors, card):
    """
    Raise :class:`EngineError` unless an engine's I/O tensors fit the model card.

    The engine must have exactly one input, the card's ``input.name``, with the card's shape
    (dynamic dimensions accepted) and dtype, and an output named ``output.name`` whose dtype
    numpy can hold and whose class channels match the card.
    """
    inputs = [t for t in tensors if t.is_input]
    outputs = {t.name: t for t in tensors if not t.is_input}
    names = [t.name for t in inputs]
    if card.input_name not in names:
        raise EngineError(f"engine has no input {card.input_name!r} (the card's input.name); "
                          f'it has {names}')
    if len(inputs) != 1:
        raise EngineError(f'engine has {len(inputs)} inputs {names}; the pipeline feeds one, '
                          f'{card.input_name!r}')
    inp = inputs[0]
    check_shape('input', inp.name, inp.shape, card.input_shape)
    if inp.dtype != card.dtype:
        raise EngineError(f'engine input {inp.name!r} is {inp.dtype}, the card says {card.dtype}')
    if card.output_name not in outputs:
        raise EngineError(f"engine has no output {card.output_name!r} (the card's "
                          f'output.name); it has {sorted(outputs)}')
    for out in outputs.values():
        if out.dtype not in _HOST_DTYPES:
            raise EngineError(f'engine output {out.name!r} has type {out.dtype}, which numpy '
                              'cannot hold')
        if any(d < 0 for d in out.shape):
            raise EngineError(f'engine output {out.name!r} has a dynamic shape {out.shape}')
    out = outputs[card.output_name]
    if card.output_kind != 'argmax' and len(out.shape) == 4:
        channels = out.shape[1] if card.output_layout == 'NCHW' else out.shape[3]
        if channels not in (1, card.num_classes):
            raise EngineError(f'engine output {out.name!r} has {channels} channels, the card '
                              f'lists {card.num_classes} classes')


def host_array(address, shape, dtype):
    """Wrap ``prod(shape)`` items at a raw host address (pinned memory) as a numpy array."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(address))
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


def _engine_io(trt, engine):
    tensors = []
    for i in range(engine.num_io_tensors):
        name = engine.get_tensor_name(i)
        trt_dtype = engine.get_tensor_dtype(name)
        try:
            dtype = np.dtype(trt.nptype(trt_dtype)).name
        except TypeError:           # bf16, fp8, int4: no numpy type
            dtype = str(trt_dtype)
        tensors.append(TensorInfo(name=name,
                                  is_input=engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT,
                                  shape=tuple(engine.get_tensor_shape(name)), dtype=dtype))
    return tensors


def _gpu(cudart, gpu_id):
    """Select ``gpu_id``; return its (name, compute capability) or raise BackendUnavailable."""
    try:
        count = _call(cudart, cudart.cudaGetDeviceCount(), 'cudaGetDeviceCount')
    except (EngineError, OSError, RuntimeError) as e:   # also: libcudart cannot be loaded
        raise BackendUnavailable(f'no usable CUDA device ({e})') from e
    if not 0 <= gpu_id < count:
        raise BackendUnavailable(f'gpu_id {gpu_id} does not exist: this machine has {count} '
                                 'CUDA device(s)')
    _call(cudart, cudart.cudaSetDevice(gpu_id), 'cudaSetDevice')
    prop = _call(cudart, cudart.cudaGetDeviceProperties(gpu_id), 'cudaGetDeviceProperties')
    name = prop.name
    name = name.decode(errors='replace') if isinstance(name, bytes) else str(name)
    return name.rstrip('\x00').strip(), f'{prop.major}.{prop.minor}'


def build_serialized_engine(trt, logger, model_path, card, fp16, int8, workspace, dla_core,
                            notes):
    """
    Parse the ONNX model and build a serialized engine (``trt.IHostMemory``).

    Appends to ``notes`` anything the user should know about the precision actually used.
    """
    major = int(trt.__version__.split('.')[0])
    # TensorRT 10 networks are always explicit-batch (the flag is deprecated there); 8.x, as on
    # JetPack 6.0, must ask for it.
    flags = 0 if major >= 10 else 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    builder = trt.Builder(logger)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(model_path):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise EngineError(f'TensorRT {trt.__version__} cannot parse {model_path}: '
                          + ('; '.join(errors) or 'no details given'))
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace))

    qdq_types = (trt.LayerType.QUANTIZE, trt.LayerType.DEQUANTIZE)
    qdq = any(network.get_layer(i).type in qdq_types for i in range(network.num_layers))
    if int8 and not qdq:
        raise EngineError('enable_int8 needs a model quantized with QuantizeLinear/'
                          'DequantizeLinear (QDQ) nodes and this one has none; INT8 calibration '
                          'is not supported. Use a QDQ model or set enable_int8 to false')
    if hasattr(trt.BuilderFlag, 'FP16'):
        if fp16:
            config.set_flag(trt.BuilderFlag.FP16)
        if qdq:
            # Explicit quantization: the scales come from the model's Q/DQ nodes.
            config.set_flag(trt.BuilderFlag.INT8)
            if not int8:
                notes.append('the model has Q/DQ nodes, so it is built with INT8 enabled '
                             '(explicit quantization) although enable_int8 is false')
    elif fp16:
        notes.append(f'TensorRT {trt.__version__} builds strongly typed networks only: '
                     'enable_fp16 has no effect, the types in the model decide')

    profile = None
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        shape = tuple(tensor.shape)
        if all(d >= 0 for d in shape):
            continue
        if tensor.name != card.input_name or len(shape) != len(card.input_shape):
            raise EngineError(f'model input {tensor.name!r} has a dynamic shape {list(shape)} '
                              'that the card cannot fix')
        profile = profile or builder.create_optimization_profile()
        fixed = tuple(card.input_shape)
        profile.set_shape(tensor.name, fixed, fixed, fixed)
    if profile is not None:
        config.add_optimization_profile(profile)

    if dla_core >= 0:
        if dla_core >= builder.num_DLA_cores:
            raise EngineError(f'dla_core {dla_core} was requested but this device has '
                              f'{builder.num_DLA_cores} DLA core(s)')
        if not (fp16 or qdq):
            raise EngineError('DLA runs FP16 or INT8 only: set enable_fp16, or use a QDQ model')
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(dla_core)
        config.set_flag(trt.BuilderFlag.GPU_FALLBACK)

    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise EngineError(f'TensorRT could not build an engine from {model_path}; the TensorRT '
                          'messages above say why')
    return serialized


def _log_to_stderr(message):
    print(f'[freespace_seg] {message}', file=sys.stderr, flush=True)


class TensorRTEngine(Engine):
    """
    A TensorRT engine for one model card, built or loaded through the engine cache.

    Options (node parameter names): ``engine_file_path`` ('' = per-user cache),
    ``force_engine_update``, ``enable_fp16``, ``enable_int8``, ``max_workspace_size``,
    ``dla_core`` (-1 = GPU), ``gpu_id``, ``cuda_graph``; ``log`` is a callable for progress
    lines (a build can take minutes). Unknown options are ignored.
    """

    backend = 'tensorrt'

    def __init__(self, card, num_threads=0, engine_file_path='', force_engine_update=False,
                 enable_fp16=True, enable_int8=False, max_workspace_size=DEFAULT_WORKSPACE,
                 dla_core=-1, gpu_id=0, cuda_graph=False, log=None, **_):
        super().__init__()
        self._context = self._engine = self._runtime = None
        self._stream = self._graph = self._graph_exec = None
        self._host_ptrs, self._device_ptrs = [], []
        self._input = self._output = None
        self._closed = True
        self._trt = self._cudart = None
        trt = _import_tensorrt()
        cudart = _import_cudart()
        self._trt, self._cudart = trt, cudart
        model_path = card.model_path
        if not os.path.isfile(model_path):
            raise EngineError(f'model file not found: {model_path}')
        self._gpu_id = int(gpu_id)
        gpu_name, capability = _gpu(cudart, self._gpu_id)
        key = EngineKey(model_sha256=file_sha256(model_path), tensorrt_version=trt.__version__,
                        gpu_name=gpu_name, compute_capability=capability,
                        fp16=bool(enable_fp16), int8=bool(enable_int8),
                        max_workspace_size=int(max_workspace_size), dla_core=int(dla_core),
                        input_shape=tuple(card.input_shape))
        path = engine_file_path or default_engine_path(key, model_path)
        cache = EngineCache(path, key, log=log or _log_to_stderr,
                            trust_unkeyed=bool(engine_file_path))
        logger = trt.Logger(trt.Logger.WARNING)
        self._runtime = trt.Runtime(logger)
        if dla_core >= 0:
            self._runtime.DLA_core = int(dla_core)
        build_notes = []

        def build():
            return build_serialized_engine(trt, logger, model_path, card, bool(enable_fp16),
                                           bool(enable_int8), max_workspace_size, dla_core,
                                           build_notes)

        def load(data):
            engine = self._runtime.deserialize_cuda_engine(data)
            if engine is None:
                raise EngineError(f'TensorRT {trt.__version__} cannot deserialize it (built by '
                                  'another TensorRT version or for another GPU?)')
            check_io_against_card(_engine_io(trt, engine), card)
            return engine

        self.cache_result = cache.get_or_build(build, load, force=bool(force_engine_update))
        self._engine = self.cache_result.engine
        self.notes.extend(build_notes + self.cache_result.notes)
        self.io = _engine_io(trt, self._engine)
        self.precision = key.precision
        self.devices = [f'{gpu_name} (sm {capability})'
                        + (f' DLA core {dla_core}' if dla_core >= 0 else '')]
        try:
            self._setup(card)
            if cuda_graph:
                self.notes.append(self._capture_graph())
        except BaseException:
            self.close()
            raise

    def _setup(self, card):
        cudart = self._cudart
        self._context = self._engine.create_execution_context()
        if self._context is None:
            raise EngineError('TensorRT cannot create an execution context (out of GPU memory?)')
        self._stream = _call(cudart, cudart.cudaStreamCreate(), 'cudaStreamCreate')
        for t in self.io:
            if t.is_input and any(d < 0 for d in t.shape):
                self._context.set_input_shape(t.name, tuple(card.input_shape))
        for t in self.io:
            shape = tuple(self._context.get_tensor_shape(t.name))
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize
            host = _call(cudart, cudart.cudaMallocHost(nbytes), 'cudaMallocHost')
            self._host_ptrs.append(host)
            device = _call(cudart, cudart.cudaMalloc(nbytes), 'cudaMalloc')
            self._device_ptrs.append(device)
            if not self._context.set_tensor_address(t.name, int(device)):
                raise EngineError(f'TensorRT refused the address of tensor {t.name!r}')
            slot = (host_array(host, shape, t.dtype), host, device, nbytes)
            if t.is_input:
                self._input = slot
            elif t.name == card.output_name:
                self._output = slot
        self._closed = False

    def _enqueue(self):
        if not self._context.execute_async_v3(int(self._stream)):
            raise EngineError('TensorRT execute_async_v3 failed; the TensorRT messages above say '
                              'why')

    def _capture_graph(self):
        """Capture the enqueue as a CUDA graph; return a note saying whether it worked."""
        cudart = self._cudart
        # TensorRT: enqueue once before capturing, so that deferred updates happen outside
        # the graph.
        self._enqueue()
        _call(cudart, cudart.cudaStreamSynchronize(self._stream), 'cudaStreamSynchronize')
        _call(cudart, cudart.cudaStreamBeginCapture(
            self._stream, cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal),
            'cudaStreamBeginCapture')
        enqueued = self._context.execute_async_v3(int(self._stream))
        result = cudart.cudaStreamEndCapture(self._stream)     # always end the capture
        try:
            graph = _call(cudart, result, 'cudaStreamEndCapture')
            if not enqueued:
                raise EngineError('execute_async_v3 failed during capture')
            self._graph = graph
            self._graph_exec = _call(cudart, cudart.cudaGraphInstantiateWithFlags(graph, 0),
                                     'cudaGraphInstantiateWithFlags')
        except EngineError as e:
            cudart.cudaGetLastError()       # clear the error a failed capture leaves
            return f'cuda_graph: capture failed ({e}); running without a CUDA graph'
        return 'cuda_graph: the inference is captured as a CUDA graph and replayed'

    def run(self, tensor):
        """Copy the input in, run, copy the card's output out; return a fresh array."""
        if self._closed:
            raise EngineError('engine is closed')
        cudart = self._cudart
        in_host, in_ptr, in_dev, in_bytes = self._input
        if tensor.shape != in_host.shape:
            raise EngineError(f'input shape {tensor.shape} differs from the engine input '
                              f'shape {in_host.shape}')
        out_host, out_ptr, out_dev, out_bytes = self._output
        # The current device is per thread; run() may be called from a worker thread.
        _call(cudart, cudart.cudaSetDevice(self._gpu_id), 'cudaSetDevice')
        np.copyto(in_host, tensor, casting='same_kind')
        _call(cudart, cudart.cudaMemcpyAsync(in_dev, in_ptr, in_bytes,
                                             cudart.cudaMemcpyKind.cudaMemcpyHostToDevice,
                                             self._stream), 'cudaMemcpyAsync')
        if self._graph_exec is not None:
            _call(cudart, cudart.cudaGraphLaunch(self._graph_exec, self._stream),
                  'cudaGraphLaunch')
        else:
            self._enqueue()
        _call(cudart, cudart.cudaMemcpyAsync(out_ptr, out_dev, out_bytes,
                                             cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost,
                                             self._stream), 'cudaMemcpyAsync')
        _call(cudart, cudart.cudaStreamSynchronize(self._stream), 'cudaStreamSynchronize')
        return out_host.copy()

    def describe(self):
        graph = ', CUDA graph' if self._graph_exec is not None else ''
        path = getattr(getattr(self, 'cache_result', None), 'path', '?')
        return (f'tensorrt {self._trt.__version__} on {", ".join(self.devices)}, '
                f'{self.precision}{graph}, engine {path}')

    def close(self):
        """Free the CUDA graph, device and pinned buffers, the stream and the engine."""
        self._closed = True
        self._input = self._output = None          # drop the views of pinned memory first
        cudart = self._cudart
        if cudart is None:
            return
        frees = [(cudart.cudaGraphExecDestroy, [self._graph_exec]),
                 (cudart.cudaGraphDestroy, [self._graph]),
                 (cudart.cudaFree, self._device_ptrs),
                 (cudart.cudaFreeHost, self._host_ptrs)]
        for free, handles in frees:
            for handle in handles:
                if handle is not None:
                    free(handle)        # best effort: nothing useful to do on failure
        self._graph_exec = self._graph = None
        self._device_ptrs, self._host_ptrs = [], []
        if self._stream is not None:
            cudart.cudaStreamDestroy(self._stream)
            self._stream = None
        # Context before engine before runtime.
        self._context = None
        self._engine = None
        self._runtime = None
