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

"""Training on several ranks: ``torchrun ... -m freespace_seg train`` with gloo on the CPU."""

import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading

from freespace_seg.perception.model_card import load_card
import pytest
from support import REPO

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
pytest.importorskip('onnxruntime', reason='the export checks need onnxruntime')
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip('this torch has no torch.distributed with gloo', allow_module_level=True)

#: starting torch in three processes takes a while on a busy 2-core machine
TIMEOUT = 600


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _rank(rank, world, port, out_dir):
    """One rank of :func:`test_ranks_take_identical_steps`: train, write its step digests."""
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    from freespace_seg.training import distributed, loop
    from freespace_seg.training.model import build_model

    ranks = distributed.from_environment(torch.device('cpu'), timeout_s=120)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 255, (8, 3, 32, 48), dtype=torch.uint8, generator=gen)
    y = torch.randint(0, 2, (8, 32, 48), dtype=torch.uint8, generator=gen)
    torch.manual_seed(0)
    model = build_model(widths=(4, 8, 8, 8, 8))
    digests = []

    def on_step(step, m):
        h = hashlib.sha256()
        # The weights; BatchNorm's running statistics are rank 0's from the next forward on.
        for t in m.parameters():
            h.update(t.detach().cpu().numpy().tobytes())
        digests.append(h.hexdigest())

    loop.train_model(model, x, y, x[:2], y[:2], steps=4, batch_size=2, lr=1e-2, seed=3,
                     val_every=2, log_every=0, progress_bar=False, log=lambda m: None,
                     ranks=ranks, on_step=on_step, augment_data='full')
    with open(os.path.join(out_dir, f'rank{rank}.txt'), 'w') as f:
        f.write('\n'.join(digests))
    # Both ranks are done before either leaves the group: a rank that tears gloo down while
    # its peer still talks to it can abort at exit ("terminate called without an active
    # exception", once in a fresh clone).
    ranks.barrier()
    ranks.close()


def test_ranks_take_identical_steps(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_rank, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    a = (tmp_path / 'rank0.txt').read_text().split()
    b = (tmp_path / 'rank1.txt').read_text().split()
    # Different slices and augmentation on each rank, averaged gradients: the same weights
    # after every step, and the weights do change from step to step.
    assert len(a) == 4 and a == b and len(set(a)) == 4


def _torchrun(args, nproc=2, **kw):
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone',
           f'--nproc_per_node={nproc}', '-m', 'freespace_seg', 'train', *args]
    env = dict(os.environ, OMP_NUM_THREADS='1')
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kw)


def _tiny_args(tmp_path, steps=4):
    return ['--render', '8', '--render-val', '2', '--render-size', '96x54', '--input-size',
            '96x64', '--widths', '4,8,8,8,8', '--steps', str(steps), '--batch-size', '2',
            '--val-every', '2', '--log-every', '1', '--threads', '1', '--latency-runs', '2',
            '--render-cache', str(tmp_path / 'cache'), '--out', str(tmp_path / 'm.onnx'),
            '--work-dir', str(tmp_path / 'run')]


def test_torchrun_trains_stops_and_resumes_on_two_ranks(tmp_path):
    proc = _torchrun(_tiny_args(tmp_path) + ['--time-limit', '0'])
    out, _ = proc.communicate(timeout=TIMEOUT)
    # Rank 0 says how to go on; torchrun reports the ranks' exit status 3 as a failure.
    assert 'stopped by --time-limit after step 1 of 4' in out, out
    assert 'torchrun --nproc_per_node 2 -m freespace_seg train --resume' in out, out
    state = torch.load(str(tmp_path / 'run' / 'last.pt'), map_location='cpu')
    assert state['resume']['world_size'] == 2 and len(state['resume']['aug_generators']) == 2
    assert out.count('train: 8 training and 2 validation frames') == 1, out   # rank 0 only

    proc = _torchrun(['--resume', str(tmp_path / 'run'), '--latency-runs', '2'])
    out, _ = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, out
    training = load_card(str(tmp_path / 'm.onnx')).raw['training']
    assert training['resumed_after_steps'] == [1] and training['steps'] == 4
    dist = training['distributed']
    assert dist['world_size'] == 2 and dist['backend'] == 'gloo'
    assert dist['global_batch_size'] == 4 and 'as given' in dist['learning_rate_scaling']

    # A single process cannot resume a two-rank run.
    with pytest.raises(SystemExit, match='2 ranks, not 1'):
        from freespace_seg import cli
        state['resume']['step'] = 1
        torch.save(state, str(tmp_path / 'run' / 'last.pt'))
        cli.main(['train', '--resume', str(tmp_path / 'run'), '--latency-runs', '2'])


def _rank_pid(parent, rank):
    """Return the pid of the process under ``parent`` whose environment says RANK=rank."""
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{name}/environ', 'rb') as f:
                env = f.read().split(b'\0')
        except OSError:
            continue
        if ppid == parent and f'RANK={rank}'.encode() in env:
            return int(name)
    return None


def test_a_failing_rank_ends_the_run_with_a_clear_error(tmp_path):
    proc = _torchrun(_tiny_args(tmp_path, steps=100000))
    lines = []
    training = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith('step 2/'):
                training.set()
        training.set()

    threading.Thread(target=read, daemon=True).start()
    assert training.wait(TIMEOUT) and proc.poll() is None, ''.join(lines)
    pid = _rank_pid(proc.pid, 1)
    assert pid is not None, 'rank 1 not found under torchrun'
    os.kill(pid, signal.SIGKILL)
    rc = proc.wait(TIMEOUT)
    out = ''.join(lines)
    assert rc != 0
    # torchrun names the rank that failed and how.
    assert 'rank: 1' in out and 'SIGKILL' in out, out[-3000:]
