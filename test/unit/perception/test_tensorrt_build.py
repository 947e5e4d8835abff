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
What the TensorRT backend asks of TensorRT when it builds an engine, checked without TensorRT.

TensorRT and CUDA cannot be installed in this workplace, so the build logic
(:func:`freespace_seg.perception.engines.tensorrt.build_serialized_engine`) runs here against
:class:`StubTensorRT`: a small stand-in for the documented TensorRT Python API (``Builder``,
``OnnxParser``, ``IBuilderConfig``, ``IOptimizationProfile``, the enums) that records what it
is asked (network creation flags, builder flags, memory pool limits, DLA settings,
optimization profiles) and returns a fake serialized engine. Its ONNX parser reads the real
ONNX file with the onnx package, so the network the code inspects (its layers, including
Q/DQ layers, and its inputs with -1 for dynamic dimensions) comes from a real model, made
here or by the project's quantize tool. The stub is used only because TensorRT cannot run
here; ``test_gpu_engines.py`` runs the real thing where it can.

The stub is passed in where the code takes the module (``build_serialized_engine(trt, ...)``)
and, for :class:`TensorRTEngine`, put in place of the module's import helpers for one test.
"""

import dataclasses
import enum
import json
import os

from freespace_seg.perception.engines import tensorrt as trt_backend
from freespace_seg.perception.engines.base import DEFAULT_WORKSPACE, EngineError
from freespace_seg.perception.engines.engine_cache import EngineKey, file_sha256
from freespace_seg.perception.engines.tensorrt import build_serialized_engine, TensorRTEngine
from freespace_seg.perception.model_card import load_card
import numpy as np
import pytest
from support import write_tiny_model

onnx = pytest.importorskip('onnx', reason='the stub parser reads ONNX files with onnx')


# -- the TensorRT stub ----------------------------------------------------------------------


class _TrtEnum(enum.Enum):
    """A TensorRT enum: members compare only with their own type, and int() gives the value."""

    def __int__(self):
        return self.value


def _enum(name, members):
    return _TrtEnum(name, [(m, i) for i, m in enumerate(members)])


Severity = _enum('Severity', ['INTERNAL_ERROR', 'ERROR', 'WARNING', 'INFO', 'VERBOSE'])
MemoryPoolType = _enum('MemoryPoolType', ['WORKSPACE', 'DLA_MANAGED_SRAM', 'DLA_LOCAL_DRAM',
                                          'DLA_GLOBAL_DRAM', 'TACTIC_DRAM'])
DeviceType = _enum('DeviceType', ['GPU', 'DLA'])
LayerType = _enum('LayerType', ['CONVOLUTION', 'ACTIVATION', 'CONSTANT', 'QUANTIZE',
                                'DEQUANTIZE', 'ELEMENTWISE', 'RESIZE', 'SHUFFLE'])
ErrorCode = _enum('ErrorCode', ['SUCCESS', 'INTERNAL_ERROR', 'MEM_ALLOC_FAILED',
                                'MODEL_DESERIALIZE_FAILED', 'INVALID_VALUE', 'INVALID_GRAPH',
                                'INVALID_NODE', 'UNSUPPORTED_GRAPH', 'UNSUPPORTED_NODE'])
_BUILDER_FLAGS_10 = ['FP16', 'INT8', 'DEBUG', 'GPU_FALLBACK', 'REFIT', 'DISABLE_TIMING_CACHE',
                     'TF32', 'SPARSE_WEIGHTS', 'SAFETY_SCOPE', 'OBEY_PRECISION_CONSTRAINTS',
                     'PREFER_PRECISION_CONSTRAINTS', 'DIRECT_IO', 'REJECT_EMPTY_ALGORITHMS',
                     'VERSION_COMPATIBLE', 'EXCLUDE_LEAN_RUNTIME', 'FP8', 'BF16']
#: the weak-typing flags TensorRT 11 removed (strongly typed networks only)
_WEAK_TYPING_FLAGS = {'FP16', 'INT8', 'FP8', 'BF16', 'OBEY_PRECISION_CONSTRAINTS',
                      'PREFER_PRECISION_CONSTRAINTS', 'DIRECT_IO'}
#: ONNX op -> the layer type the ONNX parser makes for it
_ONNX_LAYERS = {'Conv': LayerType.CONVOLUTION, 'Relu': LayerType.ACTIVATION,
                'QuantizeLinear': LayerType.QUANTIZE, 'DequantizeLinear': LayerType.DEQUANTIZE,
                'Add': LayerType.ELEMENTWISE, 'Resize': LayerType.RESIZE,
                'Reshape': LayerType.SHUFFLE}


class StubLogger:
    """``trt.Logger(severity)``; ``trt.Logger.WARNING`` etc. are class attributes."""

    INTERNAL_ERROR, ERROR, WARNING, INFO, VERBOSE = Severity

    def __init__(self, min_severity=Severity.WARNING):
        self.min_severity = min_severity
        self.messages = []

    def log(self, severity, msg):
        self.messages.append((severity, msg))


class StubTensor:
    """``trt.ITensor``: ``name`` and ``shape`` (-1 marks a dynamic dimension)."""

    def __init__(self, name, shape):
        self.name, self.shape = name, tuple(shape)


class StubLayer:
    """``trt.ILayer``: ``name`` and ``type`` (a ``trt.LayerType``)."""

    def __init__(self, name, layer_type):
        self.name, self.type = name, layer_type


class StubNetwork:
    """``trt.INetworkDefinition``, filled by the stub ONNX parser."""

    def __init__(self, flags):
        self.flags = flags
        self.layers, self.inputs = [], []

    @property
    def num_layers(self):
        return len(self.layers)

    def get_layer(self, index):
        return self.layers[index]

    @property
    def num_inputs(self):
        return len(self.inputs)

    def get_input(self, index):
        return self.inputs[index]


class StubParserError:
    """``trt.ParserError``: ``code()``, ``desc()``, ``node()``; str() gives one line."""

    def __init__(self, code, desc, node=-1):
        self._code, self._desc, self._node = code, desc, node

    def code(self):
        return self._code

    def desc(self):
        return self._desc

    def node(self):
        return self._node

    def __str__(self):
        return f'In node {self._node}: {self._code.name}: {self._desc}'


class StubOnnxParser:
    """``trt.OnnxParser(network, logger)``: reads the real ONNX file into the network."""

    def __init__(self, trt, network, logger):
        self._trt, self._network, self._logger = trt, network, logger
        self._errors = []
        trt.parsers.append(self)

    @property
    def num_errors(self):
        return len(self._errors)

    def get_error(self, index):
        return self._errors[index]

    def clear_errors(self):
        self._errors = []

    def _fail(self, code, desc, node=-1):
        self._errors.append(StubParserError(code, desc, node))
        return False

    def parse_from_file(self, model):
        self.parsed_path = model
        if self._trt.parser_fails_silently:
            return False
        try:
            proto = onnx.load(model)
        except Exception as e:  # noqa: B902 - any unreadable file is a deserialize failure
            return self._fail(ErrorCode.MODEL_DESERIALIZE_FAILED,
                              f'Failed to parse the ONNX model ({type(e).__name__})')
        if self._trt.major < 10 and not self._network.flags & (
                1 << int(self._trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)):
            return self._fail(ErrorCode.INVALID_GRAPH, 'The ONNX parser only supports networks '
                              'with an explicit batch dimension')
        graph = proto.graph
        weights = {t.name for t in graph.initializer}
        for value in graph.input:
            if value.name in weights:
                continue
            dims = value.type.tensor_type.shape.dim
            self._network.inputs.append(StubTensor(
                value.name, [d.dim_value if d.HasField('dim_value') else -1 for d in dims]))
        for index, node in enumerate(graph.node):
            if node.op_type in self._trt.unsupported_ops or node.op_type not in _ONNX_LAYERS:
                return self._fail(ErrorCode.UNSUPPORTED_NODE,
                                  f'No importer registered for op: {node.op_type}', index)
            self._network.layers.append(StubLayer(node.name or f'node_{index}',
                                                  _ONNX_LAYERS[node.op_type]))
        return True


class StubProfile:
    """``trt.IOptimizationProfile``: records ``set_shape(name, min, opt, max)``."""

    def __init__(self):
        self.shapes = {}

    def set_shape(self, input, min, opt, max):   # noqa: A002 - TensorRT's parameter names
        self.shapes[input] = (tuple(min), tuple(opt), tuple(max))


class StubBuilderConfig:
    """``trt.IBuilderConfig``: records flags, memory pool limits, DLA settings, profiles."""

    def __init__(self, trt):
        self._trt = trt
        self.flags = []
        self.memory_pool_limits = {}
        self.profiles = []
        self.default_device_type = DeviceType.GPU
        self.DLA_core = -1

    def set_flag(self, flag):
        assert isinstance(flag, self._trt.BuilderFlag), flag
        self.flags.append(flag)

    def get_flag(self, flag):
        return flag in self.flags

    def set_memory_pool_limit(self, pool, pool_size):
        assert isinstance(pool, MemoryPoolType) and isinstance(pool_size, int), (pool, pool_size)
        self.memory_pool_limits[pool] = pool_size

    def add_optimization_profile(self, profile):
        self.profiles.append(profile)
        return len(self.profiles) - 1


class StubBuilder:
    """``trt.Builder(logger)``: makes networks, configs, profiles; 'builds' a fake engine."""

    def __init__(self, trt, logger):
        self._trt, self.logger = trt, logger
        self.networks, self.configs = [], []
        self.built = None
        trt.builders.append(self)

    @property
    def num_DLA_cores(self):
        return self._trt.dla_cores

    def create_network(self, flags=0):
        network = StubNetwork(flags)
        self.networks.append(network)
        return network

    def create_builder_config(self):
        config = StubBuilderConfig(self._trt)
        self.configs.append(config)
        return config

    def create_optimization_profile(self):
        return StubProfile()

    def build_serialized_network(self, network, config):
        self.built = (network, config)
        if self._trt.build_fails:
            return None
        dynamic = [t.name for t in network.inputs if any(d < 0 for d in t.shape)]
        if dynamic and not config.profiles:
            # What TensorRT does: an error message, and no engine.
            self.logger.log(Severity.ERROR, f'Network has dynamic or shape inputs {dynamic}, '
                                            'but no optimization profile has been defined.')
            return None
        return b'stub engine: ' + json.dumps(
            {'flags': sorted(f.name for f in config.flags),
             'device': config.default_device_type.name, 'dla_core': config.DLA_core}).encode()


class StubTensorRT:
    """
    The part of the ``tensorrt`` module the backend uses, for one TensorRT version.

    ``version`` picks the API generation: 8.x has the explicit-batch creation flag (and its
    ONNX parser refuses implicit-batch networks), 10.x deprecates that flag and adds
    STRONGLY_TYPED, 11.x has no weak-typing builder flags (FP16, INT8, ...).
    """

    Logger = StubLogger
    MemoryPoolType = MemoryPoolType
    DeviceType = DeviceType
    LayerType = LayerType
    ErrorCode = ErrorCode

    def __init__(self, version='10.3.0', dla_cores=0, build_fails=False, unsupported_ops=(),
                 parser_fails_silently=False):
        self.__version__ = version
        self.major = int(version.split('.')[0])
        self.dla_cores = dla_cores
        self.build_fails = build_fails
        self.unsupported_ops = set(unsupported_ops)
        self.parser_fails_silently = parser_fails_silently
        self.builders, self.parsers = [], []
        if self.major < 10:
            creation = ['EXPLICIT_BATCH', 'EXPLICIT_PRECISION']
        elif self.major == 10:
            creation = ['EXPLICIT_BATCH', 'STRONGLY_TYPED']     # EXPLICIT_BATCH: deprecated
        else:
            creation = ['STRONGLY_TYPED']
        self.NetworkDefinitionCreationFlag = _enum('NetworkDefinitionCreationFlag', creation)
        flags = _BUILDER_FLAGS_10 if self.major <= 10 else [
            f for f in _BUILDER_FLAGS_10 if f not in _WEAK_TYPING_FLAGS]
        self.BuilderFlag = _enum('BuilderFlag', flags)

    def Builder(self, logger):                     # noqa: N802 - TensorRT's class name
        return StubBuilder(self, logger)

    def OnnxParser(self, network, logger):         # noqa: N802 - TensorRT's class name
        return StubOnnxParser(self, network, logger)

    # What build_serialized_engine asked for, from the one builder it made.

    @property
    def builder(self):
        assert len(self.builders) == 1, self.builders
        return self.builders[0]

    @property
    def network(self):
        assert len(self.builder.networks) == 1
        return self.builder.networks[0]

    @property
    def config(self):
        assert len(self.builder.configs) == 1
        return self.builder.configs[0]


# -- models ----------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    """Write the tiny fp32 model, a QDQ copy (the quantize tool) and a dynamic-batch copy."""
    pytest.importorskip('onnxruntime.quantization', reason='the QDQ model needs onnxruntime')
    from freespace_seg.training.quantize import count_qdq_nodes, quantize_model

    directory = tmp_path_factory.mktemp('trt_models')
    fp32 = write_tiny_model(directory)
    rng = np.random.default_rng(0)
    tensors = [rng.standard_normal((1, 3, 48, 64)).astype(np.float32) for _ in range(2)]
    qdq = str(directory / 'tiny_int8.onnx')
    quantize_model(fp32, qdq, tensors, 'input', pre_process=False)
    assert all(count_qdq_nodes(qdq))
    model = onnx.load(fp32)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = 'batch'
    dynamic = str(directory / 'tiny_dynamic.onnx')
    onnx.save(model, dynamic)
    garbage = str(directory / 'garbage.onnx')
    with open(garbage, 'wb') as f:
        f.write(b'this is not a protobuf' * 10)
    return {'fp32': fp32, 'qdq': qdq, 'dynamic': dynamic, 'garbage': garbage,
            'card': load_card(fp32)}


def build(models, trt=None, model='fp32', fp16=False, int8=False, workspace=DEFAULT_WORKSPACE,
          dla_core=-1, card=None):
    """Run build_serialized_engine against a stub; return (stub, serialized, notes)."""
    trt = trt or StubTensorRT()
    notes = []
    serialized = build_serialized_engine(trt, StubLogger(), models[model], card or models['card'],
                                         fp16, int8, workspace, dla_core, notes)
    return trt, serialized, notes


# -- precision ------------------------------------------------------------------------------


def test_fp16_flag_is_set_exactly_when_requested(models):
    trt, serialized, notes = build(models, fp16=True)
    assert trt.config.flags == [trt.BuilderFlag.FP16]
    assert trt.builder.built == (trt.network, trt.config)
    assert serialized.startswith(b'stub engine: ') and notes == []
    trt, _, notes = build(models, fp16=False)
    assert trt.config.flags == [] and notes == []


def test_int8_on_a_model_without_qdq_nodes_is_a_clear_error(models):
    trt = StubTensorRT()
    with pytest.raises(EngineError, match=r'enable_int8 needs a model quantized with '
                                          r'QuantizeLinear/DequantizeLinear \(QDQ\)') as info:
        build(models, trt, int8=True, fp16=True)
    assert 'calibration is not supported' in str(info.value)
    assert trt.builder.built is None                        # nothing was built


@pytest.mark.parametrize('int8', [True, False])
def test_a_qdq_model_is_built_with_int8_and_says_so_when_not_asked(models, int8):
    trt, _, notes = build(models, model='qdq', fp16=True, int8=int8)
    assert {LayerType.QUANTIZE, LayerType.DEQUANTIZE} <= {
        layer.type for layer in trt.network.layers}        # the real QDQ model's layers
    assert set(trt.config.flags) == {trt.BuilderFlag.FP16, trt.BuilderFlag.INT8}
    if int8:
        assert notes == []
    else:
        assert len(notes) == 1
        assert 'Q/DQ nodes' in notes[0] and 'INT8 enabled' in notes[0]
        assert 'enable_int8 is false' in notes[0]


def test_tensorrt_11_has_no_weak_typing_flags_and_the_types_in_the_model_decide(models):
    trt, _, notes = build(models, StubTensorRT('11.0.0'), fp16=True)
    assert not hasattr(trt.BuilderFlag, 'FP16') and trt.config.flags == []
    assert len(notes) == 1 and 'TensorRT 11.0.0 builds strongly typed networks only' in notes[0]
    assert 'enable_fp16 has no effect' in notes[0]
    trt, _, notes = build(models, StubTensorRT('11.0.0'), model='qdq', int8=True)
    assert trt.config.flags == [] and notes == []
    with pytest.raises(EngineError, match='enable_int8 needs a model quantized'):
        build(models, StubTensorRT('11.0.0'), int8=True)


# -- workspace ----------------------------------------------------------------------------------


@pytest.mark.parametrize('workspace', [DEFAULT_WORKSPACE, 1 << 30, (3 << 20) + 5])
def test_the_workspace_limit_is_the_configured_bytes(models, workspace):
    trt, _, _ = build(models, workspace=workspace)
    assert trt.config.memory_pool_limits == {MemoryPoolType.WORKSPACE: workspace}


# -- DLA ---------------------------------------------------------------------------------------


@pytest.mark.parametrize('dla_core, cores', [(2, 2), (0, 0), (5, 2)])
def test_a_dla_core_the_device_does_not_have_is_a_clear_error(models, dla_core, cores):
    trt = StubTensorRT(dla_cores=cores)
    with pytest.raises(EngineError, match=f'dla_core {dla_core} was requested but this device '
                                          f'has {cores} DLA core'):
        build(models, trt, fp16=True, dla_core=dla_core)
    assert trt.builder.built is None


def test_dla_without_fp16_or_int8_is_a_clear_error(models):
    trt = StubTensorRT(dla_cores=2)
    with pytest.raises(EngineError, match='DLA runs FP16 or INT8 only'):
        build(models, trt, fp16=False, dla_core=1)
    assert trt.builder.built is None


@pytest.mark.parametrize('model, fp16, flags', [
    ('fp32', True, {'FP16', 'GPU_FALLBACK'}),
    ('qdq', False, {'INT8', 'GPU_FALLBACK'}),          # a QDQ model runs INT8 on the DLA
])
def test_a_valid_dla_core_targets_the_dla_with_gpu_fallback(models, model, fp16, flags):
    trt, serialized, _ = build(models, StubTensorRT(dla_cores=2), model=model, fp16=fp16,
                               dla_core=1)
    config = trt.config
    assert config.default_device_type is DeviceType.DLA
    assert config.DLA_core == 1 and type(config.DLA_core) is int
    assert {f.name for f in config.flags} == flags
    assert json.loads(serialized[len(b'stub engine: '):])['device'] == 'DLA'


def test_the_gpu_is_the_default_device(models):
    trt, _, _ = build(models, StubTensorRT(dla_cores=2), fp16=True, dla_core=-1)
    assert trt.config.default_device_type is DeviceType.GPU and trt.config.DLA_core == -1
    assert trt.BuilderFlag.GPU_FALLBACK not in trt.config.flags


# -- input shapes --------------------------------------------------------------------------------


def test_a_dynamic_input_gets_one_profile_fixed_to_the_card_shape(models):
    trt, serialized, _ = build(models, model='dynamic')
    assert trt.network.get_input(0).shape == (-1, 3, 48, 64)     # read from the real model
    assert len(trt.config.profiles) == 1
    fixed = (1, 3, 48, 64)
    assert models['card'].input_shape == fixed
    assert trt.config.profiles[0].shapes == {'input': (fixed, fixed, fixed)}
    assert serialized is not None


def test_a_static_input_needs_no_profile(models):
    trt, _, _ = build(models)
    assert trt.network.get_input(0).shape == (1, 3, 48, 64) and trt.config.profiles == []


def test_a_dynamic_input_the_card_cannot_fix_is_a_clear_error(models):
    card = dataclasses.replace(models['card'], input_name='image')
    with pytest.raises(EngineError, match=r"model input 'input' has a dynamic shape "
                                          r'\[-1, 3, 48, 64\] that the card cannot fix'):
        build(models, model='dynamic', card=card)
    card = dataclasses.replace(models['card'], input_shape=(3, 48, 64))
    with pytest.raises(EngineError, match='that the card cannot fix'):
        build(models, model='dynamic', card=card)


# -- network creation flags by TensorRT version -------------------------------------------------


def test_tensorrt_8_asks_for_an_explicit_batch_network(models):
    trt, serialized, _ = build(models, StubTensorRT('8.6.1'), fp16=True)
    explicit = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    assert trt.network.flags == explicit
    assert serialized is not None and trt.config.flags == [trt.BuilderFlag.FP16]


@pytest.mark.parametrize('version', ['10.0.1', '10.3.0', '10.13.2', '11.0.0'])
def test_tensorrt_10_and_later_do_not_use_the_deprecated_explicit_batch_flag(models, version):
    trt, serialized, _ = build(models, StubTensorRT(version))
    assert trt.network.flags == 0 and serialized is not None


# -- failures -------------------------------------------------------------------------------


def test_a_parser_error_is_a_clear_error_naming_the_parser_messages(models):
    trt = StubTensorRT(unsupported_ops={'Conv'})
    with pytest.raises(EngineError) as info:
        build(models, trt)
    message = str(info.value)
    assert message.startswith(f'TensorRT 10.3.0 cannot parse {models["fp32"]}: ')
    assert 'In node 0: UNSUPPORTED_NODE: No importer registered for op: Conv' in message
    assert trt.builder.configs == []                       # stopped before configuring

    with pytest.raises(EngineError) as info:
        build(models, model='garbage')
    assert 'MODEL_DESERIALIZE_FAILED: Failed to parse the ONNX model' in str(info.value)
    assert models['garbage'] in str(info.value)

    with pytest.raises(EngineError, match='no details given'):
        build(models, StubTensorRT(parser_fails_silently=True))


def test_several_parser_errors_are_all_named(models, monkeypatch):
    errors = [StubParserError(ErrorCode.INVALID_NODE, 'first', 0),
              StubParserError(ErrorCode.UNSUPPORTED_NODE, 'second', 3)]
    monkeypatch.setattr(StubOnnxParser, 'parse_from_file', lambda self, model: False)
    monkeypatch.setattr(StubOnnxParser, 'num_errors', len(errors))
    monkeypatch.setattr(StubOnnxParser, 'get_error', lambda self, i: errors[i])
    with pytest.raises(EngineError, match='In node 0: INVALID_NODE: first; '
                                          'In node 3: UNSUPPORTED_NODE: second$'):
        build(models)


def test_a_failed_build_is_a_clear_error(models):
    trt = StubTensorRT(build_fails=True)
    with pytest.raises(EngineError, match=f'TensorRT could not build an engine from '
                                          f'{models["fp32"]}; the TensorRT messages above'):
        build(models, trt, fp16=True)
    assert trt.builder.built == (trt.network, trt.config)


# -- TensorRTEngine: what the engine cache key records --------------------------------------


class StubCudart:
    """The cuda-python runtime calls TensorRTEngine makes before it loads an engine."""

    class cudaError_t(enum.IntEnum):                  # noqa: N801 - cuda-python's name
        cudaSuccess = 0
        cudaErrorInvalidDevice = 101

    class _Prop:
        name = b'Orin\x00\x00\x00'
        major, minor = 8, 7

    def cudaGetDeviceCount(self):                     # noqa: N802 - cuda-python's names
        return (self.cudaError_t.cudaSuccess, 1)

    def cudaSetDevice(self, device):                  # noqa: N802
        return (self.cudaError_t.cudaSuccess,)

    def cudaGetDeviceProperties(self, device):        # noqa: N802
        return (self.cudaError_t.cudaSuccess, self._Prop())

    def cudaGetErrorName(self, error):                # noqa: N802
        return (self.cudaError_t.cudaSuccess, error.name.encode())


class StubRuntime:
    """``trt.Runtime(logger)`` that cannot deserialize (the stub's engines cannot run)."""

    def __init__(self, logger):
        self.DLA_core = -1

    def deserialize_cuda_engine(self, data):
        return None


def test_the_engine_cache_key_records_the_tensorrt_version_and_compute_capability(
        models, tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    engine_dirs = tmp_path / 'cache' / 'freespace_seg' / 'engines'
    for version in ('10.3.0', '10.7.0'):
        trt = StubTensorRT(version)
        trt.Runtime = StubRuntime
        monkeypatch.setattr(trt_backend, '_import_tensorrt', lambda: trt)
        monkeypatch.setattr(trt_backend, '_import_cudart', StubCudart)
        lines = []
        with pytest.raises(EngineError, match=f'TensorRT {version} cannot deserialize'):
            TensorRTEngine(models['card'], enable_fp16=True, max_workspace_size=1 << 30,
                           log=lines.append)
        assert trt.config.flags == [trt.BuilderFlag.FP16]          # it was built
        [name] = [n for n in os.listdir(engine_dirs) if f'trt{version}' in n
                  and n.endswith('.engine')]
        assert name == (f'tiny-{file_sha256(models["fp32"])[:12]}-trt{version}-orin-sm87-'
                        'fp16-ws1024m.engine')
        with open(engine_dirs / (name + '.json')) as f:
            key = EngineKey.from_dict(json.load(f)['key'])
        assert key.tensorrt_version == version and key.compute_capability == '8.7'
        assert key.gpu_name == 'Orin' and key.input_shape == (1, 3, 48, 64)
        assert key.fp16 and not key.int8 and key.max_workspace_size == 1 << 30
        assert 'building TensorRT engine' in lines[0]
