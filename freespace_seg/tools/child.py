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
Nodes in child processes, as ``ros2 run`` starts them: for the demo, the benchmarks and tests.

:func:`node_environment` is the environment such a process gets (the Fast DDS large-image
profile, localhost discovery, this source tree on ``PYTHONPATH``); :class:`NodeProcess` runs
one command in it, keeps its output, says when it is ready and stops it as Ctrl-C would.
"""

import os
import signal
import subprocess
import sys
import threading

#: the repository root (a source checkout); where config/ is found when not installed
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def config_path(name):
    """Path of a file in config/: installed share directory first, then the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory('freespace_seg'), 'config', name)
        if os.path.isfile(path):
            return path
    except (ImportError, LookupError, ValueError, OSError):
        pass
    return os.path.join(REPO, 'config', name)


def node_environment():
    """Environment for a node process: large-image Fast DDS profile, localhost discovery."""
    env = dict(os.environ)
    profile = config_path('fastdds_large_images.xml')
    env.setdefault('FASTDDS_DEFAULT_PROFILES_FILE', profile)
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    env['PYTHONUNBUFFERED'] = '1'
    return env


def segmentation_node_command(ros_args):
    """Return the command line of ``segmentation_node`` with ``ros_args`` after ``--ros-args``."""
    return [sys.executable, '-m', 'freespace_seg.nodes.segmentation_node', '--ros-args',
            *ros_args]


class NodeProcess:
    """
    A node in a child process; its output kept, line by line (and echoed with ``echo``).

    ``ready`` is set once a line contains ``ready_text`` (the node's "listening on" log).
    """

    def __init__(self, cmd, env, ready_text='listening on', echo=None):
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.ready = threading.Event()
        #: the output so far, one line per item, without line ends
        self.lines = []
        self._ready_text = ready_text
        self._echo = echo
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if self._ready_text in line:
                self.ready.set()
            if self._echo is not None:
                print(self._echo + line.rstrip(), file=sys.stderr)

    @property
    def pid(self):
        """Return the child's process id."""
        return self.proc.pid

    def stop(self):
        """SIGINT, as Ctrl-C would; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._thread.join(timeout=2)
        return self.proc.returncode

    def log_tail(self, n=15):
        """Return the last ``n`` lines, indented, for an error message."""
        return '\n'.join('    ' + line for line in self.lines[-n:])
