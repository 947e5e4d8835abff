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

"""bench-ops: ONNX Runtime's profile of the packaged models, per operator, part and node."""

import json

from freespace_seg.cli import main
from freespace_seg.perception.pipeline import (PACKAGED_INT8_MODEL, PACKAGED_MODEL,
                                               packaged_model_path)
from freespace_seg.tools.bench import ops
import pytest


@pytest.fixture(scope='module')
def int8():
    return ops.measure(packaged_model_path(PACKAGED_INT8_MODEL), threads=1, runs=2, warmup=1)


def test_the_int8_default_is_quantized_but_for_its_resizes_layout_and_fp32_block(int8):
    from freespace_seg.perception.model_card import load_card

    names = {r['name'] for r in int8['ops']}
    assert 'QLinearConv' in names and 'Resize' in names
    # The only float convolutions are those its card keeps in fp32 (quantize --fp32-nodes).
    # ONNX Runtime names a convolution fused with its activation after the activation's
    # output: the stem's conv and the encoder's first Clip run as '/encoder/Clip_output_0...'.
    import onnx

    path = packaged_model_path(PACKAGED_INT8_MODEL)
    card = load_card(path)
    fp32 = card.raw['quantization'].get('fp32_nodes', {})
    prefixes = tuple(fp32.get('prefixes', ()))
    graph = onnx.load(path, load_external_data=False).graph
    kept = {n.output[0] for n in graph.node if n.name in fp32.get('nodes', ())}
    prefixes += tuple(n.output[0] for n in graph.node
                      if n.op_type == 'Clip' and n.input and n.input[0] in kept)
    float_convs = [r['name'] for r in int8['nodes'] if r['op'] in ('Conv', 'FusedConv')]
    assert all(prefixes and name.startswith(prefixes) for name in float_convs), float_convs
    assert sum(r['op'] == 'QLinearConv' for r in int8['nodes']) > 10 * len(float_convs)
    text = ops.markdown(int8, top=5)
    assert 'Quantized model:' in text and '`Resize`' in text.split('Quantized model:')[1]
    node_rows = text.split('| node |')[1].splitlines()[2:]
    assert len([row for row in node_rows if row.startswith('| `')]) == 5


def test_the_time_splits_into_parts_that_add_up(int8):
    for key in ('ops', 'parts', 'nodes'):
        assert sum(r['share'] for r in int8[key]) == pytest.approx(1.0)
        assert sum(r['ms'] for r in int8[key]) == pytest.approx(int8['kernel_ms'])
        ms = [r['ms'] for r in int8[key]]
        assert ms == sorted(ms, reverse=True)
    parts = {r['name']: r['count'] for r in int8['parts']}
    assert {'encoder', 'head', 'ups.0', 'ups.3', '(top level)'} <= set(parts)
    assert sum(parts.values()) == len(int8['nodes'])


def test_only_the_timed_runs_are_counted():
    model = packaged_model_path(PACKAGED_INT8_MODEL)
    more = ops.measure(model, threads=1, runs=3, warmup=2)
    fewer = ops.measure(model, threads=1, runs=1, warmup=0)
    count = {r['name']: r['count'] for r in more['ops']}
    assert count == {r['name']: r['count'] for r in fewer['ops']}


def test_a_float_model_has_no_quantized_line(capsys, tmp_path):
    out = tmp_path / 'ops.json'
    assert main(['bench-ops', '--model', packaged_model_path(PACKAGED_MODEL), '--runs', '1',
                 '--warmup', '0', '--threads', '1', '--top', '3', '--json', str(out)]) == 0
    text = capsys.readouterr().out
    assert '| operator |' in text and 'Quantized model' not in text
    result = json.loads(out.read_text())
    assert not any(r['name'].startswith('QLinear') for r in result['ops'])


def test_a_bad_model_is_a_clear_error(capsys, tmp_path):
    assert main(['bench-ops', '--model', str(tmp_path / 'missing.onnx')]) == 2
    assert 'model file not found' in capsys.readouterr().out
    junk = tmp_path / 'junk.onnx'
    junk.write_bytes(b'not a model')
    assert main(['bench-ops', '--model', str(junk)]) == 2
    assert 'cannot load ONNX model' in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(['bench-ops', '--runs', '0'])
