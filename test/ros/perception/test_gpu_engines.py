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
GPU backends: selection and fallback, the engine cache, provider options, build-engine.

Everything that can run without a GPU runs here: the engine cache with a fake build function
(real files, real locks, real processes), ONNX Runtime provider lists and the silent-CPU
fallback check against the real CPU onnxruntime, the engine/card I/O check, and the
build-engine command without TensorRT. Tests that need TensorRT and CUDA are marked ``gpu``
and skip, saying why, where those cannot be imported.
"""

import dataclasses
import glob
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

from freespace_seg import cli
from freespace_seg.nodes.params import ENGINE_OPTION_PARAMS, SEGMENTATION_PARAMS, spec_by_name
from freespace_seg.perception.engines import BACKENDS, create_engine
from freespace_seg.perception.engines.base import AUTO_ORDER, BackendUnavailable, DEFAULT_WORKSPACE
from freespace_seg.perception.engines.engine_cache import (atomic_write, default_cache_root,
                                                           default_engine_dir,
                                                           default_engine_path, EngineCache,
                                                           EngineCacheError, EngineKey,
                                                           file_sha256, temp_prefix)
from freespace_seg.perception.engines.onnxruntime import (check_session_providers,
                                                          gpu_provider_options, GPU_PROVIDERS)
from freespace_seg.perception.engines.tensorrt import (check_io_against_card, format_io,
                                                       host_array, TensorInfo,
                                                       tensorrt_unavailable_reason)
from freespace_seg.perception.model_card import load_card
from freespace_seg.tools.build_engine import latency_summary, parse_size
import numpy as np
import onnxruntime as ort
import pytest
from support import REPO, write_tiny_model

TRT_REASON = tensorrt_unavailable_reason()
ORT_HAS_GPU = any(p in ort.get_available_providers() for p in GPU_PROVIDERS)
needs_no_gpu_stack = pytest.mark.skipif(
    TRT_REASON is None or ORT_HAS_GPU,
    reason='TensorRT or an onnxruntime GPU provider is installed here; this checks the '
           'fallback on a machine without them')
cpu_onnxruntime_only = pytest.mark.skipif(
    ORT_HAS_GPU, reason='this onnxruntime build has GPU providers; the check needs the CPU build')
needs_tensorrt = pytest.mark.skipif(TRT_REASON is not None,
                                    reason=f'needs TensorRT and CUDA: {TRT_REASON}')

ALL_OPTIONS = {s.name: s.default for s in SEGMENTATION_PARAMS if s.name in ENGINE_OPTION_PARAMS}

KEY = EngineKey(model_sha256='ab' * 32, tensorrt_version='10.3.0', gpu_name='Orin',
                compute_capability='8.7', fp16=True, int8=False,
                max_workspace_size=DEFAULT_WORKSPACE, dla_core=-1, input_shape=(1, 3, 48, 64))


# -- parameters and backend names -------------------------------------------------------------

def test_backend_names_order_and_engine_parameters():
    assert AUTO_ORDER == ('tensorrt', 'onnxruntime_gpu', 'onnxruntime')
    assert BACKENDS == ('auto',) + AUTO_ORDER + ('triton',)
    assert spec_by_name(SEGMENTATION_PARAMS, 'backend').choices == BACKENDS
    assert set(ENGINE_OPTION_PARAMS) == {
        'engine_file_path', 'force_engine_update', 'enable_fp16', 'enable_int8',
        'max_workspace_size', 'dla_core', 'gpu_id', 'cuda_graph',
        'triton_url', 'triton_model_name', 'triton_model_version', 'triton_timeout',
        'triton_shared_memory'}
    names = [s.name for s in SEGMENTATION_PARAMS]
    start = names.index('backend') + 1
    assert names[start:start + len(ENGINE_OPTION_PARAMS)] == list(ENGINE_OPTION_PARAMS)
    for name in ENGINE_OPTION_PARAMS:
        assert spec_by_name(SEGMENTATION_PARAMS, name).read_only, name
    assert spec_by_name(SEGMENTATION_PARAMS, 'max_workspace_size').default == DEFAULT_WORKSPACE


# -- selection and fallback on this (CPU-only) machine ----------------------------------------

@needs_no_gpu_stack
def test_auto_falls_back_to_the_cpu_and_says_why_each_gpu_backend_was_skipped(tiny_model):
    engine, notes = create_engine(load_card(tiny_model), 'auto', 1, **ALL_OPTIONS)
    assert engine.backend == 'onnxruntime'
    assert notes[0].startswith('tensorrt: skipped:') and 'tensorrt' in notes[0][18:]
    assert notes[1].startswith('onnxruntime_gpu: skipped:')
    assert 'no GPU execution provider' in notes[1] and 'CPUExecutionProvider' in notes[1]
    assert notes[2].startswith('onnxruntime: chosen: onnxruntime on CPUExecutionProvider')
    assert len(notes) == 3
    engine.close()


@needs_no_gpu_stack
@pytest.mark.parametrize('backend, fragment', [
    ('tensorrt', 'not importable'),
    ('onnxruntime_gpu', 'no GPU execution provider')])
def test_an_unavailable_gpu_backend_named_explicitly_is_an_error(tiny_model, backend, fragment):
    with pytest.raises(BackendUnavailable, match=f"'{backend}' was requested") as info:
        create_engine(load_card(tiny_model), backend, **ALL_OPTIONS)
    assert fragment in str(info.value)


@cpu_onnxruntime_only
def test_cpu_onnxruntime_silently_drops_a_requested_cuda_provider(tiny_model):
    """What ORT 1.32 (CPU build) really does: it warns and makes a CPU-only session."""
    with pytest.warns(UserWarning, match='CUDAExecutionProvider'):
        session = ort.InferenceSession(tiny_model, providers=['CUDAExecutionProvider',
                                                              'CPUExecutionProvider'])
    assert session.get_providers() == ['CPUExecutionProvider']
    with pytest.raises(BackendUnavailable, match='runs only on CPUExecutionProvider'):
        check_session_providers(['CUDAExecutionProvider', 'CPUExecutionProvider'],
                                session.get_providers())


@cpu_onnxruntime_only
def test_listed_but_broken_gpu_providers_never_run_on_the_cpu_silently(tiny_model,
                                                                       monkeypatch):
    """
    Simulate onnxruntime-gpu without working CUDA libraries: providers listed, CPU session.

    Only the listing is faked; the session really is made by the CPU onnxruntime, which
    drops the GPU providers exactly as the GPU build does when their libraries fail to load.
    """
    listed = ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']
    monkeypatch.setattr(ort, 'get_available_providers', lambda: list(listed))
    monkeypatch.setenv('XDG_CACHE_HOME', os.path.join(os.path.dirname(tiny_model), 'cache'))
    card = load_card(tiny_model)
    with pytest.raises(BackendUnavailable, match="'onnxruntime_gpu' was requested") as info:
        create_engine(card, 'onnxruntime_gpu')
    message = str(info.value)
    assert 'runs only on CPUExecutionProvider' in message
    assert 'refusing to run on the CPU' in message
    assert 'onnxruntime said' in message
    if TRT_REASON is not None:
        engine, notes = create_engine(card, 'auto', 1)
        assert engine.backend == 'onnxruntime'
        assert notes[1].startswith('onnxruntime_gpu: skipped:') and 'CPU' in notes[1]
        engine.close()


@pytest.mark.parametrize('requested, actual, outcome', [
    (['CUDAExecutionProvider', 'CPUExecutionProvider'], ['CUDAExecutionProvider',
                                                         'CPUExecutionProvider'], []),
    ([('TensorrtExecutionProvider', {}), ('CUDAExecutionProvider', {}), 'CPUExecutionProvider'],
     ['CUDAExecutionProvider', 'CPUExecutionProvider'], ['TensorrtExecutionProvider']),
    ([('TensorrtExecutionProvider', {}), 'CPUExecutionProvider'], ['CPUExecutionProvider'],
     BackendUnavailable),
    (['CUDAExecutionProvider'], [], BackendUnavailable),
    (['CPUExecutionProvider'], ['CPUExecutionProvider'], []),
])
def test_session_provider_check(requested, actual, outcome):
    if outcome is BackendUnavailable:
        with pytest.raises(BackendUnavailable, match='refusing to run on the CPU'):
            check_session_providers(requested, actual)
    else:
        notes = check_session_providers(requested, actual)
        assert len(notes) == len(outcome)
        for name, note in zip(outcome, notes):
            assert name in note and 'could not load' in note


# -- ONNX Runtime provider options ---------------------------------------------------------------

def test_gpu_provider_options_from_node_parameters(tmp_path):
    available = ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']
    providers, notes = gpu_provider_options(
        available, gpu_id=1, enable_fp16=False, enable_int8=True, max_workspace_size=1 << 30,
        dla_core=-1, cache_dir=str(tmp_path))
    assert [p[0] for p in providers] == available and notes == []
    trt = providers[0][1]
    assert trt == {
        'device_id': 1, 'trt_max_workspace_size': 1 << 30, 'trt_fp16_enable': False,
        'trt_int8_enable': True, 'trt_engine_cache_enable': True,
        'trt_engine_cache_path': str(tmp_path), 'trt_timing_cache_enable': True,
        'trt_timing_cache_path': str(tmp_path)}
    cuda = providers[1][1]
    assert cuda['device_id'] == 1 and cuda['cudnn_conv_algo_search'] == 'EXHAUSTIVE'
    assert cuda['arena_extend_strategy'] == 'kSameAsRequested'
    assert providers[2] == ('CPUExecutionProvider', {})

    providers, _ = gpu_provider_options(available, dla_core=1, cache_dir=str(tmp_path))
    assert providers[0][1]['trt_dla_enable'] is True and providers[0][1]['trt_dla_core'] == 1
    assert 'trt_dla_enable' not in gpu_provider_options(available, cache_dir='c')[0][0][1]


def test_gpu_provider_options_default_cache_and_partial_builds(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    available = ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']
    providers, _ = gpu_provider_options(available)
    assert providers[0][1]['trt_engine_cache_path'] == os.path.join(
        str(tmp_path), 'freespace_seg', 'onnxruntime_tensorrt')
    providers, notes = gpu_provider_options(['CUDAExecutionProvider', 'CPUExecutionProvider'])
    assert [p[0] for p in providers] == ['CUDAExecutionProvider', 'CPUExecutionProvider']
    assert 'TensorrtExecutionProvider is not offered' in notes[0]
    with pytest.raises(BackendUnavailable, match='offers AzureExecutionProvider, CPU'):
        gpu_provider_options(['AzureExecutionProvider', 'CPUExecutionProvider'])


# -- engine cache: location and key -------------------------------------------------------------

def test_cache_dir_honours_xdg_cache_home_and_never_uses_tmp():
    assert default_engine_dir({'XDG_CACHE_HOME': '/data/cache', 'HOME': '/home/r'}) == \
        '/data/cache/freespace_seg/engines'
    assert default_engine_dir({'HOME': '/home/r'}) == '/home/r/.cache/freespace_seg/engines'
    # The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored.
    assert default_engine_dir({'XDG_CACHE_HOME': 'rel', 'HOME': '/home/r'}) == \
        '/home/r/.cache/freespace_seg/engines'
    with pytest.raises(EngineCacheError, match='engine_file_path'):
        default_cache_root({})
    path = default_engine_path(KEY, '/models/freespace_unet.onnx', {'HOME': '/home/r'})
    assert path.startswith('/home/r/.cache/freespace_seg/engines/freespace_unet-abababababab-')
    assert not default_engine_dir().startswith('/tmp/')


def test_engine_key_names_the_file_and_changes_with_each_input(tmp_path):
    name = KEY.file_name('freespace_unet')
    assert name == 'freespace_unet-abababababab-trt10.3.0-orin-sm87-fp16-ws512m.engine'
    assert EngineKey(**KEY.as_dict() | {'input_shape': (1, 3, 48, 64)}) == KEY
    assert KEY.file_name('freespace_unet') == name         # stable
    assert EngineKey.from_dict(json.loads(json.dumps(KEY.as_dict()))) == KEY
    changes = {'model_sha256': 'cd' * 32, 'tensorrt_version': '10.7.0',
               'gpu_name': 'NVIDIA GeForce RTX 4090', 'compute_capability': '8.9',
               'fp16': False, 'int8': True, 'max_workspace_size': 1 << 30, 'dla_core': 0,
               'input_shape': (1, 3, 96, 128), 'cache_format': 99}
    in_file_name = {'model_sha256', 'tensorrt_version', 'gpu_name', 'compute_capability',
                    'fp16', 'int8', 'max_workspace_size', 'dla_core'}
    for field, value in changes.items():
        other = dataclasses.replace(KEY, **{field: value})
        assert other != KEY, field
        assert other.differences(KEY) == [f'{field}: {value!r} -> {getattr(KEY, field)!r}']
        if field in in_file_name:
            assert other.file_name('freespace_unet') != name, field
    assert dataclasses.replace(KEY, fp16=False).precision == 'fp32'
    assert dataclasses.replace(KEY, int8=True).precision == 'fp16-int8'
    model = tmp_path / 'm.onnx'
    model.write_bytes(b'one')
    first = file_sha256(str(model))
    assert first == hashlib.sha256(b'one').hexdigest()
    model.write_bytes(b'two')
    assert file_sha256(str(model)) != first


# -- engine cache: staleness ---------------------------------------------------------------------

class FakeBuilder:
    """A build function that counts its calls and returns distinct 'engines'."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return f'engine #{self.calls} '.encode() * 100


def load_bytes(data):
    return bytes(data)


def test_cache_builds_once_then_loads(tmp_path):
    build, path = FakeBuilder(), str(tmp_path / 'sub' / 'model.engine')
    first = EngineCache(path, KEY).get_or_build(build, load_bytes)
    assert first.built and build.calls == 1 and first.engine.startswith(b'engine #1')
    assert 'there is no engine' in first.reason and 'built' in first.notes[0]
    meta = json.loads(open(path + '.json').read())
    assert meta['key'] == KEY.as_dict() and meta['engine_size'] == len(first.engine)
    second = EngineCache(path, KEY).get_or_build(build, load_bytes)
    assert not second.built and build.calls == 1 and second.engine == first.engine
    assert second.notes == [f'engine cache: loaded {path}']


def _stale_case(path, case):
    if case == 'truncated':
        data = open(path, 'rb').read()
        open(path, 'wb').write(data[:len(data) // 2])
    elif case == 'same size, other bytes':
        data = open(path, 'rb').read()
        open(path, 'wb').write(b'X' * len(data))
    elif case == 'empty':
        open(path, 'wb').close()
    elif case == 'key file corrupt':
        open(path + '.json', 'w').write('{"key": ')
    elif case == 'key file missing':
        os.remove(path + '.json')
    elif case == 'engine missing':
        os.remove(path)


@pytest.mark.parametrize('case, reason', [
    ('truncated', 'truncated'),
    ('same size, other bytes', 'sha256 differs'),
    ('empty', 'empty'),
    ('key file corrupt', 'key file is unreadable'),
    ('key file missing', 'no key file'),
    ('engine missing', 'no engine'),
])
def test_a_damaged_cache_entry_is_rebuilt_with_the_reason(tmp_path, case, reason):
    build, path, lines = FakeBuilder(), str(tmp_path / 'm.engine'), []
    EngineCache(path, KEY).get_or_build(build, load_bytes)
    _stale_case(path, case)
    result = EngineCache(path, KEY, log=lines.append).get_or_build(build, load_bytes)
    assert result.built and build.calls == 2, case
    assert reason in result.reason and reason in lines[-1], (case, result.reason)
    assert result.engine.startswith(b'engine #2')
    assert EngineCache(path, KEY).check()[0] == result.engine


def test_a_key_change_rebuilds_and_names_what_changed(tmp_path):
    build, path = FakeBuilder(), str(tmp_path / 'm.engine')
    EngineCache(path, KEY).get_or_build(build, load_bytes)
    newer = dataclasses.replace(KEY, tensorrt_version='10.7.0', fp16=False)
    result = EngineCache(path, newer).get_or_build(build, load_bytes)
    assert result.built and build.calls == 2
    assert "tensorrt_version: '10.3.0' -> '10.7.0'" in result.reason
    assert 'fp16: True -> False' in result.reason


def test_an_engine_that_fails_to_deserialize_is_rebuilt(tmp_path):
    build, path = FakeBuilder(), str(tmp_path / 'm.engine')
    EngineCache(path, KEY).get_or_build(build, load_bytes)

    def load(data):
        if bytes(data).startswith(b'engine #1'):
            raise RuntimeError('deserialize_cuda_engine returned None')
        return bytes(data)

    result = EngineCache(path, KEY).get_or_build(build, load)
    assert result.built and 'could not be loaded (deserialize_cuda_engine' in result.reason
    with pytest.raises(RuntimeError, match='still bad'):
        EngineCache(path, KEY).get_or_build(build, lambda d: (_ for _ in ()).throw(
            RuntimeError('still bad')))


def test_force_engine_update_rebuilds_a_valid_engine(tmp_path):
    build, path = FakeBuilder(), str(tmp_path / 'm.engine')
    EngineCache(path, KEY).get_or_build(build, load_bytes)
    result = EngineCache(path, KEY).get_or_build(build, load_bytes, force=True)
    assert result.built and result.reason == 'force_engine_update is set' and build.calls == 2


def test_an_engine_without_key_file_is_trusted_only_at_a_user_given_path(tmp_path):
    path = str(tmp_path / 'trtexec.plan')
    open(path, 'wb').write(b'built by trtexec')
    build = FakeBuilder()
    used = EngineCache(path, KEY, trust_unkeyed=True).get_or_build(build, load_bytes)
    assert not used.built and not used.verified and used.engine == b'built by trtexec'
    assert 'without a key file' in used.notes[0] and build.calls == 0
    rebuilt = EngineCache(path, KEY).get_or_build(build, load_bytes)
    assert rebuilt.built and 'no key file' in rebuilt.reason


def test_build_errors_propagate_and_leave_no_files(tmp_path):
    path = str(tmp_path / 'm.engine')

    def failing_build():
        raise RuntimeError('parser: unsupported operator')

    with pytest.raises(RuntimeError, match='unsupported operator'):
        EngineCache(path, KEY).get_or_build(failing_build, load_bytes)
    assert sorted(os.listdir(tmp_path)) == ['m.engine.lock']


def test_an_unwritable_cache_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    with pytest.raises(EngineCacheError, match='cannot create the engine directory'):
        EngineCache(str(blocker / 'engines' / 'm.engine'), KEY).get_or_build(FakeBuilder(),
                                                                             load_bytes)


# -- engine cache: atomic writes and concurrent builders ----------------------------------------

def test_readers_never_see_a_partial_file(tmp_path):
    path = str(tmp_path / 'm.engine')
    versions = [bytes([65 + i]) * (256 << 10) for i in range(6)]
    atomic_write(path, versions[0])
    seen, stop, read = [], threading.Event(), threading.Condition()

    def reader():
        while not stop.is_set():
            with open(path, 'rb') as f:
                data = f.read()
            with read:
                seen.append(data)
                read.notify_all()

    def chunks(data):
        """Yield 32 KiB chunks, with a whole read of the file between two of them."""
        for i in range(0, len(data), 32 << 10):
            yield data[i:i + (32 << 10)]
            # A read that starts after the chunk went out: a writer that is not atomic is
            # caught half way, every time.
            with read:
                n = len(seen)
                assert read.wait_for(lambda: len(seen) >= n + 2, timeout=30)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for data in versions[1:]:
            atomic_write(path, chunks(data))
    finally:
        stop.set()
        thread.join()
    assert seen and all(s in versions for s in seen)
    assert open(path, 'rb').read() == versions[-1]
    assert os.listdir(tmp_path) == ['m.engine']


CRASHING_WRITER = """
import os, sys
sys.path.insert(0, sys.argv[1])
from freespace_seg.perception.engines.engine_cache import atomic_write

def chunks():
    yield b'N' * 4096
    os._exit(9)                      # the process dies mid-write: no cleanup runs

atomic_write(sys.argv[2], chunks())
"""


def test_a_crash_mid_write_leaves_the_old_engine_intact(tmp_path):
    build, path = FakeBuilder(), str(tmp_path / 'm.engine')
    good = EngineCache(path, KEY).get_or_build(build, load_bytes).engine
    proc = subprocess.run([sys.executable, '-c', CRASHING_WRITER, REPO, path], timeout=30)
    assert proc.returncode == 9
    leftovers = [n for n in os.listdir(tmp_path) if n.startswith(temp_prefix(path))]
    assert len(leftovers) == 1                     # the half-written temporary file
    assert open(path, 'rb').read() == good
    result = EngineCache(path, KEY).get_or_build(build, load_bytes)
    assert not result.built and result.engine == good and build.calls == 1
    assert not [n for n in os.listdir(tmp_path) if n.startswith(temp_prefix(path))]


CONCURRENT_BUILDER = """
import hashlib, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from freespace_seg.perception.engines.engine_cache import EngineCache, EngineKey

path, counter, go = sys.argv[2], sys.argv[3], sys.argv[4]
key = EngineKey.from_dict(json.loads(sys.argv[5]))
open(f'{go}.ready.{os.getpid()}', 'w').close()
while not os.path.exists(go):
    time.sleep(0.002)

def build():
    with open(counter, 'a') as f:
        f.write(f'{os.getpid()}\\n')
    # Build until the other process waits for the lock (it says so), 60 s at most.
    end = time.monotonic() + 60
    while not os.path.exists(f'{go}.waiting') and time.monotonic() < end:
        time.sleep(0.002)
    return b'engine from ' + str(os.getpid()).encode() * 1000

def log(line):
    if line.startswith('waiting for another process'):
        open(f'{go}.waiting', 'w').close()

result = EngineCache(path, key, log=log).get_or_build(build, bytes)
print(json.dumps({'built': result.built, 'sha': hashlib.sha256(result.engine).hexdigest()}))
"""


def wait_until(predicate, timeout):
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass; return its value."""
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.01)
    return predicate()


def test_two_processes_starting_together_build_once(tmp_path):
    path, counter, go = (str(tmp_path / n) for n in ('m.engine', 'builds.txt', 'go'))
    procs = [subprocess.Popen([sys.executable, '-c', CONCURRENT_BUILDER, REPO, path, counter,
                               go, json.dumps(KEY.as_dict())], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    # Both started and waiting at the gate.
    assert wait_until(lambda: len(glob.glob(go + '.ready.*')) == 2 or any(
        p.poll() is not None for p in procs), 60)
    open(go, 'w').close()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        results.append(json.loads(out))
    assert len(open(counter).read().split()) == 1, 'exactly one process builds'
    assert sorted(r['built'] for r in results) == [False, True]
    assert results[0]['sha'] == results[1]['sha']


# -- TensorRT I/O against the card (no TensorRT needed) -----------------------------------------

def _io(**changes):
    tensors = {'input': TensorInfo('input', True, (1, 3, 48, 64), 'float32'),
               'logits': TensorInfo('logits', False, (1, 2, 48, 64), 'float32')}
    tensors.update(changes)
    return [t for t in tensors.values() if t is not None]


@pytest.mark.parametrize('tensors, fragment', [
    (_io(), None),
    (_io(input=TensorInfo('input', True, (-1, 3, 48, 64), 'float32')), None),
    (_io(logits=TensorInfo('logits', False, (1, 2, 48, 64), 'float16')), None),
    (_io(input=TensorInfo('image', True, (1, 3, 48, 64), 'float32')), "no input 'input'"),
    (_io(extra=TensorInfo('extra', True, (1,), 'float32')), '2 inputs'),
    (_io(input=TensorInfo('input', True, (1, 3, 96, 64), 'float32')), 'shape'),
    (_io(input=TensorInfo('input', True, (1, 3, 48, 64), 'float16')), 'card says float32'),
    (_io(logits=None, scores=TensorInfo('scores', False, (1, 2, 48, 64), 'float32')),
     "no output 'logits'"),
    (_io(logits=TensorInfo('logits', False, (1, 5, 48, 64), 'float32')), '5 channels'),
    (_io(logits=TensorInfo('logits', False, (1, 2, 48, 64), 'DataType.BF16')), 'numpy cannot'),
    (_io(logits=TensorInfo('logits', False, (1, 2, -1, 64), 'float32')), 'dynamic shape'),
])
def test_engine_io_is_checked_against_the_card(tiny_model, tensors, fragment):
    card = load_card(tiny_model)
    if fragment is None:
        check_io_against_card(tensors, card)
    else:
        with pytest.raises(Exception, match=fragment):
            check_io_against_card(tensors, card)


def test_io_listing_and_host_array_over_raw_memory():
    lines = format_io(_io())
    assert lines[0].split() == ['input', 'input', '1x3x48x64', 'float32']
    assert lines[1].split() == ['output', 'logits', '1x2x48x64', 'float32']
    import ctypes
    raw = (ctypes.c_char * 24)()
    array = host_array(ctypes.addressof(raw), (2, 3), np.float32)
    array[...] = np.arange(6).reshape(2, 3)
    assert np.frombuffer(bytes(raw), np.float32).tolist() == [0, 1, 2, 3, 4, 5]


# -- build-engine command -------------------------------------------------------------------------

@pytest.mark.skipif(TRT_REASON is None, reason='TensorRT is installed here')
def test_build_engine_without_tensorrt_exits_nonzero_with_the_reason(tiny_model, capsys):
    rc = cli.main(['build-engine', '--model', tiny_model, '--runs', '1'])
    err = capsys.readouterr().err
    assert rc == 3
    assert 'TensorRT cannot run here' in err and TRT_REASON in err


def test_build_engine_reports_a_bad_model(tmp_path, capsys):
    rc = cli.main(['build-engine', '--model', str(tmp_path / 'missing.onnx')])
    assert rc == 1 and 'model card not found' in capsys.readouterr().err


def test_build_engine_argument_helpers():
    assert parse_size('536870912') == 512 << 20
    assert parse_size('512M') == parse_size('512MiB') == 512 << 20
    assert parse_size('2g') == 2 << 30
    for bad in ('12', 'lots', '1T', '-5M'):
        with pytest.raises(Exception):
            parse_size(bad)
    median, p95 = latency_summary([0.001] * 19 + [0.021])
    assert median == pytest.approx(1.0) and 1.0 < p95 <= 21.0


# -- on a GPU with TensorRT -------------------------------------------------------------------

@pytest.mark.gpu
@needs_tensorrt
def test_tensorrt_engine_matches_onnxruntime_and_is_cached(tmp_path):
    from freespace_seg.perception.engines.tensorrt import TensorRTEngine
    model = write_tiny_model(tmp_path)
    card = load_card(model)
    x = np.random.default_rng(1).standard_normal((1, 3, 48, 64)).astype(np.float32)
    reference, _ = create_engine(card, 'onnxruntime', 1)
    expected = reference.run(x)
    engine_path = str(tmp_path / 'tiny.engine')
    for graph in (False, True):
        engine = TensorRTEngine(card, engine_file_path=engine_path, enable_fp16=False,
                                cuda_graph=graph)
        assert engine.cache_result.built is (not graph)
        out = engine.run(x)
        assert out.shape == expected.shape
        np.testing.assert_allclose(out, expected, atol=1e-4)
        assert np.array_equal(engine.run(x), out)
        engine.close()
        with pytest.raises(Exception, match='closed'):
            engine.run(x)
    rc = cli.main(['build-engine', '--model', model, '--engine-file-path', engine_path,
                   '--no-fp16', '--runs', '20', '--warmup', '2'])
    assert rc == 0


@pytest.mark.gpu
@pytest.mark.skipif(not ORT_HAS_GPU, reason='needs onnxruntime-gpu (CUDA or TensorRT provider)')
def test_onnxruntime_gpu_runs_on_a_gpu_provider_and_matches_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    card = load_card(write_tiny_model(tmp_path))
    x = np.random.default_rng(2).standard_normal((1, 3, 48, 64)).astype(np.float32)
    reference, _ = create_engine(card, 'onnxruntime', 1)
    engine, notes = create_engine(card, 'onnxruntime_gpu', enable_fp16=False)
    assert any(p in engine.devices for p in GPU_PROVIDERS), notes
    np.testing.assert_allclose(engine.run(x), reference.run(x), atol=1e-4)
    engine.close()
