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
``python -m freespace_seg serve``: a local KServe V2 (Triton) inference server for a model.

Runs the ``tritonserver`` binary that the ``nvidia-pytriton`` wheel ships, from its own
environment (``.venv-serve``, made by ``tools/bootstrap.sh --test``, or ``--server-env``):
PyTriton pins numpy < 2, the project venv has numpy 2. The model is served by Triton's Python
backend, whose model (:mod:`freespace_seg.tools.triton_python_model`) runs the ONNX file with ONNX
Runtime on the CPU, with dynamic batching over concurrent requests. Real GPU servers run the
repository that ``triton-repo`` writes instead.

Three things make the bundled server answer correctly outside PyTriton (docs/triton.md):

* ``LD_LIBRARY_PATH`` holds the wheel's ``nvidia_pytriton.libs`` (``libcudart`` is linked even
  without a GPU) and the server interpreter's own ``libpython3.X.so`` (not the system one:
  a libpython older than its standard library fails inside ``multiprocessing``);
* the backend stub for the server interpreter's Python version is copied next to the Python
  backend;
* the server environment's ``bin`` comes first on ``PATH``: the stub's embedded interpreter
  ignores ``PYTHONPATH`` and finds its site-packages from the first ``python3`` on ``PATH``.
  Left to a numpy 2 install, the stub (built against numpy 1) reads zeros and returns empty
  tensors.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from freespace_seg.perception.model_card import ModelCardError
from freespace_seg.tools.triton_repo import load_model_and_card, RepoError, write_model

#: the server venv's probe (pytriton's folder, not imported: that is slow; libpython's
#: folder; the Python version)
_PROBE = ('import importlib.util, os, sys, sysconfig; '
          "print(os.path.dirname(importlib.util.find_spec('pytriton').origin)); "
          "print(sysconfig.get_config_var('LIBDIR')); "
          "print('%d.%d' % sys.version_info[:2])")


def free_ports(n):
    """Return ``n`` TCP ports on 127.0.0.1 that were free a moment ago (for servers in tests)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(('127.0.0.1', 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class ServeError(RuntimeError):
    """The server cannot start; the message says why and what to do."""


#: the checkout this module runs from: freespace_seg/tools/serve.py -> the repository root
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_server_env():
    """
    Return the server venv: $FREESPACE_SEG_SERVE_ENV, else ``.venv-serve`` in the checkout.

    ``tools/bootstrap.sh --test`` makes ``.venv-serve`` at the repository root. Run from an
    installed package (colcon's install/ tree), the root is not the checkout; then a
    ``.venv-serve`` in the current directory is used when there is one.
    """
    env = os.environ.get('FREESPACE_SEG_SERVE_ENV')
    if env:
        return env
    here = os.path.join(CHECKOUT, '.venv-serve')
    if not os.path.isdir(here) and os.path.isdir('.venv-serve'):
        return os.path.abspath('.venv-serve')
    return here


def server_layout(env):
    """
    Locate the tritonserver binary and what it needs in the server venv ``env``.

    Returns a dict: ``binary``, ``libs`` (the wheel's bundled libraries), ``python_backend``,
    ``stub`` (for the venv's Python version), ``libpython_dir``, ``bin`` (the venv's bin).
    Raises :class:`ServeError` with the fix when something is missing.
    """
    python = os.path.join(env, 'bin', 'python')
    if not os.path.isfile(python):
        raise ServeError(f'no server environment at {env}: create it with '
                         'tools/bootstrap.sh --test (or set FREESPACE_SEG_SERVE_ENV / '
                         '--server-env to a venv with nvidia-pytriton and onnxruntime)')
    probe = subprocess.run([python, '-c', _PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        raise ServeError(f'{env} has no usable nvidia-pytriton ({probe.stderr.strip()[-300:]}); '
                         'pip install -r requirements/serve.txt there')
    pytriton_dir, libdir, version = probe.stdout.split()
    root = os.path.join(pytriton_dir, 'tritonserver')
    layout = {
        'binary': os.path.join(root, 'bin', 'tritonserver'),
        'libs': os.path.join(os.path.dirname(pytriton_dir), 'nvidia_pytriton.libs'),
        'python_backend': os.path.join(root, 'backends', 'python'),
        'stub': os.path.join(root, 'python_backend_stubs', version,
                             'triton_python_backend_stub'),
        'libpython_dir': libdir,
        'bin': os.path.join(env, 'bin'),
    }
    for key in ('binary', 'stub'):
        if not os.path.isfile(layout[key]):
            raise ServeError(f'the nvidia-pytriton wheel in {env} has no {layout[key]}')
    return layout


def check_ports(ports):
    """Raise :class:`ServeError` naming each port of ``{role: port}`` that is already in use."""
    busy = []
    for role, port in ports.items():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(('0.0.0.0', port))
            except OSError as e:
                busy.append(f'{role} port {port} ({e.strerror})')
    if len(set(ports.values())) != len(ports):
        busy.append(f'the ports must differ, got {ports}')
    if busy:
        raise ServeError('cannot serve: ' + '; '.join(busy) + '; pick free ports with '
                         '--grpc-port/--http-port/--metrics-port')


def prepare(work, model_path, layout, max_batch_size=8, max_queue_delay_us=2000,
            instances=1, threads=0):
    """Write the Python-backend model repository and backend folder under ``work``."""
    model_path, card = load_model_and_card(model_path)
    repo = os.path.join(work, 'models')
    python_model = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'triton_python_model.py')
    write_model(repo, model_path, card, backend='python', max_batch_size=max_batch_size,
                max_queue_delay_us=max_queue_delay_us, instance_count=instances,
                python_model=python_model, parameters={'intra_op_threads': threads})
    backend = os.path.join(work, 'backends', 'python')
    shutil.copytree(layout['python_backend'], backend,
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy2(layout['stub'], backend)
    return card, repo, os.path.join(work, 'backends')


def server_command(layout, repo, backends, grpc_port, http_port, metrics_port, verbose=0):
    """Return ``(argv, env)`` of the tritonserver process."""
    argv = [layout['binary'], f'--model-repository={repo}', f'--backend-directory={backends}',
            f'--grpc-port={grpc_port}', f'--http-port={http_port}',
            f'--metrics-port={metrics_port}', '--allow-gpu-metrics=false',
            f'--log-verbose={verbose}', '--exit-timeout-secs=5']
    env = dict(os.environ)
    env['LD_LIBRARY_PATH'] = os.pathsep.join(
        p for p in (layout['libs'], layout['libpython_dir'], env.get('LD_LIBRARY_PATH')) if p)
    env['PATH'] = layout['bin'] + os.pathsep + env.get('PATH', '')
    env.pop('PYTHONPATH', None)
    env.pop('PYTHONHOME', None)
    return argv, env


def wait_ready(proc, http_port, model, timeout):
    """Wait until the server reports ``model`` ready; raise :class:`ServeError` if it cannot."""
    url = f'http://127.0.0.1:{http_port}/v2/models/{model}/ready'
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServeError(f'tritonserver exited with code {proc.returncode} before the '
                             'model was ready')
        try:
            with urllib.request.urlopen(url, timeout=1.0) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise ServeError(f'model {model} not ready after {timeout:.0f} s')


def add_arguments(parser):
    parser.add_argument('--model', default='', help='ONNX model with its card beside it '
                        '(default: the packaged fp32 model)')
    parser.add_argument('--grpc-port', type=int, default=8001)
    parser.add_argument('--http-port', type=int, default=8000)
    parser.add_argument('--metrics-port', type=int, default=8002)
    parser.add_argument('--max-batch-size', type=int, default=8,
                        help='dynamic batching across clients; 0: none (default 8)')
    parser.add_argument('--max-queue-delay-us', type=int, default=2000,
                        help='longest wait to fill a batch (us, default 2000)')
    parser.add_argument('--instances', type=int, default=1, help='model instances')
    parser.add_argument('--threads', type=int, default=0,
                        help='ONNX Runtime intra-op threads per instance (0: one per core)')
    parser.add_argument('--server-env', default='', help='venv with nvidia-pytriton and '
                        'onnxruntime (default: $FREESPACE_SEG_SERVE_ENV or .venv-serve)')
    parser.add_argument('--ready-timeout', type=float, default=120.0)
    parser.add_argument('--log-verbose', type=int, default=0)


def run(args):
    ports = {'gRPC': args.grpc_port, 'HTTP': args.http_port, 'metrics': args.metrics_port}
    work = tempfile.mkdtemp(prefix='freespace_serve_')
    proc = None
    stop = {'signal': None}

    def on_signal(signum, frame):
        stop['signal'] = signum
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        check_ports(ports)
        layout = server_layout(args.server_env or default_server_env())
        card, repo, backends = prepare(work, args.model, layout, args.max_batch_size,
                                       args.max_queue_delay_us, args.instances, args.threads)
        argv, env = server_command(layout, repo, backends, args.grpc_port, args.http_port,
                                   args.metrics_port, args.log_verbose)
        if stop['signal'] is not None:
            raise ServeError('stopped before the server started')
        # The server's own log goes to stderr; this command's lines go to stdout.
        proc = subprocess.Popen(argv, env=env, stdout=sys.stderr, stderr=sys.stderr,
                                cwd=work)
        if stop['signal'] is None:
            wait_ready(proc, args.http_port, card.name, args.ready_timeout)
            print(f'serving model {card.name} ({card.model_path}) on grpc localhost:'
                  f'{args.grpc_port} (http localhost:{args.http_port}, metrics '
                  f'localhost:{args.metrics_port}); Ctrl-C stops', flush=True)
        code = proc.wait()
        if stop['signal'] is not None:
            print(f'serve: stopped by signal {stop["signal"]}', flush=True)
            return 0
        print(f'serve: tritonserver exited with code {code}', flush=True)
        return 1 if code == 0 else code
    except (ServeError, RepoError, ModelCardError, OSError) as e:
        if stop['signal'] is not None:
            print(f'serve: stopped by signal {stop["signal"]}', flush=True)
            return 0
        print(f'serve: {e}', flush=True)
        return 2
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for s, handler in old.items():
            signal.signal(s, handler)
        shutil.rmtree(work, ignore_errors=True)
