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
The ONNX latency timer: one bare ONNX Runtime run of a model, timed on the CPU.

:func:`timing_session` opens the model with a fixed random input of its static shape,
:func:`timed_runs` times runs of it, and :func:`measure_latency` gives the median, mean and
90th percentile that model cards record (``eval``, ``train``); :func:`interleaved_runs`
times several models (or thread counts) in turn, round after round, for the commands that
compare them (``tradeoff``, ``prune``). Preprocessing and postprocessing are not included;
``bench`` times the whole path.
"""

import statistics
import time

import numpy as np


def timing_session(model_path, threads):
    """
    Return an ONNX Runtime CPU session of a model and a fixed random feed for it.

    ``threads`` intra-op threads, one inter-op thread, full graph optimization. The feed has
    the model's input shape (dynamic dimensions as 1) and type (float32, float16 or uint8).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    session = ort.InferenceSession(model_path, sess_options=opts,
                                   providers=['CPUExecutionProvider'])
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    rng = np.random.default_rng(0)
    if 'uint8' in inp.type:
        x = rng.integers(0, 256, size=shape).astype(np.uint8)
    else:
        dtype = np.float16 if 'float16' in inp.type else np.float32
        x = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    return session, {inp.name: x}


def measure_latency(model_path, threads=2, runs=50, warmup=10):
    """
    Median (``p50_ms``), mean and 90th percentile wall time (ms) of one bare ONNX Runtime run.

    The keys are those of every other timing result of the package (``p50_ms``, ``p90_ms``,
    ``mean_ms``: bench, tradeoff, the node's diagnostics).

    The input is a fixed random tensor of the model's static input shape
    (:func:`timing_session`); preprocessing and postprocessing are not included.
    """
    session, feed = timing_session(model_path, threads)
    timed_runs(session, feed, warmup)
    times = sorted(timed_runs(session, feed, max(int(runs), 1)))
    return {
        'p50_ms': round(statistics.median(times), 2),
        'mean_ms': round(statistics.fmean(times), 2),
        'p90_ms': round(times[min(len(times) - 1, int(0.9 * len(times)))], 2),
        'runs': len(times),
        'threads': int(threads),
        'shape': [int(d) for d in next(iter(feed.values())).shape],
    }


def timed_runs(session, feed, runs):
    """Run ``session`` on ``feed`` ``runs`` times; return each run's wall time in ms."""
    times = []
    for _ in range(int(runs)):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t0) * 1000.0)
    return times


def interleaved_runs(jobs, runs, warmup=10, rounds=1, desc=None):
    """
    Time several (model path, threads) ``jobs`` in turn; return each job's times per round.

    Every job gets its session (:func:`timing_session`) and ``warmup`` untimed runs first.
    Then ``rounds`` times, every job in turn runs two untimed runs (to refill the caches the
    others used) and its share of ``runs`` (``ceil(runs / rounds)``). On a shared machine a
    burst of load then touches every job alike, so the ratios between them stay fair.
    Returns, per job, a list of ``rounds`` lists of wall times in ms. ``desc``: a progress
    bar with that label.
    """
    from freespace_seg.common.progress import progress

    sessions = [timing_session(path, threads) for path, threads in jobs]
    for session, feed in sessions:
        timed_runs(session, feed, warmup)
    rounds = max(int(rounds), 1)
    per_round = max(1, -(-max(int(runs), 1) // rounds))
    samples = [[] for _ in sessions]
    turns = [(r, i) for r in range(rounds) for i in range(len(sessions))]
    if desc:
        turns = progress(turns, total=len(turns), desc=desc)
    for _, i in turns:
        session, feed = sessions[i]
        timed_runs(session, feed, 2)
        samples[i].append(timed_runs(session, feed, per_round))
    return samples
