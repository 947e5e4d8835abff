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
Where freespace_driver's frontier layer leads in one closed-loop room, second by second.

    python tools/frontier_trace.py --seed 11 --minutes 3 [--perception truth] [--model M] \
        [--driver-param frontier_narrow_room:=0.03 ...] [--every 1] [--from 0] [--to 180]

Runs room ``--seed`` as ``bench-closed-loop`` does (lockstep, the same nodes and defaults)
and prints, every ``--every`` simulated seconds between ``--from`` and ``--to``, the robot's
pose in the odometry frame (which starts at its start pose), the driver's state
(``~/state``), its frontier target in the same frame, the target's kind (``normal``:
planned at the full clearance; ``narrow``: at ``frontier_narrow_room``; ``tight``: over the
cells the robot's centre passed through), the path length to it and the give-ups so far.
Then a summary: the targets chosen by kind, the simulated seconds with a target of each
kind, the give-ups, distance and coverage.
"""

import argparse
import collections
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from freespace_seg.tools import closed_loop  # noqa: E402
from freespace_seg.tools.bench.closed_loop import driver_parameters  # noqa: E402


def target_kind(floor_map):
    """Return ``None`` without a target, else ``normal``, ``narrow`` or ``tight``."""
    if floor_map is None or floor_map.target is None:
        return None
    if floor_map.tight:
        return 'tight'
    return 'narrow' if floor_map.narrow else 'normal'


class Trace:
    """Collects the driver's frontier state after every simulator step (``run_room``'s watch)."""

    def __init__(self, every=1.0, start=0.0, end=math.inf, out=print):
        self.every, self.start, self.end, self.out = float(every), float(start), float(end), out
        self._next = self.start
        self._last = None           # (target, kind) of the step before
        self._t = 0.0
        self.chosen = collections.Counter()     # kind -> targets chosen
        self.seconds = collections.Counter()    # kind -> simulated seconds with such a target
        self.give_ups = 0

    def __call__(self, sim, driver):
        """Record one step; print a row when one is due."""
        logic = driver.logic
        f = logic.floor_map
        kind = target_kind(f)
        target = None if kind is None else tuple(round(float(v), 2) for v in f.target)
        t = sim.sim_time
        self.seconds[kind or 'none'] += max(t - self._t, 0.0)
        self._t = t
        if kind is not None and (target, kind) != self._last:
            self.chosen[kind] += 1
        self._last = (target, kind) if kind is not None else None
        self.give_ups = logic.frontier_give_ups
        if self.start <= t <= self.end and t + 1e-9 >= self._next:
            self._next = t + self.every
            dist = f.robot_distance if kind is not None and f.has_target else math.inf
            where = '-' if target is None else f'({target[0]:+.2f}, {target[1]:+.2f})'
            path = '-' if not math.isfinite(dist) else f'{dist:.2f}'
            x, y, yaw = sim.odom_pose
            yaw = (yaw + math.pi) % (2.0 * math.pi) - math.pi
            self.out(f'| {t:.2f} | {x:+.2f} | {y:+.2f} | {math.degrees(yaw):+.0f} | '
                     f'{driver.state} | {where} | {kind or "-"} | {path} | {self.give_ups} |')


def main(argv=None):
    """Run the room with the trace; print the rows and the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    ap.add_argument('--seed', type=int, default=0, help='the room (bench-closed-loop seed)')
    ap.add_argument('--minutes', type=float, default=3.0,
                    help='simulated minutes (default: %(default)s)')
    ap.add_argument('--perception', choices=closed_loop.PERCEPTIONS, default='model',
                    help='model or truth (exact masks) (default: %(default)s)')
    ap.add_argument('--model', default=None, help='ONNX model (default: the packaged one)')
    ap.add_argument('--driver-param', action='append', default=[], metavar='NAME:=VALUE',
                    help='a freespace_driver parameter (repeat it)')
    ap.add_argument('--every', type=float, default=1.0,
                    help='simulated seconds between rows (default: %(default)s)')
    ap.add_argument('--from', dest='start', type=float, default=0.0,
                    help='first row at this simulated second (default: %(default)s)')
    ap.add_argument('--to', dest='end', type=float, default=math.inf,
                    help='no row after this simulated second (default: the end)')
    args = ap.parse_args(argv)
    if not 0.0 < args.minutes <= 60.0:
        ap.error(f'--minutes must be in (0, 60], got {args.minutes:g}')
    if args.every <= 0.0:
        ap.error(f'--every must be positive, got {args.every:g}')
    try:
        params = driver_parameters(args.driver_param)
    except ValueError as err:
        ap.error(str(err))
    print('| t (s) | x (odom, m) | y (odom, m) | heading (deg) | state | target (odom, m) | '
          'kind | path to it (m) | give-ups |')
    print('|---|---|---|---|---|---|---|---|---|')
    trace = Trace(args.every, args.start, args.end)
    r = closed_loop.run_room(args.seed, duration=60.0 * args.minutes,
                             perception=args.perception, model_path=args.model,
                             driver_params=params, watch=trace)
    print()
    for kind in ('normal', 'narrow', 'tight'):
        print(f'{kind} targets: {trace.chosen[kind]} chosen, '
              f'{trace.seconds[kind]:.1f} s held')
    print(f'no target: {trace.seconds["none"]:.1f} s; give-ups: {trace.give_ups}')
    print(f'room {args.seed}: {r.collisions} collisions, {r.distance:.1f} m, '
          f'coverage {100.0 * r.coverage:.1f} %')
    return 0


if __name__ == '__main__':
    sys.exit(main())
