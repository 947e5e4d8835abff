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
A picture of the grid agreement on one drive frame: the image, the grid alone, the agreed grid.

    python tools/agreement_figure.py --set 6 [--drives 20] [--seed 3000] [--agreement 2] \
        [--occlusion SECONDS] [--model M] [--max-share 0.6] [--pick removed|worst] \
        --out docs/images/grid_agreement_mast_camera.jpg

Drives the rooms of ``grid-rules --drives`` set ``--set`` (1-based, as ``grid-rules --sets``;
10 s, a frame every 0.1 s), runs the shipped model and the node's default grid rule, filters
each grid by the occlusion memory of ``--occlusion`` seconds (0, the default: none; the
node's ``grid_occlusion_memory``), then by ``--agreement`` (K or K/M, tolerance one cell; 1:
none), and draws one frame: the one where the filters remove the most false free cells
(``--pick worst``: whose grid alone
has the most), among those whose false free cells are at most ``--max-share`` of their free
cells (so that floor is in view). False free: free cells more than one cell from any cell
where the true mask shows floor. The figure: the image with the mask over it (red: blocked
pixels called free), then the grid alone and the agreed grid, top-down, forward up (green
free, red false free, dark grey occupied, light grey unknown). Prints the frame and its
counts.
"""

import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from freespace_seg.ground.agreement import AgreementParams, GridAgreement  # noqa: E402
from freespace_seg.ground.frame import GroundParams  # noqa: E402
from freespace_seg.ground.grid import FREE, GridSpec, OCCUPIED  # noqa: E402
from freespace_seg.ground.metrics import false_free_cells  # noqa: E402
from freespace_seg.ground.occlusion import OcclusionMemory, OcclusionParams  # noqa: E402
from freespace_seg.ground.projection import GroundProjector  # noqa: E402
from freespace_seg.nodes.params import SEGMENTATION_PARAMS  # noqa: E402
from freespace_seg.perception.pipeline import SegmentationPipeline  # noqa: E402
from freespace_seg.tools.grid_drives import drive_frames  # noqa: E402
from freespace_seg.tools.grid_scoring import perceive, SETS, VISIBLE_FLOOR  # noqa: E402

CELL_PX = 4


def draw_grid(grid, wrong):
    """Return the grid as RGB, forward up: free green, false free red, occupied dark grey."""
    img = np.full(grid.shape + (3,), 200, np.uint8)
    img[grid == FREE] = (60, 170, 60)
    img[grid == OCCUPIED] = (70, 70, 70)
    img[wrong] = (220, 30, 30)
    # Rows run along +y (left), columns along +x (forward): forward up, left to the left.
    img = np.ascontiguousarray(np.rot90(img, 1)[:, ::-1])
    return cv2.resize(img, (img.shape[1] * CELL_PX, img.shape[0] * CELL_PX),
                      interpolation=cv2.INTER_NEAREST)


def main():
    """Find the frame, draw it, print its counts."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--set', type=int, default=6)
    ap.add_argument('--drives', type=int, default=20)
    ap.add_argument('--seed', type=int, default=3000)
    ap.add_argument('--agreement', default='2', help='K or K/M; 1: none (default: 2)')
    ap.add_argument('--occlusion', type=float, default=0.0,
                    help='occlusion memory in seconds, before the agreement (default: 0, none)')
    ap.add_argument('--model', default=None, help='ONNX model (default: the shipped one)')
    ap.add_argument('--max-share', type=float, default=0.6,
                    help='only frames whose false free cells are at most this share of their '
                         'free cells (so that floor is in view too)')
    ap.add_argument('--pick', choices=('removed', 'worst'), default='removed',
                    help='the frame where the agreement removes the most false free cells '
                         '(removed), or whose grid alone has the most (worst)')
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    name = list(SETS)[args.set - 1]
    style, camera = SETS[name]
    params = AgreementParams.parse(args.agreement, max_age=0.0, tolerance=1)
    rule = GroundParams.from_params({s.name: s.default for s in SEGMENTATION_PARAMS}).rule
    memory_params = OcclusionParams(args.occlusion)
    pipe = SegmentationPipeline(args.model, 'onnxruntime', 1)
    spec = GridSpec()
    best = None
    for index in range(args.drives):
        agree = GridAgreement(params)
        memory = OcclusionMemory(memory_params)
        proj = None
        for i, (t, frame) in enumerate(drive_frames(index, args.seed, style, camera, 480, 270,
                                                    10.0, 0.1)):
            free, conf = perceive(pipe, frame)
            proj = proj or GroundProjector(frame.intrinsics, frame.mount, spec)
            visible = proj.ground(frame.free, None, VISIBLE_FLOOR).grid
            ground = proj.ground(free, conf, rule)
            raw = ground.grid
            seen = memory.apply(raw, spec, frame.robot_pose, t, proj.pose.position,
                                ground.occluders if memory_params.active else None)
            agreed = agree.apply(seen, spec, frame.robot_pose, t)
            wrong_raw = false_free_cells(raw, visible)
            if i < params.frames - 1:
                continue
            n = int(wrong_raw.sum())
            if n > args.max_share * max(1, int((raw == FREE).sum())):
                continue
            key = n if args.pick == 'worst' else n - int(false_free_cells(agreed, visible).sum())
            if best is None or key > best[0]:
                best = (key, n, index, i, frame, free, raw, agreed, visible)
    _, n, index, i, frame, free, raw, agreed, visible = best
    wrong_agreed = false_free_cells(agreed, visible)
    truth = frame.free > 0
    img = frame.image.copy()
    called = (free > 0) & ~truth
    img[called] = (0.4 * img[called] + 0.6 * np.array((255, 0, 0))).astype(np.uint8)
    grids = [draw_grid(raw, false_free_cells(raw, visible)), draw_grid(agreed, wrong_agreed)]
    h = max(img.shape[0], grids[0].shape[0])

    def pad(a):
        return np.pad(a, ((0, h - a.shape[0]), (0, 8), (0, 0)), constant_values=255)

    figure = np.concatenate([pad(img)] + [pad(g) for g in grids], axis=1)
    cv2.imwrite(args.out, cv2.cvtColor(figure, cv2.COLOR_RGB2BGR),
                [cv2.IMWRITE_JPEG_QUALITY, 88])
    filters = ' and '.join(
        [f'occlusion memory {args.occlusion:g} s'] * memory_params.active +
        [f'~{params.name}'] * params.active) or 'no filter'
    print(f'{name}: drive {index}, frame {i} (camera {frame.mount.z:.2f} m up): '
          f'false free {n} of {int((raw == FREE).sum())} free cells alone, '
          f'{int(wrong_agreed.sum())} of {int((agreed == FREE).sum())} with {filters}; '
          f'wrote {args.out}')
    pipe.close()


if __name__ == '__main__':
    main()
