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
freespace_driver over real rclpy topics: driving, stale grids, hazards, e-stop, parameters.

The driver runs with ``use_sim_time`` on a /clock of the test's own (:class:`SimClock`): time
moves only when the test steps it, one control period (50 ms at the default 20 Hz) at a time,
and each step waits until the driver's control step at the new time is done and its command
has arrived. Timeouts, hold times, command rates and stamps are exact in simulated seconds,
however loaded the machine is.
"""

import os
import signal
import subprocess
import sys
import time

from builtin_interfaces.msg import Time as BuiltinTime
from freespace_seg.ground.grid import GridSpec, OCCUPIED
from freespace_seg.nodes.freespace_driver import FreespaceDriver
from freespace_seg.nodes.msgs import grid_from_msg, grid_to_msg
from freespace_seg.nodes.ros_util import StartupError
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import OccupancyGrid, Odometry
import numpy as np
import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Bool, String
from support import REPO
from support.ros import (clock_topic, Harness, publishers_on, sim_time_options, SimClock,
                         subscriptions_on, unique_namespace)

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

SPEC = GridSpec()
#: one control period at the default control_rate (20 Hz)
PERIOD_NS = 50_000_000
PERIOD = PERIOD_NS * 1e-9
#: control steps between two grids: 10 Hz
GRID_EVERY = 2
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def open_grid():
    return np.zeros(SPEC.shape, dtype=np.int8)


def make_driver(ns, use_sim_time=True, **params):
    """Return a driver in ``ns`` whose /clock is the test's (once ``use_sim_time`` is on)."""
    options = sim_time_options(ns)
    options['parameter_overrides'] = [Parameter('use_sim_time', value=use_sim_time)] + [
        Parameter(k, value=v) for k, v in params.items()]
    return FreespaceDriver(namespace=ns, **options)


def speeds_of(cmds):
    """Return (time, v, w) of (time, Twist or TwistStamped) commands."""
    out = []
    for t, m in cmds:
        tw = m.twist if isinstance(m, TwistStamped) else m
        out.append((t, tw.linear.x, tw.angular.z))
    return out


class Rig(Harness):
    """
    A driver on the test's clock, the grids (and odometry) it gets, and the cmd_vel it sends.

    Commands are recorded with the simulated time they were sent at. :meth:`step` moves time
    on; grids go out every ``GRID_EVERY`` steps while ``sending`` is true, stamped with the
    time they are sent at and received by the driver before the clock moves on.
    """

    def __init__(self, namespace, node, msg_type=Twist, listen=True, start=True):
        super().__init__(namespace, node)
        self.node = node
        self.msg_type = msg_type
        self.clock = SimClock(self)
        self.grid = open_grid()
        self.frame = 'base_link'
        self.sending = False
        #: odometry sent before every step: (x, y) of the robot in odom, or None for none
        self.odom_xy = None
        self.steps = 0
        self.last_grid_time = None
        self.cmds = []
        self.published_before = None
        self.grid_pub = self.publisher(OccupancyGrid, 'free_space/grid')
        self.odom_pub = self.publisher(Odometry, 'odom', reliable=False)
        try:
            assert self.wait_for_match(self.grid_pub, subscriptions_on(node, 'free_space/grid'))
            if listen:
                self.listen()
            if start:
                self.start()
        except BaseException:
            self.close()
            raise

    def listen(self):
        """
        Subscribe to cmd_vel (once the driver sends nothing: its clock stands still).

        cmd_vel is volatile, so what the driver sent before reaches no one: the commands it
        has published so far are left out of the count :meth:`delivered` compares with.
        """
        sub = self.client.create_subscription(
            self.msg_type, 'cmd_vel', lambda m: self.cmds.append((self.clock.now, m)), 100)
        [pub] = publishers_on(self.node, 'cmd_vel')
        assert self.wait_for(lambda: pub.get_subscription_count() >= 1 and
                             sub.get_publisher_count() >= 1)
        self.published_before = self.node.commands_published

    def start(self):
        """Give the driver the clock's start time: its first control step, at that time."""
        assert self.clock.set_time(self.clock.now_ns, self.node)
        assert self.wait_for(lambda: self.node.control_steps >= 1), 'no first control step'
        assert self.wait_for(self.delivered)

    def delivered(self):
        """Return whether every command the driver published has arrived."""
        return len(self.cmds) >= self.node.commands_published - self.published_before

    def deliver(self, pub, msg, arrived, timeout=10.0):
        """Publish ``msg`` until ``arrived()``: a best-effort subscription may lose one."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pub.publish(msg)
            if self.wait_for(arrived, timeout=0.5, interval=0.001):
                return True
        return False

    def send_grid(self):
        node = self.node
        before = node.grids_received + node.grids_rejected
        msg = grid_to_msg(self.grid, SPEC, self.clock.stamp(), self.frame)
        assert self.deliver(self.grid_pub, msg,
                            lambda: node.grids_received + node.grids_rejected > before)
        self.last_grid_time = self.clock.now

    def send_odom(self):
        m = Odometry()
        m.header.stamp = self.clock.stamp()
        m.pose.pose.position.x, m.pose.pose.position.y = self.odom_xy
        m.pose.pose.orientation.w = 1.0
        assert self.deliver(self.odom_pub, m,
                            lambda: self.node.newest_odom_stamp_ns == self.clock.now_ns)

    def step(self, n=1):
        """Move time on by ``n`` control periods, one at a time; return their commands."""
        first = len(self.cmds)
        for _ in range(n):
            if self.odom_xy is not None:
                self.send_odom()
            if self.sending and self.steps % GRID_EVERY == 0:
                self.send_grid()
            self.steps += 1
            done = self.node.control_steps
            assert self.clock.set_time(self.clock.now_ns + PERIOD_NS, self.node)
            assert self.wait_for(lambda: self.node.control_steps > done), 'no control step'
            assert self.wait_for(self.delivered)
        return speeds_of(self.cmds[first:])

    def step_until(self, predicate, max_steps=100):
        """Step until ``predicate()`` holds (checked after each step); return whether it did."""
        for _ in range(max_steps):
            self.step()
            if predicate():
                return True
        return False

    def speeds(self, since=None):
        """Return (time, v, w) of the commands so far, or of those sent at ``since`` or later."""
        return [s for s in speeds_of(list(self.cmds)) if since is None or s[0] >= since - 1e-9]

    def last_speed(self):
        return self.speeds()[-1][1]

    def publish_and_wait_for_command(self, pub, msg):
        """Publish ``msg`` and wait for the command it makes the driver send at once."""
        before = self.node.commands_published
        pub.publish(msg)
        assert self.wait_for(lambda: self.node.commands_published > before and
                             self.delivered()), 'no command without a control step'
        return self.speeds()[-1]


def count_taken(sub):
    """Return the list of the messages ``sub``'s callback has taken since (wraps it)."""
    taken = []
    callback = sub.callback

    def counting(msg):
        callback(msg)
        taken.append(msg)
    sub.callback = counting
    return taken


@pytest.fixture
def rig(ros_init, request):
    params = getattr(request, 'param', {})
    ns = unique_namespace('drv')
    node = make_driver(ns, **params)
    r = Rig(ns, node, TwistStamped if params.get('use_stamped') else Twist)
    yield r
    r.close()


def test_open_grids_drive_forward_within_limits(rig):
    before = rig.step(10)                          # 0.5 s without a grid
    assert len(before) == 10 and all(v == 0.0 and w == 0.0 for _, v, w in before)
    assert rig.node.state == 'stopped: no grid yet'
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.29)
    speeds = rig.speeds()
    assert all(0.0 <= v <= 0.3 + 1e-9 and abs(w) <= 1.0 + 1e-9 for _, v, w in speeds)
    # max_linear_accel 0.5 m/s^2: at most 0.025 m/s more per 50 ms step.
    vs = [v for _, v, _ in speeds]
    assert all(b - a <= 0.5 * PERIOD + 1e-9 for a, b in zip(vs, vs[1:]))
    assert abs(speeds[-1][2]) < 1e-6
    # One command per control period: 20 in a simulated second at the 20 Hz control_rate,
    # each at its step's time.
    start = rig.clock.now
    second = rig.step(20)
    assert [t for t, _, _ in second] == pytest.approx(
        [start + PERIOD * k for k in range(1, 21)], abs=1e-6)
    assert all(v == pytest.approx(0.3) for _, v, _ in second)
    assert rig.node.state == 'driving'
    assert rig.node.control_steps == rig.node.commands_published == len(rig.cmds)


def test_stale_grid_stops_within_half_a_second_and_stays_stopped(rig):
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    rig.sending = False
    last_grid = rig.last_grid_time
    assert rig.step_until(lambda: rig.last_speed() == 0.0, max_steps=20)
    t_zero = rig.speeds()[-1][0]
    # The first control step that finds the grid older than stale_timeout (0.5 s) stops;
    # every one before it drove on.
    assert 0.5 - 1e-6 <= t_zero - last_grid <= 0.5 + PERIOD + 1e-6, t_zero - last_grid
    assert all(v > 0.0 for t, v, _ in rig.speeds(last_grid) if t < t_zero - 1e-9)
    after = rig.step(12)
    assert all(v == 0.0 and w == 0.0 for _, v, w in after)
    assert rig.node.stale_stops == 1
    assert rig.node.state.startswith('stopped') and 'stale grid' in rig.node.state
    # Grids again: it drives again, from the first control step after one.
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() > 0.0, max_steps=2)


def test_timeouts_count_simulated_seconds_not_wall_time(rig):
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    rig.sending = False
    n, steps = len(rig.cmds), rig.node.control_steps
    # Wall time passes, longer than stale_timeout (16 wall-clock control periods spun), but
    # simulated time stands still: no control step, and the next one finds the grid (at most
    # 0.15 s old) fresh.
    assert rig.wait_periods(PERIOD, 16)
    assert rig.node.control_steps == steps and len(rig.cmds) == n
    assert rig.step()[0][1] > 0.0
    assert rig.node.stale_stops == 0 and rig.node.state == 'driving'


def test_blocked_grid_turns_in_place(rig):
    g = open_grid()
    xs, _ = SPEC.cell_centers()
    g[xs >= 0.3] = OCCUPIED
    rig.grid = g
    rig.sending = True
    assert rig.step_until(lambda: abs(rig.speeds()[-1][2]) > 0.5)
    assert all(v == 0.0 for _, v, _ in rig.speeds())
    assert rig.node.state == 'rotating'


def test_e_stop_is_latched_until_false(rig):
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    pub = rig.publisher(Bool, 'e_stop')
    assert rig.wait_for_match(pub, subscriptions_on(rig.node, 'e_stop'))
    # The zero goes out at once, before the next control step.
    t, v, w = rig.publish_and_wait_for_command(pub, Bool(data=True))
    assert (t, v, w) == (pytest.approx(rig.clock.now), 0.0, 0.0)
    after = rig.step(16)                         # 0.8 s, grids keep coming: still stopped
    assert all(v == 0.0 and w == 0.0 for _, v, w in after)
    assert 'e_stop' in rig.node.state and 'e_stop' in rig.node.stop_reasons()
    pub.publish(Bool(data=False))
    assert rig.wait_for(lambda: 'e_stop' not in rig.node.stop_reasons())
    assert rig.step()[0][1] > 0.0


def test_latched_e_stop_published_before_the_driver_starts(ros_init):
    ns = unique_namespace('drv')
    early = Node('early_e_stop', namespace=ns)
    try:
        pub = early.create_publisher(Bool, 'e_stop', LATCHED)
        pub.publish(Bool(data=True))
        node = make_driver(ns)
        rig = Rig(ns, node, listen=False, start=False)
        try:
            assert rig.wait_for(lambda: 'e_stop' in node.stop_reasons(), timeout=5.0)
            rig.listen()                         # after the zero the e_stop made it send
            rig.start()
            rig.sending = True
            cmds = rig.step(10)
            assert node.grids_received == 5
            assert len(cmds) == 10 and all(v == 0.0 and w == 0.0 for _, v, w in cmds)
            assert 'e_stop' in node.state
        finally:
            rig.close()
    finally:
        early.destroy_node()


def test_hazard_stops_and_holds(rig):
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    pub = rig.publisher(Bool, 'hazard')
    assert rig.wait_for_match(pub, subscriptions_on(rig.node, 'hazard'))
    t, v, w = rig.publish_and_wait_for_command(pub, Bool(data=True))
    assert (t, v, w) == (pytest.approx(rig.clock.now), 0.0, 0.0)
    held = rig.step(10)
    assert all(v == 0.0 and w == 0.0 for _, v, w in held)
    assert rig.node.hazard_stops == 1 and 'hazard' in rig.node.state
    cleared = rig.clock.now
    pub.publish(Bool(data=False))
    # Received (at `cleared`) once a moment past the hold no longer counts as a hazard.
    assert rig.wait_for(lambda: 'hazard' not in rig.node.stop_reasons(cleared + 0.5 + PERIOD))
    # Held for hazard_hold_time (0.5 s) after the hazard cleared, then it turns in place by
    # hazard_turn (1.57 rad) before it drives again.
    assert rig.step_until(lambda: rig.last_speed() > 0.0, max_steps=100)
    speeds = rig.speeds(cleared + PERIOD)
    first_move = speeds[-1][0]
    assert all(v == 0.0 and w == 0.0 for t, v, w in speeds if t <= cleared + 0.5 - 1e-6)
    turn = [(t, w) for t, v, w in speeds if t < first_move and w != 0.0]
    assert turn and all(v == 0.0 for t, v, w in speeds if t < first_move)
    assert turn[0][0] >= cleared + 0.5 - 1e-6
    # The escape counts the commanded turn rate: at least hazard_turn, by two steps at most.
    turned = sum(abs(w) * PERIOD for _, w in turn)
    rate = rig.node.logic.config.rotate_speed
    assert 1.57 - 1.0 * PERIOD <= turned <= 1.57 + 2 * rate * PERIOD, turned
    assert rig.node.hazard_stops == 1


def test_a_hazard_reported_false_at_every_step_still_clears(rig):
    """
    A bumper that publishes its state at every step (as sim_robot does) ends the hold.

    Each false used to restart the hold, so the robot stood after its first bump for good.
    """
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    pub = rig.publisher(Bool, 'hazard')
    assert rig.wait_for_match(pub, subscriptions_on(rig.node, 'hazard'))
    rig.publish_and_wait_for_command(pub, Bool(data=True))
    cleared = rig.clock.now

    def false_then_step():
        pub.publish(Bool(data=False))
        rig.step()
        return 'hazard' not in rig.node.state

    # The hold is 0.5 s: it ends within 2 s of falses at every control step.
    assert any(false_then_step() for _ in range(int(2.0 / PERIOD)))
    assert rig.clock.now >= cleared + 0.5 - 1e-6
    assert rig.node.hazard_stops == 1


def test_hazard_detection_vector(rig):
    msgs = pytest.importorskip('irobot_create_msgs.msg', reason='irobot_create_msgs is not '
                               'installed here; the Bool hazard input covers the same path')
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    pub = rig.publisher(msgs.HazardDetectionVector, 'hazard_detection', reliable=False)
    assert rig.wait_for_match(pub, subscriptions_on(rig.node, 'hazard_detection'))
    vec = msgs.HazardDetectionVector(detections=[msgs.HazardDetection(
        type=msgs.HazardDetection.OBJECT_PROXIMITY)])
    # Taken by the driver's callback before the clock moves on (best effort: sent again
    # until it is).
    taken = count_taken(subscriptions_on(rig.node, 'hazard_detection')[0])
    assert rig.deliver(pub, vec, lambda: taken)
    assert rig.step(6)[-1][1] > 0, 'OBJECT_PROXIMITY is not in the default hazard_types'
    vec.detections[0].type = msgs.HazardDetection.BUMP
    assert rig.publish_and_wait_for_command(pub, vec)[1:] == (0.0, 0.0)


@pytest.mark.parametrize('rig', [{'use_stamped': True}], indirect=True)
def test_twist_stamped_mode(rig):
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    t, msg = rig.cmds[-1]
    assert isinstance(msg, TwistStamped) and msg.header.frame_id == 'base_link'
    # Stamped with the node clock: the simulated time of its control step.
    assert Time.from_msg(msg.header.stamp).nanoseconds == rig.clock.now_ns
    assert t == rig.clock.now


def test_grids_in_another_frame_are_ignored(rig):
    rig.frame = 'odom'
    rig.sending = True
    assert rig.step_until(lambda: rig.node.grids_rejected >= 3, max_steps=10)
    assert rig.node.grids_received == 0
    assert all(v == 0.0 for _, v, _ in rig.speeds())


@pytest.mark.parametrize('rig', [{'drive': False}], indirect=True)
def test_drive_false_keeps_cmd_vel_free(rig):
    rig.sending = True
    rig.step(6)
    assert rig.node.grids_received == 3
    assert rig.cmds == [] and rig.node.control_steps == 7
    assert rig.node.state == 'driving (drive is false)'
    states = []
    rig.client.create_subscription(String, f'{rig.namespace}/freespace_driver/state',
                                   states.append, LATCHED)
    # Latched: the current state arrives though it was published before we subscribed.
    assert rig.wait_for(lambda: states) and states[-1].data == 'driving (drive is false)'
    assert rig.node.set_parameters([Parameter('drive', value=True)])[0].successful
    assert rig.step_until(lambda: rig.last_speed() >= 0.2)
    n = len(rig.cmds)
    assert rig.node.set_parameters([Parameter('drive', value=False)])[0].successful
    # One zero at once, then nothing.
    assert rig.wait_for(rig.delivered)
    rig.step(8)
    assert [(v, w) for _, v, w in speeds_of(rig.cmds[n:])] == [(0.0, 0.0)]


def test_invalid_parameters_are_rejected(ros_init):
    for params, fragment in [({'max_linear': 1.0}, 'max_linear'),
                             ({'control_rate': 0.0}, 'control_rate'),
                             ({'slow_distance': 0.05}, 'slow_distance'),
                             ({'hazard_types': [9]}, 'hazard_types')]:
        # Out of a descriptor's range rclpy refuses the value itself; either way the node
        # reports it as a StartupError (exit code 2 from main).
        with pytest.raises(StartupError) as e:
            make_driver(unique_namespace('drv'), **params)
        assert fragment in str(e.value)


def test_runtime_parameter_changes_are_validated(rig):
    node = rig.node
    r = node.set_parameters([Parameter('max_linear', value=0.5)])[0]
    assert not r.successful and 'max_linear' in r.reason
    r = node.set_parameters([Parameter('rotate_speed', value=1.5)])[0]
    assert not r.successful and 'max_angular' in r.reason
    r = node.set_parameters([Parameter('use_stamped', value=True)])[0]
    assert not r.successful
    assert node.get_parameter('max_linear').value == 0.3
    r = node.set_parameters([Parameter('max_linear', value=0.15)])[0]
    assert r.successful and node.logic.config.max_linear == 0.15
    rig.sending = True
    assert rig.step_until(lambda: rig.last_speed() >= 0.149)
    rig.step(10)
    assert max(v for _, v, _ in rig.speeds()) <= 0.15 + 1e-9


def test_grid_from_msg_reads_layout_and_rejects_bad_grids():
    g = open_grid()
    g[3, 7] = 100
    msg = grid_to_msg(g, SPEC, BuiltinTime(sec=1), 'base_link')
    arr, layout = grid_from_msg(msg)
    assert arr.shape == SPEC.shape and arr[3, 7] == 100
    assert (layout.resolution, layout.origin_x, layout.origin_y) == (0.05, 0.0, -2.0)
    msg.info.width = 10
    with pytest.raises(ValueError):
        grid_from_msg(msg)


def test_odometry_is_matched_to_grids_and_feeds_the_obstacle_memory(rig):
    g = open_grid()
    xs, ys = SPEC.cell_centers()
    g[(abs(xs - 1.5) < 0.05) & (abs(ys) < 0.3)] = OCCUPIED
    rig.grid = g
    assert rig.wait_for_match(rig.odom_pub, subscriptions_on(rig.node, 'odom'))
    rig.odom_xy = (5.0, 0.0)
    rig.sending = True
    # Remembered once memory_min_sightings grids showed the cells occupied.
    sightings = rig.node.logic.config.memory_min_sightings
    assert rig.step_until(lambda: len(rig.node.logic.memory) > 0,
                          max_steps=GRID_EVERY * sightings + 2)
    mem = rig.node.logic.memory
    assert np.all(np.abs(mem[:, 0] - 6.5) < 0.1) and np.all(np.abs(mem[:, 1]) < 0.35)
    # The odometry has not moved since the grid's: no motion since.
    assert rig.node.motion_since_grid() == pytest.approx((0.0, 0.0, 0.0))
    rig.odom_xy = (5.1, 0.0)
    rig.sending = False
    rig.step()
    assert rig.node.motion_since_grid() == pytest.approx((0.1, 0.0, 0.0))


def test_use_sim_time_set_at_run_time_moves_the_timeouts_to_the_ros_clock(ros_init):
    ns = unique_namespace('drv')
    node = make_driver(ns, use_sim_time=False)
    rig = Rig(ns, node, listen=False, start=False)
    try:
        # On the wall clock first: grids at 10 Hz from a wall-clock timer, driving.
        sent = []

        def send():
            rig.grid_pub.publish(grid_to_msg(open_grid(), SPEC,
                                             rig.client.get_clock().now().to_msg(), 'base_link'))
            sent.append(1)
        timer = rig.client.create_timer(0.1, send)
        assert rig.wait_for(lambda: node.state == 'driving')
        timer.cancel()
        # Every grid sent has arrived (best effort: one lost never arrives later).
        rig.wait_for(lambda: node.grids_received == len(sent), timeout=2.0)
        assert node.set_parameters([Parameter('use_sim_time', value=True)])[0].successful
        rig.listen()
        # The control timer now steps with /clock (rclpy restarts it on the switch: its first
        # step is one period after the first time). The grid received on the wall clock is
        # dropped with the switch: stopped until a grid arrives on the new clock.
        assert rig.clock.set_time(rig.clock.now_ns, node)
        assert rig.step() == [(rig.clock.now, 0.0, 0.0)]
        assert node.state == 'stopped: no grid yet'
        rig.sending = True
        assert rig.step_until(lambda: rig.last_speed() > 0.0, max_steps=2)
        # A grid older than stale_timeout in simulated seconds stops it, however little
        # wall time went by.
        rig.sending = False
        before = node.control_steps
        assert rig.clock.set_time(rig.clock.now_ns + 600_000_000, node)
        assert rig.wait_for(lambda: node.control_steps > before)
        assert rig.wait_for(rig.delivered)
        assert rig.speeds()[-1] == (rig.clock.now, 0.0, 0.0)
        assert node.state == 'stopped: stale grid'
    finally:
        rig.close()


# -- the real executable, in its own process ------------------------------------------------

def _env():
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env['PYTHONUNBUFFERED'] = '1'
    return env


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_shutdown_sends_a_final_zero(ros_init, sig):
    ns = unique_namespace('drv')
    h = Harness(ns)
    # On the test's clock: no control step happens after the last one the test made, so a
    # zero after the signal can only be the final one.
    proc = subprocess.Popen([sys.executable, '-m', 'freespace_seg.nodes.freespace_driver',
                             '--ros-args', '-r', f'__ns:={ns}', '-r',
                             f'/clock:={clock_topic(ns)}', '-p', 'use_sim_time:=true'],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        clock = SimClock(h)
        cmds = []
        h.client.create_subscription(Twist, 'cmd_vel', lambda m: cmds.append(m.linear.x), 100)
        grid_pub = h.publisher(OccupancyGrid, 'free_space/grid')
        clock_subs = h.client.count_subscribers  # the driver's /clock subscription

        def driving():
            grid_pub.publish(grid_to_msg(open_grid(), SPEC, clock.stamp(), 'base_link'))
            time.sleep(0.02)
            clock.pub.publish(Clock(clock=clock.stamp()))
            clock.now_ns += PERIOD_NS
            time.sleep(0.02)
            return cmds and cmds[-1] > 0.1
        assert h.wait_for(lambda: clock_subs(clock.topic) > 0, timeout=30), \
            proc.stderr.read() if proc.poll() else ''
        assert h.wait_for(driving, timeout=30), proc.stderr.read() if proc.poll() else ''
        # Time stands still from here: commands of the last steps may still be on their way,
        # then (one publisher: in order) the final zero, the only one since it drove.
        n = len(cmds)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
        assert h.wait_for(lambda: cmds[-1] == 0.0, timeout=2.0)
        assert all(v > 0.1 for v in cmds[n - 1:-1])
    finally:
        if proc.poll() is None:
            proc.kill()
        h.close()
    assert proc.returncode == 0, err
    assert 'Traceback' not in err


def test_hazard_with_odometry_backs_up_along_the_path_driven(rig):
    """With odometry the escape after a hazard first backs up over the path it came."""
    assert rig.wait_for_match(rig.odom_pub, subscriptions_on(rig.node, 'odom'))
    rig.odom_xy = (0.0, 0.0)
    rig.sending = True

    xs = []

    def step_moving(n=1):
        # The odometry follows the commands (straight along x: the turns are in place).
        for _ in range(n):
            v = rig.step()[-1][1]
            rig.odom_xy = (rig.odom_xy[0] + v * PERIOD, 0.0)
            xs.append(rig.odom_xy[0])

    step_moving(30)
    driven = rig.odom_xy[0]
    assert driven > 0.3 and len(rig.node.logic.trail) > 10
    pub = rig.publisher(Bool, 'hazard')
    assert rig.wait_for_match(pub, subscriptions_on(rig.node, 'hazard'))
    assert rig.publish_and_wait_for_command(pub, Bool(data=True))[1:] == (0.0, 0.0)
    hit, before = rig.odom_xy[0], len(xs)
    pub.publish(Bool(data=False))
    cleared = rig.clock.now
    assert rig.wait_for(lambda: 'hazard' not in rig.node.stop_reasons(cleared + 0.5 + PERIOD))
    states = []
    for _ in range(140):
        step_moving()
        states.append(rig.node.state)
        if states[-1] == 'driving' and 'rotating' in states:
            break
    speeds = rig.speeds(cleared + PERIOD)
    assert [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]][-3:] == [
        'backing up (hazard)', 'rotating', 'driving']
    # Backed up by backup_distance (0.3 m), at most backup_speed (0.1 m/s), then it turned.
    backed = -sum(v * PERIOD for _, v, _ in speeds if v < 0.0)
    assert backed == pytest.approx(0.3, abs=0.03)
    assert hit - min(xs[before:]) == pytest.approx(backed) and backed < driven
    assert min(v for _, v, _ in speeds) >= -0.1 - 1e-9
    assert rig.node.logic.recoveries == 1
