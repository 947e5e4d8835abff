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
Fixtures and session setup only: tiny real ONNX models and a real rclpy context.

The helpers the fixtures call (and the tests import) are in the ``support`` package next to
this file; test files never import conftest.
"""

import os
import random
import sys

import pytest
from support import REPO, write_tiny_model

if REPO not in sys.path:
    sys.path.insert(0, REPO)

# Keep DDS traffic on this machine and away from other test runs.
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ['ROS_DOMAIN_ID'] = os.environ.get('FREESPACE_TEST_DOMAIN_ID',
                                             str(random.Random(os.getpid()).randint(30, 100)))


@pytest.fixture
def torch_one_thread():
    """Run a test with torch on one thread (the CPU is small), then restore the count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope='session')
def shipped_model():
    """Path to the shipped fp32 model; skips when it or onnxruntime is missing."""
    from freespace_seg.perception.pipeline import packaged_model_path

    path = packaged_model_path()
    if not os.path.isfile(path):
        pytest.skip(f'shipped model missing: {path}')
    pytest.importorskip('onnxruntime')
    return path


@pytest.fixture
def tiny_model(tmp_path):
    """Path to a fresh tiny model (64x48 input) in a temporary directory."""
    return write_tiny_model(tmp_path)


@pytest.fixture(scope='session')
def ros_init():
    """Initialise rclpy once for the session (skips if rclpy is missing)."""
    rclpy = pytest.importorskip('rclpy', reason='needs a ROS 2 runtime (rclpy)')
    rclpy.init()
    yield rclpy
    rclpy.try_shutdown()
