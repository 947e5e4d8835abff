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

"""Small value helpers the commands share: rounding for reports, display paths, ``WxH``."""

import os
import re

_SIZE = re.compile(r'\s*([-+]?\d+)\s*[xX]\s*([-+]?\d+)\s*')


def round4(value):
    """Return ``value`` as a float rounded to 4 decimals, or None for None (JSON, cards)."""
    return None if value is None else round(float(value), 4)


def display_path(path):
    """Return ``path`` relative to the working directory when inside it, else absolute."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    return absolute if rel.startswith('..') else rel


def split_size(text):
    """
    Return ``(width, height)`` of a ``WIDTHxHEIGHT`` text such as ``480x270`` as ints.

    Raises ValueError when it is not two integers joined by ``x``; the caller checks the
    range (positive, a minimum, multiples) and words its own message.
    """
    match = _SIZE.fullmatch(str(text))
    if not match:
        raise ValueError(f'expected WIDTHxHEIGHT, got {text!r}')
    return int(match.group(1)), int(match.group(2))
