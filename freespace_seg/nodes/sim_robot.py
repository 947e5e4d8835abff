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
``sim_robot``: a light simulated Create 3 with a forward camera, in a seeded synthetic room.

The room is ``make_scene(np.random.default_rng(seed))`` (see :mod:`freespace_seg.sim`)
and the start pose is drawn from the same generator. The physics (a disc of ``robot_radius``
with unicycle kinematics, acceleration limits, speed caps, contacts and collisions, coverage)
is :class:`freespace_seg.sim.robot.RobotBody`; this node feeds it:

* every step of a fixed ``1 / step_rate`` seconds of simulated time (driven by a wall-clock
  timer, so the simulation is deterministic in its own clock whatever the CPU load does to
  the timer) with the newest ``cmd_vel`` (geometry_msgs/Twist, or TwistStamped with
  ``use_stamped``); a command older than ``cmd_vel_timeout`` (simulated time) means stop, as
  on a real Create 3;
* the camera (``default_intrinsics(width, height)`` on a mount ``camera_height`` above the
  floor, pitched ``camera_pitch`` down) renders the room from the robot's pose every
  ``1 / camera_rate`` seconds of simulated time.

Publishes ``odom`` (nav_msgs/Odometry, ``odom_frame`` -> ``base_frame``, every step),
``image`` (rgb8) and ``camera_info`` with the same header (frame ``camera_frame``),
``ground_truth/free_mask`` (mono8, 255 = free floor, exact; only while subscribed),
``hazard`` (std_msgs/Bool, every step: true while the robot pushes against something, as a
bumper would report it, for ``freespace_driver``'s hazard input) and ``collisions``
(std_msgs/UInt32, latched: the count so far). When ``tf2_msgs`` is importable it also
broadcasts ``odom_frame`` -> ``base_frame`` on ``/tf``. With ``publish_clock`` it publishes
the simulated time on ``/clock`` every step and stamps everything with it, so that nodes run
with ``use_sim_time:=true`` time out, tick and measure ages in simulated seconds.

It tracks the distance travelled, the path and the floor swept by the footprint;
:meth:`SimRobot.summary` returns them with the coverage fraction of the room's free floor, and
the summary is logged when the node is destroyed. Parameters: :data:`SIM_PARAMS`.
"""

import math
import threading

from freespace_seg.ground.geometry import CameraMount
from freespace_seg.nodes.msgs import array_to_image, camera_info_from_intrinsics
from freespace_seg.nodes.params import ParamSpec
from freespace_seg.nodes.ros_util import (declare_and_validate, LATCHED_QOS, on_parameter_changes,
                                          spin_node, StartupError)
from freespace_seg.sim import default_intrinsics, make_scene, RandomizationConfig, render
from freespace_seg.sim.randomization import STYLES
from freespace_seg.sim.robot import RobotBody, start_pose as pick_start_pose
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import Odometry
import numpy as np
from rclpy.node import Node
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Bool, Header, UInt32

try:  # only for the optional /tf broadcast
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
except ImportError:  # pragma: no cover - depends on the installation
    TFMessage = None

SIM_PARAMS = (
    ParamSpec('seed', 0, 'Seed of the room and the start pose.', 'int', min_value=0,
              max_value=2 ** 31 - 1, read_only=True),
    ParamSpec('style', 'default', 'Appearance style of the room: default (what the models '
              'train on), shifted (held-out materials and light) or one_floor (shifted, '
              'with one crimson rubber floor in every room).', 'string',
              choices=STYLES, read_only=True),
    ParamSpec('step_rate', 20.0, 'Simulation steps per second (fixed steps of 1/step_rate '
              's of simulated time); odom is published every step.', 'double',
              min_value=5.0, max_value=200.0, read_only=True),
    ParamSpec('camera_rate', 10.0, 'Camera frames per second of simulated time.', 'double',
              min_value=0.5, max_value=60.0, read_only=True),
    ParamSpec('width', 320, 'Image width in pixels.', 'int', min_value=16, max_value=1920,
              read_only=True),
    ParamSpec('height', 180, 'Image height in pixels.', 'int', min_value=16, max_value=1080,
              read_only=True),
    ParamSpec('camera_height', 0.25, 'Camera optical centre above the floor (m), at the '
              'robot centre.', 'double', min_value=0.05, max_value=2.0, read_only=True),
    ParamSpec('camera_pitch', 0.3, 'Camera pitch, positive down (rad).', 'double',
              min_value=-0.5, max_value=1.5, read_only=True),
    ParamSpec('camera_noise', False, 'Render camera effects (exposure, noise, blur, JPEG), '
              'seeded per frame; false gives clean images.', 'bool', read_only=True),
    ParamSpec('robot_radius', 0.17, 'Radius of the robot disc (m); Create 3: 0.17.',
              'double', min_value=0.05, max_value=1.0, read_only=True),
    ParamSpec('max_linear', 0.306, 'Speed cap (m/s); Create 3 with safety on: 0.306.',
              'double', min_value=0.0, max_value=2.0),
    ParamSpec('max_angular', 1.9, 'Turn-rate cap (rad/s).', 'double', min_value=0.0,
              max_value=10.0),
    ParamSpec('linear_accel', 1.0, 'Linear acceleration limit (m/s^2).', 'double',
              min_value=0.01, max_value=20.0),
    ParamSpec('angular_accel', 5.0, 'Angular acceleration limit (rad/s^2).', 'double',
              min_value=0.01, max_value=50.0),
    ParamSpec('cmd_vel_timeout', 0.5, 'Stop when the newest cmd_vel is older than this (s '
              'of simulated time).', 'double', min_value=0.05, max_value=10.0),
    ParamSpec('use_stamped', False, 'Subscribe cmd_vel as geometry_msgs/TwistStamped '
              'instead of Twist.', 'bool', read_only=True),
    ParamSpec('odom_frame', 'odom', 'frame_id of odom.', 'string', read_only=True),
    ParamSpec('base_frame', 'base_link', 'child_frame_id of odom.', 'string', read_only=True),
    ParamSpec('camera_frame', 'camera_optical_frame', 'frame_id of image and camera_info.',
              'string', read_only=True),
    ParamSpec('coverage_resolution', 0.05, 'Cell size of the coverage count (m).', 'double',
              min_value=0.01, max_value=1.0, read_only=True),
    ParamSpec('publish_clock', False, 'Publish /clock (rosgraph_msgs/Clock) with the '
              'simulated time every step and stamp every message with it, for nodes run '
              'with use_sim_time:=true; false stamps with the node clock.', 'bool',
              read_only=True),
)


class SimRobot(Node):
    """A simulated Create 3 in a synthetic room: cmd_vel in; odom, camera, collisions out."""

    def __init__(self, node_name='sim_robot', scene=None, start_pose=None, autostep=True,
                 **kwargs):
        """
        Build the room and start the step timer.

        ``scene`` and ``start_pose`` let in-process users bring their own room; with
        ``autostep`` false there is no timer and the owner calls :meth:`step` (and
        :meth:`publish_clock`) itself, as the closed-loop harness does in lockstep.
        """
        super().__init__(node_name, **kwargs)
        p = self.params = declare_and_validate(self, SIM_PARAMS)
        rng = np.random.default_rng(p['seed'])
        # In-process users (tests) may bring their own room and start pose.
        self._look = RandomizationConfig(style=p['style'])
        self.scene = scene if scene is not None else make_scene(rng, self._look)
        if start_pose:
            self.start_pose = tuple(float(v) for v in start_pose)
            if self.scene.collides(*self.start_pose[:2], p['robot_radius']):
                self.start_pose = None
        else:
            self.start_pose = pick_start_pose(self.scene, rng, p['robot_radius'])
        if self.start_pose is None:
            raise StartupError(f'room {p["seed"]} has no free start pose for a robot of '
                               f'radius {p["robot_radius"]} m')
        self.intrinsics = default_intrinsics(p['width'], p['height'])
        self.mount = CameraMount(x=0.0, y=0.0, z=p['camera_height'], roll=0.0,
                                 pitch=p['camera_pitch'], yaw=0.0)
        #: step length in integer nanoseconds, so that simulated stamps are exact
        self.dt_ns = int(round(1e9 / p['step_rate']))
        self.dt = self.dt_ns * 1e-9
        self._camera_period = 1.0 / p['camera_rate']

        self._lock = threading.Lock()
        #: the physics: pose, speeds, contacts, path and coverage
        self.body = RobotBody(self.scene, self.start_pose, p['robot_radius'], self.dt,
                              p['coverage_resolution'])
        self.frames = 0
        self._cmd = (0.0, 0.0)
        self._cmd_time = None
        #: stamp (ns) of the newest TwistStamped command, None before one or with Twist
        self.last_cmd_stamp_ns = None
        #: stamp (ns) of the newest camera frame published, None before one
        self.last_frame_stamp_ns = None
        self._next_frame = 0.0

        cmd_type = TwistStamped if p['use_stamped'] else Twist
        self._sub = self.create_subscription(cmd_type, 'cmd_vel', self.command, 10)
        self._pub_odom = self.create_publisher(Odometry, 'odom', 10)
        self._pub_image = self.create_publisher(Image, 'image', 2)
        self._pub_info = self.create_publisher(CameraInfo, 'camera_info', 2)
        self._pub_truth = self.create_publisher(Image, 'ground_truth/free_mask', 2)
        self._pub_hazard = self.create_publisher(Bool, 'hazard', 10)
        self._pub_collisions = self.create_publisher(UInt32, 'collisions', LATCHED_QOS)
        self._pub_collisions.publish(UInt32(data=0))
        self._pub_tf = self.create_publisher(TFMessage, '/tf', 10) if TFMessage else None
        self._pub_clock = self.create_publisher(Clock, '/clock', 10) \
            if p['publish_clock'] else None
        on_parameter_changes(self, SIM_PARAMS, self._apply_parameters)
        self._timer = self.create_timer(self.dt, self.step) if autostep else None
        x, y, yaw = self.start_pose
        self.get_logger().info(
            f'room {p["seed"]}: {self.scene.area():.1f} m^2, {len(self.scene.obstacles)} '
            f'obstacle parts; start ({x:.2f}, {y:.2f}, {math.degrees(yaw):.0f} deg); camera '
            f'{p["width"]}x{p["height"]} at {p["camera_rate"]:g} Hz')

    # -- the body's state, read-only ----------------------------------------------------------
    x = property(lambda self: self.body.x, doc='x of the robot centre in the room (m)')
    y = property(lambda self: self.body.y, doc='y of the robot centre in the room (m)')
    yaw = property(lambda self: self.body.yaw, doc='heading in the room (rad)')
    v = property(lambda self: self.body.v, doc='linear speed (m/s)')
    w = property(lambda self: self.body.w, doc='turn rate (rad/s)')
    steps = property(lambda self: self.body.steps, doc='steps simulated')
    distance = property(lambda self: self.body.distance, doc='distance driven (m)')
    collisions = property(lambda self: self.body.collisions, doc='contacts begun')
    contact_steps = property(lambda self: self.body.contact_steps, doc='steps in contact')
    in_contact = property(lambda self: self.body.in_contact, doc='touching something now')
    bumper = property(lambda self: self.body.bumper, doc='pushing against something')
    collision_points = property(lambda self: self.body.collision_points,
                                doc='(t, x, y) of every collision')
    coverage = property(lambda self: self.body.coverage, doc='the swept floor')

    @property
    def odom_pose(self):
        """Return the pose (x, y, yaw) in the odometry frame, which starts at the start pose."""
        x0, y0, yaw0 = self.start_pose
        dx, dy = self.x - x0, self.y - y0
        c, s = math.cos(-yaw0), math.sin(-yaw0)
        return c * dx - s * dy, s * dx + c * dy, self.yaw - yaw0

    # -- inputs -------------------------------------------------------------------------------
    def _apply_parameters(self, changes):
        with self._lock:
            self.params.update(changes)

    def command(self, msg):
        """
        Take a cmd_vel message (Twist, or TwistStamped with ``use_stamped``).

        The cmd_vel subscription calls it; an in-process owner that steps the simulation
        itself may call it directly. The command holds until ``cmd_vel_timeout`` (simulated).
        """
        twist = msg.twist if isinstance(msg, TwistStamped) else msg
        with self._lock:
            self._cmd = (float(twist.linear.x), float(twist.angular.z))
            self._cmd_time = self.sim_time
            if isinstance(msg, TwistStamped):
                self.last_cmd_stamp_ns = Time.from_msg(msg.header.stamp).nanoseconds

    # -- simulation ---------------------------------------------------------------------------
    @property
    def sim_time(self):
        """Return the simulated time in seconds (steps taken times the step length)."""
        return self.body.time

    @property
    def sim_time_ns(self):
        """Return the simulated time in integer nanoseconds."""
        return self.steps * self.dt_ns

    def publish_clock(self):
        """Publish the simulated time on /clock (only with ``publish_clock``)."""
        if self._pub_clock is not None:
            self._pub_clock.publish(Clock(clock=Time(nanoseconds=self.sim_time_ns).to_msg()))

    def step(self, clock=True):
        """
        Advance the simulation by one fixed step and publish what it produced.

        Returns the stamp (ns) of the camera frame published in this step, or None. With
        ``publish_clock``, /clock follows unless ``clock`` is false (then the caller publishes
        it with :meth:`publish_clock`, after what must arrive first has arrived).
        """
        p = self.params
        with self._lock:
            cmd_v, cmd_w = self._cmd
            fresh = self._cmd_time is not None and \
                self.sim_time - self._cmd_time <= p['cmd_vel_timeout']
        if not fresh:
            cmd_v = cmd_w = 0.0
        if self.body.step(cmd_v, cmd_w, p['max_linear'], p['max_angular'], p['linear_accel'],
                          p['angular_accel']):
            _, nx, ny = self.body.collision_points[-1]
            self._pub_collisions.publish(UInt32(data=self.collisions))
            self.get_logger().warning(
                f'collision {self.collisions} at ({nx:.2f}, {ny:.2f}), t={self.sim_time:.2f} s')

        if self._pub_clock is not None:
            stamp = Time(nanoseconds=self.sim_time_ns).to_msg()
        else:
            stamp = self.get_clock().now().to_msg()
        self._publish_odom(stamp)
        self._pub_hazard.publish(Bool(data=self.bumper))
        frame = None
        if self.sim_time + 1e-9 >= self._next_frame:
            self._next_frame += self._camera_period
            if self._publish_frame(stamp):
                frame = Time.from_msg(stamp).nanoseconds
                self.last_frame_stamp_ns = frame
        if clock:
            self.publish_clock()
        return frame

    def _publish_odom(self, stamp):
        p = self.params
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id = p['odom_frame']
        odom.child_frame_id = p['base_frame']
        # odom starts at the start pose, as a real robot's odometry does.
        odom.pose.pose.position.x, odom.pose.pose.position.y, yaw = self.odom_pose
        odom.pose.pose.orientation.z = math.sin(yaw / 2.0)
        odom.pose.pose.orientation.w = math.cos(yaw / 2.0)
        odom.twist.twist.linear.x = self.v
        odom.twist.twist.angular.z = self.w
        self._pub_odom.publish(odom)
        if self._pub_tf is not None:
            t = TransformStamped()
            t.header = odom.header
            t.child_frame_id = odom.child_frame_id
            t.transform.translation.x = odom.pose.pose.position.x
            t.transform.translation.y = odom.pose.pose.position.y
            t.transform.rotation = odom.pose.pose.orientation
            self._pub_tf.publish(TFMessage(transforms=[t]))

    def publish_camera_info(self):
        """Publish camera_info once, stamped now (so that perception knows the camera early)."""
        stamp = (Time(nanoseconds=self.sim_time_ns) if self._pub_clock is not None
                 else self.get_clock().now()).to_msg()
        header = Header(stamp=stamp, frame_id=self.params['camera_frame'])
        self._pub_info.publish(camera_info_from_intrinsics(self.intrinsics, header))

    def _publish_frame(self, stamp):
        p = self.params
        want_truth = self._pub_truth.get_subscription_count() > 0
        if not (want_truth or self._pub_image.get_subscription_count() > 0 or
                self._pub_info.get_subscription_count() > 0):
            return False
        rng = np.random.default_rng([p['seed'], self.frames]) if p['camera_noise'] else None
        frame = render(self.scene, self.intrinsics, self.mount,
                       robot_pose=(self.x, self.y, self.yaw), rng=rng,
                       randomization=self._look)
        self.frames += 1
        image = array_to_image(frame.image, 'rgb8')
        image.header.stamp = stamp
        image.header.frame_id = p['camera_frame']
        info = camera_info_from_intrinsics(self.intrinsics, image.header)
        self._pub_info.publish(info)
        self._pub_image.publish(image)
        if want_truth:
            truth = array_to_image((frame.free > 0).astype(np.uint8) * 255, 'mono8',
                                   image.header)
            self._pub_truth.publish(truth)
        return True

    # -- results ------------------------------------------------------------------------------
    @property
    def path(self):
        """Return the path as an (N, 4) array of (t, x, y, yaw) in the room frame, per step."""
        return np.array(self.body.path, dtype=np.float64)

    def summary(self):
        """Return a dict of the run so far: collisions, distance, coverage, time..."""
        return {
            'seed': self.params['seed'],
            'sim_time': self.sim_time,
            'steps': self.steps,
            'frames': self.frames,
            'collisions': self.collisions,
            'contact_steps': self.contact_steps,
            'distance': self.distance,
            'coverage': self.coverage.fraction,
            'free_area': self.coverage.free_area,
            'start_pose': tuple(self.start_pose),
            'pose': (self.x, self.y, self.yaw),
        }

    def summary_text(self):
        """Return the summary as one log line."""
        s = self.summary()
        return (f'room {s["seed"]}: {s["sim_time"]:.1f} s simulated, {s["distance"]:.2f} m '
                f'driven, {s["collisions"]} collisions ({s["contact_steps"]} contact steps), '
                f'coverage {100.0 * s["coverage"]:.1f} % of {s["free_area"]:.1f} m^2 free '
                f'floor, {s["frames"]} frames')

    def destroy_node(self):
        """Log the summary, then destroy the node."""
        if getattr(self, 'body', None) is not None:
            self.get_logger().info('summary: ' + self.summary_text())
        return super().destroy_node()


def main(args=None):
    """Run ``sim_robot`` until SIGINT/SIGTERM; exit code 2 on a startup error."""
    # spin_node destroys the node while the context still works: the summary reaches /rosout.
    return spin_node(SimRobot, args)


if __name__ == '__main__':
    raise SystemExit(main())
