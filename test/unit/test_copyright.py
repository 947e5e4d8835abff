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

"""Licence headers: ament_copyright where it is installed, and the header itself everywhere."""

import glob
import os
import re
import xml.etree.ElementTree as ET

import pytest
from support import REPO


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    ament_copyright = pytest.importorskip(
        'ament_copyright.main',
        reason='ament_copyright is not installable from PyPI here; it runs on ROS machines')
    rc = ament_copyright.main(argv=[os.path.join(REPO, 'freespace_seg'),
                                    os.path.join(REPO, 'test')])
    assert rc == 0, 'Found errors'


#: the Apache-2.0 header ``ament_copyright --add-missing <holder> apache2`` writes, after the
#: ``# Copyright <year> <holder>`` line
APACHE_HEADER = """#
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


def header_problem(text):
    """Return why ``text`` lacks the package's licence header, or None (empty files pass)."""
    if not text:
        return None
    lines = text.split('\n')
    start = 1 if lines[0].startswith('#!') else 0
    if not re.fullmatch(r'# Copyright \d{4}(-\d{4})? \S.*', lines[start]):
        return 'no "# Copyright <year> <holder>" line first'
    if not '\n'.join(lines[start + 1:]).startswith(APACHE_HEADER):
        return 'the Apache-2.0 licence text does not follow it'
    return None


def test_every_python_file_has_the_licence_header_of_package_xml():
    """What ament_copyright checks, without it: the header of package.xml's licence."""
    root = ET.parse(os.path.join(REPO, 'package.xml')).getroot()
    assert [e.text for e in root.iter('license')] == ['Apache-2.0']
    paths = [p for folder in ('freespace_seg', 'test', 'launch')
             for p in glob.glob(os.path.join(REPO, folder, '**', '*.py'), recursive=True)]
    assert len(paths) > 100
    bad = {}
    for path in paths:
        with open(path, encoding='utf-8') as f:
            why = header_problem(f.read())
        if why:
            bad[os.path.relpath(path, REPO)] = why
    assert bad == {}


@pytest.mark.parametrize('text, fragment', [
    ('"""A module."""\n', 'Copyright'),
    ('# Copyright 2026 someone\n#\n# MIT licence\n', 'Apache-2.0'),
])
def test_the_header_check_fails_without_the_header(text, fragment):
    assert fragment in header_problem(text)


def test_the_header_check_passes_after_a_shebang():
    assert header_problem('#!/usr/bin/env python3\n# Copyright 2026 x\n' + APACHE_HEADER) is None
