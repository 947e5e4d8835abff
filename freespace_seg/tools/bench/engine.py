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

"""Conditions (a) and (b): the raw engine and the ROS-free pipeline, on the same frames."""

import os
import time

from freespace_seg.tools.bench.procstat import (_ms_list, _other_cpu_percent, stats_ms,
                                                system_busy_seconds)
import numpy as np


# ---------------------------------------------------------------------------------------------
# Frames


class Frames:
    """The benchmark's camera frames as arrays, Image, CompressedImage and CameraInfo."""

    def __init__(self, count, width, height, seed):
        from freespace_seg.nodes.msgs import array_to_compressed, array_to_image
        from freespace_seg.nodes.msgs import camera_info_from_intrinsics
        from freespace_seg.nodes.synthetic_camera import render_frames

        frames = render_frames(count, width, height, seed, show_progress=True)
        self.rgb = [np.ascontiguousarray(f.image) for f in frames]
        self.intrinsics = frames[0].intrinsics
        self.images = [array_to_image(img, 'rgb8') for img in self.rgb]
        self.jpegs = [array_to_compressed(img, 'jpeg', quality=90) for img in self.rgb]
        self.info = camera_info_from_intrinsics(self.intrinsics)
        for msg in self.images + self.jpegs + [self.info]:
            msg.header.frame_id = 'camera_optical_frame'
        self.width, self.height = width, height

    @property
    def jpeg_kb(self):
        return float(np.mean([len(m.data) for m in self.jpegs])) / 1024.0


# ---------------------------------------------------------------------------------------------
# (a) engine and (b) pipeline, in this process


def measure_engine(model, threads, frames, seconds, warmup_runs=10, backend='onnxruntime',
                   engine_options=None):
    """
    Time ``engine.run`` alone on preprocessed tensors; return a result row.

    ``backend`` / ``engine_options`` as the pipeline takes them (``bench-fleet`` times the
    triton backend's round trip this way).
    """
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model, backend=backend, num_threads=threads,
                                engine_options=engine_options)
    try:
        tensors = [np.array(pipe.preprocessor(f.shape[1], f.shape[0])(f), copy=True)
                   for f in frames.rgb]
        engine = pipe.engine
        for i in range(warmup_runs):
            engine.run(tensors[i % len(tensors)])
        times = []
        cpu0, t_start, busy0 = time.process_time(), time.perf_counter(), system_busy_seconds()
        i = 0
        while time.perf_counter() - t_start < seconds or len(times) < 5:
            t0 = time.perf_counter()
            engine.run(tensors[i % len(tensors)])
            times.append(time.perf_counter() - t0)
            i += 1
        wall = time.perf_counter() - t_start
        cpu = time.process_time() - cpu0
        other = _other_cpu_percent(busy0, cpu, wall)
        desc = pipe.engine.describe()
    finally:
        pipe.close()
    row = {'kind': 'engine', 'backend': backend, 'threads': threads, 'input': 'tensor',
           'fps': len(times) / sum(times), 'frames': len(times),
           'cpu_percent': 100.0 * cpu / wall, 'engine': desc, 'samples_ms': _ms_list(times),
           'other_cpu_percent': other, 'loadavg_1min': os.getloadavg()[0]}
    row.update(stats_ms(times))
    return row


def measure_pipeline(model, threads, frames, seconds, warmup_runs=5):
    """
    Time the node's per-frame work without ROS transport; return a result row.

    Per frame: ``msg_to_rgb`` on a ``sensor_msgs/Image`` (zero-copy view), the node's frame
    path (:class:`~freespace_seg.ground.frame.FrameProcessor`: preprocess, inference, class
    decoding, mask back to camera size, the confidence that the node's default grid rule
    reads, the horizon cut of the mask (``mask_horizon``, stage ``horizon``), the free-space
    mask and the ground projection under the default :class:`GridRule`: grid and obstacle
    points) and the mask and grid messages.
    """
    from freespace_seg.ground.frame import FrameProcessor, GroundParams
    from freespace_seg.nodes.msgs import array_to_image
    from freespace_seg.nodes.msgs import grid_to_msg
    from freespace_seg.nodes.params import SEGMENTATION_PARAMS
    from freespace_seg.perception.image_codec import msg_to_rgb
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model, backend='onnxruntime', num_threads=threads)
    # The node's default mount (0.25 m, pitched 0.3 rad), grid and rule.
    ground = GroundParams.from_params({s.name: s.default for s in SEGMENTATION_PARAMS})
    processor = FrameProcessor(pipe, ground)
    stages = {k: [] for k in ('decode', 'preprocess', 'inference', 'postprocess',
                              'confidence', 'horizon', 'free_and_projection', 'messages')}
    times = []

    def one(msg):
        t0 = time.perf_counter()
        rgb = msg_to_rgb(msg)
        t1 = time.perf_counter()
        out = processor.process(rgb, ('mask', 'grid', 'points'), frames.info)
        out.points   # what the node publishes on free_space/obstacles
        t3 = time.perf_counter()
        array_to_image(out.mask, 'mono8', msg.header)
        grid_to_msg(out.grid, out.grid_spec, msg.header.stamp, 'base_link')
        t4 = time.perf_counter()
        timings = out.timings
        return t4 - t0, {'decode': t1 - t0, 'messages': t4 - t3,
                         'horizon': timings.get('horizon', 0.0),
                         'free_and_projection': timings.get('free', 0.0) +
                         timings.get('shrink', 0.0) + timings['ground'],
                         **{k: timings.get(k, 0.0) for k in ('preprocess', 'inference',
                                                             'postprocess', 'confidence')}}

    try:
        for i in range(warmup_runs):
            one(frames.images[i % len(frames.images)])
        cpu0, t_start, busy0 = time.process_time(), time.perf_counter(), system_busy_seconds()
        i = 0
        while time.perf_counter() - t_start < seconds or len(times) < 5:
            total, parts = one(frames.images[i % len(frames.images)])
            times.append(total)
            for k, v in parts.items():
                stages[k].append(v)
            i += 1
        wall = time.perf_counter() - t_start
        cpu = time.process_time() - cpu0
        other = _other_cpu_percent(busy0, cpu, wall)
    finally:
        pipe.close()
    row = {'kind': 'pipeline', 'threads': threads, 'input': f'rgb8 {frames.width}x{frames.height}',
           'fps': len(times) / sum(times), 'frames': len(times),
           'other_cpu_percent': other, 'loadavg_1min': os.getloadavg()[0],
           'cpu_percent': 100.0 * cpu / wall,
           'stages_p50_ms': {k: round(float(np.median(v)) * 1000.0, 3)
                             for k, v in stages.items()},
           'samples_ms': _ms_list(times)}
    row.update(stats_ms(times))
    return row
