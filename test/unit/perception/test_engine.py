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

"""The engine interface on a real ONNX Runtime session with a tiny model built here."""

import os

from freespace_seg.perception.engines import create_engine, EngineError
from freespace_seg.perception.engines.base import BackendUnavailable
from freespace_seg.perception.engines.onnxruntime import available_providers, GPU_PROVIDERS
from freespace_seg.perception.engines.tensorrt import tensorrt_unavailable_reason
from freespace_seg.perception.model_card import load_card
from freespace_seg.perception.pipeline import SegmentationPipeline
import numpy as np
import pytest
from support import green_red_image, write_tiny_model


def test_onnxruntime_engine_runs_the_model(tiny_model):
    card = load_card(tiny_model)
    engine, notes = create_engine(card, 'onnxruntime', num_threads=1)
    assert engine.backend == 'onnxruntime'
    assert 'CPUExecutionProvider' in engine.devices
    x = np.zeros((1, 3, 48, 64), np.float32)
    x[0, 1, :24] = 1.0                          # green in the top half
    out = engine.run(x)
    assert out.shape == (1, 2, 48, 64)
    assert np.all(out[0, 1, :24] > out[0, 0, :24])
    assert np.all(out[0, 1, 24:] == out[0, 0, 24:])
    assert notes[-1].startswith('onnxruntime: chosen')
    engine.close()
    with pytest.raises(EngineError, match='closed'):
        engine.run(x)


@pytest.mark.skipif(tensorrt_unavailable_reason() is None or any(
    p in available_providers() for p in GPU_PROVIDERS),
    reason='TensorRT or an onnxruntime GPU provider is installed here')
def test_auto_falls_back_to_onnxruntime_and_says_why(tiny_model):
    engine, notes = create_engine(load_card(tiny_model), 'auto')
    assert engine.backend == 'onnxruntime'
    assert notes[0].startswith('tensorrt: skipped:') and 'tensorrt' in notes[0]
    assert notes[1].startswith('onnxruntime_gpu: skipped:')
    assert notes[2].startswith('onnxruntime: chosen')


@pytest.mark.skipif(tensorrt_unavailable_reason() is None, reason='TensorRT is installed here')
def test_explicit_unavailable_backend_is_an_error_not_a_fallback(tiny_model):
    with pytest.raises(BackendUnavailable, match="'tensorrt' was requested"):
        create_engine(load_card(tiny_model), 'tensorrt')


def test_unknown_backend(tiny_model):
    with pytest.raises(EngineError, match='unknown backend'):
        create_engine(load_card(tiny_model), 'openvino')


def test_model_that_disagrees_with_its_card(tmp_path):
    path = write_tiny_model(tmp_path, card_overrides={})
    card = load_card(path)
    wrong_size = card.raw.copy()
    for field, change, fragment in [
            ('input', {'shape': [1, 3, 96, 64]}, 'shape'),
            ('input', {'name': 'image'}, "no input 'image'"),
            ('output', {'name': 'scores'}, "no output 'scores'"),
            ('input', {'dtype': 'uint8'}, 'uint8')]:
        bad_dir = tmp_path / f'{field}_{fragment[:5].strip()}'
        bad_dir.mkdir()
        entry = dict(wrong_size[field], **change)
        bad = write_tiny_model(bad_dir, card_overrides={field: entry})
        with pytest.raises(EngineError, match=fragment):
            create_engine(load_card(bad), 'onnxruntime')


def test_missing_and_corrupt_model_files(tmp_path):
    path = write_tiny_model(tmp_path)
    os.remove(path)
    with pytest.raises(EngineError, match='not found'):
        create_engine(load_card(path), 'onnxruntime')
    with open(path, 'wb') as f:
        f.write(b'this is not an onnx file')
    with pytest.raises(EngineError, match='cannot load ONNX model'):
        create_engine(load_card(path), 'onnxruntime')


@pytest.mark.parametrize('size', [(64, 48), (1280, 720), (333, 500)])
def test_pipeline_end_to_end_at_camera_resolution(tiny_model, size):
    w, h = size
    pipe = SegmentationPipeline(tiny_model, 'onnxruntime', 1)
    rgb = green_red_image(w, h, free_rows=h // 3)
    mask = pipe.segment(rgb)
    assert mask.shape == (h, w) and mask.dtype == np.uint8
    truth = (rgb[..., 1] > rgb[..., 0]).astype(np.uint8)
    # Only the rows at the boundary, about one network pixel tall, may differ.
    lb = pipe.preprocessor(w, h).letterbox
    assert np.mean(mask != truth) <= 1.5 / lb.content_h
    free = pipe.free_mask(mask)
    assert set(np.unique(free)) <= {0, 255}
    assert set(pipe.timings) == {'preprocess', 'inference', 'postprocess'}
