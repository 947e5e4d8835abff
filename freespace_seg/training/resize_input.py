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
``python -m freespace_seg resize-input``: a model's ONNX file at another network input size.

The package's networks are fully convolutional, but their exports have static shapes: the
input's height and width, and the ``sizes`` of each bilinear ``Resize`` of the decoder (to the
size of the skip it is concatenated with, and the last one to the input size). This command
rewrites those numbers in the ONNX graph itself, with no torch and no checkpoint, so it works
on every model the package ships, the EfficientNet-Lite ones and their INT8 (QDQ) copies
included (the quantization scales are kept as they are):

1. the input (and output) height and width become the new size;
2. ONNX Runtime runs the encoder alone at the new size, which gives each skip's size;
3. each decoder ``Resize`` gets a constant ``sizes`` of ``[1, its channels, skip height, skip
   width]`` (the last one: the input size), and the nodes that computed the old sizes go;
4. the result must run in ONNX Runtime and give a ``(1, classes, height, width)`` output.

The card beside the new file is the source card with the name, model file and input shape
changed, a ``reexport`` section (source file and its sha256, trained and new size, the
command), and its ``evaluation`` and ``latency_ms`` emptied: they were measured at the other
size. Score it with ``eval --model <out> --update-card``.

The weights stay those trained at the source size, so the network sees the scene at another
scale; docs/model/input_size.md measures what that costs. ``tradeoff`` does the same for
float models through a torch re-export and measures several sizes at once; this command needs
no torch, and keeps an INT8 file's quantization (and its fp32 nodes) exactly as shipped. The
tests check the rewritten graph against the torch network at the new size.

Example::

    python -m freespace_seg resize-input --model models/freespace_lite0_int8.onnx --size 384x216
"""

import copy
import dataclasses
import os
import sys

from freespace_seg.training.errors import TrainingError
import numpy as np


class ResizeInputError(TrainingError):
    """A model that cannot be rewritten at another input size, or bad options."""


def _dims(value_info):
    return value_info.type.tensor_type.shape.dim


def _set_hw(value_info, width, height):
    dims = _dims(value_info)
    if len(dims) != 4:
        raise ResizeInputError(f'{value_info.name}: expected a 4-D NCHW tensor, got '
                               f'{len(dims)} dimensions')
    dims[2].dim_value, dims[3].dim_value = int(height), int(width)


def _prune_dead(graph, keep):
    """Remove the nodes and initializers nothing reads (``keep``: names that count as read)."""
    while True:
        used = {x for node in graph.node for x in node.input} | set(keep)
        dead = [node for node in graph.node if not any(o in used for o in node.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)


def _concat_partner(consumers, name):
    """Return the other input of the Concat that reads ``name`` (through Q/DQ pairs), or None."""
    via = name
    for _ in range(8):
        readers = consumers.get(via, [])
        if len(readers) != 1:
            return None
        node = readers[0]
        if node.op_type == 'Concat':
            others = [x for x in node.input if x != via]
            return others[0] if len(others) == 1 else None
        if node.op_type not in ('QuantizeLinear', 'DequantizeLinear'):
            return None
        via = node.output[0]
    return None


def _shapes(model, names, width, height):
    """Run ``model`` in ONNX Runtime at ``width`` x ``height``; return the shapes of ``names``."""
    import onnxruntime as ort
    from onnx import helper, TensorProto

    probe = copy.deepcopy(model)
    graph = probe.graph
    _set_hw(graph.input[0], width, height)
    del graph.output[:]
    del graph.value_info[:]
    names = list(dict.fromkeys(names))
    for name in names:
        graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    _prune_dead(graph, names)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options,
                                   providers=['CPUExecutionProvider'])
    feed = {graph.input[0].name: np.zeros((1, 3, int(height), int(width)), np.float32)}
    values = session.run(names, feed)
    return {name: tuple(int(d) for d in value.shape) for name, value in zip(names, values)}


def resize_model(src_path, width, height):
    """
    Return ``(model, plan)``: ``src_path`` rewritten for an input of ``width`` x ``height``.

    ``plan`` holds one ``(Resize node name, new sizes)`` per decoder resize.

    Raises :class:`ResizeInputError` for a size below 32 pixels, a model with other than one
    4-D input, or one without a ``Resize`` that takes ``sizes``.
    """
    import onnx
    from onnx import numpy_helper

    width, height = int(width), int(height)
    if width < 32 or height < 32:
        raise ResizeInputError(f'the input size must be at least 32x32, got {width}x{height}')
    try:
        model = onnx.load(src_path)
    except Exception as e:  # onnx raises several kinds for a file that is not a model
        raise ResizeInputError(f'cannot read {src_path} as an ONNX model: {e}') from e
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    if len(inputs) != 1 or len(_dims(inputs[0])) != 4:
        raise ResizeInputError(f'{src_path}: expected one 4-D NCHW input')
    dims = _dims(inputs[0])
    old = (dims[3].dim_value, dims[2].dim_value)
    resizes = [n for n in graph.node if n.op_type == 'Resize' and len(n.input) >= 4
               and n.input[3]]
    if not resizes:
        raise ResizeInputError(f'{src_path}: no Resize with sizes: not a decoder this command '
                               'knows how to resize')
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    skips = {n.name: _concat_partner(consumers, n.output[0]) for n in resizes}
    channels = _shapes(model, [n.input[0] for n in resizes], *old)
    new_skips = _shapes(model, [s for s in skips.values() if s], width, height)

    for value in list(inputs) + list(graph.output):
        _set_hw(value, width, height)
    del graph.value_info[:]  # shapes inferred for the old size
    plan = []
    for node in resizes:
        skip = skips[node.name]
        if skip is None and node is not resizes[-1]:
            raise ResizeInputError(f'{src_path}: {node.name} is neither joined to a skip nor '
                                   'the last resize')
        hw = list(new_skips[skip][2:]) if skip else [height, width]
        sizes = [1, channels[node.input[0]][1]] + hw
        name = f'{node.name.strip("/")}_sizes_{width}x{height}'
        graph.initializer.append(numpy_helper.from_array(np.array(sizes, np.int64), name))
        node.input[3] = name
        plan.append((node.name, sizes))
    _prune_dead(graph, [o.name for o in graph.output])
    onnx.checker.check_model(model)
    out_shape = _shapes(model, [graph.output[0].name], width, height)[graph.output[0].name]
    if out_shape[2:] != (height, width):
        raise ResizeInputError(f'{src_path}: the rewritten model answers {out_shape}, not '
                               f'{height}x{width}')
    return model, plan


def card_at_size(src_card, out_path, width, height, description, reexport):
    """
    Return a copy of ``src_card``'s dict for ``out_path`` at a ``width`` x ``height`` input.

    The name and model file become ``out_path``'s, ``description`` goes before the old one,
    ``evaluation`` and ``latency_ms`` are emptied (measured at the other size) and
    ``reexport`` (a dict) follows the model file. ``tradeoff`` writes its cards this way too.
    """
    raw = copy.deepcopy(src_card.raw)
    new = {}
    for key, value in raw.items():
        if key == 'name':
            value = os.path.splitext(os.path.basename(out_path))[0]
        elif key == 'model_file':
            value = os.path.basename(out_path)
        elif key == 'description':
            value = (description + ' ' + str(value or '')).strip()
        elif key == 'input':
            value = dict(value, shape=[1, 3, int(height), int(width)])
        elif key in ('evaluation', 'latency_ms'):
            value = {}
        elif key in ('latency_note', 'reexport'):
            continue
        new[key] = value
        if key == 'model_file':
            new['reexport'] = reexport
    return new


def resized_card(src_card, out_path, width, height, command):
    """Return the card dict of a model written by :func:`resize_model` (see the module doc)."""
    from freespace_seg.perception.engines.engine_cache import file_sha256

    src_file = src_card.model_file
    trained = [src_card.input_width, src_card.input_height]
    return card_at_size(
        src_card, out_path, width, height,
        f'{src_card.name} at a {width}x{height} input (trained at {trained[0]}x{trained[1]}) '
        'by python -m freespace_seg resize-input.',
        {'source_model': os.path.basename(src_file),
         'source_model_sha256': file_sha256(src_file),
         'trained_input_size': trained,
         'input_size': [int(width), int(height)],
         'method': 'the ONNX graph rewritten: input shape and decoder Resize sizes (the same '
                   'weights and quantization)',
         'command': command,
         'note': 'the same weights at another input size: the scene at another scale, not a '
                 'model trained for this size'})


def add_arguments(parser):
    """Add the ``resize-input`` options to ``parser``."""
    parser.add_argument('--model', required=True,
                        help='ONNX model with its card beside it (fp32 or INT8)')
    parser.add_argument('--size', required=True, metavar='WxH',
                        help='the new network input size, e.g. 384x216')
    parser.add_argument('--out', help='model to write (default: <model stem>_<W>x<H>.onnx '
                                      'beside the model); its card goes beside it')


def run(args):
    """Write the model at the new size and its card; return the exit code (2: bad input)."""
    from freespace_seg.common.values import split_size
    from freespace_seg.perception.model_card import (card_from_dict, card_path_for_model,
                                                     load_card, ModelCardError)
    from freespace_seg.training.card import dump_card

    def fail(text):
        print(f'resize-input: error: {text}', file=sys.stderr, flush=True)
        return 2

    try:
        width, height = split_size(args.size)
    except ValueError as e:
        return fail(f'--size: {e}')
    if not os.path.isfile(args.model):
        return fail(f'model not found: {args.model}')
    try:
        card = load_card(card_path_for_model(args.model))
    except ModelCardError as e:
        return fail(str(e))
    card = dataclasses.replace(card, model_file=os.path.abspath(args.model))
    stem = os.path.splitext(args.model)[0]
    out = args.out or f'{stem}_{width}x{height}.onnx'
    if os.path.abspath(out) == os.path.abspath(args.model):
        return fail('--out would overwrite the model')
    command = (f'python -m freespace_seg resize-input --model {args.model} '
               f'--size {width}x{height} --out {out}')
    try:
        model, plan = resize_model(args.model, width, height)
    except ResizeInputError as e:
        return fail(str(e))
    import onnx

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    onnx.save(model, out)
    card_path = os.path.splitext(out)[0] + '.yaml'
    raw = resized_card(card, out, width, height, command)
    card_from_dict(raw, card_path)  # a valid card?
    dump_card(raw, card_path)
    for name, sizes in plan:
        print(f'resize-input: {name}: sizes {sizes}', file=sys.stderr)
    print(f'resize-input: wrote {out} ({width}x{height}, trained at {card.input_width}x'
          f'{card.input_height}) and {card_path}; score it with `python -m freespace_seg '
          f'eval --model {out} --update-card`')
    return 0
