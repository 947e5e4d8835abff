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
Launch segmentation_node alone; the robot launch files include this one.

    ros2 launch freespace_seg freespace_seg.launch.py image_topic:=/oakd/rgb/preview/image_raw

Every argument is described (``ros2 launch freespace_seg freespace_seg.launch.py -s``).
Defaults live in config/freespace_seg.yaml; arguments given here override that file. The
arguments of ``OPTIONAL_PARAMS`` are empty by default, which keeps the file's value:
create3_freespace.launch.py and sim_demo.launch.py set them through
``IncludeLaunchDescription(..., launch_arguments=...)`` instead of declaring the node again.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace

#: node parameters a launch argument may set, with their type; an empty argument (the
#: default) keeps the value of params_file
OPTIONAL_PARAMS = {
    'model_file_path': str, 'base_frame': str, 'use_tf': bool,
    'camera_x': float, 'camera_y': float, 'camera_height': float,
    'camera_roll': float, 'camera_pitch': float, 'camera_yaw': float,
}
#: what remap_tf:=true remaps: a namespaced robot's TF
TF_REMAPS = [('/tf', 'tf'), ('/tf_static', 'tf_static')]


def _value(name, text):
    kind = OPTIONAL_PARAMS[name]
    if kind is bool:
        return text.lower() == 'true'
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise RuntimeError(f'launch argument {name} must be a number, got {text!r}')
    return text


def _node(context):
    arg = context.launch_configurations
    image_topic = arg['image_topic']
    overrides = {
        'backend': arg['backend'],
        'image_transport': arg['image_transport'],
        'use_sim_time': arg['use_sim_time'].lower() == 'true',
    }
    overrides.update({name: _value(name, arg[name]) for name in OPTIONAL_PARAMS if arg[name]})
    remappings = [('image', image_topic), ('image/compressed', image_topic + '/compressed'),
                  ('camera_info', arg['camera_info_topic'])]
    if arg['remap_tf'].lower() == 'true':
        remappings += TF_REMAPS
    return [Node(
        package='freespace_seg', executable='segmentation_node',
        name='freespace_segmentation', output='screen',
        parameters=[arg['params_file'], overrides], remappings=remappings,
        arguments=['--ros-args', '--log-level', arg['log_level']])]


def generate_launch_description():
    share = get_package_share_directory('freespace_seg')
    args = [
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the node and its topics (e.g. the '
                                          'robot namespace).'),
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'freespace_seg.yaml'),
                              description='ros__parameters YAML file for the node.'),
        DeclareLaunchArgument('image_topic', default_value='image',
                              description='Camera image topic the node subscribes to '
                                          '(remapped onto its "image" input).'),
        DeclareLaunchArgument('camera_info_topic', default_value='camera_info',
                              description='CameraInfo topic matching image_topic.'),
        DeclareLaunchArgument('model_file_path', default_value='',
                              description='ONNX model with its YAML card beside it; empty '
                                          'uses the value in params_file (the packaged '
                                          'model by default).'),
        DeclareLaunchArgument('backend', default_value='auto',
                              choices=['auto', 'tensorrt', 'onnxruntime_gpu', 'onnxruntime',
                                       'triton'],
                              description='Inference backend.'),
        DeclareLaunchArgument('image_transport', default_value='raw',
                              choices=['raw', 'compressed'],
                              description='raw: subscribe image_topic; compressed: '
                                          'image_topic + "/compressed".'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              choices=['true', 'false'],
                              description='Use /clock (simulation) time.'),
        DeclareLaunchArgument('log_level', default_value='info',
                              choices=['debug', 'info', 'warn', 'error', 'fatal'],
                              description='Logging level of the node.'),
        DeclareLaunchArgument('base_frame', default_value='',
                              description='Robot base frame of the grid; empty uses '
                                          'params_file.'),
        DeclareLaunchArgument('use_tf', default_value='', choices=['', 'true', 'false'],
                              description='Look the camera pose up in TF instead of the '
                                          'camera_* parameters; empty uses params_file.'),
        DeclareLaunchArgument('camera_x', default_value='',
                              description='Camera optical centre, x in base_frame (m); '
                                          'empty uses params_file.'),
        DeclareLaunchArgument('camera_y', default_value='',
                              description='Camera optical centre, y in base_frame (m); '
                                          'empty uses params_file.'),
        DeclareLaunchArgument('camera_height', default_value='',
                              description='Camera optical centre above the floor (m); '
                                          'empty uses params_file.'),
        DeclareLaunchArgument('camera_roll', default_value='',
                              description='Camera roll (rad); empty uses params_file.'),
        DeclareLaunchArgument('camera_pitch', default_value='',
                              description='Camera pitch (rad), positive looks down; empty '
                                          'uses params_file.'),
        DeclareLaunchArgument('camera_yaw', default_value='',
                              description='Camera yaw (rad), positive looks left; empty '
                                          'uses params_file.'),
        DeclareLaunchArgument('remap_tf', default_value='false', choices=['true', 'false'],
                              description='Remap /tf and /tf_static to tf and tf_static, '
                                          "for a namespaced robot's TF."),
    ]
    group = GroupAction([PushRosNamespace(LaunchConfiguration('namespace')),
                         OpaqueFunction(function=_node)])
    return LaunchDescription(args + [group])
