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

"""Conditions (c) and (d): segmentation_node and the naive node over real topics."""

import os
import struct
import sys
import threading
import time

from freespace_seg.tools.bench.procstat import (_ms_list, proc_cpu_seconds, proc_minor_faults,
                                                proc_rss_mb, stats_ms, system_busy_seconds,
                                                thread_cpu_percent, thread_cpu_seconds)
from freespace_seg.tools.child import NodeProcess


#: frames in flight in the closed-loop (saturation) condition
IN_FLIGHT = 2


def _stamp_ns_from_cdr(data):
    """Read header.stamp (the first field) of a serialized little-endian CDR message."""
    sec, nanosec = struct.unpack_from('<iI', data, 4)
    return sec * 1_000_000_000 + nanosec


# ---------------------------------------------------------------------------------------------
# (c) node and (d) naive node, in their own processes, over real topics


class Condition:
    """
    One topic condition: which node, model, threads, input and camera rate.

    ``workers``: the node's ``num_workers``, each worker with ``threads`` inference threads;
    a condition with more than one is labelled ``<workers>w<threads>t`` instead of
    ``<threads>t`` (e.g. ``node int8 2w1t rgb8 1280x720 60 Hz``).
    """

    def __init__(self, kind, model_label, model, threads, rate, transport='raw',
                 all_outputs=False, ground='', backend='onnxruntime', params=None, workers=1):
        self.kind = kind              # 'node' or 'naive'
        self.backend = backend        # the node's backend (bench-fleet: triton too)
        self.params = dict(params or {})   # more node parameters (name -> value)
        self.model_label = model_label
        self.model = model
        self.threads = threads
        self.rate = rate              # Hz, or 0 for closed loop
        self.transport = transport    # 'raw' or 'compressed'
        self.all_outputs = all_outputs
        self.ground = ground          # '', 'before' or 'after' (see --ground-outputs)
        self.workers = workers        # the node's num_workers

    @property
    def camera(self):
        return f'{self.rate:g} Hz' if self.rate else f'closed loop ({IN_FLIGHT} in flight)'

    def label(self, frames):
        size = f'{frames.width}x{frames.height}'
        what = 'jpeg ' + size if self.transport == 'compressed' else 'rgb8 ' + size
        extra = ', all 7 outputs' if self.all_outputs else ''
        if self.ground:
            extra += f', ground outputs {self.ground}'
        threads = f'{self.workers}w{self.threads}t' if self.workers > 1 else f'{self.threads}t'
        return f'{self.kind} {self.model_label} {threads} {what} {self.camera}{extra}'


class TopicBench:
    """Runs topic conditions: a child node process and a camera in this process."""

    def __init__(self, frames, warmup, duration, log):
        import rclpy

        from freespace_seg.tools.child import node_environment

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
            cmd = [sys.executable, '-m', 'freespace_seg', 'bench-naive-node', '--ros-args']
            ready = 'naive node listening'
        else:
            cmd = [sys.executable, '-m', 'freespace_seg.nodes.segmentation_node',
                   '--ros-args']
            ready = 'listening on'
        cmd += ['-r', f'__ns:={ns}', '-r', f'__node:={node_name}',
                '-p', f'model_file_path:={cond.model}', '-p', f'num_threads:={cond.threads}']
        if cond.kind == 'node':
            cmd += ['-p', f'backend:={cond.backend}', '-p',
                    f'image_transport:={cond.transport}']
            if cond.workers > 1:
                cmd += ['-p', f'num_workers:={cond.workers}']
            for key, value in cond.params.items():
                text = str(value).lower() if isinstance(value, bool) else str(value)
                cmd += ['-p', f'{key}:={text}']
            if cond.all_outputs:
                cmd += ['-p', 'publish_unsubscribed:=true']
            if cond.ground == 'before':
                cmd += ['-p', 'grid_min_obstacle_run:=0.0', '-p', 'grid_cut_confidence:=0.0',
                        '-p', 'grid_free_confidence:=0.0']
        return cmd, ready

    def robot(self, cond, own_messages=False):
        """Start ``cond``'s node process and its camera node (not yet publishing): a Robot."""
        self.index += 1
        ns = f'/freespace_bench_{os.getpid()}_{self.index}'
        node_name = f'bench_{cond.kind}_{self.index}'
        cmd, ready_text = self._command(cond, ns, node_name)
        env = self.env
        profile = None
        if self.profile_dir and cond.kind == 'node':
            profile = os.path.join(self.profile_dir, f'profile_{self.index}.md')
            env = dict(env, FREESPACE_SEG_PROFILE=profile)
        robot = Robot(cond, self.frames, ns, node_name, NodeProcess(cmd, env, ready_text),
                      self.index, own_messages)
        robot.profile = profile
        return robot

    def run(self, cond, duration=None, rss_every=0.0):
        """Measure one condition; return its result row."""
        from rclpy.executors import SingleThreadedExecutor

        from freespace_seg.nodes.ros_util import stop_spin_thread

        duration = self.duration if duration is None else duration
        robot = self.robot(cond)
        child = robot.child
        executor = SingleThreadedExecutor()
        executor.add_node(robot.node)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()
        row = robot.row_head()
        try:
            robot.wait_ready()
            robot.start_camera()
            time.sleep(self.warmup)
            pid = child.pid
            t0 = time.monotonic()
            cpu0, self_cpu0 = proc_cpu_seconds(pid), time.process_time()
            busy0, faults0 = system_busy_seconds(), proc_minor_faults(pid)
            threads0 = thread_cpu_seconds(pid)
            rss0 = proc_rss_mb(pid)
            rss_series = [(0.0, rss0)]
            while time.monotonic() - t0 < duration:
                time.sleep(min(rss_every or 0.25, max(0.0, duration - (time.monotonic() - t0))))
                if rss_every:
                    rss_series.append((time.monotonic() - t0, proc_rss_mb(pid)))
                robot.check_alive()
            t1 = time.monotonic()
            cpu1, self_cpu1 = proc_cpu_seconds(pid), time.process_time()
            busy1, faults1 = system_busy_seconds(), proc_minor_faults(pid)
            threads1 = thread_cpu_seconds(pid)
            rss1 = proc_rss_mb(pid)
            robot.stop_camera()
            time.sleep(1.0)  # late masks of frames sent in the window
        finally:
            robot.stop_camera()
            stop_spin_thread(executor, spin)
            code = robot.close()
        wall = t1 - t0
        row.update(robot.window(t0, t1))
        row.update({
            'cpu_percent': 100.0 * (cpu1 - cpu0) / wall if cpu0 is not None else None,
            'bench_cpu_percent': 100.0 * (self_cpu1 - self_cpu0) / wall,
            'rss_mb': rss1, 'rss_start_mb': rss0, 'exit_code': code,
            'loadavg_1min': os.getloadavg()[0],
            'thread_cpu': thread_cpu_percent(threads0, threads1, wall)})
        if robot.profile is not None and os.path.isfile(robot.profile):
            row['profile'] = os.path.basename(robot.profile)
        if faults0 is not None and faults1 is not None:
            row['minor_faults_per_s'] = (faults1 - faults0) / wall
        if busy0 is not None and cpu0 is not None:
            # Everything else on the machine during the window (other users' processes).
            row['other_cpu_percent'] = 100.0 * ((busy1 - busy0) - (cpu1 - cpu0)
                                                - (self_cpu1 - self_cpu0)) / wall
        if rss_every:
            row['rss_series'] = [(round(t, 1), r) for t, r in rss_series]
        return row


class Robot:
    """
    One robot: a node process (``child``) and, in this process, the camera that feeds it.

    ``node`` is this process's rclpy node (camera publishers, the mask, grid, diagnostics
    and ground-output subscriptions); the caller spins it. :meth:`start_camera` publishes at
    the condition's rate (or ``rate``; 0: closed loop) until :meth:`stop_camera`;
    :meth:`window` returns what happened to the frames published in a time window: fps and
    latency (stamp -> receipt of segmentation/mask here). ``TopicBench.run`` measures one
    robot; ``bench-fleet`` several at once (``own_messages``: a copy of the frames, so the
    cameras' stamps never mix).
    """

    def __init__(self, cond, frames, ns, node_name, child, index, own_messages=False):
        import copy

        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import OccupancyGrid
        from rclpy.node import Node
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import CameraInfo, CompressedImage, Image

        from freespace_seg.nodes.segmentation_node import GRID_QOS

        self.cond, self.frames, self.ns, self.node_name = cond, frames, ns, node_name
        self.child = child
        self.profile = None
        self.node = Node(f'bench_camera_{index}', namespace=ns)
        qos = QoSProfile(depth=10)  # reliable, like a driver with the default QoS
        self.compressed = cond.transport == 'compressed'
        msgs = frames.jpegs if self.compressed else frames.images
        self.msgs = copy.deepcopy(msgs) if own_messages else msgs
        self.info = copy.deepcopy(frames.info) if own_messages else frames.info
        node = self.node
        self.pub_image = node.create_publisher(CompressedImage if self.compressed else Image,
                                               'image/compressed' if self.compressed
                                               else 'image', qos)
        self.pub_info = node.create_publisher(CameraInfo, 'camera_info', qos)
        self.sent = {}            # stamp ns -> publish time (monotonic)
        self.masks = {}           # stamp ns -> receipt time ns (wall clock, as the stamp)
        self.grids = {}
        self.diags = []
        self.extra = {}
        self._tokens = threading.Semaphore(IN_FLIGHT)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._camera = None
        node.create_subscription(Image, 'segmentation/mask', self._on_mask, qos, raw=True)
        if cond.kind == 'node':
            node.create_subscription(OccupancyGrid, 'free_space/grid', self._on_grid,
                                     GRID_QOS, raw=True)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 10)
        for topic, msg_type in ground_topics(cond.ground):
            def count(data, topic=topic):
                self.extra[topic] = self.extra.get(topic, 0) + 1
            node.create_subscription(msg_type, topic, count, qos, raw=True)

    def _on_mask(self, data):
        now = time.time_ns()
        stamp = _stamp_ns_from_cdr(data)
        with self._lock:
            self.masks[stamp] = now
        self._tokens.release()

    def _on_grid(self, data):
        self.grids[_stamp_ns_from_cdr(data)] = time.time_ns()

    def _on_diag(self, msg):
        for st in msg.status:
            if st.name.startswith(self.node_name + ':'):
                self.diags.append((time.monotonic(), {kv.key: kv.value for kv in st.values}))

    def row_head(self):
        """Return the condition's part of a result row."""
        cond = self.cond
        row = {'kind': cond.kind, 'model': cond.model_label, 'threads': cond.threads,
               'workers': cond.workers,
               'input': ('jpeg ' if self.compressed else 'rgb8 ')
               + f'{self.frames.width}x{self.frames.height}',
               'camera': cond.camera, 'rate_hz': cond.rate, 'all_outputs': cond.all_outputs,
               'label': cond.label(self.frames)}
        if cond.ground:
            row['ground'] = cond.ground
        return row

    def wait_ready(self, timeout=120.0):
        """Wait for the node's 'listening' line and for both topics to match; RuntimeError."""
        if not self.child.ready.wait(timeout=timeout):
            raise RuntimeError(f'{self.cond.kind} did not start:\n{self.child.log_tail()}')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                self.pub_image.get_subscription_count() == 0
                or self.node.count_publishers(f'{self.ns}/segmentation/mask') == 0):
            time.sleep(0.05)
        time.sleep(0.3)

    def check_alive(self):
        """Raise RuntimeError if the node process has exited."""
        if self.child.proc.poll() is not None:
            raise RuntimeError(f'{self.cond.kind} exited with code '
                               f'{self.child.proc.returncode}:\n{self.child.log_tail()}')

    def start_camera(self, rate=None):
        """Publish frames from a thread at ``rate`` Hz (None: the condition's; 0: closed loop)."""
        self.stop_camera()
        rate = self.cond.rate if rate is None else rate
        self._stop = threading.Event()
        self._camera = threading.Thread(target=self._publish, args=(rate, self._stop),
                                        daemon=True)
        self._camera.start()

    def stop_camera(self):
        """Stop publishing (idempotent)."""
        if self._camera is None:
            return
        self._stop.set()
        self._tokens.release()   # a closed-loop camera waiting for a token
        self._camera.join(timeout=2)
        self._camera = None

    def _publish(self, rate, stop):
        clock = self.node.get_clock()
        period = 1.0 / rate if rate else 0.0
        next_t = time.monotonic()
        i = 0
        while not stop.is_set():
            if rate:
                now = time.monotonic()
                if now < next_t:
                    time.sleep(next_t - now)
                next_t += period
                if time.monotonic() - next_t > period:
                    next_t = time.monotonic() + period  # fell behind: no bursts
            else:
                self._tokens.acquire(timeout=0.5)  # a lost frame frees its token here
                if stop.is_set():
                    break
            msg = self.msgs[i % len(self.msgs)]
            stamp = clock.now()
            msg.header.stamp = self.info.header.stamp = stamp.to_msg()
            self.pub_info.publish(self.info)
            self.pub_image.publish(msg)
            self.sent[stamp.nanoseconds] = time.monotonic()
            i += 1

    def window(self, t0, t1):
        """Return fps, drops and latency of the frames published between ``t0`` and ``t1``."""
        window = [s for s, t in list(self.sent.items()) if t0 <= t < t1]
        with self._lock:
            answered = [s for s in window if s in self.masks]
            lat = [(self.masks[s] - s) * 1e-9 for s in answered]
        wall = t1 - t0
        row = {'published': len(window), 'answered': len(answered),
               'dropped': len(window) - len(answered), 'fps': len(answered) / wall,
               'camera_fps': len(window) / wall, 'window_s': wall,
               'grids': sum(1 for s in window if s in self.grids),
               'extra_messages': dict(self.extra), 'samples_ms': _ms_list(lat)}
        row.update(stats_ms(lat))
        node_diag = [d for t, d in self.diags if t0 <= t <= t1 + 0.5]
        if node_diag:
            row['node_diagnostics'] = node_diag[-1]
        return row

    def close(self):
        """Stop the camera, destroy the camera node, stop the node process; its exit code."""
        self.stop_camera()
        self.node.destroy_node()
        return self.child.stop()


def ground_topics(ground):
    """Return the (topic, type) pairs a ground-output condition subscribes besides the mask."""
    from sensor_msgs.msg import Image, LaserScan, PointCloud2

    if not ground:
        return []
    topics = [('free_space/obstacles', PointCloud2), ('free_space/grid_image', Image)]
    if ground == 'after':
        topics += [('free_space/scan', LaserScan), ('segmentation/confidence', Image)]
    return topics  # and free_space/grid, which every node row subscribes
