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
Markdown tables and the numbers in them: the one copy every report uses.

:func:`table` writes the header, the rule line and the rows; :func:`row` writes one row
(for a report that adds rows one by one); :func:`number` writes a number with a fixed
count of decimals, or the report's mark for a missing value.
"""


def row(cells):
    """Return one Markdown table row: ``| a | b |``."""
    return '| ' + ' | '.join(str(c) for c in cells) + ' |'


def rule(columns, align=None, cell='---'):
    """
    Return the rule line under a table's header.

    ``align``: one rule cell per column (e.g. ``['---', '---:']``); otherwise ``cell``
    repeated ``columns`` times.
    """
    return '|' + '|'.join(align if align is not None else [cell] * columns) + '|'


def table(header, rows, align=None, cell='---'):
    """Return a Markdown table as a list of lines: header, rule, then one line per row."""
    return [row(header), rule(len(header), align, cell)] + [row(r) for r in rows]


def number(value, digits=None, missing='-', unit='', sign=False):
    """
    Return ``value`` with ``digits`` decimals (as given when None) and ``unit``.

    ``missing`` stands for None; ``sign`` writes a leading + on positive values.
    """
    if value is None:
        return missing
    if digits is None:
        return f'{value}{unit}'
    return f'{value:{"+" if sign else ""}.{digits}f}{unit}'
