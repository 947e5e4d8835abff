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

"""spin_node: how a node process ends (signals turned into other exceptions by rclpy)."""

import subprocess
import sys

from freespace_seg.tools.child import node_environment
import pytest
from support import REPO

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

# A node whose timer raises RuntimeError, as rclpy's take_message does when a signal's
# KeyboardInterrupt fires while pybind11 converts a message. SIGNALLED: record a signal first.
SCRIPT = """
import sys
import rclpy.node
from freespace_seg.nodes import ros_util


class Failing(rclpy.node.Node):
    def __init__(self):
        super().__init__('failing_node')
        self.create_timer(0.05, self.tick)

    def tick(self):
        if sys.argv[1] == 'signalled':
            ros_util._SIGNALLED.append(15)
        raise RuntimeError('Unable to convert call argument 0 to Python object')


sys.exit(ros_util.spin_node(Failing))
"""


def run(mode):
    return subprocess.run([sys.executable, '-c', SCRIPT, mode], cwd=REPO,
                          env=node_environment(), capture_output=True, text=True, timeout=60)


def test_runtime_error_after_a_signal_is_a_clean_stop():
    done = run('signalled')
    assert done.returncode == 0, done.stderr
    assert 'Traceback' not in done.stderr


def test_runtime_error_without_a_signal_is_not_hidden():
    done = run('plain')
    assert done.returncode != 0
    assert 'RuntimeError: Unable to convert call argument' in done.stderr
