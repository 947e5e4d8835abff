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

"""A smoke run of ``python -m freespace_seg bench``: it produces results (never timed here)."""

import json
import os

import pytest
from support import write_tiny_model

pytest.importorskip('rclpy', reason='the topic conditions need a ROS 2 runtime (rclpy)')


def test_bench_quick_smoke_run_writes_table_json_and_plot(tmp_path, capsys):
    from freespace_seg import cli

    model = write_tiny_model(tmp_path, width=64, height=48)
    out = tmp_path / 'bench'
    rc = cli.main(['bench', '--quick', '--model', model, '--int8-model', 'none',
                   '--out', str(out), '--width', '160', '--height', '90', '--scenes', '1',
                   '--threads', '1', '--rates', '30', '--duration', '1.0', '--warmup', '0.5',
                   '--profile', '--node-param', 'grid_mask_width:=80'])
    assert rc == 0
    text = capsys.readouterr().out
    for kind in ('engine', 'pipeline', 'node', 'naive'):
        assert f'| {kind} |' in text, kind
    assert 'closed loop' in text and 'jpeg 160x90' in text
    assert '| goal |' in text
    assert 'Node parameters of every node row: `grid_mask_width:=80`.' in text

    with open(out / 'bench.json') as f:
        result = json.load(f)
    for key in ('machine', 'models', 'rows', 'ratios', 'goals', 'memory'):
        assert key in result
    kinds = [r['kind'] for r in result['rows']]
    assert kinds.count('engine') == 1 and kinds.count('pipeline') == 1
    assert kinds.count('node') == 3 and kinds.count('naive') == 1
    for row in result['rows']:
        for key in ('fps', 'p50_ms', 'p95_ms', 'max_ms', 'cpu_percent', 'samples_ms'):
            assert key in row, (row['kind'], key)
        if row['kind'] in ('node', 'naive'):
            for key in ('published', 'answered', 'dropped', 'rss_mb', 'camera'):
                assert key in row, (row['kind'], key)
            keys = ('published', 'answered', 'exit_code', 'fps', 'cpu_percent', 'camera_fps')
            facts = {k: row.get(k) for k in keys}
            assert row['published'] > 0, (row['label'], facts)
            assert row['answered'] > 0, (row['label'], facts)
            assert row['exit_code'] == 0
    pipeline = next(r for r in result['rows'] if r['kind'] == 'pipeline')
    stages = {'decode', 'preprocess', 'inference', 'postprocess', 'free_and_projection'}
    assert set(pipeline['stages_p50_ms']) >= stages
    assert os.path.getsize(out / 'latency.png') > 1000
    assert os.path.isfile(out / 'bench.md')
    assert 'other CPU %' in text
    # CPU per thread of each node process: the worker that runs the frames is named.
    assert 'CPU per thread of the node process' in text
    for row in result['rows']:
        if row['kind'] == 'node':
            names = [name for name, _ in row['thread_cpu']]
            assert 'seg_worker' in names or 'seg_worker_0' in names, names
            assert 'main' in names, names
    # --profile: every node process wrote its stack-sample profile.
    profiles = [r['profile'] for r in result['rows'] if r['kind'] == 'node']
    assert len(profiles) == 3
    for name in profiles:
        assert (out / name).read_text().startswith('# segmentation_node')

    # --from-json redoes the report of that run without measuring anything.
    again = tmp_path / 'again'
    assert cli.main(['bench', '--from-json', str(out / 'bench.json'), '--out', str(again)]) == 0
    redone = capsys.readouterr().out
    assert redone.split('\n', 1)[1] == text.split('\n', 1)[1] or \
        markdown_rows(redone) == markdown_rows(text)
    assert os.path.getsize(again / 'latency.png') > 1000


def markdown_rows(text):
    return [line for line in text.splitlines() if line.startswith('| ')]


def test_naive_node_is_reachable_as_a_command():
    from freespace_seg import cli
    from freespace_seg.tools.bench import naive

    assert cli.COMMANDS['bench-naive-node'][0] == naive.__name__
    assert callable(naive.main) and not hasattr(naive, 'run')  # it takes --ros-args as is


def test_memory_summary_and_ratios():
    from freespace_seg.tools.bench import report

    row = {'rss_series': [(0.0, 100.0), (30.0, 110.0), (60.0, 112.0), (240.0, 113.0)]}
    mem = report.memory_summary(row)
    assert mem['rss_after_settle_mb'] == 112.0 and mem['growth_mb'] == pytest.approx(1.0)
    assert mem['growth_mb_per_min'] == pytest.approx(1.0 / 3.0)

    rows = [
        {'kind': 'engine', 'model': 'fp32', 'threads': 2, 'fps': 100.0, 'mean_ms': 10.0},
        {'kind': 'node', 'model': 'fp32', 'threads': 2, 'rate_hz': 0.0, 'fps': 90.0,
         'input': 'rgb8 1280x720', 'p95_ms': 12.0, 'camera_fps': 90.0, 'camera': 'closed'},
        {'kind': 'node', 'model': 'fp32', 'threads': 2, 'rate_hz': 120.0, 'fps': 96.0,
         'input': 'rgb8 1280x720', 'p95_ms': 12.0, 'camera_fps': 120.0, 'camera': '120 Hz'},
        {'kind': 'node', 'model': 'fp32', 'threads': 2, 'rate_hz': 30.0, 'fps': 30.0,
         'input': 'rgb8 1280x720', 'p95_ms': 15.0, 'camera_fps': 30.0, 'camera': '30 Hz'},
        {'kind': 'naive', 'model': 'fp32', 'threads': 2, 'rate_hz': 30.0, 'fps': 8.0,
         'input': 'rgb8 1280x720', 'p95_ms': 900.0},
    ]
    assert report.saturated(rows, 'fp32', 2) is rows[2]  # the camera outpaced the node
    ratios, goals = report.ratios_and_goals(rows, [2], [30.0], ['fp32'])
    met = {g['goal']: g['met'] for g in goals}
    assert met['node >= 0.95x engine throughput at saturation (fp32, 2t)']
    assert met['p95 at 30 Hz <= 1.3x engine + 3 ms (fp32, 2t)']
    assert met['>= 3x naive fps at 30 Hz (fp32)']
    assert met['<= 1/3 naive p95 at 30 Hz (fp32)']
    assert any(r['ratio'].startswith('node fp32/naive fps') for r in ratios)


def test_the_worker_conditions_are_planned_and_selectable_with_only():
    import argparse
    import types

    from freespace_seg.tools.bench import report, run
    from freespace_seg.tools.bench.topics import TopicBench

    parser = argparse.ArgumentParser()
    run.add_arguments(parser)
    models = [('fp32', '/m/a.onnx'), ('int8', '/m/a_int8.onnx')]
    size = types.SimpleNamespace(width=1280, height=720)

    def labels(argv):
        return [c.label(size) for c in run.plan(parser.parse_args(argv), models)[2]]

    full = labels([])
    new = [f'node {m} 2w1t rgb8 1280x720 {camera}' for m in ('fp32', 'int8')
           for camera in ('30 Hz', '60 Hz', 'closed loop (2 in flight)')]
    assert full[-len(new):] == new                     # after every other condition
    assert 'node int8 2t rgb8 1280x720 60 Hz' in full  # the one-worker rows stay as they were
    assert not any('2w' in label for label in full[:-len(new)])
    # --only picks a worker row by its label, and the one-worker texts never pick one.
    assert [x for x in full if 'node int8 2w1t rgb8 1280x720 60 Hz' in x] == [new[4]]
    assert not any(t in x for x in new for t in ('node int8 2t', 'node int8 1t', 'int8 1t'))
    assert not any('w1t' in x for x in labels(['--quick']))
    assert labels(['--quick', '--workers', '2x1', '--rates', '60'])[-4:] == [
        f'node {m} 2w1t rgb8 1280x720 {camera}' for m in ('fp32', 'int8')
        for camera in ('60 Hz', 'closed loop (2 in flight)')]
    assert labels(['--workers', 'none']) == full[:-len(new)]
    for bad in ('2', '1x1', '5x1', 'twoxone'):
        with pytest.raises(SystemExit):
            labels(['--workers', bad])
    # The node runs with num_workers 2 and num_threads 1.
    cond = run.plan(parser.parse_args(['--only', '2w1t']), models)[2][-2]
    assert cond.label(size) == new[4]
    cmd, _ = TopicBench._command(None, cond, '/ns', 'bench_node_1')
    assert 'num_workers:=2' in cmd and 'num_threads:=1' in cmd
    # --node-param goes to every node condition, never to the naive node.
    conds = run.plan(parser.parse_args(['--node-param', 'grid_mask_width:=640',
                                        '--node-param', 'max_range:=2.5']), models)[2]
    for cond in conds:
        cmd, _ = TopicBench._command(None, cond, '/ns', 'bench_node_1')
        wanted = cond.kind == 'node'
        assert ('grid_mask_width:=640' in cmd and 'max_range:=2.5' in cmd) == wanted
    for bad in ('grid_mask_width=640', ':=1', 'num_threads:=4'):
        with pytest.raises(SystemExit):
            run.plan(parser.parse_args(['--node-param', bad]), models)

    # The report tells the worker rows apart and never takes one for a one-worker row.
    rows = [
        {'kind': 'node', 'model': 'int8', 'threads': 1, 'workers': 2, 'rate_hz': 60.0,
         'fps': 59.9, 'input': 'rgb8 1280x720', 'p95_ms': 20.0, 'camera_fps': 60.0,
         'camera': '60 Hz', 'p50_ms': 15.0, 'max_ms': 30.0, 'cpu_percent': 190.0},
        {'kind': 'node', 'model': 'int8', 'threads': 1, 'rate_hz': 60.0, 'fps': 50.0,
         'input': 'rgb8 1280x720', 'p95_ms': 30.0, 'camera_fps': 60.0, 'camera': '60 Hz',
         'p50_ms': 20.0, 'max_ms': 40.0, 'cpu_percent': 100.0},
    ]
    assert report.find(rows, 'node', 'int8', 1, rate=60.0) is rows[1]
    assert report.find(rows, 'node', 'int8', 1, rate=60.0, workers=2) is rows[0]
    assert report.saturated(rows, 'int8', 1) is rows[1]
    _, goals = report.ratios_and_goals(rows, [1], [60.0], ['int8'])
    goals = {g['goal']: g['met'] for g in goals}
    assert goals == {'>= 60 fps end to end at 60 Hz (int8, 1t)': False,
                     '>= 60 fps end to end at 60 Hz (int8, 2w1t)': True}
    assert '| node (2 workers) | int8 | 1 |' in report.markdown_table(rows)


def test_stop_spin_thread_leaves_no_thread_in_the_executor():
    # The bench harness hung once when its node was destroyed under a thread still spinning.
    import threading

    from freespace_seg.nodes.ros_util import stop_spin_thread
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('stop_spin_thread_test', context=context)
        node.create_subscription(String, 'chatter', lambda msg: None, 10)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()
        assert spin.is_alive()
        stop_spin_thread(executor, spin)
        assert not spin.is_alive(), 'the spin thread is still in the executor'
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
