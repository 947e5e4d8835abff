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

"""The one Markdown table and number helper every report uses (freespace_seg.common.markdown)."""

from freespace_seg.common.markdown import number, row, rule, table


def test_row_and_rule():
    assert row(['a', 1, None]) == '| a | 1 | None |'
    assert rule(3) == '|---|---|---|'
    assert rule(2, cell=' --- ') == '| --- | --- |'
    assert rule(3, align=['---', '---:', ':---:']) == '|---|---:|:---:|'


def test_table_is_header_rule_rows():
    assert table(('x', 'y'), [(1, 2), ('a', '')]) == [
        '| x | y |', '|---|---|', '| 1 | 2 |', '| a |  |']
    assert table(['only'], []) == ['| only |', '|---|']


def test_number():
    assert number(1.25, 1) == '1.2'  # round half to even, as format() does
    assert number(2.0, 0) == '2'
    assert number(0.5, 4) == '0.5000'
    assert number(None, 2) == '-'
    assert number(None, 2, missing='n/a') == 'n/a'
    assert number(28.33, unit=' Hz') == '28.33 Hz'
    assert number(3, unit='x') == '3x'
    assert number(0.0123, 4, sign=True) == '+0.0123'
    assert number(-0.0123, 4, sign=True) == '-0.0123'
    assert number(0.5, 2, unit='x') == '0.50x'


def test_the_grid_rules_table_is_built_with_it():
    from freespace_seg.tools import grid_rules
    plain = {'free_iou': 0.8, 'false_free': 0.005, 'missed': 0.01, 'called_free': 0.02,
             'phantom': 0.03}
    cut = {'free_iou': 0.85, 'false_free': 0.064, 'missed': 0.011, 'called_free': 0.021,
           'phantom': 0.031}
    assert grid_rules.table({'val': {'plain': plain, 'cut': cut}}, ['plain', 'cut']) == (
        '| frames | rule | free IoU (3 m) | false free | missed obstacle cells | called free | '
        'phantom obstacle cells |\n'
        '|---|---|---|---|---|---|---|\n'
        '| val | `plain` | 0.800 | 0.5 % | 1.0 % | 2.0 % | 3.0 % |\n'
        '| val | `cut` | 0.850 (+0.050) | 6.4 % | 1.1 % | 2.1 % | 3.1 % |')


def test_the_projection_bench_table_is_built_with_it():
    from freespace_seg.tools.bench import projection
    r = dict.fromkeys((
        'build_ms', 'project_median_ms', 'project_p95_ms', 'with_points_median_ms',
        'with_points_p95_ms', 'rule_median_ms', 'rule_p95_ms', 'scan_median_ms', 'scan_p95_ms',
        'confidence_median_ms', 'confidence_p95_ms'), 1.23456)
    r.update(case='c', samples=100)
    lines = projection.markdown([r], 10, True).split('\n')
    assert lines[3] == '|---|' + '---:|' * 9
    assert lines[4] == ('| c | 1 | 100 | 1.235 | 1.235 | 1.235 | 1.235 | 1.235 / 1.235 | '
                        '1.235 / 1.235 | 1.235 / 1.235 |')


def test_the_horizon_bench_table_is_built_with_it():
    from freespace_seg.tools.bench import projection
    r = {'mount': 'level', 'cut_share': 0.4764, 'build_ms': 243.6, 'cut_median_ms': 0.05912,
         'cut_p95_ms': 0.1031}
    lines = projection.horizon_markdown([r], 50).split('\n')
    assert lines[2] == ('| mount | pixels cut (%) | build (ms) | per frame median / p95 (ms) |')
    assert lines[3] == '|---|' + '---:|' * 3
    assert lines[4] == '| level | 47.6 | 244 | 0.059 / 0.103 |'
