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
``python -m freespace_seg generate2``: a dataset from the second scene generator.

The folder format is that of ``generate``: ``DIR/<split>/NNNNNN_image.png`` (RGB, stored by
OpenCV as BGR) and ``NNNNNN_mask.png`` (uint8, 0 blocked, 1 free), ``meta.json`` and
``samples.jsonl``. By default every frame goes to the ``test`` split (``--splits 0,0,1``),
since the set is meant for scoring: ``eval --data DIR --split test``. Frame ``i`` of split
``s`` draws from ``numpy SeedSequence(seed, spawn_key=(s, i))``, so the frames do not depend
on ``--jobs``.
"""

import argparse
import json
import multiprocessing
import os

import cv2
import numpy as np

SPLITS = ('train', 'val', 'test')
FORMAT = 'freespace_seg-synthetic-1'


def _pair(text):
    try:
        lo, hi = (float(v) for v in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected MIN,MAX, got {text!r}')
    if not lo <= hi:
        raise argparse.ArgumentTypeError(f'MIN must not exceed MAX in {text!r}')
    return lo, hi


def _splits(text):
    try:
        parts = [float(v) for v in text.split(',')]
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected three fractions, got {text!r}')
    if len(parts) != 3 or min(parts) < 0 or sum(parts) <= 0:
        raise argparse.ArgumentTypeError(f'expected TRAIN,VAL,TEST fractions, got {text!r}')
    return parts


def add_arguments(parser):
    parser.add_argument('--out', required=True, metavar='DIR', help='output folder')
    parser.add_argument('--num', type=int, default=200, help='frames in all (default 200)')
    parser.add_argument('--seed', type=int, default=0, help='dataset seed (default 0)')
    parser.add_argument('--jobs', type=int, default=1,
                        help='worker processes (default 1); the frames do not depend on it')
    parser.add_argument('--width', type=int, default=480, help='image width (default 480)')
    parser.add_argument('--height', type=int, default=270, help='image height (default 270)')
    parser.add_argument('--splits', type=_splits, default=[0.0, 0.0, 1.0],
                        help='TRAIN,VAL,TEST fractions (default 0,0,1: all frames in test)')
    parser.add_argument('--camera-height', type=_pair, default=(0.1, 1.5), metavar='MIN,MAX',
                        help='camera height range in metres (default 0.1,1.5)')
    parser.add_argument('--camera-pitch', type=_pair, default=(0.0, 0.7), metavar='MIN,MAX',
                        help='downward pitch range in radians (default 0,0.7)')


def split_counts(num, fractions):
    """Frames per split: train and val rounded from their fractions, test takes the rest."""
    total = float(sum(fractions))
    train = int(round(num * fractions[0] / total))
    val = min(int(round(num * fractions[1] / total)), num - train)
    return {'train': train, 'val': val, 'test': num - train - val}


def render_sample(seed, split_index, index, width=480, height=270, height_range=(0.1, 1.5),
                  pitch_range=(0.0, 0.7)):
    """Return (rgb, mask, record) of frame ``index`` of split ``split_index``."""
    from .layout import random_scene
    from .render import render_frame
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(split_index, index)))
    scene, camera, info = random_scene(rng, height_range, pitch_range)
    rgb, mask = render_frame(scene, camera, rng, width, height)
    mount = camera.record()
    record = {'seed_key': [seed, split_index, index],
              'intrinsics': camera.intrinsics(width, height),
              'mount': {k: mount[k] for k in ('x', 'y', 'z', 'roll', 'pitch', 'yaw')},
              'lens': mount['lens'], 'hfov_deg': mount['hfov_deg'], 'scene': info,
              'free_fraction': float(mask.mean())}
    return rgb, mask, record


def _task(args):
    cv2.setNumThreads(1)
    return render_sample(*args)


def options(args):
    """Return the options that shape the frames, as ``meta.json`` records them."""
    return {'width': args.width, 'height': args.height,
            'camera_height': list(args.camera_height), 'camera_pitch': list(args.camera_pitch),
            'splits': list(args.splits)}


def run(args):
    from freespace_seg.common.progress import progress
    if args.num < 1 or args.width < 8 or args.height < 8 or args.jobs < 1:
        raise SystemExit('generate2: --num and --jobs must be positive, --width and --height '
                         'at least 8')
    counts = split_counts(args.num, args.splits)
    tasks, names = [], []
    for split_index, split in enumerate(SPLITS):
        if counts[split]:
            os.makedirs(os.path.join(args.out, split), exist_ok=True)
        for index in range(counts[split]):
            tasks.append((args.seed, split_index, index, args.width, args.height,
                          args.camera_height, args.camera_pitch))
            names.append((split, index))
    jobs = min(args.jobs, len(tasks))
    pool = multiprocessing.get_context('spawn').Pool(jobs) if jobs > 1 else None
    results = pool.imap(_task, tasks) if pool else map(_task, tasks)
    try:
        with open(os.path.join(args.out, 'samples.jsonl'), 'w', encoding='utf-8') as f:
            for (split, index), (rgb, mask, record) in progress(
                    zip(names, results), total=len(tasks), desc='generate2'):
                image = f'{split}/{index:06d}_image.png'
                label = f'{split}/{index:06d}_mask.png'
                cv2.imwrite(os.path.join(args.out, image), rgb[:, :, ::-1])
                cv2.imwrite(os.path.join(args.out, label), mask)
                f.write(json.dumps({'split': split, 'index': index, 'image': image,
                                    'mask': label, **record}) + '\n')
    finally:
        if pool:
            pool.close()
            pool.join()
    fractions = [f / sum(args.splits) for f in args.splits]
    meta = {
        'format': FORMAT, 'generator': 'freespace_seg.scenes2', 'seed': args.seed,
        'num': args.num, 'width': args.width, 'height': args.height,
        'splits': {s: {'count': counts[s], 'fraction': fr} for s, fr in zip(SPLITS, fractions)},
        'counts': counts, 'classes': {'0': 'blocked', '1': 'free'},
        'image_pattern': '{split}/{index:06d}_image.png',
        'mask_pattern': '{split}/{index:06d}_mask.png', 'samples': 'samples.jsonl',
        'nominal_intrinsics': {
            'width': args.width, 'height': args.height, 'note': 'each frame has its own lens '
            '(pinhole 60-115 deg or equidistant 100-150 deg wide): see samples.jsonl'},
        'options': options(args),
        'rng': 'numpy SeedSequence(seed, spawn_key=(split_index, index)), split_index 0 '
               'train, 1 val, 2 test',
    }
    with open(os.path.join(args.out, 'meta.json'), 'w', encoding='utf-8') as f:
        json.dump(meta, f, indent=2)
    print(f'generate2: {args.num} frames in {args.out} ' + ', '.join(
        f'{s} {counts[s]}' for s in SPLITS if counts[s]))
    return 0
