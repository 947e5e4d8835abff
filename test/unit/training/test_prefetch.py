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

"""The next batch made in a background thread: the same batches and checkpoints as without."""

import importlib
import threading

import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
loop = importlib.import_module('freespace_seg.training.loop')
prefetch = importlib.import_module('freespace_seg.training.prefetch')
unet = importlib.import_module('freespace_seg.training.model')

pytestmark = pytest.mark.usefixtures('torch_one_thread')


def test_prefetcher_makes_the_next_batch_in_its_thread_and_keeps_the_state_before_it():
    counter = {'n': 0}
    made = []

    def make(step):
        made.append((step, threading.current_thread().name))
        counter['n'] += 1
        return step * 10

    fetch = prefetch.Prefetcher(make, lambda: counter['n'])
    assert fetch.get(1, 2) == 10            # the first batch: made when asked for
    assert fetch.state() == 1               # as after batch 1, whether batch 2 is done or not
    assert fetch.get(2, 3) == 20 and fetch.state() == 2
    assert fetch.get(3) == 30 and fetch.state() == 3   # the last: nothing more under way
    assert made[0] == (1, threading.current_thread().name)
    assert [s for s, _ in made] == [1, 2, 3]
    assert all(name.startswith('batches') for _, name in made[1:])
    fetch.get(4, 5)
    with pytest.raises(RuntimeError, match='step 5 is being made'):
        fetch.get(6)
    fetch.close()

    off = prefetch.Prefetcher(make, lambda: counter['n'], enabled=False)
    assert off.get(7, 8) == 70 and off.get(8, 9) == 80 and off.state() == counter['n']
    assert made[-1] == (8, threading.current_thread().name)
    off.close()


def test_prefetcher_hands_over_an_error_and_close_waits_for_a_dropped_batch():
    def make(step):
        if step == 2:
            raise ValueError('no frames')
        return step

    fetch = prefetch.Prefetcher(make, lambda: None)
    fetch.get(1, 2)
    with pytest.raises(ValueError, match='no frames'):
        fetch.get(2, 3)
    fetch.close()
    fetch = prefetch.Prefetcher(make, lambda: None)
    fetch.get(3, 2)
    fetch.close()     # the failed batch under way is dropped, its error with it
    assert fetch.pending is None


def _frames(n, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, 32, 48), dtype=torch.uint8, generator=gen)
    y = (torch.rand(n, 32, 48, generator=gen) > 0.5).to(torch.uint8)
    y[:, :3] = 255   # a pad band
    return x, y


def _run(tmp_path, name, **extra):
    tx, ty = _frames(10, 0)
    vx, vy = _frames(4, 1)
    torch.manual_seed(0)
    net = unet.build_model(widths=(8, 8, 16, 16, 16))
    hist = loop.train_model(net, tx, ty, vx, vy, steps=12, batch_size=3, lr=5e-3, seed=2,
                            augment_data='strong', val_every=4, log_every=0,
                            progress_bar=False, log=lambda m: None, low_res_steps=3,
                            work_dir=str(tmp_path / name), **extra)
    return net, hist


def test_training_with_prefetch_is_the_run_without_it_and_resumes_the_same(
        tmp_path, monkeypatch):
    threads = []
    real = loop.prepare_batch

    def spy(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)
    monkeypatch.setattr(loop, 'prepare_batch', spy)
    plain, h_plain = _run(tmp_path, 'plain')   # on the CPU: no prefetch unless asked
    assert threads == [threading.current_thread().name] * 12
    del threads[:]
    ahead, h_ahead = _run(tmp_path, 'ahead', prefetch=True)
    assert len(threads) == 12 and all(name.startswith('batches') for name in threads[1:])
    assert h_ahead['loss'] == h_plain['loss']
    for key, value in plain.state_dict().items():
        assert torch.equal(value, ahead.state_dict()[key]), key

    # Stopped after step 6 (its batch 7 already under way): last.pt holds the generator and
    # sampler of a run without prefetch, and the resumed run ends where the whole one did.
    _run(tmp_path, 'stop_plain', prefetch=False, stop_after=6)
    _run(tmp_path, 'stop_ahead', prefetch=True, stop_after=6)
    plain_state = torch.load(str(tmp_path / 'stop_plain' / 'last.pt'))['resume']
    state = torch.load(str(tmp_path / 'stop_ahead' / 'last.pt'))['resume']
    assert torch.equal(state['generator'], plain_state['generator'])
    assert torch.equal(state['sampler']['order'], plain_state['sampler']['order'])
    assert state['sampler']['cursor'] == plain_state['sampler']['cursor']
    again, h_again = _run(tmp_path, 'stop_ahead', prefetch=True, resume=state)
    assert h_again['loss'] == h_plain['loss']
    for key, value in plain.state_dict().items():
        assert torch.equal(value, again.state_dict()[key]), key
