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
``python -m freespace_seg autolabel-sim``: how right the drive-over labels are, in simulation.

For each room (seed 0, 1, ...; the style alternates ``default`` / ``shifted``, which changes
the look only, never the geometry) the simulated Create 3 wanders (bump and turn,
:mod:`freespace_seg.sim.wander`) for ``--duration`` s with the camera at a height spread
evenly over ``--camera-height`` and a pitch spread over ``--camera-pitch``. A frame every
``--frame-every`` s is labelled by :func:`freespace_seg.ground.autolabel.label_frame` from the
odometry and the bumps, under each condition, and compared with the renderer's exact mask:

* ``exact``: the true path;
* ``drift``: odometry with a scale error (``--odom-scale``) and a heading drift
  (``--heading-drift`` degrees per metre driven);
* ``offset``: the image stamped ``--time-offset`` s late (the label uses the pose then);
* ``drift+offset``: both;
* ``pitch``: the camera mount's pitch off by ``--pitch-error`` degrees;
* ``no line of sight``: exact, but free = under a later footprint, without the visibility
  test (what the test buys);
* ``bumps without bearing``: exact, but the bumps without their contact bearing (a bumper
  that only says 'bumped', as a std_msgs/Bool hazard topic): the blocked band is
  ``--hazard-angle`` around the heading instead of ``hazard_bearing_tolerance`` around the
  contact.

The table: free-label precision (truly free among the pixels labelled free), the share of
truly free pixels labelled free (coverage), the precision of the blocked labels of the
horizon rule and of the bumps, and the labelled shares. ``--parallax`` renders every frame
and adds ``autolabel --parallax``'s blocked labels
(:mod:`freespace_seg.ground.autolabel_parallax`), each frame paired with the next, the motion
taken from the condition's path and stamps: their precision, share and the pairs used.
"""

from dataclasses import replace
import math
import sys

from freespace_seg.common import markdown
from freespace_seg.common.progress import Progress
from freespace_seg.ground.autolabel import (AutoLabelConfig, BLOCKED, CameraFloor, FREE,
                                            label_frame, relative_poses, Trajectory)
from freespace_seg.ground.autolabel_parallax import label_parallax
from freespace_seg.ground.geometry import CameraMount
from freespace_seg.sim import default_intrinsics, make_scene, RandomizationConfig
from freespace_seg.sim.render import free_mask, render
from freespace_seg.sim.wander import wander
import numpy as np

CONDITIONS = ('exact', 'drift', 'offset', 'drift+offset', 'pitch', 'no line of sight',
              'bumps without bearing')
#: counters per condition
_KEYS = ('frames', 'pixels', 'free', 'free_ok', 'truth_free', 'horizon', 'horizon_ok',
         'hazard', 'hazard_ok', 'parallax', 'parallax_ok', 'pairs', 'pairs_used')


def add_arguments(parser):
    parser.add_argument('--rooms', type=int, default=8, help='rooms (seeds 0..N-1) (8)')
    parser.add_argument('--first-seed', type=int, default=0, help='seed of the first room (0)')
    parser.add_argument('--duration', type=float, default=60.0,
                        help='simulated seconds of driving per room (60)')
    parser.add_argument('--frame-every', type=float, default=0.5,
                        help='seconds between labelled frames (0.5)')
    parser.add_argument('--width', type=int, default=320, help='image width (320)')
    parser.add_argument('--height', type=int, default=180, help='image height (180)')
    parser.add_argument('--camera-height', type=float, nargs=2, default=(0.1, 0.5),
                        metavar=('LOW', 'HIGH'), help='camera heights, spread over the rooms')
    parser.add_argument('--camera-pitch', type=float, nargs=2, default=(0.15, 0.45),
                        metavar=('LOW', 'HIGH'), help='camera pitches (rad), spread too')
    parser.add_argument('--odom-scale', type=float, default=0.02,
                        help='drift: odometry distance scale error (0.02 = 2 %%)')
    parser.add_argument('--heading-drift', type=float, default=1.0,
                        help='drift: heading error, degrees per metre driven (1.0)')
    parser.add_argument('--time-offset', type=float, default=0.05,
                        help='offset: image stamps late by this many seconds (0.05)')
    parser.add_argument('--pitch-error', type=float, default=1.0,
                        help='pitch: mount pitch error in degrees (1.0)')
    add_rule_arguments(parser)
    parser.add_argument('--conditions', default=','.join(CONDITIONS),
                        help='comma-separated conditions (all)')
    parser.add_argument('--per-room', action='store_true',
                        help='also a table of each room under the first condition')
    parser.add_argument('--parallax', action='store_true',
                        help="also autolabel's --parallax labels, each frame paired with the "
                             'next (renders every frame: slower)')


def add_rule_arguments(parser):
    """Add the options of :class:`AutoLabelConfig` (shared with ``autolabel``)."""
    d = AutoLabelConfig()
    parser.add_argument('--robot-radius', type=float, default=d.robot_radius,
                        help=f'footprint radius, m ({d.robot_radius}: Create 3)')
    parser.add_argument('--safety-margin', type=float, default=d.safety_margin,
                        help=f'footprint shrunk by this for free labels, m ({d.safety_margin})')
    parser.add_argument('--lookahead-time', type=float, default=d.lookahead_time,
                        help=f'later poses up to this many s after a frame ({d.lookahead_time})')
    parser.add_argument('--lookahead-distance', type=float, default=d.lookahead_distance,
                        help=f'and this many m of driving ({d.lookahead_distance})')
    parser.add_argument('--max-range', type=float, default=d.max_range,
                        help=f'no labels beyond this distance from the camera, m ({d.max_range})')
    parser.add_argument('--horizon-margin', type=float, default=d.horizon_margin_px,
                        help=f'pixels above the horizon left unchecked ({d.horizon_margin_px})')
    parser.add_argument('--min-depression', type=float, default=math.degrees(d.min_depression),
                        help='no free labels on rays less than this many degrees below the '
                             f'horizontal ({math.degrees(d.min_depression):g})')
    parser.add_argument('--pitch-tolerance', type=float,
                        default=math.degrees(d.pitch_tolerance),
                        help='free only if still seen with the camera pitched up by this many '
                             f'degrees ({math.degrees(d.pitch_tolerance):g})')
    parser.add_argument('--hazard-depth', type=float, default=d.hazard_depth,
                        help=f'blocked up to this far beyond the bumper, m ({d.hazard_depth}; '
                             '0: no hazard labels)')
    parser.add_argument('--hazard-angle', type=float,
                        default=math.degrees(d.hazard_half_angle),
                        help='half angle of the bumper front, degrees, for a bump without a '
                             f'contact bearing ({math.degrees(d.hazard_half_angle):g})')
    parser.add_argument('--hazard-bearing-tolerance', type=float,
                        default=math.degrees(d.hazard_bearing_tolerance),
                        help='half angle around the contact bearing, degrees, for a bump with '
                             f'one ({math.degrees(d.hazard_bearing_tolerance):g})')


def rule_config(args):
    """Return the :class:`AutoLabelConfig` of the options of :func:`add_rule_arguments`."""
    try:
        return AutoLabelConfig(
            robot_radius=args.robot_radius, safety_margin=args.safety_margin,
            lookahead_time=args.lookahead_time, lookahead_distance=args.lookahead_distance,
            max_range=args.max_range, horizon_margin_px=args.horizon_margin,
            min_depression=math.radians(args.min_depression),
            pitch_tolerance=math.radians(args.pitch_tolerance),
            hazard_depth=args.hazard_depth, hazard_half_angle=math.radians(args.hazard_angle),
            hazard_bearing_tolerance=math.radians(args.hazard_bearing_tolerance))
    except ValueError as e:
        raise SystemExit(f'autolabel: {e}')


def drifted(path, scale, heading_per_m):
    """Return odometry of a true ``path`` (N, 4: t, x, y, yaw) with scale and heading drift."""
    out = path.copy()
    x, y, yaw = path[0, 1:]
    for i in range(1, len(path)):
        c, s = math.cos(path[i - 1, 3]), math.sin(path[i - 1, 3])
        dx, dy = path[i, 1] - path[i - 1, 1], path[i, 2] - path[i - 1, 2]
        fwd, left = c * dx + s * dy, -s * dx + c * dy
        dyaw = math.remainder(path[i, 3] - path[i - 1, 3], math.tau)
        dyaw += heading_per_m * math.hypot(dx, dy)
        ca, sa = math.cos(yaw), math.sin(yaw)
        x += (1.0 + scale) * (ca * fwd - sa * left)
        y += (1.0 + scale) * (sa * fwd + ca * left)
        yaw += dyaw
        out[i, 1:] = (x, y, yaw)
    return out


def _spread(low, high, i, n):
    return low if n <= 1 else low + (high - low) * i / (n - 1)


def room_mount(args, index):
    """Return room ``index``'s camera: ``--camera-height`` and ``--camera-pitch`` spread out."""
    return CameraMount(z=_spread(*args.camera_height, index, args.rooms),
                       pitch=_spread(*args.camera_pitch, (index * 3) % args.rooms, args.rooms))


def _score(counts, labels, truth):
    m = labels.mask
    free = m == FREE
    counts['frames'] += 1
    counts['pixels'] += m.size
    counts['free'] += int(free.sum())
    counts['free_ok'] += int((free & (truth == 1)).sum())
    counts['truth_free'] += int((truth == 1).sum())
    return free


def measure_room(index, args, config, conditions, progress=None):
    """Drive room ``index`` and label its frames; return {condition: counters}."""
    seed = args.first_seed + index
    style = 'default' if index % 2 == 0 else 'shifted'
    rng = np.random.default_rng(seed)
    look = RandomizationConfig(style=style)
    scene = make_scene(rng, look)
    drive = wander(scene, rng, duration=args.duration, radius=config.robot_radius)
    intrinsics = default_intrinsics(args.width, args.height)
    mount = room_mount(args, index)
    path = drive.path
    odom = drifted(path, args.odom_scale, math.radians(args.heading_drift))
    tracks = {'exact': Trajectory(path[:, 0], path[:, 1:]),
              'drift': Trajectory(odom[:, 0], odom[:, 1:])}
    hazards = {'exact': drive.hazards,
               'drift': [(t, tuple(tracks['drift'].pose_at(t)), b) for t, _, b in drive.hazards],
               'none': [(t, p) for t, p, _ in drive.hazards]}
    cameras = {'exact': CameraFloor(intrinsics, mount, config)}
    if 'pitch' in conditions:
        wrong = replace(mount, pitch=mount.pitch + math.radians(args.pitch_error))
        cameras['pitch'] = CameraFloor(intrinsics, wrong, config)
    if 'no line of sight' in conditions:
        cameras['nolos'] = CameraFloor(intrinsics, mount,
                                       replace(config, line_of_sight=False))
    plan = {'exact': ('exact', 'exact', 0.0, 'exact'), 'drift': ('drift', 'exact', 0.0, 'drift'),
            'offset': ('exact', 'exact', args.time_offset, 'exact'),
            'drift+offset': ('drift', 'exact', args.time_offset, 'drift'),
            'pitch': ('exact', 'pitch', 0.0, 'exact'),
            'no line of sight': ('exact', 'nolos', 0.0, 'exact'),
            'bumps without bearing': ('exact', 'exact', 0.0, 'none')}
    out = {c: dict.fromkeys(_KEYS, 0) for c in conditions}
    out['_room'] = {'seed': seed, 'style': style, 'height': mount.z, 'pitch': mount.pitch,
                    'distance': drive.distance, 'bumps': len(drive.hazards)}

    def render_at(t):
        return render(scene, intrinsics, mount, drive.pose_at(t), randomization=look).image

    image = render_at if getattr(args, 'parallax', False) else None
    frame_times = np.arange(0.0, args.duration, args.frame_every)
    next_image = image(frame_times[0]) if image is not None else None
    for i, t0 in enumerate(frame_times):
        truth = free_mask(scene, intrinsics, mount, drive.pose_at(t0))
        this_image = next_image
        t1 = frame_times[i + 1] if i + 1 < len(frame_times) else None
        if image is not None and t1 is not None:
            next_image = image(t1)
        for cond in conditions:
            track_name, cam_name, offset, hazard_name = plan[cond]
            track = tracks[track_name]
            pose = track.pose_at(min(t0 + offset, track.times[-1]))
            labels = label_frame(cameras[cam_name], pose, t0 + offset, track.times,
                                 track.poses, hazards[hazard_name])
            c = out[cond]
            if image is not None and t1 is not None:
                # the pair's motion from the condition's own path and stamps
                pose1 = track.pose_at(min(t1 + offset, track.times[-1]))
                before = labels.mask == BLOCKED
                _, result = label_parallax(labels.mask, this_image, next_image, intrinsics,
                                           cameras[cam_name].mount,
                                           relative_poses(pose, [pose1])[0],
                                           cameras[cam_name].sky)
                added = (labels.mask == BLOCKED) & ~before
                c['pairs'] += 1
                c['pairs_used'] += not result.rejected
                c['parallax'] += int(added.sum())
                c['parallax_ok'] += int((added & (truth == 0)).sum())
                labels.mask[added] = 255  # scored apart from the bumps below
            _score(c, labels, truth)
            blocked = labels.mask == BLOCKED
            sky = cameras[cam_name].sky
            c['horizon'] += int(sky.sum())
            c['horizon_ok'] += int((sky & (truth == 0)).sum())
            hz = blocked & ~sky
            c['hazard'] += int(hz.sum())
            c['hazard_ok'] += int((hz & (truth == 0)).sum())
        if progress is not None:
            progress.update(1)
    return out


def _ratio(a, b, digits=4):
    return markdown.number(a / b, digits) if b else '-'


def table(totals):
    """Return the Markdown table of {condition: counters}."""
    rows = []
    for cond, c in totals.items():
        if cond.startswith('_'):
            continue
        rows.append([cond, c['frames'], _ratio(c['free_ok'], c['free']),
                     _ratio(1e6 * (c['free'] - c['free_ok']), c['free'], 0),
                     _ratio(c['free_ok'], c['truth_free'], 3),
                     _ratio(c['horizon_ok'], c['horizon']), _ratio(c['hazard_ok'], c['hazard']),
                     _ratio(100.0 * c['free'], c['pixels'], 1),
                     _ratio(100.0 * (c['horizon'] + c['hazard']), c['pixels'], 1),
                     _ratio(100.0 * c['hazard'], c['pixels'], 2)])
    header = ['condition', 'frames', 'free precision', 'wrong free (ppm)', 'free coverage',
              'horizon precision', 'bump precision', 'free (% px)', 'blocked (% px)',
              'bump (% px)']
    if any(c.get('pairs') for k, c in totals.items() if not k.startswith('_')):
        header += ['parallax precision', 'parallax (% px)', 'pairs used']
        for r, (cond, c) in zip(rows, [(k, c) for k, c in totals.items()
                                       if not k.startswith('_')]):
            r += [_ratio(c['parallax_ok'], c['parallax']),
                  _ratio(100.0 * c['parallax'], c['pixels'], 2),
                  f"{c['pairs_used']} of {c['pairs']}"]
    return markdown.table(header, rows)


def room_table(rooms, cond):
    """Return the Markdown table of each room under condition ``cond``."""
    rows = []
    for room in rooms:
        info, c = room['_room'], room[cond]
        rows.append([info['seed'], info['style'], markdown.number(info['height'], 2),
                     markdown.number(info['pitch'], 2), markdown.number(info['distance'], 1),
                     info['bumps'], c['frames'], _ratio(c['free_ok'], c['free']),
                     _ratio(c['free_ok'], c['truth_free'], 3),
                     _ratio(c['hazard_ok'], c['hazard'], 3)]
                    + ([_ratio(c['parallax_ok'], c['parallax'], 3),
                        f"{c['pairs_used']} of {c['pairs']}"] if c.get('pairs') else []))
    header = ['room (seed)', 'style', 'camera height (m)', 'pitch (rad)', 'driven (m)', 'bumps',
              'frames', 'free precision', 'free coverage', 'bump precision']
    if any(room[cond].get('pairs') for room in rooms):
        header += ['parallax precision', 'pairs used']
    return markdown.table(header, rows)


def run(args):
    conditions = [c.strip() for c in args.conditions.split(',') if c.strip()]
    unknown = sorted(set(conditions) - set(CONDITIONS))
    if unknown:
        raise SystemExit(f'autolabel-sim: unknown conditions {unknown}; '
                         f'choose from {", ".join(CONDITIONS)}')
    if args.rooms < 1 or args.frame_every <= 0 or args.duration <= 0:
        raise SystemExit('autolabel-sim: --rooms, --frame-every and --duration must be > 0')
    config = rule_config(args)
    frames = int(math.ceil(args.duration / args.frame_every)) * args.rooms
    totals = {c: dict.fromkeys(_KEYS, 0) for c in conditions}
    rooms = []
    bar = Progress(None, total=frames, desc='autolabel-sim')
    try:
        for i in range(args.rooms):
            room = measure_room(i, args, config, conditions, bar)
            rooms.append(room)
            for cond in conditions:
                for k, v in room[cond].items():
                    totals[cond][k] += v
    finally:
        bar.close()
    h0, h1 = args.camera_height
    print(f'{args.rooms} rooms (seeds {args.first_seed}..{args.first_seed + args.rooms - 1}, '
          f'default and shifted style), {args.duration:g} s of bump-and-turn driving each, a '
          f'frame every {args.frame_every:g} s at {args.width}x{args.height}, camera '
          f'{h0:g}-{h1:g} m; drift {100 * args.odom_scale:g} % scale + '
          f'{args.heading_drift:g} deg/m heading, offset {1000 * args.time_offset:g} ms, '
          f'pitch error {args.pitch_error:g} deg')
    print('\n'.join(table(totals)))
    if args.per_room:
        print(f'\nper room, {conditions[0]}:')
        print('\n'.join(room_table(rooms, conditions[0])))
    sys.stdout.flush()
    return 0
