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
A tiny dependency-free progress bar for long loops (data generation, training).

``for item in progress(items, total=len(items), desc='render'): ...`` prints a tqdm-like bar
with count, rate and ETA to stderr, redrawn at most about 10 times a second, and a final
line when the loop ends (or is left early). When the stream is not a terminal (a log file,
CI) it prints a plain line every ``line_interval`` seconds instead of redrawing.
:class:`Progress` offers the same as an object, with :meth:`Progress.set_postfix` to show
e.g. the current loss.
"""

import sys
import time


def _format_time(seconds):
    if seconds is None or seconds != seconds or seconds == float('inf'):
        return '?'
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f'{hours:d}:{minutes:02d}:{secs:02d}'
    return f'{minutes:02d}:{secs:02d}'


def _format_rate(rate):
    if rate <= 0.0:
        return '? it/s'
    if rate >= 1.0:
        return f'{rate:.2f} it/s'
    return f'{1.0 / rate:.2f} s/it'


class Progress:
    """
    An iterable wrapper that reports progress; see the module docstring.

    ``file`` defaults to ``sys.stderr`` at construction time. ``interval`` is the minimum time
    between redraws on a terminal, ``line_interval`` between lines otherwise; ``width`` is the
    bar width in characters.
    """

    def __init__(self, iterable, total=None, desc='', file=None, interval=0.1,
                 line_interval=10.0, width=30):
        self.iterable = iterable
        if total is None:
            try:
                total = len(iterable)
            except (TypeError, AttributeError):
                total = None
        self.total = total
        self.desc = desc
        self.file = file if file is not None else sys.stderr
        try:
            self.tty = bool(self.file.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self.interval = interval if self.tty else line_interval
        self.width = width
        self.count = 0
        self.postfix = ''
        self.start = None
        self._last = 0.0
        self._closed = False
        self._last_len = 0

    def __iter__(self):
        self.start = time.monotonic()
        self._last = self.start
        if self.tty:
            self._draw(self.start)
        try:
            for item in self.iterable:
                yield item
                self.count += 1
                now = time.monotonic()
                if now - self._last >= self.interval:
                    self._last = now
                    self._draw(now)
        finally:
            self.close()

    def __len__(self):
        return self.total

    def set_postfix(self, text=None, **values):
        """Show ``text`` or ``key=value`` pairs after the rate (numbers get 4 digits)."""
        parts = [str(text)] if text else []
        for key, value in values.items():
            parts.append(f'{key}={value:.4g}' if isinstance(value, float) else f'{key}={value}')
        self.postfix = ', '.join(parts)

    def format_line(self, now=None):
        """Return the current status line, without line ending."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - (self.start if self.start is not None else now), 0.0)
        rate = self.count / elapsed if elapsed > 0.0 else 0.0
        prefix = f'{self.desc}: ' if self.desc else ''
        extra = f', {self.postfix}' if self.postfix else ''
        if self.total:
            frac = min(self.count / self.total, 1.0)
            filled = int(frac * self.width)
            bar = '#' * filled + '-' * (self.width - filled)
            eta = (self.total - self.count) / rate if rate > 0.0 else None
            return (f'{prefix}{100.0 * frac:3.0f}%|{bar}| {self.count}/{self.total} '
                    f'[{_format_time(elapsed)}<{_format_time(eta)}, {_format_rate(rate)}'
                    f'{extra}]')
        return f'{prefix}{self.count} [{_format_time(elapsed)}, {_format_rate(rate)}{extra}]'

    def _draw(self, now):
        line = self.format_line(now)
        if self.tty:
            pad = max(self._last_len - len(line), 0)
            self.file.write('\r' + line + ' ' * pad)
            self._last_len = len(line)
        else:
            self.file.write(line + '\n')
        self.file.flush()

    def close(self):
        """Print the final line (once)."""
        if self._closed:
            return
        self._closed = True
        if self.start is None:
            self.start = time.monotonic()
        line = self.format_line()
        if self.tty:
            pad = max(self._last_len - len(line), 0)
            self.file.write('\r' + line + ' ' * pad + '\n')
        else:
            self.file.write(line + '\n')
        self.file.flush()


def progress(iterable, total=None, desc='', **kwargs):
    """
    Yield the items of ``iterable`` while showing a progress bar on stderr.

    ``total`` defaults to ``len(iterable)`` when it has one; further keyword arguments go to
    :class:`Progress` (``file``, ``interval``, ``line_interval``, ``width``).
    """
    yield from Progress(iterable, total=total, desc=desc, **kwargs)
