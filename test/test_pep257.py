"""Docstrings: ament_pep257 (ament convention) over the package and its tests."""

import os

from ament_pep257.main import main
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    paths = [os.path.join(REPO, p) for p in ('freespace_seg', 'test', 'launch', 'setup.py')
             if os.path.exists(os.path.join(REPO, p))]
    rc = main(argv=paths)
    assert rc == 0, 'Found code style errors / warnings'
