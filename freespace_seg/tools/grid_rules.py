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

``--data DIR`` scores the frames of a dataset folder instead (written by ``generate`` or
``generate2``: ``samples.jsonl`` with each frame's ``intrinsics`` and ``mount``), which has no
top-down truth: the truth is the true mask's grid. The grid of the true mask under the plain
rule (the *exact grid*) and with no column cut (the *visible grid*) stand in for it:

* **free IoU**: against the exact grid's free cells on the cells it sees (so the true mask
  under the plain rule has IoU 1);
* **false free**, **missed**, **called free**: as above (they only need the true mask);
* **phantom**: the share of the predicted grid's occupied cells that the visible grid calls
  free with no occupied cell of the visible grid within one cell (cells that the true mask
  does not show are never phantom).

A frame of ``generate`` has its mount in the robot's base frame (it records a
``robot_pose``); one of ``generate2`` has the camera's pose in the room, so its grid is laid
under the camera, along its heading (``CameraMount(0, 0, z, roll, pitch, 0)``). Frames that
cannot be projected (a lens or mount the projector refuses, or no pixel ray that meets the
floor within ``max_range`` in the grid) are counted and reported, not scored.

Rules are written ``plain`` or as parts joined by ``+``: ``run<fraction>``,
``conf<probability>``, ``mark<probability>``, ``free<probability>`` and
``behind<probability>`` (any part alone, e.g. ``run0.1``, ``free0.9``; they are the fields
``min_run``, ``cut_confidence``, ``mark_confidence``, ``free_confidence`` and
``behind_confidence`` of GridRule; ``behind`` alone is ``behind1``); the node's
default is ``run0.1+conf0.97+mark0.5+free0.6+behind0.97``. Pick rules on one ``--seed`` and report
on another: frames of different seeds are different rooms.

``--mask-widths 0,640`` scores every rule again on a narrower copy of the predicted free mask
and its confidence, as the node's ``grid_mask_width`` makes it
(:func:`freespace_seg.ground.frame.shrink_for_ground`), projected at its own scale; the truth
stays the full-size true mask. A row of width W is labelled ``rule @W``. Use it with camera-sized
frames (``--width 1280 --height 720``): at 480x270 a 640 copy is the mask itself.

``--drives N`` scores the frames of N rendered drives per set instead, each rule also
filtered by an occlusion memory (``--occlusion``) and by agreement of the last grids in the
odometry frame (``--agreement``; :mod:`freespace_seg.tools.grid_drives`).

Examples (docs/ground_outputs.md)::

    python -m freespace_seg grid-rules --frames 100 --seed 3000 --out grid_rules.md
    python -m freespace_seg grid-rules --data data/scenes2 --split test --out scenes2.md
"""

import json
import os
import re
import sys
import time

from freespace_seg.common.markdown import number, table as markdown_table
from freespace_seg.tools.grid_drives import DRIVE_DEFAULTS
from freespace_seg.tools.grid_scoring import (add, new_totals, perceive, score, score_on_mask,
                                              SETS, summary, truth_grids)
import numpy as np

DEFAULT_RULES = ('plain,run0.1+conf0.97+mark0.5,run0.1+conf0.97+mark0.5+behind,'
                 'run0.1+conf0.97+mark0.5+free0.7,run0.1+conf0.97+mark0.5+behind0.95,'
                 'run0.1+conf0.97+mark0.5+free0.6+behind0.97')


#: the rendered sets' options and their defaults (``--data`` takes none of them)
RENDER_DEFAULTS = {'frames': 100, 'seed': 3000, 'width': 480, 'height': 270, 'sets': ''}
SPLITS = ('train', 'val', 'test')
PERCEPTIONS = ('model', 'truth')


def add_arguments(parser):
    """Add the ``grid-rules`` options to ``parser``."""
    parser.add_argument('--model', default='',
                        help='ONNX model (default: the packaged one, INT8 on the CPU)')
    parser.add_argument('--perception', choices=PERCEPTIONS, default='model',
                        help='"truth" scores the true masks in place of the model (a check: '
                             'false free 0 under every rule) (default: %(default)s)')
    parser.add_argument('--frames', type=int, default=None,
                        help=f'frames per rendered set ({RENDER_DEFAULTS["frames"]})')
    parser.add_argument('--seed', type=int, default=None,
                        help=f'seed of the rendered rooms ({RENDER_DEFAULTS["seed"]})')
    parser.add_argument('--width', type=int, default=None,
                        help=f'rendered camera width ({RENDER_DEFAULTS["width"]})')
    parser.add_argument('--height', type=int, default=None,
                        help=f'rendered camera height ({RENDER_DEFAULTS["height"]})')
    parser.add_argument('--rules', default=DEFAULT_RULES,
                        help='comma-separated rules (%(default)s)')
    parser.add_argument('--sets', default=None,
                        help='comma-separated rendered set numbers, 1-based, of: '
                             + '; '.join(f'{i + 1} {n}' for i, n in enumerate(SETS))
                             + ' (default: all)')
    parser.add_argument('--data', metavar='DIR', default=None,
                        help='score the frames of a dataset folder written by `generate` or '
                             '`generate2` (samples.jsonl with intrinsics and mounts) instead '
                             'of rendered rooms; the truth is then the grid of the true mask')
    parser.add_argument('--split', default='test', choices=SPLITS,
                        help='split of --data (default: %(default)s)')
    parser.add_argument('--limit', type=int, default=None,
                        help='score at most this many frames of --data')
    parser.add_argument('--by-lens', action='store_true',
                        help='with --data: also a set per lens model (pinhole, equidistant)')
    parser.add_argument('--mask-widths', default='0', metavar='W[,W...]',
                        help='also score each rule on a copy of the predicted mask at most W '
                             'pixels wide, as the grid_mask_width of the node makes it (0: the '
                             'mask as it is; rows of W > 0 are labelled "rule @W") (default: 0)')
    parser.add_argument('--drives', type=int, default=None, metavar='N',
                        help='score frames of N rendered drives per set instead of single '
                             'frames, each rule also filtered by --agreement (a free cell '
                             'must be free in M of the last K grids, in the odom frame)')
    parser.add_argument('--drive-seconds', type=float, default=None, metavar='S',
                        help=f'with --drives: each drive this long '
                             f'({DRIVE_DEFAULTS["seconds"]:g} s)')
    parser.add_argument('--frame-every', type=float, default=None, metavar='S',
                        help=f'with --drives: a frame every S seconds '
                             f'({DRIVE_DEFAULTS["frame_every"]:g})')
    parser.add_argument('--agreement', default=None, metavar='K[/M],...',
                        help='with --drives: the agreements to score, K (all of the last K '
                             'grids) or K/M (M of them); 1 is none '
                             f'({DRIVE_DEFAULTS["agreement"]})')
    parser.add_argument('--occlusion', default=None, metavar='SECONDS,...',
                        help='with --drives: occlusion memories to score, in seconds (the '
                             'node grid_occlusion_memory; 0: off), each rule filtered by each '
                             'before the agreements; rows "RULE occS" (default: 0)')
    parser.add_argument('--agreement-tolerance', type=int, default=None, metavar='CELLS',
                        help='with --drives: an earlier grid agrees where it has a free cell '
                             'within this many cells (1)')
    parser.add_argument('--threads', type=int, default=1, help='inference threads')
    parser.add_argument('--exact-int8', action='store_true',
                        help="run an INT8 model's quantized operators as written (as a CPU "
                             'with VNNI computes them), as eval --exact-int8')
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


def parse_widths(text):
    """Return the ``--mask-widths`` as a list of distinct ints >= 0, in the given order."""
    widths = []
    for part in str(text).split(','):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            raise ValueError(f'--mask-widths takes whole numbers >= 0, got {part!r}')
        if int(part) not in widths:
            widths.append(int(part))
    if not widths:
        raise ValueError('--mask-widths needs at least one width')
    return widths


def row_key(rule, width):
    """Return the result key of ``rule`` scored at mask width ``width`` (0: the rule's name)."""
    return rule if not width else f'{rule} @{width}'


def predicted_grids(free, conf, rules, widths, proj, intrinsics, mount):
    """
    Yield (row key, predicted grid) for every rule at every mask width.

    A width shrinks ``free`` and ``conf`` as the node's ``grid_mask_width`` does; a mask of
    another shape than ``proj``'s is projected by a projector of the same camera
    (``intrinsics``, ``mount``) for its shape.
    """
    from freespace_seg.ground.frame import shrink_for_ground
    from freespace_seg.ground.projection import GroundProjector

    for width in widths:
        f, c = shrink_for_ground(free, conf, width)
        p = proj
        if f.shape[:2] != (proj.mask_intrinsics.height, proj.mask_intrinsics.width):
            p = GroundProjector(intrinsics, mount, proj.grid_spec, mask_shape=f.shape[:2])
        for rule_name, rule in rules.items():
            yield row_key(rule_name, width), p.ground(f, c, rule).grid


def measure(pipeline, rules, sets, frames, seed, width, height, log=print, widths=(0,)):
    """
    Return {set: {row key: totals}} over ``frames`` rendered frames per set.

    Row keys are :func:`row_key` of each rule and mask width in ``widths``.

    ``pipeline`` is a SegmentationPipeline, or a function of a rendered frame that returns
    its (free mask, confidence) (the true mask, for instance).
    """
    from freespace_seg.common.progress import progress
    from freespace_seg.ground.grid import GridSpec
    from freespace_seg.ground.projection import GroundProjector
    from freespace_seg.training.data import rendered_samples

    spec = GridSpec()
    result = {}
    for name in sets:
        style, camera = SETS[name]
        acc = new_totals([row_key(r, w) for w in widths for r in rules])
        t0 = time.time()
        samples = rendered_samples(frames, seed, width, height, style=style, camera=camera)
        for frame in progress(samples, total=frames, desc=name):
            free, conf = perceive(pipeline, frame)
            proj = GroundProjector(frame.intrinsics, frame.mount, spec)
            exact, visible = truth_grids(proj, frame.free)
            for key, pred in predicted_grids(free, conf, rules, widths, proj,
                                             frame.intrinsics, frame.mount):
                add(acc[key], score(frame, pred, exact, spec, visible))
        result[name] = {r: summary(a) for r, a in acc.items()}
        log(f'{name}: {frames} frames in {time.time() - t0:.0f} s')
    return result


def truth_perception(sample):
    """Return the true mask as a model would: (free mask, confidence 255 / 0)."""
    free = np.asarray(sample.free) > 0
    out = np.where(free, 255, 0).astype(np.uint8)
    return out, out


class DataError(Exception):
    """A dataset folder that ``--data`` cannot read (exit status 2)."""


class Sample:
    """One frame of a dataset folder: its record, and its image and true mask on demand."""

    def __init__(self, folder, record):
        self.record = record
        self.image_path = os.path.join(folder, record['image'])
        self.mask_path = os.path.join(folder, record['mask'])
        self.image = self.free = None

    @property
    def name(self):
        return os.path.basename(self.image_path)

    @property
    def lens(self):
        """Return the lens model: ``equidistant`` or ``pinhole``."""
        model = self.record['intrinsics'].get('distortion_model') or ''
        return 'pinhole' if model in ('', 'plumb_bob', 'rational_polynomial') else model

    def load(self):
        """Read the RGB image and the true mask (class 1 free, nonzero here)."""
        from freespace_seg.training.data import read_pair

        self.image, mask = read_pair(self.image_path, self.mask_path)
        self.free = (mask == 1).astype(np.uint8)
        return self


def read_samples(folder, split, limit=None):
    """
    Return the :class:`Sample` of each frame of ``split`` in ``folder``, in file order.

    :raises DataError: no folder, no ``samples.jsonl``, a line that is not JSON, no frame of
        the split, a frame without ``intrinsics`` or ``mount`` (or a field of them), or a
        missing image or mask file.
    """
    if not os.path.isdir(folder):
        raise DataError(f'no dataset folder {folder}')
    path = os.path.join(folder, 'samples.jsonl')
    if not os.path.isfile(path):
        raise DataError(f'{folder} has no samples.jsonl (write one with `python -m '
                        'freespace_seg generate2 --out DIR` or `generate`)')
    samples = []
    with open(path, encoding='utf-8') as f:
        for line_number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise DataError(f'{path} line {line_number} is not JSON: {e}')
            if not isinstance(record, dict) or record.get('split', split) != split:
                continue
            where = f'{path} line {line_number}'
            for key in ('image', 'mask'):
                if not isinstance(record.get(key), str):
                    raise DataError(f'{where} has no {key} file')
            intrinsics, mount = record.get('intrinsics'), record.get('mount')
            if not isinstance(intrinsics, dict) or not isinstance(mount, dict):
                raise DataError(f'{where} ({record["image"]}) has no intrinsics or no mount: '
                                '--data needs a folder of `generate` or `generate2`')
            for key in ('width', 'height', 'fx', 'fy', 'cx', 'cy'):
                if not isinstance(intrinsics.get(key), (int, float)):
                    raise DataError(f'{where}: intrinsics.{key} is missing or not a number')
            for key in ('x', 'y', 'z', 'roll', 'pitch', 'yaw'):
                if not isinstance(mount.get(key), (int, float)):
                    raise DataError(f'{where}: mount.{key} is missing or not a number')
            sample = Sample(folder, record)
            for file in (sample.image_path, sample.mask_path):
                if not os.path.isfile(file):
                    raise DataError(f'{where}: no file {file}')
            samples.append(sample)
            if limit is not None and len(samples) >= limit:
                break
    if not samples:
        raise DataError(f'{path} has no frame of split {split!r}')
    return samples


def camera_of(record):
    """
    Return the (CameraIntrinsics, CameraMount) of a dataset record.

    A record with a ``robot_pose`` (``generate``) has its mount in the base frame; one
    without (``generate2``) the camera's pose in the room: the base frame is put on the floor
    under the camera, along its heading. :raises ValueError: a lens the projector refuses.
    """
    from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount

    k, m = record['intrinsics'], record['mount']
    intrinsics = CameraIntrinsics(int(k['width']), int(k['height']), float(k['fx']),
                                  float(k['fy']), float(k['cx']), float(k['cy']),
                                  tuple(float(d) for d in k.get('distortion') or ()),
                                  k.get('distortion_model') or '')
    values = {name: float(m[name]) for name in ('x', 'y', 'z', 'roll', 'pitch', 'yaw')}
    if 'robot_pose' not in record:
        values.update(x=0.0, y=0.0, yaw=0.0)
    return intrinsics, CameraMount(**values)


def measure_data(pipeline, rules, samples, name, by_lens=False, log=print, widths=(0,)):
    """
    Return ({set: {rule: totals}}, {set: frame counts}) over the :class:`Sample` list.

    ``pipeline``: a SegmentationPipeline or a function of a loaded Sample that returns its
    (free mask, confidence) (:func:`truth_perception`). The set is ``name``, and with
    ``by_lens`` also ``name, <lens>`` per lens model. A frame that cannot be projected is
    not scored: its counts say why (``skipped``), and ``skipped_frames`` which it was.
    """
    from freespace_seg.common.progress import progress
    from freespace_seg.ground.grid import GridSpec
    from freespace_seg.ground.projection import GroundProjector

    spec = GridSpec()
    lenses = sorted({s.lens for s in samples}) if by_lens else []
    names = [name] + [f'{name}, {lens}' for lens in lenses]
    keys = [row_key(r, w) for w in widths for r in rules]
    acc = {n: new_totals(keys) for n in names}
    counts = {n: {'frames': 0, 'scored': 0, 'skipped': {}, 'skipped_frames': []} for n in names}
    t0 = time.time()
    for sample in progress(samples, desc=name):
        sets = [name] + ([f'{name}, {sample.lens}'] if by_lens else [])
        for n in sets:
            counts[n]['frames'] += 1
        try:
            sample.load()
        except (OSError, ValueError) as e:
            raise DataError(str(e))
        reason = None
        try:
            intrinsics, mount = camera_of(sample.record)
            proj = GroundProjector(intrinsics, mount, spec, mask_shape=sample.free.shape)
            if proj.table_size == 0:
                reason = f'no pixel ray meets the floor within {spec.max_range:g} m'
        except ValueError as e:
            reason = f'cannot be projected: {e}'
        if reason is not None:
            for n in sets:
                counts[n]['skipped'][reason] = counts[n]['skipped'].get(reason, 0) + 1
                counts[n]['skipped_frames'].append({'frame': sample.name, 'reason': reason})
            continue
        free, conf = perceive(pipeline, sample)
        exact, visible = truth_grids(proj, sample.free)
        for key, pred in predicted_grids(free, conf, rules, widths, proj, intrinsics,
                                         mount):
            numbers = score_on_mask(pred, exact, visible)
            for n in sets:
                add(acc[n][key], numbers)
        for n in sets:
            counts[n]['scored'] += 1
        sample.image = sample.free = None
    for n in names:
        log(f'{n}: {frame_note(counts[n])}')
    log(f'{len(samples)} frames in {time.time() - t0:.0f} s')
    return {n: {r: summary(a) for r, a in acc[n].items()} for n in names}, counts


def frame_note(counts):
    """Return how many frames a set has, were scored and were skipped (and why)."""
    text = f'{counts["frames"]} frames, {counts["scored"]} scored'
    skipped = counts['skipped']
    if skipped:
        text += f', {sum(skipped.values())} not scored (' + '; '.join(
            f'{reason}: {n}' for reason, n in sorted(skipped.items())) + ')'
    return text


def table(result, rules):
    """
    Return the Markdown table: one row per set and row key (a rule, or ``rule @W``).

    The gain in brackets is against ``plain`` at the same mask width, when it was scored.
    """
    cells = []
    for name, rows in result.items():
        for key in rules:
            r = rows[key]
            rule, _, width = key.partition(' @')
            base = rows.get(row_key('plain', int(width) if width else 0))
            gain = f' ({number(r["free_iou"] - base["free_iou"], 3, sign=True)})' \
                if base and rule != 'plain' else ''
            label = f'`{rule}`' + (f' @{width}' if width else '')
            cells.append((name, label, number(r['free_iou'], 3) + gain,
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
    names = [n.strip() for n in args.rules.split(',') if n.strip()]
    try:
        rules = {n: parse_rule(n) for n in names}
        args.widths = parse_widths(args.mask_widths)
    except ValueError as e:
        print(f'grid-rules: {e}', file=sys.stderr)
        return 2
    keys = [row_key(n, w) for w in args.widths for n in names]
    given = [f'--{k}' for k in RENDER_DEFAULTS if getattr(args, k, None) is not None]
    if args.data is not None:
        if given:
            print(f'grid-rules: {", ".join(given)} only apply to rendered rooms, not to --data '
                  '(--limit takes fewer frames)', file=sys.stderr)
            return 2
        if args.limit is not None and args.limit < 1:
            print('grid-rules: --limit must be at least 1', file=sys.stderr)
            return 2
        return _run_data(args, rules, keys)
    if args.limit is not None or args.by_lens:
        print('grid-rules: --limit and --by-lens only apply to --data', file=sys.stderr)
        return 2
    args._frames_given = args.frames is not None
    for key, value in RENDER_DEFAULTS.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    all_sets = list(SETS)
    if args.sets:
        try:
            sets = [all_sets[int(i) - 1] for i in args.sets.split(',') if i.strip()]
        except (ValueError, IndexError):
            print(f'grid-rules: --sets takes numbers 1-{len(all_sets)}', file=sys.stderr)
            return 2
    else:
        sets = all_sets
    drive_options = ('drive_seconds', 'frame_every', 'agreement', 'agreement_tolerance',
                     'occlusion')
    drive_given = [f'--{k.replace("_", "-")}' for k in drive_options
                   if getattr(args, k, None) is not None]
    if args.drives is not None:
        return _run_drives(args, rules, sets)
    if drive_given:
        print(f'grid-rules: {", ".join(drive_given)} only apply to --drives', file=sys.stderr)
        return 2
    pipeline, model = _perception(args)
    print(f'{model}; {args.frames} frames per set, seed {args.seed}, '
          f'{args.width}x{args.height}', flush=True)
    result = measure(pipeline, rules, sets, args.frames, args.seed, args.width, args.height,
                     log=lambda text: print(text, flush=True), widths=args.widths)
    text = table(result, keys)
    print(text)
    header = (f'`python -m freespace_seg grid-rules --frames {args.frames} --seed {args.seed} '
              f'--width {args.width} --height {args.height}{_widths_option(args)}`; '
              f'{model}\n\n')
    _write(args, header + text + '\n', {'result': result})
    if not callable(pipeline):
        pipeline.close()
    return 0


def _perception(args):
    """Return (the pipeline or truth_perception, a line that names it)."""
    if args.perception == 'truth':
        return truth_perception, 'perception: the true masks'
    from freespace_seg.perception.pipeline import SegmentationPipeline

    exact = bool(getattr(args, 'exact_int8', False))
    pipeline = SegmentationPipeline(args.model or None, 'onnxruntime', args.threads,
                                    engine_options={'exact_int8': exact})
    return pipeline, (f'model `{pipeline.card.model_file.rsplit("/", 1)[-1]}`'
                      + (', exact INT8 arithmetic (--exact-int8)' if exact else ''))


def _write(args, markdown, numbers):
    if args.out:
        with open(args.out, 'w') as f:
            f.write(markdown)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': {k: v for k, v in vars(args).items() if not k.startswith('_')},
                       **numbers}, f, indent=1)


def _widths_option(args):
    """Return `` --mask-widths ...`` when other widths than 0 alone were scored, else ''."""
    widths = getattr(args, 'widths', [0])
    return '' if widths == [0] else ' --mask-widths ' + ','.join(str(w) for w in widths)


def _run_data(args, rules, keys):
    """Score the frames of ``--data``: the true mask's grid is the truth."""
    from freespace_seg.training.data import read_meta

    try:
        samples = read_samples(args.data, args.split, args.limit)
        meta = read_meta(args.data)
    except (DataError, ValueError) as e:
        print(f'grid-rules: {e}', file=sys.stderr)
        return 2
    name = f'{os.path.basename(os.path.normpath(args.data))}/{args.split}'
    pipeline, model = _perception(args)
    print(f'{model}; {args.data} split {args.split}: {len(samples)} frames '
          f'(dataset seed {meta.get("seed")}, {meta.get("generator", "generate")})', flush=True)
    try:
        result, counts = measure_data(pipeline, rules, samples, name, args.by_lens,
                                      log=lambda text: print(text, flush=True),
                                      widths=args.widths)
    except DataError as e:
        print(f'grid-rules: {e}', file=sys.stderr)
        return 2
    finally:
        if not callable(pipeline):
            pipeline.close()
    text = table(result, keys)
    print(text)
    limit = f' --limit {args.limit}' if args.limit is not None else ''
    header = (f'`python -m freespace_seg grid-rules --data {args.data} --split {args.split}'
              f'{limit}{" --by-lens" if args.by_lens else ""}{_widths_option(args)}`; {model}; '
              + '; '.join(f'{n}: {frame_note(c)}' for n, c in counts.items()) + '\n\n')
    _write(args, header + text + '\n', {'result': result, 'frames': counts})
    return 0


def _run_drives(args, rules, sets):
    """Score the frames of ``--drives`` rendered drives per set (:mod:`.grid_drives`)."""
    from freespace_seg.tools.grid_drives import (measure_drives, parse_agreements,
                                                 parse_occlusions, row_keys)

    seconds = args.drive_seconds if args.drive_seconds is not None \
        else DRIVE_DEFAULTS['seconds']
    every = args.frame_every if args.frame_every is not None else DRIVE_DEFAULTS['frame_every']
    try:
        tolerance = args.agreement_tolerance if args.agreement_tolerance is not None else 1
        agreements = parse_agreements(args.agreement if args.agreement is not None
                                      else DRIVE_DEFAULTS['agreement'], tolerance)
        occlusions = parse_occlusions(args.occlusion if args.occlusion is not None else '0')
    except ValueError as e:
        print(f'grid-rules: {e}', file=sys.stderr)
        return 2
    problems = []
    if args.drives < 1:
        problems.append('--drives must be at least 1')
    if not seconds > 0 or not every > 0 or every > seconds:
        problems.append('--drive-seconds and --frame-every must be > 0, a frame at most '
                        'a drive long')
    if getattr(args, 'widths', [0]) != [0]:
        problems.append('--mask-widths does not apply to --drives')
    if getattr(args, '_frames_given', False):
        problems.append('--frames does not apply to --drives (--drive-seconds and '
                        '--frame-every set the frames)')
    if problems:
        print('grid-rules: ' + '; '.join(problems), file=sys.stderr)
        return 2
    pipeline, model = _perception(args)
    print(f'{model}; {args.drives} drives per set of {seconds:g} s, a frame every {every:g} s, '
          f'seed {args.seed}, {args.width}x{args.height}', flush=True)
    try:
        result, scored = measure_drives(pipeline, rules, agreements, sets, args.drives,
                                        args.seed, args.width, args.height, seconds, every,
                                        log=lambda text: print(text, flush=True),
                                        occlusions=occlusions)
    finally:
        if not callable(pipeline):
            pipeline.close()
    keys = row_keys(rules, agreements, occlusions)
    text = table(result, keys)
    print(text)
    header = (f'`python -m freespace_seg grid-rules --drives {args.drives} --drive-seconds '
              f'{seconds:g} --frame-every {every:g} --agreement '
              f'{",".join(a.name for a in agreements)} --agreement-tolerance {tolerance} '
              f'--occlusion {",".join(f"{m:g}" for m in occlusions)} '
              f'--seed {args.seed} --width {args.width} '
              f'--height {args.height}`; {model}; '
              + '; '.join(f'{n}: {k} frames scored' for n, k in scored.items()) + '\n\n')
    _write(args, header + text + '\n', {'result': result, 'frames': scored})
    return 0
