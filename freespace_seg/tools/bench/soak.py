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
Soak benchmark: ``segmentation_node`` at camera rate for a long time; memory, drops, latency.

``python -m freespace_seg bench-soak --minutes 30 --rate 30 --width 1280 --height 720``

1. Renders a few synthetic rooms ahead of time (``--scenes``) and starts the node in its own
   process, as ``ros2 run`` would, with the Fast DDS large-image profile
   (:func:`freespace_seg.tools.child.node_environment`,
   :class:`freespace_seg.tools.child.NodeProcess`).
2. Publishes the frames (rgb8 ``image`` + ``camera_info``) at ``--rate`` Hz for ``--minutes``
   (fractional minutes are fine) and subscribes to ``segmentation/mask`` (``--all-outputs``:
   to every image output and the grid, which makes the node compute all of them).
3. Every ``--interval`` seconds (60) it samples the node's RSS (``VmRSS`` from
   ``/proc/<pid>/status``), the inputs published and outputs received so far, the node's own
   counters from ``/diagnostics`` (``frames_received``, ``frames_dropped``...) and the p95
   latency (header stamp to receipt of the mask) of the masks received in that interval.
4. Writes ``soak_report.md`` (summary and per-interval table) and ``soak_report.json`` to
   ``--out`` and prints the Markdown. Exit code 0 when the node answered and exited cleanly.

This is a benchmark, not a test: its numbers depend on the machine and on its load.
"""

import datetime
import json
import os
import platform
import sys
import threading
import time

from freespace_seg.common.markdown import number, table
from freespace_seg.perception.engines import BACKENDS
from freespace_seg.tools.child import node_environment, NodeProcess, segmentation_node_command
from freespace_seg.tools.demo import wait_for_connection
import numpy as np

MIB = 1024.0
OUTPUT_TOPICS = ('segmentation/mask', 'segmentation/colored_mask', 'segmentation/overlay',
                 'free_space/mask', 'free_space/grid_image')


def add_arguments(parser):
    parser.add_argument('--minutes', type=float, default=30.0,
                        help='publishing time in minutes, fractions allowed (30)')
    parser.add_argument('--rate', type=float, default=30.0, help='camera rate in Hz (30)')
    parser.add_argument('--width', type=int, default=1280, help='camera width (1280)')
    parser.add_argument('--height', type=int, default=720, help='camera height (720)')
    parser.add_argument('--model', default='',
                        help='ONNX model with its card (default: models/freespace_lite0.onnx)')
    parser.add_argument('--backend', default='auto',
                        choices=BACKENDS)
    parser.add_argument('--num-threads', type=int, default=0,
                        help='inference threads of the node (0: the runtime default)')
    parser.add_argument('--scenes', type=int, default=8,
                        help='distinct rendered frames, published in a loop (8)')
    parser.add_argument('--seed', type=int, default=1000, help='scene seed (1000)')
    parser.add_argument('--interval', type=float, default=60.0,
                        help='seconds between samples of the per-interval table (60)')
    parser.add_argument('--all-outputs', action='store_true',
                        help='subscribe to every image output and the grid, not only the mask')
    parser.add_argument('--out', default=os.path.join('bench_output', 'soak'),
                        help='output folder for soak_report.md/.json (bench_output/soak)')


def rss_kib(pid):
    """Return the resident set size of a process in KiB (VmRSS), or None if it is gone."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _mib(kib):
    return None if kib is None else round(kib / MIB, 1)


def _ms(values, q):
    return round(float(np.percentile(values, q)), 1) if len(values) else None


def _fmt(value, unit=''):
    return number(value, missing='n/a', unit=unit)


def interval_label(index, interval):
    """Name the ``index``-th sample: 'minute 3' for whole minutes, else '7.5 s'."""
    seconds = index * interval
    if interval % 60.0 == 0:
        return f'minute {int(seconds // 60)}'
    return f'{seconds:g} s'


class Recorder:
    """Collects mask arrivals and the node's latest diagnostics (from executor threads)."""

    def __init__(self, status_name):
        self.status_name = status_name
        self.arrivals = []          # (receipt wall ns, stamp ns) per mask
        self.stamps = set()
        self.diag = None
        self.diag_time = 0.0
        self.lock = threading.Lock()

    def on_mask(self, msg):
        stamp = msg.header.stamp.sec * 10 ** 9 + msg.header.stamp.nanosec
        now = time.time_ns()
        with self.lock:
            self.arrivals.append((now, stamp))
            self.stamps.add(stamp)

    def on_diagnostics(self, msg):
        for status in msg.status:
            if status.name.startswith(self.status_name + ':'):
                with self.lock:
                    self.diag = {kv.key: kv.value for kv in status.values}
                    self.diag_time = time.monotonic()

    def counters(self):
        """Return the node's counters from its latest diagnostics (None where unknown)."""
        with self.lock:
            diag = dict(self.diag or {})
        keys = ('frames_received', 'frames_processed', 'frames_dropped', 'frames_bad')
        out = {}
        for key in keys:
            try:
                out[key] = int(diag[key])
            except (KeyError, ValueError):
                out[key] = None
        out['backend'] = diag.get('backend')
        out['devices'] = diag.get('devices')
        return out


def sample(label, t, node_pid, camera, recorder, window, span_s=None):
    """
    Return one row of the per-interval table.

    ``window`` = (start, end) wall-clock ns of the receipts that the row's latency covers;
    ``span_s``: the seconds of publishing in it, for the rate (default: the window's length).
    """
    with recorder.lock:
        arrivals = list(recorder.arrivals)
    lat = [(a - s) * 1e-6 for a, s in arrivals if window[0] <= a < window[1]]
    counters = recorder.counters()
    span = (window[1] - window[0]) * 1e-9 if span_s is None else span_s
    return {
        'sample': label, 't_s': round(t, 1), 'node_rss_mib': _mib(rss_kib(node_pid)),
        'bench_rss_mib': _mib(rss_kib(os.getpid())), 'inputs': camera.count,
        'outputs': len(arrivals), 'node_received': counters['frames_received'],
        'node_dropped': counters['frames_dropped'], 'node_bad': counters['frames_bad'],
        'masks_in_interval': len(lat),
        'fps_in_interval': round(len(lat) / span, 1) if span > 0 and lat else None,
        'latency_p50_ms': _ms(lat, 50), 'latency_p95_ms': _ms(lat, 95),
    }


def summarize(args, model, rows, camera, recorder, elapsed, node_rc):
    """Return the summary dict of a finished run."""
    sent = set(camera.sent)
    with recorder.lock:
        arrivals = list(recorder.arrivals)
        answered = recorder.stamps & sent
    lat = [(a - s) * 1e-6 for a, s in arrivals if s in sent]
    counters = recorder.counters()
    rss = [r['node_rss_mib'] for r in rows if r['node_rss_mib'] is not None]
    # After the first interval: ONNX Runtime's arenas and the DDS buffers have grown by then.
    later = [r for r in rows[1:] if r['node_rss_mib'] is not None]
    slope = growth_later = None
    if len(later) >= 2:
        growth_later = round(later[-1]['node_rss_mib'] - later[0]['node_rss_mib'], 1)
    if len(later) >= 3 and later[-1]['t_s'] - later[0]['t_s'] >= 120.0:
        t = np.array([r['t_s'] for r in later]) / 60.0
        slope = round(float(np.polyfit(t, [r['node_rss_mib'] for r in later], 1)[0]), 2)
    received = counters['frames_received']
    return {
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'host': f'{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, '
                f'Python {platform.python_version()}',
        'model': model, 'backend': counters['backend'], 'devices': counters['devices'],
        'minutes': args.minutes, 'rate_hz': args.rate, 'width': args.width,
        'height': args.height, 'scenes': args.scenes, 'all_outputs': bool(args.all_outputs),
        'publishing_s': round(elapsed, 1), 'inputs': camera.count,
        'node_received': received,
        'lost_before_node': None if received is None else camera.count - received,
        'node_processed': counters['frames_processed'],
        'node_dropped': counters['frames_dropped'], 'node_bad': counters['frames_bad'],
        'outputs': len(answered), 'inputs_without_output': camera.count - len(answered),
        'output_fps': round(len(answered) / elapsed, 2) if elapsed > 0 else None,
        'latency_p50_ms': _ms(lat, 50), 'latency_p95_ms': _ms(lat, 95),
        'latency_max_ms': round(max(lat), 1) if lat else None,
        'node_rss_start_mib': rss[0] if rss else None,
        'node_rss_end_mib': rss[-1] if rss else None,
        'node_rss_peak_mib': max(rss) if rss else None,
        'node_rss_growth_mib': round(rss[-1] - rss[0], 1) if rss else None,
        'node_rss_growth_after_first_interval_mib': growth_later,
        'node_rss_slope_mib_per_min': slope, 'node_exit_code': node_rc,
    }


def markdown(summary, rows):
    """Render the report: a summary table and the per-interval table."""
    s = summary
    lines = [
        '# segmentation_node soak', '',
        f'{s["date"]}, {s["host"]}. Model `{s["model"]}`, backend {_fmt(s["backend"])} '
        f'({_fmt(s["devices"])}). Camera {s["width"]}x{s["height"]} rgb8 at {s["rate_hz"]:g} Hz '
        f'for {s["minutes"]:g} min ({s["publishing_s"]} s), {s["scenes"]} rendered scenes; '
        f'outputs subscribed: {"all" if s["all_outputs"] else "segmentation/mask"}.', '',
    ]
    lines += table(('metric', 'value'), [
        ('inputs published', s['inputs']),
        ('frames received by the node', _fmt(s['node_received'])),
        ('lost before the node', _fmt(s['lost_before_node'])),
        ('frames processed by the node', _fmt(s['node_processed'])),
        ('frames dropped by the node (newest-frame slot)', _fmt(s['node_dropped'])),
        ('bad frames', _fmt(s['node_bad'])),
        ('masks received', s['outputs']),
        ('inputs without a mask', s['inputs_without_output']),
        ('output rate', _fmt(s['output_fps'], ' Hz')),
        ('latency stamp->mask p50 / p95 / max', f'{_fmt(s["latency_p50_ms"])} / '
         f'{_fmt(s["latency_p95_ms"])} / {_fmt(s["latency_max_ms"])} ms'),
        ('node RSS start / end',
         f'{_fmt(s["node_rss_start_mib"])} / {_fmt(s["node_rss_end_mib"])} MiB'),
        ('node RSS growth', f'{_fmt(s["node_rss_growth_mib"], " MiB")} (peak '
         f'{_fmt(s["node_rss_peak_mib"], " MiB")})'),
        ('node RSS growth after the first interval',
         _fmt(s['node_rss_growth_after_first_interval_mib'], ' MiB')),
        ('node RSS slope after the first interval (runs of 2+ min)',
         _fmt(s['node_rss_slope_mib_per_min'], ' MiB/min')),
    ])
    lines += [''] + table(
        ('sample', 't (s)', 'node RSS (MiB)', 'inputs', 'masks', 'node received',
         'node dropped', 'masks in interval', 'fps', 'p50 (ms)', 'p95 (ms)'),
        [(r['sample'], r['t_s'], _fmt(r['node_rss_mib']), r['inputs'], r['outputs'],
          _fmt(r['node_received']), _fmt(r['node_dropped']), r['masks_in_interval'],
          _fmt(r['fps_in_interval']), _fmt(r['latency_p50_ms']), _fmt(r['latency_p95_ms']))
         for r in rows])
    lines += ['', 'Latency is header stamp to receipt of `segmentation/mask` by this process; '
              'the p50/p95 of a row are over the masks received since the previous row. '
              'Inputs are counted when published; the node counters come from its last '
              '/diagnostics message.', '']
    return '\n'.join(lines)


def run(args):
    from diagnostic_msgs.msg import DiagnosticArray
    from freespace_seg.nodes.ros_util import stop_spin_thread
    from freespace_seg.nodes.synthetic_camera import render_frames, SyntheticCameraNode
    from freespace_seg.perception.pipeline import packaged_model_path
    from nav_msgs.msg import OccupancyGrid
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    if args.minutes <= 0 or args.rate <= 0 or args.interval <= 0:
        print('bench_soak: --minutes, --rate and --interval must be positive', file=sys.stderr)
        return 2
    model = os.path.abspath(args.model) if args.model else packaged_model_path()
    if not os.path.isfile(model):
        print(f'bench_soak: model not found: {model} (train one, or pass --model)',
              file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    env = node_environment()
    for key in ('FASTDDS_DEFAULT_PROFILES_FILE', 'ROS_AUTOMATIC_DISCOVERY_RANGE'):
        os.environ[key] = env[key]
    frames = render_frames(args.scenes, args.width, args.height, args.seed)
    total = max(1, int(round(args.minutes * 60.0 * args.rate)))

    namespace = f'/freespace_soak_{os.getpid()}'
    node_name = f'soak_segmentation_{os.getpid()}'
    print(f'bench_soak: model {model}; {total} frames {args.width}x{args.height} at '
          f'{args.rate:g} Hz ({args.minutes:g} min)', file=sys.stderr)
    node = NodeProcess(segmentation_node_command(
        ['-r', f'__ns:={namespace}', '-r', f'__node:={node_name}',
         '-p', f'model_file_path:={model}', '-p', f'backend:={args.backend}',
         '-p', f'num_threads:={args.num_threads}']), env, echo='  [node] ')
    rclpy.init()
    camera = SyntheticCameraNode(
        frames=frames, namespace=namespace,
        parameter_overrides=[Parameter('rate', value=float(args.rate)),
                             Parameter('max_frames', value=total)])
    listener = Node('soak_listener', namespace=namespace)
    recorder = Recorder(node_name)
    listener.create_subscription(Image, 'segmentation/mask', recorder.on_mask, 10)
    if args.all_outputs:
        for topic in OUTPUT_TOPICS[1:]:
            listener.create_subscription(Image, topic, lambda msg: None, 1)
        listener.create_subscription(OccupancyGrid, 'free_space/grid', lambda msg: None,
                                     QoSProfile(depth=1))
    listener.create_subscription(DiagnosticArray, '/diagnostics', recorder.on_diagnostics, 10)
    # Single-threaded: one callback hop costs well under a millisecond, where rclpy's
    # MultiThreadedExecutor added up to hundreds of ms to the measured latency here.
    executor = SingleThreadedExecutor()
    executor.add_node(listener)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    rows = []
    try:
        if not node.ready.wait(timeout=180):
            print('bench_soak: the node did not start; its log is above', file=sys.stderr)
            return 1
        wait_for_connection(camera, listener, namespace)
        start, start_ns = time.monotonic(), time.time_ns()
        rows.append(sample('start', 0.0, node.proc.pid, camera, recorder,
                           (start_ns, start_ns)))
        executor.add_node(camera)
        window_ns, index = start_ns, 1
        limit = total / args.rate * 3 + 30
        while not camera.done and time.monotonic() - start < limit and \
                node.proc.poll() is None:
            next_t = start + index * args.interval
            time.sleep(max(0.0, min(0.2, next_t - time.monotonic())))
            if time.monotonic() >= next_t and not camera.done:
                now_ns = time.time_ns()
                rows.append(sample(interval_label(index, args.interval),
                                   time.monotonic() - start, node.proc.pid, camera, recorder,
                                   (window_ns, now_ns)))
                print(f'bench_soak: {rows[-1]}', file=sys.stderr)
                window_ns, index = now_ns, index + 1
        elapsed = time.monotonic() - start
        # Drain: the last masks, then diagnostics written after them.
        time.sleep(2.0)
        marker = time.monotonic()
        deadline = marker + 5.0
        while recorder.diag_time < marker and time.monotonic() < deadline:
            time.sleep(0.05)
        rows.append(sample('end', time.monotonic() - start, node.proc.pid, camera, recorder,
                           (window_ns, time.time_ns()),
                           span_s=max(1e-3, elapsed - (window_ns - start_ns) * 1e-9)))
    finally:
        stop_spin_thread(executor, spin)
        camera.destroy_node()
        listener.destroy_node()
        rclpy.try_shutdown()
        node_rc = node.stop()
        print(f'node exited with code {node_rc}', file=sys.stderr)
    summary = summarize(args, model, rows, camera, recorder, elapsed, node_rc)
    text = markdown(summary, rows)
    with open(os.path.join(out_dir, 'soak_report.md'), 'w') as f:
        f.write(text)
    with open(os.path.join(out_dir, 'soak_report.json'), 'w') as f:
        json.dump({'summary': summary, 'samples': rows}, f, indent=2)
    print(text)
    print(f'report: {os.path.join(out_dir, "soak_report.md")}', file=sys.stderr)
    return 0 if summary['outputs'] > 0 and node_rc == 0 else 1
