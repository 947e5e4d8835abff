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
Closed-loop runs: the simulated Create 3, the perception and the driver in one process.

:func:`run_room` starts, in one executor on a private rclpy context and a namespace of its
own,

* :class:`~freespace_seg.nodes.sim_robot.SimRobot` in room ``seed`` (camera ``image`` and
  ``camera_info`` in, ``cmd_vel`` out);
* the perception: ``perception='model'`` runs
  :class:`~freespace_seg.nodes.segmentation_node.SegmentationNode` with the shipped model
  (``models/freespace_lite0.onnx`` unless ``model_path`` is given) and the sim's camera mount,
  and it publishes ``free_space/grid``; ``perception='truth'`` replaces it with
  :class:`TruthGridNode`, which projects the renderer's exact free-floor mask with the same
  :class:`~freespace_seg.ground.projection.GroundProjector`, to test the driver and the simulator
  without a model;
* :class:`~freespace_seg.nodes.freespace_driver.FreespaceDriver`,

lets them run for ``duration`` seconds of simulated time and returns a
:class:`ClosedLoopResult`: collisions, distance driven, the share of the room's free floor
swept by the footprint, stale-perception stops, the path. :func:`draw_path_png` draws the room
from above with the path. ``python -m freespace_seg bench-closed-loop`` runs many rooms.

Two ways to run time:

* **lockstep** (the default): every node runs on the simulated clock (``/clock`` from the
  sim, ``use_sim_time``), and this module steps the simulation itself. Before each step's
  clock tick the driver has that step's odometry; the sim takes the next step only when the
  driver's command for this one has arrived; every camera frame's grid reaches the driver
  exactly ``latency`` simulated seconds after the frame (through :class:`GridRelay`), and the
  simulation waits for the perception as long as it takes (the clock topic is private to the
  run, ``<namespace>/clock``, so runs side by side never share a clock). So the robot sees
  the same things
  at the same simulated times on a fast or a slow, loaded machine: a run is reproducible and
  it runs as fast as the CPU allows (faster than real time on a quiet 2-core machine).
* **real time** (``lockstep=False``): the sim steps on a wall-clock timer, as on a robot;
  perception latency and dropped frames are whatever the machine gives, so results depend on
  the load.
"""

import collections
from dataclasses import dataclass, field
import os
import threading
import time
import uuid

import cv2
from freespace_seg.common import markdown
from freespace_seg.ground.camera_info import intrinsics_from_camera_info_msg
from freespace_seg.ground.grid import GridSpec
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.nodes.freespace_driver import FreespaceDriver
from freespace_seg.nodes.msgs import grid_to_msg
from freespace_seg.nodes.ros_util import LATCHED_QOS, stop_spin_thread
from freespace_seg.nodes.sim_robot import SimRobot
from freespace_seg.perception.image_codec import image_to_array
from freespace_seg.perception.pipeline import packaged_model_path
from nav_msgs.msg import OccupancyGrid
import numpy as np
import rclpy
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image

PERCEPTIONS = ('model', 'truth')
#: the kinds of the driver's states, in the order of :func:`state_table`
STATE_KINDS = ('driving', 'rotating', 'backing up', 'stopped')


def state_kind(state):
    """Return the kind of a driver state text: ``rotating (frontier)`` -> ``rotating``."""
    for kind in STATE_KINDS:
        if state.startswith(kind):
            return kind
    return 'stopped'


def state_shares(state_seconds):
    """Return the share (0..1) of the time per kind (:data:`STATE_KINDS`) of {state: seconds}."""
    total = sum(state_seconds.values())
    shares = dict.fromkeys(STATE_KINDS, 0.0)
    if total > 0:
        for state, seconds in state_seconds.items():
            shares[state_kind(state)] += seconds / total
    return shares


#: the grid QoS of the perception nodes (reliable, latched newest)
_GRID_QOS = LATCHED_QOS
#: lockstep: the driver listens here; :class:`GridRelay` forwards the perception's grids
RELAY_TOPIC = 'lockstep/grid'


@dataclass
class ClosedLoopResult:
    """
    What one room gave.

    ``duration`` is simulated seconds, ``wall_time`` real ones; ``distance`` metres;
    ``coverage`` the share (0..1) of the room's free floor swept by the footprint;
    ``stale_stops`` how often the driver stopped because no grid came for ``stale_timeout``;
    ``path`` an (N, 4) array of (t, x, y, yaw) per simulation step, in the room frame;
    ``lockstep`` whether it ran in lockstep (see the module) and ``missed_grids`` the frames
    whose grid never came then.
    """

    seed: int
    perception: str
    duration: float
    wall_time: float
    collisions: int
    contact_steps: int
    distance: float
    coverage: float
    free_area: float
    stale_stops: int
    hazard_stops: int
    grids: int
    frames: int
    path: np.ndarray = field(repr=False)
    collision_points: list = field(default_factory=list, repr=False)
    scene: object = field(default=None, repr=False, compare=False)
    notes: list = field(default_factory=list)
    lockstep: bool = False
    #: lockstep: frames whose grid never came (the perception published nothing for them)
    missed_grids: int = 0
    #: lockstep: simulated seconds in each state of the driver (its ``~/state`` text, e.g.
    #: ``driving``, ``rotating (frontier)``, ``backing up (dead end)``)
    state_seconds: dict = field(default_factory=dict)

    def state_shares(self):
        """Return the share (0..1) of the time in each kind of state (:data:`STATE_KINDS`)."""
        return state_shares(self.state_seconds)

    def cells(self):
        """Return this room's cells of the table of :func:`markdown_table`."""
        return [self.seed, markdown.number(self.duration, 0), self.collisions,
                markdown.number(self.distance, 1), markdown.number(100.0 * self.coverage, 1),
                self.stale_stops, self.grids]


class TruthGridNode(Node):
    """
    Exact perception: the renderer's free-floor mask projected to ``free_space/grid``.

    Subscribes ``ground_truth/free_mask`` (mono8, 255 = free) and ``camera_info`` and
    publishes what :class:`SegmentationNode` would publish with a perfect model: the same
    GroundProjector, GridSpec and QoS, the mask's stamp, frame ``base_frame``.
    """

    def __init__(self, mount, grid_spec=None, base_frame='base_link', **kwargs):
        super().__init__('truth_grid', **kwargs)
        self._mount = mount
        self._spec = grid_spec if grid_spec is not None else GridSpec()
        self._frame = base_frame
        self._projector = None
        self._info = None
        self.published = 0
        self._pub = self.create_publisher(OccupancyGrid, 'free_space/grid', LATCHED_QOS)
        self.create_subscription(CameraInfo, 'camera_info', self._on_info, 2)
        self.create_subscription(Image, 'ground_truth/free_mask', self._on_mask, 2)

    def _on_info(self, msg):
        self._info = msg

    def _on_mask(self, msg):
        if self._info is None:
            return
        intrinsics = intrinsics_from_camera_info_msg(self._info)
        if self._projector is None:
            self._projector = GroundProjector(intrinsics, self._mount, self._spec)
        else:
            self._projector.update(intrinsics=intrinsics)
        grid = self._projector.ground(image_to_array(msg) > 0).grid
        self._pub.publish(grid_to_msg(grid, self._spec, msg.header.stamp, self._frame))
        self.published += 1


class GridRelay(Node):
    """
    Lockstep: hold the perception's grids and forward each one when the harness says so.

    Subscribes ``free_space/grid`` (what the perception publishes) and keeps every grid by
    its stamp; :meth:`forward` publishes one on :data:`RELAY_TOPIC`, where the driver listens.
    """

    def __init__(self, **kwargs):
        super().__init__('grid_relay', **kwargs)
        self._lock = threading.Lock()
        self._grids = {}
        self.sub = self.create_subscription(OccupancyGrid, 'free_space/grid', self._on_grid,
                                            QoSProfile(depth=10,
                                                       reliability=ReliabilityPolicy.RELIABLE,
                                                       durability=DurabilityPolicy.VOLATILE))
        self.pub = self.create_publisher(OccupancyGrid, RELAY_TOPIC, _GRID_QOS)

    def _on_grid(self, msg):
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        with self._lock:
            self._grids[stamp] = msg

    def take(self, stamp_ns):
        """Return and forget the grid stamped ``stamp_ns`` (and any older ones); None if none."""
        with self._lock:
            msg = self._grids.pop(stamp_ns, None)
            for old in [t for t in self._grids if t < stamp_ns]:
                del self._grids[old]
        return msg

    def forward(self, msg):
        """Publish ``msg`` to the driver."""
        self.pub.publish(msg)


def _make_executor(context, lockstep):
    """
    Return the executor of a run.

    Lockstep: a SingleThreadedExecutor. The harness waits for many message hops per step,
    and on rclpy Kilted one hop measured 0.3 ms through it against 170 ms through a
    MultiThreadedExecutor (with the waiting thread polling). Real time: a
    MultiThreadedExecutor, so that rendering and inference may overlap as in separate
    processes.
    """
    if lockstep:
        return SingleThreadedExecutor(context=context)
    return MultiThreadedExecutor(num_threads=4, context=context)


def _overrides(values):
    return [Parameter(k, value=v) for k, v in values.items()]


def _wait(predicate, timeout):
    """Poll ``predicate`` until it is true (True) or ``timeout`` wall seconds pass (False)."""
    deadline = time.monotonic() + timeout
    delay = 0.0001
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2.0, 0.002)
    return True


def run_room(seed, duration=30.0, perception='model', model_path=None, num_threads=1,
             sim_params=None, driver_params=None, seg_params=None, timeout=None,
             realtime_factor_warning=0.5, log=None, lockstep=True, latency=0.1,
             frame_timeout=60.0, log_every=10.0, watch=None):
    """
    Run one room for ``duration`` s of simulated time; return a :class:`ClosedLoopResult`.

    ``perception`` is ``model`` (segmentation node with ``model_path``, default the shipped
    model; FileNotFoundError if it is missing) or ``truth`` (exact masks). ``sim_params``,
    ``driver_params`` and ``seg_params`` override node parameters by name. ``lockstep``
    (default) runs on the simulated clock with a perception ``latency`` of exactly that many
    simulated seconds (0 < latency <= one camera period); a frame whose grid has not come
    after ``frame_timeout`` wall seconds counts as missed. ``lockstep=False`` runs in real
    time. The run stops after ``timeout`` wall seconds at the latest (default: 3 x duration +
    60 in real time, none in lockstep). ``log`` is a callable for progress lines, one every
    ``log_every`` simulated seconds (default: silent). ``watch(sim, driver)``, when given,
    is called with the sim_robot and freespace_driver nodes after every simulator step in
    lockstep (every 50 ms of wall time in real time), to read their state.
    """
    if perception not in PERCEPTIONS:
        raise ValueError(f'perception must be one of {PERCEPTIONS}, got {perception!r}')
    if perception == 'model':
        path = model_path or packaged_model_path()
        if not os.path.isfile(path):
            raise FileNotFoundError(f'model not found: {path}')
    if timeout is None:
        timeout = float('inf') if lockstep else 3.0 * duration + 60.0
    ns = f'/closed_loop_{uuid.uuid4().hex[:8]}'
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []
    executor = None
    notes = []
    try:
        sim_values = {'seed': int(seed)}
        if lockstep:
            sim_values.update(publish_clock=True, use_stamped=True)
        sim_values.update(sim_params or {})
        # A private clock topic: /clock is global, and two runs side by side (or anything
        # else simulating on this machine) would otherwise drive each other's clocks.
        clock_remap = ['--ros-args', '-r', f'/clock:={ns}/clock'] if lockstep else None
        sim = SimRobot(namespace=ns, context=context, autostep=not lockstep,
                       cli_args=clock_remap, parameter_overrides=_overrides(sim_values))
        nodes.append(sim)
        if lockstep and not 0.0 < latency <= 1.0 / sim.params['camera_rate'] + 1e-9:
            raise ValueError(f'latency must be in (0, {1.0 / sim.params["camera_rate"]:g}] s '
                             f'(one camera period), got {latency}')
        sim_time = {'use_sim_time': True} if lockstep else {}
        if perception == 'model':
            from freespace_seg.nodes.segmentation_node import start_segmentation_node
            seg_values = {'num_threads': int(num_threads),
                          'camera_height': float(sim.mount.z),
                          'camera_pitch': float(sim.mount.pitch)}
            seg_values.update(sim_time)
            if model_path:
                seg_values['model_file_path'] = model_path
            seg_values.update(seg_params or {})
            seg = start_segmentation_node(namespace=ns, context=context, cli_args=clock_remap,
                                          parameter_overrides=_overrides(seg_values))
        else:
            seg = TruthGridNode(sim.mount, namespace=ns, context=context, cli_args=clock_remap,
                                parameter_overrides=_overrides(sim_time))
        nodes.append(seg)
        driver_values = dict(sim_time)
        if lockstep:
            driver_values.update(use_stamped=True, control_rate=sim.params['step_rate'])
        driver_values.update(driver_params or {})
        remap = clock_remap + ['-r', f'free_space/grid:={RELAY_TOPIC}'] if lockstep else None
        driver = FreespaceDriver(namespace=ns, context=context, cli_args=remap,
                                 parameter_overrides=_overrides(driver_values))
        nodes.append(driver)
        relay = None
        if lockstep:
            relay = GridRelay(namespace=ns, context=context)
            nodes.append(relay)

        executor = _make_executor(context, lockstep)
        for n in nodes:
            executor.add_node(n)
        thread = threading.Thread(target=executor.spin, name='closed_loop', daemon=True)
        t0 = time.monotonic()
        thread.start()
        missed = 0
        states = collections.Counter()
        if lockstep:
            missed = _run_lockstep(sim, driver, relay, duration, latency, timeout,
                                   frame_timeout, notes, seed, log, t0, log_every, states,
                                   watch)
        else:
            next_log = log_every
            while sim.sim_time < duration and time.monotonic() - t0 < timeout:
                time.sleep(0.05)
                if watch is not None:
                    watch(sim, driver)
                if log is not None and sim.sim_time >= next_log:
                    next_log += log_every
                    log(f'room {seed}: t={sim.sim_time:.0f} s, {sim.distance:.1f} m, '
                        f'{sim.collisions} collisions, state {driver.state!r}')
        wall = time.monotonic() - t0
        if sim.sim_time < duration - 1e-9:
            notes.append(f'wall-clock timeout after {wall:.0f} s at t={sim.sim_time:.1f} s')
        if not lockstep and wall > 0 and sim.sim_time / wall < realtime_factor_warning:
            notes.append(f'simulation ran at {sim.sim_time / wall:.2f} x real time')
        if missed:
            notes.append(f'{missed} frames without a grid')
        stop_spin_thread(executor, thread)
        executor = None
        s = sim.summary()
        grids = driver.grids_received
        return ClosedLoopResult(
            seed=int(seed), perception=perception, duration=s['sim_time'], wall_time=wall,
            collisions=s['collisions'], contact_steps=s['contact_steps'],
            distance=s['distance'], coverage=s['coverage'], free_area=s['free_area'],
            stale_stops=driver.stale_stops, hazard_stops=driver.hazard_stops, grids=grids,
            frames=s['frames'], path=sim.path, collision_points=list(sim.collision_points),
            scene=sim.scene, notes=notes, lockstep=bool(lockstep), missed_grids=missed,
            state_seconds={k: round(v, 3) for k, v in sorted(states.items())})
    finally:
        if executor is not None:
            executor.shutdown(timeout_sec=2.0)
        for n in reversed(nodes):
            n.destroy_node()
        context.try_shutdown()


#: lockstep: how long (wall s) to wait for a message that is only a DDS hop away
_HOP_TIMEOUT = 10.0


def _run_lockstep(sim, driver, relay, duration, latency, timeout, frame_timeout, notes, seed,
                  log, t0, log_every, states, watch=None):
    """
    Step ``sim`` until ``duration``; return the number of frames whose grid never came.

    ``states`` (a Counter) gets the simulated seconds of each step under the driver's state
    after its command for that step.
    """
    perception_ready = _wait(lambda: sim._pub_image.get_subscription_count() +
                             sim._pub_truth.get_subscription_count() > 0 and
                             relay.sub.get_publisher_count() > 0 and
                             relay.pub.get_subscription_count() > 0 and
                             sim._sub.get_publisher_count() > 0 and
                             sim._pub_odom.get_subscription_count() > 0 and
                             sim._pub_clock.get_subscription_count() >= 2, 30.0)
    if not perception_ready:
        raise RuntimeError('lockstep: the nodes did not connect within 30 s')
    # The perception needs camera_info before the first frame.
    sim.publish_camera_info()
    time.sleep(0.2)
    latency_ns = int(round(latency * 1e9))
    end_ns = int(round(duration * 1e9))
    pending = collections.deque()
    missed = 0
    late_hops = 0
    next_log = log_every
    while sim.sim_time_ns < end_ns:
        if time.monotonic() - t0 > timeout:
            break
        t_next = sim.sim_time_ns + sim.dt_ns
        # Grids due by the next tick reach the driver before it.
        while pending and pending[0] + latency_ns <= t_next:
            stamp = pending.popleft()
            got = []
            if not _wait(lambda: got.append(relay.take(stamp)) or got[-1] is not None,
                         frame_timeout):
                missed += 1
                continue
            relay.forward(got[-1])
            if not _wait(lambda: (driver.newest_grid_stamp_ns or -1) >= stamp, _HOP_TIMEOUT):
                late_hops += 1
        frame = sim.step(clock=False)
        if frame is not None:
            pending.append(frame)
        if not _wait(lambda: (driver.newest_odom_stamp_ns or -1) >= t_next, _HOP_TIMEOUT):
            late_hops += 1
        sim.publish_clock()
        if not _wait(lambda: (sim.last_cmd_stamp_ns or -1) >= t_next, _HOP_TIMEOUT):
            late_hops += 1
        states[driver.state] += sim.dt_ns * 1e-9
        if watch is not None:
            watch(sim, driver)
        if log is not None and sim.sim_time >= next_log:
            next_log += log_every
            speed = sim.sim_time / max(time.monotonic() - t0, 1e-6)
            log(f'room {seed}: t={sim.sim_time:.0f} s ({speed:.1f} x real time), '
                f'{sim.distance:.1f} m, {sim.collisions} collisions, state {driver.state!r}')
    if late_hops:
        notes.append(f'lockstep: {late_hops} messages late by over {_HOP_TIMEOUT:g} s')
    return missed


def room_image(scene, path=None, collision_points=(), px_per_m=60, robot_radius=0.17):
    """
    Draw ``scene`` from above as an (H, W, 3) uint8 RGB image, north (+y) up.

    Free floor is light, walls and obstacle footprints dark, raised parts (table tops) are not
    drawn (the floor under them is free). ``path`` ((N, >= 3) of t, x, y[, yaw]) is drawn in
    blue with the start (green disc of the robot's size) and the end (orange disc);
    collisions are red crosses.
    """
    x0, y0, x1, y1 = scene.bounds()
    margin = 0.2
    x0, y0, x1, y1 = x0 - margin, y0 - margin, x1 + margin, y1 + margin
    w = max(1, int(round((x1 - x0) * px_per_m)))
    h = max(1, int(round((y1 - y0) * px_per_m)))
    xs = x0 + (np.arange(w) + 0.5) / px_per_m
    ys = y1 - (np.arange(h) + 0.5) / px_per_m
    gx, gy = np.meshgrid(xs, ys)
    blocked = scene.blocked_top_down(gx, gy)
    img = np.where(blocked[..., None], np.uint8(70), np.uint8(235)).astype(np.uint8)
    img = np.repeat(img, 3, axis=2) if img.shape[2] == 1 else img
    img = np.ascontiguousarray(img)

    def px(x, y):
        return (int(round((x - x0) * px_per_m)), int(round((y1 - y) * px_per_m)))

    r = max(1, int(round(robot_radius * px_per_m)))
    if path is not None and len(path):
        pts = np.array([px(p[1], p[2]) for p in path], dtype=np.int32)
        cv2.polylines(img, [pts.reshape(-1, 1, 2)], False, (40, 90, 230), 2, cv2.LINE_AA)
        cv2.circle(img, tuple(int(v) for v in pts[0]), r, (40, 170, 60), 2, cv2.LINE_AA)
        cv2.circle(img, tuple(int(v) for v in pts[-1]), r, (240, 140, 30), 2, cv2.LINE_AA)
    for c in collision_points:
        cx, cy = px(c[1], c[2])
        d = max(3, r // 2)
        cv2.line(img, (cx - d, cy - d), (cx + d, cy + d), (220, 30, 30), 2, cv2.LINE_AA)
        cv2.line(img, (cx - d, cy + d), (cx + d, cy - d), (220, 30, 30), 2, cv2.LINE_AA)
    return img


def draw_path_png(result_or_scene, filename, path=None, collision_points=(), px_per_m=60):
    """
    Write a top-down PNG of a room with the robot's path; return the RGB image.

    Pass a :class:`ClosedLoopResult` (its scene, path and collisions are used) or a Scene
    plus ``path`` and ``collision_points``.
    """
    if isinstance(result_or_scene, ClosedLoopResult):
        r = result_or_scene
        scene, path, collision_points = r.scene, r.path, r.collision_points
    else:
        scene = result_or_scene
    img = room_image(scene, path, collision_points, px_per_m)
    if not cv2.imwrite(str(filename), cv2.cvtColor(img, cv2.COLOR_RGB2BGR)):
        raise OSError(f'could not write {filename}')
    return img


def state_table(results):
    """
    Return a Markdown table of the share of each room's time per kind of driver state.

    Rooms without states (real time, or JSON files written before they were recorded) are
    left out; empty when none has them.
    """
    results = [r for r in results if r.state_seconds]
    if not results:
        return ''
    rows = [[r.seed] + [markdown.number(100.0 * v, 1) for v in r.state_shares().values()]
            for r in results]
    if len(results) > 1:
        total = collections.Counter()
        for r in results:
            total.update(r.state_seconds)
        rows.append([f'**all {len(results)} rooms**'] +
                    [markdown.number(100.0 * v, 1) for v in state_shares(total).values()])
    return '\n'.join(markdown.table(
        ['room (seed)'] + [f'{kind} (% of time)' for kind in STATE_KINDS], rows))


def markdown_table(results):
    """Return a Markdown table of results, one row per room plus a totals row."""
    rows = [r.cells() for r in results]
    if results:
        rows.append([
            f'**total ({len(results)} rooms)**',
            markdown.number(sum(r.duration for r in results), 0),
            f'**{sum(r.collisions for r in results)}**',
            markdown.number(sum(r.distance for r in results), 1),
            markdown.number(100.0 * np.mean([r.coverage for r in results]), 1, unit=' (mean)'),
            sum(r.stale_stops for r in results), sum(r.grids for r in results)])
    return '\n'.join(markdown.table(
        ['room (seed)', 'sim time (s)', 'collisions', 'distance (m)', 'coverage (%)',
         'stale-perception stops', 'grids'], rows))
