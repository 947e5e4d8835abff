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

"""The ROS 2 distributions: which one runs, and each API difference the code handles."""

import glob
import importlib.metadata
import os
import subprocess
import sys

import pytest
import rclpy
from support import REPO

#: The distros the package supports; .github/workflows/ci.yml builds each (test_package).
DISTROS = ('humble', 'jazzy', 'kilted')
#: Those with PyPI wheels that `make test` and .ci/run use (requirements/ros-<distro>.txt).
WHEEL_DISTROS = ('jazzy', 'kilted')


def wheel_distro():
    """Return the distro of the PyPI ROS 2 wheels this interpreter runs, or None (apt ROS)."""
    found = [d for d in WHEEL_DISTROS if _installed(f'ros-{d}-rclpy')]
    assert len(found) <= 1, f'two distros in one venv: {found}'
    return found[0] if found else None


def _installed(dist):
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_every_wheel_distro_has_its_requirements_file():
    for distro in WHEEL_DISTROS:
        path = os.path.join(REPO, 'requirements', f'ros-{distro}.txt')
        with open(path, encoding='utf-8') as f:
            lines = [ln.split('#')[0].strip() for ln in f]
        assert [ln for ln in lines if ln], path
        assert all(ln.startswith(f'ros-{distro}-') for ln in lines if ln), path
    # The shared file holds no ROS wheels of any distro.
    with open(os.path.join(REPO, 'requirements', 'runtime.txt'), encoding='utf-8') as f:
        shared = [ln.split('#')[0].strip() for ln in f]
    assert shared and not [ln for ln in shared if ln.startswith('ros-')]
    listed = sorted(os.path.basename(p) for p in
                    glob.glob(os.path.join(REPO, 'requirements', 'ros-*.txt')))
    assert listed == sorted(f'ros-{d}.txt' for d in WHEEL_DISTROS)


def test_the_suite_runs_on_the_distro_make_asked_for():
    """`ROS_DISTRO=jazzy make test` must really test Jazzy's rclpy, not another venv's."""
    distro = wheel_distro()
    if distro is None:
        pytest.skip('rclpy is not from the PyPI wheels (a ROS installation)')
    asked = os.environ.get('ROS_DISTRO') or 'kilted'
    assert distro == asked
    rclpy_major = int(importlib.metadata.version('ros-rclpy').split('.')[0])
    assert rclpy_major == {'jazzy': 7, 'kilted': 9}[distro]
    # rclpy is imported from this interpreter's venv.
    assert os.path.realpath(rclpy.__file__).startswith(os.path.realpath(sys.prefix))


def test_event_callbacks_fall_back_to_qos_event_as_on_humble():
    """
    Humble: SubscriptionEventCallbacks lives in rclpy.qos_event, not rclpy.event_handler.

    rclpy.event_handler came in Iron; Jazzy and Kilted keep qos_event as a deprecated alias
    of it. The driver imported with rclpy.event_handler unimportable (rclpy itself loaded
    first) takes Humble's path.
    """
    code = ('import sys, warnings\n'
            'warnings.simplefilter("ignore")\n'
            'import rclpy.node, rclpy.qos_event\n'
            'sys.modules["rclpy.event_handler"] = None\n'
            'from freespace_seg.nodes import freespace_driver as d\n'
            'assert d.SubscriptionEventCallbacks is rclpy.qos_event.SubscriptionEventCallbacks\n'
            'd.SubscriptionEventCallbacks(incompatible_qos=print)\n')
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
