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
``python -m freespace_seg grid-rules``: the grid rules against the true floor, with a model.

Renders rooms with their exact truth (``training.data.rendered_samples``), segments them with
the model (default: the shipped one, INT8 on the CPU) and projects the predicted mask with
each grid rule (:class:`freespace_seg.ground.grid.GridRule`). Per rule and set of frames:

* **free IoU**: free-cell IoU of the grid against the true floor (``Scene.blocked_top_down``
  at the cell centres) on the cells the exact grid sees (the grid of the true mask under the
  plain rule: within ``max_range``, not behind obstacles), averaged over frames;
* **false free**: the share of the predicted grid's free cells more than one cell from any
  cell where the true mask shows floor (the true mask projected with no column cut;
  :func:`freespace_seg.ground.metrics.false_free`), pooled over the frames: free cells where
  no floor is visible, the expensive error (0 for the true mask under any rule);
* **missed**: the share of the exact grid's occupied cells (where obstacles meet the floor)
  with no occupied cell of the predicted grid within one cell; **called free**: those of them
  that the predicted grid calls free (the dangerous part of the missed ones);
* **phantom**: the share of the predicted grid's occupied cells that are true floor with no
  truly blocked cell within one cell (false obstacles).

Rules are written ``plain`` or as parts joined by ``+``: ``run<fraction>``,
``conf<probability>``, ``mark<probability>``, ``free<probability>`` and
``behind<probability>`` (any part alone, e.g. ``run0.1``, ``free0.9``; they are the fields
``min_run``, ``cut_confidence``, ``mark_confidence``, ``free_confidence`` and
``behind_confidence`` of GridRule; ``behind`` alone is ``behind1``); the node's
default is ``run0.1+conf0.97+mark0.5+free0.6+behind0.97``. Pick rules on one ``--seed`` and report
on another: frames of different seeds are different rooms.

Example (docs/ground_outputs.md)::

    python -m freespace_seg grid-rules --frames 100 --seed 3000 --out grid_rules.md
"""

import json
import re
import sys
import time

from freespace_seg.common.markdown import number, table as markdown_table
import numpy as np

DEFAULT_RULES = ('plain,run0.1+conf0.97+mark0.5,run0.1+conf0.97+mark0.5+behind,'
                 'run0.1+conf0.97+mark0.5+free0.7,run0.1+conf0.97+mark0.5+behind0.95,'
                 'run0.1+conf0.97+mark0.5+free0.6+behind0.97')
#: name -> (renderer style, camera ranges or None)
SETS = {
    'held-out': ('default', None),
    'style-shifted': ('shifted', None),
    'held-out, camera 0.10-0.20 m': ('default', {'camera_height': (0.10, 0.20)}),
    'held-out, camera 0.35-0.50 m': ('default', {'camera_height': (0.35, 0.50)}),
    'style-shifted, camera 0.35-0.50 m': ('shifted', {'camera_height': (0.35, 0.50)}),
    'held-out, camera 0.5-1.2 m (outside training)': ('default', {'camera_height': (0.5, 1.2)}),
}


def add_arguments(parser):
    """Add the ``grid-rules`` options to ``parser``."""
    parser.add_argument('--model', default='',
                        help='ONNX model (default: the packaged one, INT8 on the CPU)')
    parser.add_argument('--frames', type=int, default=100, help='frames per set (%(default)s)')
    parser.add_argument('--seed', type=int, default=3000,
                        help='seed of the rendered rooms (%(default)s)')
    parser.add_argument('--width', type=int, default=480, help='camera width (%(default)s)')
    parser.add_argument('--height', type=int, default=270, help='camera height (%(default)s)')
    parser.add_argument('--rules', default=DEFAULT_RULES,
                        help='comma-separated rules (%(default)s)')
    parser.add_argument('--sets', default='',
                        help='comma-separated set numbers, 1-based, of: '
                             + '; '.join(f'{i + 1} {n}' for i, n in enumerate(SETS))
                             + ' (default: all)')
    parser.add_argument('--threads', type=int, default=1, help='inference threads')
    parser.add_argument('--out', default='', help='also write the table (Markdown) here')
    parser.add_argument('--json', default='', help='also write every number here')


def parse_rule(text):
    """Return the :class:`GridRule` a rule name describes (see the module docstring)."""
    from freespace_seg.ground.grid import GridRule, PLAIN_RULE

    text = text.strip()
    if text == 'plain':
        return PLAIN_RULE
    values = {'run': 0.0, 'conf': 0.0, 'mark': 0.0, 'free': 0.0, 'behind': 0.0}
    seen = set()
    for part in text.split('+'):
        m = re.fullmatch(r'(run|conf|mark|free|behind)([0-9]*\.?[0-9]+)?', part.strip())
        if not m or m.group(1) in seen or (m.group(2) is None and m.group(1) != 'behind'):
            raise ValueError(f'bad rule {text!r}: expected plain or parts run<x>, conf<p>, '
                             'mark<p>, free<p>, behind<p> joined by +')
        seen.add(m.group(1))
        values[m.group(1)] = 1.0 if m.group(2) is None else float(m.group(2))
    return GridRule(values['run'], values['conf'], values['mark'], values['free'],
                    values['behind'])


def score(frame, pred, exact, spec, visible=None):
    """
    Score one predicted grid against the truth and the exact grid.

    Returns (free IoU, exact occupied, missed, called free, predicted occupied, phantom,
    false free cells, predicted free cells).
    """
    import cv2

    from freespace_seg.ground.metrics import false_free, grid_iou

    x, y = spec.cell_centers()
    px, py, yaw = frame.robot_pose
    wx = px + np.cos(yaw) * x - np.sin(yaw) * y
    wy = py + np.sin(yaw) * x + np.cos(yaw) * y
    blocked = frame.scene.blocked_top_down(wx, wy)
    iou = grid_iou(pred, ~blocked, exact != -1)
    kernel = np.ones((3, 3), np.uint8)
    occ = exact == 100
    near_pred = cv2.dilate((pred == 100).astype(np.uint8), kernel) > 0
    missed = occ & ~near_pred
    near_blocked = cv2.dilate(blocked.astype(np.uint8), kernel) > 0
    pred_occ = pred == 100
    wrong, free = false_free(pred, exact if visible is None else visible)
    return (iou, int(occ.sum()), int(missed.sum()), int((missed & (pred == 0)).sum()),
            int(pred_occ.sum()), int((pred_occ & ~near_blocked).sum()), wrong, free)


def measure(pipeline, rules, sets, frames, seed, width, height, log=print):
    """
    Return {set: {rule: totals}} over ``frames`` rendered frames per set.

    ``pipeline`` is a SegmentationPipeline, or a function of a rendered frame that returns
    its (free mask, confidence) (the true mask, for instance).
    """
    from freespace_seg.common.progress import progress
    from freespace_seg.ground.grid import GridRule, GridSpec, PLAIN_RULE
    from freespace_seg.ground.projection import GroundProjector
    from freespace_seg.training.data import rendered_samples

    spec = GridSpec()
    # Every cell where the true mask shows floor: no blocked run of the true mask cuts (a
    # run as tall as the whole image could, but then its column holds no floor either).
    visible_floor = GridRule(1.0, 0.0, 0.0, 0.0, 0.0)
    result = {}
    for name in sets:
        style, camera = SETS[name]
        acc = {r: {'iou': [], 'occupied': 0, 'missed': 0, 'called_free': 0,
                   'predicted_occupied': 0, 'phantom': 0, 'false_free': 0,
                   'predicted_free': 0} for r in rules}
        t0 = time.time()
        samples = rendered_samples(frames, seed, width, height, style=style, camera=camera)
        for frame in progress(samples, total=frames, desc=name):
            if callable(pipeline):
                free, conf = pipeline(frame)
            else:
                mask, conf = pipeline.segment_with_confidence(frame.image)
                free = pipeline.free_mask(mask)
            proj = GroundProjector(frame.intrinsics, frame.mount, spec)
            exact = proj.ground(frame.free, None, PLAIN_RULE).grid
            visible = proj.ground(frame.free, None, visible_floor).grid
            for rule_name, rule in rules.items():
                pred = proj.ground(free, conf, rule).grid
                iou, occ, miss, called, pocc, phantom, wrong, n_free = score(
                    frame, pred, exact, spec, visible)
                a = acc[rule_name]
                a['iou'].append(iou)
                a['occupied'] += occ
                a['missed'] += miss
                a['called_free'] += called
                a['predicted_occupied'] += pocc
                a['phantom'] += phantom
                a['false_free'] += wrong
                a['predicted_free'] += n_free
        result[name] = {r: summary(a) for r, a in acc.items()}
        log(f'{name}: {frames} frames in {time.time() - t0:.0f} s')
    return result


def summary(acc):
    """Turn the per-frame totals of one rule into rates."""
    return {'free_iou': float(np.nanmean(acc['iou'])) if acc['iou'] else float('nan'),
            'missed': acc['missed'] / max(1, acc['occupied']),
            'called_free': acc['called_free'] / max(1, acc['occupied']),
            'phantom': acc['phantom'] / max(1, acc['predicted_occupied']),
            'false_free': acc['false_free'] / max(1, acc['predicted_free']),
            'occupied_cells': acc['occupied'], 'frames': len(acc['iou'])}


def table(result, rules):
    """Return the Markdown table: one row per set and rule."""
    cells = []
    for name, rows in result.items():
        base = rows.get('plain')
        for rule in rules:
            r = rows[rule]
            gain = f' ({number(r["free_iou"] - base["free_iou"], 3, sign=True)})' \
                if base and rule != 'plain' else ''
            cells.append((name, f'`{rule}`', number(r['free_iou'], 3) + gain,
                          number(100 * r['false_free'], 1, unit=' %'),
                          number(100 * r['missed'], 1, unit=' %'),
                          number(100 * r['called_free'], 1, unit=' %'),
                          number(100 * r['phantom'], 1, unit=' %')))
    return '\n'.join(markdown_table(
        ('frames', 'rule', 'free IoU (3 m)', 'false free', 'missed obstacle cells',
         'called free',
         'phantom obstacle cells'), cells))


def run(args):
    """Run the measurement; print the table."""
    from freespace_seg.perception.pipeline import SegmentationPipeline

    names = [n.strip() for n in args.rules.split(',') if n.strip()]
    try:
        rules = {n: parse_rule(n) for n in names}
    except ValueError as e:
        print(f'grid-rules: {e}', file=sys.stderr)
        return 2
    all_sets = list(SETS)
    if args.sets:
        try:
            sets = [all_sets[int(i) - 1] for i in args.sets.split(',') if i.strip()]
        except (ValueError, IndexError):
            print(f'grid-rules: --sets takes numbers 1-{len(all_sets)}', file=sys.stderr)
            return 2
    else:
        sets = all_sets
    pipeline = SegmentationPipeline(args.model or None, 'onnxruntime', args.threads)
    print(f'model {pipeline.card.model_path}; {args.frames} frames per set, seed {args.seed}, '
          f'{args.width}x{args.height}', flush=True)
    result = measure(pipeline, rules, sets, args.frames, args.seed, args.width, args.height,
                     log=lambda text: print(text, flush=True))
    text = table(result, names)
    print(text)
    header = (f'`python -m freespace_seg grid-rules --frames {args.frames} --seed {args.seed} '
              f'--width {args.width} --height {args.height}`; model '
              f'`{pipeline.card.model_file.rsplit("/", 1)[-1]}`\n\n')
    if args.out:
        with open(args.out, 'w') as f:
            f.write(header + text + '\n')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': {k: v for k, v in vars(args).items() if not k.startswith('_')},
                       'result': result}, f, indent=1)
    pipeline.close()
    return 0
