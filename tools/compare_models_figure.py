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
Write a figure that puts two models' masks side by side on the frames of a dataset.

    python tools/compare_models_figure.py DATA_DIR MODEL_A MODEL_B OUT.png \
        [--split test] [--better 3] [--worse 2] [--names A,B]

Each row is one frame: the image with the true floor outlined, then each model's mask. Green:
free and right; red: blocked pixels called free (the expensive error); blue: floor called
blocked. The rows are the frames where model B calls the most fewer blocked pixels free than
model A, counted in pixels (``--better``), then those where it calls the most more
(``--worse``). ``--scale`` shrinks the tiles.
"""

import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from freespace_seg.perception.pipeline import SegmentationPipeline  # noqa: E402
from freespace_seg.training import data as datasets  # noqa: E402


def paint(rgb, truth, mask):
    """Tint ``rgb`` by the mask's errors against ``truth`` (255 = ignore)."""
    out = rgb.astype(np.float32)
    valid = truth != 255
    colours = (((mask == 1) & (truth == 1), (40, 200, 40)),
               ((mask == 1) & (truth == 0), (230, 30, 30)),
               ((mask == 0) & (truth == 1), (40, 90, 230)))
    for where, colour in colours:
        where = where & valid
        out[where] = out[where] * 0.45 + np.float32(colour) * 0.55
    return out.astype(np.uint8)


def outline(rgb, truth):
    """Draw the true floor's outline in white."""
    free = (truth == 1).astype(np.uint8)
    edge = cv2.morphologyEx(free, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    out = rgb.copy()
    out[edge > 0] = (255, 255, 255)
    return out


def label(tile, text):
    """Write ``text`` in the tile's top-left corner."""
    out = tile.copy()
    (w, h), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.5, 1)
    out[:h + 12, :w + 12] = out[:h + 12, :w + 12] // 3
    cv2.putText(out, text, (6, h + 5), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1,
                cv2.LINE_AA)
    return out


def main(argv=None):
    """Write the figure; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('data')
    parser.add_argument('model_a')
    parser.add_argument('model_b')
    parser.add_argument('out')
    parser.add_argument('--split', default='test')
    parser.add_argument('--better', type=int, default=3)
    parser.add_argument('--worse', type=int, default=2)
    parser.add_argument('--names', default='A,B')
    parser.add_argument('--scale', type=float, default=0.75)
    args = parser.parse_args(argv)
    names = args.names.split(',')
    pipes = [SegmentationPipeline(m, 'onnxruntime', 2) for m in (args.model_a, args.model_b)]
    frames, scores = [], []
    try:
        for rgb, truth in datasets.dataset_frames(args.data, args.split):
            masks = [p.segment(rgb) for p in pipes]
            blocked = np.count_nonzero(truth == 0)
            bcf = [np.count_nonzero((m == 1) & (truth == 0)) / max(blocked, 1) for m in masks]
            frames.append((rgb, truth, masks, bcf))
            scores.append(int(np.count_nonzero((masks[1] == 1) & (truth == 0)))
                          - int(np.count_nonzero((masks[0] == 1) & (truth == 0))))
    finally:
        for p in pipes:
            p.close()
    order = np.argsort(scores)
    picks = list(order[:args.better]) + list(order[::-1][:args.worse])
    rows = []
    for i in picks:
        rgb, truth, masks, bcf = frames[i]
        tiles = [label(outline(rgb, truth), f'frame {i}: true floor')]
        for name, mask, share in zip(names, masks, bcf):
            tiles.append(label(paint(rgb, truth, mask),
                               f'{name}: {100 * share:.1f} % blocked called free'))
        rows.append(np.hstack([cv2.resize(t, None, fx=args.scale, fy=args.scale,
                                          interpolation=cv2.INTER_AREA) for t in tiles]))
    figure = np.vstack(rows)
    cv2.imwrite(args.out, cv2.cvtColor(figure, cv2.COLOR_RGB2BGR))
    print(f'wrote {args.out}: frames {", ".join(str(int(i)) for i in picks)} of '
          f'{len(frames)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
