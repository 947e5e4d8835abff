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

r"""
``python -m freespace_seg triton-repo OUT``: a Triton model repository for a real server.

Writes ``OUT/<name>/config.pbtxt`` and ``OUT/<name>/1/model.onnx`` (onnxruntime backend, CPU
or GPU instances) or, with ``--plan``, ``OUT/<name>/1/model.plan`` (tensorrt backend, a plan
from ``build-engine``). With ``--max-batch-size N`` (default 8) the server batches requests
of several robots: the written ONNX gets a dynamic batch dimension (each robot still sends
batch 1) and ``--max-queue-delay-us`` bounds how long the server waits to fill a batch.
``--max-batch-size 0`` writes the model as it is, one request per run.

Serve it with NVIDIA's container (not testable on this machine; see docs/triton.md)::

    docker run --rm --gpus all -p 8000:8000 -p 8001:8001 -p 8002:8002 \
      -v $PWD/OUT:/models nvcr.io/nvidia/tritonserver:24.10-py3 \
      tritonserver --model-repository=/models

:func:`write_model` is shared with ``serve``, which writes a Python-backend model instead.
"""

import dataclasses
import os
import shutil

from freespace_seg.perception.model_card import card_path_for_model, load_card

#: card dtype -> Triton config data_type
TRITON_DTYPES = {'float32': 'TYPE_FP32', 'float16': 'TYPE_FP16', 'uint8': 'TYPE_UINT8',
                 'int64': 'TYPE_INT64', 'int32': 'TYPE_INT32'}
#: ONNX Runtime type strings -> card dtype names
_ORT_DTYPES = {'tensor(float)': 'float32', 'tensor(float16)': 'float16',
               'tensor(uint8)': 'uint8', 'tensor(int64)': 'int64', 'tensor(int32)': 'int32'}


class RepoError(RuntimeError):
    """A model repository could not be written; the message says why."""


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One model input or output as the server config lists it."""

    name: str
    dtype: str       # card-style: float32, uint8, ...
    shape: tuple     # full shape, batch first; -1 where dynamic


def onnx_tensors(model_path):
    """Return ``(inputs, outputs)`` of an ONNX model as :class:`TensorSpec` lists."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(model_path, opts, providers=['CPUExecutionProvider'])
    except Exception as e:  # noqa: B902 - ORT raises its own exception types
        raise RepoError(f'cannot load ONNX model {model_path}: {e}') from e

    def spec(t):
        shape = tuple(d if isinstance(d, int) and d > 0 else -1 for d in t.shape)
        return TensorSpec(t.name, _ORT_DTYPES.get(t.type, t.type), shape)

    return ([spec(t) for t in session.get_inputs()],
            [spec(t) for t in session.get_outputs()])


def write_dynamic_batch_copy(src, dst):
    """Copy an ONNX model with its inputs' and outputs' first dimension made dynamic."""
    try:
        import onnx
    except ImportError as e:
        raise RepoError('a batching repository needs the onnx package to give the model a '
                        'dynamic batch dimension (pip install onnx), or use '
                        '--max-batch-size 0') from e
    model = onnx.load(src)
    for value in list(model.graph.input) + list(model.graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField('dim_value')
        dim.dim_param = 'batch'
    onnx.save(model, dst)


def config_pbtxt(name, backend, inputs, outputs, max_batch_size=8, max_queue_delay_us=2000,
                 instance_kind='KIND_CPU', instance_count=1, parameters=None):
    """
    Return the text of a Triton ``config.pbtxt``.

    With ``max_batch_size`` > 0 the dims leave out the batch dimension (Triton adds it) and
    a ``dynamic_batching`` block with ``max_queue_delay_microseconds`` is written.
    """
    def tensor(t):
        dims = t.shape[1:] if max_batch_size > 0 else t.shape
        if t.dtype not in TRITON_DTYPES:
            raise RepoError(f'tensor {t.name!r} has dtype {t.dtype}, which this writer does not '
                            f'map to a Triton type (known: {", ".join(TRITON_DTYPES)})')
        return (f'  {{ name: "{t.name}" data_type: {TRITON_DTYPES[t.dtype]} '
                f'dims: [ {", ".join(str(d) for d in dims)} ] }}')

    lines = [f'name: "{name}"', f'backend: "{backend}"', f'max_batch_size: {max_batch_size}',
             'input [', ',\n'.join(tensor(t) for t in inputs), ']',
             'output [', ',\n'.join(tensor(t) for t in outputs), ']',
             f'instance_group [ {{ kind: {instance_kind} count: {instance_count} }} ]']
    if max_batch_size > 0:
        lines.append(f'dynamic_batching {{ max_queue_delay_microseconds: '
                     f'{max_queue_delay_us} }}')
    for key, value in (parameters or {}).items():
        lines.append(f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}')
    return '\n'.join(lines) + '\n'


def write_model(out, model_path, card, backend='onnxruntime', max_batch_size=8,
                max_queue_delay_us=2000, instance_kind='KIND_CPU', instance_count=1,
                plan_path=None, python_model=None, parameters=None):
    """
    Write ``out/<card.name>/`` (config and version 1) and return that directory.

    ``backend`` is onnxruntime, tensorrt (``plan_path`` copied as model.plan) or python
    (``python_model`` copied as model.py, the ONNX model beside it).
    """
    if backend == 'tensorrt':
        # build-engine's plans have the model's fixed batch of 1: no server-side batching.
        max_batch_size = 0
    if max_batch_size < 0:
        raise RepoError(f'max batch size must be >= 0, got {max_batch_size}')
    inputs, outputs = onnx_tensors(model_path)
    if card.input_name not in [t.name for t in inputs]:
        raise RepoError(f"the model has no input {card.input_name!r} (the card's input.name); "
                        f'it has {[t.name for t in inputs]}')
    if inputs[0].shape[0] not in (1, -1) and max_batch_size > 0:
        raise RepoError(f'the model input {inputs[0].name!r} has batch {inputs[0].shape[0]}; '
                        'batching needs batch 1 or dynamic, use --max-batch-size 0')
    model_dir = os.path.join(out, card.name)
    version_dir = os.path.join(model_dir, '1')
    os.makedirs(version_dir, exist_ok=True)
    if backend == 'tensorrt':
        if not plan_path or not os.path.isfile(plan_path):
            raise RepoError(f'TensorRT plan not found: {plan_path!r} (make one with '
                            'python -m freespace_seg build-engine)')
        shutil.copyfile(plan_path, os.path.join(version_dir, 'model.plan'))
    else:
        onnx_dst = os.path.join(version_dir, 'model.onnx')
        if max_batch_size > 0 and inputs[0].shape[0] == 1:
            write_dynamic_batch_copy(model_path, onnx_dst)
        else:
            shutil.copyfile(model_path, onnx_dst)
        if backend == 'python':
            shutil.copyfile(python_model, os.path.join(version_dir, 'model.py'))
    text = config_pbtxt(card.name, backend, inputs, outputs, max_batch_size,
                        max_queue_delay_us, instance_kind, instance_count, parameters)
    with open(os.path.join(model_dir, 'config.pbtxt'), 'w') as f:
        f.write(text)
    return model_dir


def load_model_and_card(model_path):
    """Return ``(abs model path, card)`` for a model with its card beside it."""
    from freespace_seg.perception.pipeline import packaged_model_path

    model_path = os.path.abspath(model_path or packaged_model_path())
    if not os.path.isfile(model_path):
        raise RepoError(f'model file not found: {model_path}')
    card = load_card(card_path_for_model(model_path))
    return model_path, dataclasses.replace(card, model_file=model_path)


def add_arguments(parser):
    parser.add_argument('out', help='repository folder to write (created)')
    parser.add_argument('--model', default='', help='ONNX model with its card beside it '
                        '(default: the packaged fp32 model)')
    parser.add_argument('--kind', choices=('cpu', 'gpu'), default='gpu',
                        help='instance group kind (default gpu)')
    parser.add_argument('--instances', type=int, default=1, help='instances per device')
    parser.add_argument('--max-batch-size', type=int, default=8,
                        help='server-side batch across robots; 0: no batching')
    parser.add_argument('--max-queue-delay-us', type=int, default=2000,
                        help='dynamic batching: longest wait to fill a batch (us)')
    parser.add_argument('--plan', default='', help='a TensorRT plan from build-engine: '
                        'write a tensorrt-backend model instead of onnxruntime')


def run(args):
    from freespace_seg.perception.model_card import ModelCardError

    try:
        model_path, card = load_model_and_card(args.model)
        model_dir = write_model(
            args.out, model_path, card, backend='tensorrt' if args.plan else 'onnxruntime',
            max_batch_size=args.max_batch_size, max_queue_delay_us=args.max_queue_delay_us,
            instance_kind='KIND_GPU' if args.kind == 'gpu' else 'KIND_CPU',
            instance_count=args.instances, plan_path=args.plan or None)
    except (RepoError, ModelCardError, OSError) as e:
        print(f'triton-repo: {e}')
        return 2
    print(f'wrote {model_dir}/config.pbtxt and {model_dir}/1/')
    print(f'serve it: docker run --rm --gpus all -p 8000:8000 -p 8001:8001 -p 8002:8002 '
          f'-v {os.path.abspath(args.out)}:/models nvcr.io/nvidia/tritonserver:24.10-py3 '
          'tritonserver --model-repository=/models')
    return 0
