"""
Closed-loop benchmark: drive the simulated Create 3 through many seeded rooms.

    python -m freespace_seg.bench_closed_loop --rooms 20 --minutes 10
    python -m freespace_seg.bench_closed_loop --rooms 3 --minutes 0.5 --perception truth

Each room runs :func:`freespace_seg.closed_loop.run_room` (sim_robot + segmentation_node +
freespace_driver, in real time) one after the other and the script prints a Markdown table
of collisions, distance, coverage of the free floor and stale-perception stops per room, with
totals. ``--png-dir`` also writes a top-down picture of each room with the path. The exit
code is 1 when any room had a collision.
"""

import argparse
import os
import sys
import time

from freespace_seg.closed_loop import (draw_path_png, markdown_table, PERCEPTIONS,
                                       run_room)


def build_parser():
    """Return the argument parser of the benchmark."""
    ap = argparse.ArgumentParser(prog='python -m freespace_seg.bench_closed_loop',
                                 description=__doc__.strip().splitlines()[0])
    ap.add_argument('--rooms', type=int, default=20, help='number of rooms (default 20)')
    ap.add_argument('--minutes', type=float, default=10.0,
                    help='simulated minutes per room (default 10)')
    ap.add_argument('--first-seed', type=int, default=0,
                    help='seed of the first room; the others follow (default 0)')
    ap.add_argument('--perception', choices=PERCEPTIONS, default='model',
                    help='model: segmentation_node with the model; truth: exact masks '
                    '(default model)')
    ap.add_argument('--model', default=None,
                    help='ONNX model (default: the shipped models/freespace_unet.onnx)')
    ap.add_argument('--threads', type=int, default=1,
                    help='inference threads of the segmentation node (default 1)')
    ap.add_argument('--width', type=int, default=320, help='camera width (default 320)')
    ap.add_argument('--height', type=int, default=180, help='camera height (default 180)')
    ap.add_argument('--camera-rate', type=float, default=10.0,
                    help='camera frames per second (default 10)')
    ap.add_argument('--camera-noise', action='store_true',
                    help='render camera effects (noise, blur, exposure, JPEG)')
    ap.add_argument('--png-dir', default=None,
                    help='write room_<seed>.png (top-down room with the path) here')
    return ap


def main(argv=None):
    """Run the benchmark; print the table; return 1 if any room had a collision."""
    args = build_parser().parse_args(argv)
    if args.rooms < 1 or args.minutes <= 0:
        print('--rooms must be >= 1 and --minutes > 0', file=sys.stderr)
        return 2
    if args.png_dir:
        os.makedirs(args.png_dir, exist_ok=True)
    sim_params = {'width': args.width, 'height': args.height,
                  'camera_rate': args.camera_rate, 'camera_noise': args.camera_noise}
    results = []
    t0 = time.monotonic()
    for seed in range(args.first_seed, args.first_seed + args.rooms):
        try:
            r = run_room(seed, duration=60.0 * args.minutes, perception=args.perception,
                         model_path=args.model, num_threads=args.threads,
                         sim_params=sim_params,
                         log=lambda line: print(line, file=sys.stderr, flush=True))
        except FileNotFoundError as e:
            print(f'error: {e}', file=sys.stderr)
            return 2
        results.append(r)
        notes = f' ({"; ".join(r.notes)})' if r.notes else ''
        print(f'room {seed}: {r.collisions} collisions, {r.distance:.1f} m, coverage '
              f'{100.0 * r.coverage:.1f} %, {r.stale_stops} stale stops{notes}',
              file=sys.stderr, flush=True)
        if args.png_dir:
            draw_path_png(r, os.path.join(args.png_dir, f'room_{seed}.png'))
    print(f'\nClosed loop, perception={args.perception}, {args.rooms} rooms x '
          f'{args.minutes:g} min simulated, camera {args.width}x{args.height} at '
          f'{args.camera_rate:g} Hz ({time.monotonic() - t0:.0f} s wall):\n')
    print(markdown_table(results))
    return 1 if any(r.collisions for r in results) else 0


if __name__ == '__main__':
    raise SystemExit(main())
