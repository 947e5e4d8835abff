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
``python -m freespace_seg bench-fleet``: simulated robots sharing one inference server.

A robot is a camera publisher in this process and a ``segmentation_node`` process, as
``bench`` runs one (:class:`freespace_seg.tools.bench.topics.Robot`). For each robot count
(``--robots``) and backend (``--backends``) the robots start together; then, for each camera
rate (``--rates``), every camera publishes at that rate (the cameras staggered by 1/n of a
period: robots are not in step) for ``--warmup`` plus ``--duration`` seconds. Backends:

* ``triton``: every node sends its frames to one ``serve`` on this machine, which this
  command starts (the model on ONNX Runtime in Triton's Python backend, dynamic batching);
* ``onnxruntime``: each node runs the model in its own process, for comparison.

Per condition: fps per robot (mean, and the slowest robot), latency p50/p95 (camera stamp to
receipt of ``segmentation/mask`` here; all robots' frames together), dropped frames, the batch
sizes the server formed in the window (Triton's statistics: executions per batch size), CPU
of the server (``serve``, ``tritonserver`` and its Python backend stub), of the node
processes together and of this process (the cameras), from /proc (100 % = one core), and
the nodes' own server round trip (their diagnostics).

Before the fleet, one engine alone gives the per-request overhead: the triton round trip
(over gRPC, and with system shared memory) minus local inference with ONNX Runtime on the
server's thread count, on the same tensors, nothing else running; the server's statistics
split the round trip into queue, compute and the rest (transport).

Threads: the server's ONNX Runtime gets ``--server-threads`` (0: one per core); each node
``--threads-per-node`` (0: cores // robots, at least 1; so 8 local nodes on 2 cores run one
thread each, not the node's default of one per core).

Writes ``fleet.md`` (the report printed) and ``fleet.json`` (everything) to ``--out``.
"""

import datetime
import json
import os
import signal
import sys
import threading
import time

from freespace_seg.common.machine import machine_info
from freespace_seg.common.markdown import number, table
from freespace_seg.common.reproduce import OptionRecorder
from freespace_seg.common.values import split_size
from freespace_seg.tools.bench.engine import Frames, measure_engine
from freespace_seg.tools.bench.procstat import (cpu_seconds_between, stats_ms, system_busy_seconds,
                                                tree_cpu_reading)
from freespace_seg.tools.bench.topics import Condition, TopicBench
from freespace_seg.tools.child import node_environment, NodeProcess
from freespace_seg.tools.serve import free_ports
import numpy as np

BACKENDS = ('triton', 'onnxruntime')
OPTIONS = OptionRecorder('bench-fleet')
#: how long the server and the node processes may take to start on a small, busy CPU
START_TIMEOUT = 300.0


def add_arguments(parser):
    """Add the ``bench-fleet`` options to ``parser``."""
    OPTIONS.reset()
    add = OPTIONS.add
    add(parser, '--model', default='', help='ONNX model with its card (default: the packaged '
        'fp32 model)')
    add(parser, '--robots', default='1,2,4,8', help='robot counts, comma-separated '
        '(%(default)s)')
    add(parser, '--rates', default='10,30', help='camera rates in Hz, comma-separated '
        '(%(default)s)')
    add(parser, '--duration', type=float, default=8.0,
        help='measured seconds per condition (%(default)s)')
    add(parser, '--warmup', type=float, default=2.0,
        help='seconds of camera before measuring (%(default)s)')
    add(parser, '--size', default='640x360', help='camera WxH (%(default)s)')
    add(parser, '--backends', default=','.join(BACKENDS),
        help='triton (one shared serve), onnxruntime (in each node); (%(default)s)')
    add(parser, '--threads-per-node', type=int, default=0,
        help='ONNX Runtime threads of each node; 0: cores // robots, at least 1')
    add(parser, '--server-threads', type=int, default=0,
        help="ONNX Runtime threads of the server's model; 0: one per core")
    add(parser, '--max-batch-size', type=int, default=8,
        help="the server's dynamic batching limit (%(default)s)")
    add(parser, '--max-queue-delay-us', type=int, default=2000,
        help="the server's longest wait to fill a batch (%(default)s)")
    add(parser, '--shared-memory', action='store_true',
        help='the triton nodes use triton_shared_memory')
    add(parser, '--overhead-seconds', type=float, default=5.0,
        help='seconds per engine in the per-request overhead measurement (0: skip)')
    add(parser, '--scenes', type=int, default=2, help='distinct frames (%(default)s)')
    add(parser, '--seed', type=int, default=1000, help='scene seed (%(default)s)')
    add(parser, '--server-env', default='', help='the server venv (see serve)')
    add(parser, '--out', default='bench_fleet_output',
        help='folder for fleet.md and fleet.json (%(default)s)')
    add(parser, '--from-json', metavar='FILE',
        help='measure nothing: redo the report of the fleet.json of an earlier run into --out')


class FleetError(RuntimeError):
    """A bad option, or a server or node that does not start; the message says which."""


def _csv(text, cast, what):
    try:
        values = [cast(v) for v in str(text).split(',') if v.strip()]
    except ValueError:
        raise FleetError(f'{what} must be comma-separated numbers, got {text!r}') from None
    if not values or any(v <= 0 for v in values):
        raise FleetError(f'{what} must be positive, got {text!r}')
    return values


def parse_size(text):
    """Return ``(width, height)`` of a ``WxH`` text."""
    try:
        w, h = split_size(text)
    except ValueError:
        raise FleetError(f'--size must be WxH, e.g. 640x360; got {text!r}') from None
    if w < 16 or h < 16:
        raise FleetError(f'--size must be at least 16x16, got {text!r}')
    return w, h


def node_threads(requested, robots, cores=None):
    """ONNX Runtime threads per node: ``requested``, or cores // robots (at least 1)."""
    if requested > 0:
        return requested
    return max(1, (cores or os.cpu_count() or 1) // robots)


class Server:
    """``python -m freespace_seg serve`` on free ports, as a child process."""

    def __init__(self, model, threads, args):
        self.grpc, self.http, self.metrics = free_ports(3)
        cmd = [sys.executable, '-m', 'freespace_seg', 'serve', '--model', model,
               '--grpc-port', str(self.grpc), '--http-port', str(self.http),
               '--metrics-port', str(self.metrics), '--threads', str(threads),
               '--max-batch-size', str(args.max_batch_size),
               '--max-queue-delay-us', str(args.max_queue_delay_us)]
        if args.server_env:
            cmd += ['--server-env', args.server_env]
        self.child = NodeProcess(cmd, node_environment(), ready_text='serving model')
        if not self.child.ready.wait(START_TIMEOUT) or self.child.proc.poll() is not None:
            self.child.stop()
            raise FleetError(f'serve did not start:\n{self.child.log_tail()}')

    @property
    def url(self):
        return f'localhost:{self.grpc}'

    @property
    def pid(self):
        return self.child.pid

    def stop(self):
        return self.child.stop()


def measure_overhead(model, threads, frames, seconds, server, card_name, log):
    """
    One engine at a time, nothing else running: local ONNX Runtime against the round trip.

    Returns ``{'local': row, 'grpc': row, 'shared_memory': row}``; the remote rows carry the
    server's mean queue and compute time per request (``server_queue_ms``,
    ``server_compute_ms``) from its statistics.
    """
    from freespace_seg.perception.engines.triton import model_statistics, stats_delta

    # The server's first requests are slow (the Python backend warming up): not counted.
    measure_engine(model, 1, frames, 0.2, backend='triton',
                   engine_options={'triton_url': server.url, 'triton_timeout': 30.0})
    log(f'bench-fleet: overhead: local ONNX Runtime, {threads} thread(s) ...')
    out = {'local': measure_engine(model, threads, frames, seconds)}
    for label, shm in (('grpc', False), ('shared_memory', True)):
        log(f'bench-fleet: overhead: triton round trip ({label}) ...')
        before = model_statistics(server.url, card_name)
        row = measure_engine(model, 1, frames, seconds, backend='triton', engine_options={
            'triton_url': server.url, 'triton_timeout': 30.0, 'triton_shared_memory': shm})
        seen = stats_delta(before, model_statistics(server.url, card_name))
        n = max(1, seen['requests'])
        row['server_queue_ms'] = 1000.0 * seen['queue_s'] / n
        row['server_compute_ms'] = 1000.0 * seen['compute_infer_s'] / n
        out[label] = row
    for label, row in out.items():
        log(f'  {label}: p50 {row["p50_ms"]:.2f} ms')
    return out


def summarize(backend, robots, rate, threads, per_robot, window, cpu, seen):
    """Return the condition's row from the robots' windows, the CPU readings and stats."""
    samples = [s for p in per_robot for s in p['samples_ms']]
    fps = [p['fps'] for p in per_robot]
    published = sum(p['published'] for p in per_robot)
    answered = sum(p['answered'] for p in per_robot)
    trips = [float(p['node_diagnostics']['server_round_trip_p50_ms'])
             for p in per_robot if p.get('node_diagnostics', {}).get(
                 'server_round_trip_p50_ms', 'n/a') != 'n/a']
    row = {'backend': backend, 'robots': robots, 'rate_hz': rate,
           'threads_per_node': threads, 'window_s': window,
           'fps_mean': float(np.mean(fps)), 'fps_min': float(min(fps)),
           'fps_total': float(sum(fps)), 'published': published, 'answered': answered,
           'dropped_percent': 100.0 * (published - answered) / published if published else None,
           'round_trip_p50_ms': float(np.mean(trips)) if trips else None,
           'loadavg_1min': os.getloadavg()[0],
           'per_robot': [{k: v for k, v in p.items() if k != 'samples_ms'}
                         for p in per_robot]}
    row.update(stats_ms(np.asarray(samples) / 1000.0))
    for key, value in cpu.items():
        row[key] = 100.0 * value / window if value is not None else None
    if seen is not None:
        row['server_requests'] = seen['requests']
        row['server_failed'] = seen['failed']
        row['server_batches'] = {int(k): v for k, v in sorted(seen['batches'].items())}
        row['mean_batch'] = seen['requests'] / seen['executions'] if seen['executions'] \
            else None
        row['server_queue_ms'] = 1000.0 * seen['queue_s'] / seen['requests'] \
            if seen['requests'] else None
        row['server_compute_ms_per_run'] = 1000.0 * sum(
            seen['compute_infer_by_batch_s'].values()) / seen['executions'] \
            if seen['executions'] else None
    return row


def run_fleet(topics, robots, backend, rates, model, threads, server, card_name, args, log,
              progress):
    """Start ``robots`` robots on ``backend``; measure each rate; return the rows."""
    from rclpy.executors import SingleThreadedExecutor

    from freespace_seg.nodes.ros_util import stop_spin_thread
    from freespace_seg.perception.engines.triton import model_statistics, stats_delta

    params = {}
    if backend == 'triton':
        params = {'triton_url': server.url, 'triton_timeout': 10.0,
                  'triton_shared_memory': bool(args.shared_memory)}
    cond = Condition('node', 'fp32', model, threads, rates[0], backend=backend, params=params)
    log(f'bench-fleet: starting {robots} {backend} node(s), {threads} thread(s) each ...')
    fleet = [topics.robot(cond, own_messages=True) for _ in range(robots)]
    executor = SingleThreadedExecutor()
    for robot in fleet:
        executor.add_node(robot.node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    rows = []
    try:
        for robot in fleet:
            robot.wait_ready(timeout=START_TIMEOUT)
        for rate in rates:
            progress['done'] += 1
            log(f'bench-fleet: [{progress["done"]}/{progress["total"]}] {backend}, {robots} '
                f'robot(s) at {rate:g} Hz ...')
            for robot in fleet:
                robot.start_camera(rate)
                time.sleep(1.0 / rate / robots)   # staggered, as robots are not in step
            time.sleep(args.warmup)
            pids = [robot.child.pid for robot in fleet]
            stats0 = model_statistics(server.url, card_name) if backend == 'triton' else None
            t0 = time.monotonic()
            nodes0 = [tree_cpu_reading(p, descendants=False) for p in pids]
            server0 = tree_cpu_reading(server.pid) if server is not None else None
            self0, busy0 = time.process_time(), system_busy_seconds()
            while time.monotonic() - t0 < args.duration:
                time.sleep(min(0.25, max(0.0, args.duration - (time.monotonic() - t0))))
                for robot in fleet:
                    robot.check_alive()
            t1 = time.monotonic()
            nodes1 = [tree_cpu_reading(p, descendants=False) for p in pids]
            server1 = tree_cpu_reading(server.pid) if server is not None else None
            self1, busy1 = time.process_time(), system_busy_seconds()
            seen = stats_delta(stats0, model_statistics(server.url, card_name)) \
                if stats0 is not None else None
            for robot in fleet:
                robot.stop_camera()
            time.sleep(1.0)   # late masks of frames sent in the window
            spent = [cpu_seconds_between(a, b) for a, b in zip(nodes0, nodes1)]
            nodes = sum(spent) if None not in spent else None
            served = cpu_seconds_between(server0, server1)   # None without a server
            cpu = {'server_cpu_percent': served, 'nodes_cpu_percent': nodes,
                   'cameras_cpu_percent': self1 - self0}
            if None not in (busy0, busy1, nodes):
                cpu['other_cpu_percent'] = (busy1 - busy0) - nodes - (served or 0.0) \
                    - (self1 - self0)
            row = summarize(backend, robots, rate, threads,
                            [robot.window(t0, t1) for robot in fleet], t1 - t0, cpu, seen)
            rows.append(row)
            log(f'  fps per robot {row["fps_mean"]:.1f} (min {row["fps_min"]:.1f}), p50 '
                f'{number(row["p50_ms"], 0)} ms, p95 {number(row["p95_ms"], 0)} ms, dropped '
                f'{number(row["dropped_percent"], 0)} %, batches '
                f'{batches_text(row.get("server_batches"))}, server CPU '
                f'{number(row["server_cpu_percent"], 0)} %, nodes CPU '
                f'{number(row["nodes_cpu_percent"], 0)} %')
    finally:
        for robot in fleet:
            robot.stop_camera()
            if robot.child.proc.poll() is None:
                robot.child.proc.send_signal(signal.SIGINT)   # all at once; close() waits
        stop_spin_thread(executor, spin, timeout_sec=10.0, join_timeout=20.0)
        codes = [robot.close() for robot in fleet]
    bad = [c for c in codes if c != 0]
    if bad:
        log(f'bench-fleet: {len(bad)} node(s) exited with {bad}')
    for row in rows:
        row['exit_codes'] = codes
    return rows


def batches_text(batches):
    """``{1: 40, 2: 3}`` -> ``1x40 2x3`` (batch size x executions); '-' for none."""
    if not batches:
        return '-'
    return ' '.join(f'{size}x{count}' for size, count in sorted(batches.items()))


def report(result):
    """Return the Markdown report of a result, as lines."""
    info = result['machine']
    w, h = result['camera']
    lines = [f'# bench-fleet ({info["date"]})', '',
             f'`{result["command"]}`', '',
             f'Machine: {info["cpu"]}, {info["cores"]} cores; load average at start '
             f'{info["loadavg_1_5_15"]}, at end {info["loadavg_end"]}. Model '
             f'`{os.path.basename(result["model"])}`, camera {w}x{h} rgb8, '
             f'{result["duration_s"]:g} s measured per condition after {result["warmup_s"]:g} '
             f's of camera. Server: `serve`, {result["server_threads"]} ONNX Runtime '
             f'thread(s), max batch {result["max_batch_size"]}, queue delay '
             f'{result["max_queue_delay_us"]} us'
             + (', nodes with triton_shared_memory' if result['shared_memory'] else '') + '.',
             '']
    over = result.get('overhead')
    if over:
        local = over['local']['p50_ms']
        rows = [['local ONNX Runtime', over['local']['threads'], number(local, 1), '-', '-',
                 '-']]
        for label, name in (('grpc', 'triton round trip, gRPC'),
                            ('shared_memory', 'triton round trip, shared memory')):
            r = over[label]
            rows.append([name, result['server_threads'], number(r['p50_ms'], 1),
                         number(r['server_queue_ms'], 1), number(r['server_compute_ms'], 1),
                         number(r['p50_ms'] - local, 1, sign=True)])
        lines += ['Per request, one engine alone (p50 ms; the server threads run the model):',
                  ''] + table(['', 'threads', 'p50 ms', 'server queue ms', 'server compute ms',
                               'overhead ms (minus local)'], rows) + ['']
    header = ['backend', 'robots', 'camera Hz', 'node threads', 'fps per robot (min)',
              'p50 ms', 'p95 ms', 'dropped %', 'server batches (size x runs)', 'mean batch',
              'server CPU %', 'nodes CPU %', 'cameras CPU %', 'other CPU %',
              'node round trip p50 ms']
    rows = []
    for r in result['rows']:
        triton = r['backend'] == 'triton'
        rows.append([r['backend'], r['robots'], f'{r["rate_hz"]:g}', r['threads_per_node'],
                     f'{r["fps_mean"]:.1f} ({r["fps_min"]:.1f})', number(r['p50_ms'], 0),
                     number(r['p95_ms'], 0), number(r['dropped_percent'], 0),
                     batches_text(r.get('server_batches')) if triton else '-',
                     number(r.get('mean_batch'), 2) if triton else '-',
                     number(r['server_cpu_percent'], 0) if triton else '-',
                     number(r['nodes_cpu_percent'], 0), number(r['cameras_cpu_percent'], 0),
                     number(r.get('other_cpu_percent'), 0),
                     number(r.get('round_trip_p50_ms'), 1) if triton else '-'])
    lines += table(header, rows)
    lines += ['', 'CPU % of one core over the window: the server (serve, tritonserver, its Python '
              'backend stub), the node processes together, this process (the cameras), and '
              "everything else on the machine (other users' work)."]
    return lines


def write(result, out):
    """Print the report of ``result`` and write fleet.md and fleet.json to ``out``."""
    lines = report(result)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'fleet.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    with open(os.path.join(out, 'fleet.json'), 'w') as f:
        json.dump(result, f, indent=1, default=float)
    print('\n'.join(lines))


def run(args):
    """Run the fleet benchmark; returns the process exit code."""
    def log(text):
        print(text, file=sys.stderr, flush=True)

    if args.from_json:
        with open(args.from_json) as f:
            write(json.load(f), os.path.abspath(args.out))
        return 0
    try:
        robot_counts = [int(v) for v in _csv(args.robots, int, '--robots')]
        rates = _csv(args.rates, float, '--rates')
        width, height = parse_size(args.size)
        backends = [b.strip() for b in args.backends.split(',') if b.strip()]
        if not backends or set(backends) - set(BACKENDS):
            raise FleetError(f'--backends must name {" and/or ".join(BACKENDS)}, got '
                             f'{args.backends!r}')
    except FleetError as e:
        print(f'bench-fleet: {e}', file=sys.stderr)
        return 2
    from freespace_seg.perception.model_card import card_path_for_model, load_card
    from freespace_seg.perception.pipeline import packaged_model_path

    model = os.path.abspath(args.model) if args.model else packaged_model_path()
    if not os.path.isfile(model):
        print(f'bench-fleet: model not found: {model}', file=sys.stderr)
        return 2
    card_name = load_card(card_path_for_model(model)).name
    cores = os.cpu_count() or 1
    server_threads = args.server_threads or cores
    info = machine_info()
    info['date'] = datetime.datetime.now().isoformat(timespec='seconds')
    log(f'bench-fleet: {info["cpu"]}, {cores} cores, load average {info["loadavg_1_5_15"]}')
    total = len(robot_counts) * len(backends) * len(rates)
    log(f'bench-fleet: {total} conditions: robots {robot_counts} x rates {rates} x '
        f'{backends}, {args.warmup:g} + {args.duration:g} s each')
    frames = Frames(args.scenes, width, height, args.seed)
    result = {'machine': info, 'command': OPTIONS.command_line(
        args, skip=lambda dest, value: dest in ('model', 'server_env', 'from_json')
        and not value),
        'model': model, 'camera': [width, height], 'duration_s': args.duration,
        'warmup_s': args.warmup, 'server_threads': server_threads,
        'max_batch_size': args.max_batch_size, 'max_queue_delay_us': args.max_queue_delay_us,
        'shared_memory': bool(args.shared_memory), 'rows': [], 'overhead': None}
    server = topics = None
    progress = {'done': 0, 'total': total}
    try:
        if 'triton' in backends:
            log(f'bench-fleet: starting serve ({server_threads} thread(s)) ...')
            server = Server(model, server_threads, args)
            log(f'bench-fleet: serve at {server.url}')
            if args.overhead_seconds > 0:
                result['overhead'] = measure_overhead(model, server_threads, frames,
                                                      args.overhead_seconds, server,
                                                      card_name, log)
        topics = TopicBench(frames, args.warmup, args.duration, log)
        for robots in robot_counts:
            threads = node_threads(args.threads_per_node, robots, cores)
            for backend in backends:
                result['rows'] += run_fleet(topics, robots, backend, rates, model, threads,
                                            server if backend == 'triton' else None,
                                            card_name, args, log, progress)
    except (FleetError, RuntimeError) as e:
        log(f'bench-fleet: {e}')
        return 1
    finally:
        if topics is not None:
            topics.close()
        if server is not None:
            server.stop()
    info['loadavg_end'] = [round(x, 2) for x in os.getloadavg()]
    out = os.path.abspath(args.out)
    write(result, out)
    log(f'bench-fleet: wrote {out}/fleet.md and fleet.json')
    return 0
