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
``python -m freespace_seg own-floor-sim OUT``: the own-floor loop in simulation, end to end.

It does what a user does on the robot, in rooms of a style the model did not train on:

1. **Drive and record.** The simulated Create 3 drives through ``--rooms`` rooms of
   ``--style`` for ``--minutes`` each (bump and turn, :mod:`freespace_seg.sim.wander`). Each
   drive is written as a rosbag2 with the robot's topics (``OUT/bags/room_<seed>``: the
   camera image and CameraInfo, ``/odom``, ``/tf_static``, ``/hazard_detection``).
2. **Label.** ``autolabel`` labels each bag (``OUT/labels``, one folder for all rooms). The
   labels are scored against the renderer's exact masks: free and blocked precision, the
   share of the true floor labelled free.
3. **Fine-tune.** ``finetune --images OUT/labels`` from ``--model`` (default: the shipped fp32
   model), then ``quantize`` (``OUT/model/own_floor.onnx`` and ``_int8.onnx``).
4. **Check.** ``eval`` of the base and the fine-tuned model, fp32 and INT8, on held-out rooms
   of the same style (``--render N --seed S --style STYLE``: other rooms than the driven ones)
   and of the default style (the model must not forget what it knew).
5. **Drive again** (``--loop-minutes``, optional): the closed loop (sim_robot, segmentation
   node, freespace_driver) in the driven rooms with the base and the fine-tuned INT8 model:
   collisions and coverage.

``OUT/summary.md`` and ``OUT/summary.json`` hold the tables.
"""

import argparse
import json
import math
import os
import shutil
import sys
import time

import cv2
from freespace_seg import cli
from freespace_seg.common import markdown
from freespace_seg.common.progress import Progress
from freespace_seg.ground.autolabel import AutoLabelConfig, CameraFloor
from freespace_seg.perception.pipeline import packaged_model_path
from freespace_seg.sim import default_intrinsics, make_scene, RandomizationConfig, render
from freespace_seg.sim.randomization import STYLES
from freespace_seg.sim.render import free_mask
from freespace_seg.sim.wander import wander
from freespace_seg.tools import autolabel
from freespace_seg.tools.autolabel_inputs import InputError
from freespace_seg.tools.autolabel_sim import room_mount
from freespace_seg.tools.sim_bag import write_drive_bag
import numpy as np


#: the drive's default camera heights (m): eval's and the training's range
DEFAULT_CAMERA_HEIGHT = (0.1, 0.5)
#: ``--robot-height camera``: the robot's top this far (m) above its camera
MAST_ABOVE_CAMERA = 0.05


def add_arguments(parser):
    parser.add_argument('output', metavar='OUT', help='folder to write (must not exist)')
    parser.add_argument('--overwrite', action='store_true', help='replace an existing OUT')
    parser.add_argument('--rooms', type=int, default=6, help='rooms to drive (6)')
    parser.add_argument('--first-seed', type=int, default=300,
                        help='seed of the first room; the others follow (300)')
    parser.add_argument('--style', choices=STYLES, default='shifted',
                        help="the rooms' look: shifted (held-out materials and light, the "
                             'default), one_floor (that look with one crimson rubber floor '
                             'in every room: a user floor the default model handles badly) '
                             'or default (the training style)')
    parser.add_argument('--minutes', type=float, default=2.0,
                        help='simulated minutes of driving per room (2)')
    parser.add_argument('--frame-every', type=float, default=0.5,
                        help='seconds between recorded camera frames (0.5)')
    parser.add_argument('--width', type=int, default=480, help='image width (480)')
    parser.add_argument('--height', type=int, default=270, help='image height (270)')
    parser.add_argument('--camera-height', type=float, nargs=2, default=DEFAULT_CAMERA_HEIGHT,
                        metavar=('LOW', 'HIGH'),
                        help='camera heights over the rooms, spread evenly; the held-out rooms '
                             'of --style are seen from the same range, and the closed loop '
                             'drives each room with its own camera (0.1 0.5 m)')
    parser.add_argument('--robot-height', default='0', metavar='H|camera',
                        help='the driving robot is H m tall: it bumps into raised things below '
                             'H (a table top, a shelf) instead of driving under them; camera: '
                             'the camera height of each room + 0.05 m (a camera on a mast); 0: '
                             'the Create 3, which passes under tables (0)')
    parser.add_argument('--camera-pitch', type=float, nargs=2, default=(0.15, 0.45),
                        metavar=('LOW', 'HIGH'),
                        help='camera pitches over the rooms (0.15 0.45 rad)')
    parser.add_argument('--no-camera-effects', action='store_true',
                        help='clean images (default: noise, blur, exposure and JPEG as '
                             '`generate` draws them)')
    parser.add_argument('--model', default='',
                        help='fp32 model to fine-tune (default: the shipped one)')
    parser.add_argument('--model-int8', default='',
                        help='its INT8 copy for the checks (default: beside --model, '
                             '<stem>_int8.onnx, when it exists)')
    parser.add_argument('--model-fill', type=float, default=0.0, metavar='P',
                        help="autolabel's --model-fill (0: off, the default)")
    parser.add_argument('--grow', type=float, default=0.0, metavar='DE',
                        help="autolabel's --grow (0: off, the default)")
    parser.add_argument('--parallax', action='store_true',
                        help="autolabel's --parallax (off by default)")
    parser.add_argument('--replay', default='generate', metavar='DIR',
                        help="synthetic frames mixed into the fine-tuning (finetune's "
                             '--replay): a `generate` dataset, `generate` (the default: render '
                             'as many default-style frames as there are labelled ones into '
                             'OUT/replay) or `none`')
    parser.add_argument('--replay-seed', type=int, default=77,
                        help='seed of the generated replay frames (77)')
    parser.add_argument('--steps', type=int, default=300, help="finetune's --steps (300)")
    parser.add_argument('--batch-size', type=int, default=4, help="finetune's --batch-size (4)")
    parser.add_argument('--lr', type=float, default=3e-4, help="finetune's --lr (0.0003)")
    parser.add_argument('--augment', default='full', help="finetune's --augment (full)")
    parser.add_argument('--quantize-frames', type=int, default=64,
                        help="quantize's calibration --frames (64)")
    parser.add_argument('--eval-frames', type=int, default=300,
                        help='held-out frames per check set (300)')
    parser.add_argument('--eval-seed', type=int, default=1000,
                        help="seed of the check sets' rooms (1000)")
    parser.add_argument('--loop-minutes', type=float, default=0.0,
                        help='closed loop per driven room and model, simulated minutes '
                             '(0: skip, the default)')
    parser.add_argument('--threads', type=int, default=2, help='threads (2)')


class Room:
    """One driven room: its scene, camera, drive and the times of the recorded frames."""

    def __init__(self, index, args):
        self.seed = args.first_seed + index
        self.look = RandomizationConfig(style=args.style)
        rng = np.random.default_rng(self.seed)
        self.scene = make_scene(rng, self.look)
        self.mount = room_mount(args, index)
        self.robot_height = robot_height(args, self.mount)
        self.drive = wander(self.scene, rng, duration=60.0 * args.minutes,
                            height=self.robot_height)
        self.intrinsics = default_intrinsics(args.width, args.height)
        self.effects = not args.no_camera_effects
        self.name = f'room_{self.seed}'
        self.times = []

    def image_at(self, t, pose):
        rng = (np.random.default_rng([self.seed, int(round(1000 * t))]) if self.effects
               else None)
        return render(self.scene, self.intrinsics, self.mount, pose, rng=rng,
                      randomization=self.look).image

    def truth(self, k):
        return free_mask(self.scene, self.intrinsics, self.mount,
                         self.drive.pose_at(self.times[k]))


def _check(args):
    if args.rooms < 1 or args.minutes <= 0 or args.frame_every <= 0:
        raise ValueError('--rooms must be >= 1, --minutes and --frame-every > 0')
    if args.grow < 0.0:
        raise ValueError('--grow must be >= 0 (0: off)')
    if args.eval_frames < 1 or args.steps < 1 or args.quantize_frames < 1:
        raise ValueError('--eval-frames, --quantize-frames and --steps must be >= 1')
    for flag, (low, high), lo, hi in (('--camera-height', args.camera_height, 0.05, 2.0),
                                      ('--camera-pitch', args.camera_pitch, -0.5, 1.5)):
        if not (lo <= low <= high <= hi):
            raise ValueError(f'{flag}: need {lo} <= LOW <= HIGH <= {hi}')
    if args.robot_height != 'camera':
        try:
            height = float(args.robot_height)
        except ValueError:
            height = float('nan')
        if not 0.0 <= height <= 3.0:
            raise ValueError(f'--robot-height takes a height in metres (0-3) or "camera", got '
                             f'{args.robot_height!r}')
    if args.replay not in ('generate', 'none') and not os.path.isdir(args.replay):
        raise ValueError(f'--replay {args.replay}: no such folder')
    if args.model and not os.path.isfile(args.model):
        raise ValueError(f'--model {args.model}: no such file')


def robot_height(args, mount):
    """Return the drive's robot height (m) for ``--robot-height``, or None (the Create 3)."""
    if args.robot_height == 'camera':
        return float(mount.z) + MAST_ABOVE_CAMERA
    height = float(args.robot_height)
    return height if height > 0.0 else None


def _eval_cameras(args):
    """
    Return eval's camera option for the held-out rooms of ``--style``: the drive's heights.

    The robot's own camera is what the fine-tuned model must see well, so the held-out rooms
    of the driven style are seen from ``--camera-height``; eval's own default (0.1-0.5 m, the
    training range) needs no option. The default-style check keeps eval's defaults.
    """
    low, high = args.camera_height
    if (low, high) == DEFAULT_CAMERA_HEIGHT:
        return []
    return ['--camera-height', f'{low:g},{high:g}']


def _run_cli(argv, what):
    print(f'own-floor-sim: python -m freespace_seg {" ".join(argv)}', file=sys.stderr,
          flush=True)
    rc = cli.main(argv)
    if rc:
        raise RuntimeError(f'{what} failed (exit status {rc})')


def _score_labels(rooms, labels_dir):
    """Score the label files against the renderer: per room and in all."""
    keys = ('frames', 'free', 'free_ok', 'blocked', 'blocked_ok', 'low', 'low_ok',
            'truth_free', 'pixels')
    per_room = {}
    for room in rooms:
        c = dict.fromkeys(keys, 0)
        sky = CameraFloor(room.intrinsics, room.mount, AutoLabelConfig()).sky
        prefix = room.name + '_'
        for name in sorted(os.listdir(labels_dir)):
            if not name.startswith(prefix) or name.endswith('_mask.png'):
                continue
            stem = os.path.splitext(name)[0]
            k = int(stem[len(prefix):])
            mask = cv2.imread(os.path.join(labels_dir, stem + '_mask.png'), cv2.IMREAD_UNCHANGED)
            truth = room.truth(k) > 0
            checked = mask[..., 3] > 0
            free = checked & (mask[..., 0] > 127)
            blocked = checked & (mask[..., 0] <= 127)
            c['frames'] += 1
            c['pixels'] += mask.size
            c['free'] += int(free.sum())
            c['free_ok'] += int((free & truth).sum())
            c['blocked'] += int(blocked.sum())
            c['blocked_ok'] += int((blocked & ~truth).sum())
            c['low'] += int((blocked & ~sky).sum())
            c['low_ok'] += int((blocked & ~sky & ~truth).sum())
            c['truth_free'] += int(truth.sum())
        per_room[room.seed] = c
    total = {k: sum(c[k] for c in per_room.values()) for k in keys}
    return per_room, total


def _label_row(name, c):
    def ratio(a, b):
        return round(a / b, 4) if b else None
    return {'rooms': name, 'frames': c['frames'],
            'free_precision': ratio(c['free_ok'], c['free']),
            'blocked_precision': ratio(c['blocked_ok'], c['blocked']),
            'low_blocked_precision': ratio(c['low_ok'], c['low']),
            'low_blocked_share': ratio(c['low'], c['pixels']),
            'free_coverage': ratio(c['free_ok'], c['truth_free']),
            'free_share': ratio(c['free'], c['pixels']),
            'blocked_share': ratio(c['blocked'], c['pixels'])}


def _metrics(path):
    with open(path) as f:
        m = json.load(f)['metrics']
    return {'miou': round(m['miou'], 4), 'blocked_called_free': round(m['blocked_called_free'], 4)}


def run(args):
    try:
        _check(args)
    except ValueError as e:
        print(f'own-floor-sim: error: {e}', file=sys.stderr)
        return 2
    out = args.output
    if os.path.exists(out):
        if not args.overwrite:
            print(f'own-floor-sim: error: {out} exists (--overwrite to replace it)',
                  file=sys.stderr)
            return 2
        shutil.rmtree(out)
    try:
        summary = _loop(args, out)
    except (RuntimeError, autolabel.LabelError, InputError, OSError) as e:
        print(f'own-floor-sim: error: {e}', file=sys.stderr)
        return 1
    print(summary)
    return 0


def _loop(args, out):
    t0 = time.monotonic()
    model = args.model or packaged_model_path()
    model_int8 = args.model_int8 or os.path.splitext(model)[0] + '_int8.onnx'
    if not os.path.isfile(model_int8):
        model_int8 = ''
    os.makedirs(os.path.join(out, 'bags'))
    labels = os.path.join(out, 'labels')
    os.makedirs(labels)
    rooms = []
    timing = {}
    # 1-2: drive, record, label
    bar = Progress(None, total=args.rooms, desc='own-floor-sim: rooms')
    for i in range(args.rooms):
        room = Room(i, args)
        bag = os.path.join(out, 'bags', room.name)
        room.times = write_drive_bag(bag, room.drive, room.intrinsics, room.mount,
                                     room.image_at, frame_every=args.frame_every)
        parser = argparse.ArgumentParser()
        autolabel.add_arguments(parser)
        la = parser.parse_args([bag, os.path.join(out, 'tmp_labels'), '--overwrite',
                                '--min-interval', str(0.9 * args.frame_every),
                                '--model-fill', str(args.model_fill), '--grow', str(args.grow),
                                '--model', model] + (['--parallax'] if args.parallax else []))
        autolabel.label_bag(la, out=sys.stderr)
        for name in os.listdir(la.output):
            os.replace(os.path.join(la.output, name), os.path.join(labels, name))
        os.rmdir(la.output)
        rooms.append(room)
        bar.update(1)
    bar.close()
    timing['drive_record_label_s'] = round(time.monotonic() - t0, 1)
    per_room, total = _score_labels(rooms, labels)
    label_rows = [dict(_label_row(str(seed), c),
                       height=round(r.mount.z, 3), pitch=round(r.mount.pitch, 3),
                       distance=round(r.drive.distance, 1), bumps=len(r.drive.hazards))
                  for (seed, c), r in zip(per_room.items(), rooms)]
    label_total = _label_row('all', total)

    # 3: fine-tune and quantize
    t1 = time.monotonic()
    replay = []
    if args.replay == 'generate':
        # as many training frames as labelled ones (generate keeps 80 % for training)
        num = max(2, math.ceil(total['frames'] / 0.8))
        _run_cli(['generate', '--out', os.path.join(out, 'replay'), '--num', str(num),
                  '--seed', str(args.replay_seed), '--jobs', str(args.threads)], 'generate')
        replay = ['--replay', os.path.join(out, 'replay'), '--replay-frames',
                  str(total['frames'])]
    elif args.replay != 'none':
        replay = ['--replay', args.replay, '--replay-frames', str(total['frames'])]
    timing['replay_s'] = round(time.monotonic() - t1, 1)
    tuned = os.path.join(out, 'model', 'own_floor.onnx')
    os.makedirs(os.path.dirname(tuned))
    _run_cli(['finetune', '--images', labels, '--model', model, '--out', tuned,
              '--steps', str(args.steps), '--batch-size', str(args.batch_size),
              '--lr', str(args.lr), '--augment', args.augment, '--threads', str(args.threads)]
             + replay, 'finetune')
    _run_cli(['quantize', '--model', tuned, '--frames', str(args.quantize_frames),
              '--check-frames', str(min(8, args.quantize_frames))], 'quantize')
    tuned_int8 = os.path.splitext(tuned)[0] + '_int8.onnx'
    timing['finetune_quantize_s'] = round(time.monotonic() - t1, 1)

    # 4: check on held-out rooms of the style and of the default style
    t2 = time.monotonic()
    models = [('base fp32', model), ('fine-tuned fp32', tuned)]
    if model_int8:
        models.insert(1, ('base INT8', model_int8))
    models.append(('fine-tuned INT8', tuned_int8))
    styles = [args.style] + (['default'] if args.style != 'default' else [])
    cameras = _eval_cameras(args)
    checks = {}
    for label, path in models:
        for style in styles:
            where = os.path.join(out, 'eval', label.replace(' ', '_'), style)
            _run_cli(['eval', '--model', path, '--render', str(args.eval_frames), '--seed',
                      str(args.eval_seed), '--style', style, '--latency-runs', '0',
                      '--figures', '0', '--threads', str(args.threads), '--out', where]
                     + (cameras if style == args.style else []), 'eval')
            checks[(label, style)] = _metrics(os.path.join(where, 'metrics.json'))
    timing['eval_s'] = round(time.monotonic() - t2, 1)

    # 5: the closed loop in the driven rooms
    loop = {}
    if args.loop_minutes > 0:
        t3 = time.monotonic()
        from freespace_seg.tools.closed_loop import run_room
        for label, path in models:
            if 'INT8' not in label and model_int8:
                continue
            # Each room with the camera it was driven with; the node gets the same mount.
            rs = [run_room(r.seed, duration=60.0 * args.loop_minutes, model_path=path,
                           sim_params={'style': args.style,
                                       'camera_height': round(float(r.mount.z), 4),
                                       'camera_pitch': round(float(r.mount.pitch), 4)})
                  for r in rooms]
            loop[label] = {'rooms': len(rs), 'collisions': sum(r.collisions for r in rs),
                           'distance_m': round(sum(r.distance for r in rs), 1),
                           'mean_coverage': round(float(np.mean([r.coverage for r in rs])), 4),
                           'per_room': [{'seed': r.seed, 'collisions': r.collisions,
                                         'coverage': round(r.coverage, 4)} for r in rs]}
            print(f'own-floor-sim: closed loop, {label}: {loop[label]["collisions"]} '
                  f'collisions, coverage {100 * loop[label]["mean_coverage"]:.1f} %',
                  file=sys.stderr, flush=True)
        timing['closed_loop_s'] = round(time.monotonic() - t3, 1)
    timing['total_s'] = round(time.monotonic() - t0, 1)

    data = {'command': 'python -m freespace_seg own-floor-sim ' + ' '.join(sys.argv[2:]),
            'options': {k: v for k, v in vars(args).items() if k != 'func'},
            'labels': {'rooms': label_rows, 'all': label_total},
            'checks': [{'model': m, 'style': s, **v} for (m, s), v in checks.items()],
            'changes': _changes(checks, styles, models),
            'closed_loop': loop, 'timing': timing}
    with open(os.path.join(out, 'summary.json'), 'w') as f:
        json.dump(data, f, indent=1, default=str)
    text = _markdown(args, data, checks, styles, models)
    with open(os.path.join(out, 'summary.md'), 'w') as f:
        f.write(text + '\n')
    return text


def _changes(checks, styles, models):
    """Fine-tuned minus base, per precision and style: mIoU and blocked called free."""
    labels = {label for label, _ in models}
    changes = []
    for precision in ('fp32', 'INT8'):
        base, tuned = f'base {precision}', f'fine-tuned {precision}'
        if base not in labels or tuned not in labels:
            continue
        for style in styles:
            before, after = checks[(base, style)], checks[(tuned, style)]
            changes.append({'precision': precision, 'style': style,
                            'miou': round(after['miou'] - before['miou'], 4),
                            'blocked_called_free': round(after['blocked_called_free']
                                                         - before['blocked_called_free'], 4)})
    return changes


def _pct(v):
    return '-' if v is None else f'{100 * v:.1f} %'


def _markdown(args, data, checks, styles, models):
    lines = [f'## Labels ({args.rooms} rooms of style {args.style}, {args.minutes:g} min each)',
             '']
    rows = [[r['rooms'], r.get('height', ''), r.get('pitch', ''), r.get('distance', ''),
             r.get('bumps', ''), r['frames'],
             '-' if r['free_precision'] is None else f'{r["free_precision"]:.4f}',
             '-' if r['blocked_precision'] is None else f'{r["blocked_precision"]:.4f}',
             '-' if r['low_blocked_precision'] is None
             else f'{r["low_blocked_precision"]:.4f}',
             '-' if r['free_coverage'] is None else f'{r["free_coverage"]:.3f}',
             _pct(r['free_share']), _pct(r['blocked_share']), _pct(r['low_blocked_share'])]
            for r in data['labels']['rooms'] + [data['labels']['all']]]
    lines += markdown.table(
        ['room (seed)', 'camera height (m)', 'pitch (rad)', 'driven (m)', 'bumps', 'frames',
         'free precision', 'blocked precision', 'blocked below the horizon: precision',
         'free coverage', 'free (% px)', 'blocked (% px)', 'blocked below the horizon (% px)'],
        rows)
    cameras = ' '.join(_eval_cameras(args))
    seen_from = f', `{cameras}` for style {args.style}' if cameras else ''
    lines += ['', f'## Held-out rooms (`eval --render {args.eval_frames} --seed '
              f'{args.eval_seed} --style S`{seen_from}): mIoU / blocked called free', '']
    rows = [[label] + [f'{checks[(label, s)]["miou"]:.3f} / '
                       f'{_pct(checks[(label, s)]["blocked_called_free"])}' for s in styles]
            for label, _ in models]
    for precision in ('fp32', 'INT8'):
        by_style = {c['style']: c for c in data['changes'] if c['precision'] == precision}
        if by_style:
            rows.append([f'change, {precision}'] + [
                f'{by_style[s]["miou"]:+.3f} / '
                f'{100 * by_style[s]["blocked_called_free"]:+.1f} points' for s in styles])
    lines += markdown.table(['model'] + [f'style {s}' for s in styles], rows)
    if data['closed_loop']:
        lines += ['', f'## Closed loop in the driven rooms ({args.loop_minutes:g} min each)', '']
        rows = [[m, v['rooms'], v['collisions'], v['distance_m'],
                 f'{100 * v["mean_coverage"]:.1f} %'] for m, v in data['closed_loop'].items()]
        lines += markdown.table(['model', 'rooms', 'collisions', 'distance (m)',
                                 'mean coverage'], rows)
    lines += ['', 'Time (s): ' + ', '.join(f'{k} {v}' for k, v in data['timing'].items())]
    return '\n'.join(lines)
