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
``python -m freespace_seg quantize``: a static INT8 (QDQ) copy of a model, with its card.

ONNX Runtime's ``quantize_static`` in the QDQ format: weights int8 per output channel,
activations uint8 per tensor, the activation ranges calibrated on synthetic frames that
training never saw (their own seed), each frame turned into a tensor by the node's own
:class:`freespace_seg.perception.preprocess.Preprocessor`, so calibration sees exactly what the
node feeds the model. The model is first cleaned up with ``quant_pre_process`` (shape inference
and graph optimization, which folds BatchNorm into the convolutions).

Writes ``<stem>_int8.onnx`` beside the model (or ``--out``) and its card: a copy of the
fp32 card with ``name`` and ``model_file`` changed, a ``quantization`` section (method,
calibration frames and seed, agreement with the fp32 model on other frames), and the fp32
card's ``evaluation`` and ``latency_ms`` removed: score the INT8 model with
``python -m freespace_seg eval --model <stem>_int8.onnx --render 300 --update-card``.

Example::

    python -m freespace_seg quantize --model models/freespace_unet.onnx
"""

import datetime
import hashlib
import os
import sys
import tempfile
import time

from freespace_seg.common.machine import cpu_label, machine_info
import numpy as np
import yaml

DEFAULT_MODEL = os.path.join('models', 'freespace_lite0.onnx')
#: seed of the calibration frames: training renders seeds 0 (train) and 1 (val), eval 1000
CALIBRATION_SEED = 4242
CALIBRATION_METHODS = ('minmax', 'entropy', 'percentile')
#: ``--fp32-nodes auto`` keeps this encoder block in fp32 when the model has it
AUTO_FP32_PREFIX = '/encoder/_blocks.0/'


def add_arguments(parser):
    """Add the ``quantize`` options to ``parser``."""
    parser.add_argument('--model', default=DEFAULT_MODEL,
                        help='fp32 ONNX model with its card beside it (default: %(default)s)')
    parser.add_argument('--out', help='INT8 model to write (default: <model stem>_int8.onnx '
                                      'beside the model); its card goes beside it')
    parser.add_argument('--frames', type=int, default=64,
                        help='calibration frames (default: %(default)s)')
    parser.add_argument('--seed', type=int, default=CALIBRATION_SEED,
                        help='renderer seed of the calibration frames; keep it apart from the '
                             'training (0, 1) and evaluation (1000) seeds '
                             '(default: %(default)s)')
    parser.add_argument('--width', type=int, default=480,
                        help='camera width of the rendered frames (default: %(default)s)')
    parser.add_argument('--height', type=int, default=270,
                        help='camera height of the rendered frames (default: %(default)s)')
    parser.add_argument('--method', default='minmax', choices=CALIBRATION_METHODS,
                        help='activation range calibration (default: %(default)s)')
    parser.add_argument('--per-tensor', action='store_true',
                        help='one weight scale per tensor instead of per output channel')
    parser.add_argument('--weights', default='int8', choices=WEIGHT_FORMATS,
                        help='weight format: int8 (full range, fastest where the CPU has VNNI); '
                             'int8-reduced (7-bit range, ONNX Runtime reduce_range): no '
                             'saturation in the u8 x s8 kernels of x86 CPUs with AVX2 or '
                             'AVX-512 but no VNNI; uint8: u8 x u8, no saturation either '
                             '(default: %(default)s)')
    parser.add_argument('--no-pre-process', action='store_true',
                        help='skip quant_pre_process (shape inference, graph optimization)')
    parser.add_argument('--calibration-effects', metavar='all|EFFECT,...',
                        help='pass a share of the calibration frames through these camera '
                             'effects (as `eval --camera-effects`: exposure, white balance, '
                             'noise, blur, JPEG, wide lens), so that the activation ranges '
                             'cover degraded images too (default: none, clean frames only)')
    parser.add_argument('--effects-share', type=float, default=0.5, metavar='F',
                        help='with --calibration-effects: the share of calibration frames '
                             'that get them, in (0, 1] (default: %(default)s)')
    parser.add_argument('--fp32-nodes', metavar='auto|none|PREFIX,...', default='auto',
                        help='keep the nodes whose names start with one of these prefixes '
                             'in fp32 (names as in the fp32 model, e.g. '
                             '/encoder/_conv_stem,/head; each must match a node); auto: '
                             f'{AUTO_FP32_PREFIX} (the first block of an EfficientNet-Lite '
                             'encoder, where per-tensor uint8 activations lose most) if the '
                             'model has it, else none; none: every node (default: %(default)s)')
    parser.add_argument('--check-frames', type=int, default=8,
                        help='frames (another seed) on which the INT8 mask is compared with '
                             'the fp32 mask; 0 to skip (default: %(default)s)')


#: values of ``quantize --weights``
WEIGHT_FORMATS = ('int8', 'int8-reduced', 'uint8')


def with_effects_share(frames, seed, effects, share):
    """
    Yield the items of ``frames``, a ``share`` of them through camera ``effects``.

    Frame ``i`` gets effects when ``floor((i + 1) * share) > floor(i * share)``: exactly
    ``floor(n * share)`` of the first ``n`` frames, spread evenly. Its random numbers come
    from ``numpy.random.default_rng([seed, i])``, apart from `eval`'s seed 1000.
    """
    from freespace_seg.training.camera_effects import apply_effects

    for index, item in enumerate(frames):
        if int((index + 1) * share) > int(index * share):
            rgb, mask, _ = apply_effects(item[0], item[1],
                                         np.random.default_rng([int(seed), index]), effects)
            item = (rgb, mask) + tuple(item[2:])
        yield item


def command_line(args, out):
    """Return the ``python -m freespace_seg quantize`` command line that ``args`` stand for."""
    import shlex

    parts = ['python', '-m', 'freespace_seg', 'quantize', '--model', args.model, '--out', out,
             '--frames', str(args.frames), '--seed', str(args.seed), '--width', str(args.width),
             '--height', str(args.height), '--method', args.method]
    if args.per_tensor:
        parts.append('--per-tensor')
    if args.weights != 'int8':
        parts += ['--weights', args.weights]
    if args.no_pre_process:
        parts.append('--no-pre-process')
    if args.calibration_effects:
        parts += ['--calibration-effects', args.calibration_effects,
                  '--effects-share', str(args.effects_share)]
    parts += ['--fp32-nodes', args.fp32_nodes or 'none']
    return ' '.join(shlex.quote(p) for p in parts)


def int8_path_for(model_path):
    """Return the default INT8 file name for a model: ``foo.onnx`` -> ``foo_int8.onnx``."""
    stem, _ = os.path.splitext(model_path)
    return stem + '_int8.onnx'


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def calibration_tensors(card, frames):
    """
    Turn RGB frames into model input tensors with the node's Preprocessor.

    ``frames`` yields (H, W, 3) uint8 RGB arrays, or (rgb, label) pairs. Returns a list of
    independent tensors (the Preprocessor reuses its buffer, so each one is copied).
    """
    from freespace_seg.perception.preprocess import Preprocessor

    pres = {}
    tensors = []
    for frame in frames:
        rgb = frame[0] if isinstance(frame, tuple) else frame
        key = (rgb.shape[1], rgb.shape[0])
        if key not in pres:
            pres[key] = Preprocessor(card, *key)
        tensors.append(np.array(pres[key](rgb), copy=True))
    return tensors


def make_reader(input_name, tensors):
    """Return an onnxruntime CalibrationDataReader that feeds ``tensors`` once each."""
    from onnxruntime.quantization import CalibrationDataReader

    class _Reader(CalibrationDataReader):

        def __init__(self):
            self._it = iter(tensors)

        def get_next(self):
            tensor = next(self._it, None)
            return None if tensor is None else {input_name: tensor}

        def rewind(self):
            self._it = iter(tensors)

    return _Reader()


def nodes_matching(model_path, prefixes):
    """
    Return the names of the nodes of ``model_path`` that start with one of ``prefixes``.

    Raises ValueError naming a prefix that matches no node.
    """
    import onnx

    names = [n.name for n in onnx.load(model_path, load_external_data=False).graph.node]
    found = []
    for prefix in prefixes:
        hits = [name for name in names if name.startswith(prefix)]
        if not hits:
            raise ValueError(f'no node name starts with {prefix!r}')
        found.extend(name for name in hits if name not in found)
    return found


def resolve_fp32_nodes(spec, model_path):
    """
    Return the node name prefixes that ``--fp32-nodes spec`` keeps in fp32 for ``model_path``.

    ``auto``: :data:`AUTO_FP32_PREFIX` if a node of the model starts with it, else none;
    ``none``: none; else comma-separated prefixes, each of which must match a node. Raises
    ValueError with a message for the user.
    """
    text = (spec or 'none').strip()
    if text == 'none':
        return []
    if text == 'auto':
        try:
            nodes_matching(model_path, [AUTO_FP32_PREFIX])
        except ValueError:  # no such block: every node INT8
            return []
        return [AUTO_FP32_PREFIX]
    prefixes = [p.strip() for p in text.split(',') if p.strip()]
    if not prefixes:
        raise ValueError('give auto, none or at least one node name prefix')
    nodes_matching(model_path, prefixes)
    return prefixes


def quantize_model(model_path, out_path, tensors, input_name, method='minmax',
                   per_channel=True, pre_process=True, log=None, fp32_prefixes=(),
                   weights='int8'):
    """
    Write a static QDQ INT8 copy of ``model_path`` to ``out_path``, calibrated on ``tensors``.

    Weights are int8 (per output channel unless ``per_channel`` is False), activations
    uint8; the ONNX Runtime CPU kernels run the Q/DQ pairs around Conv as QLinearConv.
    Nodes whose names start with one of ``fp32_prefixes`` (matched in the graph that is
    quantized, after pre-processing) stay fp32. ``weights`` (:data:`WEIGHT_FORMATS`):
    ``int8-reduced`` quantizes weights to 7 bits (``reduce_range``), ``uint8`` to uint8.
    Returns a dict describing what was done, for the card.
    """
    import onnxruntime
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, quantize_static,
                                          QuantType)

    if weights not in WEIGHT_FORMATS:
        raise ValueError(f'weights must be one of {", ".join(WEIGHT_FORMATS)}, got {weights!r}')
    log = log or (lambda text: None)
    methods = {'minmax': CalibrationMethod.MinMax, 'entropy': CalibrationMethod.Entropy,
               'percentile': CalibrationMethod.Percentile}
    with tempfile.TemporaryDirectory(prefix='freespace_quant_') as tmp:
        source = model_path
        if pre_process:
            from onnxruntime.quantization.shape_inference import quant_pre_process

            source = os.path.join(tmp, 'pre.onnx')
            t0 = time.perf_counter()
            quant_pre_process(model_path, source, skip_symbolic_shape=True)
            log(f'quantize: pre-processed (shape inference, graph optimization) in '
                f'{time.perf_counter() - t0:.1f} s')
        excluded = nodes_matching(source, fp32_prefixes) if fp32_prefixes else []
        if excluded:
            log(f'quantize: {len(excluded)} nodes stay fp32: {", ".join(excluded)}')
        t0 = time.perf_counter()
        tmp_out = os.path.join(tmp, 'int8.onnx')
        quantize_static(
            source, tmp_out, make_reader(input_name, tensors),
            quant_format=QuantFormat.QDQ, per_channel=per_channel,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QUInt8 if weights == 'uint8' else QuantType.QInt8,
            reduce_range=weights == 'int8-reduced',
            calibrate_method=methods[method], nodes_to_exclude=excluded,
            extra_options={'CalibTensorRangeSymmetric': False})
        log(f'quantize: calibrated on {len(tensors)} tensors and quantized in '
            f'{time.perf_counter() - t0:.1f} s')
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        os.replace(tmp_out, out_path)
    info = {
        'method': 'static QDQ (onnxruntime.quantization.quantize_static)',
        'weights': {'int8': 'int8', 'int8-reduced': 'int8 in a 7-bit range (reduce_range)',
                    'uint8': 'uint8'}[weights] + ', '
        + ('per output channel' if per_channel else 'per tensor'),
        'activations': 'uint8, per tensor',
        'pre_process': 'quant_pre_process (shape inference, graph optimization)'
        if pre_process else 'none',
        'calibration_method': method,
        'onnxruntime': onnxruntime.__version__,
    }
    if fp32_prefixes:
        info['fp32_nodes'] = {'prefixes': list(fp32_prefixes), 'nodes': excluded}
    return info


def count_qdq_nodes(path):
    """Return (QuantizeLinear count, DequantizeLinear count) of an ONNX file."""
    import onnx

    ops = [n.op_type for n in onnx.load(path, load_external_data=False).graph.node]
    return ops.count('QuantizeLinear'), ops.count('DequantizeLinear')


def mask_agreement(fp32_path, int8_path, frames, threads=2, exact_int8=False):
    """
    Return the fraction of pixels where the two models' pipeline masks agree.

    Both run with the fp32 model's card (the INT8 card may not be written yet).
    ``exact_int8``: the INT8 model's quantized operators run as written (``eval
    --exact-int8``), so the figure does not depend on this CPU's integer kernels.
    """
    from freespace_seg.perception.pipeline import SegmentationPipeline

    a = SegmentationPipeline(fp32_path, backend='onnxruntime', num_threads=threads)
    b = SegmentationPipeline(int8_path, backend='onnxruntime', num_threads=threads,
                             card=a.card,
                             engine_options={'exact_int8': exact_int8})
    same = total = 0
    try:
        for frame in frames:
            rgb = frame[0] if isinstance(frame, tuple) else frame
            ma, mb = a.segment(rgb), b.segment(rgb)
            same += int(np.count_nonzero(ma == mb))
            total += ma.size
    finally:
        a.close()
        b.close()
    return same / total if total else float('nan')


def write_card(fp32_card_path, out_path, quantization):
    """Write the INT8 model's card: the fp32 card, renamed, with a ``quantization`` section."""
    from freespace_seg.perception.model_card import card_from_dict
    from freespace_seg.training.card import dump_card

    with open(fp32_card_path, 'r', encoding='utf-8') as f:
        card = yaml.safe_load(f)
    stem = os.path.splitext(os.path.basename(out_path))[0]
    fp32_name = card.get('name', '')
    new = {}
    for key, value in card.items():
        if key == 'name':
            value = stem
        elif key == 'model_file':
            value = os.path.basename(out_path)
        elif key == 'description':
            value = (f'Static INT8 (QDQ) quantization of {fp32_name}. ' + str(value or '')
                     ).strip()
        elif key in ('evaluation', 'latency_ms'):
            # The fp32 numbers do not describe this model: eval --update-card refills them.
            value = {}
        new[key] = value
        if key == 'model_file':
            new['quantization'] = quantization
    if 'quantization' not in new:
        new['quantization'] = quantization
    path = os.path.splitext(out_path)[0] + '.yaml'
    card_from_dict(new, path)  # still a valid card?
    dump_card(new, path)
    return path


def run(args):
    """Quantize a model and write its card; returns the process exit code."""
    from freespace_seg.common.progress import progress
    from freespace_seg.perception.model_card import card_path_for_model, load_card, ModelCardError
    from freespace_seg.training.data import rendered_frames

    if not os.path.isfile(args.model):
        print(f'quantize: model not found: {args.model}', file=sys.stderr)
        return 2
    try:
        card = load_card(card_path_for_model(args.model))
    except ModelCardError as e:
        print(f'quantize: {e}', file=sys.stderr)
        return 2
    if card.dtype != 'float32':
        print(f'quantize: the model input is {card.dtype}; quantize an fp32 model',
              file=sys.stderr)
        return 2
    if args.frames < 1:
        print('quantize: --frames must be at least 1', file=sys.stderr)
        return 2
    effects, share = None, args.effects_share
    if args.calibration_effects:
        from freespace_seg.training.camera_effects import parse_effects
        try:
            effects = parse_effects(args.calibration_effects)
        except ValueError as e:
            print(f'quantize: --calibration-effects: {e}', file=sys.stderr)
            return 2
        if not 0.0 < share <= 1.0:
            print(f'quantize: --effects-share must be in (0, 1], got {share}', file=sys.stderr)
            return 2
    try:
        fp32_prefixes = resolve_fp32_nodes(args.fp32_nodes, args.model)
    except ValueError as e:
        print(f'quantize: --fp32-nodes: {e} in {args.model}', file=sys.stderr)
        return 2
    out = args.out or int8_path_for(args.model)
    if os.path.abspath(out) == os.path.abspath(args.model):
        print('quantize: --out would overwrite the fp32 model', file=sys.stderr)
        return 2

    def log(text):
        print(text, file=sys.stderr, flush=True)

    log(f'quantize: {args.model} -> {out}: {args.frames} calibration frames at '
        f'{args.width}x{args.height}, seed {args.seed}, {args.method}')
    frames = rendered_frames(args.frames, args.seed, args.width, args.height)
    if effects:
        frames = with_effects_share(frames, args.seed, effects, share)
        log(f'quantize: {int(args.frames * share)} of the {args.frames} frames '
            f'through camera effects ({", ".join(effects)})')
    frames = progress(frames, total=args.frames, desc='calibration frames')
    tensors = calibration_tensors(card, frames)
    info = quantize_model(args.model, out, tensors, card.input_name, method=args.method,
                          per_channel=not args.per_tensor,
                          pre_process=not args.no_pre_process, log=log,
                          fp32_prefixes=fp32_prefixes, weights=args.weights)
    q, dq = count_qdq_nodes(out)
    info['qdq_nodes'] = {'QuantizeLinear': q, 'DequantizeLinear': dq}
    info['calibration'] = {
        'frames': int(args.frames),
        'seed': int(args.seed),
        'image_size': [int(args.width), int(args.height)],
        'source': 'freespace_seg.training.data.rendered_frames (procedural renderer), '
                  'through freespace_seg.perception.preprocess.Preprocessor',
    }
    if effects:
        info['calibration']['camera_effects'] = {
            'effects': list(effects), 'share': float(share),
            'frames': int(args.frames * share),
            'rng': f'numpy default_rng([{int(args.seed)}, frame index]), '
                   'freespace_seg.training.camera_effects.apply_effects'}
    info['command'] = command_line(args, out)
    info['source_model'] = os.path.basename(args.model)
    info['source_model_sha256'] = _sha256(args.model)
    info['date'] = datetime.date.today().isoformat()
    if args.check_frames > 0:
        check_seed = args.seed + 1
        checks = list(progress(rendered_frames(args.check_frames, check_seed, args.width,
                                               args.height),
                               total=args.check_frames, desc='fp32 vs int8 check'))
        agree = mask_agreement(args.model, out, checks)
        exact = mask_agreement(args.model, out, checks, exact_int8=True)
        info['agreement_with_fp32'] = {'pixel_fraction': round(float(agree), 5),
                                       'exact_int8_pixel_fraction': round(float(exact), 5),
                                       'cpu': cpu_label(machine_info()),
                                       'frames': int(args.check_frames),
                                       'seed': int(check_seed)}
        log(f'quantize: INT8 and fp32 masks agree on {100.0 * agree:.2f} % of the pixels of '
            f'{args.check_frames} frames (seed {check_seed}) on this CPU, '
            f'{100.0 * exact:.2f} % with exact INT8 arithmetic (as on a CPU with VNNI)')
    info['evaluate_with'] = ('not in this card yet: python -m freespace_seg eval --model '
                             f'{out} --render 300 --update-card')
    card_path = write_card(card.path, out, info)
    size = os.path.getsize(out) / 1e6
    log(f'quantize: wrote {out} ({size:.2f} MB, {q} QuantizeLinear / {dq} DequantizeLinear) '
        f'and {card_path}')
    return 0
