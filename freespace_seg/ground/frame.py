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
One camera frame's outputs, ROS-free: the one frame path of the node, bag, infer and bench.

:class:`FrameProcessor` turns one RGB image (plus the camera's CameraInfo and mount when
ground outputs are asked for) into :class:`FrameOutputs`, computing only what is asked:

========== ====================================== =================================
output     what                                   published as (:data:`TOPICS`)
========== ====================================== =================================
mask       class ids (uint8)                      ``segmentation/mask``
confidence P(free) x 255 (uint8)                  ``segmentation/confidence``
free       255 = free floor (uint8)               ``free_space/mask``
scan       virtual laser ranges (:mod:`.scan`)    ``free_space/scan``
grid       occupancy grid (:mod:`.projection`)    ``free_space/grid``
points     obstacle points, (N, 3) float32        ``free_space/obstacles``
grid_image the grid drawn top-down (RGB)          ``free_space/grid_image``
colored    class colours (RGB)                    ``segmentation/colored_mask``
overlay    colours blended over the image (RGB)   ``segmentation/overlay``
========== ====================================== =================================

The ground outputs are one :meth:`GroundProjector.ground` of the free mask under the grid rule
of :class:`GroundParams` (the confidence is computed only when asked for or when the rule
reads it, :attr:`GridRule.needs_confidence`); the projector and the scan's rays are kept from
frame to frame and rebuilt only when the CameraInfo, mount or grid change.
:class:`CameraInfoHistory` matches each image with the CameraInfo of its stamp.

**The horizon** (:mod:`.horizon`). With :attr:`GroundParams.mask_horizon` and a CameraInfo,
the pixels whose ray rises :attr:`GroundParams.horizon_margin_deg` or more above the
horizon are set to the model card's first blocked class in the class mask before anything
is made from it, so ``mask``, ``free``, ``colored`` and ``overlay`` all show them blocked.
Only pixels of the free classes change (other blocked classes stay). The ``confidence``
stays the model's P(free): it is the model's own answer, and the grid rule reads it only
where the ray meets the floor. The grid, points and scan never use such pixels, so they do
not change. Without a CameraInfo (or with an unusable one) the masks are the model's. The
cut is kept from frame to frame like the projector, rebuilt only when the CameraInfo, pose,
margin or mask size change.

Where it stands: the last stage of a frame's data path. It runs the perception pipeline and
then the ground modules; nothing in perception/ or in the rest of ground/ imports it, and
nodes/ and tools/ call it and only convert its arrays to messages.
"""

import collections
from dataclasses import dataclass, field
import time

import cv2
from freespace_seg.ground.agreement import AgreementParams, GridAgreement
from freespace_seg.ground.camera_info import intrinsics_from_camera_info_msg
from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.geometry import CameraMount
from freespace_seg.ground.grid import GridRule, GridSpec
from freespace_seg.ground.horizon import DEFAULT_MARGIN_DEG, HorizonCut
from freespace_seg.ground.occlusion import OcclusionMemory, OcclusionParams
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.ground.scan import scan_layout
from freespace_seg.perception.postprocess import colorize
import numpy as np

#: the outputs, in the order a frame makes them (and the node publishes them)
OUTPUTS = ('mask', 'confidence', 'free', 'scan', 'grid', 'points', 'grid_image', 'colored',
           'overlay')
#: the outputs that need the CameraInfo and the ground projection
GROUND_OUTPUTS = frozenset({'scan', 'grid', 'points', 'grid_image'})
#: each output's topic, relative to the camera's namespace (segmentation_node, bag)
TOPICS = {'mask': 'segmentation/mask', 'confidence': 'segmentation/confidence',
          'free': 'free_space/mask', 'scan': 'free_space/scan', 'grid': 'free_space/grid',
          'points': 'free_space/obstacles', 'grid_image': 'free_space/grid_image',
          'colored': 'segmentation/colored_mask', 'overlay': 'segmentation/overlay'}
#: CameraInfo messages kept to find the one whose stamp matches an image
INFO_HISTORY = 30
#: the node parameters (segmentation_node's, bag's options) that :class:`GroundParams` reads
GROUND_PARAMS = ('camera_x', 'camera_y', 'camera_height', 'camera_roll', 'camera_pitch',
                 'camera_yaw', 'grid_resolution', 'grid_width', 'grid_height', 'grid_origin',
                 'max_range', 'grid_min_obstacle_run', 'grid_cut_confidence',
                 'grid_mark_confidence', 'grid_free_confidence', 'grid_behind_confidence',
                 'scan_angle_increment', 'mask_horizon', 'horizon_margin_deg',
                 'grid_mask_width', 'grid_agreement_frames', 'grid_agreement_min_free',
                 'grid_agreement_tolerance', 'grid_agreement_max_age', 'grid_occlusion_memory')
#: the outputs the horizon cut changes: the class mask and what is made from it
HORIZON_OUTPUTS = frozenset({'mask', 'free', 'colored', 'overlay'})


def shrink_for_ground(free, confidence, width):
    """
    Return the free mask and its confidence (or None) at most ``width`` pixels wide.

    Rows in proportion (at least one). Each pixel of the smaller mask takes the least value
    of the pixels around the ones it covers (an erosion by the shrink factor, rounded up,
    then nearest neighbour): it is free only when they are all free, and its P(free) is
    their least, so a blocked pixel never disappears and a floor contact never moves away
    from the camera. ``width`` 0, or a mask no wider, returns them as they are. The
    projector scales the camera's intrinsics to the mask's shape.
    """
    rows, cols = free.shape[:2]
    if not width or cols <= width:
        return free, confidence
    size = (int(width), max(1, int(round(rows * width / cols))))
    k = int(np.ceil(max(cols / size[0], rows / size[1])))
    kernel = np.ones((k, k), np.uint8)

    def shrink(image):
        return cv2.resize(cv2.erode(image, kernel), size, interpolation=cv2.INTER_NEAREST)

    free = shrink(free)
    if confidence is not None:
        confidence = shrink(confidence)
    return free, confidence


def _nearest_indices(n_src, n_dst, interpolation):
    """Return the source index OpenCV's ``interpolation`` reads for each of ``n_dst`` pixels."""
    ramp = np.arange(n_src, dtype=np.float32).reshape(1, -1)
    return cv2.resize(ramp, (int(n_dst), 1), interpolation=interpolation)[0].astype(np.intp)


class NetworkShrink:
    """
    :func:`shrink_for_ground` of the camera-sized masks, made from the network-sized ones.

    The camera-sized class mask is the network's, cropped and resized nearest-neighbour
    (:meth:`~freespace_seg.perception.preprocess.Letterbox.mask_to_source`), so each pixel of
    the shrunk copy is the least of a few network pixels: which ones is worked out once per
    letterbox and width (from OpenCV's own nearest-neighbour indices), and a frame costs two
    gathers and minima at the small size instead of two camera-sized resizes, the camera-sized
    free mask and two erosions. The result equals :func:`shrink_for_ground` of the
    camera-sized masks, pixel for pixel (``test/ros/ground/test_frame.py``). The masks it is
    made from are not cut at the horizon: the projection never reads a pixel above it, so the
    grid, obstacles and scan are the same (30 rendered 1280x720 frames, 0 cells differ).
    """

    def __init__(self, letterbox, width):
        lb = letterbox
        cols, rows = lb.src_w, lb.src_h
        self.letterbox, self.width = letterbox, int(width)
        self.size = (int(width), max(1, int(round(rows * width / cols))))
        k = int(np.ceil(max(cols / self.size[0], rows / self.size[1])))
        a = k // 2  # OpenCV's anchor of a k x k kernel: the erosion reads -a .. k-1-a
        full_c = _nearest_indices(lb.content_w, cols, cv2.INTER_NEAREST_EXACT) + lb.pad_left
        full_r = _nearest_indices(lb.content_h, rows, cv2.INTER_NEAREST_EXACT) + lb.pad_top
        src_c = _nearest_indices(cols, self.size[0], cv2.INTER_NEAREST)
        src_r = _nearest_indices(rows, self.size[1], cv2.INTER_NEAREST)
        # Pixels past the border do not take part in an erosion: clipping to the border picks
        # one inside the same window.
        self._cols = [full_c[np.clip(src_c - a + t, 0, cols - 1)] for t in range(k)]
        self._rows = [full_r[np.clip(src_r - a + t, 0, rows - 1)] for t in range(k)]

    def __call__(self, network_image):
        """Return the shrunk camera-sized copy of a network-sized uint8 image."""
        r = np.take(network_image, self._rows[0], axis=0)
        for rows in self._rows[1:]:
            np.minimum(r, np.take(network_image, rows, axis=0), out=r)
        out = np.take(r, self._cols[0], axis=1)
        for cols in self._cols[1:]:
            np.minimum(out, np.take(r, cols, axis=1), out=out)
        return out


@dataclass(frozen=True)
class GroundParams:
    """
    What the ground outputs are made with: the mount, the grid, the grid rule and the scan.

    ``mount`` is the camera's pose when no other is given per frame (TF);
    ``scan_angle_increment`` the angle between the scan's rays (rad). ``mask_horizon``: cut
    the masks at the horizon (the module docstring), ``horizon_margin_deg`` degrees above it.
    """

    mount: CameraMount
    grid_spec: GridSpec
    rule: GridRule
    scan_angle_increment: float
    mask_horizon: bool = True
    horizon_margin_deg: float = DEFAULT_MARGIN_DEG
    #: project the free mask (and its confidence) at most this many pixels wide (0: as it is)
    mask_width: int = 0
    #: free cells only where the last grids agree in the odom frame (off by default)
    agreement: AgreementParams = AgreementParams()
    #: no free cell behind an obstacle of the last grids, in the odom frame (off by default)
    occlusion: OcclusionParams = OcclusionParams()

    @property
    def uses_odom(self):
        """Whether a grid filter of the odom frame is on (the agreement or the occlusion)."""
        return self.agreement.active or self.occlusion.active

    def __post_init__(self):
        if not self.scan_angle_increment > 0.0:
            raise ValueError('scan_angle_increment must be positive, got '
                             f'{self.scan_angle_increment!r}')
        if not 0.0 <= self.horizon_margin_deg < 90.0:
            raise ValueError('horizon_margin_deg must be in [0, 90), got '
                             f'{self.horizon_margin_deg!r}')
        if not (isinstance(self.mask_width, int) and self.mask_width >= 0):
            raise ValueError(f'grid_mask_width must be an integer >= 0, got {self.mask_width!r}')

    @classmethod
    def from_params(cls, p):
        """
        Build from a dict with the node parameters of :data:`GROUND_PARAMS`.

        :raises ValueError: a value that does not fit (the message says which).
        """
        mount = CameraMount(x=p['camera_x'], y=p['camera_y'], z=p['camera_height'],
                            roll=p['camera_roll'], pitch=p['camera_pitch'], yaw=p['camera_yaw'])
        grid = GridSpec(resolution=p['grid_resolution'], width=p['grid_width'],
                        height=p['grid_height'], origin=tuple(p['grid_origin']),
                        max_range=p['max_range'])
        rule = GridRule(p['grid_min_obstacle_run'], p['grid_cut_confidence'],
                        p['grid_mark_confidence'], p['grid_free_confidence'],
                        p['grid_behind_confidence'])
        agreement = AgreementParams(int(p.get('grid_agreement_frames', 1)),
                                    int(p.get('grid_agreement_min_free', 0)),
                                    float(p.get('grid_agreement_max_age', 1.0)),
                                    int(p.get('grid_agreement_tolerance', 1)))
        occlusion = OcclusionParams(float(p.get('grid_occlusion_memory', 0.0)),
                                    float(p.get('footprint_radius', 0.17)))
        return cls(mount, grid, rule, float(p['scan_angle_increment']),
                   bool(p['mask_horizon']), float(p['horizon_margin_deg']),
                   int(p['grid_mask_width']), agreement, occlusion)


def mask_intrinsics(info, shape):
    """
    Return the intrinsics of CameraInfo ``info`` for a mask of ``shape`` (H, W).

    When the CameraInfo's size differs from the mask's (a resized stream of the same camera,
    or a mask at another resolution) the intrinsics are scaled.

    :raises ValueError: unusable CameraInfo.
    """
    intrinsics = intrinsics_from_camera_info_msg(info)
    if (intrinsics.height, intrinsics.width) != tuple(shape):
        intrinsics = intrinsics.scaled(shape[1], shape[0])
    return intrinsics


def projector_for_camera_info(projector, info, shape, mount, grid_spec):
    """
    Return a :class:`GroundProjector` for a mask of ``shape`` (H, W) seen by ``info``.

    ``info`` is a CameraInfo message (any object with its fields); when its size differs from
    the mask's (a resized stream of the same camera) the intrinsics are scaled. ``projector``
    (or None) is updated in place and returned, so its lookup table is rebuilt only when the
    intrinsics, mount or grid change.

    :raises ValueError: unusable CameraInfo.
    """
    intrinsics = mask_intrinsics(info, shape)
    if projector is None:
        return GroundProjector(intrinsics, mount, grid_spec)
    projector.update(intrinsics=intrinsics, mount=mount, grid_spec=grid_spec)
    return projector


def horizon_for_camera_info(cut, info, shape, mount, margin_deg):
    """
    Return a :class:`~freespace_seg.ground.horizon.HorizonCut` for a mask of ``shape`` (H, W).

    As :func:`projector_for_camera_info`: ``cut`` (or None) is updated in place and
    returned, so it is rebuilt only when the intrinsics, mount, margin or mask size change.

    :raises ValueError: unusable CameraInfo or pose.
    """
    intrinsics = mask_intrinsics(info, shape)
    if cut is None:
        return HorizonCut(intrinsics, mount, margin_deg)
    cut.update(intrinsics=intrinsics, mount=mount, margin_deg=margin_deg)
    return cut


def horizon_classes(card):
    """
    Return (value, classes) for :meth:`HorizonCut.apply` of a model card's class masks.

    ``value``: the card's first class that is not free; ``classes``: its free classes, or
    None where every other class is free (then every cut pixel is simply set).
    """
    free = set(card.free_space)
    blocked = [c for c in range(len(card.class_names)) if c not in free]
    return blocked[0], (None if len(blocked) == 1 else tuple(sorted(free)))


class CameraInfoHistory:
    """The last :data:`INFO_HISTORY` CameraInfo messages, to match images by stamp."""

    def __init__(self, size=INFO_HISTORY):
        self._infos = collections.deque(maxlen=size)

    def add(self, info):
        """Keep a CameraInfo (any object with ``header.stamp.sec`` / ``.nanosec``)."""
        self._infos.append(info)

    def match(self, header):
        """Return the CameraInfo with the image's stamp, else the newest one, else None."""
        infos = list(self._infos)
        stamp = header.stamp
        for info in reversed(infos):
            if info.header.stamp.sec == stamp.sec and \
                    info.header.stamp.nanosec == stamp.nanosec:
                return info
        return infos[-1] if infos else None

    def __iter__(self):
        return iter(list(self._infos))

    def __len__(self):
        return len(self._infos)


@dataclass
class FrameOutputs:
    """
    What :meth:`FrameProcessor.process` made of one frame; None where not asked for.

    ``ground`` is the :class:`~freespace_seg.ground.projection.Ground` (``grid`` and
    ``points`` read it), ``grid_spec`` its grid; ``scan`` the ranges and ``scan_layout`` the
    rays that go with them. ``ground_error`` is the ValueError of an unusable CameraInfo or
    pose (the ground outputs are then missing, and the masks are not cut at the horizon).
    ``horizon`` is the :class:`~freespace_seg.ground.horizon.HorizonCut` the masks were cut
    with (None: not cut). ``timings``: seconds per stage (the pipeline's, then ``horizon``,
    ``free``, ``shrink`` (the ground's copy of the masks at ``grid_mask_width``), ``ground``,
    ``scan``, ``colored``, ``overlay`` where they ran).
    """

    rgb: object = None
    mask: object = None
    confidence: object = None
    free: object = None
    ground: object = None
    grid_spec: object = None
    scan: object = None
    scan_layout: object = None
    grid_image: object = None
    colored: object = None
    overlay: object = None
    ground_error: object = None
    horizon: object = None
    #: the grid agreement: None (off), True (applied), False (on, but no odometry pose)
    agreement: object = None
    #: the occlusion memory: None (off), True (applied), False (on, but no odometry pose)
    occlusion: object = None
    timings: dict = field(default_factory=dict)

    @property
    def grid(self):
        """Return the int8 (ny, nx) occupancy grid, or None."""
        return self.ground.grid if self.ground is not None else None

    @property
    def points(self):
        """Return the (N, 3) float32 obstacle points, or None."""
        return self.ground.points if self.ground is not None else None

    @property
    def has_ground(self):
        """Return whether the ground outputs were made."""
        return self.ground is not None


class _Lookups:
    """One frame's CameraInfo and pose, each looked up (or called) at most once."""

    def __init__(self, camera_info, mount, params, odom=None):
        self._info, self._mount, self._params, self._odom = camera_info, mount, params, odom
        self._have_info = self._have_mount = self._have_odom = False

    def odom(self):
        """Return the frame's ((x, y, yaw) in odom, stamp in s), or None."""
        if not self._have_odom:
            self._have_odom = True
            if callable(self._odom):
                self._odom = self._odom()
        return self._odom

    def camera_info(self):
        """Return the frame's CameraInfo, or None."""
        if not self._have_info:
            self._have_info = True
            if callable(self._info):
                self._info = self._info()
        return self._info

    def mount(self):
        """Return the frame's pose: the one given, else the :class:`GroundParams` mount."""
        if not self._have_mount:
            self._have_mount = True
            if callable(self._mount):
                self._mount = self._mount()
            if self._mount is None:
                self._mount = self._params.mount
        return self._mount


class FrameProcessor:
    """
    One frame path: an RGB image in, the outputs asked for out (see the module docstring).

    ``pipeline``: the :class:`~freespace_seg.perception.pipeline.SegmentationPipeline`
    (settable, e.g. when a node swaps its model). ``ground``: :class:`GroundParams`, or None
    for no ground outputs. ``alpha``: the overlay's weight; ``color_lut``: the class colours
    (:func:`~freespace_seg.perception.postprocess.palette_lut`; None: the model card's);
    ``footprint_radius``: the robot drawn in ``grid_image``. All of them may be changed
    between frames. With ``reuse`` the free mask, colours and overlay are written into
    buffers kept from frame to frame (the node publishes them at once); without it every
    output is a fresh array of its frame (safe to hand to another thread).
    """

    def __init__(self, pipeline, ground=None, alpha=0.5, color_lut=None, footprint_radius=0.17,
                 reuse=False, agreement=None, occlusion=None):
        self.pipeline = pipeline
        self.ground_params = ground
        self.alpha = alpha
        self.color_lut = color_lut
        self.footprint_radius = footprint_radius
        self.reuse = reuse
        #: the projector of the latest frame with ground outputs (None before one)
        self.projector = None
        #: the scan's rays of the latest frame with a scan (None before one)
        self.scan_layout = None
        #: the horizon cut of the latest frame cut at the horizon (None before one)
        self.horizon = None
        self._buffers = {}
        self._network_shrink = None
        #: the :class:`~freespace_seg.ground.agreement.GridAgreement` of the grids (may be
        #: shared by several processors; made from ``ground.agreement`` when it differs)
        self.agreement = agreement
        #: the :class:`~freespace_seg.ground.occlusion.OcclusionMemory` of the grids (may be
        #: shared; made from ``ground.occlusion`` when it differs)
        self.occlusion = occlusion

    def reset(self):
        """Forget the projector, the scan's rays, the horizon cut and the buffers."""
        self.projector = self.scan_layout = self.horizon = None
        self._buffers = {}
        self._network_shrink = None

    def needs_confidence(self, want, camera_info=None, params=None):
        """Whether a frame with these outputs (and this CameraInfo) computes the confidence."""
        params = self.ground_params if params is None else params
        return 'confidence' in want or (
            bool(GROUND_OUTPUTS & set(want)) and camera_info is not None and
            params is not None and params.rule.needs_confidence)

    def _buffer(self, name, shape):
        if not self.reuse:
            return None
        buf = self._buffers.get(name)
        if buf is None or buf.shape != shape:
            buf = self._buffers[name] = np.empty(shape, np.uint8)
        return buf

    def process(self, rgb, want, camera_info=None, mount=None, ready=None, odom=None):
        """
        Return the :class:`FrameOutputs` of an (H, W, 3) uint8 RGB image.

        ``want``: the names of the outputs to make (:data:`OUTPUTS`). The ground outputs
        and the horizon cut need ``camera_info`` (a CameraInfo, e.g.
        :meth:`CameraInfoHistory.match`); ``mount`` is the camera's pose for this frame (a
        CameraMount or a 4x4 base_from_optical transform; None: the :class:`GroundParams`
        mount). Either may be a function that returns it (or None), called once, after the
        segmentation, and only when the ground is projected or the masks are cut at the
        horizon: a CameraInfo or TF that arrives during the inference is then used.
        ``ready(name, outputs)``, when given, is called for each output asked for as soon as
        it is made, in :data:`OUTPUTS` order. ``odom``: the frame's ((x, y, yaw) of the grid's
        frame in the odom frame, stamp in seconds), or a function that returns it or None;
        read only when :attr:`GroundParams.uses_odom` (the grid's free cells are then
        filtered by :class:`~freespace_seg.ground.occlusion.OcclusionMemory` and
        :class:`~freespace_seg.ground.agreement.GridAgreement`; without a pose the grid passes
        as it is and ``outputs.occlusion`` / ``outputs.agreement`` are False).
        """
        want = frozenset(want)
        unknown = want - set(OUTPUTS)
        if unknown:
            raise ValueError(f'unknown outputs {sorted(unknown)}; expected some of {OUTPUTS}')
        out = FrameOutputs(rgb=rgb)
        pipe, params = self.pipeline, self.ground_params

        def made(*names):
            if ready is not None:
                for name in names:
                    if name in want:
                        ready(name, out)

        ground = bool(GROUND_OUTPUTS & want) and params is not None
        # The ground's narrower copy of the masks straight from the network's (exact; see
        # NetworkShrink) when the camera is wider than grid_mask_width.
        narrow = ground and 0 < params.mask_width < rgb.shape[1] and \
            hasattr(pipe, 'segment_parts')
        needs_conf = self.needs_confidence(want, camera_info, params)
        if narrow:
            seg = pipe.segment_parts(rgb, confidence='confidence' in want,
                                     network_confidence=needs_conf)
            out.mask, out.confidence = seg.mask, seg.confidence
        elif needs_conf:
            out.mask, out.confidence = pipe.segment_with_confidence(rgb)
        else:
            out.mask = pipe.segment(rgb)
        out.timings.update(pipe.timings)
        horizon = bool(HORIZON_OUTPUTS & want) and params is not None and params.mask_horizon
        lookups = _Lookups(camera_info, mount, params, odom)
        if horizon and lookups.camera_info() is not None:
            self._cut_horizon(out, params, lookups)
        made('mask', 'confidence')
        if narrow and lookups.camera_info() is not None:
            t0 = time.perf_counter()
            shrink = self._network_shrink
            if shrink is None or shrink.letterbox != seg.letterbox or \
                    shrink.width != params.mask_width:
                shrink = self._network_shrink = NetworkShrink(seg.letterbox, params.mask_width)
            ground_free = shrink(pipe.free_mask(seg.network_mask))
            ground_conf = shrink(seg.network_confidence) \
                if seg.network_confidence is not None else None
            out.timings['shrink'] = time.perf_counter() - t0
        if 'free' in want or (ground and not narrow):
            t0 = time.perf_counter()
            out.free = pipe.free_mask(out.mask, out=self._buffer('free', out.mask.shape))
            out.timings['free'] = time.perf_counter() - t0
        made('free')
        if ground and lookups.camera_info() is not None:
            if not narrow:
                t0 = time.perf_counter()
                ground_free, ground_conf = shrink_for_ground(out.free, out.confidence,
                                                             params.mask_width)
                out.timings['shrink'] = time.perf_counter() - t0
            self._ground(out, want, params, lookups, made, ground_free, ground_conf)
        if 'colored' in want or 'overlay' in want:
            t0 = time.perf_counter()
            lut = self.color_lut if self.color_lut is not None else pipe.color_lut
            out.colored = colorize(out.mask, lut, out=self._buffer('colored', rgb.shape))
            out.timings['colored'] = time.perf_counter() - t0
            made('colored')
            if 'overlay' in want:
                t0 = time.perf_counter()
                out.overlay = pipe.overlay(rgb, out.colored, self.alpha,
                                           out=self._buffer('overlay', rgb.shape))
                out.timings['overlay'] = time.perf_counter() - t0
                made('overlay')
        return out

    def _occlude(self, out, params, lookups):
        """Hide the grid's free cells behind the obstacles of the last grids (its docstring)."""
        memory = self.occlusion
        if memory is None or memory.params != params:
            memory = self.occlusion = OcclusionMemory(params)
        odom = lookups.odom()
        if odom is None:
            memory.apply(out.ground.grid, out.grid_spec, None, 0.0, None, None)
            out.occlusion = False
            return
        pose, stamp = odom
        out.ground.grid = memory.apply(out.ground.grid, out.grid_spec, pose, stamp,
                                       self.projector.pose.position, out.ground.occluders)
        out.occlusion = True

    def _agree(self, out, params, lookups):
        """Filter the grid's free cells by the agreement of the last grids (its docstring)."""
        agreement = self.agreement
        if agreement is None or agreement.params != params:
            agreement = self.agreement = GridAgreement(params)
        odom = lookups.odom()
        if odom is None:
            agreement.reset()
            out.agreement = False
            return
        pose, stamp = odom
        out.ground.grid = agreement.apply(out.ground.grid, out.grid_spec, pose, stamp)
        out.agreement = True

    def _cut_horizon(self, out, params, lookups):
        """Set the class mask's pixels above the horizon to blocked (the module docstring)."""
        t0 = time.perf_counter()
        try:
            self.horizon = horizon_for_camera_info(
                self.horizon, lookups.camera_info(), out.mask.shape, lookups.mount(),
                params.horizon_margin_deg)
        except ValueError as e:
            out.ground_error = e
            return
        value, classes = horizon_classes(self.pipeline.card)
        self.horizon.apply(out.mask, value, classes)
        out.horizon = self.horizon
        out.timings['horizon'] = time.perf_counter() - t0

    def _ground(self, out, want, params, lookups, made, free, confidence):
        """Project ``free`` and its ``confidence`` (and the scan, the picture) into ``out``."""
        t0 = time.perf_counter()
        try:
            self.projector = projector_for_camera_info(
                self.projector, lookups.camera_info(), free.shape, lookups.mount(),
                params.grid_spec)
        except ValueError as e:
            out.ground_error = e
            return
        out.ground = self.projector.ground(free, confidence, params.rule)
        out.grid_spec = self.projector.grid_spec
        if params.occlusion.active:
            self._occlude(out, params.occlusion, lookups)
        if params.agreement.active:
            self._agree(out, params.agreement, lookups)
        t1 = time.perf_counter()
        out.timings['ground'] = t1 - t0
        if 'scan' in want:
            self.scan_layout = scan_layout(self.scan_layout, self.projector,
                                           params.scan_angle_increment)
            out.scan_layout = self.scan_layout
            out.scan = self.scan_layout.ranges(out.ground)
            out.timings['scan'] = time.perf_counter() - t1
        made('scan', 'grid', 'points')
        if 'grid_image' in want:
            out.grid_image = render_grid(out.ground.grid, self.footprint_radius,
                                         grid_spec=out.grid_spec)
            made('grid_image')
