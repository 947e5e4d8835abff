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
What the closed loop's robot sees from its start pose: the model's mask and grid beside the truth.

    python tools/room_start_views.py --seed 0 [--headings 0,45,270,315] [--model M] \
        --out docs/images/room0_start_views.jpg

Builds room ``--seed`` and its start pose as ``bench-closed-loop`` does (sim_robot's defaults:
camera 320x180, 0.25 m up, pitched 0.3 rad, clean images), turns the robot in place to each
heading (degrees to the left of the start heading), runs the model (default: the packaged one,
as segmentation_node loads it on this CPU) and the node's default grid rule. One row per
heading: the image with the mask's errors over it (red: blocked pixels called free; orange:
floor called blocked), then the model's grid and the true mask's grid under the same rule,
top-down, forward up (green free, dark grey occupied, light grey unknown; the robot's
footprint at the bottom edge is out of view). Prints per heading the floor pixels called
blocked, the blocked pixels called free, and the free and occupied cells of both grids.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cv2  # noqa: E402
from freespace_seg.ground.frame import GroundParams  # noqa: E402
from freespace_seg.ground.geometry import CameraMount  # noqa: E402
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED  # noqa: E402
from freespace_seg.ground.projection import GroundProjector  # noqa: E402
from freespace_seg.nodes.params import SEGMENTATION_PARAMS  # noqa: E402
from freespace_seg.nodes.sim_robot import pick_start_pose, SIM_PARAMS  # noqa: E402
from freespace_seg.perception.pipeline import SegmentationPipeline  # noqa: E402
from freespace_seg.sim import (default_intrinsics, make_scene,  # noqa: E402
                               RandomizationConfig, render)
import numpy as np  # noqa: E402

CELL_PX = 3


def draw_grid(grid):
    """Return the grid as RGB, forward up: free green, occupied dark grey, unknown light grey."""
    img = np.full(grid.shape + (3,), 200, np.uint8)
    img[grid == FREE] = (60, 170, 60)
    img[grid == OCCUPIED] = (70, 70, 70)
    img = np.ascontiguousarray(np.rot90(img, 1)[:, ::-1])
    return cv2.resize(img, (img.shape[1] * CELL_PX, img.shape[0] * CELL_PX),
                      interpolation=cv2.INTER_NEAREST)


def main(argv=None):
    """Render the start views, draw them, print their counts."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seed', type=int, default=0, help='the room (bench-closed-loop seed)')
    ap.add_argument('--headings', default='0,45,270,315',
                    help='degrees to the left of the start heading (default: %(default)s)')
    ap.add_argument('--model', default=None, help='ONNX model (default: the packaged one)')
    ap.add_argument('--out', required=True, help='the figure (JPEG or PNG)')
    args = ap.parse_args(argv)
    try:
        headings = [float(h) for h in args.headings.split(',') if h.strip()]
    except ValueError:
        ap.error(f'--headings must be numbers of degrees, got {args.headings!r}')
    if not headings:
        ap.error('--headings needs at least one heading')
    sim = {spec.name: spec.default for spec in SIM_PARAMS}
    rng = np.random.default_rng(args.seed)
    scene = make_scene(rng, RandomizationConfig())
    x, y, yaw = pick_start_pose(scene, rng, sim['robot_radius'])
    intr = default_intrinsics(sim['width'], sim['height'])
    mount = CameraMount(x=0.0, y=0.0, z=sim['camera_height'], roll=0.0,
                        pitch=sim['camera_pitch'], yaw=0.0)
    rule = GroundParams.from_params({s.name: s.default for s in SEGMENTATION_PARAMS}).rule
    pipe = SegmentationPipeline(args.model, 'onnxruntime', 1)
    proj = GroundProjector(intr, mount, GridSpec())
    rows = []
    print(f'room {args.seed}: start ({x:.2f}, {y:.2f}, {math.degrees(yaw):.0f} deg), '
          f'model {os.path.basename(pipe.card.model_file)}')
    for h in headings:
        frame = render(scene, intr, mount, (x, y, yaw + math.radians(h)))
        seg = pipe.segment_parts(frame.image, confidence=True)
        free = pipe.free_mask(seg.mask) > 0
        truth = frame.free > 0
        model_grid = proj.ground(free.astype(np.uint8), seg.confidence, rule).grid
        truth_conf = np.where(truth, 255, 0).astype(np.uint8)
        truth_grid = proj.ground(truth.astype(np.uint8), truth_conf, rule).grid
        img = frame.image.copy()
        for wrong, colour in ((free & ~truth, (255, 0, 0)), (~free & truth, (255, 165, 0))):
            img[wrong] = (0.35 * img[wrong] + 0.65 * np.array(colour)).astype(np.uint8)
        cv2.putText(img, f'{h:g} deg', (4, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255),
                    1, cv2.LINE_AA)
        grids = [draw_grid(model_grid), draw_grid(truth_grid)]
        height = max(img.shape[0], grids[0].shape[0])

        def pad(a):
            return np.pad(a, ((0, height - a.shape[0]), (0, 6), (0, 0)), constant_values=255)

        rows.append(np.concatenate([pad(img)] + [pad(g) for g in grids], axis=1))
        print(f'{h:g} deg: floor called blocked {int((~free & truth).sum())} of '
              f'{int(truth.sum())} floor pixels, '
              f'blocked called free {int((free & ~truth).sum())}; '
              f'model grid {int((model_grid == FREE).sum())} free / '
              f'{int((model_grid == OCCUPIED).sum())} occupied cells, truth grid '
              f'{int((truth_grid == FREE).sum())} / {int((truth_grid == OCCUPIED).sum())}')
    figure = np.concatenate([np.pad(r, ((0, 6), (0, 0), (0, 0)), constant_values=255)
                             for r in rows], axis=0)
    cv2.imwrite(args.out, cv2.cvtColor(figure, cv2.COLOR_RGB2BGR),
                [cv2.IMWRITE_JPEG_QUALITY, 88])
    print(f'wrote {args.out}')
    pipe.close()


if __name__ == '__main__':
    main()
