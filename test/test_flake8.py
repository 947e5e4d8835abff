"""Code style: ament_flake8 over the package, its tests and its launch files."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    # In a fresh interpreter: flake8 forks worker processes, and forking this test process
    # (which holds rclpy and torch threads from other tests) can crash the workers.
    paths = [os.path.join(REPO, p) for p in ('freespace_seg', 'test', 'launch', 'setup.py')
             if os.path.exists(os.path.join(REPO, p))]
    code = ('import sys; from ament_flake8.main import main_with_errors; '
            'rc, errors = main_with_errors(argv=sys.argv[1:]); '
            'print("\\n".join(errors)); sys.exit(rc)')
    proc = subprocess.run([sys.executable, '-c', code, *paths], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, 'code style errors / warnings:\n' + proc.stdout + proc.stderr
