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
Where a model's time goes inside ONNX Runtime: per operator, per part and per node.

Run ``python -m freespace_seg bench-ops [--model M] [--threads N]``; prints three Markdown
tables. The model runs on the CPU with the session options of the node's engine
(:func:`~freespace_seg.perception.engines.onnxruntime.session_options`: all graph
optimizations, sequential, no spinning threads) and ONNX Runtime's own profiler, on random
input of the model's input shape. Each kernel's time is summed over the timed runs:

* **operators**: the kernel time per run of each operator type, its share, how many nodes;
  for an INT8 (QDQ) model the operators that still compute in float show as their plain
  names (``Resize``, ``Conv``), the quantized ones as ``QLinear*``, and the conversions
  between them as ``QuantizeLinear`` / ``DequantizeLinear``;
* **parts**: the same time by the first part of the node names that the exporter wrote
  (``encoder``, ``ups.0`` ... of the Lite models; ``(top level)`` for nodes without
  a path, such as the decoder's ``/Resize_3`` and ``/Concat_7``);
* **nodes**: the slowest nodes with their output shape.

The profiler's own overhead makes the wall time per run a little longer than ``bench``'s
engine rows; the shares are what this command is for.
"""

import argparse
import collections
import json
import os
import tempfile
import time

from freespace_seg.common.markdown import number, table
from freespace_seg.perception.engines.onnxruntime import session_options
import numpy as np

#: operator types that only convert between the quantized and the float domain
CONVERSIONS = ('QuantizeLinear', 'DequantizeLinear', 'DynamicQuantizeLinear')


class OpsError(Exception):
    """A model that cannot be profiled (missing, not ONNX, or an input of unknown type)."""


def _session(model, threads, profile_prefix):
    import onnxruntime as ort
    if not os.path.isfile(model):
        raise OpsError(f'model file not found: {model}')
    opts = session_options(ort, threads)
    opts.enable_profiling = True
    opts.profile_file_prefix = profile_prefix
    try:
        return ort.InferenceSession(model, sess_options=opts,
                                    providers=['CPUExecutionProvider'])
    except Exception as e:  # noqa: B902 - ORT raises its own exception types
        raise OpsError(f'cannot load ONNX model {model}: {e}') from e


def _feeds(session, seed):
    rng = np.random.default_rng(seed)
    dtypes = {'tensor(float)': np.float32, 'tensor(float16)': np.float16,
              'tensor(uint8)': np.uint8}
    feeds = {}
    for inp in session.get_inputs():
        dtype = dtypes.get(inp.type)
        if dtype is None:
            raise OpsError(f'input {inp.name!r} has type {inp.type}; bench-ops feeds only '
                           f'{", ".join(sorted(dtypes))}')
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
        if dtype is np.uint8:
            feeds[inp.name] = rng.integers(0, 256, shape, dtype=np.uint8)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def part_of(node_name):
    """Return the part of a model a node belongs to: the first part of its exported name."""
    parts = [p for p in node_name.strip('/').split('/') if p]
    if len(parts) < 2:
        return '(top level)'
    return parts[0]


def measure(model, threads=2, runs=100, warmup=10, seed=0):
    """
    Profile ``runs`` runs of ``model`` after ``warmup`` untimed ones.

    Returns a dict: ``ms_per_run`` (wall time per timed run, profiler on), ``kernel_ms``
    (the kernels' time per run), and ``ops``, ``parts``, ``nodes``: lists of dicts with
    ``name``, ``ms`` (per run), ``share`` (of the kernel time) and ``count`` (nodes), the
    nodes also with ``op`` and ``shape``, slowest first.
    """
    if runs < 1 or warmup < 0 or threads < 1:
        raise OpsError('runs and threads must be >= 1, warmup >= 0')
    with tempfile.TemporaryDirectory() as tmp:
        session = _session(model, threads, os.path.join(tmp, 'ops'))
        feeds = _feeds(session, seed)
        for _ in range(warmup):
            session.run(None, feeds)
        # The profiler records every run from the session's start: remember where the timed
        # runs begin by their count.
        t0 = time.perf_counter()
        for _ in range(runs):
            session.run(None, feeds)
        wall = (time.perf_counter() - t0) / runs
        path = session.end_profiling()
        with open(path) as f:
            events = json.load(f)
    # Each run writes one 'model_run' event; keep the kernels of the last ``runs`` runs.
    starts = sorted(e['ts'] for e in events
                    if e.get('cat') == 'Session' and e.get('name') == 'model_run')
    first = starts[-runs] if len(starts) >= runs else 0
    per_node = collections.defaultdict(float)
    info = {}
    for e in events:
        if e.get('cat') != 'Node' or not e.get('name', '').endswith('_kernel_time'):
            continue
        if e['ts'] < first:
            continue
        name = e['name'][:-len('_kernel_time')]
        per_node[name] += e['dur']
        args = e.get('args', {})
        shapes = args.get('output_type_shape') or [{}]
        dtype, shape = next(iter(shapes[0].items()), ('', []))
        info[name] = (args.get('op_name', '?'), dtype, shape)
    total = sum(per_node.values()) or 1.0

    def grouped(key):
        ms = collections.defaultdict(float)
        count = collections.Counter()
        for name, dur in per_node.items():
            k = key(name)
            ms[k] += dur
            count[k] += 1
        return sorted(({'name': k, 'ms': v / runs / 1000.0, 'share': v / total,
                        'count': count[k]} for k, v in ms.items()),
                      key=lambda r: -r['ms'])

    nodes = sorted(({'name': n, 'op': info[n][0], 'dtype': info[n][1],
                     'shape': 'x'.join(str(d) for d in info[n][2]),
                     'ms': d / runs / 1000.0, 'share': d / total, 'count': 1}
                    for n, d in per_node.items()), key=lambda r: -r['ms'])
    return {'model': model, 'threads': threads, 'runs': runs, 'ms_per_run': wall * 1000.0,
            'kernel_ms': total / runs / 1000.0,
            'ops': grouped(lambda n: info[n][0]),
            'parts': grouped(part_of), 'nodes': nodes}


def markdown(result, top=15):
    """Return the three tables of :func:`measure`'s result as Markdown text."""
    lines = [f'`{result["model"]}`, {result["threads"]} thread(s), {result["runs"]} runs: '
             f'{number(result["ms_per_run"], 2)} ms a run with the profiler on, '
             f'{number(result["kernel_ms"], 2)} ms of it in kernels.', '']
    ops = result['ops']
    float_ops = [r['name'] for r in ops if not r['name'].startswith('QLinear')
                 and r['name'] not in CONVERSIONS]
    quantized = any(r['name'].startswith('QLinear') for r in ops)
    lines += table(('operator', 'ms a run', 'share', 'nodes'),
                   [(f'`{r["name"]}`', number(r['ms'], 3), number(100 * r['share'], 1, unit=' %'),
                     r['count']) for r in ops], align=['---', '---:', '---:', '---:'])
    if quantized:
        conv = sum(r['share'] for r in ops if r['name'] in CONVERSIONS)
        flt = sum(r['share'] for r in ops if r['name'] in float_ops)
        lines += ['', f'Quantized model: {number(100 * flt, 1)} % of the kernel time in float '
                  f'operators ({", ".join(f"`{n}`" for n in float_ops) or "none"}), '
                  f'{number(100 * conv, 1)} % converting between uint8 and float.']
    lines += [''] + table(('part', 'ms a run', 'share', 'nodes'),
                          [(f'`{r["name"]}`', number(r['ms'], 3),
                            number(100 * r['share'], 1, unit=' %'), r['count'])
                           for r in result['parts']], align=['---', '---:', '---:', '---:'])
    lines += [''] + table(('node', 'operator', 'output', 'ms a run', 'share'),
                          [(f'`{r["name"]}`', f'`{r["op"]}`', f'{r["dtype"]} {r["shape"]}',
                            number(r['ms'], 3), number(100 * r['share'], 1, unit=' %'))
                           for r in result['nodes'][:top]],
                          align=['---', '---', '---', '---:', '---:'])
    return '\n'.join(lines)


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be >= 1, not {value}')
    return value


def add_arguments(parser):
    """Add the model, thread, run and table-size options."""
    from freespace_seg.perception.pipeline import PACKAGED_INT8_MODEL, packaged_model_path
    parser.add_argument('--model', default=packaged_model_path(PACKAGED_INT8_MODEL),
                        help='ONNX model (default: the packaged INT8 default model)')
    parser.add_argument('--threads', type=_positive, default=2,
                        help="ONNX Runtime's intra-op threads (2)")
    parser.add_argument('--runs', type=_positive, default=100, help='timed runs (100)')
    parser.add_argument('--warmup', type=int, default=10, help='untimed runs first (10)')
    parser.add_argument('--top', type=_positive, default=15, help='slowest nodes listed (15)')
    parser.add_argument('--json', help='also write the result as JSON to this file')


def run(args):
    """Profile the model and print the tables; exit status 2 for a model that cannot run."""
    try:
        result = measure(args.model, args.threads, args.runs, args.warmup)
    except OpsError as e:
        print(f'bench-ops: {e}')
        return 2
    print(markdown(result, args.top))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=1)
    return 0
