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

"""The demo end to end, short: the node in its own process, real topics, the shipped model."""

import os
import subprocess
import sys

from freespace_seg.perception.pipeline import packaged_model_path
import pytest
from support import REPO

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it


@pytest.mark.slow
def test_demo_runs_and_reports(tmp_path):
    if not os.path.isfile(packaged_model_path()):
        pytest.fail(f'the packaged model is missing: {packaged_model_path()}')
    out = tmp_path / 'demo'
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run(
        [sys.executable, '-m', 'freespace_seg', 'demo', '--frames', '20', '--scenes', '3',
         '--rate', '10', '--save', '2', '--out', str(out), '--drive', '3', '--drive-room', '2'],
        env=env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for key in ('processed fps', 'latency stamp->mask', 'mIoU vs ground truth',
                'grid free-cell IoU'):
        assert key in proc.stdout, key
    assert 'node exited with code 0' in proc.stderr
    panels = sorted(p.name for p in out.iterdir() if p.name.endswith('_panel.png'))
    assert panels == ['frame00_panel.png', 'frame01_panel.png']
    assert (out / 'summary.md').is_file()
    # The closed loop: a table row for room 2 and the top-down picture of the path.
    assert '| 2 | 3 |' in proc.stdout and 'closed loop:' in proc.stdout
    assert (out / 'closed_loop_room_2.png').stat().st_size > 1000
