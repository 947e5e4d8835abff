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

"""``resize-input``: a model's ONNX graph at another input size, checked against torch."""

import importlib
import os

from freespace_seg import cli
from freespace_seg.perception.model_card import load_card
from freespace_seg.perception.pipeline import PACKAGED_INT8_MODEL, packaged_model_path
from freespace_seg.perception.pipeline import SegmentationPipeline
import numpy as np
import pytest
from support import randomize_batchnorm, write_tiny_model

pytest.importorskip('onnx', reason='rewriting a graph needs the onnx package')
ort = pytest.importorskip('onnxruntime', reason='the checks run the models')
resize_input = importlib.import_module('freespace_seg.training.resize_input')


def _run(path, x):
    session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _x(width, height, seed=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, size=(1, 3, height, width)).astype(np.float32)


@pytest.mark.usefixtures('torch_one_thread')
def test_a_resized_unet_computes_what_torch_computes_at_that_size(tmp_path):
    """The rewritten graph equals the torch network run at the new size (odd sizes too)."""
    torch = pytest.importorskip('torch', reason='the reference is the torch network')
    export = importlib.import_module('freespace_seg.training.export')
    model_lib = importlib.import_module('freespace_seg.training.model')
    torch.manual_seed(0)
    model = randomize_batchnorm(model_lib.build_model(widths=(4, 6, 8, 8, 8)), mean=0.2).eval()
    path = str(tmp_path / 'unet.onnx')
    export.export_and_verify(model, path, 64, 48)
    for width, height in ((96, 32), (72, 40), (64, 48)):
        rewritten, plan = resize_input.resize_model(path, width, height)
        out = str(tmp_path / f'unet_{width}x{height}.onnx')
        import onnx
        onnx.save(rewritten, out)
        x = _x(width, height)
        got = _run(out, x)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        assert got.shape == want.shape == (1, 2, height, width)
        assert np.abs(got - want).max() <= 1e-4, (width, height)
        assert plan[-1][1] == [1, 2, height, width]  # the last resize: to the input


def test_the_shipped_int8_model_at_its_own_size_is_unchanged_and_runs_at_others(tmp_path):
    src = packaged_model_path(PACKAGED_INT8_MODEL)
    # The default model runs at 384x216 (run x, trained at that size).
    same, _ = resize_input.resize_model(src, 384, 216)
    import onnx
    onnx.save(same, str(tmp_path / 'same.onnx'))
    x = _x(384, 216)
    np.testing.assert_array_equal(_run(str(tmp_path / 'same.onnx'), x), _run(src, x))

    large, plan = resize_input.resize_model(src, 480, 272)
    onnx.save(large, str(tmp_path / 'large.onnx'))
    assert _run(str(tmp_path / 'large.onnx'), _x(480, 272)).shape == (1, 2, 272, 480)
    # five decoder resizes: to the skips at 1/16, 1/8, 1/4, 1/2 of 480x272, then the input
    assert [p[1][2:] for p in plan] == [[17, 30], [34, 60], [68, 120], [136, 240], [272, 480]]
    # the quantization is kept: as many Q/DQ nodes as before
    ops = [n.op_type for n in large.graph.node]
    ops_before = [n.op_type for n in onnx.load(src).graph.node]
    assert ops.count('DequantizeLinear') == ops_before.count('DequantizeLinear')


def test_the_command_writes_a_card_that_the_pipeline_runs(tmp_path, capsys):
    src = packaged_model_path(PACKAGED_INT8_MODEL)
    out = str(tmp_path / 'm' / 'fast.onnx')
    assert cli.main(['resize-input', '--model', src, '--size', '320x180', '--out', out]) == 0
    card = load_card(out)
    assert card.name == 'fast' and (card.input_width, card.input_height) == (320, 180)
    assert card.raw['reexport']['trained_input_size'] == [384, 216]
    assert card.raw['reexport']['input_size'] == [320, 180]
    assert '--size 320x180' in card.raw['reexport']['command']
    assert not card.raw['evaluation'] and 'quantization' in card.raw
    assert 'wrote' in capsys.readouterr().out

    # Through the node's pipeline a 16:9 camera frame fills the input with no padding.
    pipeline = SegmentationPipeline(out, num_threads=1)
    try:
        rgb = np.zeros((720, 1280, 3), np.uint8)
        rgb[360:] = (60, 200, 60)  # green floor in the lower half
        mask = pipeline.segment(rgb)
        assert mask.shape == (720, 1280)
        assert pipeline.preprocessor(1280, 720).letterbox.pad_top == 0
    finally:
        pipeline.close()

    # the default output name
    assert cli.main(['resize-input', '--model', out, '--size', '256x144']) == 0
    assert os.path.isfile(str(tmp_path / 'm' / 'fast_256x144.onnx'))
    assert load_card(str(tmp_path / 'm' / 'fast_256x144.onnx')).raw['reexport'][
        'trained_input_size'] == [320, 180]


@pytest.mark.parametrize('args, message', [
    (['--size', '384by216'], 'expected WIDTHxHEIGHT'),
    (['--size', '16x216'], 'at least 32x32'),
    (['--size', '384x216', '--model', 'missing.onnx'], 'model not found'),
])
def test_bad_options_exit_2(args, message, capsys):
    argv = ['resize-input', '--model', packaged_model_path(PACKAGED_INT8_MODEL)] + args
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_model_without_decoder_resizes_is_refused(tmp_path, capsys):
    path = write_tiny_model(str(tmp_path))
    assert cli.main(['resize-input', '--model', path, '--size', '96x64']) == 2
    assert 'no Resize with sizes' in capsys.readouterr().err
    assert cli.main(['resize-input', '--model', path, '--size', '96x64', '--out', path]) == 2
    assert 'overwrite' in capsys.readouterr().err


@pytest.mark.usefixtures('torch_one_thread')
def test_the_shipped_lite0_resized_equals_its_torch_rebuild_at_that_size(tmp_path):
    """The Lite0 rebuilt in torch from its ONNX file, run at 384x216, is what the graph says."""
    torch = pytest.importorskip('torch', reason='the reference is the torch network')
    rebuild = importlib.import_module('freespace_seg.training.rebuild')
    from freespace_seg.perception.pipeline import PACKAGED_LITE0_MODEL
    src = packaged_model_path(PACKAGED_LITE0_MODEL)
    model = rebuild.rebuild_torch_model(src).eval()
    rewritten, _ = resize_input.resize_model(src, 384, 216)
    import onnx
    onnx.save(rewritten, str(tmp_path / 'l0.onnx'))
    x = _x(384, 216)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    got = _run(str(tmp_path / 'l0.onnx'), x)
    assert got.shape == want.shape == (1, 2, 216, 384)
    assert np.abs(got - want).max() <= 1e-3
