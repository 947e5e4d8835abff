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
``python -m freespace_seg infer``: segment images, folders, globs or videos without ROS.

Each input is an image file, a folder (its ``*.png``/``*.jpg``/``*.jpeg``/``*.bmp`` files), a
glob (``'frames/*.jpg'``, quoted so that the shell leaves it alone) or a video file (anything
OpenCV's VideoCapture reads). For each image it writes ``<name>_mask.png`` (class ids),
``<name>_colored.png`` and ``<name>_overlay.png`` into the output folder. For a video it
writes ``<name>_overlay.mp4`` (and with ``--mask-video`` ``<name>_colored.mp4``) at the
video's frame rate, and per-frame PNGs ``<name>_NNNNNN_*.png`` only with ``--frames``.
``--export-labels DIR`` writes every Nth frame (or the K least confident of them,
``--label-least-confident K``) as ``<stem>.png`` + ``<stem>_mask.png`` for
``finetune --images`` (see :func:`freespace_seg.tools.labels.write_label_pair`). A progress bar
shows frames/s; the end prints a summary.
"""

import glob
import os
import sys
import time

import cv2
from freespace_seg.common.progress import Progress
from freespace_seg.ground.frame import FrameProcessor
from freespace_seg.perception.engines import BACKENDS
from freespace_seg.perception.pipeline import SegmentationPipeline
from freespace_seg.tools.labels import add_label_arguments, LabelExport
import numpy as np

IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg', '.bmp', '.tif', '.tiff', '.webp')
VIDEO_EXTENSIONS = ('.mp4', '.avi', '.mov', '.mkv', '.webm', '.m4v', '.mpg', '.mpeg', '.wmv')


def add_arguments(parser):
    """Add the options of ``infer``."""
    parser.add_argument('images', nargs='+', metavar='INPUT',
                        help='image files, folders of images, globs or video files')
    parser.add_argument('--model', default='', help='ONNX model (default: the packaged one)')
    parser.add_argument('--backend', default='auto', choices=BACKENDS)
    parser.add_argument('--num-threads', type=int, default=0)
    parser.add_argument('--alpha', type=float, default=0.5, help='overlay weight (0.5)')
    parser.add_argument('--out', default='infer_output', help='output folder (infer_output)')
    parser.add_argument('--mask-video', action='store_true',
                        help='for a video, also write <name>_colored.mp4')
    parser.add_argument('--frames', action='store_true',
                        help='for a video, also write the PNGs of every frame')
    parser.add_argument('--no-video', action='store_true',
                        help='for a video, do not write <name>_overlay.mp4')
    add_label_arguments(parser)


def expand_inputs(inputs):
    """Return [(kind, path)] with kind 'image' or 'video'; a missing input is ('missing', x)."""
    out = []
    for item in inputs:
        if os.path.isdir(item):
            paths = sorted(os.path.join(item, n) for n in os.listdir(item)
                           if os.path.splitext(n)[1].lower() in IMAGE_EXTENSIONS
                           and not os.path.splitext(n)[0].endswith('_mask'))
        elif os.path.exists(item):
            paths = [item]
        else:
            paths = sorted(glob.glob(item))
            if not paths:
                out.append(('missing', item))
                continue
        for path in paths:
            ext = os.path.splitext(path)[1].lower()
            out.append(('video' if ext in VIDEO_EXTENSIONS else 'image', path))
    return out


class _Outputs:
    """Writes one frame's results and counts them."""

    def __init__(self, args, pipe, labels=None):
        self.args = args
        self.processor = FrameProcessor(pipe, alpha=args.alpha)
        self.frames = 0
        self.labels = labels
        self.free = []
        self.confidence = None
        self.want = {'mask', 'colored', 'overlay', 'free'}
        if labels is not None and labels.wants_confidence:
            self.want.add('confidence')

    def segment(self, rgb):
        out = self.processor.process(rgb, self.want)
        self.confidence = out.confidence
        self.frames += 1
        self.free.append(float(np.count_nonzero(out.free)) / out.free.size)
        return out.mask, out.colored, out.overlay, out.free

    def write_pngs(self, stem, mask, colored, overlay):
        base = os.path.join(self.args.out, stem)
        cv2.imwrite(base + '_mask.png', mask)
        cv2.imwrite(base + '_colored.png', cv2.cvtColor(colored, cv2.COLOR_RGB2BGR))
        cv2.imwrite(base + '_overlay.png', cv2.cvtColor(overlay, cv2.COLOR_RGB2BGR))

    def label(self, index, stem, rgb, free):
        """Offer the frame just segmented to the label export (every Nth / least confident)."""
        if self.labels is not None:
            self.labels.offer(index, stem, rgb, free, self.confidence)


def _video_frames(cap):
    while True:
        ok, bgr = cap.read()
        if not ok:
            return
        yield bgr


def _run_video(path, outputs, args):
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        return f'{path}: cannot open as a video'
    name = os.path.splitext(os.path.basename(path))[0]
    fps = cap.get(cv2.CAP_PROP_FPS)
    fps = fps if fps and fps > 0 else 30.0
    total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) or None
    writers = {}
    bar = Progress(_video_frames(cap), total=total, desc=name)
    n = 0
    try:
        for n, bgr in enumerate(bar):
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            mask, colored, overlay, free = outputs.segment(rgb)
            if not writers:
                size = (rgb.shape[1], rgb.shape[0])
                kinds = ([] if args.no_video else ['overlay']) + \
                    (['colored'] if args.mask_video else [])
                for kind in kinds:
                    writers[kind] = cv2.VideoWriter(
                        os.path.join(args.out, f'{name}_{kind}.mp4'),
                        cv2.VideoWriter_fourcc(*'mp4v'), fps, size)
            if 'overlay' in writers:
                writers['overlay'].write(cv2.cvtColor(overlay, cv2.COLOR_RGB2BGR))
            if 'colored' in writers:
                writers['colored'].write(cv2.cvtColor(colored, cv2.COLOR_RGB2BGR))
            if args.frames:
                outputs.write_pngs(f'{name}_{n:06d}', mask, colored, overlay)
            outputs.label(n, f'{name}_{n:06d}', rgb, free)
    finally:
        bar.close()
        cap.release()
        for w in writers.values():
            w.release()
    if not bar.count:
        return f'{path}: no frame could be read'
    return None


def run(args):
    """Segment every input; exit status 1 when some input could not be read."""
    try:
        labels = LabelExport.from_args(args)
    except ValueError as e:
        print(f'infer: error: {e}', file=sys.stderr)
        return 2
    sources = expand_inputs(args.images)
    pipe = SegmentationPipeline(args.model or None, args.backend, args.num_threads)
    os.makedirs(args.out, exist_ok=True)
    outputs = _Outputs(args, pipe, labels)
    errors = [f'{path}: no such file, folder or glob match'
              for kind, path in sources if kind == 'missing']
    images = [path for kind, path in sources if kind == 'image']
    started = time.monotonic()
    if images:
        for index, path in enumerate(Progress(images, desc='images')):
            bgr = cv2.imread(path, cv2.IMREAD_COLOR)
            if bgr is None:
                errors.append(f'{path}: cannot read as an image')
                continue
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            mask, colored, overlay, free = outputs.segment(rgb)
            stem = os.path.splitext(os.path.basename(path))[0]
            outputs.write_pngs(stem, mask, colored, overlay)
            outputs.label(index, stem, rgb, free)
    for kind, path in sources:
        if kind == 'video':
            error = _run_video(path, outputs, args)
            if error:
                errors.append(error)
    seconds = time.monotonic() - started
    pipe.close()
    for error in errors:
        print(f'infer: {error}', file=sys.stderr)
    fps = outputs.frames / seconds if seconds > 0 else 0.0
    line = f'{outputs.frames} frames in {seconds:.1f} s ({fps:.1f} frames/s)'
    if outputs.free:
        line += f', free pixels mean {np.mean(outputs.free):.1%}'
    if labels is not None and labels.count:
        line += f', {labels.count} label pairs in {args.export_labels}/'
    print(line)
    print(f'wrote {args.out}/')
    return 1 if errors else 0
