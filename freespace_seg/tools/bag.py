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
``python -m freespace_seg bag IN OUT``: segment the images of a recorded rosbag2 offline.

IN is a rosbag2 directory (MCAP or sqlite3 storage, with or without ``metadata.yaml``: a
directory without it is read through its single ``.mcap`` or ``.db3`` file) or one ``.mcap``
or ``.db3`` file. The bag is read and OUT written by the ``rosbags`` library, whose own
typestore (de)serializes the messages: no ROS installation and no rclpy are needed, and bags
of ROS 2 Humble through Kilted read alike (sensor_msgs/Image, CompressedImage, CameraInfo,
LaserScan and nav_msgs/OccupancyGrid have the same layout in all of them). OUT's MCAP file
is written by :class:`~freespace_seg.tools.bag_writer.BagWriter`, rosbags' Writer with a
storage that copies no image (the same file, byte for byte; see that module).

Each frame of the chosen image topic (sensor_msgs/Image or CompressedImage) goes through the
node's frame path, :class:`~freespace_seg.ground.frame.FrameProcessor` (the same
:class:`~freespace_seg.perception.pipeline.SegmentationPipeline`), and OUT gets the node's
outputs under the image topic's namespace (``/cam/image_raw`` ->
``/cam/segmentation/mask``, ``/cam/segmentation/colored_mask``, ``/cam/segmentation/overlay``,
``/cam/free_space/mask``, optionally ``/cam/segmentation/confidence`` (``--confidence``), and
with a CameraInfo topic in the bag ``/cam/free_space/grid`` and ``/cam/free_space/scan``),
each with the input's header (the grid and scan in ``--base-frame``) and written at the input
message's bag time, beside the input topics kept (``--keep``). The grid and the scan are
the node's: one :meth:`GroundProjector.ground` under the node's :class:`GridRule`
(``--grid-*``, the node's ``grid_*`` parameters: ``ground.frame.GROUND_PARAMS``), the scan by
:mod:`freespace_seg.ground.scan`, with the CameraInfo the node would match
(:class:`~freespace_seg.ground.frame.CameraInfoHistory`). Messages stream one
at a time, so memory does not grow with the bag. OUT is written under a temporary name beside
it and renamed at the end: a failure never leaves a half-written OUT.

``--export-labels DIR`` writes every ``--label-every``-th frame (or, with
``--label-least-confident K``, the K of them the model is least sure of) as ``<stem>.png``
(the camera image) and ``<stem>_mask.png`` (the model's answer to correct: see
:func:`freespace_seg.tools.labels.write_label_pair`), the folder format of ``finetune --images``
and ``eval --images``.
"""

import argparse
import collections
import concurrent.futures
import glob
import os
import queue
import shutil
import sys
import time

from freespace_seg.common.progress import Progress
from freespace_seg.ground.agreement import odom_pose, PoseHistory
from freespace_seg.ground.frame import (CameraInfoHistory, FrameProcessor, GROUND_PARAMS,
                                        GroundParams, TOPICS)
from freespace_seg.nodes.params import SEGMENTATION_PARAMS, spec_by_name, validate
from freespace_seg.perception.engines import BACKENDS
from freespace_seg.perception.image_codec import ImageCodecError, msg_to_rgb
from freespace_seg.perception.pipeline import SegmentationPipeline
from freespace_seg.tools.labels import add_label_arguments, LabelExport
import numpy as np

IMAGE_TYPES = ('sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage')
INFO_TYPE = 'sensor_msgs/msg/CameraInfo'
ODOM_TYPE = 'nav_msgs/msg/Odometry'
#: the images written for every frame (FrameOutputs names), in this order
IMAGES = ('mask', 'colored', 'overlay', 'free')
#: output topics, relative to the image topic's namespace, as the node names them
OUTPUTS = tuple(TOPICS[name] for name in IMAGES)
GRID_OUTPUT = TOPICS['grid']
SCAN_OUTPUT = TOPICS['scan']
CONFIDENCE_OUTPUT = TOPICS['confidence']
#: values of --compress
COMPRESS_SCOPES = ('masks', 'all')
#: distro of a bag's metadata -> rosbags typestore
TYPESTORES = {'humble': 'ROS2_HUMBLE', 'iron': 'ROS2_IRON', 'jazzy': 'ROS2_JAZZY',
              'kilted': 'ROS2_KILTED'}


class BagError(Exception):
    """The input or output cannot be used; the message says why (one line)."""


def _defaults():
    return {spec.name: spec.default for spec in SEGMENTATION_PARAMS}


def add_arguments(parser):
    """Add the options of ``bag``."""
    from freespace_seg.tools.bag_writer import CHUNK_COMPRESSIONS   # needs rosbags

    d = _defaults()
    parser.add_argument('input', metavar='IN',
                        help='rosbag2 directory (mcap or sqlite3) or a single .mcap/.db3 file')
    parser.add_argument('output', metavar='OUT', help='rosbag2 directory to write (new)')
    parser.add_argument('--image-topic', default='',
                        help='image topic to segment (default: the only image topic; with '
                             'several, the one with the most messages)')
    parser.add_argument('--camera-info-topic', default='',
                        help='CameraInfo topic for the grid (default: camera_info beside the '
                             'image topic, else the only CameraInfo topic)')
    parser.add_argument('--odom-topic', default='',
                        help='nav_msgs/Odometry topic for --grid-agreement-frames and '
                             '--grid-occlusion-memory (default: the only Odometry topic, else '
                             'the one with the most messages); read only when one of them is '
                             'on, which runs one worker')
    parser.add_argument('--keep', default='all', choices=('all', 'image', 'none'),
                        help='input topics copied to OUT: all (default), the image topic '
                             'and its CameraInfo only, or none')
    parser.add_argument('--storage', default='mcap', choices=('mcap', 'sqlite3'),
                        help='storage of OUT (mcap)')
    parser.add_argument('--compression', default='zstd', choices=CHUNK_COMPRESSIONS,
                        help='MCAP chunk compression of OUT (zstd; what ros2 bag, Foxglove, '
                             'rosbags and mcap read)')
    parser.add_argument('--compress', default='masks', choices=COMPRESS_SCOPES,
                        help='what is compressed: masks (default: the class, colored, free '
                             'and confidence masks, grids, scans and the input topics that are '
                             'not images; the camera images and the overlay, which shrink 2-3 '
                             'times at most for much more CPU, are not), or all')
    parser.add_argument('--no-direct-io', action='store_true',
                        help='write the MCAP file through the page cache (by default it is '
                             'written with O_DIRECT where the file system allows it)')
    parser.add_argument('--overwrite', action='store_true', help='replace OUT if it exists')
    parser.add_argument('--model', default='', help='ONNX model (default: the packaged one)')
    parser.add_argument('--backend', default='auto', choices=BACKENDS)
    parser.add_argument('--num-threads', type=int, default=0,
                        help='ONNX Runtime threads in all, shared by the workers (0: one per '
                             'CPU)')
    parser.add_argument('--jobs', type=int, default=0,
                        help='frames segmented at once, each by its own worker and copy of '
                             'the model (0: 2 on the CPU where there are 2 threads or more, '
                             'else 1); the output does not depend on it')
    parser.add_argument('--alpha', type=float, default=d['overlay_alpha'],
                        help=f'overlay weight ({d["overlay_alpha"]})')
    parser.add_argument('--no-grid', action='store_true',
                        help='do not write free_space/grid even with CameraInfo in the bag')
    parser.add_argument('--no-scan', action='store_true',
                        help='do not write free_space/scan even with CameraInfo in the bag')
    parser.add_argument('--confidence', action='store_true',
                        help='also write segmentation/confidence (mono8, P(free) x 255)')
    for name in GROUND_PARAMS:   # the mount, grid, grid rule, scan and horizon, as the node's
        if name in ('grid_origin', 'mask_horizon'):
            continue
        kind = int if type(d[name]) is int else float
        parser.add_argument('--' + name.replace('_', '-'), type=kind, default=d[name],
                            help=f'the node parameter {name} ({d[name]})')
    parser.add_argument('--mask-horizon', action=argparse.BooleanOptionalAction,
                        default=d['mask_horizon'],
                        help='the node parameter mask_horizon: with a CameraInfo topic, the '
                             'masks are blocked above the horizon (--horizon-margin-deg above '
                             "it); --no-mask-horizon keeps the model's masks (on)")
    parser.add_argument('--grid-origin', type=float, nargs=2, default=list(d['grid_origin']),
                        metavar=('X', 'Y'),
                        help=f'the node parameter grid_origin ({d["grid_origin"]})')
    parser.add_argument('--base-frame', default=d['base_frame'],
                        help=f'frame_id of the grid ({d["base_frame"]})')
    parser.add_argument('--max-frames', type=int, default=0,
                        help='stop after this many frames (0: all)')
    add_label_arguments(parser)


def namespace_of(topic):
    """Return the namespace of an image topic: ``/cam/image_raw[/compressed]`` -> ``/cam``."""
    name = topic.rstrip('/')
    if name.endswith('/compressed'):
        name = name[:-len('/compressed')]
    return name.rsplit('/', 1)[0] if '/' in name else ''


def compress_topic(scope, image_topics, ns):
    """
    Return BagWriter's ``compress_topic`` for ``--compress``: None (every topic) or a test.

    'masks' leaves the camera images (raw, or JPEG/PNG already compressed) and the overlay
    under ``ns`` uncompressed: they shrink 2-3 times at most for far more CPU.
    """
    if scope == 'all':
        return None
    photos = set(image_topics) | {f'{ns}/segmentation/overlay'}
    return lambda topic: topic not in photos


def _storage_file(path):
    """Return the path to open: for a directory without metadata.yaml its one storage file."""
    if not os.path.isdir(path) or os.path.isfile(os.path.join(path, 'metadata.yaml')):
        return path
    files = sorted(glob.glob(os.path.join(path, '*.mcap')) +
                   glob.glob(os.path.join(path, '*.db3')))
    if len(files) == 1:
        return files[0]
    if not files:
        raise BagError(f'{path}: no metadata.yaml and no .mcap or .db3 file: not a rosbag2')
    raise BagError(f'{path}: no metadata.yaml and {len(files)} storage files; give one file')


def open_reader(path):
    """Open IN with rosbags; raise BagError with one line for anything unreadable."""
    from rosbags.rosbag2 import Reader

    if not os.path.exists(path):
        raise BagError(f'{path}: no such bag')
    path = _storage_file(path)
    try:
        reader = Reader(path)
        reader.open()
    except Exception as e:  # noqa: B902 - any failure of a foreign file is the file's
        raise BagError(f'{path}: cannot read as a rosbag2 ({_one_line(e)})') from None
    return reader


def _one_line(e):
    text = ' '.join(str(e).split()) or type(e).__name__
    return text if len(text) < 200 else text[:197] + '...'


def typestore_for(reader):
    """Return the rosbags typestore for the bag's distro (Kilted when it does not say)."""
    from rosbags.typesys import get_typestore, Stores

    distro = (getattr(reader, 'ros_distro', None) or '').lower()
    return get_typestore(getattr(Stores, TYPESTORES.get(distro, 'ROS2_KILTED')))


def choose_topics(reader, image_topic='', info_topic=''):
    """Return (image connection topic, its type, CameraInfo topic or '')."""
    topics = {c.topic: c.msgtype for c in reader.connections}
    counts = collections.Counter()
    for c in reader.connections:
        counts[c.topic] += c.msgcount
    images = [t for t, ty in topics.items() if ty in IMAGE_TYPES]
    if image_topic:
        if image_topic not in topics:
            raise BagError(f'no topic {image_topic} in the bag (image topics: '
                           f'{", ".join(sorted(images)) or "none"})')
        if topics[image_topic] not in IMAGE_TYPES:
            raise BagError(f'{image_topic} is {topics[image_topic]}, not an image topic')
    elif not images:
        raise BagError('no image topics in the bag (sensor_msgs/Image or CompressedImage); '
                       f'topics: {", ".join(sorted(topics)) or "none"}')
    else:
        image_topic = max(sorted(images), key=lambda t: counts[t])
    infos = [t for t, ty in topics.items() if ty == INFO_TYPE]
    if info_topic:
        if topics.get(info_topic) != INFO_TYPE:
            raise BagError(f'no CameraInfo topic {info_topic} in the bag')
    else:
        beside = namespace_of(image_topic) + '/camera_info'
        info_topic = beside if beside in infos else (infos[0] if len(infos) == 1 else '')
    return image_topic, topics[image_topic], info_topic


def choose_odom_topic(reader, odom_topic=''):
    """Return the Odometry topic for the odom-frame grid filters ('' when the bag has none)."""
    counts = collections.Counter()
    for c in reader.connections:
        if c.msgtype == ODOM_TYPE:
            counts[c.topic] += c.msgcount
    if odom_topic:
        if odom_topic not in counts:
            raise BagError(f'no nav_msgs/Odometry topic {odom_topic} in the bag')
        return odom_topic
    return counts.most_common(1)[0][0] if counts else ''


def _add_copy(writer, conn, store):
    """Add an output connection for an input topic copied as raw bytes; None if impossible."""
    msgdef, digest = conn.msgdef.data, conn.digest
    try:
        if msgdef and digest:
            return writer.add_connection(conn.topic, conn.msgtype, msgdef=msgdef, rihs01=digest,
                                         offered_qos_profiles=conn.ext.offered_qos_profiles
                                         if hasattr(conn.ext, 'offered_qos_profiles') else ())
        if conn.msgtype in store.types:
            return writer.add_connection(conn.topic, conn.msgtype, typestore=store)
    except Exception:  # noqa: B902 - a topic we cannot describe is skipped, not fatal
        return None
    return None


class _Summary:
    """What the run did, for the closing lines."""

    def __init__(self):
        self.frames = 0
        self.skipped = collections.Counter()
        self.free = []       # (bag time ns, free share)
        self.labels = 0
        self.dropped_topics = []
        self.grid = 0
        self.scan = 0
        self.seconds = 0.0
        self.pipeline_seconds = 0.0   # SegmentationPipeline.segment alone, all workers
        self.workers = ''
        self.agreed = 0               # grids filtered by the agreement or occlusion memory
        self.agreement_note = ''

    def lines(self, image_topic, grid_note):
        fps = self.frames / self.seconds if self.seconds > 0 else 0.0
        out = [f'{image_topic}: {self.frames} frames segmented in {self.seconds:.1f} s '
               f'({fps:.1f} frames/s), {sum(self.skipped.values())} skipped']
        if self.frames:
            seg = 1000.0 * self.pipeline_seconds / self.frames
            out.append(f'per frame: {1000.0 * self.seconds / self.frames:.1f} ms with '
                       f'{self.workers or "1 worker"}; {seg:.1f} ms of worker time in the '
                       'segmentation pipeline')
        for why, n in self.skipped.most_common():
            out.append(f'  skipped {n}: {why}')
        if self.free:
            share = np.array([f for _, f in self.free])
            out.append(f'free pixels: mean {share.mean():.1%}, min {share.min():.1%}, '
                       f'max {share.max():.1%}')
            bins = np.array_split(share, min(10, len(share)))
            out.append('free pixels over time (10 equal parts of the frames): ' +
                       ' '.join(f'{b.mean():.0%}' for b in bins))
        out.append(grid_note if not self.grid else f'free_space/grid: {self.grid} grids')
        if self.agreement_note:
            out.append(self.agreement_note)
        if self.scan:
            out.append(f'free_space/scan: {self.scan} scans')
        if self.labels:
            out.append(f'exported {self.labels} label pairs')
        for topic in self.dropped_topics:
            out.append(f'not copied (no message definition): {topic}')
        return out


def process_bag(args, out=sys.stdout, progress_file=None):
    """Segment IN into a new bag at a temporary path, then rename it to OUT."""
    from rosbags.rosbag2 import StoragePlugin

    from freespace_seg.tools.bag_writer import BagWriter

    if os.path.lexists(args.output) and not args.overwrite:
        raise BagError(f'{args.output} exists; pass --overwrite to replace it')
    for name in ('grid_min_obstacle_run', 'grid_cut_confidence', 'grid_mark_confidence',
                 'grid_free_confidence', 'grid_behind_confidence'):
        if not 0.0 <= getattr(args, name) <= 1.0:
            raise BagError(f'--{name.replace("_", "-")} must be in [0, 1], got '
                           f'{getattr(args, name)}')
    try:
        labels = LabelExport.from_args(args)
    except ValueError as e:
        raise BagError(str(e)) from None
    if args.scan_angle_increment <= 0.0:
        raise BagError('--scan-angle-increment must be positive')
    why = validate(spec_by_name(SEGMENTATION_PARAMS, 'horizon_margin_deg'),
                   args.horizon_margin_deg)
    if why is not None:
        raise BagError('--' + why.replace('_', '-'))
    params = _defaults()
    params.update({name: getattr(args, name) for name in GROUND_PARAMS})
    try:
        ground = GroundParams.from_params(params)
    except ValueError as e:
        raise BagError(str(e)) from None
    reader = open_reader(args.input)
    # OUT is written as <partial>/<OUT's name> (so its storage file is <OUT's name>.mcap or
    # .db3, as rosbags names it after the directory) and moved to OUT at the end.
    out_name = os.path.basename(os.path.abspath(args.output))
    partial = os.path.join(os.path.dirname(os.path.abspath(args.output)) or '.',
                           f'.{out_name}.partial-{os.getpid()}')
    tmp = os.path.join(partial, out_name)
    try:
        image_topic, image_type, info_topic = choose_topics(reader, args.image_topic,
                                                            args.camera_info_topic)
        args.odom_topic_used = ''
        if ground.uses_odom:
            # Each grid is filtered by the grids before it: one worker keeps their order.
            args.odom_topic_used = choose_odom_topic(reader, args.odom_topic)
            args.jobs = 1
        store = typestore_for(reader)
        pipes, threads = open_pipelines(args)
        ns = namespace_of(image_topic)
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        images = [c.topic for c in reader.connections if c.msgtype in IMAGE_TYPES]
        writer = BagWriter(tmp, version=9, storage_plugin=StoragePlugin[args.storage.upper()],
                           chunk_compression=args.compression,
                           compress_topic=compress_topic(args.compress, images, ns),
                           direct_io=not args.no_direct_io)
        writer.open()
        try:
            summary = _run(reader, writer, store, pipes, args, image_topic, info_topic, ns,
                           ground, labels, progress_file)
            summary.workers = _workers_note(pipes, threads)
        finally:
            for pipe in pipes:
                pipe.close()
            writer.close()
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        reader.close()
    if summary.frames == 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise BagError(f'{image_topic}: no frame could be segmented (' +
                       '; '.join(f'{n}x {w}' for w, n in summary.skipped.most_common(3)) + ')')
    if os.path.lexists(args.output):
        if os.path.isdir(args.output) and not os.path.islink(args.output):
            shutil.rmtree(args.output)
        else:
            os.remove(args.output)
    os.rename(tmp, args.output)
    os.rmdir(partial)
    if not info_topic:
        note = 'free_space/grid: not written (no CameraInfo topic in the bag)'
    elif args.no_grid:
        note = 'free_space/grid: not written (--no-grid)'
    else:
        note = f'free_space/grid: none written (no usable CameraInfo on {info_topic})'
    if ground.uses_odom:
        names, what = [], []
        if ground.agreement.active:
            names.append('grid agreement')
            what.append(f'{ground.agreement.needed} of the last {ground.agreement.frames} grids')
        if ground.occlusion.active:
            names.append('occlusion memory')
            what.append(f'obstacles of the last {ground.occlusion.memory:g} s')
        summary.agreement_note = (
            f'{" and ".join(names)} ({", ".join(what)}, odometry '
            f'{args.odom_topic_used or "none in the bag"}): applied to '
            f'{summary.agreed} grids, {summary.grid - summary.agreed} passed unfiltered '
            '(no odometry within 0.2 s)')
    for line in summary.lines(image_topic, note):
        print(line, file=out)
    print(f'wrote {args.output} ({args.storage})', file=out)
    return summary


def worker_plan(jobs, num_threads, cpus):
    """
    Return ``(workers, ONNX Runtime threads per worker)`` for ``--jobs`` and ``--num-threads``.

    The threads are shared out: ``num_threads`` (0: one per CPU) in all, at least one per
    worker. ``jobs`` 0 picks two workers where there are two threads or more: on a small CPU
    two frames at once keep both cores busy through the parts of a frame that run on one.
    """
    total = int(num_threads) if num_threads > 0 else max(1, int(cpus))
    workers = int(jobs) if jobs > 0 else max(1, min(2, total))
    return workers, max(1, total // workers)


def open_pipelines(args):
    """
    Load one pipeline per worker (see :func:`worker_plan`); return ``(pipelines, threads)``.

    With ``--jobs 0`` (auto) more than one worker is used only on ONNX Runtime's CPU
    backend: a GPU engine runs one frame at a time anyway, and each worker would hold its
    own copy of the model on the device.
    """
    workers, threads = worker_plan(args.jobs, args.num_threads, os.cpu_count() or 1)
    first = SegmentationPipeline(args.model or None, args.backend,
                                 threads if workers > 1 else args.num_threads)
    if args.jobs <= 0 and first.engine.backend != 'onnxruntime':
        workers = 1
    pipes = [first]
    try:
        for _ in range(workers - 1):
            pipes.append(SegmentationPipeline(first.card.model_path, first.engine.backend,
                                              threads))
    except BaseException:
        for pipe in pipes:
            pipe.close()
        raise
    return pipes, (threads if workers > 1 else args.num_threads)


def _workers_note(pipes, threads):
    backend = pipes[0].engine.backend
    each = f', {threads} thread(s) each' if threads > 0 and backend == 'onnxruntime' else ''
    return f'{len(pipes)} worker{"s" if len(pipes) > 1 else ""} ({backend}{each})'


def _run(reader, writer, store, pipes, args, image_topic, info_topic, ns, ground, labels,
         progress_file):
    from freespace_seg.tools.bag_writer import OutputMessages, WriterThread

    outputs = OutputMessages(store)
    summary = _Summary()
    keep = {'all': None, 'image': {image_topic, info_topic}, 'none': set()}[args.keep]
    copies = {}
    for conn in reader.connections:
        if keep is None or conn.topic in keep:
            if conn.topic in {x.topic for x in copies.values()}:
                continue
            made = _add_copy(writer, conn, store)
            if made is None:
                summary.dropped_topics.append(conn.topic)
            else:
                copies[conn.id] = made
    # Copies of one topic over several connections share the first one's output connection.
    by_topic = {c.topic: c for c in copies.values()}
    names = OUTPUTS + ((CONFIDENCE_OUTPUT,) if args.confidence else ())
    out_conns = {name: writer.add_connection(f'{ns}/{name}', 'sensor_msgs/msg/Image',
                                             typestore=store) for name in names}
    if info_topic and not args.no_grid:
        out_conns[GRID_OUTPUT] = writer.add_connection(
            f'{ns}/{GRID_OUTPUT}', 'nav_msgs/msg/OccupancyGrid', typestore=store)
    if info_topic and not args.no_scan:
        out_conns[SCAN_OUTPUT] = writer.add_connection(
            f'{ns}/{SCAN_OUTPUT}', 'sensor_msgs/msg/LaserScan', typestore=store)
    workers = [_Worker(FrameProcessor(pipe, ground, alpha=args.alpha), outputs, args, names,
                       GRID_OUTPUT in out_conns, SCAN_OUTPUT in out_conns) for pipe in pipes]
    writes = WriterThread(writer, threaded=args.storage == 'mcap')
    try:
        return _frames_loop(reader, writes, store, workers, args, image_topic, info_topic,
                            labels, progress_file, summary, copies, by_topic, out_conns)
    finally:
        writes.close()


class _FrameResult:
    """What a worker made of one frame: its serialized outputs, or why it was skipped."""

    __slots__ = ('skip', 'writes', 'grid', 'scan', 'ground_skip', 'free_share', 'seconds',
                 'label', 'agreed')

    def __init__(self, skip=None):
        self.skip = skip
        self.writes = []          # (output name, serialized message), in the node's order
        self.grid = self.scan = False
        self.ground_skip = None
        self.free_share = 0.0
        self.seconds = 0.0        # in the segmentation pipeline
        self.label = None         # (rgb, free, confidence) of a label candidate
        self.agreed = False       # the grid was filtered by the agreement or occlusion memory


class _Worker:
    """
    Segments one frame at a time, with a :class:`FrameProcessor` (pipeline, projector) of its own.

    Everything of a frame that needs no other frame happens here: decoding the image, the
    frame's outputs (as the node makes them) and serializing each output. ONNX Runtime,
    OpenCV and most of numpy release the GIL, so ``--jobs`` workers in threads segment that
    many frames at once; :func:`_frames_loop` writes the results in frame order.
    """

    def __init__(self, frames, outputs, args, names, want_grid, want_scan):
        self.frames = frames
        self.outputs = outputs
        self.args = args
        self.names = names
        self.want = set(IMAGES) | ({'confidence'} if args.confidence else set()) | \
            ({'grid'} if want_grid else set()) | ({'scan'} if want_scan else set())

    def __call__(self, msg, info, label_candidate, label_confidence, odom=None):
        try:
            rgb = msg_to_rgb(msg)
        except ImageCodecError as e:
            return _FrameResult(_one_line(e))
        header, frame_id = msg.header, self.args.base_frame
        done = _FrameResult()
        want = self.want | ({'confidence'} if label_candidate and label_confidence else set())
        out = self.frames.process(rgb, want, info, odom=odom)
        done.seconds = sum(self.frames.pipeline.timings.values())
        done.agreed = bool(out.agreement or out.occlusion)
        images = {TOPICS[name]: (getattr(out, name), encoding) for name, encoding in
                  (('mask', 'mono8'), ('colored', 'rgb8'), ('overlay', 'rgb8'),
                   ('free', 'mono8'), ('confidence', 'mono8'))}
        for name in self.names:
            array, encoding = images[name]
            done.writes.append((name, self.outputs.image(array, encoding, header)))
        if out.ground_error is not None:
            done.ground_skip = ('no grid, scan or horizon cut: unusable CameraInfo: '
                                f'{_one_line(out.ground_error)}')
        elif out.has_ground:
            if 'grid' in want:
                done.writes.append((GRID_OUTPUT, self.outputs.grid(
                    out.grid, out.grid_spec, header, frame_id)))
                done.grid = True
            if 'scan' in want:
                done.writes.append((SCAN_OUTPUT, self.outputs.scan(
                    out.scan, out.scan_layout, header, frame_id)))
                done.scan = True
        done.free_share = float(np.count_nonzero(out.free)) / out.free.size
        if label_candidate:
            done.label = (rgb, out.free, out.confidence)
        return done


class _Now:
    """A result made at once, with a future's ``result()`` (one worker: no threads)."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _frames_loop(reader, writer, store, workers, args, image_topic, info_topic, labels,
                 progress_file, summary, copies, by_topic, out_conns):
    total = sum(c.msgcount for c in reader.connections if c.topic == image_topic)
    if args.max_frames > 0:
        total = min(total, args.max_frames) if total else args.max_frames
    infos = CameraInfoHistory()
    odom_topic = getattr(args, 'odom_topic_used', '')
    poses = PoseHistory(size=1000)
    want_ground = GRID_OUTPUT in out_conns or SCAN_OUTPUT in out_conns
    # The CameraInfo is read for the grid, the scan and the horizon cut of the masks.
    want_info = want_ground or args.mask_horizon

    def frames():
        """Yield the image topic's messages; copy the kept topics and collect CameraInfo."""
        seen = 0
        for conn, stamp, raw in reader.messages():
            target = copies.get(conn.id) or by_topic.get(conn.topic)
            if target is not None:
                writer.write(target, stamp, raw)
            if conn.topic == info_topic and want_info:
                try:
                    infos.add(store.deserialize_cdr(raw, INFO_TYPE))
                except Exception as e:  # noqa: B902 - a bad CameraInfo is skipped
                    summary.skipped[f'bad CameraInfo: {_one_line(e)}'] += 1
            elif odom_topic and conn.topic == odom_topic:
                try:
                    odom = store.deserialize_cdr(raw, ODOM_TYPE)
                except Exception as e:  # noqa: B902 - a bad Odometry is skipped
                    summary.skipped[f'bad Odometry: {_one_line(e)}'] += 1
                else:
                    poses.add(*odom_pose(odom))
            elif conn.topic == image_topic:
                if args.max_frames > 0 and seen >= args.max_frames:
                    return
                seen += 1
                yield seen - 1, conn, stamp, raw

    def finish(index, stamp, future):
        """Write one frame's outputs and count it; called in frame order."""
        done = future.result()
        if done.skip is not None:
            summary.skipped[done.skip] += 1
            return
        for name, data in done.writes:
            writer.write(out_conns[name], stamp, data)
        if done.ground_skip is not None:
            summary.skipped[done.ground_skip] += 1
        summary.grid += done.grid
        summary.agreed += done.agreed and done.grid
        summary.scan += done.scan
        summary.pipeline_seconds += done.seconds
        summary.frames += 1
        summary.free.append((stamp, done.free_share))
        if done.label is not None:
            labels.offer(index, f'{_stem(image_topic)}_{stamp:019d}', *done.label)

    idle = queue.SimpleQueue()
    for worker in workers:
        idle.put(worker)

    def segment(*task):
        worker = idle.get()
        try:
            return worker(*task)
        finally:
            idle.put(worker)

    pool = None
    if len(workers) > 1:
        pool = concurrent.futures.ThreadPoolExecutor(len(workers),
                                                     thread_name_prefix='bag-worker')
    # Frames in flight at most: every worker busy, and one more decoded and waiting.
    depth = len(workers) + 1
    pending = collections.deque()
    started = time.monotonic()
    bar = Progress(frames(), total=total or None, desc='bag', file=progress_file)
    try:
        for index, conn, stamp, raw in bar:
            elapsed = time.monotonic() - started
            bar.set_postfix(fps=summary.frames / elapsed if elapsed > 0 else 0.0,
                            skipped=sum(summary.skipped.values()))
            try:
                msg = store.deserialize_cdr(raw, conn.msgtype)
            except Exception as e:  # noqa: B902 - a message that does not deserialize
                summary.skipped[f'cannot deserialize {conn.msgtype}: {_one_line(e)}'] += 1
                continue
            # The CameraInfo is matched here, in bag order, as the node matches it.
            info = infos.match(msg.header) if want_info else None
            candidate = labels is not None and labels.is_candidate(index)
            odom = None
            if odom_topic:
                t_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                pose = poses.at(t_ns)
                odom = None if pose is None else (pose, t_ns * 1e-9)
            task = (msg, info, candidate, labels is not None and labels.wants_confidence, odom)
            pending.append((index, stamp, pool.submit(segment, *task) if pool is not None
                            else _Now(segment(*task))))
            while len(pending) > depth:
                finish(*pending.popleft())
        while pending:
            finish(*pending.popleft())
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    bar.close()
    summary.labels = labels.count if labels is not None else 0
    summary.seconds = time.monotonic() - started
    return summary


def _stem(topic):
    return topic.strip('/').replace('/', '_') or 'image'


def run(args):
    """Run ``bag``; a bad input or output is one line on stderr and exit status 1."""
    try:
        process_bag(args)
    except BagError as e:
        print(f'bag: error: {e}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('bag: interrupted; nothing written', file=sys.stderr)
        return 130
    except Exception as e:  # noqa: B902 - e.g. a bag truncated in the middle
        print(f'bag: error: {args.input}: {type(e).__name__}: {_one_line(e)}', file=sys.stderr)
        return 1
    return 0
