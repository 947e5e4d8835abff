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
Where the grid's false free cells come from: per frame of a ``grid-rules`` set, and a figure.

    python tools/false_free_frames.py --set 6 [--frames 100] [--seed 3000] [--model M] \
        [--top 10] [--figure OUT.png --rows 2]
    python tools/false_free_frames.py --data data/scenes2b [--split test] [--model M] \
        [--top 10] [--figure OUT.jpg --rows 2]
    python tools/false_free_frames.py --set 2 --drives 20 [--drive-seconds 10] \
        [--frame-every 0.1] [--model M] [--top 6] [--figure OUT.jpg --rows 3]

Renders the frames of ``grid-rules`` set ``--set`` (1-based, as ``grid-rules --sets``), runs
the model and the node's default grid rule, and counts each frame's false free cells (free
cells more than one cell from any cell where the true mask shows floor, as ``grid-rules``
does). Prints the frames with the most of them, how much of the total they hold, and how many
of all false free cells lie on blocked ground (an obstacle or outside the room) rather than on
hidden floor, with their distances. ``--figure`` writes the ``--rows`` worst frames: the
image, then the mask over it (red: blocked pixels called free; blue: floor called blocked).

``--drives N`` takes the frames of ``grid-rules --drives N`` instead (set ``--set``: N rooms
driven by a bump-and-turn robot for ``--drive-seconds``, a frame every ``--frame-every``
seconds, the camera fixed per room): it prints the drives with the most false free cells, how
many of them lie in frames whose true mask shows almost no floor (fewer than 50 free cells in
the visible grid: a camera facing a wall or an obstacle from close by), and ``--figure`` takes
the worst frame of each of the ``--rows`` worst drives.

``--data DIR`` scores the frames of a ``generate2`` (or ``generate``) folder instead, each
projected with its own camera as ``grid-rules --data`` does (there is no top-down truth, so
no count on blocked ground), and ``--figure`` takes its worst frames. Both print the false
free share by distance from the robot, and what keeping free cells only within a shorter
range would leave.
"""

import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from freespace_seg.ground.frame import GroundParams  # noqa: E402
from freespace_seg.ground.grid import FREE, GridSpec  # noqa: E402
from freespace_seg.ground.metrics import false_free_cells  # noqa: E402
from freespace_seg.ground.projection import GroundProjector  # noqa: E402
from freespace_seg.nodes.params import SEGMENTATION_PARAMS  # noqa: E402
from freespace_seg.perception.pipeline import SegmentationPipeline  # noqa: E402
from freespace_seg.tools.grid_scoring import blocked_at_cells, SETS, VISIBLE_FLOOR  # noqa: E402
from freespace_seg.training.data import rendered_samples  # noqa: E402


def default_rule():
    """Return the node's default grid rule."""
    return GroundParams.from_params({s.name: s.default for s in SEGMENTATION_PARAMS}).rule


def overlay(image, free, truth):
    """Return ``image`` with blocked pixels called free in red and floor called blocked in blue."""
    out = image.copy()
    for wrong, colour in ((free & ~truth, (255, 0, 0)), (~free & truth, (0, 0, 255))):
        out[wrong] = (0.4 * out[wrong] + 0.6 * np.array(colour)).astype(np.uint8)
    return out


def frame_grids(pipe, proj, image, true_free, rule):
    """Return the free mask, predicted grid, visible grid and false free cells of a frame."""
    mask, conf = pipe.segment_with_confidence(image)
    free = pipe.free_mask(mask)
    visible = proj.ground(true_free, None, VISIBLE_FLOOR).grid
    pred = proj.ground(free, conf, rule).grid
    return free, pred, visible, false_free_cells(pred, visible)


def write_figure(path, rows):
    """Write the figure's rows (RGB, image beside overlay) one under another."""
    cv2.imwrite(path, cv2.cvtColor(np.vstack(rows), cv2.COLOR_RGB2BGR),
                [cv2.IMWRITE_JPEG_QUALITY, 85])
    print(f'wrote {path}')


RANGES = (0.0, 1.0, 1.5, 2.0, 2.5, 3.0)


def range_table(wrong_d, free_d):
    """Print false free cells by distance, and what a shorter free range would leave."""
    wrong_d, free_d = np.asarray(wrong_d), np.asarray(free_d)
    edges = list(RANGES[:-1]) + [np.inf]
    print('| distance from the robot | predicted free cells | false free | share of all false free |')
    print('|---|---|---|---|')
    for lo, hi in zip(edges[:-1], edges[1:]):
        n_free = int(((free_d >= lo) & (free_d < hi)).sum())
        n_wrong = int(((wrong_d >= lo) & (wrong_d < hi)).sum())
        span = f'{lo:.1f}-{hi:.1f} m' if np.isfinite(hi) else f'{lo:.1f} m and more'
        print(f'| {span} | {n_free} | {100 * n_wrong / max(1, n_free):.1f} % | '
              f'{100 * n_wrong / max(1, wrong_d.size):.0f} % |')
    for cap in RANGES[2:]:
        n_free = int((free_d < cap).sum())
        print(f'free cells only within {cap:.1f} m: false free '
              f'{100 * int((wrong_d < cap).sum()) / max(1, n_free):.2f} %, '
              f'{100 * n_free / max(1, free_d.size):.0f} % of the free cells kept')


def data_frames(folder, split):
    """Yield (name, image, true free mask, intrinsics, mount) of a dataset folder's frames."""
    from freespace_seg.tools.grid_rules import camera_of, read_samples

    for sample in read_samples(folder, split):
        try:
            intrinsics, mount = camera_of(sample.record)
        except ValueError:
            continue
        sample.load()
        yield sample.name, sample.image, sample.free, intrinsics, mount


def main_data(args, pipe, rule, spec):
    """Score a --data folder (:func:`main` for rendered sets): counts, distances, figure."""
    x, y = spec.cell_centers()
    wrong_d, free_d, per_frame, kept = [], [], [], {}
    for name, image, true_free, intrinsics, mount in data_frames(args.data, args.split):
        proj = GroundProjector(intrinsics, mount, spec, mask_shape=true_free.shape[:2])
        if proj.table_size == 0:
            continue
        free, pred, _, wrong = frame_grids(pipe, proj, image, true_free, rule)
        wrong_d += list(np.hypot(x[wrong], y[wrong]))
        free_d += list(np.hypot(x[pred == FREE], y[pred == FREE]))
        per_frame.append((int(wrong.sum()), name, float(mount.z)))
        if args.figure:
            kept[name] = np.hstack([image, overlay(image, free > 0, true_free > 0)])
            keep = sorted(per_frame, reverse=True)[:args.rows]
            kept = {name: kept[name] for _, name, _ in keep if name in kept}
    total = len(wrong_d)
    print(f'{args.data}/{args.split}: {len(per_frame)} frames projected, model '
          f'{os.path.basename(pipe.card.model_file)}: {total} false free cells of '
          f'{len(free_d)} free ({100 * total / max(1, len(free_d)):.1f} %)')
    worst = sorted(per_frame, reverse=True)[:args.top]
    print(f'the {args.top} worst frames hold '
          f'{100 * sum(n for n, _, _ in worst) / max(1, total):.1f} % of them: '
          + ', '.join(f'{name} ({n}, camera {z:.2f} m)' for n, name, z in worst))
    range_table(wrong_d, free_d)
    if args.figure:
        write_figure(args.figure, [kept[name] for _, name, _ in worst[:args.rows]])
    pipe.close()
    return 0


#: a frame whose visible grid has fewer free cells than this sees almost no floor
FEW_FLOOR_CELLS = 50


def main_drives(args, name, pipe, rule, spec):
    """Score the frames of ``--drives`` rendered drives of set ``name`` (:func:`main`)."""
    from freespace_seg.tools.grid_drives import drive_frames

    style, camera = SETS[name]
    per_drive, few_floor, frames, best = [], [0, 0], 0, {}
    wrong_all = free_all = blocked_all = 0
    for index in range(args.drives):
        proj = None
        w_sum = f_sum = 0
        for i, (_, frame) in enumerate(drive_frames(index, args.seed, style, camera, 480, 270,
                                                    args.drive_seconds, args.frame_every)):
            if proj is None:
                proj = GroundProjector(frame.intrinsics, frame.mount, spec)
            free, pred, visible, wrong = frame_grids(pipe, proj, frame.image, frame.free, rule)
            n_wrong = int(wrong.sum())
            blocked_all += int((wrong & blocked_at_cells(frame, spec)).sum())
            w_sum += n_wrong
            f_sum += int((pred == FREE).sum())
            frames += 1
            if int((visible == FREE).sum()) < FEW_FLOOR_CELLS:
                few_floor[0] += n_wrong
                few_floor[1] += 1
            if args.figure and n_wrong > best.get(index, (-1,))[0]:
                best[index] = (n_wrong, i, np.hstack([frame.image, overlay(
                    frame.image, free > 0, frame.free > 0)]))
        per_drive.append((w_sum, index, f_sum, float(proj.pose.position[2]) if proj else 0.0))
        wrong_all += w_sum
        free_all += f_sum
        print(f'drive {index}: {w_sum} false free cells of {f_sum} free', flush=True)
    worst = sorted(per_drive, reverse=True)
    print(f'{name}: {args.drives} drives of {args.drive_seconds:g} s, a frame every '
          f'{args.frame_every:g} s ({frames} frames), seed {args.seed}, model '
          f'{os.path.basename(pipe.card.model_file)}: {wrong_all} false free cells of '
          f'{free_all} free ({100 * wrong_all / max(1, free_all):.1f} %); {blocked_all} on '
          f'blocked ground, {wrong_all - blocked_all} on hidden floor')
    print(f'frames whose true mask shows almost no floor (< {FEW_FLOOR_CELLS} visible free '
          f'cells): {few_floor[1]} of {frames}, holding '
          f'{100 * few_floor[0] / max(1, wrong_all):.0f} % of the false free cells')
    print('| drive | camera height (m) | false free cells | of its free cells | share of all |')
    print('|---|---|---|---|---|')
    for n, index, n_free, z in worst[:args.top]:
        print(f'| {index} | {z:.2f} | {n} | {100 * n / max(1, n_free):.1f} % | '
              f'{100 * n / max(1, wrong_all):.1f} % |')
    top = sum(n for n, _, _, _ in worst[:args.top])
    print(f'the {args.top} worst drives hold {100 * top / max(1, wrong_all):.1f} % of them')
    if args.figure:
        picked = [index for _, index, _, _ in worst[:args.rows] if index in best]
        for index in picked:
            n, i, _ = best[index]
            print(f'figure: drive {index}, frame {i} ({n} false free cells)')
        write_figure(args.figure, [best[index][2] for index in picked])
    pipe.close()
    return 0


def main(argv=None):
    """Count false free cells per frame; print the worst frames; write the figure."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--set', type=int, help='grid-rules set number, 1-based')
    ap.add_argument('--data', default='', help='a generate2/generate folder instead of --set')
    ap.add_argument('--split', default='test', help='split of --data (test)')
    ap.add_argument('--frames', type=int, default=100)
    ap.add_argument('--seed', type=int, default=3000)
    ap.add_argument('--model', default='', help='default: the shipped INT8 model')
    ap.add_argument('--top', type=int, default=10, help='frames to list (10)')
    ap.add_argument('--figure', default='', help='write the worst frames here (PNG)')
    ap.add_argument('--rows', type=int, default=2, help='frames in the figure (2)')
    ap.add_argument('--drives', type=int, default=0,
                    help='with --set: score the frames of this many rendered drives instead')
    ap.add_argument('--drive-seconds', type=float, default=10.0,
                    help='with --drives: each drive this long (10 s)')
    ap.add_argument('--frame-every', type=float, default=0.1,
                    help='with --drives: a frame every this many seconds (0.1)')
    args = ap.parse_args(argv)
    names = list(SETS)
    if (args.set is None) == (not args.data):
        ap.error('give one of --set N or --data DIR')
    if args.data:
        if not os.path.isdir(args.data):
            ap.error(f'--data {args.data}: no such folder')
        return main_data(args, SegmentationPipeline(args.model or None, 'onnxruntime', 1),
                         default_rule(), GridSpec())
    if not 1 <= args.set <= len(names) or args.frames < 1:
        ap.error(f'--set takes 1-{len(names)} and --frames at least 1')
    name = names[args.set - 1]
    style, camera = SETS[name]
    pipe = SegmentationPipeline(args.model or None, 'onnxruntime', 1)
    rule, spec = default_rule(), GridSpec()
    if args.drives:
        if args.drives < 0 or not 0 < args.frame_every <= args.drive_seconds:
            ap.error('--drives takes at least 1, --frame-every more than 0 and at most '
                     '--drive-seconds')
        return main_drives(args, name, pipe, rule, spec)
    free_d = []
    x, y = spec.cell_centers()
    per_frame, on_blocked, distances, free_cells, kept = [], 0, [], 0, {}
    for i, frame in enumerate(rendered_samples(args.frames, args.seed, 480, 270, style=style,
                                               camera=camera)):
        proj = GroundProjector(frame.intrinsics, frame.mount, spec)
        free, pred, _, wrong = frame_grids(pipe, proj, frame.image, frame.free, rule)
        blocked = blocked_at_cells(frame, spec)
        on_blocked += int((wrong & blocked).sum())
        distances += list(np.hypot(x[wrong], y[wrong]))
        free_cells += int((pred == FREE).sum())
        free_d += list(np.hypot(x[pred == FREE], y[pred == FREE]))
        per_frame.append((int(wrong.sum()), i, float(frame.mount.z)))
        if args.figure:
            kept[i] = np.hstack([frame.image, overlay(frame.image, free > 0, frame.free > 0)])
            kept = dict(sorted(kept.items(), key=lambda kv: -per_frame[kv[0]][0])[:args.rows])
    total = sum(n for n, _, _ in per_frame)
    worst = sorted(per_frame, reverse=True)
    print(f'{name}: {args.frames} frames, seed {args.seed}, model '
          f'{os.path.basename(pipe.card.model_file)}: {total} false free cells of {free_cells} '
          f'free ({100 * total / max(1, free_cells):.1f} %); {on_blocked} on blocked ground, '
          f'{total - on_blocked} on hidden floor')
    if distances:
        q = np.percentile(distances, [25, 50, 75])
        print(f'distance from the robot (m): quartiles {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}')
    print('| frame | camera height (m) | false free cells | share of all |')
    print('|---|---|---|---|')
    for n, i, z in worst[:args.top]:
        print(f'| {i} | {z:.2f} | {n} | {100 * n / max(1, total):.1f} % |')
    top = sum(n for n, _, _ in worst[:args.top])
    print(f'the {args.top} worst frames hold {100 * top / max(1, total):.1f} % of them')
    range_table(distances, free_d)
    if args.figure:
        write_figure(args.figure, [kept[i] for _, i, _ in worst[:args.rows]])
    pipe.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
