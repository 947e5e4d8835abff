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
``python -m freespace_seg build-engine``: build and cache a TensorRT engine ahead of time.

Like ``trtexec --onnx=...``: builds the engine the node would build with the same settings
(or loads it, when the cache already holds a matching one), prints its I/O tensors, the build
time, and the median and 95th-percentile inference time over ``--runs`` runs (host to host:
copy in, execute, copy out). Run it once on the robot after installing a model so that the
node starts in seconds rather than building at startup.

Exit status: 0 done, 1 the model or the build failed, 3 TensorRT cannot run here.
"""

import argparse
import dataclasses
import os
import re
import sys
import time

from freespace_seg.perception.engines.base import (BackendUnavailable, DEFAULT_WORKSPACE,
                                                   EngineError)
from freespace_seg.perception.model_card import card_path_for_model, load_card, ModelCardError
import numpy as np

_UNITS = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}


def parse_size(text):
    """Parse a byte count such as ``536870912``, ``512M`` or ``1G`` (binary units)."""
    match = re.fullmatch(r'\s*(\d+)\s*([KMG]?)(?:i?B)?\s*', str(text), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f'{text!r} is not a size (e.g. 536870912, 512M, 1G)')
    value = int(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1 << 20:
        raise argparse.ArgumentTypeError(f'{text!r}: the workspace must be at least 1M')
    return value


def latency_summary(seconds):
    """Return (median, p95) in milliseconds of a list of durations in seconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    return float(np.median(ms)), float(np.percentile(ms, 95))


def add_arguments(parser):
    parser.add_argument('--model', default='',
                        help='ONNX model with its card beside it (default: the packaged one)')
    parser.add_argument('--fp16', action=argparse.BooleanOptionalAction, default=True,
                        help='allow FP16 layers (default: on)')
    parser.add_argument('--int8', action='store_true',
                        help='INT8 from a QDQ-quantized model (no calibration)')
    parser.add_argument('--workspace', type=parse_size, default=DEFAULT_WORKSPACE,
                        help=f'TensorRT workspace limit, bytes or 512M/1G '
                             f'(default {DEFAULT_WORKSPACE >> 20}M)')
    parser.add_argument('--engine-file-path', default='',
                        help='engine file (default: the per-user cache the node uses)')
    parser.add_argument('--force', action='store_true', help='rebuild even a valid engine')
    parser.add_argument('--dla-core', type=int, default=-1, help='Jetson DLA core (-1: GPU)')
    parser.add_argument('--gpu-id', type=int, default=0, help='CUDA device (0)')
    parser.add_argument('--cuda-graph', action='store_true',
                        help='time runs replayed as a CUDA graph')
    parser.add_argument('--runs', type=int, default=200, help='timed runs (200)')
    parser.add_argument('--warmup', type=int, default=20, help='untimed runs first (20)')


def _error(message):
    print(f'build-engine: {message}', file=sys.stderr)


def _sample_input(card):
    rng = np.random.default_rng(0)
    if card.dtype == 'uint8':
        return rng.integers(0, 256, card.input_shape, dtype=np.uint8)
    return rng.standard_normal(card.input_shape).astype(card.dtype)


def run(args):
    from freespace_seg.perception.engines.tensorrt import tensorrt_unavailable_reason
    from freespace_seg.perception.pipeline import packaged_model_path

    model = os.path.abspath(args.model or packaged_model_path())
    try:
        card = load_card(card_path_for_model(model))
    except ModelCardError as e:
        _error(str(e))
        return 1
    card = dataclasses.replace(card, model_file=model)
    reason = tensorrt_unavailable_reason()
    if reason is not None:
        _error(f'TensorRT cannot run here: {reason}. It needs an NVIDIA GPU with TensorRT and '
               'cuda-python (JetPack on Jetson; the tensorrt and cuda-python wheels on x86).')
        return 3
    from freespace_seg.perception.engines.tensorrt import format_io, TensorRTEngine
    try:
        engine = TensorRTEngine(
            card, engine_file_path=args.engine_file_path, force_engine_update=args.force,
            enable_fp16=args.fp16, enable_int8=args.int8, max_workspace_size=args.workspace,
            dla_core=args.dla_core, gpu_id=args.gpu_id, cuda_graph=args.cuda_graph,
            log=lambda line: print(line, flush=True))
    except BackendUnavailable as e:
        _error(f'TensorRT cannot run here: {e}')
        return 3
    except EngineError as e:
        _error(str(e))
        return 1
    try:
        result = engine.cache_result
        print(f'engine: {result.path}')
        print(f'        {engine.describe()}')
        for line in format_io(engine.io):
            print(f'  {line}')
        if result.built:
            print(f'build: {result.build_seconds:.1f} s ({result.reason}); '
                  f'deserialize {result.load_seconds:.2f} s')
        else:
            print(f'build: none, loaded from the cache in {result.load_seconds:.2f} s')
        for note in engine.notes:
            print(f'note: {note}')
        x = _sample_input(card)
        for _ in range(max(0, args.warmup)):
            engine.run(x)
        times = []
        for _ in range(max(1, args.runs)):
            t0 = time.perf_counter()
            engine.run(x)
            times.append(time.perf_counter() - t0)
        median, p95 = latency_summary(times)
        print(f'inference: median {median:.3f} ms, p95 {p95:.3f} ms over {len(times)} runs '
              '(copy in, execute, copy out)')
    except EngineError as e:
        _error(str(e))
        return 1
    finally:
        engine.close()
    return 0
