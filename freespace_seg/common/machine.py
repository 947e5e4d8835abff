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


def machine_info():
    """CPU model, core count, load average and library versions, for the report."""
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
    return {'cpu': model, 'cores': os.cpu_count(), 'loadavg_1_5_15': load,
            'python': platform.python_version(), 'numpy': np.__version__,
            'opencv': cv2.__version__, 'onnxruntime': onnxruntime.__version__,
            'platform': platform.platform()}
