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

"""Code style: ament_flake8 over the package, its tests and its launch files."""

import os
import subprocess
import sys

import pytest
from support import REPO


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    # In a fresh interpreter: flake8 forks worker processes, and forking this test process
    # (which holds rclpy and torch threads from other tests) can crash the workers.
    paths = [os.path.join(REPO, p) for p in ('freespace_seg', 'test', 'launch', 'setup.py')
             if os.path.exists(os.path.join(REPO, p))]
    code = ('import sys; from ament_flake8.main import main_with_errors; '
            'rc, errors = main_with_errors(argv=sys.argv[1:]); '
            'print("\\n".join(errors)); sys.exit(rc)')
    proc = subprocess.run([sys.executable, '-c', code, *paths], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, 'code style errors / warnings:\n' + proc.stdout + proc.stderr
