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

"""common.profiling: the stack sampler sees worker threads and tells busy from idle."""

import threading
import time

from freespace_seg.common import profiling
from freespace_seg.common.profiling import profile_from_environment, StackSampler
import pytest


def busy_worker_function(stop):
    x = 0
    while not stop.is_set():
        x += sum(i * i for i in range(2000))
    return x


def wait_idly(predicate, timeout=60.0):
    """Return whether ``predicate()`` became true within ``timeout`` s, waiting in between."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            return False
        threading.Event().wait(0.01)
    return True


def test_sampler_counts_a_busy_worker_thread_and_not_a_waiting_one():
    stop = threading.Event()
    idle = threading.Event()
    workers = [threading.Thread(target=busy_worker_function, args=(stop,)),
               threading.Thread(target=idle.wait)]
    for w in workers:
        w.start()
    # Only these two threads: other threads of the test process (left by earlier tests or
    # by a library) must not count.
    sampler = StackSampler(interval=0.002, threads=[w.ident for w in workers]).start()
    try:
        # Until it has sampled the threads 50 times, waiting meanwhile (a busy poll or
        # time.sleep would count as busy).
        assert wait_idly(lambda: sampler.samples >= 50 and sampler.idle_samples >= 50)
    finally:
        sampler.stop()
        stop.set()
        idle.set()
        for w in workers:
            w.join()
    assert sampler.samples > 20 and sampler.idle_samples > 20
    totals = {label.split(' ')[0]: n for label, n in sampler.total_counts.items()}
    # The busy worker is the only sampled thread that runs: its function is on the stack in
    # (nearly) every busy sample, the exceptions being a thread caught on its way into its
    # target; the other worker waits, which is idle.
    assert totals.get('busy_worker_function', 0) >= 0.9 * sampler.samples
    report = sampler.report(top=5, title='t')
    assert report.startswith('# t') and '| function | self % | total % |' in report
    assert 'busy_worker_function' in report or '<genexpr>' in report
    with pytest.raises(ValueError):
        StackSampler(interval=0)


def test_environment_variable_switches_it_on(tmp_path, monkeypatch):
    monkeypatch.delenv('FREESPACE_SEG_PROFILE', raising=False)
    assert profile_from_environment('x')() is None          # off: a no-op
    out = tmp_path / 'p.md'
    monkeypatch.setenv('FREESPACE_SEG_PROFILE', str(out))
    started = []

    class Recorded(StackSampler):

        def start(self):
            started.append(self)
            return super().start()
    monkeypatch.setattr(profiling, 'StackSampler', Recorded)
    finish = profile_from_environment('my node')
    assert len(started) == 1
    stop = threading.Event()
    t = threading.Thread(target=busy_worker_function, args=(stop,))
    t.start()
    # Until the sampler has seen the worker busy (other threads of the process may be
    # sampled too: this sampler samples all of them).
    assert wait_idly(lambda: sum(n for label, n in started[0].total_counts.items()
                                 if label.startswith('busy_worker_function ')) >= 10)
    stop.set()
    t.join()
    finish()
    report = out.read_text()
    assert report.startswith('# my node'), report
    # The worker's function, or the generator expression it runs, is at the top.
    assert 'busy_worker_function' in report or '<genexpr>' in report, report


def test_a_named_thread_shows_its_name_and_cpu_in_proc():
    import os

    from freespace_seg.tools.bench.procstat import thread_cpu_percent, thread_cpu_seconds

    if not os.path.isdir('/proc/self/task'):
        pytest.skip('no /proc: thread names are a Linux feature')
    named, stop = threading.Event(), threading.Event()
    result = {}

    def work():
        result['set'] = profiling.name_native_thread('a_very_long_thread_name')
        result['tid'] = threading.get_native_id()
        named.set()
        busy_worker_function(stop)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert named.wait(10.0)
    before = thread_cpu_seconds(os.getpid())
    used = 0.0
    while used < 0.05:  # until the thread has run at least 50 ms of CPU (5 clock ticks)
        time.sleep(0.05)
        after = thread_cpu_seconds(os.getpid())
        used = after[result['tid']][1] - before[result['tid']][1]
    stop.set()
    thread.join()
    assert result['set'] is True
    assert after[result['tid']][0] == 'a_very_long_thr'  # the kernel keeps 15 bytes
    assert after[os.getpid()][0] == 'main'
    rows = thread_cpu_percent(before, after, 1.0)
    assert ['a_very_long_thr', pytest.approx(100.0 * used)] in rows
    assert rows == sorted(rows, key=lambda r: -r[1])


def test_tree_cpu_reading_counts_a_few_milliseconds_and_ended_threads_never_subtract():
    """The fleet bench's server reading: 3 ms of CPU show (stat's 10 ms ticks can read 0)."""
    import os

    from freespace_seg.tools.bench.procstat import cpu_seconds_between, tree_cpu_reading

    if not os.path.isdir('/proc/self/task'):
        pytest.skip('no /proc: per-thread CPU is read from Linux /proc')
    assert cpu_seconds_between(None, {}) is None and cpu_seconds_between({}, None) is None
    before = tree_cpu_reading(os.getpid())
    assert before and all(s >= 0.0 for s in before.values())
    spun, release = threading.Event(), threading.Event()
    tid = {}

    def spin():
        tid['id'] = threading.get_native_id()
        start = time.thread_time()
        while time.thread_time() - start < 0.003:
            pass
        spun.set()
        release.wait(30.0)

    alive = threading.Thread(target=spin, daemon=True)
    alive.start()
    assert spun.wait(30.0)
    after = tree_cpu_reading(os.getpid())
    release.set()
    alive.join()
    spent = after[(os.getpid(), tid['id'])]
    assert spent >= 0.0025, after   # the new thread counts from zero
    assert cpu_seconds_between(before, after) >= spent
    # A thread that ended between two readings drops out; the sum does not go down. The
    # kernel removes its task entry a moment after join() returns: wait for that.
    deadline = time.monotonic() + 10.0
    later = tree_cpu_reading(os.getpid())
    while (os.getpid(), tid['id']) in later and time.monotonic() < deadline:
        time.sleep(0.005)
        later = tree_cpu_reading(os.getpid())
    assert (os.getpid(), tid['id']) not in later
    assert cpu_seconds_between(after, later) >= 0.0
    assert cpu_seconds_between(after, {}) == 0.0
