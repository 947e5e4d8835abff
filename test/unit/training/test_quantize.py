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

"""``python -m freespace_seg quantize`` on a small real conv net: Q/DQ nodes, same masks."""

import gc
import os

import numpy as np
import pytest
from support import green_red_image, tiny_card
import yaml

pytest.importorskip('onnx', reason='quantization needs the onnx package')
pytest.importorskip('onnxruntime.quantization', reason='needs onnxruntime.quantization')


@pytest.fixture(autouse=True)
def collect_garbage():
    """
    Free the quantizer's onnx/protobuf objects in this process after each test.

    Left to a later cyclic collection they may be freed in a child that a later test forks
    (flake8's worker pool), where freeing them crashes once rclpy is initialized.
    """
    yield
    gc.collect()


NAMES = ('/enc/conv1', '/enc/relu1', '/enc/conv2', '/enc/relu2', '/head/conv')


def write_conv_net(directory, width=64, height=48, name='convnet', names=NAMES):
    """
    Write a 3-layer conv net (3x3, ReLU, 3x3, ReLU, 1x1) and its card; free where G > R.

    The first layer splits smoothed G - R into positive and negative parts (plus a little
    noise from other channels), the second mixes them, the head compares them: a real
    convolutional network whose decision has a clear margin on coloured images.
    """
    import onnx
    from onnx import helper, numpy_helper, TensorProto

    rng = np.random.default_rng(0)
    w1 = rng.normal(0.0, 0.01, (8, 3, 3, 3)).astype(np.float32)
    w1[:4, 1] += 1.0 / 9.0   # G - R
    w1[:4, 0] -= 1.0 / 9.0
    w1[4:, 0] += 1.0 / 9.0   # R - G
    w1[4:, 1] -= 1.0 / 9.0
    b1 = rng.normal(0.0, 0.01, 8).astype(np.float32)
    w2 = rng.normal(0.0, 0.02, (8, 8, 3, 3)).astype(np.float32)
    for c in range(8):
        w2[c, c, 1, 1] += 1.0
    w3 = np.zeros((2, 8, 1, 1), np.float32)
    w3[1, :4], w3[1, 4:] = 1.0, -1.0
    w3[0] = -w3[1]
    nodes = [
        helper.make_node('Conv', ['input', 'w1', 'b1'], ['c1'], name=names[0],
                         pads=[1, 1, 1, 1]),
        helper.make_node('Relu', ['c1'], ['r1'], name=names[1]),
        helper.make_node('Conv', ['r1', 'w2'], ['c2'], name=names[2], pads=[1, 1, 1, 1]),
        helper.make_node('Relu', ['c2'], ['r2'], name=names[3]),
        helper.make_node('Conv', ['r2', 'w3'], ['logits'], name=names[4]),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, height, width])],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 2, height, width])],
        [numpy_helper.from_array(w1, 'w1'), numpy_helper.from_array(b1, 'b1'),
         numpy_helper.from_array(w2, 'w2'), numpy_helper.from_array(w3, 'w3')])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(str(directory), name + '.onnx')
    onnx.save(model, path)
    card = tiny_card(width, height, name=name, model_file=name + '.onnx',
                     evaluation={'synthetic_test': {'miou': 0.5}},
                     latency_ms={'onnxruntime_cpu_2threads_64x48_median': 0.1})
    with open(os.path.join(str(directory), name + '.yaml'), 'w') as f:
        yaml.safe_dump(card, f)
    return path


def noisy_frames(seed=0):
    """Green/red frames of several sizes with noise and a soft band between the halves."""
    rng = np.random.default_rng(seed)
    frames = []
    for (w, h) in ((64, 48), (96, 54), (40, 60)):
        img = green_red_image(w, h, free_rows=h // 2).astype(np.int16)
        img += rng.integers(-20, 21, img.shape, dtype=np.int16)
        frames.append(np.clip(img, 0, 255).astype(np.uint8))
    return frames


def test_quantize_cli_writes_a_qdq_model_that_agrees_with_fp32(tmp_path, capsys):
    from freespace_seg import cli
    from freespace_seg.perception.model_card import load_card
    from freespace_seg.perception.pipeline import SegmentationPipeline
    from freespace_seg.training.quantize import count_qdq_nodes, int8_path_for

    fp32 = write_conv_net(tmp_path)
    rc = cli.main(['quantize', '--model', fp32, '--frames', '4', '--width', '64', '--height',
                   '36', '--check-frames', '2'])
    assert rc == 0
    int8 = int8_path_for(fp32)
    assert int8 == str(tmp_path / 'convnet_int8.onnx')
    assert os.path.isfile(int8)
    err = capsys.readouterr().err
    assert 'calibration frames' in err and 'agree on' in err

    q, dq = count_qdq_nodes(int8)
    assert q > 0 and dq > 0

    card = load_card(str(tmp_path / 'convnet_int8.yaml'))
    assert card.name == 'convnet_int8'
    assert card.model_path == int8
    quant = card.raw['quantization']
    assert quant['calibration']['frames'] == 4
    assert quant['calibration']['seed'] != 0 and quant['calibration']['seed'] != 1000
    assert quant['weights'].startswith('int8') and 'per output channel' in quant['weights']
    assert quant['qdq_nodes'] == {'QuantizeLinear': q, 'DequantizeLinear': dq}
    # --fp32-nodes auto finds no EfficientNet-Lite block here: every node is quantized.
    assert 'fp32_nodes' not in quant and quant['command'].endswith('--fp32-nodes auto')
    agreement = quant['agreement_with_fp32']
    assert 0.0 <= agreement['pixel_fraction'] <= 1.0
    # Also with the quantized operators as written (this CPU's kernels aside), CPU named.
    assert 0.0 <= agreement['exact_int8_pixel_fraction'] <= 1.0
    from freespace_seg.common.machine import cpu_label, machine_info
    assert agreement['cpu'] == cpu_label(machine_info())
    # The fp32 numbers do not describe the INT8 model.
    assert card.evaluation == {}
    assert not card.raw.get('latency_ms')

    a = SegmentationPipeline(fp32, backend='onnxruntime', num_threads=1)
    b = SegmentationPipeline(int8, backend='onnxruntime', num_threads=1)  # its own card
    try:
        for rgb in noisy_frames():
            ma, mb = a.segment(rgb), b.segment(rgb)
            assert ma.shape == mb.shape == rgb.shape[:2]
            assert np.mean(ma == mb) >= 0.99
            # The net itself works: bottom half free, top half blocked.
            assert np.mean(mb[-rgb.shape[0] // 4:] == 1) > 0.95
            assert np.mean(mb[:rgb.shape[0] // 4] == 0) > 0.95
    finally:
        a.close()
        b.close()


def test_quantize_refuses_to_overwrite_and_missing_models(tmp_path):
    from freespace_seg import cli

    fp32 = write_conv_net(tmp_path)
    assert cli.main(['quantize', '--model', fp32, '--out', fp32]) == 2
    assert cli.main(['quantize', '--model', str(tmp_path / 'missing.onnx')]) == 2


def test_calibration_tensors_are_what_the_node_feeds(tmp_path):
    from freespace_seg.perception.model_card import load_card
    from freespace_seg.perception.preprocess import Preprocessor
    from freespace_seg.training.quantize import calibration_tensors

    write_conv_net(tmp_path)
    card = load_card(str(tmp_path / 'convnet.yaml'))
    frames = noisy_frames(1)
    tensors = calibration_tensors(card, [(f, None) for f in frames])
    assert len(tensors) == len(frames)
    for rgb, tensor in zip(frames, tensors):
        expect = Preprocessor(card, rgb.shape[1], rgb.shape[0])(rgb)
        np.testing.assert_array_equal(tensor, expect)
    # Independent copies, not one reused buffer.
    assert not np.shares_memory(tensors[0], tensors[1])


def test_calibration_effects_reach_a_share_of_the_frames(tmp_path, capsys):
    from freespace_seg import cli
    from freespace_seg.perception.model_card import load_card
    from freespace_seg.training.quantize import with_effects_share

    rng = np.random.default_rng(3)
    frames = [(rng.integers(0, 256, (36, 64, 3), dtype=np.uint8),
               np.zeros((36, 64), np.uint8)) for _ in range(8)]
    out = list(with_effects_share(iter(frames), 4242, ('exposure', 'noise'), 0.25))
    changed = [i for i, (a, b) in enumerate(zip(frames, out)) if not np.array_equal(a[0], b[0])]
    assert changed == [3, 7]
    again = list(with_effects_share(iter(frames), 4242, ('exposure', 'noise'), 0.25))
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(out, again))

    fp32 = write_conv_net(tmp_path)
    rc = cli.main(['quantize', '--model', fp32, '--frames', '4', '--width', '64', '--height',
                   '36', '--check-frames', '0', '--calibration-effects', 'all'])
    assert rc == 0
    assert '2 of the 4 frames through camera effects' in capsys.readouterr().err
    fx = load_card(str(tmp_path / 'convnet_int8.yaml')).raw['quantization']['calibration']
    assert fx['camera_effects']['frames'] == 2 and fx['camera_effects']['share'] == 0.5
    assert 'jpeg' in fx['camera_effects']['effects']

    assert cli.main(['quantize', '--model', fp32, '--calibration-effects', 'fog']) == 2
    assert cli.main(['quantize', '--model', fp32, '--calibration-effects', 'all',
                     '--effects-share', '0']) == 2
    assert 'effects' in capsys.readouterr().err


def test_fp32_nodes_stay_unquantized_and_are_in_the_card(tmp_path, capsys):
    import onnx
    from freespace_seg import cli
    from freespace_seg.perception.model_card import load_card

    fp32 = write_conv_net(tmp_path)
    rc = cli.main(['quantize', '--model', fp32, '--frames', '4', '--width', '64', '--height',
                   '36', '--check-frames', '2', '--fp32-nodes', '/enc/conv1, /head'])
    assert rc == 0
    assert '2 nodes stay fp32: /enc/conv1, /head/conv' in capsys.readouterr().err
    graph = onnx.load(str(tmp_path / 'convnet_int8.onnx')).graph
    weights = {i.name for i in graph.initializer}
    producers = {o: n.op_type for n in graph.node for o in n.output}
    convs = {n.name: n for n in graph.node if n.op_type == 'Conv'}
    # The kept convolutions read their fp32 weights directly, the other one dequantized int8.
    assert convs['/enc/conv1'].input[1] in weights
    assert convs['/head/conv'].input[1] in weights
    assert producers[convs['/enc/conv2'].input[1]] == 'DequantizeLinear'
    quant = load_card(str(tmp_path / 'convnet_int8.yaml')).raw['quantization']
    assert quant['fp32_nodes'] == {'prefixes': ['/enc/conv1', '/head'],
                                   'nodes': ['/enc/conv1', '/head/conv']}
    assert quant['command'].endswith("--fp32-nodes '/enc/conv1, /head'")
    assert 'evaluate_with' in quant
    # The command line makes the same model again.
    import shlex
    argv = shlex.split(quant['command'])[3:]
    again = str(tmp_path / 'again_int8.onnx')
    argv[argv.index('--out') + 1] = again
    assert cli.main(argv + ['--check-frames', '0']) == 0
    assert [n.name for n in onnx.load(again).graph.node] == [n.name for n in graph.node]
    # Scoring the model fills its evaluation and drops the note that it has none.
    from freespace_seg.training.card import update_card
    update_card(str(tmp_path / 'convnet_int8.yaml'), {'synthetic_test': {'miou': 0.9}})
    quant = load_card(str(tmp_path / 'convnet_int8.yaml')).raw['quantization']
    assert 'evaluate_with' not in quant and quant['fp32_nodes']['nodes']
    assert quant['agreement_with_fp32']['pixel_fraction'] >= 0.99

    # A prefix that names no node, or none at all, is refused before calibration.
    assert cli.main(['quantize', '--model', fp32, '--fp32-nodes', '/decoder']) == 2
    assert "no node name starts with '/decoder'" in capsys.readouterr().err
    assert cli.main(['quantize', '--model', fp32, '--fp32-nodes', ' , ']) == 2
    assert 'give auto, none or at least one node name prefix' in capsys.readouterr().err


def test_fp32_nodes_auto_keeps_the_first_encoder_block_if_there_is_one(tmp_path):
    from freespace_seg.training.quantize import resolve_fp32_nodes

    plain = write_conv_net(tmp_path)
    lite = write_conv_net(tmp_path, name='lite', names=(
        '/encoder/_conv_stem/Conv', '/encoder/Relu', '/encoder/_blocks.0/_depthwise_conv/Conv',
        '/encoder/_blocks.0/Relu', '/head/Conv'))
    assert resolve_fp32_nodes('auto', plain) == []
    assert resolve_fp32_nodes('auto', lite) == ['/encoder/_blocks.0/']
    assert resolve_fp32_nodes('none', lite) == []
    assert resolve_fp32_nodes('/head,/encoder/_conv_stem', lite) == ['/head',
                                                                     '/encoder/_conv_stem']
    with pytest.raises(ValueError, match='/decoder'):
        resolve_fp32_nodes('/decoder', lite)


def test_weights_formats_reach_the_graph_the_card_and_the_command(tmp_path):
    """--weights int8-reduced keeps weights in 7 bits; uint8 stores them unsigned."""
    import onnx
    from onnx import numpy_helper

    from freespace_seg import cli
    from freespace_seg.perception.model_card import load_card

    fp32 = write_conv_net(tmp_path)
    seen = {}
    for weights in ('int8', 'int8-reduced', 'uint8'):
        out = str(tmp_path / f'w_{weights}.onnx')
        assert cli.main(['quantize', '--model', fp32, '--out', out, '--frames', '4',
                         '--width', '64', '--height', '36', '--check-frames', '0',
                         '--weights', weights]) == 0
        graph = onnx.load(out).graph
        # The weight initializers feed DequantizeLinear (the activations' are computed).
        inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
        quantized = [inits[n.input[0]] for n in graph.node
                     if n.op_type == 'DequantizeLinear' and n.input[0] in inits
                     and inits[n.input[0]].ndim == 4]
        assert quantized, 'no quantized convolution weights found'
        seen[weights] = quantized
        quant = load_card(out.replace('.onnx', '.yaml')).raw['quantization']
        if weights == 'int8':
            assert '--weights' not in quant['command'] and quant['weights'].startswith('int8,')
        else:
            assert quant['command'].split('--weights ')[1].startswith(weights)
    assert all(w.dtype == np.int8 for w in seen['int8'])
    assert max(int(np.abs(w.astype(np.int32)).max()) for w in seen['int8']) > 64
    assert all(w.dtype == np.int8 for w in seen['int8-reduced'])
    assert max(int(np.abs(w.astype(np.int32)).max()) for w in seen['int8-reduced']) <= 64
    assert all(w.dtype == np.uint8 for w in seen['uint8'])
    with pytest.raises(SystemExit):
        cli.main(['quantize', '--model', fp32, '--weights', 'int4'])
