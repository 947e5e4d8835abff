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
Free-space driving on an iRobot Create 3 / TurtleBot 4: segmentation, driver, camera TF.

    ros2 launch freespace_seg create3_freespace.launch.py namespace:=/robot1 camera:=oakd
    ros2 launch freespace_seg create3_freespace.launch.py camera:=usb drive:=true rqt:=true

Starts, under the robot ``namespace``, ``segmentation_node`` (camera in, ``free_space/grid``
out; freespace_seg.launch.py, included), ``freespace_driver`` (grid in, ``cmd_vel`` out;
hazards from ``hazard_detection``) and, when needed, static TF publishers for the camera mount
(``base_frame`` -> camera frame -> optical frame). ``/tf`` and ``/tf_static`` are remapped to
``tf`` and ``tf_static`` so a namespaced robot's TF works. ``camera:=oakd`` is the TurtleBot
4's OAK-D (``oakd/rgb/preview/image_raw``, frame ``oakd_rgb_camera_optical_frame``),
``camera:=usb`` a usb_cam / v4l2_camera style driver (``image_raw``, ``camera_info``). The
robot only moves with ``drive:=true``; until then the driver plans and publishes nothing on
``cmd_vel``.

Every argument is described (``ros2 launch freespace_seg create3_freespace.launch.py -s``).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, GroupAction, IncludeLaunchDescription,
                            OpaqueFunction)
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace

#: topics and frames of the supported cameras, relative to the robot namespace
CAMERAS = {
    'oakd': {'image': 'oakd/rgb/preview/image_raw',
             'camera_info': 'oakd/rgb/preview/camera_info',
             'optical_frame': 'oakd_rgb_camera_optical_frame',
             'camera_frame': 'oakd_rgb_camera_frame',
             'has_tf': True},
    'usb': {'image': 'image_raw', 'camera_info': 'camera_info',
            'optical_frame': 'camera_optical_frame', 'camera_frame': 'camera_link',
            'has_tf': False},
}
TF_REMAPS = [('/tf', 'tf'), ('/tf_static', 'tf_static')]
MOUNT = ('camera_x', 'camera_y', 'camera_z', 'camera_roll', 'camera_pitch', 'camera_yaw')
#: the mount arguments as segmentation_node's parameters (camera_z is its camera_height)
MOUNT_PARAMS = {'camera_x': 'camera_x', 'camera_y': 'camera_y', 'camera_z': 'camera_height',
                'camera_roll': 'camera_roll', 'camera_pitch': 'camera_pitch',
                'camera_yaw': 'camera_yaw'}


def _arg(context, name):
    return context.launch_configurations[name]


def _flag(context, name):
    return _arg(context, name).lower() == 'true'


def _number(context, name):
    text = _arg(context, name)
    try:
        return float(text)
    except ValueError:
        raise RuntimeError(f'launch argument {name} must be a number, got {text!r}')


def _segmentation(context):
    """segmentation_node: freespace_seg.launch.py, included with this robot's arguments."""
    cam = CAMERAS[_arg(context, 'camera')]
    share = get_package_share_directory('freespace_seg')
    values = {
        'namespace': _arg(context, 'namespace'),
        'params_file': _arg(context, 'params_file'),
        'image_topic': cam['image'], 'camera_info_topic': cam['camera_info'],
        'model_file_path': _arg(context, 'model_file_path'),
        'backend': _arg(context, 'backend'),
        'base_frame': _arg(context, 'base_frame'),
        'use_tf': 'true' if _flag(context, 'use_tf') else 'false',
        'remap_tf': 'true',
    }
    values.update({param: str(_number(context, name)) for name, param in MOUNT_PARAMS.items()})
    return [IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, 'launch', 'freespace_seg.launch.py')),
        launch_arguments=values.items())]


def _nodes(context):
    cam = CAMERAS[_arg(context, 'camera')]
    namespace = _arg(context, 'namespace')
    base_frame = _arg(context, 'base_frame')
    mount = {name: _number(context, name) for name in MOUNT}
    publish_tf = _arg(context, 'publish_camera_tf')
    if publish_tf == 'auto':
        publish_tf = 'false' if cam['has_tf'] else 'true'

    nodes = [
        Node(package='freespace_seg', executable='freespace_driver', name='freespace_driver',
             output='screen',
             parameters=[{'drive': _flag(context, 'drive'),
                          'use_stamped': _flag(context, 'use_stamped'),
                          'max_linear': _number(context, 'max_linear'),
                          'base_frame': base_frame}]),
    ]
    if publish_tf == 'true':
        # base_frame -> camera frame (the mount), camera frame -> optical frame (REP 103).
        nodes.append(Node(
            package='tf2_ros', executable='static_transform_publisher',
            name='camera_mount_tf', output='screen', remappings=TF_REMAPS,
            arguments=['--x', str(mount['camera_x']), '--y', str(mount['camera_y']),
                       '--z', str(mount['camera_z']), '--roll', str(mount['camera_roll']),
                       '--pitch', str(mount['camera_pitch']),
                       '--yaw', str(mount['camera_yaw']),
                       '--frame-id', base_frame, '--child-frame-id', cam['camera_frame']]))
        nodes.append(Node(
            package='tf2_ros', executable='static_transform_publisher',
            name='camera_optical_tf', output='screen', remappings=TF_REMAPS,
            arguments=['--roll', '-1.5707963267948966', '--yaw', '-1.5707963267948966',
                       '--frame-id', cam['camera_frame'],
                       '--child-frame-id', cam['optical_frame']]))
    if _flag(context, 'rqt'):
        overlay = '/'.join(p for p in (namespace.strip('/'), 'segmentation/overlay') if p)
        nodes.append(Node(package='rqt_image_view', executable='rqt_image_view',
                          name='freespace_overlay_view', output='screen',
                          arguments=['/' + overlay]))
    return nodes


def generate_launch_description():
    share = get_package_share_directory('freespace_seg')
    args = [
        DeclareLaunchArgument('namespace', default_value='',
                              description='Robot namespace (as set on the Create 3 / '
                                          'TurtleBot 4), e.g. /robot1; empty for none.'),
        DeclareLaunchArgument('camera', default_value='oakd', choices=['oakd', 'usb'],
                              description='oakd: TurtleBot 4 OAK-D '
                                          '(oakd/rgb/preview/image_raw, frame '
                                          'oakd_rgb_camera_optical_frame); usb: image_raw '
                                          'and camera_info, frame camera_optical_frame.'),
        DeclareLaunchArgument('drive', default_value='false', choices=['true', 'false'],
                              description='true: the driver publishes cmd_vel and the '
                                          'robot moves; false: it only plans.'),
        DeclareLaunchArgument('rqt', default_value='false', choices=['true', 'false'],
                              description='Start rqt_image_view on segmentation/overlay.'),
        DeclareLaunchArgument('use_stamped', default_value='false',
                              choices=['true', 'false'],
                              description='cmd_vel as geometry_msgs/TwistStamped instead of '
                                          'Twist (Create 3 firmware takes Twist).'),
        DeclareLaunchArgument('max_linear', default_value='0.3',
                              description='Top speed of the driver in m/s (the Create 3 '
                                          'caps at 0.306 with its safety on).'),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'freespace_seg.yaml'),
                              description='ros__parameters YAML file of segmentation_node.'),
        DeclareLaunchArgument('model_file_path', default_value='',
                              description='ONNX model with its YAML card beside it; empty '
                                          'uses params_file (the packaged model by '
                                          'default).'),
        DeclareLaunchArgument('backend', default_value='auto',
                              choices=['auto', 'tensorrt', 'onnxruntime_gpu', 'onnxruntime',
                                       'triton'],
                              description='Inference backend of segmentation_node.'),
        DeclareLaunchArgument('base_frame', default_value='base_link',
                              description='Robot base frame of the grid, the driver and the '
                                          'camera TF.'),
        DeclareLaunchArgument('use_tf', default_value='false', choices=['true', 'false'],
                              description='segmentation_node looks the camera pose up in TF '
                                          '(e.g. from the TurtleBot 4 URDF) instead of using '
                                          'the camera_* arguments.'),
        DeclareLaunchArgument('publish_camera_tf', default_value='auto',
                              choices=['auto', 'true', 'false'],
                              description='Publish static TF for the camera mount from the '
                                          'camera_* arguments. auto: not for oakd (the '
                                          'TurtleBot 4 description has it), yes for usb.'),
        DeclareLaunchArgument('camera_x', default_value='0.0',
                              description='Camera optical centre, x in base_frame (m).'),
        DeclareLaunchArgument('camera_y', default_value='0.0',
                              description='Camera optical centre, y in base_frame (m).'),
        DeclareLaunchArgument('camera_z', default_value='0.25',
                              description='Camera optical centre above the floor (m).'),
        DeclareLaunchArgument('camera_roll', default_value='0.0',
                              description='Camera roll (rad).'),
        DeclareLaunchArgument('camera_pitch', default_value='0.3',
                              description='Camera pitch (rad), positive looks down.'),
        DeclareLaunchArgument('camera_yaw', default_value='0.0',
                              description='Camera yaw (rad), positive looks left.'),
    ]
    group = GroupAction([PushRosNamespace(LaunchConfiguration('namespace')),
                         OpaqueFunction(function=_nodes)])
    # Beside the group: freespace_seg.launch.py pushes the namespace itself. Its own group
    # keeps the launch arguments the include sets out of this file's.
    segmentation = GroupAction([OpaqueFunction(function=_segmentation)])
    return LaunchDescription(args + [group, segmentation])
