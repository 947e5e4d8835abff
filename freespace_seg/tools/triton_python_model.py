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
The Triton Python-backend model that ``serve`` writes into its model repository as ``model.py``.

It runs inside the server's Python backend stub (the server environment, not the project
venv), so it imports only numpy, onnxruntime and ``triton_python_backend_utils``. It loads
``model.onnx`` beside it with ONNX Runtime on the CPU. The server's dynamic batcher hands it
several robots' requests at once: when the ONNX batch dimension is dynamic they run as one
batch, else one after another. Each call's batch size is counted in the server's own
statistics (``/v2/models/<name>/stats``), which the fleet benchmark reads.
"""

import json
import os

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """One ONNX Runtime session serving the model's single input and output."""

    def initialize(self, args):
        config = json.loads(args['model_config'])
        params = {k: v['string_value'] for k, v in config.get('parameters', {}).items()}
        here = os.path.dirname(os.path.abspath(__file__))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(params.get('intra_op_threads', '0'))
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry('session.intra_op.allow_spinning', '0')
        self.session = ort.InferenceSession(os.path.join(here, 'model.onnx'), opts,
                                            providers=['CPUExecutionProvider'])
        self.input = config['input'][0]['name']
        self.output = config['output'][0]['name']
        first = self.session.get_inputs()[0].shape[0]
        self.dynamic_batch = not (isinstance(first, int) and first > 0)

    def execute(self, requests):
        tensors = [pb_utils.get_input_tensor_by_name(r, self.input).as_numpy()
                   for r in requests]
        if self.dynamic_batch and len(tensors) > 1:
            out = self.session.run([self.output], {self.input: np.concatenate(tensors)})[0]
            sizes = np.cumsum([len(t) for t in tensors])[:-1]
            outputs = np.split(out, sizes)
        else:
            outputs = [self.session.run([self.output], {self.input: t})[0] for t in tensors]
        return [pb_utils.InferenceResponse([pb_utils.Tensor(self.output, np.ascontiguousarray(o))])
                for o in outputs]
