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
``python -m freespace_seg generate``: render a synthetic dataset to disk.

Layout of ``--out DIR``::

    DIR/meta.json                 seed, counts, image size, randomization config, classes
    DIR/samples.jsonl             one JSON line per image: split, files, intrinsics, mount, pose
    DIR/{train,val,test}/NNNNNN_image.png   RGB image
    DIR/{train,val,test}/NNNNNN_mask.png    uint8 class ids: 0 = blocked, 1 = free

Sample ``i`` of split ``s`` (0 train, 1 val, 2 test) is drawn from its own generator,
``np.random.SeedSequence(seed, spawn_key=(s, i))``, so it does not depend on the sizes of the
splits or on the number of worker processes, and the splits are disjoint draws.
"""

import argparse
import json
import math
import multiprocessing
import os
import sys

import cv2
from freespace_seg.common.progress import progress
from freespace_seg.sim.randomization import (CAMERA_HEIGHT_LIMITS, CAMERA_PITCH_LIMITS,
                                             check_range, default_intrinsics, RandomizationConfig,
                                             STYLES)
from freespace_seg.sim.render import random_sample
import numpy as np

SPLITS = ('train', 'val', 'test')
CLASSES = {0: 'blocked', 1: 'free'}
FORMAT = 'freespace_seg-synthetic-1'


def add_arguments(parser):
    """Add the command's options to an argparse parser."""
    parser.add_argument('--out', required=True, help='output directory (new or empty)')
    parser.add_argument('--num', type=int, required=True, help='number of images in all')
    parser.add_argument('--seed', type=int, default=0, help='dataset seed (default 0)')
    parser.add_argument('--width', type=int, default=480, help='image width (default 480)')
    parser.add_argument('--height', type=int, default=270, help='image height (default 270)')
    parser.add_argument('--splits', default='0.8,0.1,0.1',
                        help='train,val,test fractions (default 0.8,0.1,0.1)')
    parser.add_argument('--jobs', type=int, default=1,
                        help='worker processes (default 1; results do not depend on it)')
    parser.add_argument('--overwrite', action='store_true',
                        help='replace a dataset already in --out')
    parser.add_argument('--no-randomization', action='store_true',
                        help='switch every randomization factor off')
    parser.add_argument('--style', default='default', choices=STYLES,
                        help='appearance style: the training one, "shifted", a held-out '
                             'look for evaluation, or "one_floor", that look with one crimson '
                             'rubber floor in every room (default: %(default)s)')
    add_camera_arguments(parser.add_argument)
    parser.add_argument(
        '--close-views', type=close_share, metavar='F', default=0.0,
        help='share of the frames with the robot close to a wall or an obstacle, facing it '
             '(the close_views factor; default: 0, off)')
    for name in RandomizationConfig.switches():
        parser.add_argument('--no-' + name.replace('_', '-'), dest='no_' + name,
                            action='store_true', help=f'switch off {name.replace("_", " ")}')


def camera_range(name):
    """Return an argparse type that reads ``MIN,MAX`` for the config's range ``name``."""
    limits = {'camera_height': CAMERA_HEIGHT_LIMITS, 'camera_pitch': CAMERA_PITCH_LIMITS}[name]

    def parse(text):
        parts = str(text).split(',')
        if len(parts) != 2:
            raise argparse.ArgumentTypeError(f'expected MIN,MAX, got {text!r}')
        try:
            return check_range(parts, limits[0], limits[1], name)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parse.__name__ = name.replace('_', ' ') + ' range'
    return parse


def add_camera_arguments(add):
    """Add ``--camera-height`` and ``--camera-pitch`` through ``add`` (an add_argument)."""
    defaults = RandomizationConfig()
    low, high = defaults.camera_height
    add('--camera-height', type=camera_range('camera_height'), metavar='MIN,MAX',
        help=f'range of camera heights above the floor drawn by the pose randomization, in '
             f'metres (default: {low:g},{high:g}; allowed {CAMERA_HEIGHT_LIMITS[0]:g}-'
             f'{CAMERA_HEIGHT_LIMITS[1]:g})')
    low, high = defaults.camera_pitch
    add('--camera-pitch', type=camera_range('camera_pitch'), metavar='MIN,MAX',
        help=f'range of camera pitches, in radians, positive tilts down (default: '
             f'{low:g},{high:g}; allowed {CAMERA_PITCH_LIMITS[0]:g} to '
             f'{CAMERA_PITCH_LIMITS[1]:g})')


def close_share(text):
    """Parse ``--close-views``: a share in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f'--close-views takes a share in [0, 1], got {text!r}')
    return value


def camera_overrides(args):
    """Return the ``camera_height`` and ``camera_pitch`` ranges given on the command line."""
    return {name: tuple(getattr(args, name)) for name in ('camera_height', 'camera_pitch')
            if getattr(args, name, None) is not None}


def config_from_args(args):
    """Return the RandomizationConfig of ``--style``, ``--no-*`` and the camera ranges."""
    config = RandomizationConfig(style=getattr(args, 'style', None) or 'default',
                                 close_views=float(getattr(args, 'close_views', 0.0) or 0.0),
                                 **camera_overrides(args))
    if getattr(args, 'no_randomization', False):
        return RandomizationConfig.none(style=config.style)
    off = [name for name in config.switches() if getattr(args, 'no_' + name, False)]
    return config.without(*off)


def parse_splits(text):
    """Parse 'a,b,c' into three non-negative fractions that sum to 1."""
    try:
        values = [float(v) for v in str(text).split(',')]
    except ValueError:
        raise ValueError(f'--splits must be three numbers like 0.8,0.1,0.1, got {text!r}')
    if len(values) != 3 or any(v < 0.0 for v in values) or sum(values) <= 0.0:
        raise ValueError(f'--splits must be three non-negative numbers, got {text!r}')
    total = sum(values)
    return [v / total for v in values]


def split_counts(num, fractions):
    """Images per split: ``num`` shared by largest remainders (sums to ``num``)."""
    raw = [num * f for f in fractions]
    counts = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - counts[i], reverse=True)
    for i in order[:num - sum(counts)]:
        counts[i] += 1
    return counts


def sample_rng(seed, split_index, index):
    """Return the generator of sample ``index`` of split ``split_index``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(split_index, index)))


def _intrinsics_dict(k):
    return {'width': k.width, 'height': k.height, 'fx': k.fx, 'fy': k.fy, 'cx': k.cx,
            'cy': k.cy, 'distortion': list(k.distortion)}


def _render_job(job):
    seed, split_index, index, width, height, config_dict, out = job
    config = RandomizationConfig.from_dict(config_dict)
    rng = sample_rng(seed, split_index, index)
    frame = random_sample(rng, default_intrinsics(width, height), config)
    split = SPLITS[split_index]
    image_rel = f'{split}/{index:06d}_image.png'
    mask_rel = f'{split}/{index:06d}_mask.png'
    if not cv2.imwrite(os.path.join(out, image_rel), frame.image[..., ::-1]):
        raise OSError(f'could not write {image_rel}')
    if not cv2.imwrite(os.path.join(out, mask_rel), frame.free):
        raise OSError(f'could not write {mask_rel}')
    m = frame.mount
    return {
        'split': split, 'index': index, 'image': image_rel, 'mask': mask_rel,
        'seed_key': [seed, split_index, index],
        'intrinsics': _intrinsics_dict(frame.intrinsics),
        'mount': {'x': m.x, 'y': m.y, 'z': m.z, 'roll': m.roll, 'pitch': m.pitch, 'yaw': m.yaw},
        'robot_pose': list(frame.robot_pose),
        'free_fraction': float(frame.free.mean()),
    }


def _clear(out):
    """Delete a previous dataset's files from ``out`` (only files this command writes)."""
    for name in ('meta.json', 'samples.jsonl'):
        path = os.path.join(out, name)
        if os.path.isfile(path):
            os.remove(path)
    for split in SPLITS:
        folder = os.path.join(out, split)
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name.endswith(('_image.png', '_mask.png')):
                os.remove(os.path.join(folder, name))
        if not os.listdir(folder):
            os.rmdir(folder)


def run(args):
    """Render the dataset; returns a process exit code."""
    out = args.out
    try:
        fractions = parse_splits(args.splits)
    except ValueError as err:
        print(f'generate: error: {err}', file=sys.stderr)
        return 2
    if args.num < 0 or args.width < 8 or args.height < 8:
        print('generate: error: --num must be >= 0 and the image at least 8x8', file=sys.stderr)
        return 2
    if os.path.exists(out) and not os.path.isdir(out):
        print(f'generate: error: {out} exists and is not a directory', file=sys.stderr)
        return 2
    if os.path.isdir(out) and os.listdir(out):
        if not args.overwrite:
            print(f'generate: error: {out} is not empty; pass --overwrite to replace a '
                  'dataset there', file=sys.stderr)
            return 2
        _clear(out)
    config = config_from_args(args)
    counts = split_counts(args.num, fractions)
    os.makedirs(out, exist_ok=True)
    for split, count in zip(SPLITS, counts):
        if count:
            os.makedirs(os.path.join(out, split), exist_ok=True)
    config_dict = config.to_dict()
    jobs = [(args.seed, s, i, args.width, args.height, config_dict, out)
            for s, count in enumerate(counts) for i in range(count)]
    records = []
    workers = max(1, int(args.jobs))
    if workers > 1 and len(jobs) > 1:
        with multiprocessing.get_context('spawn').Pool(workers) as pool:
            for record in progress(pool.imap(_render_job, jobs, chunksize=4), total=len(jobs),
                                   desc='generate'):
                records.append(record)
    else:
        for job in progress(jobs, desc='generate'):
            records.append(_render_job(job))
    with open(os.path.join(out, 'samples.jsonl'), 'w') as f:
        for record in records:
            f.write(json.dumps(record) + '\n')
    meta = {
        'format': FORMAT,
        'seed': args.seed,
        'num': args.num,
        'width': args.width,
        'height': args.height,
        'splits': {split: {'count': count, 'fraction': fraction}
                   for split, count, fraction in zip(SPLITS, counts, fractions)},
        'counts': dict(zip(SPLITS, counts)),
        'classes': {str(k): v for k, v in CLASSES.items()},
        'image_pattern': '{split}/{index:06d}_image.png',
        'mask_pattern': '{split}/{index:06d}_mask.png',
        'samples': 'samples.jsonl',
        'nominal_intrinsics': _intrinsics_dict(default_intrinsics(args.width, args.height)),
        'randomization': config_dict,
        'rng': 'numpy SeedSequence(seed, spawn_key=(split_index, index)), '
               'split_index 0 train, 1 val, 2 test',
    }
    with open(os.path.join(out, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=2)
    free = [r['free_fraction'] for r in records]
    print(f'generate: wrote {len(records)} images to {out} '
          f'({", ".join(f"{s} {c}" for s, c in zip(SPLITS, counts))}; '
          f'mean free fraction {np.mean(free) if free else 0.0:.3f})', file=sys.stderr)
    return 0
