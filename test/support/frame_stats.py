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
Pins of rendered frames that survive a patch release of OpenCV or numpy.

A pin holds statistics of an (image, mask) pair, not its bytes: the mean and standard deviation
of each image channel, an 8x8 thumbnail of block means per channel, and for each label of the
mask the fraction of pixels with it, overall and per 8x8 block. A patch release that moves a
pixel by a grey level, or a mask boundary by a pixel, stays within the tolerances; a change of
what is drawn (another room, another material, a texture that moved) does not.

The pins live in JSON files beside the tests that use them. ``FREESPACE_SEG_REPIN=1`` makes
:meth:`Pins.check` record the frames it is given instead of comparing them (and the test then
writes the file): re-pinning is done on purpose, by running the test that way and committing
the file.
"""

import json
import os

import numpy as np

#: block means (image: grey levels; mask: fraction of a block's pixels)
BLOCKS = 8
#: how far a statistic may move: a patch release moves pixels by a level or so, here and there
TOLERANCES = {'mean': 0.5, 'std': 0.5, 'thumb': 1.0, 'labels': 0.002, 'label_thumbs': 0.02}


def _blocks(plane, n=BLOCKS):
    """Return the ``n`` x ``n`` block means of a 2-D array (blocks as even as the size allows)."""
    rows = np.array_split(np.arange(plane.shape[0]), n)
    cols = np.array_split(np.arange(plane.shape[1]), n)
    return [[float(plane[r[0]:r[-1] + 1, c[0]:c[-1] + 1].mean()) for c in cols] for r in rows]


def frame_stats(image, mask):
    """Return the statistics of an (H, W, 3) image and its (H, W) label mask (JSON-ready)."""
    img = np.asarray(image, dtype=np.float64)
    mask = np.asarray(mask)
    labels = sorted(int(v) for v in np.unique(mask))
    return {
        'shape': list(img.shape),
        'mean': [round(float(img[..., c].mean()), 3) for c in range(img.shape[2])],
        'std': [round(float(img[..., c].std()), 3) for c in range(img.shape[2])],
        'thumb': [np.round(_blocks(img[..., c]), 2).tolist() for c in range(img.shape[2])],
        'labels': {str(v): round(float((mask == v).mean()), 5) for v in labels},
        'label_thumbs': {str(v): np.round(_blocks((mask == v).astype(np.float64)), 4).tolist()
                         for v in labels},
    }


def stats_problems(got, want, image=True, mask=True):
    """Return how ``got`` differs from ``want`` beyond :data:`TOLERANCES` (empty: the same)."""
    out = []
    if got['shape'] != want['shape']:
        return [f'shape {got["shape"]} != {want["shape"]}']
    keys = (['mean', 'std', 'thumb'] if image else []) + (['labels'] if mask else [])
    for key in keys:
        if key == 'labels' and set(got[key]) != set(want[key]):
            out.append(f'labels {sorted(got[key])} != {sorted(want[key])}')
            continue
        a = np.array(list(got[key].values()) if key == 'labels' else got[key])
        b = np.array(list(want[key].values()) if key == 'labels' else want[key])
        worst = float(np.abs(a - b).max())
        if worst > TOLERANCES[key]:
            out.append(f'{key} differs by up to {worst:.4g} (tolerance {TOLERANCES[key]})')
    if mask and not out:
        for label, thumb in want['label_thumbs'].items():
            worst = float(np.abs(np.array(got['label_thumbs'][label]) - np.array(thumb)).max())
            if worst > TOLERANCES['label_thumbs']:
                out.append(f'label {label} thumbnail differs by up to {worst:.4g} '
                           f'(tolerance {TOLERANCES["label_thumbs"]})')
    return out


class Pins:
    """The pinned statistics of a JSON file: ``check`` frames against them, or re-pin."""

    def __init__(self, path):
        self.path = path
        self.repin = os.environ.get('FREESPACE_SEG_REPIN') == '1'
        with open(path, encoding='utf-8') as f:
            self.pins = json.load(f)

    def check(self, name, image, mask, image_too=True):
        """
        Assert that the frame matches pin ``name`` (the mask only, without ``image_too``).

        Re-pinning (``FREESPACE_SEG_REPIN=1``): record it and write the file instead.
        """
        got = frame_stats(image, mask)
        if self.repin:
            if image_too or name not in self.pins:
                self.pins[name] = got
                self.write()
            return
        assert name in self.pins, f'no pin {name!r} in {self.path}'
        problems = stats_problems(got, self.pins[name], image=image_too)
        assert not problems, f'{name}: ' + '; '.join(problems)

    def write(self):
        """Write the pins, one a line, sorted by name."""
        with open(self.path, 'w', encoding='utf-8') as f:
            f.write('{\n' + ',\n'.join(
                f'{json.dumps(name)}: {json.dumps(self.pins[name], separators=(",", ":"))}'
                for name in sorted(self.pins)) + '\n}\n')
