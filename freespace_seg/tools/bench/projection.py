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
Benchmark the ground projection: lookup-table build and per-frame cost on one core.

Run ``python -m freespace_seg bench-projection``; prints a Markdown table. The camera is an
OAK-D-like 69 degree colour camera with mild plumb_bob distortion, 0.25 m above the floor and
pitched 0.3 rad down (the synthetic default), projected onto the default GridSpec (4 x 4 m at
5 cm, 3 m range). Masks are procedural (a floor region up to a wavy wall line with random
obstacle blobs, ~20 different ones cycled), so the numbers do not depend on other modules.
Also timed: the node's default grid rule (:class:`GridRule`, with a confidence image, on the
same masks with 30 blobs of speckle each), the virtual scan of its result
(``free_space/scan``), and the per-pixel confidence (``segmentation/confidence``: P(free)
from 2-class logits of a 480x272 network output, back to the mask size; what
:meth:`SegmentationPipeline.segment_with_confidence` adds).

A second table times ``grid_mask_width`` (:func:`~freespace_seg.ground.frame.shrink_for_ground`):
1280x720 masks made from 480x270 ones (as the node's masks come from a 480x272 model output),
the node's default rule with a confidence, projected at full size and shrunk to each width:
the shrink plus ``ground()``, and how the grid differs from the full-size one.

A third table times the horizon cut of the class mask (``mask_horizon``,
:class:`~freespace_seg.ground.horizon.HorizonCut`) on 1280x720 masks for a few mounts: its
build, and per frame what the node's frame path does: ``update`` with the frame's intrinsics
and pose (no change: no rebuild), then ``apply``.
"""

import argparse
import math
import platform
import time

import cv2
from freespace_seg.common.markdown import number, table
from freespace_seg.ground.geometry import CameraIntrinsics, CameraMount
from freespace_seg.ground.grid import GridRule, GridSpec
from freespace_seg.ground.horizon import DEFAULT_MARGIN_DEG, HorizonCut
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.ground.scan import ScanLayout
from freespace_seg.perception.postprocess import free_probability
from freespace_seg.perception.preprocess import Letterbox
import numpy as np

CASES = (
    # (label, camera (width, height), mask (width, height))
    ('640x360', (640, 360), (640, 360)),
    ('1280x720', (1280, 720), (1280, 720)),
    ('480x272 mask, 1280x720 camera', (1280, 720), (480, 272)),
)


def camera(width, height, distortion=True):
    """Return the benchmark camera at a resolution."""
    d = (-0.06, 0.012, 0.0004, -0.0003, 0.0) if distortion else ()
    return CameraIntrinsics.from_fov(width, height, math.radians(69.0), d)


def random_masks(width, height, count, rng):
    """Return ``count`` procedural free-floor masks (uint8, 1 = floor)."""
    masks = []
    cols = np.arange(width)
    for _ in range(count):
        mask = np.zeros((height, width), np.uint8)
        phase, period = rng.uniform(0, 2 * math.pi), rng.uniform(0.3, 1.5) * width
        wall = height * (0.3 + 0.1 * np.sin(2 * math.pi * cols / period + phase))
        mask[np.arange(height)[:, None] >= wall[None, :]] = 1
        for _ in range(int(rng.integers(2, 9))):
            centre = (int(rng.integers(0, width)), int(rng.integers(height // 3, height)))
            axes = (int(rng.integers(4, width // 6)), int(rng.integers(4, height // 5)))
            cv2.ellipse(mask, centre, axes, float(rng.uniform(0, 180)), 0, 360, 0, -1)
        masks.append(mask)
    return masks


def speckled(masks, rng, count=30):
    """Return copies of ``masks`` with ``count`` blocked 2-5 px blobs in their lower half."""
    out = []
    for mask in masks:
        mask = mask.copy()
        height, width = mask.shape
        for _ in range(count):
            r = int(rng.integers(height // 2, height))
            c = int(rng.integers(0, width))
            mask[r:r + int(rng.integers(2, 6)), c:c + int(rng.integers(2, 6))] = 0
        out.append(mask)
    return out


def confidences(masks, rng):
    """Return a confidence image (P(free) x 255) per mask: sure floor, unsure blocked."""
    out = []
    for mask in masks:
        low = rng.integers(0, 128, mask.shape, dtype=np.uint8)
        out.append(np.where(mask > 0, np.uint8(240), low).astype(np.uint8))
    return out


def _time(fn, args_list, frames):
    times = np.empty(frames)
    for i in range(frames):
        arg = args_list[i % len(args_list)]
        t0 = time.perf_counter()
        fn(arg)
        times[i] = time.perf_counter() - t0
    return times * 1e3


def measure(frames=200, distortion=True, builds=3, seed=0):
    """Measure every case; return a list of result dicts."""
    cv2.setNumThreads(1)
    rng = np.random.default_rng(seed)
    mount = CameraMount(x=0.0, y=0.0, z=0.25, roll=0.0, pitch=0.3, yaw=0.0)
    spec = GridSpec()
    results = []
    for label, (cw, ch), (mw, mh) in CASES:
        intr = camera(cw, ch, distortion)
        build = []
        for _ in range(builds):
            t0 = time.perf_counter()
            proj = GroundProjector(intr, mount, spec, mask_shape=(mh, mw))
            build.append((time.perf_counter() - t0) * 1e3)
        masks = random_masks(mw, mh, 20, rng)
        for mask in masks[:5]:  # warm up
            proj.ground(mask).points
        # The grid alone (the points of a Ground are computed on first use), then both.
        project = _time(lambda m: proj.ground(m).grid, masks, frames)
        both = _time(lambda m: proj.ground(m).points, masks, frames)
        rule = GridRule()
        noisy = speckled(masks, rng)
        pairs = list(zip(noisy, confidences(noisy, rng)))
        ruled = _time(lambda mc: proj.ground(mc[0], mc[1], rule), pairs, frames)
        layout = ScanLayout(proj, 0.01)
        grounds = [proj.ground(m, c, rule) for m, c in pairs]
        scan = _time(layout.ranges, grounds, frames)
        box = Letterbox.compute(mw, mh, 480, 272)
        logits = [rng.normal(0.0, 3.0, (1, 2, 272, 480)).astype(np.float32) for _ in range(4)]
        conf = _time(lambda o: box.mask_to_source(free_probability(o, 'logits', (1,))),
                     logits, frames)
        results.append({
            'case': label, 'build_ms': float(np.median(build)),
            'samples': proj.table_size, 'project_median_ms': float(np.median(project)),
            'project_p95_ms': float(np.percentile(project, 95)),
            'with_points_median_ms': float(np.median(both)),
            'with_points_p95_ms': float(np.percentile(both, 95)),
            'rule_median_ms': float(np.median(ruled)),
            'rule_p95_ms': float(np.percentile(ruled, 95)),
            'scan_median_ms': float(np.median(scan)),
            'scan_p95_ms': float(np.percentile(scan, 95)),
            'confidence_median_ms': float(np.median(conf)),
            'confidence_p95_ms': float(np.percentile(conf, 95)),
            'rebuilds': proj.rebuild_count,
        })
    return results


def markdown(results, frames, distortion):
    """Format results as a Markdown table with a one-line header."""
    lines = [
        f'GroundProjector on {platform.processor() or platform.machine()}, one thread '
        f'(cv2.setNumThreads(1)), default GridSpec (80x80 cells, 3 m), {frames} frames, '
        f'{"plumb_bob distortion" if distortion else "no distortion"}, numpy {np.__version__}, '
        f'OpenCV {cv2.__version__}.',
        '',
    ]

    def ms(key):
        return number(r[key], 3)

    rows = []
    for r in results:
        rows.append((r['case'], number(r['build_ms'], 0), r['samples'],
                     ms('project_median_ms'), ms('project_p95_ms'),
                     ms('with_points_median_ms'), ms('with_points_p95_ms'),
                     f"{ms('rule_median_ms')} / {ms('rule_p95_ms')}",
                     f"{ms('scan_median_ms')} / {ms('scan_p95_ms')}",
                     f"{ms('confidence_median_ms')} / {ms('confidence_p95_ms')}"))
    lines += table(
        ('case', 'LUT build (ms)', '(column, cell) samples', 'project median (ms)',
         'project p95 (ms)', 'project_with_points median (ms)', 'p95 (ms)',
         'default rule median / p95 (ms)', 'scan median / p95 (ms)',
         'confidence median / p95 (ms)'), rows, align=['---'] + ['---:'] * 9)
    return '\n'.join(lines)


#: the widths of the grid_mask_width table (0: the full 1280x720 mask)
MASK_WIDTHS = (0, 640, 480)


def measure_mask_width(frames=200, distortion=True, seed=0, widths=MASK_WIDTHS):
    """Time the shrink plus the default rule's ``ground()`` per ``grid_mask_width``."""
    from freespace_seg.ground.frame import GroundParams, shrink_for_ground
    from freespace_seg.nodes.params import SEGMENTATION_PARAMS

    cv2.setNumThreads(1)
    rng = np.random.default_rng(seed)
    params = GroundParams.from_params({s.name: s.default for s in SEGMENTATION_PARAMS})
    intr = camera(1280, 720, distortion)
    small = speckled(random_masks(480, 270, 20, rng), rng)
    pairs = []
    for mask, conf in zip(small, confidences(small, rng)):
        pairs.append(tuple(cv2.resize(a, (1280, 720), interpolation=cv2.INTER_NEAREST)
                           for a in (255 * mask, conf)))
    full = GroundProjector(intr, params.mount, params.grid_spec, mask_shape=(720, 1280))
    truth = [full.ground(m, c, params.rule).grid for m, c in pairs]
    results = []
    for width in widths:
        shape = shrink_for_ground(*pairs[0], width)[0].shape
        proj = GroundProjector(intr, params.mount, params.grid_spec, mask_shape=shape)

        def one(mc, proj=proj, width=width):
            return proj.ground(*shrink_for_ground(mc[0], mc[1], width), params.rule).grid
        for mc in pairs[:5]:  # warm up
            one(mc)
        per_frame = _time(one, pairs, frames)
        agree = known = flipped = free = 0
        for mc, ref in zip(pairs, truth):
            grid = one(mc)
            seen = (grid >= 0) | (ref >= 0)
            known += int(seen.sum())
            agree += int(((grid == ref) & seen).sum())
            flipped += int(((ref == 100) & (grid == 0)).sum())
            free += int((grid == 0).sum())
        results.append({'width': width, 'mask': f'{shape[1]}x{shape[0]}',
                        'median_ms': float(np.median(per_frame)),
                        'p95_ms': float(np.percentile(per_frame, 95)),
                        'agree': agree / max(known, 1), 'occupied_free': flipped / max(free, 1)})
    return results


def mask_width_markdown(results, frames):
    """Format :func:`measure_mask_width` results as a Markdown table with a one-line header."""
    lines = ['grid_mask_width: 1280x720 masks (480x270 ones, enlarged), the default rule with a '
             f'confidence, one thread, {frames} frames; grids against the full-size one.', '']
    rows = [(r['width'], r['mask'], f"{number(r['median_ms'], 3)} / {number(r['p95_ms'], 3)}",
             number(100.0 * r['agree'], 1), number(100.0 * r['occupied_free'], 2))
            for r in results]
    lines += table(('grid_mask_width', 'mask projected', 'shrink + ground() median / p95 (ms)',
                    'cells as at full size (%)', 'free cells occupied at full size (%)'),
                   rows, align=['---:', '---'] + ['---:'] * 3)
    return '\n'.join(lines)


#: (label, mount) of the horizon table, all at 1280x720 and the default margin
HORIZON_MOUNTS = (
    ('pitched 0.3 rad down (the default mount)', CameraMount(z=0.25, pitch=0.3)),
    ('level', CameraMount(z=0.25, pitch=0.0)),
    ('rolled 0.2 rad, pitched 0.1 rad', CameraMount(z=0.25, roll=0.2, pitch=0.1)),
)


def measure_horizon(frames=200, distortion=True, builds=3, seed=0, size=(1280, 720)):
    """Time the horizon cut of ``size`` class masks for :data:`HORIZON_MOUNTS`."""
    cv2.setNumThreads(1)
    rng = np.random.default_rng(seed)
    intr = camera(size[0], size[1], distortion)
    masks = [rng.integers(0, 2, (size[1], size[0]), dtype=np.uint8) for _ in range(4)]
    results = []
    for label, mount in HORIZON_MOUNTS:
        build = []
        for _ in range(builds):
            t0 = time.perf_counter()
            cut = HorizonCut(intr, mount, DEFAULT_MARGIN_DEG)
            build.append((time.perf_counter() - t0) * 1e3)

        def one(mask, cut=cut, mount=mount):
            cut.update(intrinsics=intr, mount=mount, margin_deg=DEFAULT_MARGIN_DEG)
            cut.apply(mask, 0)
        for mask in masks:   # warm up
            one(mask)
        per_frame = _time(one, masks, frames)
        results.append({
            'mount': label, 'cut_share': cut.count / float(size[0] * size[1]),
            'build_ms': float(np.median(build)),
            'cut_median_ms': float(np.median(per_frame)),
            'cut_p95_ms': float(np.percentile(per_frame, 95)),
            'rebuilds': cut.rebuild_count,
        })
    return results


def horizon_markdown(results, frames):
    """Format :func:`measure_horizon` results as a Markdown table with a one-line header."""
    lines = [f'Horizon cut of 1280x720 class masks, one thread, margin {DEFAULT_MARGIN_DEG} deg, '
             f'{frames} frames (per frame: update with the same intrinsics and pose, then '
             'apply).', '']
    rows = [(r['mount'], number(100.0 * r['cut_share'], 1), number(r['build_ms'], 0),
             f"{number(r['cut_median_ms'], 3)} / {number(r['cut_p95_ms'], 3)}")
            for r in results]
    lines += table(('mount', 'pixels cut (%)', 'build (ms)', 'per frame median / p95 (ms)'),
                   rows, align=['---'] + ['---:'] * 3)
    return '\n'.join(lines)


def _frames(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError('--frames must be >= 1')
    return value


def add_arguments(parser):
    """Add ``--frames`` and ``--no-distortion`` to ``parser``."""
    parser.add_argument('--frames', type=_frames, default=200, help='frames per case (200)')
    parser.add_argument('--no-distortion', action='store_true',
                        help='use a pinhole camera without distortion')


def run(args):
    """Run the benchmark and print the table."""
    results = measure(args.frames, not args.no_distortion)
    print(markdown(results, args.frames, not args.no_distortion))
    print()
    print(mask_width_markdown(measure_mask_width(args.frames, not args.no_distortion),
                              args.frames))
    print()
    print(horizon_markdown(measure_horizon(args.frames, not args.no_distortion), args.frames))
    return 0
