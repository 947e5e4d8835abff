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

"""What a process costs, read from /proc: CPU seconds, faults, RSS."""

import os

import numpy as np


CLK_TCK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


def stats_ms(samples_s):
    """Return p50/p95/max/mean (ms) of a list of seconds, or Nones."""
    if not len(samples_s):
        return {'p50_ms': None, 'p95_ms': None, 'max_ms': None, 'mean_ms': None}
    a = np.asarray(samples_s, np.float64) * 1000.0
    return {'p50_ms': float(np.percentile(a, 50)), 'p95_ms': float(np.percentile(a, 95)),
            'max_ms': float(a.max()), 'mean_ms': float(a.mean())}


def _proc_stat(pid, tid=None):
    path = f'/proc/{pid}/stat' if tid is None else f'/proc/{pid}/task/{tid}/stat'
    try:
        with open(path, 'rb') as f:
            text = f.read().decode()
    except OSError:
        return None
    return text[text.rindex(')') + 2:].split()


def proc_cpu_seconds(pid, tid=None):
    """User + system CPU seconds of a process (all threads), or of its thread ``tid``."""
    fields = _proc_stat(pid, tid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / CLK_TCK


def process_tree(pid):
    """Return ``pid`` and every descendant that is alive now (from /proc/<pid>/task/*/children)."""
    pids, i = [pid], 0
    while i < len(pids):
        p, i = pids[i], i + 1
        try:
            tasks = os.listdir(f'/proc/{p}/task')
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f'/proc/{p}/task/{task}/children') as f:
                    pids += [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                pass
    return pids


def _task_cpu_seconds(pid, tid):
    # schedstat's first field is the thread's run time in nanoseconds; stat's utime + stime
    # count whole clock ticks (10 ms), so a light process reads 0 over a short window.
    try:
        with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return proc_cpu_seconds(pid, tid)


def tree_cpu_reading(pid, descendants=True):
    """
    Return ``{(pid, tid): CPU seconds}`` of every live thread of ``pid`` (None if it is gone).

    With ``descendants``, the threads of its live child processes too. The seconds come
    from /proc/<pid>/task/<tid>/schedstat (nanoseconds) where the kernel has it, else from
    the thread's stat (clock ticks). :func:`cpu_seconds_between` takes two readings.
    """
    out = {}
    for p in process_tree(pid) if descendants else [pid]:
        try:
            tids = [int(t) for t in os.listdir(f'/proc/{p}/task')]
        except (OSError, ValueError):
            if p == pid:
                return None
            continue
        for tid in tids:
            seconds = _task_cpu_seconds(p, tid)
            if seconds is not None:
                out[(p, tid)] = seconds
    return out


def cpu_seconds_between(before, after):
    """
    CPU seconds spent between two :func:`tree_cpu_reading` readings (None if either is None).

    Thread by thread: a thread started in between counts from zero; a thread that ended in
    between loses what it ran after ``before`` (it cannot be read any more), and never makes
    the sum go down.
    """
    if before is None or after is None:
        return None
    return sum(max(0.0, s - before.get(key, 0.0)) for key, s in after.items())


def thread_cpu_seconds(pid):
    """
    Return ``{tid: (name, cpu_seconds)}`` for every thread of process ``pid`` ({} if gone).

    ``name`` is the thread's operating-system name (``comm``; ``main`` for the thread whose
    tid is ``pid``); CPU is user + system, from /proc/<pid>/task/<tid>/stat.
    """
    try:
        tids = os.listdir(f'/proc/{pid}/task')
    except OSError:
        return {}
    out = {}
    for tid in map(int, tids):
        try:
            with open(f'/proc/{pid}/task/{tid}/comm') as f:
                name = f.read().strip()
        except OSError:
            continue  # the thread ended
        seconds = proc_cpu_seconds(pid, tid)
        if seconds is not None:
            out[tid] = ('main' if tid == pid else name, seconds)
    return out


def thread_cpu_percent(before, after, wall):
    """
    CPU % (100 = one core) of each thread between two :func:`thread_cpu_seconds` readings.

    Return ``[[name, percent], ...]``, busiest first, for the threads alive at both.
    """
    rows = [[after[tid][0], 100.0 * (after[tid][1] - before[tid][1]) / wall]
            for tid in after if tid in before]
    return sorted(rows, key=lambda r: -r[1])


def proc_minor_faults(pid):
    """Minor page faults of a process so far (a fresh page touched: about 1 per 4 KiB)."""
    fields = _proc_stat(pid)
    return None if fields is None else int(fields[7])


def system_busy_seconds():
    """CPU seconds all cores spent busy (not idle or iowait) since boot, from /proc/stat."""
    try:
        with open('/proc/stat') as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / CLK_TCK


def proc_rss_mb(pid):
    """Resident set size (VmRSS) of a process in MiB, or None."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _other_cpu_percent(busy0, own_cpu, wall):
    busy1 = system_busy_seconds()
    if busy0 is None or busy1 is None:
        return None
    return 100.0 * ((busy1 - busy0) - own_cpu) / wall


def _ms_list(seconds):
    return [round(s * 1000.0, 3) for s in seconds]
