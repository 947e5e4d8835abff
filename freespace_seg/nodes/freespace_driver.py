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
``freespace_driver``: drive a Create 3 / TurtleBot 4 through the free floor the camera sees.

Subscribes ``free_space/grid`` (nav_msgs/OccupancyGrid in ``base_frame``, from
``segmentation_node``) and ``odom`` (nav_msgs/Odometry, optional) and publishes ``cmd_vel``
(geometry_msgs/Twist, or TwistStamped with ``use_stamped``) at ``control_rate`` Hz, steering
with :class:`freespace_seg.driving.driver_logic.DriverLogic` (the algorithm is described there).
With odometry (matched to each grid's stamp within 0.2 s) the driver remembers obstacles that
left the camera's view for ``memory_time`` seconds and measures how far the robot moved since
the image; without it, it estimates that motion from its own commands and remembers nothing.

Safety: the command is zero, at once and for as long as the condition holds, when

* the grid is stale: none received for ``stale_timeout`` seconds (receipt time, so a camera
  clock that disagrees with ours cannot hide a dead perception pipeline), or none yet;
* a hazard fires: ``hazard_detection`` (irobot_create_msgs/HazardDetectionVector, only when
  that package is importable) holds a detection of one of ``hazard_types``, or ``hazard``
  (std_msgs/Bool, always subscribed: a bumper, a cliff sensor, a simulator) is true; the stop
  lasts ``hazard_hold_time`` seconds after the last one, then the robot backs up along the
  path it drove (``backup_distance``, with odometry) and turns in place by ``hazard_turn``
  before it drives on (the grid missed whatever it hit);
* ``e_stop`` (std_msgs/Bool) is latched true: true stops until a false arrives. It is
  subscribed twice, reliable + transient_local (gets a latched value published before the
  driver started) and best effort + volatile (matches any other publisher, such as a plain
  ``ros2 topic pub``, which may print that one subscription requests an incompatible QoS:
  harmless, the other one receives its messages);
* on shutdown, :meth:`FreespaceDriver.destroy_node` publishes one zero before the publisher
  goes away.

``drive`` (runtime parameter) false: one zero command is published on the change and then
nothing, so a teleop node can use ``cmd_vel``; the driver keeps planning (see ``~/state``).

Every timeout and hold time runs on the steady clock, or, with ``use_sim_time:=true``, on the
ROS clock (``/clock``), so that in a simulation they count simulated seconds; the control timer
runs on the node clock, so with /clock it steps when simulated time does. Set at run time,
``use_sim_time`` moves both (rclpy switches the node clock; the times kept so far are
dropped, so the grid counts as missing until the next one).

A dead end (turning in place for ``recovery_after`` seconds without a path) starts the same
recovery: back up along the path driven, then turn by ``recovery_turn``. Backing up needs
odometry and only ever retraces the path the robot drove.

With odometry the driver also keeps a floor map (``frontier_*`` parameters): once no path
ahead leads over floor it has not swept, it steers towards the nearest reachable such floor
that grids have shown, turning in place towards it when it lies behind (``rotating
(frontier)``); it only ever chooses paths it may drive anyway.

Topics: ``~/state`` (std_msgs/String, latched) says what the driver does and why
(``driving``, ``rotating``, ``rotating (frontier)``, ``backing up (dead end)``, ``backing up
(hazard)``, ``stopped: stale grid``, ...) whenever that changes.
Parameters: :data:`DRIVER_PARAMS`.
"""

import collections
from dataclasses import fields
import math
import time

from freespace_seg.driving.driver_logic import DriverConfig, DriverLogic
from freespace_seg.ground.geometry import quaternion_yaw
from freespace_seg.nodes.msgs import grid_from_msg
from freespace_seg.nodes.params import ParamSpec
from freespace_seg.nodes.ros_util import (declare_and_validate, LATCHED_QOS, on_parameter_changes,
                                          spin_node, StartupError)
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from rclpy.time import Time
from std_msgs.msg import Bool, String

try:  # Iron and later (Jazzy, Kilted)
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble: the same class, in the module Iron renamed
    from rclpy.qos_event import SubscriptionEventCallbacks

try:  # the Create 3's own messages, present on a robot or a machine with its packages
    from irobot_create_msgs.msg import HazardDetectionVector
except ImportError:  # pragma: no cover - depends on the installation
    HazardDetectionVector = None

#: seconds between repeats of the same warning
WARN_THROTTLE_S = 5.0
#: odometry messages kept (5 s of a Create 3's 20 Hz odom)
ODOM_HISTORY = 100
#: How long destroy_node() lingers for cmd_vel subscribers to acknowledge the final zero (s).
#: Destroying a writer right after a write can lose the sample (rmw_fastrtps publishes
#: asynchronously); Fast DDS acks come with its heartbeat (about 3 s here), so this usually
#: times out, having given the writer ample time to send.
FINAL_ZERO_LINGER_S = 0.3
#: a grid's pose is the odometry within this of its stamp, or unknown
ODOM_MATCH_NS = 200_000_000

_DEFAULTS = DriverConfig()

#: parameters of ``freespace_driver``
DRIVER_PARAMS = (
    ParamSpec('drive', True, 'Publish the planned velocity on cmd_vel. false: publish one '
              'zero command, then nothing (cmd_vel is free for teleop); planning goes on.',
              'bool'),
    ParamSpec('use_stamped', False, 'Publish geometry_msgs/TwistStamped (frame base_frame) '
              'instead of geometry_msgs/Twist on cmd_vel.', 'bool', read_only=True),
    ParamSpec('control_rate', 20.0, 'Rate of cmd_vel (Hz); it is published at this rate '
              'while driving and while stopped.', 'double', min_value=1.0, max_value=100.0,
              read_only=True),
    ParamSpec('stale_timeout', 0.5, 'Stop when no grid arrived for this long (s, receipt '
              'time; simulated seconds with use_sim_time).', 'double', min_value=0.05,
              max_value=10.0),
    ParamSpec('hazard_hold_time', 0.5, 'Stay stopped this long after the last hazard (s).',
              'double', min_value=0.0, max_value=30.0),
    ParamSpec('hazard_turn', 1.57, 'After a hazard clears, back up along the path driven '
              '(backup_distance, with odom), then turn in place by this much (rad) before '
              'driving on: the grid missed what the robot hit. 0: no turn.', 'double',
              min_value=0.0, max_value=6.3),
    ParamSpec('hazard_types', [1, 2, 3, 4], 'HazardDetection types on hazard_detection that '
              'stop the robot: 0 BACKUP_LIMIT, 1 BUMP, 2 CLIFF, 3 STALL, 4 WHEEL_DROP, '
              '5 OBJECT_PROXIMITY.', 'int_array', min_value=0, max_value=5),
    ParamSpec('base_frame', 'base_link', 'frame_id grids must have; grids in another frame '
              'are ignored (and logged). Empty: accept any frame.', 'string', read_only=True),
    ParamSpec('max_linear', _DEFAULTS.max_linear, 'Top forward speed (m/s); the Create 3 '
              'caps at 0.306 with its safety on.', 'double', min_value=0.0, max_value=0.46),
    ParamSpec('min_linear', _DEFAULTS.min_linear, 'Forward speed at the stop distance '
              '(m/s, at most max_linear); it ramps up to max_linear at slow_distance.',
              'double', min_value=0.0, max_value=0.46),
    ParamSpec('max_angular', _DEFAULTS.max_angular, 'Top turn rate (rad/s).', 'double',
              min_value=0.0, max_value=3.0),
    ParamSpec('max_linear_accel', _DEFAULTS.max_linear_accel, 'Forward acceleration limit '
              '(m/s^2).', 'double', min_value=0.01, max_value=10.0),
    ParamSpec('max_linear_decel', _DEFAULTS.max_linear_decel, 'Braking limit when the path '
              'shortens (m/s^2); safety stops are immediate.', 'double', min_value=0.01,
              max_value=10.0),
    ParamSpec('max_angular_accel', _DEFAULTS.max_angular_accel, 'Turn-rate acceleration '
              'limit (rad/s^2).', 'double', min_value=0.01, max_value=20.0),
    ParamSpec('robot_radius', _DEFAULTS.robot_radius, 'Radius of the circular footprint '
              '(m); Create 3: 0.17.', 'double', min_value=0.05, max_value=1.0),
    ParamSpec('safety_margin', _DEFAULTS.safety_margin, 'Extra clearance kept around the '
              'footprint (m).', 'double', min_value=0.0, max_value=0.5),
    ParamSpec('stop_distance', _DEFAULTS.stop_distance, 'Stop and turn in place when the '
              'best path has less free travel than this (m).', 'double', min_value=0.0,
              max_value=2.0),
    ParamSpec('slow_distance', _DEFAULTS.slow_distance, 'Full speed with at least this much '
              'free travel; slower below (m).', 'double', min_value=0.05, max_value=5.0),
    ParamSpec('resume_distance', _DEFAULTS.resume_distance, 'After stopping, turn until a '
              'path has this much free travel (m).', 'double', min_value=0.0,
              max_value=5.0),
    ParamSpec('lookahead', _DEFAULTS.lookahead, 'Length of the candidate paths (m); keep it '
              'inside the grid and its max_range.', 'double', min_value=0.2,
              max_value=10.0),
    ParamSpec('blind_distance', _DEFAULTS.blind_distance, 'Unknown cells nearer than this '
              'to base_link that no grid has ever shown (under and beside the robot) do '
              'not block (m).', 'double', min_value=0.0, max_value=2.0),
    ParamSpec('rotate_speed', _DEFAULTS.rotate_speed, 'Turn rate in place when blocked '
              '(rad/s); at most max_angular.', 'double', min_value=0.05, max_value=3.0),
    ParamSpec('num_arcs', _DEFAULTS.num_arcs, 'Candidate paths (constant curvature) per '
              'step.', 'int', min_value=1, max_value=101),
    ParamSpec('max_curvature', _DEFAULTS.max_curvature, 'Largest path curvature (1/m).',
              'double', min_value=0.1, max_value=10.0),
    ParamSpec('occupied_threshold', _DEFAULTS.occupied_threshold, 'Grid values at or above '
              'this are occupied.', 'int', min_value=1, max_value=100),
    ParamSpec('memory_time', _DEFAULTS.memory_time, 'Remember obstacles this long (s) with '
              'odom, so they block after leaving the view; 0 disables.', 'double',
              min_value=0.0, max_value=300.0),
    ParamSpec('memory_range', _DEFAULTS.memory_range, 'Forget remembered obstacles farther '
              'than this from the robot (m).', 'double', min_value=0.5, max_value=20.0),
    ParamSpec('memory_free_hits', _DEFAULTS.memory_free_hits, 'Forget a remembered obstacle '
              'once this many grids showed its cell free; 0: only age and distance forget '
              '(safer against a model that misses obstacles seen from close by).', 'int',
              min_value=0, max_value=1000),
    ParamSpec('memory_free_min_range', _DEFAULTS.memory_free_min_range, 'With '
              'memory_free_hits: a grid that shows a remembered cell free counts only when the '
              'cell lies at least this far from the robot (m): a model most often takes an '
              'obstacle for floor when it fills the view from close by.', 'double',
              min_value=0.0, max_value=5.0),
    ParamSpec('memory_min_sightings', _DEFAULTS.memory_min_sightings, 'Draw a remembered '
              'obstacle into later grids only once this many grids showed its cell occupied '
              '(within memory_time); 1: from its first sighting. A real obstacle is seen again '
              'as the robot comes closer, a speck of one frame is not; the grid it is seen in '
              'blocks either way.', 'int', min_value=1, max_value=100),
    ParamSpec('recovery_after', _DEFAULTS.recovery_after, 'A dead end: after turning in place '
              'this long (s) without a path of resume_distance, back up along the path driven '
              '(backup_distance), then turn by recovery_turn. 0: no dead-end recovery (turn '
              'until a path opens).', 'double', min_value=0.0, max_value=120.0),
    ParamSpec('recovery_turn', _DEFAULTS.recovery_turn, 'After backing up out of a dead end, '
              'turn in place at least this much (rad) towards the side with more free cells, '
              'then on until a path opens.', 'double', min_value=0.0, max_value=6.3),
    ParamSpec('backup_distance', _DEFAULTS.backup_distance, 'How far a recovery (dead end, '
              'hazard) backs up (m). Only with odom, and only over the path the robot drove: '
              'never into floor behind it that it has not driven. 0: never back up.',
              'double', min_value=0.0, max_value=2.0),
    ParamSpec('backup_speed', _DEFAULTS.backup_speed, 'Reverse speed of a backup (m/s).',
              'double', min_value=0.01, max_value=0.3),
    ParamSpec('backup_tolerance', _DEFAULTS.backup_tolerance, 'A backup stops when the robot '
              'is farther than this (m) from the path it drove.', 'double', min_value=0.005,
              max_value=0.2),
    ParamSpec('recovery_timeout', _DEFAULTS.recovery_timeout, 'A backup (turning its back to '
              'the path driven, then reversing along it) ends after this long (s) at the '
              'latest.', 'double', min_value=1.0, max_value=60.0),
    ParamSpec('explore_weight', _DEFAULTS.explore_weight, 'Preference for paths over floor the '
              'footprint has not swept yet (odom memory). It only chooses among paths with at '
              'least as much room beside them as the best one, so it never trades clearance '
              'for coverage. 0: off.', 'double', min_value=0.0, max_value=2.0),
    ParamSpec('frontier_weight', _DEFAULTS.frontier_weight, 'Pull towards the nearest reachable '
              'floor not swept yet (frontier target, odom memory) once no path ahead leads '
              'over new floor: drivable paths score this much more per lookahead metres '
              'they get closer to it along the floor seen free. Only paths with free travel '
              'beyond stop_distance are ever chosen. 0: off (and no floor map).', 'double',
              min_value=0.0, max_value=5.0),
    ParamSpec('frontier_replan', _DEFAULTS.frontier_replan, 'Plan the frontier target (keep '
              'it or choose the next one) every this many seconds.', 'double',
              min_value=0.1, max_value=10.0),
    ParamSpec('frontier_timeout', _DEFAULTS.frontier_timeout, 'Give up a frontier target the '
              'robot got no 0.2 m closer to within this many seconds (skipped for 60 s; a '
              'dead end gives it up at once).', 'double', min_value=1.0, max_value=300.0),
    ParamSpec('frontier_map_size', _DEFAULTS.frontier_map_size, 'Side of the floor map of the '
              'frontier layer (m, 0.1 m cells, a window that follows the robot; what leaves it '
              'is forgotten; a change starts a new map). At least 4 x lookahead.', 'double',
              min_value=8.0, max_value=100.0),
    ParamSpec('tight_path_speed', _DEFAULTS.tight_path_speed, 'When no frontier target is '
              "reachable with room to spare, plan over the cells the robot's centre passed "
              'through (a gap it came in by) and follow such a path, or one planned with '
              'frontier_narrow_room, by pure pursuit where it is tight, with robot_radius + '
              '0.01 m of clearance, at most this fast (m/s; max_linear caps it). 0: off.',
              'double', min_value=0.0, max_value=0.46),
    ParamSpec('frontier_narrow_room', _DEFAULTS.frontier_narrow_room, 'When no frontier '
              'target is reachable over cells robot_radius + safety_margin + 0.15 m from '
              'every cell seen blocked (centre to centre, 0.1 m cells), plan again with this '
              'room (m) instead of 0.15 m: through gaps the arcs often miss. With '
              'tight_path_speed > 0 the robot follows such a path where it is narrow. 0.15: '
              'no second plan.', 'double', min_value=0.0, max_value=0.15),
)

_CONFIG_FIELDS = {f.name for f in fields(DriverConfig)}
#: ~/state while driving, by the plan's mode
_STATES = {'drive': 'driving', 'rotate': 'rotating', 'backup': 'backing up'}

#: e_stop publishers that latch (transient_local) and those that do not
_ANY_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)
#: the grid: newest only, and never a stale latched one (volatile); best effort matches any
_GRID_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                       durability=DurabilityPolicy.VOLATILE)


def config_from_params(values):
    """Build a :class:`DriverConfig` from parameter values; ValueError if inconsistent."""
    return DriverConfig(**{k: v for k, v in values.items() if k in _CONFIG_FIELDS})


class FreespaceDriver(Node):
    """Velocity commands from free-space grids, with stale-grid, hazard and e-stop stops."""

    def __init__(self, node_name='freespace_driver', **kwargs):
        super().__init__(node_name, **kwargs)
        self.params = declare_and_validate(self, DRIVER_PARAMS)
        p = self.params
        try:
            config = config_from_params(p)
        except ValueError as e:
            raise StartupError(f'invalid parameters: {e}') from e
        self.logic = DriverLogic(config)
        #: whether the node clock runs on /clock; checked at every reading (see _now)
        self._on_sim_time = self.get_clock().ros_time_is_active
        self._drive = p['drive']
        self._stale_timeout = p['stale_timeout']
        self._hazard_hold = p['hazard_hold_time']
        self._hazard_types = set(p['hazard_types'])
        on_parameter_changes(self, DRIVER_PARAMS, self._apply_parameters)

        #: counters for tests and the closed-loop summary (control_steps: timer ticks done)
        self.grids_received = 0
        self.grids_rejected = 0
        self.stale_stops = 0
        self.hazard_stops = 0
        self.commands_published = 0
        self.control_steps = 0
        self._grid_rx = None
        self._grid_stamp = None
        self._e_stop = False
        self._hazard_bool = False
        self._hazard_bool_time = None
        self._hazard_time = None
        self._stale = True
        self._hazard = False
        self._state = ''

        if p['use_stamped']:
            self._pub = self.create_publisher(TwistStamped, 'cmd_vel', 10)
        else:
            self._pub = self.create_publisher(Twist, 'cmd_vel', 10)
        self._pub_state = self.create_publisher(String, '~/state', LATCHED_QOS)
        self._grid_sub = self.create_subscription(OccupancyGrid, 'free_space/grid',
                                                  self._on_grid, _GRID_QOS)
        #: recent odometry: (stamp ns, x, y, yaw), and when the newest arrived
        self._odom = collections.deque(maxlen=ODOM_HISTORY)
        self._odom_rx = None
        self._grid_pose = None
        self._odom_sub = self.create_subscription(Odometry, 'odom', self._on_odom,
                                                  qos_profile_sensor_data)
        # A volatile e_stop publisher cannot match the latched subscription; that is expected
        # (the other one takes it), so it is not worth the default warning.
        quiet = SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible_e_stop)
        self._estop_subs = [
            self.create_subscription(Bool, 'e_stop', self._on_e_stop, LATCHED_QOS,
                                     event_callbacks=quiet),
            self.create_subscription(Bool, 'e_stop', self._on_e_stop, _ANY_QOS)]
        self._hazard_sub = self.create_subscription(Bool, 'hazard', self._on_hazard_bool,
                                                    _ANY_QOS)
        if HazardDetectionVector is not None:
            self._hazard_vec_sub = self.create_subscription(
                HazardDetectionVector, 'hazard_detection', self._on_hazard_vector,
                qos_profile_sensor_data)
            hazard_text = f'{self._hazard_sub.topic_name} and hazard_detection'
        else:
            self._hazard_vec_sub = None
            hazard_text = (f'{self._hazard_sub.topic_name} only (irobot_create_msgs not '
                           'importable)')
        self._period = 1.0 / p['control_rate']
        self._last_tick = None
        self._timer = self.create_timer(self._period, self._tick)
        self.get_logger().info(
            f'driving from {self._grid_sub.topic_name} to {self._pub.topic_name} '
            f'({"TwistStamped" if p["use_stamped"] else "Twist"}) at {p["control_rate"]:g} Hz, '
            f'max {config.max_linear:g} m/s, {config.max_angular:g} rad/s; hazards from '
            f'{hazard_text}; drive={self._drive}')

    # -- parameters ---------------------------------------------------------------------------
    def _apply_parameters(self, changes):
        merged = dict(self.params)
        merged.update(changes)
        try:
            config = config_from_params(merged)
        except ValueError as e:
            return str(e)
        self.params = merged
        self.logic.set_config(config)
        drive = merged['drive']
        if self._drive and not drive:
            self._publish(0.0, 0.0, force=True)
        self._drive = drive
        self._stale_timeout = merged['stale_timeout']
        self._hazard_hold = merged['hazard_hold_time']
        self._hazard_types = set(merged['hazard_types'])
        return None

    # -- inputs -------------------------------------------------------------------------------
    def _on_grid(self, msg):
        frame = self.params['base_frame']
        if frame and msg.header.frame_id != frame:
            self.grids_rejected += 1
            self.get_logger().warning(
                f'ignoring a grid in frame {msg.header.frame_id!r}: base_frame is {frame!r}',
                throttle_duration_sec=WARN_THROTTLE_S)
            return
        stamp = Time.from_msg(msg.header.stamp)
        pose = self._odom_pose_at(stamp.nanoseconds)
        try:
            grid, layout = grid_from_msg(msg)
            self.logic.set_grid(grid, layout, pose, stamp.nanoseconds * 1e-9)
        except ValueError as e:
            self.grids_rejected += 1
            self.get_logger().warning(f'ignoring a bad grid: {e}',
                                      throttle_duration_sec=WARN_THROTTLE_S)
            return
        self.grids_received += 1
        self._grid_rx = self._now()
        self._grid_stamp = stamp
        self._grid_pose = pose

    def _on_odom(self, msg):
        now = self._now()
        yaw = quaternion_yaw(msg.pose.pose.orientation)
        p = msg.pose.pose.position
        self._odom.append((Time.from_msg(msg.header.stamp).nanoseconds, p.x, p.y, yaw))
        self._odom_rx = now

    def _odom_pose_at(self, t_ns):
        """Return the odometry pose (x, y, yaw) nearest to ``t_ns``; None if none is close."""
        now = self._now()
        if not self._odom or now - self._odom_rx > self._stale_timeout:
            return None
        best = min(self._odom, key=lambda o: abs(o[0] - t_ns))
        if abs(best[0] - t_ns) > ODOM_MATCH_NS:
            return None
        return best[1:]

    def motion_since_grid(self):
        """
        Return how far the robot moved since the newest grid: (x, y, yaw) in its base frame.

        From the newest odometry against the odometry matched to the grid's stamp; None
        without odometry (none matched to the grid, or none for ``stale_timeout``).
        """
        now = self._now()
        if self._grid_pose is None or not self._odom or now - self._odom_rx > self._stale_timeout:
            return None
        x0, y0, th0 = self._grid_pose
        _, x, y, th = self._odom[-1]
        c, s = math.cos(th0), math.sin(th0)
        dx, dy = x - x0, y - y0
        return c * dx + s * dy, -s * dx + c * dy, th - th0

    def _on_e_stop(self, msg):
        if bool(msg.data) != self._e_stop:
            self._e_stop = bool(msg.data)
            if self._e_stop:
                self._stop_now()

    def _on_incompatible_e_stop(self, event):
        self.get_logger().debug('a volatile e_stop publisher: served by the best-effort '
                                'subscription')

    def _on_hazard_bool(self, msg):
        now = self._now()
        was = self._hazard_bool
        self._hazard_bool = bool(msg.data)
        if self._hazard_bool:
            self._hazard_bool_time = now
            self._stop_now()
        elif was:
            # The hold time runs from the moment the hazard cleared (not from every false: a
            # bumper may report its state at every step).
            self._hazard_bool_time = now

    def _on_hazard_vector(self, msg):
        now = self._now()
        if any(int(d.type) in self._hazard_types for d in msg.detections):
            self._hazard_time = now
            self._stop_now()

    # -- output -------------------------------------------------------------------------------
    def _stop_now(self):
        """React to an e-stop or a hazard without waiting for the next tick."""
        self.logic.stop()
        self._publish(0.0, 0.0)

    def _publish(self, v, w, force=False):
        if not (self._drive or force):
            return
        twist = Twist()
        twist.linear.x = float(v)
        twist.angular.z = float(w)
        if self.params['use_stamped']:
            msg = TwistStamped()
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.header.frame_id = self.params['base_frame'] or 'base_link'
            msg.twist = twist
        else:
            msg = twist
        self._pub.publish(msg)
        self.commands_published += 1

    def stop_reasons(self, now=None):
        """Return the list of reasons to stand still right now (empty: free to drive)."""
        now = self._now() if now is None else now
        reasons = []
        if self._e_stop:
            reasons.append('e_stop')
        hazard = self._hazard_bool or (
            self._hazard_bool_time is not None and now - self._hazard_bool_time
            <= self._hazard_hold) or (
            self._hazard_time is not None and now - self._hazard_time <= self._hazard_hold)
        if hazard:
            reasons.append('hazard')
        if self._grid_rx is None:
            reasons.append('no grid yet')
        elif now - self._grid_rx > self._stale_timeout:
            reasons.append('stale grid')
        return reasons

    def _now(self):
        """
        Seconds on the clock that every timeout of this node runs on.

        The steady clock (immune to wall-clock jumps), or, while the node clock runs on /clock
        (``use_sim_time``), the ROS clock, so that a simulation running slower or faster than
        real time times out in simulated seconds, as the control timer steps. The choice
        follows the node clock, which rclpy switches when use_sim_time is set at run time;
        the times kept on the other clock are then dropped, never compared across clocks.
        """
        clock = self.get_clock()
        on_sim_time = clock.ros_time_is_active
        now = clock.now().nanoseconds * 1e-9 if on_sim_time else time.monotonic()
        if on_sim_time != self._on_sim_time:
            self._on_sim_time = on_sim_time
            self._drop_times(now)
        return now

    def _drop_times(self, now):
        """After a clock switch: no grid (a stop until the next), no odometry, holds restart."""
        self._grid_rx = None
        self._odom.clear()
        self._odom_rx = None
        self._last_tick = None
        if self._hazard_bool_time is not None:
            self._hazard_bool_time = now
        if self._hazard_time is not None:
            self._hazard_time = now
        self.get_logger().info('use_sim_time changed: timeouts now run on the '
                               + ('ROS clock (/clock)' if self._on_sim_time else 'steady clock'))

    @property
    def newest_odom_stamp_ns(self):
        """Return the stamp (ns) of the newest odometry received, None before one."""
        return self._odom[-1][0] if self._odom else None

    @property
    def newest_grid_stamp_ns(self):
        """Return the stamp (ns) of the newest grid accepted, None before one."""
        return None if self._grid_stamp is None else self._grid_stamp.nanoseconds

    def _tick(self):
        now = self._now()
        dt = self._period if self._last_tick is None else min(now - self._last_tick, 0.5)
        self._last_tick = now
        reasons = self.stop_reasons(now)
        stale = 'stale grid' in reasons
        if stale and not self._stale:
            self.stale_stops += 1
        self._stale = stale or 'no grid yet' in reasons
        hazard = 'hazard' in reasons
        if hazard and not self._hazard:
            self.hazard_stops += 1
        if self._hazard and not hazard:
            self.logic.escape(self.params['hazard_turn'])
        self._hazard = hazard
        if reasons:
            v, w = self.logic.stop()
            state = 'stopped: ' + ', '.join(reasons)
        else:
            age = (self.get_clock().now() - self._grid_stamp).nanoseconds * 1e-9
            age = min(max(age, 0.0), self._stale_timeout)
            v, w = self.logic.step(dt, age, self.motion_since_grid())
            plan = self.logic.last_plan
            state = _STATES[plan.mode]
            if plan.reason:
                state += f' ({plan.reason})'
        if not self._drive:
            state += ' (drive is false)'
        self._set_state(state)
        self._publish(v, w)
        self.control_steps += 1

    def _set_state(self, state):
        if state == self._state:
            return
        was_moving = bool(self._state) and not self._state.startswith('stopped')
        self._state = state
        self._pub_state.publish(String(data=state))
        moving = not state.startswith('stopped')
        if moving != was_moving or not moving or state.startswith('backing up'):
            self.get_logger().info(f'state: {state}')
        else:
            self.get_logger().debug(f'state: {state}')

    @property
    def state(self):
        """Return what the driver does now (the text of ``~/state``)."""
        return self._state

    def destroy_node(self):
        """Publish a zero command (even with drive false), then destroy the node."""
        pub = getattr(self, '_pub', None)
        if pub is not None and self.context.ok():
            try:
                self.logic.stop()
                self._publish(0.0, 0.0, force=True)
                # The base must get this one: see FINAL_ZERO_LINGER_S.
                if not pub.wait_for_all_acked(Duration(seconds=FINAL_ZERO_LINGER_S)):
                    self.get_logger().debug(
                        'final zero command sent, not yet acknowledged by every cmd_vel '
                        f'subscriber after {FINAL_ZERO_LINGER_S} s')
            except Exception as e:  # noqa: B902 - shutting down; never mask the real exit
                self.get_logger().warning(f'could not send the final zero command: {e}')
        return super().destroy_node()


def main(args=None):
    """Run ``freespace_driver``; exit code 0 on SIGINT/SIGTERM, 2 on a startup error."""
    # spin_node destroys the node while the context still works, so the final zero command
    # of destroy_node() is published before rclpy shuts down.
    return spin_node(FreespaceDriver, args)


if __name__ == '__main__':
    raise SystemExit(main())
