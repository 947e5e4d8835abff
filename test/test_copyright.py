"""Licence headers: ament_copyright, where it is installed."""

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    ament_copyright = pytest.importorskip(
        'ament_copyright.main',
        reason='ament_copyright is not installable from PyPI here; it runs on ROS machines')
    rc = ament_copyright.main(argv=[os.path.join(REPO, 'freespace_seg'),
                                    os.path.join(REPO, 'test')])
    assert rc == 0, 'Found errors'
