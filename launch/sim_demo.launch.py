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
Closed-loop demo without a robot: sim_robot + segmentation_node + freespace_driver.

    ros2 launch freespace_seg sim_demo.launch.py seed:=3 rqt:=true

``sim_robot`` simulates a Create 3 with a forward camera in synthetic room ``seed`` and
publishes ``image``/``camera_info``; ``segmentation_node`` turns the images into
``free_space/grid``; ``freespace_driver`` drives the robot through the free floor
(``cmd_vel``) and stops on the sim's ``hazard`` (bumper). The sim logs its collisions and a
summary (distance, coverage) when it shuts down. The same graph runs in one process in
``python -m freespace_seg bench-closed-loop``.

Every argument is described (``ros2 launch freespace_seg sim_demo.launch.py -s``).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, GroupAction, IncludeLaunchDescription,
                            OpaqueFunction)
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue


def _rqt(context):
    namespace = context.launch_configurations['namespace'].strip('/')
    topic = '/' + '/'.join(p for p in (namespace, 'segmentation/overlay') if p)
    return [Node(package='rqt_image_view', executable='rqt_image_view',
                 name='freespace_overlay_view', output='screen', arguments=[topic])]


def generate_launch_description():
    share = get_package_share_directory('freespace_seg')
    namespace = LaunchConfiguration('namespace')

    args = [
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the simulated robot and its nodes.'),
        DeclareLaunchArgument('seed', default_value='0',
                              description='Seed of the synthetic room and the start pose.'),
        DeclareLaunchArgument('drive', default_value='true', choices=['true', 'false'],
                              description='true: the driver moves the simulated robot.'),
        DeclareLaunchArgument('rqt', default_value='false', choices=['true', 'false'],
                              description='Start rqt_image_view on segmentation/overlay.'),
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
        DeclareLaunchArgument('width', default_value='320',
                              description='Simulated camera width (pixels).'),
        DeclareLaunchArgument('height', default_value='180',
                              description='Simulated camera height (pixels).'),
        DeclareLaunchArgument('camera_rate', default_value='10.0',
                              description='Simulated camera frames per second.'),
        DeclareLaunchArgument('camera_noise', default_value='false',
                              choices=['true', 'false'],
                              description='Render camera effects (exposure, noise, blur, '
                                          'JPEG) instead of clean images.'),
    ]

    sim = Node(
        package='freespace_seg', executable='sim_robot', name='sim_robot', output='screen',
        parameters=[{
            'seed': ParameterValue(LaunchConfiguration('seed'), value_type=int),
            'width': ParameterValue(LaunchConfiguration('width'), value_type=int),
            'height': ParameterValue(LaunchConfiguration('height'), value_type=int),
            'camera_rate': ParameterValue(LaunchConfiguration('camera_rate'),
                                          value_type=float),
            'camera_noise': ParameterValue(LaunchConfiguration('camera_noise'),
                                           value_type=bool),
        }],
        remappings=[('/tf', 'tf')])
    # segmentation_node: freespace_seg.launch.py, included (it pushes the namespace itself;
    # its own group keeps the launch arguments the include sets out of this file's).
    segmentation = GroupAction([IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, 'launch', 'freespace_seg.launch.py')),
        launch_arguments={
            'namespace': namespace,
            'params_file': LaunchConfiguration('params_file'),
            'model_file_path': LaunchConfiguration('model_file_path'),
            'backend': LaunchConfiguration('backend'),
            'remap_tf': 'true',
        }.items())])

    driver = Node(
        package='freespace_seg', executable='freespace_driver', name='freespace_driver',
        output='screen',
        parameters=[{'drive': ParameterValue(LaunchConfiguration('drive'), value_type=bool)}])
    rqt = GroupAction([OpaqueFunction(function=_rqt)],
                      condition=IfCondition(LaunchConfiguration('rqt')))
    group = GroupAction([PushRosNamespace(namespace), sim, driver, rqt])
    return LaunchDescription(args + [group, segmentation])
