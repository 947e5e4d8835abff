"""
Launch segmentation_node alone.

    ros2 launch freespace_seg freespace_seg.launch.py image_topic:=/oakd/rgb/preview/image_raw

Every argument is described (``ros2 launch freespace_seg freespace_seg.launch.py -s``).
Defaults live in config/freespace_seg.yaml; arguments given here override that file.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node, PushRosNamespace


def generate_launch_description():
    share = get_package_share_directory('freespace_seg')
    namespace = LaunchConfiguration('namespace')
    params_file = LaunchConfiguration('params_file')
    image_topic = LaunchConfiguration('image_topic')
    camera_info_topic = LaunchConfiguration('camera_info_topic')
    model_file_path = LaunchConfiguration('model_file_path')
    backend = LaunchConfiguration('backend')
    image_transport = LaunchConfiguration('image_transport')
    use_sim_time = LaunchConfiguration('use_sim_time')
    log_level = LaunchConfiguration('log_level')

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
                              choices=['auto', 'tensorrt', 'onnxruntime_gpu', 'onnxruntime'],
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
    ]

    overrides = {
        'backend': backend,
        'image_transport': image_transport,
        'use_sim_time': PythonExpression(["'", use_sim_time, "' == 'true'"]),
    }

    def node(with_model):
        params = [params_file, dict(overrides)]
        if with_model:
            params.append({'model_file_path': model_file_path})
        condition = PythonExpression(["'", model_file_path, "' ", '!=' if with_model else '==',
                                      " ''"])
        return Node(
            package='freespace_seg', executable='segmentation_node',
            name='freespace_segmentation', output='screen',
            parameters=params,
            remappings=[('image', image_topic),
                        ('image/compressed', [image_topic, '/compressed']),
                        ('camera_info', camera_info_topic)],
            arguments=['--ros-args', '--log-level', log_level],
            condition=IfCondition(condition))

    group = GroupAction([PushRosNamespace(namespace), node(True), node(False)])
    return LaunchDescription(args + [group])
