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
A statistical profiler of every Python thread of this process, with no dependencies.

py-spy cannot attach in some containers (ptrace is refused; here it recorded 0 samples and
hundreds of errors), and cProfile sees only the thread that started it, while the node does
its work on a worker thread. :class:`StackSampler` reads every thread's stack
(``sys._current_frames``) every ``interval`` seconds from a daemon thread and counts, per
function, the samples where it was running (self) and where it was on the stack (total).
A thread blocked in C code that released the GIL (ONNX Runtime's ``run``, ``cv2`` calls)
counts against the Python function that called it, which is what one wants to know. Samples
of threads that were only waiting (a leaf frame in :data:`IDLE_FUNCTIONS`: condition
variables, rclpy's executor wait) are counted apart; a C call that blocks straight from other
code (``time.sleep`` in a loop) counts as busy in its caller.

Set ``FREESPACE_SEG_PROFILE=<file>`` and ``segmentation_node`` samples itself from start to
exit and writes the Markdown report there (``python -m freespace_seg bench --profile``
does that for its node processes).
"""

import collections
import os
import sys
import threading
import time

from freespace_seg.common.markdown import number, table

#: leaf functions of threads that only wait (executor waits, condition variables, sleeps)
IDLE_FUNCTIONS = frozenset({
    'wait', 'acquire', 'sleep', 'select', 'poll', 'epoll', '_wait_for_ready_callbacks',
    'wait_for_ready_callbacks', 'spin_once', 'get', 'join', 'readline', 'accept'})


def _label(code):
    path = code.co_filename
    short = path
    marker = os.sep + 'freespace_seg' + os.sep
    if marker in path:
        short = 'freespace_seg/' + path.rsplit(marker, 1)[1]
    elif 'site-packages' + os.sep in path:
        short = path.rsplit('site-packages' + os.sep, 1)[1]
    return f'{code.co_name} ({short}:{code.co_firstlineno})'


class StackSampler:
    """
    Sample every thread's Python stack every ``interval`` s; see the module.

    ``threads``, a collection of thread idents, limits the samples to those threads (other
    threads of the process, such as ones left over from a library, are then not counted).
    """

    def __init__(self, interval=0.005, threads=None):
        if interval <= 0:
            raise ValueError(f'interval must be > 0, got {interval}')
        self.interval = float(interval)
        #: thread idents to sample (``None``: every thread but the sampler's own)
        self.threads = None if threads is None else frozenset(threads)
        self.self_counts = collections.Counter()
        self.total_counts = collections.Counter()
        self.samples = 0
        self.idle_samples = 0
        self._stop = threading.Event()
        self._thread = None
        self._started = None
        self.elapsed = 0.0

    def start(self):
        """Start sampling in a daemon thread; returns self."""
        if self._thread is not None:
            raise RuntimeError('the sampler is already running')
        self._stop.clear()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name='stack_sampler', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop sampling (idempotent)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5.0)
            self._thread = None
            self.elapsed += time.monotonic() - self._started

    def _run(self):
        own = threading.get_ident()
        while not self._stop.wait(self.interval):
            self.sample(exclude=own)

    def sample(self, exclude=None):
        """Take one sample of every thread (or of :attr:`threads`) except ``exclude``."""
        for ident, frame in sys._current_frames().items():
            if ident == exclude or (self.threads is not None and ident not in self.threads):
                continue
            if frame.f_code.co_name in IDLE_FUNCTIONS:
                self.idle_samples += 1
                continue
            self.samples += 1
            self.self_counts[_label(frame.f_code)] += 1
            seen = set()
            while frame is not None:
                label = _label(frame.f_code)
                if label not in seen:
                    seen.add(label)
                    self.total_counts[label] += 1
                frame = frame.f_back

    def report(self, top=25, title='Profile'):
        """Return a Markdown report: the ``top`` functions by self samples, with totals."""
        n = max(1, self.samples)
        lines = [f'# {title}', '',
                 f'{self.samples} busy samples and {self.idle_samples} idle ones (threads '
                 f'waiting), one every {1000 * self.interval:g} ms of every thread over '
                 f'{self.elapsed:.1f} s. self: the function was running (or was in C code it '
                 'called); total: it was on the stack. Percent of busy samples.', '']
        lines += table(('function', 'self %', 'total %'), [
            (f'`{label}`', number(100.0 * count / n, 1),
             number(100.0 * self.total_counts[label] / n, 1))
            for label, count in self.self_counts.most_common(top)])
        return '\n'.join(lines) + '\n'

    def write(self, path, top=25, title='Profile'):
        """Write :meth:`report` to ``path``."""
        with open(path, 'w') as f:
            f.write(self.report(top=top, title=title))


def name_native_thread(name):
    """
    Give the calling thread ``name`` (at most 15 bytes) as its operating-system name.

    ``top -H``, ``htop``, ``perf`` and ``bench``'s CPU per thread then show it; Python's own
    thread names stay inside the interpreter. Linux only (``/proc/self/task/<tid>/comm``);
    elsewhere, or when /proc refuses, it does nothing. Return whether the name was set.
    """
    tid = threading.get_native_id()
    try:
        with open(f'/proc/self/task/{tid}/comm', 'w') as f:
            f.write(name.encode()[:15].decode(errors='ignore'))
    except OSError:
        return False
    return True


def profile_from_environment(title):
    """
    Start a :class:`StackSampler` if ``FREESPACE_SEG_PROFILE`` names a file; return a finisher.

    Call the returned function at exit: it stops the sampler and writes the report (a no-op
    when the variable is unset).
    """
    path = os.environ.get('FREESPACE_SEG_PROFILE')
    if not path:
        return lambda: None
    sampler = StackSampler().start()

    def finish():
        sampler.stop()
        try:
            sampler.write(path, title=title)
        except OSError as e:
            print(f'profile: could not write {path}: {e}', file=sys.stderr)
    return finish
