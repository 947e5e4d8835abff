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
``python -m freespace_seg bench``: how fast the segmentation runs, layer by layer.

Four things are measured side by side in one process tree, on the same frames:

a. **engine**: the raw inference engine (:class:`OnnxRuntimeEngine`) on preprocessed tensors;
b. **pipeline**: the core pipeline without ROS, as the node runs it: decode a
   ``sensor_msgs/Image``'s bytes, preprocess, infer, postprocess, ground projection, and the
   output messages (mask and grid) built but not sent;
c. **node**: ``segmentation_node`` in its own process over real rclpy topics, with the Fast DDS
   large-image profile: this process publishes the camera (``image`` + ``camera_info``, or
   ``image/compressed``) and subscribes to ``segmentation/mask`` and ``free_space/grid``;
d. **naive**: the obvious node (:mod:`freespace_seg.tools.bench.naive`, ``python -m
   freespace_seg bench-naive-node``), also in its own process: the image copied out of the
   message, numpy normalization, inference inside the subscription callback, ``np.argmax``,
   the mask published with ``msg.data = ndarray``, depth-10 reliable QoS.

Latency is stamp -> receipt of ``segmentation/mask`` in this process (the node's publish time
plus one transport hop); the camera stamps each frame just before publishing it. A
*closed-loop* condition measures saturation throughput: the camera keeps two frames in flight,
publishing the next one whenever a mask comes back, so the node always has a frame waiting
and never more than one to drop. CPU % is the node process's user + system time from
``/proc/<pid>/stat`` over the measured window (100 % = one core), RSS its ``VmRSS`` at the
end of the window.

Writes ``bench.md`` (the table and the ratios), ``bench.json`` (everything, with every
latency sample) and ``latency.png`` (drawn with OpenCV) to ``--out``.

Examples::

    python -m freespace_seg bench                      # the full run (about 15 minutes)
    python -m freespace_seg bench --quick              # a tiny version, about a minute
    python -m freespace_seg bench --memory-minutes 10  # plus RSS over 10 minutes at 30 Hz
    python -m freespace_seg bench --ground-outputs --only ground   # the ground outputs

``--ground-outputs`` adds two node conditions at 30 Hz (INT8 where there is one, the most
threads): **before**, the ground outputs that existed before free_space/scan
(free_space/grid, free_space/obstacles, free_space/grid_image) under the plain grid rule
(``grid_min_obstacle_run:=0 grid_cut_confidence:=0 grid_free_confidence:=0``, so no
confidence is computed), and
**after**, every ground output (those plus free_space/scan and segmentation/confidence)
under the default rule, all subscribed by this process; both also subscribe
segmentation/mask, as every node row.

``--workers`` (default ``2x1``; none with ``--quick``) adds node conditions with several
workers (``num_workers``), each ``WORKERSxTHREADS`` pair at every camera rate of 30 Hz and
above and in closed loop, for every model, after all the other conditions. Their labels say
``2w1t`` where the others say ``2t`` (2 workers of 1 inference thread each)::

    python -m freespace_seg bench --only "node int8 2t rgb8,node int8 2w1t rgb8"
"""

import datetime
import json
import os
import sys

from freespace_seg.common.machine import machine_info
from freespace_seg.tools.bench.engine import Frames, measure_engine, measure_pipeline
from freespace_seg.tools.bench.report import _f, memory_summary, write_report
from freespace_seg.tools.bench.topics import Condition, TopicBench


#: the node's default camera in this benchmark
DEFAULT_SIZE = (1280, 720)


def add_arguments(parser):
    """Add the ``bench`` options to ``parser``."""
    parser.add_argument('--model', default='',
                        help='fp32 ONNX model (default: the packaged one)')
    parser.add_argument('--int8-model', default='',
                        help='INT8 model (default: <model stem>_int8.onnx if it exists; '
                             '"none" to skip the INT8 conditions)')
    parser.add_argument('--out', default='bench_output',
                        help='folder for bench.md, bench.json, latency.png (bench_output)')
    parser.add_argument('--quick', action='store_true',
                        help='a tiny version: few conditions, a few seconds each')
    parser.add_argument('--duration', type=float,
                        help='measured seconds per topic condition (20; --quick: 3)')
    parser.add_argument('--warmup', type=float,
                        help='seconds before measuring (3; --quick: 1.5)')
    parser.add_argument('--width', type=int, default=DEFAULT_SIZE[0],
                        help='camera width (%(default)s)')
    parser.add_argument('--height', type=int, default=DEFAULT_SIZE[1],
                        help='camera height (%(default)s)')
    parser.add_argument('--rates', default='',
                        help='camera rates in Hz, comma-separated (15,30,60; --quick: 30)')
    parser.add_argument('--threads', default='',
                        help='inference thread counts, comma-separated (1,2; --quick: 2)')
    parser.add_argument('--scenes', type=int, default=0,
                        help='distinct frames rendered and cycled (6; --quick: 2)')
    parser.add_argument('--seed', type=int, default=1000, help='scene seed (%(default)s)')
    parser.add_argument('--no-naive', action='store_true', help='skip the naive node')
    parser.add_argument('--no-topics', action='store_true',
                        help='only the engine and the pipeline (no ROS processes)')
    parser.add_argument('--only', default='',
                        help='run only the conditions whose label contains one of these '
                             'comma-separated texts, e.g. "engine fp32,node fp32 2t"')
    parser.add_argument('--workers', default='',
                        help='node conditions with several workers: WORKERSxTHREADS pairs '
                             '(num_workers x num_threads), comma-separated, each at the rates '
                             'of 30 Hz and above and in closed loop; "none" to skip (2x1; '
                             '--quick: none). Labelled e.g. "node int8 2w1t rgb8 1280x720 60 Hz"')
    parser.add_argument('--node-param', action='append', default=[], metavar='NAME:=VALUE',
                        help='a segmentation_node parameter for every node condition, as '
                             "ros2 run's -p (repeat it), e.g. grid_mask_width:=640; written "
                             'in the report')
    parser.add_argument('--memory-minutes', type=float, default=0.0,
                        help='also run the node this many minutes at 30 Hz and report its '
                             'RSS growth (0: skip)')
    parser.add_argument('--from-json', metavar='FILE',
                        help='measure nothing: redo the report (ratios, goals, table, plot) of '
                             'the bench.json of an earlier run into --out')
    parser.add_argument('--memory-only', action='store_true',
                        help='with --memory-minutes: run only the memory check')
    parser.add_argument('--ground-outputs', action='store_true',
                        help='add the two ground-output conditions (before / after the '
                             'speckle-tolerant rule, scan and confidence); see above')
    parser.add_argument('--profile', action='store_true',
                        help='sample the stacks of every segmentation_node process '
                             '(freespace_seg.common.profiling) and write profile_<n>.md per node '
                             'condition to --out')


# ---------------------------------------------------------------------------------------------
# Small helpers


def _csv(text, cast):
    return [cast(v) for v in str(text).split(',') if v.strip()]


#: the worker conditions of a full run: 2 workers of 1 inference thread each
DEFAULT_WORKERS = '2x1'


def worker_splits(text):
    """
    Return the (workers, threads) pairs of ``--workers`` text such as ``'2x1,4x1'``.

    ``'none'`` or empty: none. Raises SystemExit with the reason on a malformed pair or a
    worker count outside 2-4 (one worker is the plain node conditions).
    """
    if str(text).strip() in ('', 'none'):
        return []
    splits = []
    for part in str(text).split(','):
        workers, sep, threads = part.strip().partition('x')
        if not sep or not workers.isdigit() or not threads.isdigit():
            raise SystemExit(f'bench: --workers wants WORKERSxTHREADS pairs such as 2x1, got '
                             f'{part.strip()!r}')
        if not 2 <= int(workers) <= 4:
            raise SystemExit(f'bench: --workers {part.strip()}: 2 to 4 workers (the node allows '
                             '1-4; one worker is the plain node conditions)')
        splits.append((int(workers), int(threads)))
    return splits


# ---------------------------------------------------------------------------------------------
# Command


def _models(args):
    from freespace_seg.perception.pipeline import packaged_model_path
    from freespace_seg.training.quantize import int8_path_for

    fp32 = os.path.abspath(args.model) if args.model else packaged_model_path()
    models = [('fp32', fp32)]
    if args.int8_model != 'none':
        int8 = os.path.abspath(args.int8_model) if args.int8_model else int8_path_for(fp32)
        if os.path.isfile(int8):
            models.append(('int8', int8))
        elif args.int8_model:
            raise SystemExit(f'bench: INT8 model not found: {int8}')
    return models


def node_params(items):
    """
    Return ``{name: text}`` of ``--node-param`` items (``NAME:=VALUE``).

    :raises SystemExit: an item without ``:=``, or one of a parameter that the bench sets
        itself (the model, threads, workers, backend, transport).
    """
    out = {}
    for item in items or ():
        name, sep, value = (part.strip() for part in item.partition(':='))
        if not sep or not name or not value:
            raise SystemExit(f'bench: --node-param wants NAME:=VALUE, got {item!r}')
        if name in _BENCH_SETS:
            raise SystemExit(f'bench: --node-param {name}: the bench sets it itself')
        out[name] = value
    return out


#: node parameters each condition sets itself (not for --node-param)
_BENCH_SETS = ('model_file_path', 'num_threads', 'num_workers', 'backend', 'image_transport')


def plan(args, models):
    """Return (threads list, rates, topic conditions) for the run."""
    quick = args.quick
    threads_list = _csv(args.threads, int) if args.threads else ([2] if quick else [1, 2])
    rates = _csv(args.rates, float) if args.rates else ([30.0] if quick else [15.0, 30.0,
                                                                              60.0])
    best_t = max(threads_list)
    conds = []
    fp32 = models[0][1]
    for label, path in models:
        for rate in rates:
            conds.append(Condition('node', label, path, best_t, rate))
        for t in threads_list:
            conds.append(Condition('node', label, path, t, 0.0))
        if not quick:
            for t in threads_list:
                if t != best_t:
                    for rate in rates:
                        if rate >= 30:
                            conds.append(Condition('node', label, path, t, rate))
    mid = 30.0 if 30.0 in rates else rates[len(rates) // 2]
    conds.append(Condition('node', 'fp32', fp32, best_t, mid, transport='compressed'))
    if not quick:
        conds.append(Condition('node', 'fp32', fp32, best_t, mid, all_outputs=True))
    if not args.no_naive:
        for rate in rates:
            conds.append(Condition('naive', 'fp32', fp32, best_t, rate))
    if getattr(args, 'ground_outputs', False):
        label, path = models[-1]   # INT8 where there is one
        for ground in ('before', 'after'):
            conds.append(Condition('node', label, path, best_t, 30.0, ground=ground))
    workers = getattr(args, 'workers', '') or ('none' if quick else DEFAULT_WORKERS)
    for n, t in worker_splits(workers):
        for label, path in models:
            for rate in [r for r in rates if r >= 30] + [0.0]:
                conds.append(Condition('node', label, path, t, rate, workers=n))
    extra = node_params(getattr(args, 'node_param', ()))
    for cond in conds:
        if cond.kind == 'node':
            cond.params.update(extra)
    return threads_list, rates, conds


def run(args):
    """Run the benchmark; returns the process exit code."""
    if args.from_json:
        with open(args.from_json) as f:
            result = json.load(f)
        write_report(result, os.path.abspath(args.out))
        return 0
    quick = args.quick
    duration = args.duration or (3.0 if quick else 20.0)
    warmup = args.warmup if args.warmup is not None else (1.5 if quick else 3.0)
    scenes = args.scenes or (2 if quick else 6)
    models = _models(args)
    for label, path in models:
        if not os.path.isfile(path):
            print(f'bench: model not found: {path}', file=sys.stderr)
            return 2
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    threads_list, rates, conds = plan(args, models)
    frames = Frames(scenes, args.width, args.height, args.seed)
    if args.no_topics:
        conds = []
    only = [t.strip() for t in args.only.split(',') if t.strip()]

    def wanted(label):
        if args.memory_only:
            return False
        return not only or any(t in label for t in only)

    conds = [c for c in conds if wanted(c.label(frames))]

    def log(text):
        print(text, file=sys.stderr, flush=True)

    info = machine_info()
    info['date'] = datetime.datetime.now().isoformat(timespec='seconds')
    log(f'bench: {info["cpu"]}, {info["cores"]} cores, load average {info["loadavg_1_5_15"]}')
    log(f'bench: models {", ".join(f"{k} {v}" for k, v in models)}')
    rows = []
    engine_s = 2.0 if quick else 8.0
    for label, path in models:
        for t in threads_list:
            if wanted(f'engine {label} {t}t tensor'):
                log(f'bench: engine {label} {t} thread(s) ...')
                row = measure_engine(path, t, frames, engine_s)
                row.update(model=label, label=f'engine {label} {t}t tensor')
                rows.append(row)
                log(f'  {row["fps"]:.1f} fps, p50 {row["p50_ms"]:.2f} ms')
            size = f'{frames.width}x{frames.height}'
            if wanted(f'pipeline {label} {t}t rgb8 {size}'):
                log(f'bench: pipeline {label} {t} thread(s) ...')
                row = measure_pipeline(path, t, frames, engine_s)
                row.update(model=label, label=f'pipeline {label} {t}t {row["input"]}')
                rows.append(row)
                log(f'  {row["fps"]:.1f} fps, p50 {row["p50_ms"]:.2f} ms, stages '
                    f'{row["stages_p50_ms"]}')
    memory = None
    if conds or args.memory_minutes > 0:
        topics = TopicBench(frames, warmup, duration, log)
        topics.profile_dir = out_dir if args.profile else None
        try:
            for n, cond in enumerate(conds, 1):
                log(f'bench: [{n}/{len(conds)}] {cond.label(frames)} ...')
                try:
                    row = topics.run(cond)
                except RuntimeError as e:
                    log(f'bench: failed: {e}')
                    continue
                rows.append(row)
                log(f'  {row["fps"]:.1f} fps, p50 {_f(row["p50_ms"])} ms, p95 '
                    f'{_f(row["p95_ms"])} ms, dropped {row["dropped"]}/{row["published"]}, '
                    f'CPU {_f(row["cpu_percent"], 0)} %, RSS {_f(row["rss_mb"], 0)} MB')
            if args.memory_minutes > 0:
                label, path = models[0]
                cond = Condition('node', label, path, max(threads_list), 30.0)
                log(f'bench: memory run: {cond.label(frames)} for {args.memory_minutes:g} '
                    'minutes ...')
                row = topics.run(cond, duration=args.memory_minutes * 60.0, rss_every=5.0)
                memory = memory_summary(row)
                memory['row'] = {k: v for k, v in row.items() if k != 'samples_ms'}
                log(f'  RSS {memory["rss_after_settle_mb"]:.1f} MB after '
                    f'{memory["settle_s"]:.0f} s -> {memory["rss_end_mb"]:.1f} MB at '
                    f'{memory["minutes"]:.1f} min: growth {memory["growth_mb"]:+.1f} MB')
        finally:
            topics.close()
    info['loadavg_end'] = [round(x, 2) for x in os.getloadavg()]
    result = {'machine': info, 'models': dict(models), 'args': {
        k: v for k, v in vars(args).items() if not k.startswith('_')},
        'duration_s': duration, 'warmup_s': warmup, 'scenes': scenes,
        'camera': [args.width, args.height], 'seed': args.seed, 'jpeg_kb': frames.jpeg_kb,
        'threads': threads_list, 'rates': rates, 'rows': rows, 'memory': memory}
    write_report(result, out_dir)
    log(f'bench: wrote {out_dir}/bench.md, bench.json and latency.png')
    return 0 if rows or memory else 1
