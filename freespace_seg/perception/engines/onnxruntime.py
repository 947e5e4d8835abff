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
ONNX Runtime backends: ``onnxruntime`` (CPU) and ``onnxruntime_gpu`` (TensorRT/CUDA providers).

``onnxruntime_gpu`` asks for the TensorRT execution provider (its engine cache in the per-user
cache directory), then CUDA, then the CPU for any node neither can run. An onnxruntime-gpu
install whose CUDA/TensorRT libraries are missing still lists those providers and then quietly
makes a CPU-only session, so the providers of the session actually made are checked: a session
without any GPU provider is :class:`BackendUnavailable`, never a silent run on the CPU.
"""

import os
import warnings

from freespace_seg.perception.engines.base import (BackendUnavailable, check_shape,
                                                   DEFAULT_WORKSPACE, Engine, EngineError)
from freespace_seg.perception.engines.engine_cache import EngineCacheError, ort_tensorrt_cache_dir
import numpy as np

_ORT_TYPES = {'tensor(float)': 'float32', 'tensor(float16)': 'float16', 'tensor(uint8)': 'uint8'}

CPU_PROVIDER = 'CPUExecutionProvider'
CUDA_PROVIDER = 'CUDAExecutionProvider'
TENSORRT_PROVIDER = 'TensorrtExecutionProvider'
GPU_PROVIDERS = (TENSORRT_PROVIDER, CUDA_PROVIDER)


def gpu_provider_options(available, gpu_id=0, enable_fp16=True, enable_int8=False,
                         max_workspace_size=DEFAULT_WORKSPACE, dla_core=-1, cache_dir=None):
    """
    Return the ``providers`` list for an ``onnxruntime_gpu`` session, and notes.

    ``available`` is ``ort.get_available_providers()``. The list holds, in priority order,
    ``(name, options)`` for the TensorRT and CUDA providers this build offers, then the CPU
    provider. Raises :class:`BackendUnavailable` when the build offers neither GPU provider
    (offering one is necessary, not sufficient: see :func:`check_session_providers`).
    ``cache_dir`` (default: the per-user cache) holds TensorRT engines and timing caches.
    """
    available = list(available)
    if not any(p in available for p in GPU_PROVIDERS):
        raise BackendUnavailable(
            f'this onnxruntime build offers no GPU execution provider (it offers '
            f'{", ".join(available) or "none"}); install onnxruntime-gpu (x86) or the '
            'JetPack onnxruntime-gpu wheel (Jetson)')
    providers, notes = [], []
    if TENSORRT_PROVIDER in available:
        if cache_dir is None:
            cache_dir = ort_tensorrt_cache_dir()
        trt = {
            'device_id': int(gpu_id),
            'trt_max_workspace_size': int(max_workspace_size),
            'trt_fp16_enable': bool(enable_fp16),
            'trt_int8_enable': bool(enable_int8),
            'trt_engine_cache_enable': True,
            'trt_engine_cache_path': cache_dir,
            'trt_timing_cache_enable': True,
            'trt_timing_cache_path': cache_dir,
        }
        if dla_core >= 0:
            trt['trt_dla_enable'] = True
            trt['trt_dla_core'] = int(dla_core)
        providers.append((TENSORRT_PROVIDER, trt))
    else:
        notes.append(f'{TENSORRT_PROVIDER} is not offered by this onnxruntime build; '
                     f'using {CUDA_PROVIDER}')
    if CUDA_PROVIDER in available:
        providers.append((CUDA_PROVIDER, {
            'device_id': int(gpu_id),
            # Search convolution algorithms once per shape (the input shape is fixed).
            'cudnn_conv_algo_search': 'EXHAUSTIVE',
            # Grow the memory arena only by what is asked for: Jetson shares its RAM.
            'arena_extend_strategy': 'kSameAsRequested',
            'do_copy_in_default_stream': True,
        }))
    providers.append((CPU_PROVIDER, {}))
    return providers, notes


def check_session_providers(requested, actual):
    """
    Compare a session's providers with those requested; return notes, or raise.

    ``requested`` is a providers list (names or ``(name, options)``), ``actual`` is
    ``session.get_providers()``. When GPU providers were requested and none is in the session
    (onnxruntime dropped them, usually because CUDA or TensorRT libraries failed to load),
    raises :class:`BackendUnavailable`. A requested GPU provider that dropped out while another
    one runs gives a note.
    """
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in requested]
    wanted_gpu = [p for p in names if p in GPU_PROVIDERS]
    running_gpu = [p for p in actual if p in GPU_PROVIDERS]
    if wanted_gpu and not running_gpu:
        raise BackendUnavailable(
            f'onnxruntime was asked for {", ".join(wanted_gpu)} but the session runs only on '
            f'{", ".join(actual) or "nothing"}: the GPU provider could not load (missing or '
            'mismatched CUDA, cuDNN or TensorRT libraries, or no GPU); refusing to run on the '
            'CPU under backend onnxruntime_gpu')
    dropped = [p for p in wanted_gpu if p not in actual]
    if dropped:
        return [f'{", ".join(dropped)} could not load; running on {", ".join(actual)}']
    return []


def session_options(ort, num_threads=0, cpu=True, exact_int8=False):
    """
    Return the engine's ``ort.SessionOptions``: all graph optimizations, sequential.

    ``cpu``: also tune the session for a small CPU (the GPU backend keeps ONNX Runtime's
    defaults): spinning intra-op threads burn a core while they wait for work, and the
    node's receive, preprocessing and publishing threads need those cycles.

    ``exact_int8``: no graph optimizations, so that the QuantizeLinear / DequantizeLinear pairs
    of an INT8 (QDQ) model are not fused into integer kernels but run as written, around fp32
    operators: the arithmetic the quantized model defines, as an x86-64 CPU with VNNI (exact
    int32 sums) computes it up to float rounding, on any CPU. For scoring an INT8 copy on a
    CPU whose integer kernels saturate (docs/model/int8_cpus.md); several times slower.
    """
    opts = ort.SessionOptions()
    opts.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if exact_int8
                                     else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = int(num_threads)
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    if cpu:
        opts.add_session_config_entry('session.intra_op.allow_spinning', '0')
    return opts


class OnnxRuntimeEngine(Engine):
    """Runs an ONNX model with ONNX Runtime and checks it against its card at load time."""

    backend = 'onnxruntime'

    def __init__(self, card, num_threads=0, **options):
        super().__init__()
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise BackendUnavailable(f'onnxruntime is not importable ({e})') from e
        path = card.model_path
        if not os.path.isfile(path):
            raise EngineError(f'model file not found: {path}')
        providers = self._providers(ort, options)
        exact = bool(options.get('exact_int8', False))
        opts = session_options(ort, num_threads, cpu=self.backend == 'onnxruntime',
                               exact_int8=exact)
        with warnings.catch_warnings(record=True) as caught:
            # onnxruntime warns, then carries on, when a requested provider is missing.
            warnings.simplefilter('always')
            try:
                self._session = ort.InferenceSession(path, sess_options=opts,
                                                     providers=providers)
            except Exception as e:  # noqa: B902 - ORT raises its own exception types
                raise EngineError(f'cannot load ONNX model {path}: {e}') from e
        self.devices = self._session.get_providers()
        try:
            self.notes.extend(check_session_providers(providers, self.devices))
        except BackendUnavailable as e:
            self._session = None
            said = '; '.join(dict.fromkeys(str(w.message) for w in caught))
            raise BackendUnavailable(f'{e}' + (f' (onnxruntime said: {said})' if said else '')
                                     ) from e
        self._check(card)
        self._input = card.input_name
        self._outputs = [card.output_name]
        self._binding = self._bound_input = self._output_buffer = None
        if self.backend == 'onnxruntime':
            self._bind_output()

    def _bind_output(self):
        """
        Preallocate the output and bind it (IO binding) when its shape is static.

        :meth:`run_reusing_output` then runs without allocating: ONNX Runtime writes the
        output straight into this buffer, and reads the input in place.
        """
        out = next(o for o in self._session.get_outputs() if o.name == self._outputs[0])
        dtype = {'tensor(float)': np.float32, 'tensor(float16)': np.float16,
                 'tensor(uint8)': np.uint8, 'tensor(int64)': np.int64,
                 'tensor(int32)': np.int32}.get(out.type)
        if dtype is None or not all(isinstance(d, int) and d > 0 for d in out.shape):
            return
        self._output_buffer = np.empty(out.shape, dtype)
        self._binding = self._session.io_binding()
        self._binding.bind_output(out.name, 'cpu', 0, dtype, list(out.shape),
                                  self._output_buffer.ctypes.data)

    def _providers(self, ort, options):
        """Return the providers list for the session; the CPU backend ignores ``options``."""
        return [CPU_PROVIDER]

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
        check_shape('input', inp.name, inp.shape, card.input_shape)
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

    def run_reusing_output(self, tensor):
        """
        Like :meth:`run`, but return the output in a buffer that the next call overwrites.

        With IO binding (CPU backend, static output shape) nothing is allocated per call:
        the input is read in place (bound again only when another array comes) and the
        output is written into a preallocated buffer. Consume the result before the next
        call. Without binding this is :meth:`run`.
        """
        if self._binding is None or self._session is None:
            return self.run(tensor)
        if tensor is not self._bound_input:
            tensor = np.ascontiguousarray(tensor)
            self._binding.bind_cpu_input(self._input, tensor)
            self._bound_input = tensor
        self._session.run_with_iobinding(self._binding)
        return self._output_buffer

    def close(self):
        self._session = None
        self._binding = self._bound_input = self._output_buffer = None


class OnnxRuntimeGpuEngine(OnnxRuntimeEngine):
    """
    ONNX Runtime on the GPU: TensorRT provider, then CUDA, then CPU for leftover nodes.

    Takes the node's engine options ``gpu_id``, ``enable_fp16``, ``enable_int8``,
    ``max_workspace_size`` and ``dla_core``; ``engine_file_path``, ``force_engine_update``
    and ``cuda_graph`` apply to the ``tensorrt`` backend only and are ignored here.
    """

    backend = 'onnxruntime_gpu'

    def _providers(self, ort, options):
        try:
            providers, notes = gpu_provider_options(
                ort.get_available_providers(), gpu_id=options.get('gpu_id', 0),
                enable_fp16=options.get('enable_fp16', True),
                enable_int8=options.get('enable_int8', False),
                max_workspace_size=options.get('max_workspace_size', DEFAULT_WORKSPACE),
                dla_core=options.get('dla_core', -1))
        except EngineCacheError as e:
            raise EngineError(f'ONNX Runtime TensorRT cache: {e}') from e
        if TENSORRT_PROVIDER in (p[0] for p in providers):
            cache_dir = providers[0][1]['trt_engine_cache_path']
            try:
                os.makedirs(cache_dir, exist_ok=True)
            except OSError as e:
                raise EngineError(f'cannot create the TensorRT cache directory {cache_dir}: '
                                  f'{e}') from e
        self.notes.extend(notes)
        return providers


def available_providers():
    """List the execution providers this onnxruntime build offers (they may still fail)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())
