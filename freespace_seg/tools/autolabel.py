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
``python -m freespace_seg autolabel IN OUT``: label a recording from where the robot drove.

IN is a rosbag2 (directory with ``metadata.yaml``, or one ``.mcap``/``.db3`` file) with an
image topic (sensor_msgs/Image or CompressedImage), its CameraInfo, the robot's path
(nav_msgs/Odometry, or the ``odom`` -> ``base_link`` transforms on ``/tf``) and optionally
its bumps (irobot_create_msgs/HazardDetectionVector on ``/hazard_detection``, or a
std_msgs/Bool topic). Every frame (at most one per ``--min-interval`` s) is labelled by
:func:`freespace_seg.ground.autolabel.label_frame` and written to OUT as ``<stem>.png`` (the
image) and ``<stem>_mask.png`` (BGRA: 255 free, 0 blocked, alpha 0 unchecked), the folder
format that ``finetune --images`` and ``eval --images`` read. The camera mount comes from the
static TF (base_link -> the image's frame) when the bag has that chain, else from the
options named as the node's parameters (``--camera-height``, ``--camera-pitch``, ...).
``--grow`` spreads the free labels over floor of the same look where a model agrees
(:mod:`freespace_seg.ground.autolabel_grow`); ``--model-fill`` adds a model's very sure pixels.
``--parallax`` labels blocked what stands above the floor, from each frame's motion to the
next labelled one (:mod:`freespace_seg.ground.autolabel_parallax`; no model).

OUT is written under a temporary name beside it and renamed at the end: an error leaves
nothing. The summary says how many frames were labelled, the shares of free, blocked and
unchecked pixels, and how many frames were skipped and why (no pose at their time, a clock
jump, no CameraInfo, an image that does not decode). See docs/own_data.md.
"""

import collections
import math
import os
import shutil
import sys
import tempfile

import cv2
from freespace_seg.common.progress import Progress
from freespace_seg.ground.autolabel import (BLOCKED, CameraFloor, fill_confident, FREE,
                                            label_frame, relative_poses)
from freespace_seg.ground.autolabel_grow import grow_free
from freespace_seg.ground.autolabel_parallax import label_parallax, ParallaxConfig
from freespace_seg.ground.camera_info import intrinsics_from_camera_info_msg
from freespace_seg.ground.geometry import CameraMount
from freespace_seg.perception.image_codec import ImageCodecError, msg_to_rgb
from freespace_seg.tools.autolabel_inputs import (hazard_events, InputError, mount_from_tf,
                                                  read_inputs, stamp_s)
from freespace_seg.tools.autolabel_sim import add_rule_arguments, rule_config
from freespace_seg.tools.bag import BagError, choose_topics, open_reader, typestore_for
import numpy as np

#: the mount options, named as segmentation_node's parameters, with its defaults
MOUNT_PARAMS = (('camera_x', 0.0), ('camera_y', 0.0), ('camera_height', 0.25),
                ('camera_roll', 0.0), ('camera_pitch', 0.3), ('camera_yaw', 0.0))


def add_arguments(parser):
    parser.add_argument('input', metavar='IN', help='rosbag2 directory or .mcap/.db3 file')
    parser.add_argument('output', metavar='OUT', help='label folder to write (must not exist)')
    parser.add_argument('--overwrite', action='store_true', help='replace an existing OUT')
    parser.add_argument('--image-topic', default='',
                        help='image topic (default: the image topic with the most messages; '
                             'TurtleBot 4: /oakd/rgb/preview/image_raw)')
    parser.add_argument('--camera-info-topic', default='',
                        help='CameraInfo topic (default: camera_info beside the image topic, '
                             'or the only one)')
    parser.add_argument('--odom-topic', default='/odom',
                        help='nav_msgs/Odometry topic (/odom; else the only Odometry topic; '
                             'else the TF)')
    parser.add_argument('--tf-topic', default='/tf', help='TF topic (/tf)')
    parser.add_argument('--tf-static-topic', default='/tf_static',
                        help='static TF topic, for the camera mount (/tf_static)')
    parser.add_argument('--odom-frame', default='odom', help='odometry frame (odom)')
    parser.add_argument('--base-frame', default='base_link', help='robot frame (base_link)')
    parser.add_argument('--hazard-topic', default='/hazard_detection',
                        help='irobot_create_msgs/HazardDetectionVector or std_msgs/Bool topic '
                             '(/hazard_detection; a missing topic: no bump labels)')
    parser.add_argument('--hazard-zone-angle', type=float, default=20.0,
                        help='half angle (deg) around a Create 3 bumper zone (20)')
    for name, default in MOUNT_PARAMS:
        parser.add_argument('--' + name.replace('_', '-'), type=float, default=None,
                            help=f'camera mount, as the node parameter {name} ({default}); '
                                 'given: used instead of the TF')
    parser.add_argument('--min-interval', type=float, default=0.5,
                        help='label at most one frame per this many seconds (0.5; 0: all)')
    parser.add_argument('--max-gap', type=float, default=0.5,
                        help='a path gap longer than this (s) cuts the path (0.5)')
    parser.add_argument('--max-speed', type=float, default=2.0,
                        help='a path jump faster than this (m/s) is a teleport and cuts it (2)')
    parser.add_argument('--model-fill', type=float, default=0.0, metavar='P',
                        help='also label the unchecked pixels where the model is this sure '
                             '(P(free) >= P free, <= 1 - P blocked; e.g. 0.98; 0: off, the '
                             'default)')
    parser.add_argument('--grow', type=float, default=0.0, metavar='DE',
                        help='spread the free labels over floor of the same look: to '
                             'neighbouring superpixels whose mean L*a*b* colour differs by '
                             'less than DE, where the model says P(free) >= --grow-min-p-free '
                             '(e.g. 6; 0: off, the default)')
    parser.add_argument('--grow-min-p-free', type=float, default=0.5, metavar='P',
                        help='--grow labels a pixel free only where the model says P(free) >= '
                             'P (0.5)')
    parser.add_argument('--grow-superpixels', type=int, default=400, metavar='N',
                        help='--grow cuts each frame into about N superpixels (400)')
    parser.add_argument('--model', default='',
                        help='the model of --model-fill and --grow (default: the shipped one)')
    parser.add_argument('--parallax', action='store_true',
                        help='also label blocked what stands above the floor: corners that '
                             'move against the floor between a frame and the next (no model; '
                             'off by default)')
    parser.add_argument('--parallax-max-dt', type=float, default=1.0, metavar='S',
                        help='--parallax pairs a frame with the next labelled one up to S s '
                             'later (1.0)')
    parser.add_argument('--parallax-min-height', type=float, default=0.10, metavar='M',
                        help='--parallax: an obstacle point stands at least M above the floor '
                             '(0.10)')
    parser.add_argument('--parallax-region-points', type=int, default=2, metavar='N',
                        help='--parallax blocks each superpixel with N obstacle points and no '
                             'free label (2; 0: the points alone)')
    add_rule_arguments(parser)


class LabelError(Exception):
    """A one-line reason why no labels are written."""


def open_bag(path):
    """Open IN as ``bag`` does (its reader, the typestore of its distro)."""
    try:
        reader = open_reader(path)
    except BagError as e:
        raise LabelError(str(e)) from None
    return reader, typestore_for(reader)


def _topics(reader, args):
    """Return the image topic and {topic: type}; ``bag``'s choice of image and CameraInfo."""
    try:
        image, _, info = choose_topics(reader, args.image_topic, args.camera_info_topic)
    except BagError as e:
        raise LabelError(str(e)) from None
    if not info:
        raise LabelError(f'no CameraInfo for {image} in the bag (--camera-info-topic): labels '
                         'need the camera intrinsics')
    args.camera_info_topic = info
    return image, {c.topic: c.msgtype for c in reader.connections}


def _mount(args, inputs, camera_frame):
    given = {n: getattr(args, n) for n, _ in MOUNT_PARAMS if getattr(args, n) is not None}
    if not given:
        mount = mount_from_tf(inputs.static_tf, args.base_frame, camera_frame)
        if mount is not None:
            return mount, f'static TF {args.base_frame} -> {camera_frame}'
    values = dict(MOUNT_PARAMS)
    values.update(given)
    return (CameraMount(x=values['camera_x'], y=values['camera_y'], z=values['camera_height'],
                        roll=values['camera_roll'], pitch=values['camera_pitch'],
                        yaw=values['camera_yaw']),
            'options' if given else 'the node defaults (no TF chain, no options)')


def write_pair(directory, stem, rgb, mask):
    """Write ``<stem>.png`` and ``<stem>_mask.png`` (BGRA: grey free/blocked, alpha checked)."""
    grey = np.where(mask == FREE, 255, 0).astype(np.uint8)
    alpha = np.where((mask == FREE) | (mask == BLOCKED), 255, 0).astype(np.uint8)
    base = os.path.join(directory, stem)
    if not cv2.imwrite(base + '.png', cv2.cvtColor(np.ascontiguousarray(rgb),
                                                   cv2.COLOR_RGB2BGR)) or \
            not cv2.imwrite(base + '_mask.png', cv2.merge([grey, grey, grey, alpha])):
        raise LabelError(f'cannot write {base}.png / {base}_mask.png')


class Summary:
    """Counts of one run, and its report."""

    def __init__(self):
        self.frames = 0
        self.labelled = 0
        self.pixels = collections.Counter()
        self.skipped = collections.Counter()
        self.no_free = 0
        self.model = collections.Counter()
        self.grown = 0
        #: parallax pairs: 'used' or why not, and the pixels they labelled blocked
        self.parallax = collections.Counter()
        self.parallax_pixels = 0

    def lines(self, image, inputs, mount_note, out):
        total = sum(self.pixels.values())

        def share(k):
            return f'{100.0 * self.pixels[k] / total:.1f} %' if total else '-'

        out_lines = [f'{self.labelled} of {self.frames} frames of {image} labelled; path from '
                     f'{inputs.pose_source}; mount from {mount_note}; bumps: '
                     f'{len(inputs.hazards)} from {inputs.hazard_source or "no hazard topic"}',
                     f'pixels: free {share("free")}, blocked {share("blocked")}, unchecked '
                     f'{share("unchecked")}']
        if self.grown:
            out_lines.append(f'of them grown over floor of the same look (--grow): free '
                             f'{100.0 * self.grown / max(total, 1):.1f} %')
        if self.parallax:
            used = self.parallax['used']
            why = ', '.join(f'{n} {k}' for k, n in sorted(self.parallax.items()) if k != 'used')
            out_lines.append(f'of them blocked from parallax (--parallax): '
                             f'{100.0 * self.parallax_pixels / max(total, 1):.2f} %, from '
                             f'{used} of {sum(self.parallax.values())} frame pairs'
                             + (f' (not used: {why})' if why else ''))
        if self.model:
            out_lines.append(f'of them from the model (--model-fill): free '
                             f'{100.0 * self.model["free"] / max(total, 1):.1f} %, blocked '
                             f'{100.0 * self.model["blocked"] / max(total, 1):.1f} %')
        if self.no_free:
            out_lines.append(f'{self.no_free} labelled frames have no free pixel (the robot '
                             'did not drive over what they see)')
        for why, n in sorted(self.skipped.items()):
            out_lines.append(f'skipped {n} frames: {why}')
        return [f'{out}: {line}' for line in out_lines]


def label_bag(args, out=None):
    """Label IN into OUT (see the module); raise LabelError or InputError on bad input."""
    out = out if out is not None else sys.stdout
    if os.path.exists(args.output) and not args.overwrite:
        raise LabelError(f'{args.output} exists (--overwrite to replace it)')
    config = rule_config(args)
    reader, store = open_bag(args.input)
    try:
        image, topics = _topics(reader, args)
        inputs = read_inputs(reader, store, args, topics)
        if not inputs.infos:
            raise LabelError(f'no CameraInfo message on {args.camera_info_topic}')
        events = hazard_events(inputs)
        moved = max((float(np.ptp(s.track.poses[:, 0])) + float(np.ptp(s.track.poses[:, 1]))
                     for s in inputs.segments), default=0.0)
        parent = os.path.dirname(os.path.abspath(args.output))
        tmp = tempfile.mkdtemp(prefix='.' + os.path.basename(args.output) + '.', dir=parent)
        try:
            summary, mount_note = _label_frames(reader, store, args, image, inputs, events,
                                                config, tmp)
            if summary.labelled == 0:
                raise LabelError(f'no frame could be labelled ({_why(summary)})')
            if os.path.exists(args.output):
                shutil.rmtree(args.output)
            os.rename(tmp, args.output)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        reader.close()
    for note in inputs.notes:
        print(f'{args.output}: warning: {note}', file=out)
    if moved < config.robot_radius:
        print(f'{args.output}: warning: the robot never left its first footprint (moved '
              f'{moved:.2f} m): no free labels, only the horizon and bumps', file=out)
    for line in summary.lines(image, inputs, mount_note, args.output):
        print(line, file=out)
    return summary


def _why(summary):
    return ', '.join(f'{n} {why}' for why, n in sorted(summary.skipped.items())) or 'no frames'


def _parallax_config(args):
    if not args.parallax:
        return None
    if not 0.0 < args.parallax_max_dt <= 5.0:
        raise LabelError('--parallax-max-dt must be in (0, 5] s')
    try:
        return ParallaxConfig(min_height=args.parallax_min_height,
                              region_points=args.parallax_region_points)
    except ValueError as e:
        raise LabelError(f'--parallax: {e}')


def _label_frames(reader, store, args, image, inputs, events, config, directory):
    summary = Summary()
    conns = [c for c in reader.connections if c.topic == image]
    total = sum(c.msgcount for c in conns)
    cameras = {}
    mount_note = ''
    last = -math.inf
    stem0 = os.path.splitext(os.path.basename(os.path.normpath(args.input)))[0] or 'frame'
    pipe = None
    if args.model_fill > 0.0 and not 0.5 < args.model_fill <= 1.0:
        raise LabelError('--model-fill must be in (0.5, 1]')
    if args.grow < 0.0 or not 0.0 <= args.grow_min_p_free <= 1.0 or args.grow_superpixels < 1:
        raise LabelError('--grow must be >= 0, --grow-min-p-free in [0, 1] and '
                         '--grow-superpixels >= 1')
    parallax = _parallax_config(args)
    if args.model_fill > 0.0 or args.grow > 0.0:
        from freespace_seg.perception.pipeline import SegmentationPipeline
        try:
            pipe = SegmentationPipeline(args.model or None)
        except (OSError, ValueError, RuntimeError) as e:
            raise LabelError(f'--model-fill/--grow: cannot load the model ({e})')

    def finish(frame):
        """Model steps, then write one labelled frame (after its parallax step, if any)."""
        labels, rgb = frame['labels'], frame['rgb']
        if pipe is not None:
            _, confidence = pipe.segment_with_confidence(rgb)
            if args.grow > 0.0:
                grown = grow_free(labels.mask, rgb, confidence, color_distance=args.grow,
                                  min_p_free=args.grow_min_p_free,
                                  superpixel_count=args.grow_superpixels)
                summary.grown += grown
                labels.free += grown
                labels.unchecked -= grown
            if args.model_fill > 0.0:
                free, blocked = fill_confident(labels.mask, confidence, args.model_fill)
                summary.model.update(free=free, blocked=blocked)
                labels.free += free
                labels.blocked += blocked
                labels.unchecked -= free + blocked
        write_pair(directory, frame['stem'], rgb, labels.mask)
        summary.labelled += 1
        summary.no_free += labels.free == 0
        summary.pixels.update(free=labels.free, blocked=labels.blocked,
                              unchecked=labels.unchecked)

    def add_parallax(frame, t, pose, seg, key, rgb):
        """Label ``frame`` from its motion to the next frame (time ``t``), if they pair."""
        if frame['seg'] is not seg or frame['key'] != key:
            summary.parallax['no next frame on the same path and camera'] += 1
            return
        if t - frame['t'] > args.parallax_max_dt:
            summary.parallax['next frame more than --parallax-max-dt later'] += 1
            return
        camera = cameras[key]
        motion = relative_poses(frame['pose'], [pose])[0]
        n, result = label_parallax(frame['labels'].mask, frame['rgb'], rgb, camera.intrinsics,
                                   camera.mount, motion, camera.sky, parallax)
        summary.parallax[result.rejected or 'used'] += 1
        summary.parallax_pixels += n
        frame['labels'].blocked += n
        frame['labels'].unchecked -= n

    pending = None
    bar = Progress(None, total=total, desc='autolabel')
    try:
        for conn, _, raw in reader.messages(connections=conns):
            bar.update(1)
            summary.frames += 1
            msg = store.deserialize_cdr(raw, conn.msgtype)
            t = stamp_s(msg.header)
            if t - last < args.min_interval:
                continue
            seg, why = inputs.segment_at(t)
            pose = seg.track.pose_at(t) if seg is not None else None
            if pose is None:
                summary.skipped[why or 'no odometry/TF at the frame time'] += 1
                continue
            info = inputs.info_at(t)
            try:
                rgb = msg_to_rgb(msg)
                intrinsics = intrinsics_from_camera_info_msg(info)
            except (ImageCodecError, ValueError) as e:
                summary.skipped[f'undecodable image or CameraInfo ({type(e).__name__})'] += 1
                continue
            if intrinsics.width != rgb.shape[1] or intrinsics.height != rgb.shape[0]:
                intrinsics = intrinsics.scaled(rgb.shape[1], rgb.shape[0])
            key = (intrinsics, msg.header.frame_id)
            if key not in cameras:
                mount, mount_note = _mount(args, inputs, msg.header.frame_id)
                cameras[key] = CameraFloor(intrinsics, mount, config)
            later = seg.track
            # bumps of another stretch are in another odometry frame
            mine = [e for e in events if seg.start <= e[0] <= seg.end]
            labels = label_frame(cameras[key], pose, t, later.times, later.poses, mine, config)
            frame = {'labels': labels, 'rgb': rgb, 't': t, 'pose': pose, 'seg': seg,
                     'key': key, 'stem': f'{stem0}_{summary.frames - 1:06d}'}
            last = t
            if parallax is None:
                finish(frame)
                continue
            if pending is not None:
                add_parallax(pending, t, pose, seg, key, rgb)
                finish(pending)
            pending = frame
        if pending is not None:
            summary.parallax['no next frame on the same path and camera'] += 1
            finish(pending)
    finally:
        bar.close()
    return summary, mount_note


def run(args):
    try:
        label_bag(args)
    except (LabelError, InputError) as e:
        print(f'autolabel: {e}', file=sys.stderr)
        return 1
    return 0
