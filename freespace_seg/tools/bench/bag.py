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
``python -m freespace_seg bench-bag``: ``bag`` against the pipeline it runs, on one machine.

It writes a bag of ``--frames`` rendered camera frames (``--scenes`` distinct ones, cycled;
rgb8 at ``--width`` x ``--height``, a CameraInfo with each, MCAP), runs ``python -m
freespace_seg bag`` over it once per ``--jobs`` value in a child process, sampling the
child's resident memory twice a second, and times ``bench``'s pipeline row (the same
model and ONNX Runtime threads, no ROS) before and after. The table gives frames/s of each,
their ratio, and the RSS from a tenth of the run to its end: flat memory means the bag
streams.

``--writer-only`` times ``bag``'s output writer alone: ``--frames`` frames of the messages
``bag`` writes at ``--width`` x ``--height`` (the copied rgb8 input and the four camera-size
outputs), serialized and written the first way (``serialize_cdr``, rosbags' Writer), with
:func:`~freespace_seg.tools.bag_writer.image_cdr` and
:class:`~freespace_seg.tools.bag_writer.BagWriter` through the page cache, and the way ``bag``
writes them now (O_DIRECT, the masks compressed), ``--repeats`` times each, alternating.
Its table gives CPU milliseconds a frame, which count even on a busy machine, and wall time.
"""

import os
import re
import shutil
import subprocess
import sys
import threading
import time

from freespace_seg.common.markdown import number, table
from freespace_seg.tools.bench.procstat import proc_rss_mb

SUMMARY = re.compile(r'(\d+) frames segmented in ([\d.]+) s \(([\d.]+) frames/s\)')


def add_arguments(parser):
    parser.add_argument('--frames', type=int, default=1000, help='frames in the bag (1000)')
    parser.add_argument('--width', type=int, default=1280, help='camera width (1280)')
    parser.add_argument('--height', type=int, default=720, help='camera height (720)')
    parser.add_argument('--scenes', type=int, default=30,
                        help='distinct rendered frames, cycled (30)')
    parser.add_argument('--seed', type=int, default=1000, help='scene seed (1000)')
    parser.add_argument('--model', default='',
                        help='ONNX model (default: the packaged one, INT8 on the CPU)')
    parser.add_argument('--num-threads', type=int, default=2,
                        help='ONNX Runtime threads, for bag and the pipeline row alike (2)')
    parser.add_argument('--jobs', default='1,2',
                        help="bag's --jobs values to run, comma-separated (1,2)")
    parser.add_argument('--keep', default='all', choices=('all', 'image', 'none'),
                        help="bag's --keep (all)")
    parser.add_argument('--compression', default='zstd',
                        help="bag's --compression values to run, comma-separated (zstd)")
    parser.add_argument('--compress', default='masks',
                        help="bag's --compress values to run, comma-separated (masks)")
    parser.add_argument('--pipeline-seconds', type=float, default=15.0,
                        help='seconds of each pipeline measurement (15)')
    parser.add_argument('--work-dir', default='bench_bag',
                        help='where the bags are written (bench_bag; removed at the end '
                             'unless --keep-bags)')
    parser.add_argument('--keep-bags', action='store_true',
                        help='keep the input bag and the last output bag')
    parser.add_argument('--out', default='',
                        help='also write the table to this Markdown file')
    parser.add_argument('--writer-only', action='store_true',
                        help='time the output writer of bag alone instead: --frames frames '
                             'of messages (the input image and the four camera-size outputs) '
                             'through the Writer of rosbags, BagWriter through the page cache '
                             'and BagWriter as bag writes')
    parser.add_argument('--repeats', type=int, default=3,
                        help='--writer-only: runs of each writer, alternating; the best '
                             'counts (3)')


def write_input_bag(path, frames, width, height, scenes, seed):
    """
    Write the benchmark's input bag with rosbags; return the rendered frames.

    Rendered without lens distortion, and with frame 0's CameraInfo on every frame.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    from freespace_seg.common.progress import progress
    from freespace_seg.training.data import rendered_samples
    import numpy as np

    count = min(scenes, frames)
    rendered = list(progress(rendered_samples(count, seed, width, height,
                                              without=('lens_distortion',)),
                             total=count, desc='render'))
    store = get_typestore(Stores.ROS2_KILTED)
    t = store.types
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        image_conn = w.add_connection('/camera/image_raw', 'sensor_msgs/msg/Image',
                                      typestore=store)
        info_conn = w.add_connection('/camera/camera_info', 'sensor_msgs/msg/CameraInfo',
                                     typestore=store)
        for i in progress(range(frames), total=frames, desc='write input bag'):
            frame = rendered[i % len(rendered)]
            stamp = 1_000_000_000 + i * 33_333_333
            header = t['std_msgs/msg/Header'](
                stamp=t['builtin_interfaces/msg/Time'](sec=stamp // 10**9,
                                                       nanosec=stamp % 10**9),
                frame_id='camera_optical_frame')
            rgb = np.ascontiguousarray(frame.image)
            msg = t['sensor_msgs/msg/Image'](header=header, height=height, width=width,
                                             encoding='rgb8', is_bigendian=0, step=width * 3,
                                             data=rgb.reshape(-1))
            w.write(image_conn, stamp, store.serialize_cdr(msg, image_conn.msgtype))
            # One CameraInfo for the whole bag, as from a real camera: the projection's
            # lookup table is built once, as in the node.
            k = rendered[0].intrinsics.k
            p = np.array([k[0, 0], 0, k[0, 2], 0, 0, k[1, 1], k[1, 2], 0, 0, 0, 1, 0],
                         np.float64)
            roi = t['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0,
                                                        width=0, do_rectify=False)
            info = t['sensor_msgs/msg/CameraInfo'](
                header=header, height=height, width=width, distortion_model='plumb_bob',
                d=np.zeros(5), k=k.reshape(-1).astype(np.float64), r=np.eye(3).reshape(-1), p=p,
                binning_x=0, binning_y=0, roi=roi)
            w.write(info_conn, stamp - 1000, store.serialize_cdr(info, info_conn.msgtype))
    return rendered


def run_bag(in_path, out_path, model, threads, jobs, keep, compression='zstd',
            compress='masks'):
    """Run ``bag`` in a child process; return its frames, seconds, fps, RSS samples, bytes."""
    cmd = [sys.executable, '-m', 'freespace_seg', 'bag', in_path, out_path, '--overwrite',
           '--model', model, '--num-threads', str(threads), '--jobs', str(jobs),
           '--keep', keep, '--compression', compression, '--compress', compress]
    samples = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started = time.monotonic()

    def sample():
        while proc.poll() is None:
            rss = proc_rss_mb(proc.pid)
            # A Python interpreter running `bag` holds far more than 1 MiB; less (or no VmRSS
            # line) is the child inside exec or exiting with its memory already released: not
            # a sample of the run.
            if rss is not None and rss >= 1.0:
                samples.append((time.monotonic() - started, rss))
            # Often at first, so that a run of a second still has samples after its tenth.
            time.sleep(0.05 if time.monotonic() - started < 2.0 else 0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = proc.communicate()[0]
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f'bag exited {proc.returncode}: {output.strip()[-500:]}')
    found = SUMMARY.search(output)
    if not found:
        raise RuntimeError(f'bag printed no summary: {output.strip()[-500:]}')
    frames, seconds, fps = int(found.group(1)), float(found.group(2)), float(found.group(3))
    size = sum(os.path.getsize(os.path.join(out_path, f)) for f in os.listdir(out_path))
    return {'frames': frames, 'seconds': seconds, 'fps': fps, 'rss': samples, 'bytes': size,
            'command': ' '.join(['bag', 'IN', 'OUT'] + cmd[6:])}


def rss_span(samples):
    """Return (RSS at a tenth of the run, peak, at the end) in MiB, or Nones."""
    if not samples:
        return None, None, None
    end = samples[-1][0]
    after = [rss for t, rss in samples if t >= 0.1 * end] or [samples[-1][1]]
    return after[0], max(after), samples[-1][1]


def pipeline_fps(model, threads, frames, seconds):
    """``bench``'s pipeline row on ``frames`` (its Frames): frames/s of the node's work."""
    from freespace_seg.tools.bench.engine import measure_pipeline

    return measure_pipeline(model, threads, frames, seconds)['fps']


def resolved_model(model, threads):
    """Return the model file ``bag`` loads for ``--model`` (the packaged INT8 one on the CPU)."""
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model or None, 'onnxruntime', threads)
    try:
        return pipe.card.model_path
    finally:
        pipe.close()


def report(rows, pipeline_before, pipeline_after, args, model):
    """Return the Markdown lines of the result."""
    pipeline = min(pipeline_before, pipeline_after)
    body = []
    for name, r in rows:
        tenth, peak, end = rss_span(r['rss'])
        body.append([name, number(r['fps'], 1), number(r['seconds'], 1),
                     number(r['fps'] / pipeline, 2) if pipeline else '-',
                     number(r['bytes'] / max(1, r['frames']) / 1e6, 2),
                     number(tenth, 1), number(peak, 1), number(end, 1)])
    body.append(['pipeline row (before, after)',
                 f'{number(pipeline_before, 1)}, {number(pipeline_after, 1)}', '-', '1.00',
                 '-', '-', '-', '-'])
    load = ', '.join(f'{v:.2f}' for v in os.getloadavg())
    lines = [f'{args.frames} frames, rgb8 {args.width}x{args.height} with CameraInfo, MCAP; '
             f'model {os.path.basename(model)}, {args.num_threads} ONNX Runtime thread(s) in '
             f'all; bag --keep {args.keep}; load average at the end {load}', '']
    lines += table(['run', 'frames/s', 'seconds', 'against the pipeline (the lower of its two)',
                    'MB written a frame', 'RSS MiB at 10 %', 'RSS MiB peak after 10 %',
                    'RSS MiB at the end'],
                   body)
    return lines


def _writer_messages(store, width, height, seed):
    """
    Return (header, the input's CDR, [(output, encoding, array)]) of one 'frame'.

    The camera image is noise (it does not compress, as a noisy camera's); the class mask is
    a floor below 45 % of the height with blocked boxes on it, coloured as the node colours it.
    """
    import numpy as np

    from freespace_seg.perception.postprocess import colorize, overlay, palette_lut

    t = store.types
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    mask = np.zeros((height, width), np.uint8)
    mask[int(0.45 * height):] = 1
    for _ in range(5):
        y, x = rng.integers(0, height), rng.integers(0, width)
        mask[y:y + height // 8, x:x + width // 10] = 0
    colored = colorize(mask, palette_lut([(0, 0, 0), (0, 255, 0)]))
    header = t['std_msgs/msg/Header'](stamp=t['builtin_interfaces/msg/Time'](sec=1, nanosec=0),
                                      frame_id='camera_optical_frame')
    raw = store.serialize_cdr(t['sensor_msgs/msg/Image'](
        header=header, height=height, width=width, encoding='rgb8', is_bigendian=0,
        step=width * 3, data=rgb.reshape(-1)), 'sensor_msgs/msg/Image')
    outputs = [('segmentation/mask', 'mono8', mask),
               ('segmentation/colored_mask', 'rgb8', colored),
               ('segmentation/overlay', 'rgb8', overlay(rgb, colored, 0.5)),
               ('free_space/mask', 'mono8', mask * 255)]
    return header, raw, outputs


def time_writer(kind, path, frames, store, messages):
    """
    Write ``frames`` frames of ``messages`` with one writer; return (wall s, CPU s, bytes).

    ``kind`` 'rosbags': ``serialize_cdr`` and rosbags' Writer, as ``bag`` wrote first;
    'plain': :func:`image_cdr` and :class:`BagWriter` through the page cache, without
    compression (the same bytes as rosbags'); 'bag': as ``bag`` writes now, with O_DIRECT
    where the file system allows it and the masks' chunks zstd-compressed. CPU seconds are
    the process's (user and system), which count while other work shares the machine.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    from freespace_seg.tools.bag import compress_topic
    from freespace_seg.tools.bag_writer import BagWriter, image_cdr

    header, raw, outputs = messages
    Image = store.types['sensor_msgs/msg/Image']

    def rosbags_image(encoding, array):
        channels = 1 if array.ndim == 2 else array.shape[2]
        return store.serialize_cdr(Image(header=header, height=array.shape[0],
                                         width=array.shape[1], encoding=encoding,
                                         is_bigendian=0, step=array.shape[1] * channels,
                                         data=array.reshape(-1)), 'sensor_msgs/msg/Image')

    shutil.rmtree(path, ignore_errors=True)
    if kind == 'rosbags':
        writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    elif kind == 'plain':
        writer = BagWriter(path, version=9, storage_plugin=StoragePlugin.MCAP, direct_io=False)
    else:
        writer = BagWriter(path, version=9, storage_plugin=StoragePlugin.MCAP,
                           chunk_compression='zstd',
                           compress_topic=compress_topic('masks', ['/camera/image_raw'],
                                                         '/camera'))
    wall, cpu = time.perf_counter(), time.process_time()
    writer.open()
    image = writer.add_connection('/camera/image_raw', 'sensor_msgs/msg/Image',
                                  typestore=store)
    conns = [writer.add_connection(f'/camera/{name}', 'sensor_msgs/msg/Image',
                                   typestore=store) for name, _, _ in outputs]
    for i in range(frames):
        stamp = 1_000_000_000 + i * 33_333_333
        writer.write(image, stamp, raw)
        for conn, (_, encoding, array) in zip(conns, outputs):
            writer.write(conn, stamp, rosbags_image(encoding, array) if kind == 'rosbags'
                         else image_cdr(header, encoding, array))
    writer.close()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    shutil.rmtree(path, ignore_errors=True)
    return wall, cpu, size


def run_writer_only(args):
    """``--writer-only``: the three writers, alternating; the table's lines."""
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_KILTED)
    messages = _writer_messages(store, args.width, args.height, args.seed)
    os.makedirs(args.work_dir, exist_ok=True)
    path = os.path.join(args.work_dir, 'writer')
    best = {}
    for repeat in range(args.repeats):
        for kind in ('rosbags', 'plain', 'bag'):
            wall, cpu, size = time_writer(kind, path, args.frames, store, messages)
            print(f'bench-bag: {kind} writer, run {repeat + 1}: {1000 * cpu / args.frames:.2f} '
                  f'ms CPU, {1000 * wall / args.frames:.2f} ms wall a frame', flush=True)
            old = best.get(kind, (float('inf'), float('inf'), size))
            best[kind] = (min(old[0], wall), min(old[1], cpu), size)
    load = ', '.join(f'{v:.2f}' for v in os.getloadavg())
    names = {'rosbags': 'rosbags (serialize_cdr, its Writer)',
             'plain': 'BagWriter through the page cache, no compression (image_cdr)',
             'bag': 'bag (BagWriter, O_DIRECT, masks zstd)'}
    body = [[names[kind],
             number(1000 * cpu / args.frames, 2), number(args.frames / cpu, 1),
             number(1000 * wall / args.frames, 2), number(size / args.frames / 1e6, 2)]
            for kind, (wall, cpu, size) in best.items()]
    lines = [f'writer alone: {args.frames} frames of rgb8 {args.width}x{args.height} input and '
             f'the four outputs, MCAP in {args.work_dir}; best of {args.repeats} runs each; '
             f'load average at the end {load}', '']
    return lines + table(['writer', 'CPU ms a frame', 'frames/s of CPU', 'wall ms a frame',
                          'MB a frame'], body)


def run(args):
    if args.writer_only:
        if args.frames < 1 or args.repeats < 1:
            print('bench-bag: --frames and --repeats must be >= 1', file=sys.stderr)
            return 2
        lines = run_writer_only(args)
        print('\n'.join(lines))
        if args.out:
            with open(args.out, 'w') as f:
                f.write('\n'.join(lines) + '\n')
        return 0
    if args.frames < 1 or args.width < 16 or args.height < 16 or args.scenes < 1:
        print('bench-bag: --frames, --scenes must be >= 1 and --width, --height >= 16',
              file=sys.stderr)
        return 2
    try:
        jobs_list = [int(v) for v in args.jobs.split(',') if v.strip()]
    except ValueError:
        jobs_list = []
    if not jobs_list or min(jobs_list) < 1:
        print(f'bench-bag: --jobs wants positive integers, got {args.jobs!r}', file=sys.stderr)
        return 2
    from freespace_seg.tools.bag import COMPRESS_SCOPES
    from freespace_seg.tools.bag_writer import CHUNK_COMPRESSIONS

    compressions = [v.strip() for v in args.compression.split(',') if v.strip()]
    scopes = [v.strip() for v in args.compress.split(',') if v.strip()]
    if not compressions or not set(compressions) <= set(CHUNK_COMPRESSIONS) or not scopes or \
            not set(scopes) <= set(COMPRESS_SCOPES):
        print(f'bench-bag: --compression wants {", ".join(CHUNK_COMPRESSIONS)} and --compress '
              f'masks or all, got {args.compression!r} and {args.compress!r}', file=sys.stderr)
        return 2
    # 'none' compresses nothing, whatever the scope: run it once
    variants = [(c, s) for c in compressions for s in (scopes if c != 'none' else scopes[:1])]
    os.makedirs(args.work_dir, exist_ok=True)
    in_path = os.path.join(args.work_dir, 'in')
    out_path = os.path.join(args.work_dir, 'out')
    try:
        shutil.rmtree(in_path, ignore_errors=True)
        model = resolved_model(args.model, args.num_threads)
        print(f'bench-bag: writing {args.frames} frames to {in_path}', flush=True)
        write_input_bag(in_path, args.frames, args.width, args.height, args.scenes, args.seed)
        from freespace_seg.tools.bench.engine import Frames
        # bench's frames for the pipeline row, rendered once for both of its measurements
        frames = Frames(min(args.scenes, 6), args.width, args.height, args.seed)
        print('bench-bag: pipeline row (before)', flush=True)
        before = pipeline_fps(model, args.num_threads, frames, args.pipeline_seconds)
        rows = []
        for jobs in jobs_list:
            for compression, scope in variants:
                name = f'bag --jobs {jobs} --compression {compression}' + \
                    (f' --compress {scope}' if compression != 'none' else '')
                print(f'bench-bag: {name}', flush=True)
                rows.append((name, run_bag(in_path, out_path, model, args.num_threads, jobs,
                                           args.keep, compression, scope)))
                print(f'bench-bag: {rows[-1][1]["fps"]:.1f} frames/s', flush=True)
        print('bench-bag: pipeline row (after)', flush=True)
        after = pipeline_fps(model, args.num_threads, frames, args.pipeline_seconds)
    except RuntimeError as e:
        print(f'bench-bag: error: {e}', file=sys.stderr)
        return 1
    finally:
        if not args.keep_bags:
            shutil.rmtree(in_path, ignore_errors=True)
            shutil.rmtree(out_path, ignore_errors=True)
    lines = report(rows, before, after, args, model)
    print('\n'.join(lines))
    if args.out:
        with open(args.out, 'w') as f:
            f.write('\n'.join(lines) + '\n')
    return 0
