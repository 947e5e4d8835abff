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
The ``triton`` backend against a real local server (``python -m freespace_seg serve``).

The server is the ``tritonserver`` binary of the nvidia-pytriton wheel, in its own venv
(``.venv-serve``, made by ``tools/bootstrap.sh --test``), its model running ONNX Runtime in
Triton's Python backend. Tests skip, saying why, only where that server or the client
(``tritonclient[grpc]``) is not installed.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time

from freespace_seg.perception.engines import create_engine, EngineError
from freespace_seg.perception.engines.triton import TritonEngine
from freespace_seg.perception.model_card import card_path_for_model, load_card
from freespace_seg.perception.pipeline import packaged_model_path, SegmentationPipeline
from freespace_seg.tools.serve import default_server_env, free_ports, ServeError, server_layout
from freespace_seg.tools.triton_repo import config_pbtxt, onnx_tensors
import numpy as np
import pytest
from support import REPO
import yaml

MODEL = packaged_model_path('freespace_unet.onnx')
#: a server start takes tens of seconds on a small, busy CPU
START_TIMEOUT = 300.0

pytest.importorskip('tritonclient.grpc', reason="the triton backend's client is not "
                    "installed: pip install 'tritonclient[grpc]' (requirements/runtime.txt)")


def _server_missing():
    try:
        server_layout(default_server_env())
    except ServeError as e:
        return str(e)
    return ''


needs_server = pytest.mark.skipif(bool(_server_missing()), reason=_server_missing() or 'ok')


class Server:
    """A ``serve`` subprocess; ``start`` waits for its 'serving' line."""

    def __init__(self, model=MODEL, ports=None):
        self.model = model
        self.grpc, self.http, self.metrics = ports or free_ports(3)
        self.proc = None
        self.lines = []

    @property
    def url(self):
        return f'localhost:{self.grpc}'

    def start(self):
        cmd = [sys.executable, '-m', 'freespace_seg', 'serve', '--model', self.model,
               '--grpc-port', str(self.grpc), '--http-port', str(self.http),
               '--metrics-port', str(self.metrics), '--threads', '1']
        # As a user runs it: no FREESPACE_SEG_SERVE_ENV, the checkout's .venv-serve.
        env = {k: v for k, v in os.environ.items() if k != 'FREESPACE_SEG_SERVE_ENV'}
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        ready = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.lines.append(line)
                if line.startswith('serving'):
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(START_TIMEOUT)
        assert self.proc.poll() is None and any(line.startswith('serving') for line in
                                                self.lines), f'serve did not start: {self.lines}'
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            return self.proc.wait(timeout=60)
        return None if self.proc is None else self.proc.returncode


def triton_node_process(namespace, name, url, **params):
    """
    Start ``segmentation_node`` with ``backend: triton`` as its own process (as ros2 run does).

    ``params`` are more node parameters; returns the :class:`NodeProcess`.
    """
    from freespace_seg.tools.child import (node_environment, NodeProcess,
                                           segmentation_node_command)

    values = {'model_file_path': MODEL, 'backend': 'triton', 'triton_url': url,
              'triton_timeout': 30.0, 'num_threads': 1, **params}
    ros_args = ['-r', f'__ns:={namespace}', '-r', f'__node:={name}']
    for key, value in values.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        ros_args += ['-p', f'{key}:={text}']
    return NodeProcess(segmentation_node_command(ros_args), node_environment())


@pytest.fixture(scope='module')
def server():
    s = Server().start()
    yield s
    assert s.stop() == 0, s.lines
    assert any('stopped by signal' in line for line in s.lines), s.lines


def frames(n=3, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        img = np.zeros((240, 320, 3), np.uint8)
        img[120:] = rng.integers(90, 140, size=3)           # a floor-ish band
        img[:120] = rng.integers(0, 255, size=(120, 320, 3))  # clutter
        out.append(img)
    return out


def test_default_server_env_is_the_checkouts_venv(monkeypatch, tmp_path):
    monkeypatch.delenv('FREESPACE_SEG_SERVE_ENV', raising=False)
    assert default_server_env() == os.path.join(REPO, '.venv-serve')
    monkeypatch.setenv('FREESPACE_SEG_SERVE_ENV', str(tmp_path))
    assert default_server_env() == str(tmp_path)


def test_config_text_batches_without_the_batch_dimension():
    inputs, outputs = onnx_tensors(MODEL)
    text = config_pbtxt('m', 'onnxruntime', inputs, outputs, max_batch_size=8,
                        max_queue_delay_us=500)
    assert 'max_batch_size: 8' in text and 'max_queue_delay_microseconds: 500' in text
    assert 'dims: [ 3, 272, 480 ]' in text and 'dims: [ 2, 272, 480 ]' in text
    text = config_pbtxt('m', 'onnxruntime', inputs, outputs, max_batch_size=0)
    assert 'dims: [ 1, 3, 272, 480 ]' in text and 'dynamic_batching' not in text


def test_auto_never_picks_triton(tiny_model):
    card = load_card(card_path_for_model(tiny_model))
    engine, notes = create_engine(card, 'auto')
    assert engine.backend != 'triton' and not any(n.startswith('triton') for n in notes)
    engine.close()


@needs_server
def test_masks_match_local_onnxruntime_bit_for_bit(server):
    remote = SegmentationPipeline(MODEL, 'triton', engine_options={'triton_url': server.url,
                                                                   'triton_timeout': 30.0})
    local = SegmentationPipeline(MODEL, 'onnxruntime', num_threads=1)
    assert remote.engine.backend == 'triton'
    for img in frames():
        a, b = remote.segment(img), local.segment(img)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
        assert remote.engine.round_trips, 'the round trip is measured'
    remote.close()
    local.close()


@needs_server
def test_wrong_model_name_names_the_server_models(server):
    card = load_card(card_path_for_model(MODEL))
    with pytest.raises(EngineError, match=r"'nope'.*not ready.*freespace_unet"):
        TritonEngine(card, triton_url=server.url, triton_model_name='nope',
                     triton_timeout=30.0)


def test_unreachable_server_is_a_clear_error():
    card = load_card(card_path_for_model(MODEL))
    (port,) = free_ports(1)
    with pytest.raises(EngineError, match=f'localhost:{port} is unreachable'):
        create_engine(card, 'triton', triton_url=f'localhost:{port}', triton_timeout=2.0)


@needs_server
def test_card_that_disagrees_with_the_server_names_both_sides(server, tmp_path):
    card_path = card_path_for_model(MODEL)
    with open(card_path) as f:
        raw = yaml.safe_load(f)
    raw['input']['shape'] = [1, 3, 256, 480]
    bad = tmp_path / 'bad.yaml'
    with open(bad, 'w') as f:
        yaml.safe_dump(raw, f)
    card = dataclasses.replace(load_card(str(bad)), model_file=MODEL)
    with pytest.raises(EngineError, match=r'shape \[-1, 3, 272, 480\].*says \[1, 3, 256, 480\]'):
        TritonEngine(card, triton_url=server.url, triton_timeout=30.0)
    raw['input']['shape'] = [1, 3, 272, 480]
    raw['output']['name'] = 'scores'
    with open(bad, 'w') as f:
        yaml.safe_dump(raw, f)
    card = dataclasses.replace(load_card(str(bad)), model_file=MODEL)
    with pytest.raises(EngineError, match=r"no output 'scores'.*outputs \['logits'\]"):
        TritonEngine(card, triton_url=server.url, triton_timeout=30.0)


@needs_server
def test_busy_port_is_refused(server):
    out = subprocess.run([sys.executable, '-m', 'freespace_seg', 'serve', '--grpc-port',
                          str(server.grpc), '--http-port', str(free_ports(1)[0]),
                          '--metrics-port', str(free_ports(1)[0])],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert f'gRPC port {server.grpc}' in out.stdout and 'in use' in out.stdout


def server_regions(url):
    """Return the names of the system shared-memory regions registered with the server."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        status = client.get_system_shared_memory_status(as_json=True, client_timeout=30.0)
    finally:
        client.close()
    return set(status.get('regions', {}))


@needs_server
def test_shared_memory_masks_match_and_the_regions_are_cleaned_up(server):
    remote = SegmentationPipeline(MODEL, 'triton', engine_options={
        'triton_url': server.url, 'triton_timeout': 30.0, 'triton_shared_memory': True})
    local = SegmentationPipeline(MODEL, 'onnxruntime', num_threads=1)
    shm = remote.engine.shm
    assert shm is not None and shm.registered
    names, keys = set(shm.names.values()), list(shm.keys.values())
    assert names <= server_regions(server.url)
    assert all(os.path.exists('/dev/shm' + k) for k in keys)
    assert any('shared memory' in n for n in remote.engine.notes)
    for img in frames():
        a, b = remote.segment(img), local.segment(img)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
    # The tensors did not travel in the gRPC messages: the server read and wrote the regions.
    x = np.random.default_rng(3).standard_normal(remote.card.input_shape).astype(np.float32)
    plain = TritonEngine(remote.card, triton_url=server.url, triton_timeout=30.0)
    assert np.array_equal(remote.engine.run(x), plain.run(x))
    plain.close()
    remote.close()
    local.close()
    assert not names & server_regions(server.url), 'the regions are unregistered'
    assert not any(os.path.exists('/dev/shm' + k) for k in keys), 'and removed'


@needs_server
def test_shared_memory_the_server_cannot_map_is_a_clear_error(server):
    """A region the server cannot open (as on another host): the error says what to do."""
    from freespace_seg.perception.engines.triton import SystemSharedMemory
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    card = load_card(card_path_for_model(MODEL))
    client = grpcclient.InferenceServerClient(server.url)
    meta = client.get_model_metadata(card.name, as_json=True)
    shm = SystemSharedMemory(client, server.url, card, meta, 30.0, InferenceServerException)
    os.unlink('/dev/shm' + shm.keys['in'])    # the server cannot see it, as on another host
    with pytest.raises(EngineError, match=r'cannot map /freespace_\S+_in: .*must run on '
                       'this host') as caught:
        shm.register()
    print(caught.value)
    assert not shm.registered and not set(shm.names.values()) & server_regions(server.url)
    shm.close()
    client.close()
    assert not os.path.exists('/dev/shm' + shm.keys['out'])


@needs_server
@pytest.mark.parametrize('shared_memory', [False, True])
def test_server_killed_and_restarted_recovers_without_a_new_engine(shared_memory):
    srv = Server().start()
    card = load_card(card_path_for_model(MODEL))
    engine, _ = create_engine(dataclasses.replace(card, model_file=MODEL), 'triton',
                              triton_url=srv.url, triton_timeout=30.0,
                              triton_shared_memory=shared_memory)
    x = np.zeros(card.input_shape, np.float32)
    first = engine.run(x)
    os.kill(_server_child(srv.proc), signal.SIGKILL)   # dies mid-stream, no goodbye
    assert srv.proc.wait(timeout=60) != 0
    with pytest.raises(EngineError, match='inference server at'):
        engine.run(x)
    assert engine.server_error and engine.failed_requests == 1
    with pytest.raises(EngineError, match='retrying in'):
        engine.run(x)          # within the backoff window: no request sent
    srv2 = Server(ports=(srv.grpc, srv.http, srv.metrics)).start()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                again = engine.run(x)
                break
            except EngineError:
                assert time.monotonic() < deadline, 'no recovery after the server returned'
                time.sleep(0.5)
        assert np.array_equal(again, first) and engine.server_error == ''
        if shared_memory:   # the new server got the regions registered again
            assert set(engine.shm.names.values()) <= server_regions(srv2.url)
    finally:
        engine.close()
        assert srv2.stop() == 0


def _server_child(proc):
    """Return the pid of the tritonserver process that ``serve`` (``proc``) runs."""
    with open(f'/proc/{proc.pid}/task/{proc.pid}/children') as f:
        (pid,) = [int(p) for p in f.read().split()]
    return pid


@needs_server
def test_node_publishes_local_masks_and_survives_a_server_restart(ros_init):
    """The node on triton: local ONNX Runtime's masks; server lost: ERROR, then recovery."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from freespace_seg.nodes.msgs import array_to_image
    from freespace_seg.nodes.segmentation_node import start_segmentation_node
    from freespace_seg.perception.image_codec import image_to_array
    from rclpy.parameter import Parameter
    from support.ros import Harness, unique_namespace
    from sensor_msgs.msg import Image

    srv = Server().start()
    ns = unique_namespace()
    params = {'model_file_path': MODEL, 'backend': 'triton', 'triton_url': srv.url,
              'triton_timeout': 30.0}
    node = start_segmentation_node(namespace=ns, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])
    rig = Harness(ns, node)
    srv2 = None
    try:
        box = rig.collect(Image, 'segmentation/mask')
        pub = rig.publisher(Image, 'image')
        assert rig.wait_for_subscribers(pub)
        assert rig.wait_for(lambda: node.wants('segmentation/mask'))
        local = SegmentationPipeline(MODEL, 'onnxruntime', num_threads=1)
        img = frames(1)[0]
        expected = local.segment(img)
        local.close()

        def send_until(predicate, timeout):
            deadline = time.monotonic() + timeout
            while not predicate():
                assert time.monotonic() < deadline
                pub.publish(array_to_image(img, 'rgb8'))
                rig.wait_for(predicate, timeout=1.0)
            return True

        send_until(lambda: box, 120)
        assert np.array_equal(image_to_array(box[-1]), expected)
        assert node.diagnostics_status().level == DiagnosticStatus.OK
        os.kill(_server_child(srv.proc), signal.SIGKILL)
        srv.proc.wait(timeout=60)
        send_until(lambda: node.bad_frames > 0, 120)
        status = node.diagnostics_status()
        assert status.level == DiagnosticStatus.ERROR, status.message
        assert 'inference server failing' in status.message
        keys = {kv.key for kv in status.values}
        assert {'server_round_trip_p50_ms', 'server_url'} <= keys
        assert node.lifecycle_state == 'active'
        srv2 = Server(ports=(srv.grpc, srv.http, srv.metrics)).start()
        before = len(box)
        send_until(lambda: len(box) > before, 120)
        assert np.array_equal(image_to_array(box[-1]), expected)
        assert node.diagnostics_status().level == DiagnosticStatus.OK
    finally:
        rig.close()
        if srv2 is not None:
            assert srv2.stop() == 0


@needs_server
def test_four_node_processes_share_one_server(ros_init, server):
    """
    Four segmentation_node processes, each its own namespace and camera, on one server.

    Each robot sees its own frames; its masks equal local ONNX Runtime's for those frames, bit
    for bit (no mix-up inside the server's batches). The server counted exactly the requests
    the four nodes say they made. Two of them use system shared memory: their regions are
    registered while they run, and gone (unregistered, unlinked) after they stop.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from freespace_seg.nodes.msgs import array_to_image
    from freespace_seg.perception.engines.triton import model_statistics, stats_delta
    from freespace_seg.perception.image_codec import image_to_array
    from support.ros import Harness, unique_namespace
    from sensor_msgs.msg import Image

    robots = 4
    spaces = [unique_namespace(f'robot{i}') for i in range(robots)]
    names = [f'seg_{i}' for i in range(robots)]
    before = model_statistics(server.url, 'freespace_unet')
    procs = [triton_node_process(ns, name, server.url, triton_shared_memory=i >= 2)
             for i, (ns, name) in enumerate(zip(spaces, names))]
    rig = Harness(spaces[0])
    try:
        boxes = [rig.collect(Image, f'{ns}/segmentation/mask') for ns in spaces]
        pubs = [rig.publisher(Image, f'{ns}/image') for ns in spaces]
        diags = []
        rig.client.create_subscription(
            DiagnosticArray, '/diagnostics',
            lambda m: diags.extend((time.monotonic(), st) for st in m.status), 50)
        for proc in procs:
            assert proc.ready.wait(START_TIMEOUT), proc.log_tail()
        for pub in pubs:
            assert rig.wait_for_subscribers(pub, timeout=60)
        local = SegmentationPipeline(MODEL, 'onnxruntime', num_threads=1)
        images = frames(robots, seed=7)
        expected = [local.segment(img) for img in images]
        local.close()
        assert all(not np.array_equal(expected[0], e) for e in expected[1:]), \
            'the robots need different frames'
        shm_pids = {procs[2].pid, procs[3].pid}
        regions = server_regions(server.url)
        assert {r.split('_')[1] for r in regions if r.startswith('freespace_')} >= \
            {str(p) for p in shm_pids}
        # Rounds: every robot publishes at once (so requests meet at the server), then waits
        # for its mask; a robot with no answer yet publishes again.
        rounds = 4
        for _ in range(rounds):
            counts = [len(b) for b in boxes]
            deadline = time.monotonic() + 120
            while not all(len(b) > c for b, c in zip(boxes, counts)):
                assert time.monotonic() < deadline, [len(b) for b in boxes]
                for i, pub in enumerate(pubs):
                    if len(boxes[i]) == counts[i]:
                        pub.publish(array_to_image(images[i], 'rgb8'))
                rig.wait_for(lambda: all(len(b) > c for b, c in zip(boxes, counts)), 2.0)
        for i, box in enumerate(boxes):
            assert len(box) >= rounds
            for msg in box:
                assert np.array_equal(image_to_array(msg), expected[i]), f'robot {i}'
        # Each node's own count of frames it segmented, from a diagnostics message sent after
        # the last mask arrived, against what the server counted.
        t_end = time.monotonic()

        def last_counts():
            out = {}
            for t, st in diags:
                name = st.name.split(':')[0]
                if t > t_end + 0.2 and name in names:
                    out[name] = {kv.key: kv.value for kv in st.values}
            return out if len(out) == robots else None

        final = rig.wait_for(last_counts, timeout=30)
        assert final, 'no diagnostics from every node'
        for name in names:
            assert final[name]['backend'] == 'triton' and final[name]['frames_bad'] == '0'
        processed = sum(int(final[name]['frames_processed']) for name in names)
        seen = stats_delta(before, model_statistics(server.url, 'freespace_unet'))
        assert processed >= robots * rounds
        assert seen['requests'] == processed, (seen, processed)
        assert sum(size * n for size, n in seen['batches'].items()) == processed
        print(f'four nodes: {processed} requests; batches the server formed '
              f'{dict(sorted(seen["batches"].items()))}')
    finally:
        rig.close()
        codes = [proc.stop() for proc in procs]
    assert codes == [0] * robots, [proc.log_tail() for proc in procs]
    left = {r for r in server_regions(server.url)
            if r.startswith(tuple(f'freespace_{p}_' for p in shm_pids))}
    assert not left, f'regions left registered: {left}'
    assert not [f for f in os.listdir('/dev/shm')
                if f.startswith(tuple(f'freespace_{p}_' for p in shm_pids))]


@needs_server
def test_bench_fleet_smoke_run_reports_every_condition(tmp_path, capsys):
    """bench-fleet, 1 and 2 robots, a tiny model: the table's shape, sane numbers (no times)."""
    from support import write_tiny_model
    from freespace_seg import cli

    pytest.importorskip('rclpy', reason='the robots need a ROS 2 runtime (rclpy)')
    model = write_tiny_model(tmp_path, width=64, height=48)
    out = tmp_path / 'fleet'
    rc = cli.main(['bench-fleet', '--model', model, '--robots', '1,2', '--rates', '10',
                   '--duration', '2', '--warmup', '1', '--size', '160x90', '--scenes', '1',
                   '--overhead-seconds', '0.5', '--shared-memory', '--out', str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    with open(out / 'fleet.json') as f:
        result = json.load(f)
    rows = result['rows']
    assert [(r['backend'], r['robots']) for r in rows] == [
        ('triton', 1), ('onnxruntime', 1), ('triton', 2), ('onnxruntime', 2)]
    for r in rows:
        assert r['rate_hz'] == 10 and len(r['per_robot']) == r['robots']
        assert all(p['fps'] > 0 and p['answered'] > 0 for p in r['per_robot']), r
        assert r['p50_ms'] > 0 and r['p95_ms'] >= r['p50_ms']
        assert r['nodes_cpu_percent'] > 0 and r['cameras_cpu_percent'] > 0
        assert r['exit_codes'] == [0] * r['robots']
        if r['backend'] == 'triton':
            # The server counted at least the frames the robots got masks for, in batches.
            batches = {int(k): v for k, v in r['server_batches'].items()}
            assert batches and all(1 <= k <= 8 for k in batches)
            assert sum(k * v for k, v in batches.items()) == r['server_requests'] > 0
            assert r['server_failed'] == 0 and r['server_cpu_percent'] > 0
            assert r['round_trip_p50_ms'] > 0
        else:
            assert 'server_batches' not in r and r['server_cpu_percent'] is None
    over = result['overhead']
    assert set(over) == {'local', 'grpc', 'shared_memory'}
    assert all(over[k]['p50_ms'] > 0 for k in over)
    assert over['grpc']['server_compute_ms'] > 0
    table_rows = [line for line in text.splitlines() if line.startswith('| triton |')
                  or line.startswith('| onnxruntime |')]
    assert len(table_rows) == 4 and all(line.count('|') == 16 for line in table_rows)
    assert 'triton round trip, shared memory' in text and 'load average' in text
    assert (out / 'fleet.md').read_text().strip() == text.strip()
    # --from-json redoes the report without measuring.
    again = tmp_path / 'again'
    assert cli.main(['bench-fleet', '--from-json', str(out / 'fleet.json'),
                     '--out', str(again)]) == 0
    assert capsys.readouterr().out.strip() == text.strip()
    assert (again / 'fleet.md').read_text() == (out / 'fleet.md').read_text()


def test_bench_fleet_refuses_bad_options(capsys):
    from freespace_seg import cli

    assert cli.main(['bench-fleet', '--size', '640by360']) == 2
    assert '--size must be WxH' in capsys.readouterr().err
    assert cli.main(['bench-fleet', '--backends', 'triton,tensorrt']) == 2
    assert '--backends must name triton and/or onnxruntime' in capsys.readouterr().err
    assert cli.main(['bench-fleet', '--robots', '0,2']) == 2
    assert '--robots must be positive' in capsys.readouterr().err


def test_threads_per_node_share_the_cores():
    from freespace_seg.tools.bench.fleet import node_threads

    assert [node_threads(0, n, cores=2) for n in (1, 2, 4, 8)] == [2, 1, 1, 1]
    assert [node_threads(0, n, cores=16) for n in (1, 2, 4, 8)] == [16, 8, 4, 2]
    assert node_threads(3, 8, cores=2) == 3


def test_triton_repo_writes_a_batching_onnxruntime_model(tmp_path):
    import onnxruntime as ort

    out = tmp_path / 'repo'
    done = subprocess.run([sys.executable, '-m', 'freespace_seg', 'triton-repo', str(out),
                           '--model', MODEL, '--kind', 'cpu', '--instances', '2',
                           '--max-queue-delay-us', '750'],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'docker run' in done.stdout and 'nvcr.io/nvidia/tritonserver' in done.stdout
    text = (out / 'freespace_unet' / 'config.pbtxt').read_text()
    assert 'backend: "onnxruntime"' in text and 'kind: KIND_CPU count: 2' in text
    assert 'max_queue_delay_microseconds: 750' in text
    # The written copy batches: two frames in one run give each frame's own answer.
    written = ort.InferenceSession(str(out / 'freespace_unet' / '1' / 'model.onnx'),
                                   providers=['CPUExecutionProvider'])
    original = ort.InferenceSession(MODEL, providers=['CPUExecutionProvider'])
    x = np.random.default_rng(1).standard_normal((2, 3, 272, 480)).astype(np.float32)
    both = written.run(None, {'input': x})[0]
    for i in range(2):
        one = original.run(None, {'input': x[i:i + 1]})[0]
        np.testing.assert_allclose(both[i:i + 1], one, atol=1e-4)
    bad = subprocess.run([sys.executable, '-m', 'freespace_seg', 'triton-repo', str(out),
                          '--model', MODEL, '--plan', str(tmp_path / 'missing.plan')],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and 'TensorRT plan not found' in bad.stdout


@needs_server
def test_the_real_server_parses_the_written_repository(tmp_path):
    """
    The bundled tritonserver reads triton-repo's config.pbtxt and gets to its backend.

    It has no onnxruntime backend, so loading stops there; a config it cannot parse stops
    earlier ('failed to read text proto'), which this test would catch.
    """
    from freespace_seg.tools.serve import server_command

    out = tmp_path / 'repo'
    done = subprocess.run([sys.executable, '-m', 'freespace_seg', 'triton-repo', str(out),
                           '--model', MODEL, '--kind', 'cpu'],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    argv, env = server_command(server_layout(default_server_env()), str(out),
                               str(tmp_path / 'no_backends'), *free_ports(3))
    ran = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    log = ran.stdout + ran.stderr
    assert 'failed to read text proto' not in log
    assert 'loading: freespace_unet:1' in log
    assert "unable to find backend library for backend 'onnxruntime'" in log
