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
Progress bars for long loops (data generation, training, bag, infer), drawn by ``tqdm``.

``for item in progress(items, desc='render'): ...`` shows tqdm's bar with count, rate and ETA
on stderr. On a terminal the bar is redrawn in place (at most 10 times a second). When the
stream is not a terminal (a log file, CI) the same status line is written as a line of its
own every ``line_interval`` seconds, and once at the end, so logs hold no carriage returns.
:class:`Progress` offers the same as an object, with :meth:`Progress.set_postfix` to show
e.g. the current loss.
"""

import sys

from tqdm import tqdm

#: '#' done, '-' to go, 30 characters wide, in logs and on terminals alike
BAR_FORMAT = '{l_bar}{bar:30}{r_bar}'


class _Lines:
    """A stream for tqdm that turns each redraw into a line of its own."""

    def __init__(self, file):
        self.file = file

    def write(self, text):
        line = text.replace('\r', '').rstrip()
        if line:
            self.file.write(line + '\n')

    def flush(self):
        self.file.flush()


def _is_tty(file):
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):
        return False


class Progress(tqdm):
    """
    A tqdm bar over ``iterable``; see the module docstring.

    ``file`` defaults to ``sys.stderr`` at construction time. ``interval`` is the minimum time
    between redraws on a terminal, ``line_interval`` between lines otherwise.
    """

    def __init__(self, iterable, total=None, desc='', file=None, interval=0.1,
                 line_interval=10.0):
        file = file if file is not None else sys.stderr
        tty = _is_tty(file)
        if total is None:
            try:
                total = len(iterable)
            except (TypeError, AttributeError):
                total = None
        super().__init__(iterable, total=total, desc=desc or None,
                         file=file if tty else _Lines(file), ascii='-#',
                         bar_format=BAR_FORMAT if total else None,
                         mininterval=interval if tty else line_interval, miniters=1,
                         dynamic_ncols=False, leave=True)

    @property
    def count(self):
        """Items done so far."""
        return self.n

    def set_postfix(self, text=None, refresh=False, **values):
        """Show ``text`` or ``key=value`` pairs after the rate (numbers get 4 digits)."""
        parts = [str(text)] if text else []
        for key, value in values.items():
            parts.append(f'{key}={value:.4g}' if isinstance(value, float) else f'{key}={value}')
        self.set_postfix_str(', '.join(parts), refresh=refresh)


def progress(iterable, total=None, desc='', **kwargs):
    """
    Yield the items of ``iterable`` while showing a progress bar on stderr.

    ``total`` defaults to ``len(iterable)`` when it has one; further keyword arguments go to
    :class:`Progress` (``file``, ``interval``, ``line_interval``).
    """
    yield from Progress(iterable, total=total, desc=desc, **kwargs)
