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

"""What machine a measurement ran on, for reports and cards."""

import os
import platform

import cv2
import numpy as np


def cpu_has_vnni(cpuinfo='/proc/cpuinfo', machine=None):
    """
    Return whether this x86-64 CPU has VNNI (``avx512_vnni`` or ``avx_vnni`` in its flags).

    None where it is not an x86-64 CPU (ARM has no such saturation) or the flags cannot be
    read (``machine``: ``platform.machine()`` unless given).
    """
    if (machine or platform.machine()).lower() not in ('x86_64', 'amd64'):
        return None
    try:
        with open(cpuinfo, encoding='utf-8', errors='replace') as f:
            for line in f:
                if line.startswith('flags'):
                    flags = set(line.split(':', 1)[-1].split())
                    return bool(flags & {'avx512_vnni', 'avx_vnni'})
    except OSError:
        pass
    return None


def machine_info():
    """CPU model, VNNI, core count, load average and library versions, for the report."""
    import onnxruntime

    model = platform.processor() or ''
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    model = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {'cpu': model, 'vnni': cpu_has_vnni(), 'cores': os.cpu_count(),
            'loadavg_1_5_15': load,
            'python': platform.python_version(), 'numpy': np.__version__,
            'opencv': cv2.__version__, 'onnxruntime': onnxruntime.__version__,
            'platform': platform.platform()}


def cpu_label(machine):
    """One line naming a :func:`machine_info` CPU and its VNNI, for cards and reports."""
    vnni = {True: 'VNNI', False: 'no VNNI', None: 'VNNI n/a'}[machine.get('vnni')]
    cpu = machine.get('cpu') or 'unknown CPU'
    return f'{cpu} ({vnni}), ONNX Runtime {machine.get("onnxruntime")}'
