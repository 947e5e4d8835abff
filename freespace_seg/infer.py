"""
``python -m freespace_seg infer``: segment image files without ROS.

Writes, for each input image, ``<name>_mask.png`` (class ids), ``<name>_colored.png`` and
``<name>_overlay.png`` into the output folder, and prints the time per image.
"""

import os
import sys

import cv2
from freespace_seg.engines import BACKENDS
from freespace_seg.pipeline import SegmentationPipeline


def add_arguments(parser):
    parser.add_argument('images', nargs='+', help='image files (png, jpg, ...)')
    parser.add_argument('--model', default='', help='ONNX model (default: the packaged one)')
    parser.add_argument('--backend', default='auto', choices=BACKENDS)
    parser.add_argument('--num-threads', type=int, default=0)
    parser.add_argument('--alpha', type=float, default=0.5, help='overlay weight (0.5)')
    parser.add_argument('--out', default='infer_output', help='output folder (infer_output)')


def run(args):
    pipe = SegmentationPipeline(args.model or None, args.backend, args.num_threads)
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for path in args.images:
        bgr = cv2.imread(path, cv2.IMREAD_COLOR)
        if bgr is None:
            print(f'{path}: cannot read as an image', file=sys.stderr)
            failed += 1
            continue
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        mask = pipe.segment(rgb)
        colored = pipe.colorize(mask)
        overlay = pipe.overlay(rgb, colored, args.alpha)
        stem = os.path.join(args.out, os.path.splitext(os.path.basename(path))[0])
        cv2.imwrite(stem + '_mask.png', mask)
        cv2.imwrite(stem + '_colored.png', cv2.cvtColor(colored, cv2.COLOR_RGB2BGR))
        cv2.imwrite(stem + '_overlay.png', cv2.cvtColor(overlay, cv2.COLOR_RGB2BGR))
        free = float((pipe.free_mask(mask) > 0).mean())
        ms = {k: v * 1000 for k, v in pipe.timings.items()}
        print(f'{path}: {rgb.shape[1]}x{rgb.shape[0]}, free {free:.1%}, preprocess '
              f'{ms["preprocess"]:.1f} ms, inference {ms["inference"]:.1f} ms, postprocess '
              f'{ms["postprocess"]:.1f} ms')
    print(f'wrote {args.out}/')
    return 1 if failed else 0
