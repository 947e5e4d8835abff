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
d. **naive**: the obvious node (:func:`naive_node_main`, ``python -m freespace_seg.bench
   --naive-node``), also in its own process: the image copied out of the message, numpy
   normalization, inference inside the subscription callback, ``np.argmax``, the mask
   published with ``msg.data = ndarray``, depth-10 reliable QoS.

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
(``grid_min_obstacle_run:=0 grid_cut_confidence:=0``, so no confidence is computed), and
**after**, every ground output (those plus free_space/scan and segmentation/confidence)
under the default rule, all subscribed by this process; both also subscribe
segmentation/mask, as every node row.
"""

import datetime
import json
import os
import platform
import signal
import struct
import subprocess
import sys
import threading
import time

import cv2
import numpy as np

#: the node's default camera in this benchmark
DEFAULT_SIZE = (1280, 720)
#: frames in flight in the closed-loop (saturation) condition
IN_FLIGHT = 2
CLK_TCK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


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
                             '(freespace_seg.profiling) and write profile_<n>.md per node '
                             'condition to --out')


# ---------------------------------------------------------------------------------------------
# Small helpers


def _csv(text, cast):
    return [cast(v) for v in str(text).split(',') if v.strip()]


def stats_ms(samples_s):
    """Return p50/p95/max/mean (ms) of a list of seconds, or Nones."""
    if not len(samples_s):
        return {'p50_ms': None, 'p95_ms': None, 'max_ms': None, 'mean_ms': None}
    a = np.asarray(samples_s, np.float64) * 1000.0
    return {'p50_ms': float(np.percentile(a, 50)), 'p95_ms': float(np.percentile(a, 95)),
            'max_ms': float(a.max()), 'mean_ms': float(a.mean())}


def _proc_stat(pid):
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            text = f.read().decode()
    except OSError:
        return None
    return text[text.rindex(')') + 2:].split()


def proc_cpu_seconds(pid):
    """User + system CPU seconds of a process (all threads), from /proc/<pid>/stat."""
    fields = _proc_stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_minor_faults(pid):
    """Minor page faults of a process so far (a fresh page touched: about 1 per 4 KiB)."""
    fields = _proc_stat(pid)
    return None if fields is None else int(fields[7])


def system_busy_seconds():
    """CPU seconds all cores spent busy (not idle or iowait) since boot, from /proc/stat."""
    try:
        with open('/proc/stat') as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / CLK_TCK


def proc_rss_mb(pid):
    """Resident set size (VmRSS) of a process in MiB, or None."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def machine_info():
    """CPU model, core count, load average and library versions, for the report."""
    import onnxruntime

    model = platform.processor() or ''
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    model = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {'cpu': model, 'cores': os.cpu_count(), 'loadavg_1_5_15': load,
            'python': platform.python_version(), 'numpy': np.__version__,
            'opencv': cv2.__version__, 'onnxruntime': onnxruntime.__version__,
            'platform': platform.platform()}


def _stamp_ns_from_cdr(data):
    """Read header.stamp (the first field) of a serialized little-endian CDR message."""
    sec, nanosec = struct.unpack_from('<iI', data, 4)
    return sec * 1_000_000_000 + nanosec


# ---------------------------------------------------------------------------------------------
# Frames


class Frames:
    """The benchmark's camera frames as arrays, Image, CompressedImage and CameraInfo."""

    def __init__(self, count, width, height, seed):
        from freespace_seg.image_codec import array_to_compressed, array_to_image
        from freespace_seg.nodes.synthetic_camera import (camera_info_from_intrinsics,
                                                          render_frames)

        frames = render_frames(count, width, height, seed, show_progress=True)
        self.rgb = [np.ascontiguousarray(f.image) for f in frames]
        self.intrinsics = frames[0].intrinsics
        self.images = [array_to_image(img, 'rgb8') for img in self.rgb]
        self.jpegs = [array_to_compressed(img, 'jpeg', quality=90) for img in self.rgb]
        self.info = camera_info_from_intrinsics(self.intrinsics)
        for msg in self.images + self.jpegs + [self.info]:
            msg.header.frame_id = 'camera_optical_frame'
        self.width, self.height = width, height

    @property
    def jpeg_kb(self):
        return float(np.mean([len(m.data) for m in self.jpegs])) / 1024.0


# ---------------------------------------------------------------------------------------------
# (a) engine and (b) pipeline, in this process


def measure_engine(model, threads, frames, seconds, warmup_runs=10):
    """Time ``engine.run`` alone on preprocessed tensors; return a result row."""
    from freespace_seg.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model, backend='onnxruntime', num_threads=threads)
    try:
        tensors = [np.array(pipe.preprocessor(f.shape[1], f.shape[0])(f), copy=True)
                   for f in frames.rgb]
        engine = pipe.engine
        for i in range(warmup_runs):
            engine.run(tensors[i % len(tensors)])
        times = []
        cpu0, t_start, busy0 = time.process_time(), time.perf_counter(), system_busy_seconds()
        i = 0
        while time.perf_counter() - t_start < seconds or len(times) < 5:
            t0 = time.perf_counter()
            engine.run(tensors[i % len(tensors)])
            times.append(time.perf_counter() - t0)
            i += 1
        wall = time.perf_counter() - t_start
        cpu = time.process_time() - cpu0
        other = _other_cpu_percent(busy0, cpu, wall)
        desc = pipe.engine.describe()
    finally:
        pipe.close()
    row = {'kind': 'engine', 'threads': threads, 'input': 'tensor',
           'fps': len(times) / sum(times), 'frames': len(times),
           'cpu_percent': 100.0 * cpu / wall, 'engine': desc, 'samples_ms': _ms_list(times),
           'other_cpu_percent': other, 'loadavg_1min': os.getloadavg()[0]}
    row.update(stats_ms(times))
    return row


def measure_pipeline(model, threads, frames, seconds, warmup_runs=5):
    """
    Time the node's per-frame work without ROS transport; return a result row.

    Per frame: ``msg_to_rgb`` on a ``sensor_msgs/Image`` (zero-copy view), the pipeline
    (preprocess, inference, class decoding, mask back to camera size, and the confidence
    that the node's default grid rule reads), the free-space mask, the ground projection
    under the default :class:`GridRule` (grid and obstacle points) and the mask and grid
    messages.
    """
    from freespace_seg.geometry import CameraMount
    from freespace_seg.image_codec import array_to_image, msg_to_rgb
    from freespace_seg.nodes.grid_msgs import grid_to_msg
    from freespace_seg.pipeline import SegmentationPipeline
    from freespace_seg.projection import GridRule, GridSpec, GroundProjector

    pipe = SegmentationPipeline(model, backend='onnxruntime', num_threads=threads)
    projector = GroundProjector(frames.intrinsics, CameraMount(z=0.25, pitch=0.3), GridSpec())
    rule = GridRule()
    stages = {k: [] for k in ('decode', 'preprocess', 'inference', 'postprocess',
                              'confidence', 'free_and_projection', 'messages')}
    times = []

    def one(msg):
        t0 = time.perf_counter()
        rgb = msg_to_rgb(msg)
        t1 = time.perf_counter()
        mask, confidence = pipe.segment_with_confidence(rgb)
        t2 = time.perf_counter()
        free = pipe.free_mask(mask)
        ground = projector.ground(free, confidence, rule)
        t3 = time.perf_counter()
        array_to_image(mask, 'mono8', msg.header)
        grid_to_msg(ground.grid, projector.grid_spec, msg.header.stamp, 'base_link')
        t4 = time.perf_counter()
        return t4 - t0, {'decode': t1 - t0, 'free_and_projection': t3 - t2,
                         'messages': t4 - t3, **pipe.timings}

    try:
        for i in range(warmup_runs):
            one(frames.images[i % len(frames.images)])
        cpu0, t_start, busy0 = time.process_time(), time.perf_counter(), system_busy_seconds()
        i = 0
        while time.perf_counter() - t_start < seconds or len(times) < 5:
            total, parts = one(frames.images[i % len(frames.images)])
            times.append(total)
            for k, v in parts.items():
                stages[k].append(v)
            i += 1
        wall = time.perf_counter() - t_start
        cpu = time.process_time() - cpu0
        other = _other_cpu_percent(busy0, cpu, wall)
    finally:
        pipe.close()
    row = {'kind': 'pipeline', 'threads': threads, 'input': f'rgb8 {frames.width}x{frames.height}',
           'fps': len(times) / sum(times), 'frames': len(times),
           'other_cpu_percent': other, 'loadavg_1min': os.getloadavg()[0],
           'cpu_percent': 100.0 * cpu / wall,
           'stages_p50_ms': {k: round(float(np.median(v)) * 1000.0, 3)
                             for k, v in stages.items()},
           'samples_ms': _ms_list(times)}
    row.update(stats_ms(times))
    return row


def _other_cpu_percent(busy0, own_cpu, wall):
    busy1 = system_busy_seconds()
    if busy0 is None or busy1 is None:
        return None
    return 100.0 * ((busy1 - busy0) - own_cpu) / wall


def _ms_list(seconds):
    return [round(s * 1000.0, 3) for s in seconds]


# ---------------------------------------------------------------------------------------------
# (c) node and (d) naive node, in their own processes, over real topics


class Child:
    """A node in a child process; its output kept (and echoed on failure)."""

    def __init__(self, cmd, env, ready_text):
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.ready = threading.Event()
        self.lines = []
        self._ready_text = ready_text
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if self._ready_text in line:
                self.ready.set()

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        """SIGINT, as Ctrl-C would; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._thread.join(timeout=2)
        return self.proc.returncode

    def log_tail(self, n=15):
        return '\n'.join('    ' + line for line in self.lines[-n:])


class Condition:
    """One topic condition: which node, model, threads, input and camera rate."""

    def __init__(self, kind, model_label, model, threads, rate, transport='raw',
                 all_outputs=False, ground=''):
        self.kind = kind              # 'node' or 'naive'
        self.model_label = model_label
        self.model = model
        self.threads = threads
        self.rate = rate              # Hz, or 0 for closed loop
        self.transport = transport    # 'raw' or 'compressed'
        self.all_outputs = all_outputs
        self.ground = ground          # '', 'before' or 'after' (see --ground-outputs)

    @property
    def camera(self):
        return f'{self.rate:g} Hz' if self.rate else f'closed loop ({IN_FLIGHT} in flight)'

    def label(self, frames):
        size = f'{frames.width}x{frames.height}'
        what = 'jpeg ' + size if self.transport == 'compressed' else 'rgb8 ' + size
        extra = ', all 7 outputs' if self.all_outputs else ''
        if self.ground:
            extra += f', ground outputs {self.ground}'
        return f'{self.kind} {self.model_label} {self.threads}t {what} {self.camera}{extra}'


class TopicBench:
    """Runs topic conditions: a child node process and a camera in this process."""

    def __init__(self, frames, warmup, duration, log):
        import rclpy

        from freespace_seg.demo import node_environment

        self.env = node_environment()
        for key in ('FASTDDS_DEFAULT_PROFILES_FILE', 'ROS_AUTOMATIC_DISCOVERY_RANGE'):
            os.environ[key] = self.env[key]
        self.frames = frames
        self.warmup = warmup
        self.duration = duration
        self.log = log
        self.index = 0
        #: where node processes write their profiles (None: no profiling)
        self.profile_dir = None
        self._rclpy = rclpy
        self._own_context = not rclpy.ok()
        if self._own_context:
            rclpy.init()

    def close(self):
        if self._own_context:
            self._rclpy.try_shutdown()

    def _command(self, cond, ns, node_name):
        if cond.kind == 'naive':
            cmd = [sys.executable, '-m', 'freespace_seg.bench', '--naive-node', '--ros-args']
            ready = 'naive node listening'
        else:
            cmd = [sys.executable, '-m', 'freespace_seg.nodes.segmentation_node',
                   '--ros-args']
            ready = 'listening on'
        cmd += ['-r', f'__ns:={ns}', '-r', f'__node:={node_name}',
                '-p', f'model_file_path:={cond.model}', '-p', f'num_threads:={cond.threads}']
        if cond.kind == 'node':
            cmd += ['-p', 'backend:=onnxruntime', '-p',
                    f'image_transport:={cond.transport}']
            if cond.all_outputs:
                cmd += ['-p', 'publish_unsubscribed:=true']
            if cond.ground == 'before':
                cmd += ['-p', 'grid_min_obstacle_run:=0.0', '-p', 'grid_cut_confidence:=0.0']
        return cmd, ready

    def run(self, cond, duration=None, rss_every=0.0):
        """Measure one condition; return its result row."""
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import OccupancyGrid
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import CameraInfo, CompressedImage, Image

        from freespace_seg.nodes.ros_util import stop_spin_thread
        from freespace_seg.nodes.segmentation_node import GRID_QOS

        duration = self.duration if duration is None else duration
        self.index += 1
        ns = f'/freespace_bench_{os.getpid()}_{self.index}'
        node_name = f'bench_{cond.kind}_{self.index}'
        cmd, ready_text = self._command(cond, ns, node_name)
        env = self.env
        profile = None
        if self.profile_dir and cond.kind == 'node':
            profile = os.path.join(self.profile_dir, f'profile_{self.index}.md')
            env = dict(env, FREESPACE_SEG_PROFILE=profile)
        child = Child(cmd, env, ready_text)
        bench = Node(f'bench_camera_{self.index}', namespace=ns)
        qos = QoSProfile(depth=10)  # reliable, like a driver with the default QoS
        compressed = cond.transport == 'compressed'
        msgs = self.frames.jpegs if compressed else self.frames.images
        pub_image = bench.create_publisher(CompressedImage if compressed else Image,
                                           'image/compressed' if compressed else 'image', qos)
        pub_info = bench.create_publisher(CameraInfo, 'camera_info', qos)
        sent = {}            # stamp ns -> publish time (monotonic)
        masks = {}           # stamp ns -> receipt time ns (wall clock, as the stamp)
        grids = {}
        diags = []
        tokens = threading.Semaphore(IN_FLIGHT)
        lock = threading.Lock()

        def on_mask(data):
            now = time.time_ns()
            stamp = _stamp_ns_from_cdr(data)
            with lock:
                masks[stamp] = now
            tokens.release()

        def on_grid(data):
            grids[_stamp_ns_from_cdr(data)] = time.time_ns()

        def on_diag(msg):
            for st in msg.status:
                if st.name.startswith(node_name + ':'):
                    diags.append((time.monotonic(), {kv.key: kv.value for kv in st.values}))

        bench.create_subscription(Image, 'segmentation/mask', on_mask, qos, raw=True)
        if cond.kind == 'node':
            bench.create_subscription(OccupancyGrid, 'free_space/grid', on_grid, GRID_QOS,
                                      raw=True)
        bench.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 10)
        extra = {}
        for topic, msg_type in ground_topics(cond.ground):
            def count(data, topic=topic):
                extra[topic] = extra.get(topic, 0) + 1
            bench.create_subscription(msg_type, topic, count, qos, raw=True)
        executor = SingleThreadedExecutor()
        executor.add_node(bench)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()
        stop = threading.Event()
        row = {'kind': cond.kind, 'model': cond.model_label, 'threads': cond.threads,
               'input': ('jpeg ' if compressed else 'rgb8 ')
               + f'{self.frames.width}x{self.frames.height}',
               'camera': cond.camera, 'rate_hz': cond.rate, 'all_outputs': cond.all_outputs,
               'label': cond.label(self.frames)}
        if cond.ground:
            row['ground'] = cond.ground
        try:
            if not child.ready.wait(timeout=120):
                raise RuntimeError(f'{cond.kind} did not start:\n{child.log_tail()}')
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (
                    pub_image.get_subscription_count() == 0
                    or bench.count_publishers(f'{ns}/segmentation/mask') == 0):
                time.sleep(0.05)
            time.sleep(0.3)

            def camera():
                clock = bench.get_clock()
                period = 1.0 / cond.rate if cond.rate else 0.0
                next_t = time.monotonic()
                i = 0
                while not stop.is_set():
                    if cond.rate:
                        now = time.monotonic()
                        if now < next_t:
                            time.sleep(next_t - now)
                        next_t += period
                        if time.monotonic() - next_t > period:
                            next_t = time.monotonic() + period  # fell behind: no bursts
                    else:
                        tokens.acquire(timeout=0.5)  # a lost frame frees its token here
                        if stop.is_set():
                            break
                    msg = msgs[i % len(msgs)]
                    stamp = clock.now()
                    msg.header.stamp = self.frames.info.header.stamp = stamp.to_msg()
                    pub_info.publish(self.frames.info)
                    pub_image.publish(msg)
                    sent[stamp.nanoseconds] = time.monotonic()
                    i += 1

            cam = threading.Thread(target=camera, daemon=True)
            cam.start()
            time.sleep(self.warmup)
            pid = child.pid
            t0 = time.monotonic()
            cpu0, self_cpu0 = proc_cpu_seconds(pid), time.process_time()
            busy0, faults0 = system_busy_seconds(), proc_minor_faults(pid)
            rss0 = proc_rss_mb(pid)
            rss_series = [(0.0, rss0)]
            while time.monotonic() - t0 < duration:
                time.sleep(min(rss_every or 0.25, max(0.0, duration - (time.monotonic() - t0))))
                if rss_every:
                    rss_series.append((time.monotonic() - t0, proc_rss_mb(pid)))
                if child.proc.poll() is not None:
                    raise RuntimeError(f'{cond.kind} exited with code {child.proc.returncode}'
                                       f':\n{child.log_tail()}')
            t1 = time.monotonic()
            cpu1, self_cpu1 = proc_cpu_seconds(pid), time.process_time()
            busy1, faults1 = system_busy_seconds(), proc_minor_faults(pid)
            rss1 = proc_rss_mb(pid)
            stop.set()
            tokens.release()
            cam.join(timeout=2)
            time.sleep(1.0)  # late masks of frames sent in the window
        finally:
            stop.set()
            stop_spin_thread(executor, spin)
            bench.destroy_node()
            code = child.stop()
        window = [s for s, t in sent.items() if t0 <= t < t1]
        answered = [s for s in window if s in masks]
        lat = [(masks[s] - s) * 1e-9 for s in answered]
        wall = t1 - t0
        row.update({
            'published': len(window), 'answered': len(answered),
            'dropped': len(window) - len(answered), 'fps': len(answered) / wall,
            'camera_fps': len(window) / wall,
            'cpu_percent': 100.0 * (cpu1 - cpu0) / wall if cpu0 is not None else None,
            'bench_cpu_percent': 100.0 * (self_cpu1 - self_cpu0) / wall,
            'rss_mb': rss1, 'rss_start_mb': rss0, 'window_s': wall, 'exit_code': code,
            'loadavg_1min': os.getloadavg()[0],
            'grids': sum(1 for s in window if s in grids),
            'extra_messages': dict(extra),
            'samples_ms': _ms_list(lat)})
        row.update(stats_ms(lat))
        if profile is not None and os.path.isfile(profile):
            row['profile'] = os.path.basename(profile)
        if faults0 is not None and faults1 is not None:
            row['minor_faults_per_s'] = (faults1 - faults0) / wall
        if busy0 is not None and cpu0 is not None:
            # Everything else on the machine during the window (other users' processes).
            row['other_cpu_percent'] = 100.0 * ((busy1 - busy0) - (cpu1 - cpu0)
                                                - (self_cpu1 - self_cpu0)) / wall
        if rss_every:
            row['rss_series'] = [(round(t, 1), r) for t, r in rss_series]
        node_diag = [d for t, d in diags if t0 <= t <= t1 + 0.5]
        if node_diag:
            row['node_diagnostics'] = node_diag[-1]
        return row


# ---------------------------------------------------------------------------------------------
# (d) the naive node


def naive_node_main(argv=None):
    """
    Run the naive baseline node: what a first, obvious rclpy segmentation node does.

    The image is copied out of the message, resized and normalized with float numpy
    arithmetic, laid out with ``transpose``; ONNX Runtime runs inside the subscription
    callback (default session options apart from the thread count); the class mask comes
    from ``np.argmax``, is resized back and published with ``msg.data = ndarray``.
    Subscription and publisher use a depth-10 reliable QoS, so frames queue while it works.
    """
    import onnxruntime as ort
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image

    from freespace_seg.model_card import card_path_for_model, load_card

    rclpy.init(args=argv)
    node = Node('naive_segmentation')
    model = node.declare_parameter('model_file_path', '').value
    threads = node.declare_parameter('num_threads', 0).value
    card = load_card(card_path_for_model(model))
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = int(threads)
    session = ort.InferenceSession(model, opts, providers=['CPUExecutionProvider'])
    input_name = session.get_inputs()[0].name
    width, height = card.input_width, card.input_height
    mean = np.array(card.mean)
    std = np.array(card.std)
    pub = node.create_publisher(Image, 'segmentation/mask', 10)

    def on_image(msg):
        img = np.frombuffer(msg.data, dtype=np.uint8).copy().reshape(msg.height, msg.width, 3)
        x = cv2.resize(img, (width, height)).astype(np.float32) / 255.0
        x = (x - mean) / std
        x = x.transpose(2, 0, 1)[np.newaxis].astype(np.float32)
        logits = session.run(None, {input_name: x})[0]
        mask = np.argmax(logits[0], axis=0).astype(np.uint8)
        mask = cv2.resize(mask, (msg.width, msg.height), interpolation=cv2.INTER_NEAREST)
        out = Image()
        out.header = msg.header
        out.height, out.width = mask.shape
        out.encoding = 'mono8'
        out.step = mask.shape[1]
        out.data = mask.ravel()
        pub.publish(out)

    node.create_subscription(Image, 'image', on_image, 10)
    node.get_logger().info(f'naive node listening on {node.resolve_topic_name("image")}')
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


# ---------------------------------------------------------------------------------------------
# Report


def _f(x, digits=1):
    return '-' if x is None else f'{x:.{digits}f}'


def markdown_table(rows):
    """Return the Markdown results table."""
    lines = ['| # | measured | model | threads | input | camera | fps | p50 ms | p95 ms | '
             'max ms | dropped | CPU % | RSS MB | bench CPU % | other CPU % |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for i, r in enumerate(rows, 1):
        kind = r['kind'] + (' (all outputs)' if r.get('all_outputs') else '') + \
            (f' (ground outputs {r["ground"]})' if r.get('ground') else '')
        dropped = '-' if 'published' not in r else f'{r["dropped"]}/{r["published"]}'
        lines.append(
            f'| {i} | {kind} | {r["model"]} | {r["threads"]} | {r["input"]} | '
            f'{r.get("camera", "-")} | {_f(r["fps"])} | {_f(r["p50_ms"])} | '
            f'{_f(r["p95_ms"])} | {_f(r["max_ms"])} | {dropped} | {_f(r["cpu_percent"], 0)} | '
            f'{_f(r.get("rss_mb"), 0)} | {_f(r.get("bench_cpu_percent"), 0)} | '
            f'{_f(r.get("other_cpu_percent"), 0)} |')
    return '\n'.join(lines)


def find(rows, kind, model=None, threads=None, rate=None, transport='rgb8', all_outputs=False):
    """Return the first row matching the filters, or None."""
    for r in rows:
        if r['kind'] != kind or (model is not None and r['model'] != model):
            continue
        if threads is not None and r['threads'] != threads:
            continue
        if rate is not None and r.get('rate_hz') != rate:
            continue
        if kind in ('node', 'naive') and not r['input'].startswith(transport):
            continue
        if bool(r.get('all_outputs')) != all_outputs or r.get('ground'):
            continue
        return r
    return None


def saturated(rows, model, threads):
    """
    Return the node's best row where it, not the camera, set the pace, or None.

    That is the closed-loop row, or a raw rgb8 row whose camera published over 5 % more
    frames than the node processed.
    """
    best = None
    for r in rows:
        if r['kind'] != 'node' or r['model'] != model or r['threads'] != threads or \
                r.get('all_outputs') or r.get('ground') or not r['input'].startswith('rgb8'):
            continue
        if r['rate_hz'] == 0 or r['camera_fps'] > 1.05 * r['fps']:
            if best is None or r['fps'] > best['fps']:
                best = r
    return best


def ratios_and_goals(rows, threads_list, rates, models):
    """
    Compute the quoted ratios and check the goals; return (ratios, goals).

    Goals (one run on one machine): node throughput >= 0.95x the raw engine's at saturation
    (:func:`saturated`);
    p95 latency at 30 Hz <= 1.3x the engine's mean time + 3 ms; >= 3x the naive node's fps
    and <= 1/3 of its p95 at 30 Hz and above; >= 60 fps end to end at a 60 Hz camera.
    """
    ratios, goals = [], []

    def goal(name, value, target, ok, detail):
        goals.append({'goal': name, 'value': value, 'target': target, 'met': bool(ok),
                      'detail': detail})

    for model in models:
        for t in threads_list:
            eng = find(rows, 'engine', model, t)
            sat = saturated(rows, model, t)
            if eng and sat:
                r = sat['fps'] / eng['fps']
                ratios.append({'ratio': f'node/engine throughput, {model} {t}t, saturation',
                               'value': r})
                goal(f'node >= 0.95x engine throughput at saturation ({model}, {t}t)',
                     r, 0.95, r >= 0.95,
                     f'node {sat["fps"]:.1f} fps ({sat["camera"]}) vs engine '
                     f'{eng["fps"]:.1f} fps')
            node30 = find(rows, 'node', model, t, rate=30.0)
            if eng and node30 and node30['p95_ms'] is not None:
                limit = 1.3 * eng['mean_ms'] + 3.0
                goal(f'p95 at 30 Hz <= 1.3x engine + 3 ms ({model}, {t}t)',
                     node30['p95_ms'], limit, node30['p95_ms'] <= limit,
                     f'p95 {node30["p95_ms"]:.1f} ms vs limit {limit:.1f} ms '
                     f'(engine mean {eng["mean_ms"]:.1f} ms)')
            node60 = find(rows, 'node', model, t, rate=60.0)
            if node60:
                goal(f'>= 60 fps end to end at 60 Hz ({model}, {t}t)', node60['fps'], 60.0,
                     node60['fps'] >= 60.0 * 0.98,
                     f'{node60["fps"]:.1f} fps of {node60["camera_fps"]:.1f} Hz published')
    for rate in rates:
        naive = find(rows, 'naive', rate=rate)
        if not naive:
            continue
        for model in models:
            node = find(rows, 'node', model, naive['threads'], rate=rate)
            if not node:
                continue
            fr = node['fps'] / naive['fps'] if naive['fps'] else float('inf')
            ratios.append({'ratio': f'node {model}/naive fps at {rate:g} Hz', 'value': fr})
            pr = None
            if node['p95_ms'] is not None and naive['p95_ms']:
                pr = node['p95_ms'] / naive['p95_ms']
                ratios.append({'ratio': f'node {model}/naive p95 at {rate:g} Hz', 'value': pr})
            if rate >= 30:
                goal(f'>= 3x naive fps at {rate:g} Hz ({model})', fr, 3.0, fr >= 3.0,
                     f'node {node["fps"]:.1f} vs naive {naive["fps"]:.1f} fps')
                if pr is not None:
                    goal(f'<= 1/3 naive p95 at {rate:g} Hz ({model})', pr, 1 / 3,
                         pr <= 1 / 3,
                         f'node {node["p95_ms"]:.1f} vs naive {naive["p95_ms"]:.1f} ms')
    before = [r for r in rows if r.get('ground') == 'before']
    after = [r for r in rows if r.get('ground') == 'after']
    if before and after:
        b, a = before[0], after[0]
        fr = a['fps'] / b['fps'] if b['fps'] else float('nan')
        ratios.append({'ratio': 'ground outputs after/before fps at 30 Hz', 'value': fr})
        goal('every ground output within 10 % of before (fps)', fr, 0.9, fr >= 0.9,
             f'after {a["fps"]:.1f} fps vs before {b["fps"]:.1f} fps')
        if a['p95_ms'] is not None and b['p95_ms']:
            pr = a['p95_ms'] / b['p95_ms']
            ratios.append({'ratio': 'ground outputs after/before p95 at 30 Hz', 'value': pr})
            goal('every ground output within 10 % of before (p95)', pr, 1.1, pr <= 1.1,
                 f'after {a["p95_ms"]:.1f} ms vs before {b["p95_ms"]:.1f} ms')
    for model in models:
        for t in threads_list:
            eng = find(rows, 'engine', model, t)
            pipe = find(rows, 'pipeline', model, t)
            if eng and pipe:
                ratios.append({'ratio': f'pipeline/engine throughput, {model} {t}t',
                               'value': pipe['fps'] / eng['fps']})
    return ratios, goals


def ratio_lines(ratios, goals):
    lines = ['| ratio | value |', '|---|---|']
    lines += [f'| {r["ratio"]} | {r["value"]:.2f} |' for r in ratios]
    lines += ['', '| goal | measured | target | met | detail |', '|---|---|---|---|---|']
    for g in goals:
        lines.append(f'| {g["goal"]} | {g["value"]:.2f} | {g["target"]:.2f} | '
                     f'{"yes" if g["met"] else "**no**"} | {g["detail"]} |')
    return '\n'.join(lines)


def draw_latency_plot(rows, path, title=''):
    """
    Draw every row's latency (or per-call time) distribution as a PNG, with OpenCV.

    One line per row: a bar from p5 to p95, a tick at the median, a whisker to the maximum,
    on a log-scaled time axis; the processed fps is written at the right.
    """
    rows = [r for r in rows if r.get('samples_ms')]
    left, right, top, line_h = 430, 110, 60, 26
    width = 1280
    height = top + line_h * max(1, len(rows)) + 60
    img = np.full((height, width, 3), 255, np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    values = [v for r in rows for v in r['samples_ms'] if v > 0]
    lo = 10 ** np.floor(np.log10(max(min(values), 1e-3))) if values else 0.1
    top_value = max(values) if values else 1000.0
    decade = 10 ** np.floor(np.log10(top_value))
    hi = next(decade * m for m in (1, 2, 5, 10) if decade * m >= top_value)
    hi = max(hi, lo * 10)
    x0, x1 = left, width - right

    def x_of(ms):
        ms = min(max(ms, lo), hi)
        return int(round(x0 + (np.log10(ms) - np.log10(lo)) / (np.log10(hi) - np.log10(lo))
                         * (x1 - x0)))

    cv2.putText(img, title or 'latency (stamp -> mask received) and per-call time, ms',
                (10, 25), font, 0.6, (0, 0, 0), 1, cv2.LINE_AA)
    decade = lo
    while decade <= hi * 1.0001:
        for m in (1, 2, 5):
            v = decade * m
            if lo <= v <= hi:
                x = x_of(v)
                cv2.line(img, (x, top - 10), (x, height - 45), (225, 225, 225), 1)
                cv2.putText(img, f'{v:g}', (x - 10, height - 28), font, 0.45, (80, 80, 80), 1,
                            cv2.LINE_AA)
        decade *= 10
    colors = {'engine': (180, 119, 31), 'pipeline': (14, 127, 255), 'node': (44, 160, 44),
              'naive': (40, 39, 214)}  # BGR
    for i, r in enumerate(rows):
        y = top + i * line_h + line_h // 2
        a = np.asarray(r['samples_ms'])
        p5, p50, p95, mx = (float(np.percentile(a, q)) for q in (5, 50, 95, 100))
        label = r.get('label') or f'{r["kind"]} {r["model"]} {r["threads"]}t'
        cv2.putText(img, label[:58], (8, y + 5), font, 0.42, (0, 0, 0), 1, cv2.LINE_AA)
        color = colors.get(r['kind'], (0, 0, 0))
        cv2.line(img, (x_of(p95), y), (x_of(mx), y), color, 1, cv2.LINE_AA)
        cv2.rectangle(img, (x_of(p5), y - 7), (max(x_of(p95), x_of(p5) + 2), y + 7), color, -1)
        cv2.line(img, (x_of(p50), y - 10), (x_of(p50), y + 10), (0, 0, 0), 2)
        cv2.putText(img, f'{r["fps"]:.1f} fps', (x1 + 10, y + 5), font, 0.45, (0, 0, 0), 1,
                    cv2.LINE_AA)
    cv2.putText(img, 'ms (log scale); bar p5-p95, black tick median, line to max',
                (x0, height - 8), font, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.imwrite(path, img)
    return path


def memory_summary(row):
    """Return RSS growth figures of a memory run: after the first minute to the end."""
    series = [(t, r) for t, r in row.get('rss_series', []) if r is not None]
    if len(series) < 2:
        return None
    settle = min(60.0, series[-1][0] / 4)
    base = next(((t, r) for t, r in series if t >= settle), series[0])
    end = series[-1]
    minutes = (end[0] - base[0]) / 60.0
    return {'rss_first_mb': series[0][1], 'rss_after_settle_mb': base[1],
            'settle_s': base[0], 'rss_end_mb': end[1], 'growth_mb': end[1] - base[1],
            'growth_mb_per_min': (end[1] - base[1]) / minutes if minutes > 0 else None,
            'rss_max_mb': max(r for _, r in series), 'minutes': end[0] / 60.0}


# ---------------------------------------------------------------------------------------------
# Command


def _models(args):
    from freespace_seg.pipeline import packaged_model_path
    from freespace_seg.quantize import int8_path_for

    fp32 = os.path.abspath(args.model) if args.model else packaged_model_path()
    models = [('fp32', fp32)]
    if args.int8_model != 'none':
        int8 = os.path.abspath(args.int8_model) if args.int8_model else int8_path_for(fp32)
        if os.path.isfile(int8):
            models.append(('int8', int8))
        elif args.int8_model:
            raise SystemExit(f'bench: INT8 model not found: {int8}')
    return models


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
    return threads_list, rates, conds


def ground_topics(ground):
    """Return the (topic, type) pairs a ground-output condition subscribes besides the mask."""
    from sensor_msgs.msg import Image, LaserScan, PointCloud2

    if not ground:
        return []
    topics = [('free_space/obstacles', PointCloud2), ('free_space/grid_image', Image)]
    if ground == 'after':
        topics += [('free_space/scan', LaserScan), ('segmentation/confidence', Image)]
    return topics  # and free_space/grid, which every node row subscribes


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


def write_report(result, out_dir):
    """
    Print the Markdown report of a result and write bench.md, bench.json and latency.png.

    The ratios and goals are computed here from the rows, so ``--from-json`` can redo the
    report of an earlier run.
    """
    info, rows, memory = result['machine'], result['rows'], result.get('memory')
    models = result['models']
    given = result.get('args', {})
    result.setdefault('camera', [given.get('width'), given.get('height')])
    result.setdefault('seed', given.get('seed'))
    result.setdefault('threads', sorted({r['threads'] for r in rows}))
    result.setdefault('rates', sorted({r['rate_hz'] for r in rows if r.get('rate_hz')}))
    ratios, goals = ratios_and_goals(rows, result['threads'], result['rates'], list(models))
    result['ratios'], result['goals'] = ratios, goals
    width, height = result['camera']
    jpeg = f'{result["jpeg_kb"]:.0f} KB' if result.get('jpeg_kb') else '?'
    info.setdefault('loadavg_end', None)
    header = [
        f'# freespace_seg benchmark ({info.get("date", "")})',
        '',
        f'Machine: {info["cpu"]}, {info["cores"]} cores; load average at start '
        f'{info["loadavg_1_5_15"]}, at end {info["loadavg_end"]}. ONNX Runtime '
        f'{info["onnxruntime"]} (CPU), OpenCV {info["opencv"]}, numpy {info["numpy"]}, '
        f'Python {info["python"]}.',
        'Models: ' + ', '.join(f'{k} `{os.path.basename(v)}`' for k, v in models.items())
        + f'. Camera {width}x{height}, {result["scenes"]} synthetic scenes (seed '
        f'{result["seed"]}), JPEG {jpeg} average. '
        f'{result["duration_s"]:g} s measured per topic condition after '
        f'{result["warmup_s"]:g} s warm-up.',
        '',
        'engine/pipeline rows: per-call time in this process. node/naive rows: latency '
        'stamp -> receipt of segmentation/mask in the bench process (the publish time '
        'plus one transport hop); fps counts masks received for frames published in the '
        'window; dropped = published - answered; CPU % and RSS of the node process '
        '(100 % = one core); bench CPU %: this process (camera and receiver); other CPU %: '
        'everything else on the machine during the window (/proc/stat). The node '
        'rows subscribe segmentation/mask and free_space/grid (the naive node publishes '
        'the mask only).',
        '',
    ]
    text = '\n'.join(header) + '\n' + markdown_table(rows) + '\n\n' + \
        ratio_lines(ratios, goals) + '\n'
    profiles = [(i, r['profile']) for i, r in enumerate(rows, 1) if r.get('profile')]
    if profiles:
        text += ('\nProfiles of the node processes (stack samples, freespace_seg.profiling): '
                 + ', '.join(f'row {i}: `{name}`' for i, name in profiles) + '.\n')
    if memory:
        text += (f'\nMemory: RSS {memory["rss_after_settle_mb"]:.1f} MB after '
                 f'{memory["settle_s"]:.0f} s, {memory["rss_end_mb"]:.1f} MB at '
                 f'{memory["minutes"]:.1f} min (max {memory["rss_max_mb"]:.1f} MB): growth '
                 f'{memory["growth_mb"]:+.1f} MB'
                 + (f' ({memory["growth_mb_per_min"]:+.2f} MB/min)'
                    if memory['growth_mb_per_min'] is not None else '') + '.\n')
    print(text)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, 'bench.md'), 'w') as f:
        f.write(text)
    draw_latency_plot(rows, os.path.join(out_dir, 'latency.png'))
    with open(os.path.join(out_dir, 'bench.json'), 'w') as f:
        json.dump(result, f, indent=1)
    return text


def main(argv=None):
    """``python -m freespace_seg.bench``: the naive node with --naive-node, else the bench."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == '--naive-node':
        return naive_node_main(argv[1:])
    from freespace_seg import cli
    return cli.main(['bench'] + argv)


if __name__ == '__main__':
    raise SystemExit(main())
