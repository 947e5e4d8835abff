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

"""`tools/room_start_views.py`: a closed-loop room seen from its start pose, model and truth."""

import re

import cv2
import pytest
from support import load_tool


def _tool():
    return load_tool('room_start_views')


def test_one_row_per_heading_and_the_counts_of_both_grids(tmp_path, capsys):
    out = tmp_path / 'views.png'
    _tool().main(['--seed', '1', '--headings', '0,180', '--out', str(out)])
    img = cv2.imread(str(out))
    # Two rows of the 320x180 image beside two 4 m grids of 3-pixel cells (240 px).
    assert img is not None
    assert img.shape[0] >= 2 * 240 and img.shape[1] >= 320 + 2 * 240
    text = capsys.readouterr().out
    lines = [line for line in text.splitlines() if ' deg: ' in line]
    assert [line.split(' deg')[0] for line in lines] == ['0', '180']
    for line in lines:
        model_free, model_occ, truth_free, truth_occ = (
            int(v) for v in re.search(r'model grid (\d+) free / (\d+) occupied cells, '
                                      r'truth grid (\d+) / (\d+)', line).groups())
        assert truth_free > 0 and model_free > 0, line


def test_headings_that_are_not_numbers_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        _tool().main(['--headings', 'left', '--out', str(tmp_path / 'v.png')])
    assert err.value.code == 2
    assert '--headings must be numbers of degrees' in capsys.readouterr().err
