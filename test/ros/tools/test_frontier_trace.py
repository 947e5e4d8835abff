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

"""`tools/frontier_trace.py`: the driver's frontier targets in a closed-loop room, per second."""

import re

import pytest
from support import load_tool

pytestmark = pytest.mark.ros  # a ROS 2 integration test: `pytest -m "not ros"` skips it


def test_rows_every_second_and_a_summary_that_adds_up(capsys):
    # Room 11 with exact masks: the robot drives off at once and picks a frontier target
    # within its first 10 s (the closed loop's lockstep gives the same path on any machine).
    assert load_tool('frontier_trace').main(
        ['--seed', '11', '--minutes', '0.2', '--perception', 'truth', '--every', '2']) == 0
    out = capsys.readouterr().out
    rows = [line.split('|')[1:-1] for line in out.splitlines()
            if re.match(r'\| \d+\.\d\d \|', line)]
    times = [float(r[0]) for r in rows]
    assert times[0] < 0.2 and times[-1] > 9.9
    assert all(1.99 < b - a < 2.06 for a, b in zip(times, times[1:]))
    kinds = {r[6].strip() for r in rows}
    assert kinds <= {'-', 'normal', 'narrow', 'tight'} and 'normal' in kinds
    held = {k: float(s) for k, s in re.findall(r'(\w+) targets: \d+ chosen, ([\d.]+) s held', out)}
    none = float(re.search(r'no target: ([\d.]+) s', out).group(1))
    assert set(held) == {'normal', 'narrow', 'tight'} and held['normal'] > 0.0
    assert sum(held.values()) + none == pytest.approx(12.0, abs=0.1)
    assert re.search(r'room 11: 0 collisions, [\d.]+ m, coverage [\d.]+ %', out)


def test_a_bad_driver_parameter_is_refused_before_the_room_runs(capsys):
    with pytest.raises(SystemExit) as err:
        load_tool('frontier_trace').main(['--driver-param', 'frontier_narrow_room:=0.5'])
    assert err.value.code == 2
    assert 'frontier_narrow_room' in capsys.readouterr().err
