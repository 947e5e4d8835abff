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
A figure of a randomization factor: the same seeds with the default config and with a change.

    python tools/factor_figure.py --set close_views=1 --seeds 0,1,2,3 --out OUT.jpg \
        [--width 480 --height 270] [--columns 2]

Each tile is a training sample of ``random_sample`` (what ``generate`` writes) for one seed,
with the free floor outlined in green; the left image of a pair is the default config, the
right one the config with the ``--set`` fields changed (``name=value``, repeatable). Pairs go
``--columns`` to a row.
"""

import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from freespace_seg.sim import default_intrinsics, random_sample  # noqa: E402
from freespace_seg.sim.generate import sample_rng  # noqa: E402
from freespace_seg.sim.randomization import RandomizationConfig  # noqa: E402


def outlined(frame):
    """Return the frame's image with the outline of its free floor in green."""
    image = frame.image.copy()
    free = (np.asarray(frame.free) > 0).astype(np.uint8)
    edge = cv2.morphologyEx(free, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)) > 0
    image[edge] = (40, 220, 90)
    return image


def parse_change(text):
    """Return (field, value) of ``name=value``, the value read as a float, int or bool."""
    name, _, value = text.partition('=')
    if not name or not value:
        raise argparse.ArgumentTypeError(f'--set takes name=value, got {text!r}')
    if value.lower() in ('true', 'false'):
        return name, value.lower() == 'true'
    try:
        return name, int(value)
    except ValueError:
        return name, float(value)


def main(argv=None):
    """Write the figure."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--set', type=parse_change, action='append', required=True,
                    metavar='NAME=VALUE', help='a RandomizationConfig field to change')
    ap.add_argument('--seeds', default='0,1,2,3', help='comma-separated sample seeds')
    ap.add_argument('--width', type=int, default=480)
    ap.add_argument('--height', type=int, default=270)
    ap.add_argument('--columns', type=int, default=2, help='pairs per row (2)')
    ap.add_argument('--out', required=True, help='the figure (JPEG or PNG)')
    args = ap.parse_args(argv)
    try:
        changed = RandomizationConfig(**dict(args.set))
    except (TypeError, ValueError) as e:
        ap.error(str(e))
    intrinsics = default_intrinsics(args.width, args.height)
    pairs = []
    for seed in (int(s) for s in args.seeds.split(',')):
        a = random_sample(sample_rng(0, 0, seed), intrinsics, RandomizationConfig())
        b = random_sample(sample_rng(0, 0, seed), intrinsics, changed)
        gap = np.full((args.height, 4, 3), 255, np.uint8)
        pairs.append(np.hstack([outlined(a), gap, outlined(b)]))
        print(f'seed {seed}: free share {a.free.mean():.2f} (default), '
              f'{b.free.mean():.2f} (changed)')
    while len(pairs) % args.columns:
        pairs.append(np.full_like(pairs[0], 255))
    rows = [np.hstack([p for pair in pairs[i:i + args.columns]
                       for p in (pair, np.full((args.height, 12, 3), 255, np.uint8))][:-1])
            for i in range(0, len(pairs), args.columns)]
    sheet = np.vstack([r for row in rows
                       for r in (row, np.full((8, row.shape[1], 3), 255, np.uint8))][:-1])
    cv2.imwrite(args.out, cv2.cvtColor(sheet, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 85])
    print(f'wrote {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
