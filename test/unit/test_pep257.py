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

"""Docstrings: ament_pep257 (ament convention) over the package and its tests."""

import os

from ament_pep257.main import main
import pytest
from support import REPO


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    paths = [os.path.join(REPO, p) for p in ('freespace_seg', 'test', 'launch', 'setup.py')
             if os.path.exists(os.path.join(REPO, p))]
    rc = main(argv=paths)
    assert rc == 0, 'Found code style errors / warnings'
