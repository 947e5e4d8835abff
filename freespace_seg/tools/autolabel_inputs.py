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
What ``autolabel`` needs from a rosbag2 besides the images: poses, camera, mount, bumps.

Read with ``rosbags`` (no ROS): the robot's path from nav_msgs/Odometry or, without it, from
the ``odom`` -> ``base_link`` transforms of tf2_msgs/TFMessage; the CameraInfo messages; the
camera mount from the static transforms (``/tf_static``) base_link -> the image's frame when
the chain is there; the bumps from irobot_create_msgs/HazardDetectionVector (its type is
taken from the bag's own message definition, as ``ros2 bag record`` stores it; only
detections of type BUMP, the bearing from the bumper zone in ``header.frame_id``) or from a
std_msgs/Bool topic (each False -> True edge, at its bag time: Bool has no stamp).

The path is cut into :class:`Segment` s wherever it cannot be trusted to continue: a stamp
that goes back (a clock jump), a gap longer than ``max_gap`` s, or a jump faster than
``max_speed`` m/s (a teleport: odometry reset, relocalisation). A frame is labelled only from
the segment it falls in.
"""

from dataclasses import dataclass, field
import math

from freespace_seg.ground.autolabel import Trajectory
from freespace_seg.ground.geometry import CameraMount, quaternion_yaw, transform_matrix
import numpy as np

ODOM_TYPE = 'nav_msgs/msg/Odometry'
TF_TYPE = 'tf2_msgs/msg/TFMessage'
HAZARD_TYPE = 'irobot_create_msgs/msg/HazardDetectionVector'
BOOL_TYPE = 'std_msgs/msg/Bool'
#: HazardDetection.type of a bump
BUMP = 1
#: Create 3 bumper zones (HazardDetection header.frame_id) -> bearing from the heading (deg)
BUMP_ZONES = {'bump_left': 70.0, 'bump_front_left': 35.0, 'bump_front_center': 0.0,
              'bump_front_right': -35.0, 'bump_right': -70.0}
#: columns of the camera body frame (x forward, y left, z up) in the optical frame's axes
_OPTICAL_FROM_BODY = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])


class InputError(Exception):
    """The bag lacks something that labels need; the message says what (one line)."""


def stamp_s(header):
    return header.stamp.sec + header.stamp.nanosec * 1e-9


@dataclass
class Segment:
    """A stretch of trustworthy path: a :class:`Trajectory` and its time span."""

    track: Trajectory

    @property
    def start(self):
        return float(self.track.times[0])

    @property
    def end(self):
        return float(self.track.times[-1])


@dataclass
class Inputs:
    """Everything but the images: see the module."""

    segments: list = field(default_factory=list)
    pose_source: str = ''
    infos: list = field(default_factory=list)
    hazards: list = field(default_factory=list)
    hazard_source: str = ''
    static_tf: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def segment_at(self, t):
        """Return (segment, why): the one segment spanning ``t``, else None and the reason."""
        found = [s for s in self.segments if s.start <= t <= s.end]
        if len(found) == 1:
            return found[0], ''
        return None, ('clock jump (two stretches of path at this time)' if found
                      else 'no odometry/TF at the frame time')

    def info_at(self, t):
        """Return the CameraInfo stamped at or just before ``t`` (or the first one)."""
        best = self.infos[0][1] if self.infos else None
        for stamp, msg in self.infos:
            if stamp > t + 1e-6:
                break
            best = msg
        return best


def split_path(samples, max_gap=0.5, max_speed=2.0):
    """
    Cut ``samples`` [(t, x, y, yaw)] (bag order) into segments; return (segments, counts).

    ``counts`` says how often each cut happened: 'clock jump', 'gap', 'teleport'.
    """
    counts = {'clock jump': 0, 'gap': 0, 'teleport': 0}
    pieces, cur = [], []
    for s in samples:
        if cur:
            dt = s[0] - cur[-1][0]
            if dt < 0.0:
                counts['clock jump'] += 1
            elif dt > max_gap:
                counts['gap'] += 1
            elif math.hypot(s[1] - cur[-1][1], s[2] - cur[-1][2]) > max_speed * max(dt, 0.02):
                counts['teleport'] += 1
            else:
                cur.append(s)
                continue
            pieces.append(cur)
            cur = []
        cur.append(s)
    if cur:
        pieces.append(cur)
    segs = []
    for p in pieces:
        if len(p) < 2:
            continue
        a = np.asarray(p, dtype=np.float64)
        segs.append(Segment(Trajectory(a[:, 0], a[:, 1:], max_gap=max_gap)))
    return segs, counts


def register_bag_types(reader, store, msgtype):
    """Teach ``store`` ``msgtype`` from the bag's own definition; return False if it has none."""
    from rosbags.typesys import get_types_from_msg

    if msgtype in store.types:
        return True
    for c in reader.connections:
        if c.msgtype == msgtype and c.msgdef is not None and c.msgdef.data:
            try:
                store.register(get_types_from_msg(c.msgdef.data, msgtype))
            except Exception:  # noqa: B902 - a definition rosbags cannot parse: no bumps
                return False
            return True
    return False


def mount_from_matrix(t):
    """Return the CameraMount of a 4x4 base_link <- optical frame transform."""
    r = t[:3, :3] @ _OPTICAL_FROM_BODY
    pitch = -math.asin(max(-1.0, min(1.0, r[2, 0])))
    roll = math.atan2(r[2, 1], r[2, 2])
    yaw = math.atan2(r[1, 0], r[0, 0])
    return CameraMount(x=float(t[0, 3]), y=float(t[1, 3]), z=float(t[2, 3]), roll=roll,
                       pitch=pitch, yaw=yaw)


def mount_from_tf(static_tf, base_frame, camera_frame):
    """Return the CameraMount from the static chain base_frame -> camera_frame, or None."""
    t = np.eye(4)
    frame = camera_frame.lstrip('/')
    for _ in range(32):
        if frame == base_frame:
            return mount_from_matrix(t)
        if frame not in static_tf:
            return None
        parent, m = static_tf[frame]
        t = m @ t
        frame = parent
    return None


def choose(topics, wanted, types, what):
    """Return ``wanted`` if the bag has it with one of ``types``; else the only such topic."""
    if wanted and topics.get(wanted) in types:
        return wanted
    have = sorted(t for t, ty in topics.items() if ty in types)
    if wanted and wanted in topics:
        raise InputError(f'{wanted} is {topics[wanted]}, not {what}')
    return have[0] if len(have) == 1 else ''


def read_inputs(reader, store, args, topics):
    """Read the non-image topics of the bag (one pass); return :class:`Inputs`."""
    inputs = Inputs()
    odom = choose(topics, args.odom_topic, (ODOM_TYPE,), 'nav_msgs/Odometry')
    tf_topics = [t for t in (args.tf_topic, args.tf_static_topic) if topics.get(t) == TF_TYPE]
    hazard = args.hazard_topic if args.hazard_topic in topics else ''
    if not hazard:
        hazard = choose(topics, '', (HAZARD_TYPE,), 'a hazard topic')
    hazard_type = topics.get(hazard, '')
    if hazard and hazard_type not in (HAZARD_TYPE, BOOL_TYPE):
        raise InputError(f'{hazard} is {hazard_type}, not {HAZARD_TYPE} or std_msgs/Bool')
    if hazard_type == HAZARD_TYPE and not register_bag_types(reader, store, HAZARD_TYPE):
        inputs.notes.append(f'{hazard}: the bag has no usable definition of {HAZARD_TYPE}; '
                            'no bump labels')
        hazard = ''
    info = args.camera_info_topic
    wanted = [t for t in (odom, info, hazard, *tf_topics) if t]
    conns = [c for c in reader.connections if c.topic in wanted]
    odom_samples, tf_samples = [], []
    last_bool = False
    for conn, bag_ns, raw in reader.messages(connections=conns):
        msg = store.deserialize_cdr(raw, conn.msgtype)
        if conn.topic == odom:
            p = msg.pose.pose
            odom_samples.append((stamp_s(msg.header), p.position.x, p.position.y,
                                 quaternion_yaw(p.orientation)))
        elif conn.topic == info:
            inputs.infos.append((stamp_s(msg.header), msg))
        elif conn.topic == hazard and hazard_type == BOOL_TYPE:
            if msg.data and not last_bool:
                inputs.hazards.append((bag_ns * 1e-9, None, math.radians(args.hazard_angle)))
            last_bool = bool(msg.data)
        elif conn.topic == hazard:
            zones = [d.header.frame_id for d in msg.detections if d.type == BUMP]
            if zones:
                bearings = [BUMP_ZONES.get(z.split('/')[-1]) for z in zones]
                known = [b for b in bearings if b is not None]
                bearing = math.radians(float(np.mean(known))) if known else None
                half = math.radians(args.hazard_zone_angle if known else args.hazard_angle)
                inputs.hazards.append((stamp_s(msg.header), bearing, half))
        else:
            for ts in msg.transforms:
                parent, child = ts.header.frame_id.lstrip('/'), ts.child_frame_id.lstrip('/')
                tr, q = ts.transform.translation, ts.transform.rotation
                if conn.topic == args.tf_static_topic:
                    inputs.static_tf[child] = (parent, transform_matrix(
                        (tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w)))
                elif parent == args.odom_frame and child == args.base_frame:
                    tf_samples.append((stamp_s(ts.header), tr.x, tr.y, quaternion_yaw(q)))
    inputs.infos.sort(key=lambda p: p[0])
    samples = odom_samples or tf_samples
    inputs.pose_source = (f'{odom} (nav_msgs/Odometry)' if odom_samples else
                          f'{args.tf_topic} ({args.odom_frame} -> {args.base_frame})'
                          if tf_samples else '')
    if not samples:
        raise InputError(
            f'no odometry and no TF in the bag: no nav_msgs/Odometry on {args.odom_topic} '
            f'(or any other topic) and no {args.odom_frame} -> {args.base_frame} transform on '
            f'{args.tf_topic}; labels need to know where the robot drove')
    inputs.segments, cuts = split_path(samples, args.max_gap, args.max_speed)
    for why, n in cuts.items():
        if n:
            inputs.notes.append(f'path cut {n} time(s) at a {why}; frames are labelled from '
                                'their own stretch only')
    if hazard:
        inputs.hazard_source = f'{hazard} ({hazard_type})'
    return inputs


def hazard_events(inputs):
    """Return the bumps as (t, (x, y, yaw), bearing, half angle) where a pose is known."""
    out = []
    for t, bearing, half in inputs.hazards:
        seg, _ = inputs.segment_at(t)
        pose = seg.track.pose_at(t) if seg is not None else None
        if pose is not None:
            out.append((t, pose, bearing, half))
    return out
