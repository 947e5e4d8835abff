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
``python -m freespace_seg seeds``: train one recipe with several seeds and report the spread.

A single training run says little: on a few thousand synthetic frames the held-out mIoU of
the same recipe moves by a few hundredths from one seed to the next. This command runs
``python -m freespace_seg train`` with the options after ``--`` once per seed (``--seeds``,
at least two; the model-quality issue asks for three), each into its own folder, then scores
every model on the same held-out frames (rendered once, ``--test-seed``, never trained on)
through the node's ONNX pipeline, and writes ``seeds.md`` (a Markdown table: one row per
seed, then mean, sample standard deviation, min, max) and ``seeds.json``.

The seed drives the weight initialisation, batch order and augmentation (``train --seed``);
the training data (``--data-seed``) stays the same for every seed, so the spread is the
recipe's own.

Example (three seeds of a short half-resolution recipe)::

    python -m freespace_seg seeds --seeds 0,1,2 --test-render 200 --out-dir data/seeds -- \
        --render 1000 --render-val 100 --render-cache data/cache --steps 600 \
        --input-size 240x144 --threads 2
"""

import argparse
import json
import math
import os
import shlex
import sys
import time

from freespace_seg.common.markdown import number, table
from freespace_seg.common.values import split_size
from freespace_seg.perception.model_card import load_card
from freespace_seg.training import data as datasets
from freespace_seg.training.evaluate import evaluate_frames

#: options ``seeds`` sets itself for every run
_OWNED = ('--seed', '--out', '--work-dir')
METRICS = (('best_val_miou', 'val mIoU'), ('test_miou', 'test mIoU'),
           ('test_iou_blocked', 'test IoU blocked'), ('test_iou_free', 'test IoU free'),
           ('test_f1_free', 'test F1 free'), ('train_time_s', 'train time (s)'))


class SeedsError(ValueError):
    """Bad ``seeds`` options; the message says which and why."""


def _size(text):
    try:
        w, h = split_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected WxH, e.g. 480x270, not {text!r}')
    if w < 8 or h < 8:
        raise argparse.ArgumentTypeError(f'size {text} is too small')
    return w, h


def add_arguments(parser):
    """Add the ``seeds`` options to ``parser``."""
    parser.add_argument('--seeds', default='0,1,2',
                        help='comma-separated training seeds, at least two, all different '
                             '(default: %(default)s)')
    parser.add_argument('--test-render', type=int, default=200, metavar='N',
                        help='held-out frames rendered once and scored for every seed '
                             '(default: %(default)s)')
    parser.add_argument('--test-seed', type=int, default=1000,
                        help='renderer seed of the held-out frames (default: %(default)s, '
                             'the test split of the cards)')
    parser.add_argument('--test-size', type=_size, default=(480, 270), metavar='WxH',
                        help='camera size of the held-out frames (default: 480x270)')
    parser.add_argument('--threads', type=int, default=2,
                        help='ONNX Runtime threads for scoring (default: %(default)s)')
    parser.add_argument('--out-dir', default=os.path.join('data', 'seeds'),
                        help='one folder per seed plus seeds.md and seeds.json '
                             '(default: %(default)s)')
    parser.add_argument('--name', default='freespace_unet',
                        help='model file stem; seed k writes <name>_seed<k>.onnx '
                             '(default: %(default)s)')
    parser.add_argument('train_args', nargs=argparse.REMAINDER, metavar='-- TRAIN_OPTIONS',
                        help='the train recipe: any `python -m freespace_seg train` options '
                             'except --seed, --out and --work-dir')


def parse_seeds(text):
    """Return the list of seeds in ``text`` ('0,1,2'); at least two, all different."""
    try:
        seeds = [int(s) for s in text.split(',') if s.strip()]
    except ValueError:
        raise SeedsError(f'--seeds must be comma-separated integers, not {text!r}')
    if len(seeds) < 2:
        raise SeedsError(f'--seeds needs at least two seeds for a spread, got {text!r}')
    if len(set(seeds)) != len(seeds):
        raise SeedsError(f'--seeds has a repeated seed: {text!r}')
    return seeds


def train_parser():
    """Return an argument parser with exactly the ``train`` options."""
    from freespace_seg.training import train
    parser = argparse.ArgumentParser(prog='python -m freespace_seg seeds ... --',
                                     add_help=False)
    train.add_arguments(parser)
    return parser


def recipe_args(train_args):
    """Return the train options after ``--``, checked: none of the ones ``seeds`` owns."""
    args = list(train_args)
    if args and args[0] == '--':
        args = args[1:]
    owned = [a for a in args if a.split('=')[0] in _OWNED]
    if owned:
        raise SeedsError(f'{", ".join(sorted(set(owned)))}: set by `seeds` for every run; '
                         'leave it out of the train options')
    return args


def spread(values):
    """Return mean, sample standard deviation (0 for one value), min and max of ``values``."""
    values = [float(v) for v in values]
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {'mean': mean, 'std': std, 'min': min(values), 'max': max(values)}


def _fmt(key, value):
    return number(value, 1 if key == 'train_time_s' else 4)


def markdown_report(result):
    """Return the Markdown table of one ``seeds`` run (rows per seed, then the spread)."""
    rows = [[row['seed']] + [_fmt(k, row.get(k)) for k, _ in METRICS] for row in result['runs']]
    for stat in ('mean', 'std', 'min', 'max'):
        cells = [f'**{stat}**']
        for key, _ in METRICS:
            s = result['spread'].get(key)
            cells.append(_fmt(key, s[stat]) if s else '-')
        rows.append(cells)
    lines = table(['seed'] + [label for _, label in METRICS], rows)
    test = result['test']
    return '\n'.join([
        f'Training seeds {", ".join(str(r["seed"]) for r in result["runs"])}; recipe: '
        f'`python -m freespace_seg train {shlex.join(result["recipe"])}`.',
        f'Test: {test["frames"]} frames rendered at {test["size"][0]}x{test["size"][1]} with '
        f'seed {test["seed"]} (never trained on), scored through the node\'s ONNX pipeline; '
        'std is the sample standard deviation over seeds.',
        '',
        *lines, ''])


def run_seeds(seeds, recipe, out_dir, test_frames, test_info, name='freespace_unet',
              threads=2, log=print):
    """Train ``recipe`` once per seed, score each model on ``test_frames``; return the result."""
    from freespace_seg.training import train
    parser = train_parser()
    runs = []
    for i, seed in enumerate(seeds):
        seed_dir = os.path.join(out_dir, f'seed{seed}')
        out = os.path.join(seed_dir, f'{name}_seed{seed}.onnx')
        argv = recipe + ['--seed', str(seed), '--out', out,
                         '--work-dir', os.path.join(seed_dir, 'run')]
        log(f'seeds: [{i + 1}/{len(seeds)}] seed {seed}: train {shlex.join(argv)}')
        args = parser.parse_args(argv)
        t0 = time.perf_counter()
        rc = train.run(args)
        if rc:
            raise RuntimeError(f'train failed for seed {seed} (exit code {rc})')
        elapsed = time.perf_counter() - t0
        card = load_card(out)
        summary, _ = evaluate_frames(out, iter(test_frames), len(test_frames),
                                     threads=threads, desc=f'test seed {seed}')
        row = {'seed': seed, 'model': out,
               'best_val_miou': card.raw['training'].get('best_val_miou'),
               'test_miou': summary['miou'],
               'test_iou_blocked': summary['iou']['blocked'],
               'test_iou_free': summary['iou']['free'],
               'test_f1_free': summary['f1_free'],
               'train_time_s': round(elapsed, 1)}
        log(f'seeds: seed {seed}: val mIoU {row["best_val_miou"]}, test mIoU '
            f'{row["test_miou"]:.4f}, F1 free {row["test_f1_free"]:.4f} ({elapsed:.0f} s)')
        runs.append(row)
    result = {'runs': runs, 'recipe': recipe, 'test': test_info, 'spread': {}}
    for key, _ in METRICS:
        values = [r[key] for r in runs if r.get(key) is not None]
        result['spread'][key] = spread(values) if values else None
    return result


def run(args):
    """Run the ``seeds`` command; returns the exit code."""
    try:
        seeds = parse_seeds(args.seeds)
        recipe = recipe_args(args.train_args)
        if args.test_render < 1:
            raise SeedsError(f'--test-render must be at least 1, got {args.test_render}')
        if not recipe:
            raise SeedsError('give the train recipe after --, e.g. -- --render 1000 '
                             '--steps 600')
        try:
            train_parser().parse_args(recipe + ['--seed', '0'])
        except SystemExit:
            raise SeedsError(f'the train options after -- do not parse: {shlex.join(recipe)}')
    except SeedsError as e:
        print(f'seeds: error: {e}', file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    tw, th = args.test_size
    print(f'seeds: rendering {args.test_render} held-out frames ({tw}x{th}, seed '
          f'{args.test_seed})', flush=True)
    test_frames = list(datasets.rendered_frames(args.test_render, args.test_seed, tw, th))
    test_info = {'frames': args.test_render, 'seed': args.test_seed, 'size': [tw, th],
                 'renderer_source_hash': datasets.renderer_fingerprint()}
    result = run_seeds(seeds, recipe, args.out_dir, test_frames, test_info, name=args.name,
                       threads=args.threads, log=lambda m: print(m, flush=True))
    text = markdown_report(result)
    with open(os.path.join(args.out_dir, 'seeds.md'), 'w') as f:
        f.write(text)
    with open(os.path.join(args.out_dir, 'seeds.json'), 'w') as f:
        json.dump(result, f, indent=2)
    print(text, flush=True)
    print(f'seeds: wrote {os.path.join(args.out_dir, "seeds.md")} and seeds.json', flush=True)
    return 0
