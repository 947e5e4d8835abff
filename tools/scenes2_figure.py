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
Write docs/images/scenes2_examples.png: frames of a generate2 set with their masks overlaid.

    python tools/scenes2_figure.py DATA_DIR [OUT.png] [--first K]

Free pixels are tinted green with a white outline; blocked pixels keep their colour.
"""

import argparse
import os

import cv2
import numpy as np


def overlay(bgr, mask):
    out = bgr.astype(np.float32)
    free = mask > 0
    out[free] = out[free] * 0.55 + np.float32([40, 200, 40]) * 0.45
    edge = cv2.morphologyEx(free.astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    out[edge > 0] = (255, 255, 255)
    return out.astype(np.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('data')
    parser.add_argument('out', nargs='?', default='docs/images/scenes2_examples.png')
    parser.add_argument('--frames', default='0,1,2,3,4,5,6,7')
    args = parser.parse_args()
    tiles = []
    for k in (int(v) for v in args.frames.split(',')):
        bgr = cv2.imread(os.path.join(args.data, 'test', f'{k:06d}_image.png'))
        mask = cv2.imread(os.path.join(args.data, 'test', f'{k:06d}_mask.png'), -1)
        tile = np.concatenate([bgr, overlay(bgr, mask)], axis=0)
        tiles.append(cv2.resize(tile, (176, 198), interpolation=cv2.INTER_AREA))
    rows = [np.concatenate(tiles[i:i + 4], axis=1) for i in range(0, len(tiles), 4)]
    grid = np.concatenate(rows, axis=0)
    cv2.imwrite(args.out, grid, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    print(f'{args.out}: {grid.shape[1]}x{grid.shape[0]}, {os.path.getsize(args.out)} bytes')


if __name__ == '__main__':
    main()
