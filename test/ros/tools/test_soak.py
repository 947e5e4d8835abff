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
The soak benchmark, short: 15 s at 10 Hz, 640x360, a tiny model; it must write its report.

Only the report is checked (files, rows, consistent and positive counts), never a time or a
rate: those depend on the machine.
"""

import json
import os
import subprocess
import sys

import pytest
from support import REPO, write_tiny_model

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it

MINUTES, RATE = 0.25, 10


@pytest.mark.slow
def test_short_soak_writes_its_report(tmp_path):
    model = write_tiny_model(tmp_path)
    out = tmp_path / 'soak'
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run(
        [sys.executable, '-m', 'freespace_seg', 'bench-soak', '--minutes', str(MINUTES),
         '--rate', str(RATE), '--width', '640', '--height', '360', '--model', model,
         '--interval', '5', '--scenes', '2', '--out', str(out)],
        env=env, capture_output=True, text=True, timeout=240, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert 'node exited with code 0' in proc.stderr

    report = json.loads((out / 'soak_report.json').read_text())
    summary, samples = report['summary'], report['samples']
    labels = [s['sample'] for s in samples]
    # Publishing 150 frames at 10 Hz takes at least 15 s: samples at 5 s and 10 s at least.
    assert labels[:3] == ['start', '5 s', '10 s'] and labels[-1] == 'end', labels
    assert summary['inputs'] == round(MINUTES * 60 * RATE)
    assert 0 < summary['outputs'] <= summary['inputs']
    assert summary['outputs'] + summary['inputs_without_output'] == summary['inputs']
    assert 0 < summary['node_received'] <= summary['inputs']
    assert summary['node_processed'] > 0 and summary['node_dropped'] >= 0
    assert summary['node_bad'] == 0
    assert summary['latency_p95_ms'] is not None
    assert summary['node_rss_start_mib'] > 0 and summary['node_rss_end_mib'] > 0
    assert summary['node_exit_code'] == 0
    assert samples[-1]['outputs'] == summary['outputs']
    assert all(s['node_rss_mib'] > 0 for s in samples)
    assert [s['inputs'] for s in samples] == sorted(s['inputs'] for s in samples)

    text = (out / 'soak_report.md').read_text()
    for row in ('| inputs published | 150 |', '| masks received |',
                '| frames dropped by the node (newest-frame slot) |',
                '| latency stamp->mask p50 / p95 / max |', '| node RSS growth |',
                '| start | 0.0 |', '| 5 s |', '| 10 s |', '| end |'):
        assert row in text, row
    assert text in proc.stdout
