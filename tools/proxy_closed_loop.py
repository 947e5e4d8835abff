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
A cheap proxy of the closed loop: the driver logic alone in the sim's rooms, seen from above.

    python tools/proxy_closed_loop.py --rooms 10 --minutes 10 [--params '{"frontier_weight": 0}']

No ROS, no renderer, no model: each seeded room of ``bench-closed-loop`` (the same scene and
start pose) is rasterized at 0.05 m (``Scene.blocked_top_down``, and every cell that an
obstacle's footprint comes within half a cell of, so that thin legs stay), and the toy camera of
``test/support/floor_world.py`` (floor seen +-39 degrees from 0.31 m to 3 m ahead, line of
sight, obstacle feet occupied) gives a grid every 0.1 s with exact odometry. A collision is a
step whose footprint touches blocked floor (there is no bumper). ``--png-dir DIR`` draws each
room from above with the robot's path and its touches (red crosses), as ``bench-closed-loop
--png-dir`` does: ``DIR/proxy_room_<seed>.png``. It is optimistic next to the
closed loop's truth perception (no image, no projection, no latency): use it to compare
drivers, not to predict the closed loop. Prints a Markdown table.
"""

import argparse
import json
import math
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'test'))

from freespace_seg.common.markdown import number, table  # noqa: E402
from freespace_seg.driving.driver_logic import DriverConfig  # noqa: E402
from freespace_seg.nodes.sim_robot import pick_start_pose  # noqa: E402
from freespace_seg.sim import make_scene, RandomizationConfig  # noqa: E402
import numpy as np  # noqa: E402
from support.floor_world import FloorWorld, RES, run  # noqa: E402

#: the default camera's floor: half width near the image's lower edge, nearest floor seen (m)
HALF_FOV = math.radians(39.0)
NEAR = 0.31


def scene_and_origin(seed):
    """Return room ``seed``'s scene, its start pose and the toy world's origin (x0, y0)."""
    rng = np.random.default_rng(seed)
    scene = make_scene(rng, RandomizationConfig())
    start = pick_start_pose(scene, rng, 0.17)
    x0, y0 = scene.bounds()[:2]
    return scene, start, (x0 - 0.1, y0 - 0.1)


def room(seed):
    """Return the toy world of room ``seed`` and the start pose in it."""
    return toy_world(*scene_and_origin(seed))


def toy_world(scene, start, origin):
    """Return the toy world of ``scene`` (corner at ``origin``) and ``start`` in it."""
    x0, y0 = origin
    x1, y1 = scene.bounds()[2:]
    xs = x0 + (np.arange(int((x1 - x0 + 0.1) / RES)) + 0.5) * RES
    ys = y0 + (np.arange(int((y1 - y0 + 0.1) / RES)) + 0.5) * RES
    gx, gy = np.meshgrid(xs, ys)
    blocked = scene.blocked_top_down(gx, gy)
    # A cell is blocked when an obstacle comes within half a cell of its centre: sampled at
    # cell centres alone, a 2 cm leg falls between them in most cells and the toy world
    # would have no leg at all.
    for o in scene.footprints():
        blocked |= o.distance_xy(gx, gy) <= 0.5 * RES
    world = FloorWorld(blocked=blocked, half_fov=HALF_FOV, near=NEAR)
    return world, (start[0] - x0, start[1] - y0, start[2])


def draw(scene, origin, path, world, radius, filename):
    """Write ``scene`` from above with ``path`` (toy-world x, y, yaw) and its touches."""
    from freespace_seg.tools.closed_loop import draw_path_png
    x0, y0 = origin
    t = np.arange(len(path), dtype=np.float64)
    xy = path[:, :2] + (x0, y0)
    touches = [(i, x + x0, y + y0) for i, (x, y) in enumerate(path[:, :2])
               if not world.clearance(x, y, radius)]
    # A touch lasts several steps: a cross for every tenth step in contact is enough.
    draw_path_png(scene, filename, path=np.column_stack([t, xy, path[:, 2]]),
                  collision_points=touches[::10])


def main(argv=None):
    """Run the proxy; exit status 1 when a room had a collision."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rooms', type=int, default=5)
    ap.add_argument('--first-seed', type=int, default=0)
    ap.add_argument('--minutes', type=float, default=2.0)
    ap.add_argument('--params', default='{}', help='DriverConfig fields as JSON')
    ap.add_argument('--png-dir', help='write a top-down picture of each room and path here')
    args = ap.parse_args(argv)
    if args.png_dir:
        os.makedirs(args.png_dir, exist_ok=True)
    config = DriverConfig(**json.loads(args.params))
    rows, cov, dist, coll = [], [], [], 0
    for seed in range(args.first_seed, args.first_seed + args.rooms):
        scene, start, origin = scene_and_origin(seed)
        world, pose = toy_world(scene, start, origin)
        t0 = time.monotonic()
        r = run(world, pose, 60.0 * args.minutes, config)
        path = r['path']
        d = float(np.sum(np.hypot(*np.diff(path[:, :2], axis=0).T)))
        c = world.swept(path[:, :2], config.robot_radius)
        rows.append([seed, r['collisions'], number(d, 1), number(100.0 * c, 1)])
        cov.append(c)
        dist.append(d)
        coll += r['collisions']
        if args.png_dir:
            draw(scene, origin, path, world, config.robot_radius,
                 os.path.join(args.png_dir, f'proxy_room_{seed}.png'))
        print(f'room {seed}: {r["collisions"]} collision steps, {d:.1f} m, coverage '
              f'{100.0 * c:.1f} % ({time.monotonic() - t0:.0f} s)', file=sys.stderr, flush=True)
    rows.append([f'**{args.rooms} rooms**', f'**{coll}**', number(sum(dist), 1),
                 number(100.0 * float(np.mean(cov)), 1, unit=' (mean)')])
    print('\n'.join(table(['room (seed)', 'collision steps', 'distance (m)', 'coverage (%)'],
                          rows)))
    return 1 if coll else 0


if __name__ == '__main__':
    raise SystemExit(main())
