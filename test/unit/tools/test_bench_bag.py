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

"""bench-bag: bag against the pipeline row, on a tiny bag (the table's shape, not its speed)."""

import os
import subprocess
import sys

from freespace_seg.tools.bench.bag import rss_span
from support import REPO, write_tiny_model


def test_rss_span():
    samples = [(0.0, 50.0), (1.0, 100.0), (5.0, 120.0), (9.0, 110.0), (10.0, 111.0)]
    assert rss_span(samples) == (100.0, 120.0, 111.0)
    assert rss_span([]) == (None, None, None)


def test_bench_bag_tiny(tmp_path):
    model = write_tiny_model(tmp_path)
    work = tmp_path / 'work'
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run(
        [sys.executable, '-m', 'freespace_seg', 'bench-bag', '--frames', '40', '--width', '64',
         '--height', '48', '--scenes', '2', '--model', model, '--num-threads', '2',
         '--jobs', '1,2', '--compression', 'none,zstd', '--pipeline-seconds', '0.3',
         '--work-dir', str(work),
         '--out', str(tmp_path / 'bag.md')],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = (tmp_path / 'bag.md').read_text().splitlines()
    assert lines[0].startswith('40 frames, rgb8 64x48 with CameraInfo, MCAP')
    rows = [[c.strip() for c in line.strip('|').split('|')] for line in lines[4:]]
    assert [r[0] for r in rows] == ['bag --jobs 1 --compression none',
                                    'bag --jobs 1 --compression zstd --compress masks',
                                    'bag --jobs 2 --compression none',
                                    'bag --jobs 2 --compression zstd --compress masks',
                                    'pipeline row (before, after)']
    for r in rows[:4]:
        assert float(r[1]) > 0 and float(r[3]) > 0        # frames/s, against the pipeline
        # RSS was sampled (MiB); a run this short may sample before the interpreter is up.
        assert 0 < float(r[5]) <= float(r[6]) and float(r[7]) > 0
    # MB written a frame: the masks compressed write less; the jobs do not change the bag
    assert float(rows[1][4]) < float(rows[0][4]) and rows[0][4] == rows[2][4]
    assert all(float(v) > 0 for v in rows[4][1].split(','))
    assert not (work / 'in').exists() and not (work / 'out').exists()   # bags removed


def test_bench_bag_refuses_bad_jobs(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, '-m', 'freespace_seg', 'bench-bag', '--jobs', '0'],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and 'positive integers' in proc.stderr


def test_bench_bag_refuses_bad_compression(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, '-m', 'freespace_seg', 'bench-bag', '--compression',
                           'zstd,gzip'], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 2 and '--compression wants none, lz4, zstd' in proc.stderr
    assert not (tmp_path / 'bench_bag').exists()
