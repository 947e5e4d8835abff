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
The reproduce-command recorder: a command's options, in order, to spell its run out again.

A command adds its options through :meth:`OptionRecorder.add` instead of
``parser.add_argument``; :meth:`OptionRecorder.command_line` then writes the
``python -m freespace_seg <command> ...`` line that reproduces a run with every recorded
option and its value (flags only when set), which the model card keeps. ``defaults`` holds
each option's default, for ``train --resume`` to tell which options were given.
"""

import shlex


class OptionRecorder:
    """The options of one ``python -m freespace_seg`` command, in the order they were added."""

    def __init__(self, command):
        self.command = command
        #: (flag, dest, is_flag) per recorded option
        self.options = []
        #: dest -> default
        self.defaults = {}

    def reset(self):
        """Forget the options (``add_arguments`` may run more than once in a process)."""
        del self.options[:]
        self.defaults.clear()

    def add(self, group, flag, **kw):
        """``group.add_argument(flag, **kw)``, recorded; return the argparse action."""
        action = group.add_argument(flag, **kw)
        self.options.append((flag, action.dest, kw.get('action') == 'store_true'))
        self.defaults[action.dest] = action.default
        return action

    def command_line(self, args, skip=None, show=None):
        """
        Return the shell-quoted command line of ``args``.

        ``skip(dest, value)``: leave that option out (an option that does not apply, or a
        default path that differs between machines); ``show(dest, value)``: the text of a
        value (e.g. ``480x270`` for a size). Options whose value is None are left out; a list
        (an ``action='append'`` option) is spelled out once per item.
        """
        parts = ['python', '-m', 'freespace_seg', self.command]
        for flag, dest, is_flag in self.options:
            value = getattr(args, dest, None)
            if is_flag:
                if value:
                    parts.append(flag)
                continue
            if value is None or (skip is not None and skip(dest, value)):
                continue
            text = show(dest, value) if show is not None else value
            for item in (text if isinstance(text, list) else [text]):
                parts += [flag, str(item)]
        return shlex.join(parts)
