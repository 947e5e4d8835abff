"""
``python -m freespace_seg eval``: IoU, mIoU, F1 and pixel accuracy of an ONNX model.

Inference goes through :class:`freespace_seg.pipeline.SegmentationPipeline` on ONNX
Runtime (CPU), reading the model card beside the ``.onnx``, so the scores are those of what
the robot runs: the same letterbox, normalization and mapping of the mask back to camera
pixels. No torch is needed.

Examples::

    python -m freespace_seg eval --model models/freespace_unet.onnx --data data/synth --split test
    python -m freespace_seg eval --model models/freespace_unet.onnx --render 300 --seed 7 \
        --update-card

Results are printed and saved as ``metrics.json`` and ``metrics.md`` in ``--out``.
"""

import datetime
import json
import os
import statistics
import sys
import time

from freespace_seg import metrics
from freespace_seg.training import data as datasets
import numpy as np
import yaml

DEFAULT_MODEL = os.path.join('models', 'freespace_unet.onnx')
ROUND = 4


def add_arguments(parser):
    """Add the ``eval`` options to ``parser``."""
    parser.add_argument('--model', default=DEFAULT_MODEL,
                        help='ONNX model with its card (same stem, .yaml) beside it '
                             '(default: %(default)s)')
    src = parser.add_argument_group('data (one of --data or --render)')
    src.add_argument('--data', metavar='DIR',
                     help='dataset directory written by `python -m freespace_seg generate`')
    src.add_argument('--split', default='test', choices=datasets.SPLITS,
                     help='split of --data to score (default: %(default)s)')
    src.add_argument('--render', type=int, metavar='N',
                     help='render N frames on the fly with the synthetic renderer instead')
    src.add_argument('--seed', type=int, default=1000,
                     help='seed of the rendered frames (default: %(default)s; use one that '
                          'training never saw)')
    src.add_argument('--width', type=int, default=480,
                     help='width of rendered frames (default: %(default)s)')
    src.add_argument('--height', type=int, default=270,
                     help='height of rendered frames (default: %(default)s)')
    src.add_argument('--limit', type=int, help='score at most this many frames')
    parser.add_argument('--out', metavar='DIR',
                        help='where to write metrics.json and metrics.md '
                             '(default: data/eval/<model>-<source>)')
    parser.add_argument('--threads', type=int, default=2,
                        help='ONNX Runtime intra-op threads (default: %(default)s)')
    parser.add_argument('--latency-runs', type=int, default=50,
                        help='timed runs of the bare model for the latency figure, 0 to skip '
                             '(default: %(default)s)')
    parser.add_argument('--update-card', action='store_true',
                        help='write the scores (and latency) into the model card as '
                             'evaluation.synthetic_<split>')


# ---------------------------------------------------------------------------------------------
# Scoring


def evaluate_frames(model_path, frames, total=None, threads=2, desc='eval'):
    """
    Segment (rgb, mask) frames with the ONNX pipeline and score them.

    Returns ``(summary, seconds_per_image)`` where ``summary`` is
    :func:`freespace_seg.metrics.summarize` of the accumulated confusion matrix plus
    ``images``.
    """
    from freespace_seg.pipeline import SegmentationPipeline
    from freespace_seg.progress import progress

    pipe = SegmentationPipeline(model_path, backend='onnxruntime', num_threads=threads)
    names = list(pipe.card.class_names)
    acc = metrics.ConfusionAccumulator(len(names))
    seconds = 0.0
    for rgb, label in progress(frames, total=total, desc=desc):
        t0 = time.perf_counter()
        pred = pipe.segment(rgb)
        seconds += time.perf_counter() - t0
        acc.update(pred, label)
    positive = names[pipe.card.free_space[0]]
    summary = metrics.summarize(acc.matrix, names, positive_class=positive)
    summary['images'] = acc.images
    return summary, seconds / max(acc.images, 1)


def measure_latency(model_path, threads=2, runs=50, warmup=10):
    """
    Median, mean and 90th percentile wall time (ms) of one bare ONNX Runtime run.

    The input is a fixed random tensor of the model's static input shape; preprocessing and
    postprocessing are not included.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    session = ort.InferenceSession(model_path, sess_options=opts,
                                   providers=['CPUExecutionProvider'])
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    x = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(np.float32)
    feed = {inp.name: x}
    for _ in range(int(warmup)):
        session.run(None, feed)
    times = []
    for _ in range(max(int(runs), 1)):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t0) * 1000.0)
    times.sort()
    return {
        'median': round(statistics.median(times), 2),
        'mean': round(statistics.fmean(times), 2),
        'p90': round(times[min(len(times) - 1, int(0.9 * len(times)))], 2),
        'runs': len(times),
        'threads': int(threads),
        'shape': shape,
    }


def latency_key(threads, shape):
    """Card key for a latency figure, e.g. ``onnxruntime_cpu_2threads_480x272_median``."""
    return f'onnxruntime_cpu_{int(threads)}threads_{shape[-1]}x{shape[-2]}_median'


# ---------------------------------------------------------------------------------------------
# Reports and the model card


def _r(x):
    return None if x is None else round(float(x), ROUND)


def card_scores(summary, split_seed, source):
    """Return the card's ``evaluation.synthetic_<split>`` entry for a summary."""
    names = list(summary['iou'])
    positive = [k for k in summary if k.startswith('f1_') and k != 'f1_macro']
    entry = {
        'miou': _r(summary['miou']),
        'iou': {n: _r(summary['iou'][n]) for n in names},
    }
    for key in positive:
        entry[key] = _r(summary[key])
    entry.update({
        'f1_macro': _r(summary['f1_macro']),
        'pixel_accuracy': _r(summary['pixel_accuracy']),
        'images': int(summary['images']),
        'split_seed': split_seed,
        'source': source,
    })
    return entry


def _fmt(x):
    return 'n/a' if x is None else f'{x:.4f}'


def markdown_report(result):
    """Return a Markdown summary: one headline row plus a per-class table."""
    s = result['metrics']
    names = list(s['iou'])
    f1_pos = [k for k in s if k.startswith('f1_') and k != 'f1_macro']
    pos = f1_pos[0] if f1_pos else None
    lines = [
        f'# Evaluation of `{result["model_name"]}`',
        '',
        f'- model: `{result["model"]}`',
        f'- data: {result["source"]}',
        f'- images: {s["images"]} ({s["pixels"]} labelled pixels)',
        f'- engine: ONNX Runtime CPU, {result["threads"]} threads, through the node\'s pipeline',
        f'- date: {result["date"]}',
        '',
        '| Model | Data | mIoU | ' + ' | '.join(f'IoU {n}' for n in names)
        + (f' | F1 {pos[3:]}' if pos else '') + ' | F1 macro | Pixel accuracy |',
        '|' + ' --- |' * (5 + len(names) + (1 if pos else 0)),
        f'| {result["model_name"]} | {result["source_short"]} | {_fmt(s["miou"])} | '
        + ' | '.join(_fmt(s['iou'][n]) for n in names)
        + (f' | {_fmt(s[pos])}' if pos else '')
        + f' | {_fmt(s["f1_macro"])} | {_fmt(s["pixel_accuracy"])} |',
        '',
        '| Class | IoU | F1 | Precision | Recall |',
        '| --- | --- | --- | --- | --- |',
    ]
    for n in names:
        lines.append(f'| {n} | {_fmt(s["iou"][n])} | {_fmt(s["f1"][n])} | '
                     f'{_fmt(s["precision"][n])} | {_fmt(s["recall"][n])} |')
    lines += ['', 'Confusion matrix (rows: label, columns: prediction):', '',
              '| label \\ pred | ' + ' | '.join(names) + ' |',
              '|' + ' --- |' * (len(names) + 1)]
    for n, row in zip(names, s['confusion']):
        lines.append(f'| {n} | ' + ' | '.join(str(v) for v in row) + ' |')
    if result.get('latency_ms'):
        lat = result['latency_ms']
        lines += ['', f'Bare model latency (ONNX Runtime CPU, {lat["threads"]} threads, input '
                  f'{lat["shape"]}): median {lat["median"]} ms, p90 {lat["p90"]} ms; '
                  f'whole pipeline {result["pipeline_ms_per_image"]} ms per image.']
    return '\n'.join(lines) + '\n'


def write_reports(result, out_dir):
    """Write ``metrics.json`` and ``metrics.md`` into ``out_dir``; return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, 'metrics.json')
    md_path = os.path.join(out_dir, 'metrics.md')
    with open(json_path, 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=2)
        f.write('\n')
    with open(md_path, 'w', encoding='utf-8') as f:
        f.write(markdown_report(result))
    return json_path, md_path


class _CardDumper(yaml.SafeDumper):
    """Block style, but short lists of scalars in flow style (``[1, 3, 272, 480]``)."""


def _represent_list(dumper, value):
    flow = all(not isinstance(v, (dict, list)) or (
        isinstance(v, list) and all(not isinstance(w, (dict, list)) for w in v))
        for v in value) and not all(isinstance(v, str) and len(v) > 40 for v in value)
    return dumper.represent_sequence('tag:yaml.org,2002:seq', value, flow_style=flow)


_CardDumper.add_representer(list, _represent_list)
_CardDumper.add_representer(tuple, _represent_list)


def dump_card(card, path):
    """Write a card dict as YAML in the card's key order."""
    text = yaml.dump(card, Dumper=_CardDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=99)
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def update_card(card_path, evaluation=None, latency=None):
    """Merge evaluation entries and/or a latency figure into an existing card file."""
    from freespace_seg.model_card import card_from_dict

    with open(card_path, 'r', encoding='utf-8') as f:
        card = yaml.safe_load(f)
    if evaluation:
        ev = card.get('evaluation') or {}
        ev.update(evaluation)
        card['evaluation'] = ev
    if latency:
        lat = card.get('latency_ms') or {}
        lat.update(latency)
        card['latency_ms'] = lat
    card_from_dict(card, card_path)  # still valid?
    return dump_card(card, card_path)


# ---------------------------------------------------------------------------------------------
# Command


def _source(args):
    if (args.data is None) == (args.render is None):
        raise SystemExit('eval: give exactly one of --data DIR or --render N')
    if args.data is not None:
        meta = datasets.read_meta(args.data)
        total = datasets.count_frames(args.data, args.split, args.limit)
        frames = datasets.dataset_frames(args.data, args.split, args.limit)
        seed = meta.get('seed')
        desc = f'{args.data} split {args.split} ({total} frames, dataset seed {seed})'
        short = f'{os.path.basename(os.path.normpath(args.data))}/{args.split}'
        return frames, total, seed, desc, short, args.split
    n = args.render if args.limit is None else min(args.render, args.limit)
    frames = datasets.rendered_frames(n, args.seed, args.width, args.height)
    desc = (f'{n} frames rendered on the fly by freespace_seg.synthetic at '
            f'{args.width}x{args.height}, seed {args.seed}')
    return frames, n, args.seed, desc, f'render {n} seed {args.seed}', 'test'


def run(args):
    """Score a model and write the reports; returns the process exit code."""
    from freespace_seg.model_card import card_path_for_model, load_card

    if not os.path.isfile(args.model):
        print(f'eval: model not found: {args.model}', file=sys.stderr)
        return 2
    card = load_card(card_path_for_model(args.model))
    frames, total, split_seed, desc, short, split = _source(args)
    stem = os.path.splitext(os.path.basename(args.model))[0]
    out_dir = args.out or os.path.join(
        'data', 'eval', f'{stem}-' + short.replace('/', '-').replace(' ', '-'))

    summary, sec = evaluate_frames(args.model, frames, total, args.threads)
    result = {
        'model': args.model,
        'model_name': card.name,
        'source': desc,
        'source_short': short,
        'split_seed': split_seed,
        'threads': args.threads,
        'date': datetime.datetime.now().isoformat(timespec='seconds'),
        'pipeline_ms_per_image': round(sec * 1000.0, 2),
        'metrics': summary,
    }
    if args.latency_runs > 0:
        result['latency_ms'] = measure_latency(args.model, args.threads, args.latency_runs)
    json_path, md_path = write_reports(result, out_dir)
    print(markdown_report(result))
    print(f'eval: wrote {json_path} and {md_path}')

    if args.update_card:
        entry = card_scores(summary, split_seed, desc)
        latency = None
        if args.latency_runs > 0:
            lat = result['latency_ms']
            latency = {latency_key(lat['threads'], lat['shape']): lat['median']}
        update_card(card.path, {f'synthetic_{split}': entry}, latency)
        print(f'eval: updated {card.path} (evaluation.synthetic_{split})')
    if summary['images'] == 0:
        print('eval: no frames were scored', file=sys.stderr)
        return 1
    return 0
