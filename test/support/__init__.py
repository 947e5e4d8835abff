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
The tests' shared helpers: the repository root, tiny real ONNX models, test images, torch.

Test files import them (``from support import write_tiny_model``); conftest.py keeps only
the fixtures and the session setup, and may call in here. ROS helpers (a harness that spins
nodes, a simulated clock) are in :mod:`support.ros`, so that importing this package needs no
ROS. pytest puts test/ on ``sys.path`` (rootdir-relative "prepend" import of conftest.py and
of the test files, the same under ``colcon test``), which is how ``support`` is found.
"""

import os

import numpy as np
import pytest
import yaml

#: the package's source root (the directory with package.xml)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TINY_PALETTE = [[200, 0, 0], [0, 200, 0]]


def load_tool(name):
    """Import ``tools/<name>.py`` (a script, not a package module) and return the module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, 'tools', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def randomize_batchnorm(model, mean=0.5, var=(0.5, 2.0), affine=True):
    """
    Give every BatchNorm of a torch model statistics far from the identity; return ``model``.

    Running mean uniform in [-mean, mean], running variance in ``var``; with ``affine`` also
    scale in [0.5, 1.5] and shift in [-0.2, 0.2]. Draws from torch's global generator.
    """
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-mean, mean)
                m.running_var.uniform_(*var)
                if affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)
    return model


def trained_looking(model, seed=0):
    """Give a UNet the BatchNorm statistics and live context branch of a trained one."""
    import torch

    torch.manual_seed(seed)
    randomize_batchnorm(model)
    if model.context is not None:
        with torch.no_grad():
            torch.nn.init.normal_(model.context.fc2.weight, std=0.3)
            torch.nn.init.normal_(model.context.fc2.bias, std=0.3)
    return model.eval()


def tiny_card(width, height, **overrides):
    """Return a valid model card dict for the tiny green-is-free model."""
    card = {
        'format_version': 1,
        'name': 'tiny_green_is_free',
        'model_file': 'tiny.onnx',
        'input': {'name': 'input', 'shape': [1, 3, height, width], 'layout': 'NCHW',
                  'dtype': 'float32', 'color_order': 'RGB', 'mean': [0.5, 0.5, 0.5],
                  'std': [0.5, 0.5, 0.5], 'resize_mode': 'letterbox', 'pad_value': 0},
        'output': {'name': 'logits', 'kind': 'logits', 'layout': 'NCHW'},
        'classes': {'names': ['blocked', 'free'], 'palette': TINY_PALETTE, 'free_space': [1]},
        'data_sources': ['none: hand-set weights'],
    }
    for key, value in overrides.items():
        card[key] = value
    return card


def write_tiny_model(directory, width=64, height=48, name='tiny', card_overrides=None,
                     invert=False):
    """
    Write ``name``.onnx + ``name``.yaml: a 1x1 conv whose class 1 (free) wins where G > R.

    logits[0] = R - G, logits[1] = G - R on the normalized input, so a pixel is free
    exactly where its green value exceeds its red value (``invert``: where red exceeds green).
    """
    onnx = pytest.importorskip('onnx', reason='the onnx package builds the tiny test models: '
                               'pip install onnx')
    from onnx import helper, numpy_helper, TensorProto

    w = np.zeros((2, 3, 1, 1), np.float32)
    w[0, 0], w[0, 1] = 1.0, -1.0
    w[1, 0], w[1, 1] = -1.0, 1.0
    if invert:
        w = -w
    graph = helper.make_graph(
        [helper.make_node('Conv', ['input', 'w'], ['logits'])], 'tiny',
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, height, width])],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 2, height, width])],
        [numpy_helper.from_array(w, 'w')])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(str(directory), name + '.onnx')
    onnx.save(model, path)
    card = tiny_card(width, height, **(card_overrides or {}))
    card['model_file'] = name + '.onnx'
    with open(os.path.join(str(directory), name + '.yaml'), 'w') as f:
        yaml.safe_dump(card, f)
    return path


def green_red_image(width, height, free_rows):
    """RGB image whose bottom ``free_rows`` rows are green (free) and the rest red."""
    img = np.zeros((height, width, 3), np.uint8)
    img[:, :, 0] = 180
    img[height - free_rows:, :, 0] = 20
    img[height - free_rows:, :, 1] = 180
    return img
