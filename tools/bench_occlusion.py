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
What the occlusion memory costs per grid: a table of milliseconds.

    python tools/bench_occlusion.py [--drives 4] [--set 1] [--memory 10] [--width 640]

Drives the rooms of ``grid-rules --drives`` set ``--set`` (10 s, a frame every 0.1 s, camera
``--width`` x 9/16), projects each true mask under the node's default grid rule (a confidence
of 250 on floor, 5 elsewhere) and times, per grid, ``Ground.occluders`` (the cutting feet
and their heights) and ``OcclusionMemory.apply`` with ``--memory`` seconds. Prints the
medians and p95 and how many spots the memory held.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from freespace_seg.ground.frame import GroundParams  # noqa: E402
from freespace_seg.ground.grid import GridSpec  # noqa: E402
from freespace_seg.ground.occlusion import OcclusionMemory, OcclusionParams  # noqa: E402
from freespace_seg.ground.projection import GroundProjector  # noqa: E402
from freespace_seg.nodes.params import SEGMENTATION_PARAMS  # noqa: E402
from freespace_seg.tools.grid_drives import drive_frames  # noqa: E402
from freespace_seg.tools.grid_scoring import SETS  # noqa: E402


def main():
    """Time the two steps over the drives' frames and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--drives', type=int, default=4)
    ap.add_argument('--set', type=int, default=1, help='grid-rules set, 1-based (default 1)')
    ap.add_argument('--seed', type=int, default=3000)
    ap.add_argument('--memory', type=float, default=10.0)
    ap.add_argument('--width', type=int, default=640)
    args = ap.parse_args()
    name = list(SETS)[args.set - 1]
    style, camera = SETS[name]
    rule = GroundParams.from_params({s.name: s.default for s in SEGMENTATION_PARAMS}).rule
    spec = GridSpec()
    height = args.width * 9 // 16
    occ_ms, apply_ms, spots = [], [], []
    for index in range(args.drives):
        memory = OcclusionMemory(OcclusionParams(args.memory))
        proj = None
        for t, frame in drive_frames(index, args.seed, style, camera, args.width, height,
                                     10.0, 0.1):
            free = frame.free.astype(np.uint8)
            proj = proj or GroundProjector(frame.intrinsics, frame.mount, spec)
            ground = proj.ground(free, np.where(free > 0, 250, 5).astype(np.uint8), rule)
            t0 = time.perf_counter()
            occluders = ground.occluders
            t1 = time.perf_counter()
            memory.apply(ground.grid, spec, frame.robot_pose, t, proj.pose.position, occluders)
            t2 = time.perf_counter()
            occ_ms.append(1e3 * (t1 - t0))
            apply_ms.append(1e3 * (t2 - t1))
            spots.append(len(memory))
    print(f'{name}: {len(spots)} grids of {args.drives} drives, {args.width}x{height} masks, '
          f'memory {args.memory:g} s: spots remembered median {np.median(spots):.0f}, '
          f'max {max(spots)}')
    print('| step | median (ms) | p95 (ms) |')
    print('|---|---:|---:|')
    for step, values in (('`Ground.occluders`', occ_ms), ('`OcclusionMemory.apply`', apply_ms)):
        print(f'| {step} | {np.median(values):.2f} | {np.percentile(values, 95):.2f} |')


if __name__ == '__main__':
    main()
