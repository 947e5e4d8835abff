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
test/unit/: tests that need no ROS 2 runtime, enforced.

A test file here that imports rclpy, a message package, the package's nodes or a tool that
starts nodes, or that takes the ``ros_init`` fixture, fails the collection with the list of
what it uses (:func:`support.layout.ros_uses`); such a test belongs in test/ros/.
"""

import os

import pytest
from support.layout import ros_uses

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(config, items):
    """Refuse the session when a unit test file needs ROS."""
    files = {str(item.path) for item in items if str(item.path).startswith(HERE + os.sep)}
    bad = {}
    for path in sorted(files):
        with open(path, encoding='utf-8') as f:
            uses = ros_uses(f.read())
        if uses:
            bad[os.path.relpath(path, HERE)] = uses
    if bad:
        raise pytest.UsageError(
            'test/unit/ needs no ROS, but ' + '; '.join(
                f'{name} uses {", ".join(uses)}' for name, uses in bad.items())
            + ': move the file to test/ros/')


@pytest.fixture
def ros_init():
    """Refuse rclpy in a unit test (a lazy request of the fixture too)."""
    pytest.fail('a test under test/unit/ asked for rclpy (ros_init): move it to test/ros/')
