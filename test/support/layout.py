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

"""What makes a test a ROS test: the rule that test/unit/conftest.py enforces."""

import ast

#: imports that need a ROS 2 runtime: rclpy and friends, message packages, the package's
#: nodes and the tools that start nodes, and the tests' ROS harness
ROS_ROOTS = ('rclpy', 'launch', 'launch_ros', 'launch_testing', 'rosidl_runtime_py',
             'rcl_interfaces', 'builtin_interfaces', 'tf2_ros', 'cv_bridge', 'message_filters')
ROS_MODULES = ('freespace_seg.nodes', 'freespace_seg.tools.demo',
               'freespace_seg.tools.closed_loop', 'freespace_seg.tools.bench.topics',
               'freespace_seg.tools.bench.naive', 'freespace_seg.tools.bench.soak',
               'freespace_seg.tools.bench.fleet', 'freespace_seg.tools.child', 'support.ros')
#: the fixture that initialises rclpy (test/conftest.py)
ROS_FIXTURES = ('ros_init',)


def _is_ros(name):
    root = name.split('.')[0]
    return (root in ROS_ROOTS or root.endswith('_msgs') or root.endswith('_srvs')
            or any(name == m or name.startswith(m + '.') for m in ROS_MODULES))


def ros_uses(source):
    """
    Return what in a test file's ``source`` needs ROS: imports and fixtures, sorted.

    Imports count anywhere in the file (lazy ones in functions too), as do
    ``importlib.import_module`` and ``pytest.importorskip`` of such a module, and any
    function that takes one of :data:`ROS_FIXTURES`.
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f'{node.module}.{a.name}' for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, 'attr', '') in (
                'import_module', 'importorskip') and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [node.args[0].value]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update(f'fixture {a.arg}' for a in node.args.args if a.arg in ROS_FIXTURES)
        found.update(n for n in names if _is_ros(n))
    return sorted(found)
