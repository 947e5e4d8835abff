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
A simulated drive written as the rosbag2 that a Create 3 / TurtleBot 4 records.

:func:`write_drive_bag` writes an MCAP rosbag2 with the robot's topics: the camera image and
its CameraInfo, ``/odom`` (or the ``odom`` -> ``base_link`` transform on ``/tf``), the camera
mount on ``/tf_static`` and the bumps on ``/hazard_detection``
(irobot_create_msgs/HazardDetectionVector, its definition stored in the bag) or a
std_msgs/Bool topic. ``autolabel`` reads it as it reads a bag from the robot. Options make the
bad inputs that ``autolabel`` must survive: a clock jump, a teleport, no CameraInfo, no
static TF.
"""

import math

from freespace_seg.tools.autolabel_inputs import BUMP_ZONES
import numpy as np

#: irobot_create_msgs definitions (the fields autolabel reads), stored in the bag
HAZARD_MSGS = {
    'irobot_create_msgs/msg/HazardDetection':
        'uint8 BACKUP_LIMIT=0\nuint8 BUMP=1\nstd_msgs/Header header\nuint8 type\n',
    'irobot_create_msgs/msg/HazardDetectionVector':
        'std_msgs/Header header\nirobot_create_msgs/HazardDetection[] detections\n',
}

#: TurtleBot 4's camera topics
IMAGE_TOPIC = '/oakd/rgb/preview/image_raw'
INFO_TOPIC = '/oakd/rgb/preview/camera_info'


def quaternion(r):
    """Return (x, y, z, w) of the 3x3 rotation matrix ``r``."""
    w = math.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2.0
    x = math.copysign(math.sqrt(max(0.0, 1.0 + r[0, 0] - r[1, 1] - r[2, 2])) / 2.0,
                      r[2, 1] - r[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1.0 - r[0, 0] + r[1, 1] - r[2, 2])) / 2.0,
                      r[0, 2] - r[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1.0 - r[0, 0] - r[1, 1] + r[2, 2])) / 2.0,
                      r[1, 0] - r[0, 1])
    return x, y, z, w


def write_drive_bag(path, drive, intrinsics, mount, image_at, frame_every=0.5,
                    pose_via='odom', info=True, hazard='vector', static_tf=True,
                    clock_jump=False, teleport=False, base=100.0, image_topic=IMAGE_TOPIC,
                    info_topic=INFO_TOPIC, camera_frame='oakd_rgb_camera_optical_frame'):
    """
    Write ``drive`` (a :class:`freespace_seg.sim.wander.Drive`) as an MCAP rosbag2 at ``path``.

    ``image_at(t, pose)`` returns the (H, W, 3) uint8 RGB image at drive time ``t`` (s) and
    robot pose (x, y, yaw); images are written every ``frame_every`` s, stamped ``base + t``.
    ``pose_via``: ``odom`` (nav_msgs/Odometry on /odom), ``tf`` (/tf) or ``none``.
    ``hazard``: ``vector`` (HazardDetectionVector with the bumper zone nearest the contact
    bearing), ``bool`` (std_msgs/Bool on /hazard) or ``none``. ``clock_jump`` moves the stamps
    of the second half back 3 s; ``teleport`` moves its poses 5 m. Returns the list of image
    times (drive time, s) in the order written: the label file ``<bag>_<k>`` is image ``k``.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_types_from_msg, get_typestore, Stores

    store = get_typestore(Stores.ROS2_KILTED)
    if hazard == 'vector':
        for name, text in HAZARD_MSGS.items():
            store.register(get_types_from_msg(text, name))
    t = store.types

    def header(sec, frame):
        return t['std_msgs/msg/Header'](
            stamp=t['builtin_interfaces/msg/Time'](sec=int(sec), nanosec=int(sec % 1 * 1e9)),
            frame_id=frame)

    def vector(xyz):
        return t['geometry_msgs/msg/Vector3'](x=float(xyz[0]), y=float(xyz[1]),
                                              z=float(xyz[2]))

    def quat(q):
        return t['geometry_msgs/msg/Quaternion'](x=q[0], y=q[1], z=q[2], w=q[3])

    def tfs(sec, parent, child, xyz, q):
        return t['geometry_msgs/msg/TransformStamped'](
            header=header(sec, parent), child_frame_id=child,
            transform=t['geometry_msgs/msg/Transform'](translation=vector(xyz),
                                                       rotation=quat(q)))

    jump = drive.path[-1, 0] / 2.0

    def stamp(tt):
        return base + tt - (3.0 if clock_jump and tt > jump else 0.0)

    # (sec, order, topic, msgtype, make): made lazily, written in time order
    events = []
    for k, (tt, x, y, yaw) in enumerate(drive.path[::2]):
        if teleport and tt > jump:
            x += 5.0
        q = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
        sec = stamp(tt)
        if pose_via == 'odom':
            def odom(sec=sec, x=x, y=y, q=q):
                zero = vector((0.0, 0.0, 0.0))
                pose = t['geometry_msgs/msg/Pose'](
                    position=t['geometry_msgs/msg/Point'](x=float(x), y=float(y), z=0.0),
                    orientation=quat(q))
                return t['nav_msgs/msg/Odometry'](
                    header=header(sec, 'odom'), child_frame_id='base_link',
                    pose=t['geometry_msgs/msg/PoseWithCovariance'](pose=pose,
                                                                   covariance=np.zeros(36)),
                    twist=t['geometry_msgs/msg/TwistWithCovariance'](
                        twist=t['geometry_msgs/msg/Twist'](linear=zero, angular=zero),
                        covariance=np.zeros(36)))
            events.append((sec, 1, '/odom', 'nav_msgs/msg/Odometry', odom))
        elif pose_via == 'tf':
            events.append((sec, 1, '/tf', 'tf2_msgs/msg/TFMessage',
                           lambda sec=sec, x=x, y=y, q=q: t['tf2_msgs/msg/TFMessage'](
                               transforms=[tfs(sec, 'odom', 'base_link', (x, y, 0.0), q)])))
    if static_tf:
        m = mount.transform_base_from_optical()
        events.append((base - 0.5, 0, '/tf_static', 'tf2_msgs/msg/TFMessage',
                       lambda: t['tf2_msgs/msg/TFMessage'](transforms=[
                           tfs(base, 'base_link', 'oakd_link', m[:3, 3], (0.0, 0.0, 0.0, 1.0)),
                           tfs(base, 'oakd_link', camera_frame, (0.0, 0.0, 0.0),
                               quaternion(m[:3, :3]))])))
    for tt, _pose, bearing in drive.hazards:
        if hazard == 'vector':
            zone = min(BUMP_ZONES, key=lambda z: abs(BUMP_ZONES[z] - math.degrees(bearing)))

            def bump(tt=tt, zone=zone):
                det = t['irobot_create_msgs/msg/HazardDetection'](
                    header=header(base + tt, zone), type=1)
                return t['irobot_create_msgs/msg/HazardDetectionVector'](
                    header=header(base + tt, 'base_link'), detections=[det])
            events.append((base + tt, 2, '/hazard_detection',
                           'irobot_create_msgs/msg/HazardDetectionVector', bump))
        elif hazard == 'bool':
            for dt, val in ((0.0, True), (0.3, False)):
                events.append((base + tt + dt, 2, '/hazard', 'std_msgs/msg/Bool',
                               lambda val=val: t['std_msgs/msg/Bool'](data=val)))
    times = [float(tt) for tt in np.arange(0.0, drive.path[-1, 0], frame_every)]
    k = intrinsics.k.reshape(-1)
    p = np.hstack([intrinsics.k, np.zeros((3, 1))]).reshape(-1)
    h, w = intrinsics.height, intrinsics.width
    for tt in times:
        sec = stamp(tt)

        def image(sec=sec, tt=tt):
            rgb = np.ascontiguousarray(image_at(tt, drive.pose_at(tt)), dtype=np.uint8)
            return t['sensor_msgs/msg/Image'](
                header=header(sec, camera_frame), height=rgb.shape[0], width=rgb.shape[1],
                encoding='rgb8', is_bigendian=0, step=rgb.shape[1] * 3, data=rgb.reshape(-1))
        events.append((sec, 3, image_topic, 'sensor_msgs/msg/Image', image))
        if info:
            def camera_info(sec=sec):
                roi = t['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0,
                                                            width=0, do_rectify=False)
                return t['sensor_msgs/msg/CameraInfo'](
                    header=header(sec, camera_frame), height=h, width=w,
                    distortion_model='plumb_bob', d=np.zeros(5), k=k, r=np.eye(3).reshape(-1),
                    p=p, binning_x=0, binning_y=0, roi=roi)
            events.append((sec, 4, info_topic, 'sensor_msgs/msg/CameraInfo', camera_info))
    if not clock_jump:
        events.sort(key=lambda e: (e[0], e[1]))
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {}
        for i, (sec, _, topic, msgtype, make) in enumerate(events):
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=store)
            # bag time in message order with a clock jump: the jump is in the stamps only
            when = int(1e9 * (base + i * 1e-4)) if clock_jump else int(sec * 1e9)
            writer.write(conns[topic], when, store.serialize_cdr(make(), msgtype))
    return times
