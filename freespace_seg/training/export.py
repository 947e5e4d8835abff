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

"""Export the UNet to ONNX (static shapes, opset 17) and check ONNX Runtime against torch."""

import os
import warnings

import numpy as np
import torch

OPSET = 17
INPUT_NAME = 'input'
OUTPUT_NAME = 'logits'
MAX_ABS_DIFF = 1e-3


class ExportError(RuntimeError):
    """The exported model is invalid or disagrees with torch."""


def export_onnx(model, path, width, height, opset=OPSET):
    """Write ``model`` (eval mode, CPU) as ONNX with input 1x3xHxW ``input`` -> ``logits``."""
    model = model.eval().cpu()
    dummy = torch.zeros(1, 3, int(height), int(width), dtype=torch.float32)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, (dummy,), path, input_names=[INPUT_NAME],
                          output_names=[OUTPUT_NAME], opset_version=int(opset), dynamo=False,
                          do_constant_folding=True, export_params=True)
    check_onnx_file(path, width, height, model.num_classes)
    return path


def check_onnx_file(path, width, height, num_classes=2):
    """Validate the graph and its static input/output names and shapes."""
    import onnx

    proto = onnx.load(path)
    onnx.checker.check_model(proto)

    def dims(value_info):
        return [d.dim_value if d.HasField('dim_value') else d.dim_param
                for d in value_info.type.tensor_type.shape.dim]

    inputs = {i.name: dims(i) for i in proto.graph.input}
    outputs = {o.name: dims(o) for o in proto.graph.output}
    want_in = [1, 3, int(height), int(width)]
    want_out = [1, int(num_classes), int(height), int(width)]
    if inputs.get(INPUT_NAME) != want_in:
        raise ExportError(f'{path}: input {INPUT_NAME!r} is {inputs}, expected {want_in}')
    if outputs.get(OUTPUT_NAME) != want_out:
        raise ExportError(f'{path}: output {OUTPUT_NAME!r} is {outputs}, expected {want_out}')


def compare_with_torch(model, path, inputs=None, seed=0, threads=2):
    """
    Run torch and ONNX Runtime on the same inputs; return the max absolute logit difference.

    ``inputs`` is a float32 array (N, 3, H, W) of normalized images; by default two tensors of
    uniform noise in [-1, 1] with the ONNX input's shape.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    session = ort.InferenceSession(path, sess_options=opts, providers=['CPUExecutionProvider'])
    shape = session.get_inputs()[0].shape
    if inputs is None:
        rng = np.random.default_rng(seed)
        inputs = rng.uniform(-1.0, 1.0, size=(2,) + tuple(shape[1:])).astype(np.float32)
    model = model.eval().cpu()
    worst = 0.0
    for x in np.asarray(inputs, np.float32):
        x = x[None]
        got = session.run([OUTPUT_NAME], {INPUT_NAME: x})[0]
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        if got.shape != want.shape:
            raise ExportError(f'ONNX output shape {got.shape} != torch {want.shape}')
        worst = max(worst, float(np.abs(got - want).max()))
    return worst


def export_and_verify(model, path, width, height, inputs=None, max_abs_diff=MAX_ABS_DIFF):
    """Export, validate and compare with torch; raise :class:`ExportError` if they disagree."""
    export_onnx(model, path, width, height)
    diff = compare_with_torch(model, path, inputs)
    if not diff <= max_abs_diff:
        raise ExportError(f'ONNX Runtime and torch logits differ by {diff:.3g} '
                          f'(> {max_abs_diff:g}) for {path}')
    return diff
