"""Code style: ament_flake8 over the package, its tests and its launch files."""

import os

from ament_flake8.main import main_with_errors
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    paths = [os.path.join(REPO, p) for p in ('freespace_seg', 'test', 'launch', 'setup.py')
             if os.path.exists(os.path.join(REPO, p))]
    rc, errors = main_with_errors(argv=paths)
    assert rc == 0, 'Found %d code style errors / warnings:\n' % len(errors) + '\n'.join(errors)
