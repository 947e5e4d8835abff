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
The next step's batch, made in a background thread while the device trains on this one.

A GPU step waits on the CPU for its batch: the gather and, above all, the augmentation's
random numbers, which come from one CPU generator (``bench-train-data`` measures it). One
thread that makes batch t+1 while the main thread drives step t on the device hides that
wait, and keeps every random number: the batches are made one at a time, in step order,
with the same generators, so they are the batches of a run without it.

A checkpoint written between two steps has to hold the generators and the sampler as they
were after the last batch handed out, not in the middle of the next one:
:meth:`Prefetcher.state` returns that state, taken before the next batch was started.
"""

from concurrent.futures import ThreadPoolExecutor


class Prefetcher:
    """
    Hand out each step's batch, made one step ahead in a background thread.

    ``make(step)`` makes the batch of ``step``; ``snapshot()`` returns the state of what
    ``make`` advances (generators, sampler). Without ``enabled`` every batch is made when it
    is asked for, in the calling thread. :meth:`close` waits for a batch being made.
    """

    def __init__(self, make, snapshot, enabled=True):
        self.make = make
        self.snapshot = snapshot
        self.pool = ThreadPoolExecutor(1, thread_name_prefix='batches') if enabled else None
        self.pending = None   # (step, future) of the batch being made
        self.before = None    # snapshot() taken before that batch was started

    def get(self, step, next_step=None):
        """Return the batch of ``step``; start making ``next_step``'s (None: no more)."""
        if self.pending is not None:
            made, future = self.pending
            self.pending = None
            if made != step:
                future.cancel()
                raise RuntimeError(f'asked for the batch of step {step}, but the one of step '
                                   f'{made} is being made')
            batch = future.result()
        else:
            batch = self.make(step)
        self.before = None
        if self.pool is not None and next_step is not None:
            self.before = self.snapshot()
            self.pending = (next_step, self.pool.submit(self.make, next_step))
        return batch

    def state(self):
        """Return ``snapshot()`` as it was after the last batch handed out."""
        return self.before if self.before is not None else self.snapshot()

    def close(self):
        """Wait for a batch being made (dropping it) and end the thread."""
        if self.pending is not None:
            self.pending[1].cancel()
            self.pending[1].exception()   # waits; its error, if any, no longer matters
            self.pending = None
        if self.pool is not None:
            self.pool.shutdown(wait=True)
