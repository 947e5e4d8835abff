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
