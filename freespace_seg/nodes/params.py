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
Parameter specifications and validation, free of ROS so they can be tested and documented.

Each node declares its parameters from a list of :class:`ParamSpec`. The node turns each spec
into an rcl_interfaces ``ParameterDescriptor`` (description, range or allowed values,
read-only flag) and calls :func:`validate` both at startup and in its set-parameters callback,
so the same rule guards both paths.
"""

from dataclasses import dataclass, field
import math

from freespace_seg.common.markdown import table
from freespace_seg.ground.horizon import DEFAULT_MARGIN_DEG


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: name, default, type and the rule it must satisfy."""

    name: str
    default: object
    description: str
    kind: str                      # string | int | double | bool | int_array | double_array
    choices: tuple = ()            # for strings
    min_value: float = None        # inclusive, for numbers
    max_value: float = None
    read_only: bool = False        # cannot change while the node runs
    extra: str = ''                # additional constraint text for the descriptor
    check: object = field(default=None, compare=False)   # fn(value) -> error str or None

    def constraints_text(self):
        """Human-readable constraints for the descriptor and the README."""
        parts = []
        if self.choices:
            parts.append('one of: ' + ', '.join(self.choices))
        if self.min_value is not None or self.max_value is not None:
            parts.append(f'range [{self.min_value}, {self.max_value}]')
        if self.extra:
            parts.append(self.extra)
        if self.read_only:
            parts.append('read-only at run time')
        return '; '.join(parts)


def validate(spec, value):
    """Return None if ``value`` is acceptable for ``spec``, else a reason string."""
    kind = spec.kind
    if kind == 'string':
        if not isinstance(value, str):
            return f'{spec.name} must be a string, got {type(value).__name__}'
        if spec.choices and value not in spec.choices:
            return f'{spec.name} must be one of {", ".join(spec.choices)}; got {value!r}'
    elif kind == 'bool':
        if not isinstance(value, bool):
            return f'{spec.name} must be a bool, got {type(value).__name__}'
    elif kind in ('int', 'double'):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f'{spec.name} must be a number, got {type(value).__name__}'
        if kind == 'int' and not isinstance(value, int):
            return f'{spec.name} must be an integer, got {value!r}'
        if isinstance(value, float) and not math.isfinite(value):
            return f'{spec.name} must be finite, got {value!r}'
        if spec.min_value is not None and value < spec.min_value:
            return f'{spec.name} must be >= {spec.min_value}, got {value!r}'
        if spec.max_value is not None and value > spec.max_value:
            return f'{spec.name} must be <= {spec.max_value}, got {value!r}'
    elif kind == 'double_array':
        try:
            items = list(value)
        except TypeError:
            return f'{spec.name} must be a list of numbers'
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(v) for v in items):
            return f'{spec.name} must be a list of finite numbers, got {items!r}'
    elif kind == 'int_array':
        try:
            items = list(value)
        except TypeError:
            return f'{spec.name} must be a list of integers'
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            return f'{spec.name} must be a list of integers, got {items!r}'
        if spec.min_value is not None and any(v < spec.min_value for v in items):
            return f'{spec.name}: every value must be >= {spec.min_value}'
        if spec.max_value is not None and any(v > spec.max_value for v in items):
            return f'{spec.name}: every value must be <= {spec.max_value}'
    else:
        raise ValueError(f'unknown parameter kind {kind!r}')
    if spec.check is not None:
        return spec.check(value)
    return None


def palette_from_ints(values):
    """Isaac ROS-style palette (24-bit 0xRRGGBB integers) -> list of (R, G, B)."""
    return [((v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF) for v in values]


QOS_CHOICES = ('SENSOR_DATA', 'DEFAULT', 'SYSTEM_DEFAULT')

#: names of SEGMENTATION_PARAMS passed to the engine as keyword options (backend-specific)
ENGINE_OPTION_PARAMS = ('engine_file_path', 'force_engine_update', 'enable_fp16', 'enable_int8',
                        'max_workspace_size', 'dla_core', 'gpu_id', 'cuda_graph',
                        'triton_url', 'triton_model_name', 'triton_model_version',
                        'triton_timeout', 'triton_shared_memory')

#: parameters of ``segmentation_node``; defaults must match config/freespace_seg.yaml
SEGMENTATION_PARAMS = (
    ParamSpec('model_file_path', '', 'ONNX model to run; its YAML model card must sit beside it '
              'with the same name. Empty: the packaged model, models/freespace_lite0.onnx, or '
              'its INT8 copy models/freespace_lite0_int8.onnx when the backend is onnxruntime '
              '(CPU); on an x86-64 CPU without VNNI the copy with 7-bit weights, '
              'models/freespace_lite0_int8r.onnx, where full-range int8 weights saturate. '
              'Changing it at run time loads the new model and swaps it in between frames; '
              'a model that fails to load is rejected and the old one keeps running.',
              'string'),
    ParamSpec('backend', 'auto', 'Inference backend. auto tries tensorrt, then onnxruntime_gpu '
              '(ONNX Runtime with its TensorRT/CUDA providers), then onnxruntime (CPU), and logs '
              'why each earlier one was skipped; naming a backend that cannot run is an error, '
              'never a silent fallback to the CPU. Changing it at run time reloads the model on '
              'the new backend (rejected, old one kept, if it cannot load). triton sends each '
              'frame to a KServe V2 inference server (Triton, or python -m freespace_seg '
              'serve) at triton_url; auto never picks it.',
              'string', choices=('auto', 'tensorrt', 'onnxruntime_gpu', 'onnxruntime',
                                 'triton')),
    # -- GPU engine options (Isaac ROS TensorRTNode names); the CPU backend ignores them --
    ParamSpec('engine_file_path', '', 'TensorRT engine file for the tensorrt backend: loaded if '
              'it matches the model and settings, else (re)built and saved there. Empty: a '
              'per-user cache, $XDG_CACHE_HOME/freespace_seg/engines (default '
              '~/.cache/freespace_seg/engines), with a file name keyed by the model hash, '
              'TensorRT version, GPU and precision.', 'string', read_only=True),
    ParamSpec('force_engine_update', False, 'Rebuild the TensorRT engine at startup even if '
              'the cached one is valid (tensorrt backend).', 'bool', read_only=True),
    ParamSpec('enable_fp16', True, 'Let TensorRT run layers in FP16 (tensorrt backend and the '
              'TensorRT provider of onnxruntime_gpu).', 'bool', read_only=True),
    ParamSpec('enable_int8', False, 'Build INT8 from a QDQ-quantized model (explicit '
              'quantization; there is no calibration). A model without Q/DQ nodes is an error.',
              'bool', read_only=True),
    ParamSpec('max_workspace_size', 536870912, 'Limit, in bytes, of the TensorRT WORKSPACE '
              'memory pool: scratch GPU memory for layer implementations (tensorrt backend and '
              'the TensorRT provider of onnxruntime_gpu). Too low can rule out the fastest '
              'kernels.', 'int', min_value=1 << 20, max_value=1 << 36, read_only=True),
    ParamSpec('dla_core', -1, 'Jetson DLA core to run on, with GPU fallback for unsupported '
              'layers; needs FP16 or INT8. -1: the GPU only.', 'int', min_value=-1,
              max_value=7, read_only=True),
    ParamSpec('gpu_id', 0, 'CUDA device to run on (GPU backends).', 'int', min_value=0,
              max_value=63, read_only=True),
    ParamSpec('cuda_graph', False, 'Capture the TensorRT inference as a CUDA graph once and '
              'replay it on each frame (less launch overhead; tensorrt backend).', 'bool',
              read_only=True),
    # -- triton backend (a model on an inference server; docs/triton.md) --
    ParamSpec('triton_url', 'localhost:8001', 'host:port of the inference server gRPC '
              'endpoint (triton backend). Unreachable at startup: a startup error.', 'string',
              read_only=True, check=lambda v: None if v.rpartition(':')[2].isdigit() else
              f'triton_url must be host:port, got {v!r}'),
    ParamSpec('triton_model_name', '', 'Model name on the server (triton backend); empty: '
              "the card's name. The server's model must agree with the card on input and "
              'output names, shapes and dtypes, else a startup error naming both.', 'string',
              read_only=True),
    ParamSpec('triton_model_version', '', 'Model version on the server (triton backend); '
              "empty: the server's policy (the newest).", 'string', read_only=True,
              check=lambda v: None if v == '' or v.isdigit() else
              f'triton_model_version must be empty or a number, got {v!r}'),
    ParamSpec('triton_timeout', 1.0, 'Seconds a request to the server may take (triton '
              'backend); a late or failed request counts the frame as failed, and the node '
              'retries the server with backoff (0.1 s doubling to 2 s).', 'double',
              min_value=0.01, max_value=60.0, read_only=True),
    ParamSpec('triton_shared_memory', False, 'Send the input and receive the output through '
              'system (POSIX) shared memory instead of inside the gRPC messages (triton '
              'backend): the node creates two regions in /dev/shm, registers them with the '
              'server, and unregisters and removes them when it stops; a restarted server gets '
              'them registered again. Only for a server on the same host (it maps the regions '
              'by name): a server that cannot map them is a startup error.', 'bool',
              read_only=True),
    ParamSpec('num_threads', 0, 'CPU threads for inference (ONNX Runtime intra-op), per worker '
              '(num_workers); 0 lets the runtime choose (one per core). Changing it at run time '
              'reloads the engine.',
              'int', min_value=0, max_value=64),
    ParamSpec('num_workers', 1, 'Frames processed at once, each by its own worker thread with '
              'its own engine (num_threads threads each), so that the inference of one frame '
              'overlaps the rest of the work of another. A worker that becomes free takes the '
              'newest frame; outputs leave in arrival order, and a frame that finishes after a '
              'later one was published is dropped (frames_dropped_late in the diagnostics). '
              'Each worker holds its own engine: num_workers times the model memory (GPU '
              'memory on the GPU backends). On 2 CPU cores with a 60 Hz camera, try '
              'num_workers 2 with num_threads 1.', 'int', min_value=1, max_value=4,
              read_only=True),
    ParamSpec('image_transport', 'raw', 'raw subscribes to image (sensor_msgs/Image); '
              'compressed subscribes to image/compressed (sensor_msgs/CompressedImage).',
              'string', choices=('raw', 'compressed'), read_only=True),
    ParamSpec('image_decoder', 'auto', 'auto: the ROS cv_bridge where it is importable, '
              'else the built-in decoder (the log says which); builtin: the package decoder '
              '(zero-copy for rgb8, fuzz-tested); cv_bridge: cv_bridge or a startup error. '
              'cv_bridge always runs behind the built-in input checks.', 'string',
              choices=('auto', 'builtin', 'cv_bridge'), read_only=True),
    ParamSpec('input_qos', 'SENSOR_DATA', 'QoS profile of the camera subscriptions '
              '(REP 2003: SENSOR_DATA is best effort).', 'string', choices=QOS_CHOICES,
              read_only=True),
    ParamSpec('input_qos_depth', 1, 'History depth of the camera subscriptions; the node always '
              'processes only the newest frame.', 'int', min_value=1, max_value=100,
              read_only=True),
    ParamSpec('output_qos', 'DEFAULT', 'QoS profile of the image outputs (DEFAULT is reliable, '
              'and still reaches best-effort subscribers).', 'string', choices=QOS_CHOICES,
              read_only=True),
    ParamSpec('output_qos_depth', 1, 'History depth of the image outputs.', 'int', min_value=1,
              max_value=100, read_only=True),
    ParamSpec('overlay_alpha', 0.5, 'Weight of the class colours in segmentation/overlay.',
              'double', min_value=0.0, max_value=1.0),
    ParamSpec('color_palette', [-1], 'Class colours as 24-bit 0xRRGGBB integers, one per class '
              "(Isaac ROS style). [-1]: use the model card's palette.", 'int_array',
              min_value=-1, max_value=0xFFFFFF),
    ParamSpec('color_segmentation_mask_encoding', 'rgb8', 'Encoding of '
              'segmentation/colored_mask.', 'string', choices=('rgb8', 'bgr8')),
    ParamSpec('publish_unsubscribed', False, 'Compute and publish every output even when '
              'nobody subscribes to it (for bags and benchmarks).', 'bool'),
    ParamSpec('diagnostics_period', 1.0, 'Seconds between /diagnostics messages.', 'double',
              min_value=0.1, max_value=60.0, read_only=True),
    ParamSpec('input_stale_timeout', 1.0, 'Diagnostics turn WARN when no image has arrived '
              'for this long (s), and ERROR after three times as long.', 'double',
              min_value=0.05, max_value=600.0),
    ParamSpec('autostart', True, 'Configure and activate the lifecycle node at startup, so '
              'ros2 run and plain launch files work; false waits for a lifecycle manager.',
              'bool', read_only=True),
    # -- ground projection (free_space/grid, free_space/obstacles, free_space/grid_image) --
    ParamSpec('base_frame', 'base_link', 'Robot base frame (REP 105) of the grid and the '
              'obstacle points; z up, origin on the floor.', 'string', read_only=True),
    ParamSpec('use_tf', False, 'Look up the camera pose in base_frame through TF at each '
              'image stamp; when TF is missing, say so once and use the camera_* parameters.',
              'bool', read_only=True),
    ParamSpec('tf_timeout', 0.05, 'Seconds to wait for a TF lookup.', 'double',
              min_value=0.0, max_value=1.0, read_only=True),
    ParamSpec('camera_x', 0.0, 'Camera optical centre, x in base_frame (m, forward).',
              'double', min_value=-5.0, max_value=5.0),
    ParamSpec('camera_y', 0.0, 'Camera optical centre, y in base_frame (m, left).',
              'double', min_value=-5.0, max_value=5.0),
    ParamSpec('camera_height', 0.25, 'Camera optical centre above the floor (m).', 'double',
              min_value=0.01, max_value=5.0),
    ParamSpec('camera_roll', 0.0, 'Camera roll about the base x axis (rad).', 'double',
              min_value=-math.pi, max_value=math.pi),
    ParamSpec('camera_pitch', 0.3, 'Camera pitch (rad); positive tilts the camera down '
              '(right-hand rule about the base y axis).', 'double',
              min_value=-math.pi / 2, max_value=math.pi / 2),
    ParamSpec('camera_yaw', 0.0, 'Camera yaw about the base z axis (rad); positive turns '
              'left.', 'double', min_value=-math.pi, max_value=math.pi),
    ParamSpec('grid_resolution', 0.05, 'Cell size of free_space/grid (m).', 'double',
              min_value=0.005, max_value=1.0),
    ParamSpec('grid_width', 4.0, 'Grid extent along base x (m).', 'double',
              min_value=0.1, max_value=50.0),
    ParamSpec('grid_height', 4.0, 'Grid extent along base y (m).', 'double',
              min_value=0.1, max_value=50.0),
    ParamSpec('grid_origin', [0.0, -2.0], 'Base-frame (x, y) of the outer corner of cell '
              '(0, 0), '
              'as OccupancyGrid info.origin (m).', 'double_array', extra='two values',
              check=lambda v: None if len(list(v)) == 2 else
              f'grid_origin must have two values (x, y), got {list(v)!r}'),
    ParamSpec('max_range', 3.0, 'Floor farther than this from the camera stays unknown (m).',
              'double', min_value=0.1, max_value=50.0),
    ParamSpec('grid_min_obstacle_run', 0.1, 'Grid rule (docs/ground_outputs.md): a blocked '
              'pixel cuts its image column (the floor above it stays unknown) only when it lies '
              'in a vertical run of blocked pixels at least this fraction of the image height '
              'tall; shorter runs below the cut (speckle, a cable) only mark the cell under '
              'their bottom pixel occupied. 0: every blocked pixel cuts (the plain rule). The '
              'grid, free_space/obstacles and free_space/scan all follow it.', 'double',
              min_value=0.0, max_value=1.0),
    ParamSpec('grid_cut_confidence', 0.97, 'Grid rule: a blocked pixel cuts its column only '
              "when the model's P(blocked) there is more than this (models with probabilities "
              'or logits; argmax models are always sure). 0: ignore the confidence. With '
              'grid_min_obstacle_run and grid_free_confidence 0 as well: the plain rule.',
              'double', min_value=0.0, max_value=1.0),
    ParamSpec('grid_mark_confidence', 0.5, 'Grid rule: a short blocked run below the cut '
              'marks its bottom cell occupied only when P(blocked) there is more than this; '
              '0.5 leaves out pixels whose two logits tie (frequent with INT8 models). 0: every '
              'such run marks.', 'double', min_value=0.0, max_value=1.0),
    ParamSpec('grid_free_confidence', 0.6, 'Grid rule: a floor pixel below the cut makes its '
              "cells free only where the model's P(free) is more than this; the others leave "
              'them unknown (and do not cut). 0: every floor pixel (argmax models are always '
              'sure).', 'double', min_value=0.0, max_value=1.0),
    ParamSpec('grid_behind_confidence', 0.97, 'Grid rule: the same for the floor seen behind a '
              'blocked pixel that does not cut (above the lowest blocked pixel of its column). '
              "1: that floor stays unknown, the plain rule's free cells, also with argmax "
              'models. 0: off.', 'double', min_value=0.0, max_value=1.0),
    ParamSpec('grid_mask_width', 640, 'Project the free mask for the grid, obstacles and '
              'scan at most this many pixels wide (an erosion, then nearest neighbour: a '
              'blocked pixel never disappears). A mask at camera size holds no more than the '
              'model saw (384 x 216 for the default model) and projection time grows with its '
              'pixels: 640 projects a 1280x720 mask about four times faster, calls fewer '
              'obstacle cells free and loses up to 0.011 free-cell IoU (docs/ground_outputs.md). '
              'Masks no wider are projected as they are. 0: the mask as it is.', 'int',
              min_value=0, max_value=8192),
    ParamSpec('grid_agreement_frames', 1, 'Keep a free cell of the grid free only where '
              'grid_agreement_min_free of the last this many grids (this one included), laid '
              'in the odom frame by the odom topic (nav_msgs/Odometry of base_frame), call '
              'the same spot free; the others become unknown (obstacles show at once). Table '
              'tops seen from a high camera move with the robot and drop out: on cameras at '
              '0.5-1.2 m, 2 grids at 10 Hz removed 23 % of the free cells where no floor is '
              'for 0.003 free-cell IoU (3: 35 % for 0.017); at the default heights they cost '
              '0.016-0.035 for little (docs/ground_outputs.md). Without odometry within 0.2 s '
              'of an image the grid '
              'passes as it is (diagnostics: grid_agreement). 1: off.', 'int',
              min_value=1, max_value=30),
    ParamSpec('grid_agreement_min_free', 0, 'How many of the grid_agreement_frames grids must '
              'call a spot free; 0: all of them.', 'int', min_value=0, max_value=30),
    ParamSpec('grid_agreement_tolerance', 1, 'An earlier grid agrees where it has a free cell '
              'within this many cells (far floor is a sparse set of cells).', 'int',
              min_value=0, max_value=5),
    ParamSpec('grid_agreement_max_age', 1.0, 'Grids older than this (s) do not vote; 0: any '
              'age.', 'double', min_value=0.0, max_value=10.0),
    ParamSpec('grid_occlusion_memory', 0.0, 'Remember, in the odom frame (odom topic), the '
              'obstacles that cut a column of the grids of the last this many seconds, with '
              'the height the mask showed of them, and make the free cells in their shadow '
              'seen from the camera now unknown: a wall seen from afar stays a wall when the '
              'model later calls it floor from close by. A remembered obstacle on a cell the '
              'grid calls free now is not used; one under the robot (footprint_radius) is '
              'forgotten. On rendered drives at 10 Hz, 10 s took the free cells where no '
              'floor is from 7.9 to 4.3 % (held-out) for 0.017 free-cell IoU '
              '(docs/ground_outputs.md). Without odometry within 0.2 s of an image the grid '
              'passes as it is (diagnostics: grid_occlusion). 0: off.', 'double',
              min_value=0.0, max_value=60.0),
    ParamSpec('scan_angle_increment', 0.01, 'Angle between the rays of free_space/scan (rad); '
              'the rays span the floor the camera sees.', 'double', min_value=0.001,
              max_value=0.5),
    ParamSpec('mask_horizon', True, 'Set the pixels whose viewing ray rises '
              'horizon_margin_deg or more above the horizon to blocked in segmentation/mask, '
              'and so in free_space/mask, segmentation/colored_mask and segmentation/overlay: '
              'no such pixel can be floor (docs/ground_outputs.md). It needs a CameraInfo and '
              'uses the pose the grid uses (TF, else the camera_* parameters); without a '
              "CameraInfo the masks are the model's. segmentation/confidence stays the "
              "model's P(free). The grid, obstacles and scan never use such pixels and do not "
              'change.', 'bool'),
    ParamSpec('horizon_margin_deg', DEFAULT_MARGIN_DEG, 'Degrees above the horizon where the '
              "mask_horizon cut starts; the band below keeps the model's answer, so a camera "
              'pitch or roll that is off by less than this never cuts real (flat) floor.',
              'double', min_value=0.0, max_value=30.0),
    ParamSpec('footprint_radius', 0.17, 'Robot radius drawn in free_space/grid_image (m); '
              'Create 3: 0.17.', 'double', min_value=0.0, max_value=2.0),
)


def spec_by_name(specs, name):
    """Return the spec named ``name`` from ``specs``; KeyError if absent."""
    for s in specs:
        if s.name == name:
            return s
    raise KeyError(name)


def _default_text(spec):
    if spec.kind == 'string':
        return f"`'{spec.default}'`"
    if spec.kind == 'bool':
        return f'`{str(spec.default).lower()}`'
    return f'`{spec.default}`'


def markdown_table(specs):
    """Return the README's Markdown table of ``specs``: name, type, default, description."""
    rows = []
    for s in specs:
        text = s.description
        constraints = s.constraints_text()
        if constraints:
            text += f' ({constraints})'
        rows.append([f'`{s.name}`', s.kind, _default_text(s), text])
    return '\n'.join(table(['parameter', 'type', 'default', 'description'], rows))
