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

"""The InOrderGate of segmentation_node's workers: outputs leave in arrival order."""

import threading

from freespace_seg.nodes.ros_util import InOrderGate
import pytest

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it


# -- the ordering rule, driven step by step ---------------------------------------------------

def test_a_frame_finishing_after_a_later_one_is_dropped_and_counted():
    gate = InOrderGate()
    out = []
    assert gate.publish(1, lambda: out.append(1))
    # Frame 3 (one worker) finishes before frame 2 (the other): 3 goes out, 2 is late.
    assert gate.publish(3, lambda: out.append(3))
    assert not gate.publish(2, lambda: out.append(2))
    assert gate.late == 1
    assert gate.publish(4, lambda: out.append(4))
    # The same frame never goes out twice, nor an older one after a newer.
    assert not gate.publish(4, lambda: out.append(4))
    assert not gate.publish(1, lambda: out.append(1))
    assert out == [1, 3, 4] and gate.late == 3


def test_the_ordering_rule_with_two_worker_threads_stepped():
    """Worker a took frame 7, worker b frame 8; b finishes first, then a: a's is dropped."""
    gate = InOrderGate()
    out, result = [], {}
    b_published = threading.Event()

    def worker_a():
        assert b_published.wait(timeout=10)
        result['a'] = gate.publish(7, lambda: out.append(7))

    def worker_b():
        result['b'] = gate.publish(8, lambda: out.append(8))
        b_published.set()

    threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert result == {'a': False, 'b': True}
    assert out == [8] and gate.late == 1
