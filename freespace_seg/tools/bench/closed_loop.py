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
Closed-loop benchmark: drive the simulated Create 3 through many seeded rooms.

    python -m freespace_seg bench-closed-loop --rooms 20 --minutes 10
    python -m freespace_seg bench-closed-loop --rooms 3 --minutes 0.5 --perception truth

Each room runs :func:`freespace_seg.tools.closed_loop.run_room` (sim_robot + segmentation_node +
freespace_driver; in lockstep on the simulated clock with a fixed perception latency unless
``--realtime``) one after the other and the script prints a Markdown table of collisions,
distance, coverage of the free floor and stale-perception stops per room, with totals, and
(lockstep) a second one of the share of the time the driver spent driving, rotating in place,
backing up and stopped. ``--driver-param NAME:=VALUE`` sets a freespace_driver parameter in
every room, ``--seg-param NAME:=VALUE`` a segmentation_node one. ``--png-dir`` also writes a
top-down picture of each room with the path; ``--json`` writes the rooms' numbers, and
``--from-json`` prints one table of the rooms of several such files (for instance two halves
run side by side on two cores). The exit code is 1 when any room had a collision.
"""

import json
import os
import sys
import time

from freespace_seg.sim.randomization import STYLES
from freespace_seg.tools.closed_loop import (ClosedLoopResult, draw_path_png, markdown_table,
                                             PERCEPTIONS, run_room, state_table)
import numpy as np

#: the numbers of a room that --json keeps (the path and the scene are left out)
JSON_FIELDS = ('seed', 'perception', 'duration', 'wall_time', 'collisions', 'contact_steps',
               'distance', 'coverage', 'free_area', 'stale_stops', 'hazard_stops', 'grids',
               'frames', 'collision_points', 'notes', 'lockstep', 'missed_grids',
               'state_seconds')


#: the sim_robot node's defaults and ranges of its camera mount
CAMERA_HEIGHT_DEFAULT, CAMERA_HEIGHT_RANGE = 0.25, (0.05, 2.0)
CAMERA_PITCH_DEFAULT, CAMERA_PITCH_RANGE = 0.3, (-0.5, 1.5)


def sim_parameters(args):
    """Return the sim_robot parameters the options set; ValueError names a bad one."""
    for flag, value, (low, high) in (('--camera-height', args.camera_height, CAMERA_HEIGHT_RANGE),
                                     ('--camera-pitch', args.camera_pitch, CAMERA_PITCH_RANGE)):
        if not low <= value <= high:
            raise ValueError(f'{flag} must be in [{low:g}, {high:g}], got {value:g}')
    return {'width': args.width, 'height': args.height, 'camera_rate': args.camera_rate,
            'camera_noise': args.camera_noise, 'camera_height': float(args.camera_height),
            'camera_pitch': float(args.camera_pitch), 'style': args.style}


#: driver parameters the closed loop sets itself (not for --driver-param)
_HARNESS_SETS = ('drive', 'use_stamped', 'control_rate', 'use_sim_time')
#: segmentation_node parameters the closed loop sets itself (not for --seg-param)
_SEG_HARNESS_SETS = ('model_file_path', 'num_threads', 'camera_height', 'camera_pitch',
                     'use_sim_time')


def _typed_parameters(items, specs, flag, harness_sets, node, page):
    """Return ``{name: value}`` of ``NAME:=VALUE`` items, typed and checked by ``specs``."""
    from freespace_seg.nodes.params import validate

    specs = {spec.name: spec for spec in specs}
    out = {}
    for item in items or ():
        name, sep, text = (part.strip() for part in item.partition(':='))
        if not sep or not name or not text:
            raise ValueError(f'{flag} wants NAME:=VALUE, got {item!r}')
        spec = specs.get(name)
        if name in harness_sets:
            raise ValueError(f'{flag} {name}: the closed loop sets it itself')
        if spec is None or spec.kind not in ('int', 'double', 'bool'):
            raise ValueError(f'{flag} {name}: not a number or bool parameter of {node} '
                             f'({page})')
        try:
            if spec.kind == 'bool':
                if text.lower() not in ('true', 'false'):
                    raise ValueError
                value = text.lower() == 'true'
            else:
                value = int(text) if spec.kind == 'int' else float(text)
        except ValueError:
            raise ValueError(f'{flag} {name}: {text!r} is not a {spec.kind}') from None
        reason = validate(spec, value)
        if reason:
            raise ValueError(f'{flag} {name}: {reason}')
        out[name] = value
    return out


def driver_parameters(items):
    """
    Return ``{name: value}`` of ``--driver-param`` items (``NAME:=VALUE``).

    Each value is typed and checked by the driver's parameter spec; ValueError names an
    unknown name, a bad value or a parameter the closed loop sets itself (lockstep waits for
    a command every step).
    """
    from freespace_seg.nodes.freespace_driver import DRIVER_PARAMS

    return _typed_parameters(items, DRIVER_PARAMS, '--driver-param', _HARNESS_SETS,
                             'freespace_driver', 'docs/nodes/freespace_driver.md')


def segmentation_parameters(items):
    """
    Return ``{name: value}`` of ``--seg-param`` items (``NAME:=VALUE``).

    As :func:`driver_parameters`, for segmentation_node's number and bool parameters.
    """
    from freespace_seg.nodes.params import SEGMENTATION_PARAMS

    return _typed_parameters(items, SEGMENTATION_PARAMS, '--seg-param', _SEG_HARNESS_SETS,
                             'segmentation_node', 'docs/nodes/segmentation_node.md')


def add_arguments(ap):
    """Add the benchmark's options to ``ap``."""
    ap.add_argument('--rooms', type=int, default=20, help='number of rooms (default 20)')
    ap.add_argument('--minutes', type=float, default=10.0,
                    help='simulated minutes per room (default 10)')
    ap.add_argument('--first-seed', type=int, default=0,
                    help='seed of the first room; the others follow (default 0)')
    ap.add_argument('--perception', choices=PERCEPTIONS, default='model',
                    help='model: segmentation_node with the model; truth: exact masks '
                    '(default model)')
    ap.add_argument('--model', default=None,
                    help='ONNX model (default: the shipped models/freespace_lite0.onnx)')
    ap.add_argument('--threads', type=int, default=1,
                    help='inference threads of the segmentation node (default 1)')
    ap.add_argument('--width', type=int, default=320, help='camera width (default 320)')
    ap.add_argument('--height', type=int, default=180, help='camera height (default 180)')
    ap.add_argument('--camera-rate', type=float, default=10.0,
                    help='camera frames per second (default 10)')
    ap.add_argument('--camera-height', type=float, default=CAMERA_HEIGHT_DEFAULT, metavar='M',
                    help='camera optical centre above the floor, metres (%g-%g; default %g, '
                    'a TurtleBot 4-like mount)' % (*CAMERA_HEIGHT_RANGE, CAMERA_HEIGHT_DEFAULT))
    ap.add_argument('--camera-pitch', type=float, default=CAMERA_PITCH_DEFAULT, metavar='RAD',
                    help='camera pitch, radians, positive tilts down (%g to %g; default %g)'
                    % (*CAMERA_PITCH_RANGE, CAMERA_PITCH_DEFAULT))
    ap.add_argument('--camera-noise', action='store_true',
                    help='render camera effects (noise, blur, exposure, JPEG)')
    ap.add_argument('--style', choices=STYLES, default='default',
                    help="the rooms' appearance: default (the training style), shifted "
                    '(held-out materials and light) or one_floor (shifted, one crimson rubber '
                    'floor in every room) (default: default)')
    ap.add_argument('--realtime', action='store_true',
                    help='run on a wall-clock timer instead of lockstep (results then depend '
                    'on the machine and its load)')
    ap.add_argument('--latency', type=float, default=0.1,
                    help='lockstep: perception latency in simulated seconds, at most one '
                    'camera period (default 0.1)')
    ap.add_argument('--driver-param', action='append', default=[], metavar='NAME:=VALUE',
                    help='a freespace_driver parameter for every room (repeat it), e.g. '
                    "memory_free_hits:=3 (default: the driver's defaults)")
    ap.add_argument('--seg-param', action='append', default=[], metavar='NAME:=VALUE',
                    help='a segmentation_node parameter for every room with --perception '
                    'model (repeat it), e.g. grid_mark_confidence:=0.9 (default: the '
                    "node's defaults)")
    ap.add_argument('--png-dir', default=None,
                    help='write room_<seed>.png (top-down room with the path) here')
    ap.add_argument('--json', default=None,
                    help="also write the rooms' numbers here, after every room")
    ap.add_argument('--resume', action='store_true',
                    help='with --json: keep the rooms already in that file (same options) and '
                    'run only the others')
    ap.add_argument('--from-json', nargs='+', default=None, metavar='FILE',
                    help='run nothing: print one table of the rooms in these --json files')


def result_to_dict(r):
    """Return the JSON-able numbers of a :class:`ClosedLoopResult`."""
    return {k: getattr(r, k) for k in JSON_FIELDS}


def result_from_dict(d):
    """Rebuild a :class:`ClosedLoopResult` (without path or scene) from :func:`result_to_dict`."""
    values = {k: d[k] for k in JSON_FIELDS if k in d}
    values['collision_points'] = [tuple(p) for p in values.get('collision_points', [])]
    return ClosedLoopResult(path=np.zeros((0, 4)), **values)


def _from_json(files):
    results = []
    for name in files:
        with open(name) as f:
            results += [result_from_dict(d) for d in json.load(f)['rooms']]
    results.sort(key=lambda r: r.seed)
    _print_tables(results)
    return 1 if any(r.collisions for r in results) else 0


def _print_tables(results):
    """Print the rooms' table and, where recorded, the driver's time per state."""
    print(markdown_table(results))
    states = state_table(results)
    if states:
        print('\nTime per driver state (lockstep; `~/state` of freespace_driver):\n')
        print(states)


#: options that must match between a run and its --resume
_SAME = ('minutes', 'perception', 'model', 'width', 'height', 'camera_rate', 'camera_height',
         'camera_pitch', 'camera_noise', 'style', 'realtime', 'latency', 'driver_param',
         'seg_param')


def _resumed(args):
    """Return the results of --json's rooms for --resume; ValueError if they do not fit."""
    if not args.json:
        raise ValueError('--resume needs --json FILE (the file it resumes)')
    if not os.path.isfile(args.json):
        return []
    with open(args.json) as f:
        data = json.load(f)
    before = data.get('args', {})
    # Files written before --driver-param and --seg-param ran with the nodes' defaults.
    old_default = {'driver_param': [], 'seg_param': []}
    differ = [k for k in _SAME
              if before.get(k, old_default.get(k, getattr(args, k))) != getattr(args, k)]
    if differ:
        was = [f'--{k.replace("_", "-")} {before.get(k, old_default.get(k))}' for k in differ]
        raise ValueError(f'--resume: {args.json} was run with other options: '
                         + ', '.join(was))
    wanted = range(args.first_seed, args.first_seed + args.rooms)
    results = [result_from_dict(d) for d in data.get('rooms', [])]
    results = [r for r in results if r.seed in wanted]
    print(f'resume: {len(results)} rooms from {args.json}', file=sys.stderr, flush=True)
    return results


def run(args):
    """Run the benchmark; print the table; return 1 if any room had a collision."""
    if args.from_json:
        return _from_json(args.from_json)
    if args.rooms < 1 or args.minutes <= 0:
        print('--rooms must be >= 1 and --minutes > 0', file=sys.stderr)
        return 2
    if args.png_dir:
        os.makedirs(args.png_dir, exist_ok=True)
    try:
        sim_params = sim_parameters(args)
        driver_params = driver_parameters(args.driver_param)
        seg_params = segmentation_parameters(args.seg_param)
        if seg_params and args.perception != 'model':
            raise ValueError('--seg-param needs --perception model')
    except ValueError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    results = []
    if args.resume:
        try:
            results = _resumed(args)
        except ValueError as e:
            print(f'error: {e}', file=sys.stderr)
            return 2
    done = {r.seed for r in results}
    t0 = time.monotonic()
    for seed in range(args.first_seed, args.first_seed + args.rooms):
        if seed in done:
            continue
        try:
            r = run_room(seed, duration=60.0 * args.minutes, perception=args.perception,
                         model_path=args.model, num_threads=args.threads,
                         sim_params=sim_params, driver_params=driver_params,
                         seg_params=seg_params, lockstep=not args.realtime,
                         latency=args.latency, log_every=60.0,
                         log=lambda line: print(line, file=sys.stderr, flush=True))
        except (FileNotFoundError, ValueError) as e:
            print(f'error: {e}', file=sys.stderr)
            return 2
        results.append(r)
        results.sort(key=lambda x: x.seed)
        notes = f' ({"; ".join(r.notes)})' if r.notes else ''
        print(f'room {seed}: {r.collisions} collisions, {r.distance:.1f} m, coverage '
              f'{100.0 * r.coverage:.1f} %, {r.stale_stops} stale stops{notes}',
              file=sys.stderr, flush=True)
        if args.png_dir:
            draw_path_png(r, os.path.join(args.png_dir, f'room_{seed}.png'))
        if args.json:
            with open(args.json, 'w') as f:
                json.dump({'args': vars(args), 'rooms': [result_to_dict(x) for x in results]},
                          f, indent=1)
    mode = 'real time' if args.realtime else f'lockstep, {1000 * args.latency:.0f} ms latency'
    print(f'\nClosed loop, perception={args.perception}, {args.rooms} rooms x '
          f'{args.minutes:g} min simulated ({mode}), camera {args.width}x{args.height} at '
          f'{args.camera_rate:g} Hz, {args.camera_height:g} m up, pitched '
          f'{args.camera_pitch:g} rad'
          + (f', driver {" ".join(args.driver_param)}' if args.driver_param else '')
          + (f', segmentation {" ".join(args.seg_param)}' if args.seg_param else '')
          + f' ({time.monotonic() - t0:.0f} s wall):\n')
    _print_tables(results)
    return 1 if any(r.collisions for r in results) else 0
