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

"""sim_robot: kinematics, collisions, command timeout, coverage and its topics."""

import math
import os
import signal
import subprocess
import sys
import time

from freespace_seg.nodes.msgs import camera_info_from_intrinsics
from freespace_seg.nodes.sim_robot import SimRobot
from freespace_seg.sim import Cylinder, Scene
from freespace_seg.sim.robot import Coverage, integrate
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Bool, UInt32
from support import REPO
from support.ros import Harness, publishers_on, unique_namespace

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

ROOM = Scene.empty(size=(4.0, 4.0))           # walls at x, y = +-2


def make_sim(ros_init, scene=ROOM, start=(0.0, 0.0, 0.0), **params):
    overrides = [Parameter(k, value=v) for k, v in params.items()]
    return SimRobot(namespace=unique_namespace('sim'), scene=scene, start_pose=start,
                    parameter_overrides=overrides)


def twist(v, w=0.0):
    t = Twist()
    t.linear.x, t.angular.z = float(v), float(w)
    return t


def turn_to(sim, heading, steps=200):
    """Turn in place until the heading is within 0.02 rad of ``heading``."""
    for _ in range(steps):
        err = math.atan2(math.sin(heading - sim.yaw), math.cos(heading - sim.yaw))
        if abs(err) < 0.02:
            break
        sim.command(twist(0.0, max(-1.0, min(1.0, 3.0 * err))))
        sim.step()
    for _ in range(10):
        sim.command(twist(0.0))
        sim.step()


def test_integrate_is_an_exact_arc():
    assert integrate(0, 0, 0, 0.2, 0.0, 1.0) == pytest.approx((0.2, 0.0, 0.0))
    x, y, yaw = integrate(0, 0, 0, 1.0, 1.0, math.pi)      # half a circle of radius 1
    assert (x, y, yaw) == pytest.approx((0.0, 2.0, math.pi), abs=1e-12)


def test_steps_follow_commands_within_limits(ros_init):
    sim = make_sim(ros_init)
    try:
        sim.command(twist(0.25))
        for _ in range(20):                       # 1 s simulated at 20 Hz
            sim.command(twist(0.25))
            sim.step()
        # 0.25 s of acceleration at 1 m/s^2, then 0.25 m/s.
        assert sim.v == pytest.approx(0.25)
        assert sim.x == pytest.approx(0.25 * 1.0 - 0.5 * 0.25 * 0.25, abs=0.01)
        assert sim.distance == pytest.approx(sim.x)
        assert sim.sim_time == pytest.approx(1.0)
        # Speed caps: 0.306 m/s and 1.9 rad/s.
        for _ in range(40):
            sim.command(twist(5.0, 9.0))
            sim.step()
        assert sim.v == pytest.approx(0.306) and sim.w == pytest.approx(1.9)
    finally:
        sim.destroy_node()


def test_cmd_vel_timeout_stops_the_robot(ros_init):
    sim = make_sim(ros_init)
    try:
        sim.command(twist(0.2))
        for _ in range(10):                       # 0.5 s: the command is still fresh
            sim.step()
        assert sim.v == pytest.approx(0.2)
        for _ in range(10):                       # then it times out: decelerate to zero
            sim.step()
        assert sim.v == 0.0
    finally:
        sim.destroy_node()


def test_collision_stops_the_robot_and_is_counted_once_per_contact(ros_init):
    # Facing the +x wall (x = 2) from 0.4 m away.
    sim = make_sim(ros_init, start=(1.6, 0.0, 0.0))
    try:
        for _ in range(60):
            sim.command(twist(0.3))
            sim.step()
            assert ROOM.clearance(sim.x, sim.y) > sim.params['robot_radius']
        assert sim.collisions == 1 and sim.in_contact and sim.contact_steps > 30
        assert sim.v == 0.0
        assert sim.x > 2.0 - 0.17 - 0.02           # it got all the way to the wall
        # Turning in place is fine in contact: turn round to face away from the wall.
        turn_to(sim, math.pi)
        assert sim.collisions == 1
        # Drive away, then back into the wall: a second collision.
        for _ in range(20):
            sim.command(twist(0.3))
            sim.step()
        assert not sim.in_contact and sim.x < 1.7
        turn_to(sim, 0.0)
        for _ in range(100):
            sim.command(twist(0.3))
            sim.step()
        assert sim.collisions == 2
        assert len(sim.collision_points) == 2
        assert '2 collisions' in sim.summary_text()
    finally:
        sim.destroy_node()


def test_low_obstacles_count_too(ros_init):
    cable = Cylinder(0.6, 0.0, 0.05, 0.02)       # 2 cm high: still a collision
    sim = make_sim(ros_init, scene=Scene.empty(size=(4.0, 4.0), obstacles=[cable]))
    try:
        for _ in range(60):
            sim.command(twist(0.3))
            sim.step()
        assert sim.collisions == 1
    finally:
        sim.destroy_node()


def test_coverage_counts_the_swept_floor():
    cov = Coverage(ROOM, 0.17, 0.05)
    assert cov.free_area == pytest.approx(16.0, rel=0.01)
    cov.add(0.0, 0.0)
    assert cov.fraction == pytest.approx(math.pi * 0.17 ** 2 / 16.0, rel=0.15)
    for x in np.arange(-1.0, 1.0, 0.02):
        cov.add(x, 0.0)
    # Cells whose centres are within the disc: a 0.30 m wide band at 0.05 m cells.
    assert cov.fraction == pytest.approx((2.0 * 0.30 + math.pi * 0.17 ** 2) / 16.0, rel=0.1)


def test_seeded_rooms_are_deterministic(ros_init):
    a = SimRobot(namespace=unique_namespace('sim'),
                 parameter_overrides=[Parameter('seed', value=7)])
    b = SimRobot(namespace=unique_namespace('sim'),
                 parameter_overrides=[Parameter('seed', value=7)])
    c = SimRobot(namespace=unique_namespace('sim'),
                 parameter_overrides=[Parameter('seed', value=8)])
    try:
        assert a.start_pose == b.start_pose and a.scene.outline == b.scene.outline
        assert a.start_pose != c.start_pose
        assert not a.scene.collides(*a.start_pose[:2], 0.25)
    finally:
        for n in (a, b, c):
            n.destroy_node()


def test_topics(ros_init):
    ns = unique_namespace('sim')
    sim = SimRobot(namespace=ns, scene=ROOM, start_pose=(-1.0, 0.0, 0.0),
                   parameter_overrides=[Parameter('width', value=160),
                                        Parameter('height', value=90)])
    h = Harness(ns, sim)
    try:
        odom = h.collect(Odometry, 'odom')
        images = h.collect(Image, 'image')
        infos = h.collect(CameraInfo, 'camera_info')
        truth = h.collect(Image, 'ground_truth/free_mask')
        hazard = h.collect(Bool, 'hazard')
        counts = []
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        h.client.create_subscription(UInt32, 'collisions', counts.append, latched)
        cmd = h.publisher(Twist, 'cmd_vel')
        assert h.wait_for_subscribers(cmd)
        assert h.wait_for(lambda: len(images) >= 3 and truth and counts, timeout=10)
        # No rate check: the step timer is wall-clock paced and a loaded machine slows it
        # (simulated time stays exact; test_publish_clock_... checks the stamps).
        n0 = len(odom)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30.0 and not (
                len(odom) - n0 >= 5 and odom[-1].pose.pose.position.x > 0.05 and
                odom[-1].twist.twist.linear.x > 0.1):
            cmd.publish(twist(0.2))
            time.sleep(0.05)
        assert odom[-1].header.frame_id == 'odom' and odom[-1].child_frame_id == 'base_link'
        assert odom[-1].pose.pose.position.x > 0.05 and odom[-1].twist.twist.linear.x > 0.1
        img = images[-1]
        assert (img.width, img.height, img.encoding) == (160, 90, 'rgb8')
        assert img.header.frame_id == 'camera_optical_frame'
        stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in infos}
        assert (img.header.stamp.sec, img.header.stamp.nanosec) in stamps
        expected = camera_info_from_intrinsics(sim.intrinsics)
        assert list(infos[-1].k) == list(expected.k)
        assert truth[-1].encoding == 'mono8' and truth[-1].width == 160
        assert hazard and not hazard[-1].data
        assert counts[-1].data == 0
    finally:
        h.close()


def test_publish_clock_stamps_in_simulated_time(ros_init):
    ns = unique_namespace('sim')
    sim = SimRobot(namespace=ns, scene=ROOM, start_pose=(-1.0, 0.0, 0.0), autostep=False,
                   parameter_overrides=[Parameter('width', value=64),
                                        Parameter('height', value=36),
                                        Parameter('publish_clock', value=True),
                                        Parameter('step_rate', value=40.0),
                                        Parameter('camera_rate', value=10.0)])
    h = Harness(ns, sim)
    try:
        clocks = h.collect(Clock, '/clock')
        odom = h.collect(Odometry, 'odom')
        images = h.collect(Image, 'image')
        pubs = publishers_on(sim, 'image') + publishers_on(sim, '/clock')
        assert len(pubs) == 2
        assert h.wait_for(lambda: all(p.get_subscription_count() > 0 for p in pubs))
        # No timer: nothing happens on its own, while the executor spins through 8 periods.
        assert h.wait_periods(sim.dt, 8)
        assert sim.steps == 0 and not odom
        frames = [sim.step() for _ in range(8)]  # 0.2 s at 40 Hz; frames every 0.1 s
        assert [f is not None for f in frames] == [True, False, False, True, False, False,
                                                   False, True]
        assert (frames[0], frames[3], frames[7]) == (25_000_000, 100_000_000, 200_000_000)
        assert h.wait_for(lambda: len(clocks) == 8 and len(odom) == 8 and len(images) == 3)
        ns_of = [Time.from_msg(m.clock).nanoseconds for m in clocks]
        assert ns_of == [25_000_000 * k for k in range(1, 9)]
        assert [Time.from_msg(m.header.stamp).nanoseconds for m in odom] == ns_of
        assert Time.from_msg(images[1].header.stamp).nanoseconds == frames[3]
        # step(clock=False) leaves /clock to the caller: the next clock is the caller's, then
        # the following step's (one publisher: they arrive in order, after any other).
        sim.step(clock=False)
        sim.publish_clock()
        sim.step()
        assert h.wait_for(lambda: Time.from_msg(clocks[-1].clock).nanoseconds ==
                          10 * 25_000_000)
        assert [Time.from_msg(m.clock).nanoseconds for m in clocks[8:]] == [
            9 * 25_000_000, 10 * 25_000_000]
    finally:
        h.close()


def test_runtime_limits_apply(ros_init):
    sim = make_sim(ros_init)
    try:
        assert not sim.set_parameters([Parameter('max_linear', value=-1.0)])[0].successful
        assert not sim.set_parameters([Parameter('seed', value=3)])[0].successful
        assert sim.set_parameters([Parameter('max_linear', value=0.1)])[0].successful
        for _ in range(20):
            sim.command(twist(0.3))
            sim.step()
        assert sim.v == pytest.approx(0.1)
    finally:
        sim.destroy_node()


def test_executable_logs_a_summary_on_sigint(ros_init):
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env['PYTHONUNBUFFERED'] = '1'
    ns = unique_namespace('sim')
    h = Harness(ns)
    odom = h.collect(Odometry, 'odom')
    proc = subprocess.Popen([sys.executable, '-m', 'freespace_seg.nodes.sim_robot',
                             '--ros-args', '-r', f'__ns:={ns}', '-p', 'seed:=5'],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if 'room 5:' in line or not line:
                break
        assert any('room 5:' in x for x in lines), ''.join(lines)
        # Spinning: its step timer has published odometry.
        assert h.wait_for(lambda: odom, timeout=60), ''.join(lines)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        h.close()
    assert proc.returncode == 0, err
    assert 'summary: room 5:' in err and 'collisions' in err
    assert 'Traceback' not in err and 'Failed to publish' not in err
