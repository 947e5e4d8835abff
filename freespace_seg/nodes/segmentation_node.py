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
``segmentation_node``: camera images in, free-floor masks out.

Subscribes ``image`` (or ``image/compressed``) and ``camera_info``, runs the model off the
executor thread on the newest frame only, and publishes at camera resolution, each header
equal to its input's: ``segmentation/mask`` (mono8 class ids), ``segmentation/colored_mask``,
``segmentation/overlay`` (rgb8), ``segmentation/confidence`` (mono8, P(free) x 255) and
``free_space/mask`` (mono8, 255 = free). From the same mask, once CameraInfo has arrived, it
projects the free floor onto the ground and publishes in ``base_frame`` with the image's
stamp: ``free_space/grid`` (nav_msgs/OccupancyGrid), ``free_space/obstacles``
(sensor_msgs/PointCloud2), ``free_space/scan`` (sensor_msgs/LaserScan) and
``free_space/grid_image`` (rgb8), all under one grid rule (:class:`GridRule`).
Plus ``/diagnostics``. Parameters: :data:`freespace_seg.nodes.params.SEGMENTATION_PARAMS`.
"""

import collections
import functools
import math
import threading
import time

import cv2
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from freespace_seg.common.profiling import profile_from_environment
from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.grid import GridRule
from freespace_seg.ground.projection import mount_and_grid, projector_for_camera_info
from freespace_seg.ground.scan import scan_layout
from freespace_seg.nodes.camera_pose import CameraPoseSource
from freespace_seg.nodes.msgs import (array_to_image, grid_to_msg, make_decoder,
                                      points_to_cloud, scan_to_msg)
from freespace_seg.nodes.params import ENGINE_OPTION_PARAMS, palette_from_ints, SEGMENTATION_PARAMS
from freespace_seg.nodes.ros_util import (declare_and_validate, LATCHED_QOS, LatestSlot,
                                          on_parameter_changes, qos_from_name, spin_node,
                                          StartupError)
from freespace_seg.nodes.stderr_capture import decode_capturing, summarize
from freespace_seg.perception.engines import EngineError
from freespace_seg.perception.image_codec import ImageCodecError
from freespace_seg.perception.model_card import ModelCardError, mount_outside_training
from freespace_seg.perception.pipeline import packaged_model_path, SegmentationPipeline
from freespace_seg.perception.postprocess import colorize, palette_lut
from nav_msgs.msg import OccupancyGrid
import numpy as np
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, LaserScan, PointCloud2

#: the parameter specs by name, to check changes before applying them
SEGMENTATION_SPECS = {spec.name: spec for spec in SEGMENTATION_PARAMS}
#: seconds between repeats of the same error in the log
ERROR_THROTTLE_S = 5.0
#: CameraInfo messages kept to find the one whose stamp matches an image
INFO_HISTORY = 30
#: the grid's QoS: reliable + transient_local, depth 1. Nav2's StaticLayer subscribes
#: transient_local by default (map_subscribe_transient_local: true) and volatile
#: subscribers (the driver, rviz) match it too; a late joiner gets the newest grid at once.
GRID_QOS = LATCHED_QOS
GRID_PARAMS = ('camera_x', 'camera_y', 'camera_height', 'camera_roll', 'camera_pitch',
               'camera_yaw', 'grid_resolution', 'grid_width', 'grid_height', 'grid_origin',
               'max_range')


def _ends_in(success, failure):
    """
    Mark a transition callback with the primary state it ends in, on SUCCESS or otherwise.

    rclpy keeps the lifecycle state private (``_state_machine``): the node keeps its own
    label from what its callbacks return, by rcl's default state machine (a shutdown ends
    in finalized either way; a callback that raises or returns ERROR goes through
    :meth:`SegmentationNode.on_error`, which sets the label last).
    """
    def mark(callback):
        @functools.wraps(callback)
        def transition(self, state):
            result = callback(self, state)
            self._lifecycle_label = (success if result == TransitionCallbackReturn.SUCCESS
                                     else failure)
            return result
        return transition
    return mark


class SegmentationNode(LifecycleNode):
    """
    Free-floor segmentation of camera images with a model described by a model card.

    A managed (lifecycle) node. ``configure`` loads the model and engine and creates the
    publishers; ``activate`` subscribes and starts the worker; ``deactivate`` stops work and
    frees the engine; ``cleanup`` and ``shutdown`` release everything. The constructor
    makes no transition: with ``autostart`` (the default) :meth:`autostart` configures and
    activates, called from :func:`main` through :func:`start_segmentation_node`, as yolo_ros
    does from its main.
    """

    def __init__(self, node_name='freespace_segmentation', **kwargs):
        super().__init__(node_name, **kwargs)
        #: the lifecycle state's label, kept by the transition callbacks (see _ends_in)
        self._lifecycle_label = 'unconfigured'
        #: output messages and arrays reused from frame to frame by the worker (_process)
        self._reuse = {}
        self.params = declare_and_validate(self, SEGMENTATION_PARAMS)
        p = self.params
        try:
            self._mount, self._grid_spec = mount_and_grid(p)
        except ValueError as e:
            raise StartupError(f'invalid grid parameters: {e}') from e
        self.pipeline = None
        self._color_lut = None
        self._alpha = p['overlay_alpha']
        try:
            self._decode = make_decoder(p['image_decoder'])
        except ImageCodecError as e:
            raise StartupError(str(e)) from e
        decoder = getattr(self._decode, 'decoder_name', 'builtin')
        why = getattr(self._decode, 'fallback_reason', '')
        self.get_logger().info(f'image decoder: {decoder}'
                               + (f' (auto: {why})' if why else ''))
        self._publish_all = p['publish_unsubscribed']
        self._projector = None
        self._scan_layout = None
        self._infos = collections.deque(maxlen=INFO_HISTORY)
        self._info_error = ''
        self._pose_source = CameraPoseSource(self, p['use_tf'], p['base_frame'],
                                             p['tf_timeout'])
        self._sub = self._info_sub = None
        self._pubs = []
        self._slot = None
        self._worker = None
        # Held while a frame is processed, and while the model is swapped.
        self._pipeline_lock = threading.Lock()
        self.failure = ''
        #: the warning when the camera mount is outside the model's training ranges, or None
        self.mount_note = None
        self._tf_mount_key = None

        # Counters and recent latencies for diagnostics (written by the worker).
        self._stats_lock = threading.Lock()
        self.received = 0
        self.processed = 0
        self.bad_frames = 0
        self.decoder_warnings = 0
        self.dropped_before = 0
        self.last_error = ''
        self._latencies = collections.deque(maxlen=300)
        self._proc_times = collections.deque(maxlen=300)
        self._done_times = collections.deque(maxlen=300)
        self._last_input_time = None
        self._start_time = time.monotonic()

        on_parameter_changes(self, SEGMENTATION_SPECS, self._apply_parameters)
        self._pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._diag_timer = self.create_timer(p['diagnostics_period'], self._publish_diagnostics)

    def autostart(self):
        """
        Configure and activate when the ``autostart`` parameter is set; else do nothing.

        Raises StartupError with the reason when a transition fails.
        """
        if not self.params['autostart']:
            return
        if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise StartupError(self.failure or 'configure failed')
        if self.trigger_activate() != TransitionCallbackReturn.SUCCESS:
            raise StartupError(self.failure or 'activate failed')

    # -- lifecycle ----------------------------------------------------------------------------
    def _load_pipeline(self, model_file_path, backend=None, num_threads=None):
        p = self.params
        model_path = model_file_path or packaged_model_path()
        backend = p['backend'] if backend is None else backend
        num_threads = p['num_threads'] if num_threads is None else num_threads
        try:
            # Empty: the pipeline picks the packaged model (INT8 on the CPU backend).
            pipeline = SegmentationPipeline(
                model_file_path or None, backend, num_threads,
                engine_options={k: p[k] for k in ENGINE_OPTION_PARAMS})
        except (ModelCardError, EngineError, OSError) as e:
            raise StartupError(f'cannot load model {model_path}: {e}') from e
        except Exception as e:  # noqa: B902 - rclpy would swallow it in a transition
            raise StartupError(f'cannot load model {model_path}: {type(e).__name__}: {e}') \
                from e
        for note in pipeline.backend_notes:
            self.get_logger().info(f'backend {note}')
        return pipeline

    @_ends_in('inactive', 'unconfigured')
    def on_configure(self, state):
        """Load the model and engine, and create the publishers."""
        try:
            pipeline = self._load_pipeline(self.params['model_file_path'])
            self._color_lut = self._palette_lut(self.params['color_palette'], pipeline.card)
        except StartupError as e:
            self.failure = str(e)
            self.get_logger().error(f'configure failed: {e}')
            return TransitionCallbackReturn.FAILURE
        self.pipeline = pipeline
        p = self.params
        out_qos = qos_from_name(p['output_qos'], p['output_qos_depth'])
        pub = self.create_lifecycle_publisher
        self._pub_mask = pub(Image, 'segmentation/mask', out_qos)
        self._pub_colored = pub(Image, 'segmentation/colored_mask', out_qos)
        self._pub_overlay = pub(Image, 'segmentation/overlay', out_qos)
        self._pub_free = pub(Image, 'free_space/mask', out_qos)
        self._pub_grid = pub(OccupancyGrid, 'free_space/grid', GRID_QOS)
        self._pub_points = pub(PointCloud2, 'free_space/obstacles', out_qos)
        self._pub_grid_image = pub(Image, 'free_space/grid_image', out_qos)
        self._pub_confidence = pub(Image, 'segmentation/confidence', out_qos)
        self._pub_scan = pub(LaserScan, 'free_space/scan', out_qos)
        self._pubs = [self._pub_mask, self._pub_colored, self._pub_overlay, self._pub_free,
                      self._pub_grid, self._pub_points, self._pub_grid_image,
                      self._pub_confidence, self._pub_scan]
        card = pipeline.card
        self.get_logger().info(
            f'configured: model {card.name} ({card.model_path}), input '
            f'{card.input_width}x{card.input_height} {card.resize_mode}, backend '
            f'{pipeline.engine.describe()}')
        self._check_mount(card, self.params)
        return TransitionCallbackReturn.SUCCESS

    def _check_mount(self, card, params):
        """Warn when the camera mount is outside the model's training ranges (mount_note)."""
        note = mount_outside_training(card, params['camera_height'], params['camera_pitch'])
        if note and note != self.mount_note:
            self.get_logger().warning(note)
        self.mount_note = note

    def check_tf_mount(self, transform):
        """
        Check the mount TF gives (base <- optical 4x4), once per distinct pose (1 cm/rad).

        The data path calls it for every frame's TF pose; :attr:`mount_note` has the result.
        """
        m = np.asarray(transform, dtype=float)
        height = float(m[2, 3])
        # The optical axis in the base frame is (cos p, 0, -sin p) for a camera pitched p down.
        pitch = math.atan2(-m[2, 2], math.hypot(m[0, 2], m[1, 2]))
        key = (round(height, 2), round(pitch, 2))
        if key != self._tf_mount_key and self.pipeline is not None:
            self._tf_mount_key = key
            self._check_mount(self.pipeline.card, {'camera_height': height,
                                                   'camera_pitch': pitch})

    @_ends_in('active', 'inactive')
    def on_activate(self, state):
        """Reload the engine if deactivate freed it, subscribe, and start the worker."""
        if self.pipeline is None:
            try:
                self.pipeline = self._load_pipeline(self.params['model_file_path'])
            except StartupError as e:
                self.failure = str(e)
                self.get_logger().error(f'activate failed: {e}')
                return TransitionCallbackReturn.FAILURE
        p = self.params
        in_qos = qos_from_name(p['input_qos'], p['input_qos_depth'])
        if p['image_transport'] == 'compressed':
            self._sub = self.create_subscription(CompressedImage, 'image/compressed',
                                                 self._on_image, in_qos)
        else:
            self._sub = self.create_subscription(Image, 'image', self._on_image, in_qos)
        self._info_sub = self.create_subscription(CameraInfo, 'camera_info', self._on_info,
                                                  in_qos)
        self._slot = LatestSlot()
        self._worker = threading.Thread(target=self._work, args=(self._slot,),
                                        name='segmentation_worker', daemon=True)
        self._worker.start()
        self._last_input_time = None
        self._start_time = time.monotonic()
        result = super().on_activate(state)
        self.get_logger().info(f'active: listening on {self._sub.topic_name}')
        return result

    def _stop_work(self):
        """Unsubscribe and stop the worker, finishing or dropping the in-flight frame."""
        for sub in (self._sub, self._info_sub):
            if sub is not None:
                self.destroy_subscription(sub)
        self._sub = self._info_sub = None
        if self._slot is not None:
            self.dropped_before += self._slot.dropped
            self._slot.close()
        worker = self._worker
        if worker is not None and worker.is_alive() and threading.current_thread() is not worker:
            worker.join(timeout=5.0)
        self._slot = self._worker = None

    def _release_pipeline(self):
        with self._pipeline_lock:
            if self.pipeline is not None:
                self.pipeline.close()
            self.pipeline = None

    @_ends_in('inactive', 'active')
    def on_deactivate(self, state):
        """Stop work and free the engine's memory (activate loads it again)."""
        self._stop_work()
        self._release_pipeline()
        self.get_logger().info('deactivated: engine released')
        return super().on_deactivate(state)

    @_ends_in('unconfigured', 'inactive')
    def on_cleanup(self, state):
        """Release the publishers and the model."""
        self._release_pipeline()
        for pub in self._pubs:
            self.destroy_lifecycle_publisher(pub)
        self._pubs = []
        self._projector = None
        self._scan_layout = None
        return TransitionCallbackReturn.SUCCESS

    @_ends_in('finalized', 'finalized')
    def on_shutdown(self, state):
        """Release everything, from any state."""
        self._stop_work()
        return self.on_cleanup(state)

    def on_error(self, state):
        """After a callback that raised or returned ERROR: release everything, unconfigured."""
        self._stop_work()
        self.on_cleanup(state)
        result = super().on_error(state)
        self._lifecycle_label = ('unconfigured' if result == TransitionCallbackReturn.SUCCESS
                                 else 'finalized')
        return result

    @property
    def lifecycle_state(self):
        """Return the current lifecycle state's label, e.g. 'active'."""
        return self._lifecycle_label

    # -- parameters ---------------------------------------------------------------------------
    def _palette_lut(self, ints, card):
        if list(ints) == [-1]:
            palette = card.palette
        else:
            if len(ints) != card.num_classes:
                raise StartupError(f'color_palette has {len(ints)} colours, the model has '
                                   f'{card.num_classes} classes')
            palette = palette_from_ints(ints)
        return palette_lut(palette)

    def _apply_parameters(self, changes):
        # on_parameter_changes has checked every value; apply nothing unless all fit together.
        new_pipeline = None
        try:
            if self.pipeline is not None and any(
                    k in changes for k in ('model_file_path', 'backend', 'num_threads')):
                # A reconfigure: load the new model / backend, swap it in between frames.
                new_pipeline = self._load_pipeline(
                    changes.get('model_file_path', self.params['model_file_path']),
                    changes.get('backend'), changes.get('num_threads'))
            card = (new_pipeline or self.pipeline).card if (new_pipeline or self.pipeline) \
                else None
            if card is not None and ('color_palette' in changes or new_pipeline is not None):
                lut = self._palette_lut(list(changes.get('color_palette',
                                                         self.params['color_palette'])), card)
        except StartupError as e:
            if new_pipeline is not None:
                new_pipeline.close()
            return str(e)
        if any(name in GRID_PARAMS for name in changes):
            merged = dict(self.params)
            merged.update({k: list(v) if k == 'grid_origin' else v for k, v in changes.items()})
            try:
                self._mount, self._grid_spec = mount_and_grid(merged)
            except ValueError as e:
                return str(e)
        if card is not None and ('color_palette' in changes or new_pipeline is not None):
            self._color_lut = lut
        if new_pipeline is not None:
            with self._pipeline_lock:
                old, self.pipeline = self.pipeline, new_pipeline
            old.close()
            self.get_logger().info(f'model swapped to {new_pipeline.card.model_path} on '
                                   f'{new_pipeline.engine.describe()}')
        for name, value in changes.items():
            if name in self.params:
                self.params[name] = list(value) if name in ('color_palette', 'grid_origin') \
                    else value
        if card is not None and (new_pipeline is not None
                                 or {'camera_height', 'camera_pitch'} & set(changes)):
            self._check_mount(card, self.params)
        self._alpha = float(self.params['overlay_alpha'])
        self._publish_all = bool(self.params['publish_unsubscribed'])
        return None

    # -- data path ----------------------------------------------------------------------------
    def _on_image(self, msg):
        slot = self._slot
        if slot is None:
            return
        self.received += 1
        self._last_input_time = time.monotonic()
        slot.put(msg)

    def _on_info(self, msg):
        self._infos.append(msg)

    def _info_for(self, header):
        """Return the CameraInfo with the image's stamp, else the newest one, else None."""
        infos = list(self._infos)
        for info in reversed(infos):
            if info.header.stamp == header.stamp:
                return info
        return infos[-1] if infos else None

    def _update_projector(self, header, shape):
        """Bring the projector up to date for this frame; return it, or None (no info)."""
        info = self._info_for(header)
        if info is None:
            self._info_error = f'no CameraInfo received on {self.info_topic}'
            return None
        transform = self._pose_source.lookup(header.frame_id, header.stamp)
        if transform is not None:
            self.check_tf_mount(transform)
        mount = transform if transform is not None else self._mount
        try:
            self._projector = projector_for_camera_info(self._projector, info, shape, mount,
                                                        self._grid_spec)
        except ValueError as e:
            self._info_error = f'unusable CameraInfo: {e}'
            return None
        self._info_error = ''
        return self._projector

    def _wanted(self, pub):
        return self._publish_all or pub.get_subscription_count() > 0

    # -- read-only views, for tests and tools ---------------------------------------------------
    @property
    def output_topics(self):
        """Return the resolved names of the output topics; empty while unconfigured."""
        return [pub.topic_name for pub in self._pubs]

    @property
    def wanted_outputs(self):
        """Return the output topics the next frame is published on (subscribed, or all)."""
        return [pub.topic_name for pub in self._pubs if self._wanted(pub)]

    def wants(self, topic):
        """Return whether the next frame is published on output ``topic`` (name as created)."""
        return self.resolve_topic_name(topic) in self.wanted_outputs

    @property
    def mount(self):
        """Return the :class:`CameraMount` of the camera_* parameters now in use."""
        return self._mount

    @property
    def grid_spec(self):
        """Return the :class:`GridSpec` of the grid_* parameters now in use."""
        return self._grid_spec

    @property
    def overlay_alpha(self):
        """Return the overlay's blending weight now in use."""
        return self._alpha

    @property
    def publish_unsubscribed(self):
        """Return whether outputs nobody subscribes to are published anyway, now."""
        return self._publish_all

    @property
    def projector(self):
        """Return the ground projector of the latest frame, None before one was projected."""
        return self._projector

    @property
    def camera_infos(self):
        """Return the CameraInfo messages kept to match images by stamp, oldest first."""
        return list(self._infos)

    @property
    def pose_source(self):
        """Return the :class:`CameraPoseSource` the camera pose comes from (TF or parameters)."""
        return self._pose_source

    @property
    def worker_thread(self):
        """Return the thread that processes the frames while active, else None."""
        return self._worker

    @property
    def frame_waiting(self):
        """Return whether a received frame waits for the worker (a newer one replaces it)."""
        slot = self._slot
        return slot is not None and slot.waiting

    @property
    def grid_rule(self):
        """Return the :class:`GridRule` of the grid_* parameters."""
        p = self.params
        return GridRule(p['grid_min_obstacle_run'], p['grid_cut_confidence'],
                        p['grid_mark_confidence'])

    def _work(self, slot):
        while True:
            msg = slot.take(timeout=0.5)
            if msg is None:
                if slot.closed:
                    return
                continue
            try:
                with self._pipeline_lock:
                    if self.pipeline is None:
                        continue
                    self._process(msg)
            except ImageCodecError as e:
                self._count_error(f'bad image on {self.image_topic}: {e}')
            except Exception as e:  # noqa: B902 - a bad frame must never stop the node
                if not self.context.ok():
                    return
                self._count_error(f'failed to process a frame: {type(e).__name__}: {e}')

    def _count_error(self, text):
        with self._stats_lock:
            self.bad_frames += 1
            self.last_error = text
        self.get_logger().error(text, throttle_duration_sec=ERROR_THROTTLE_S)

    def _decode_frame(self, msg):
        """
        Decode ``msg`` to RGB; libpng/libjpeg's stderr lines become part of the node's log.

        A compressed frame is decoded with fd 2 captured (:mod:`stderr_capture`): the
        decoder's lines go into the error of a frame that fails, and a frame that decodes
        despite warnings is used, counted and logged with a throttled warning.
        """
        if not isinstance(msg, CompressedImage):
            return self._decode(msg)
        rgb, lines = decode_capturing(self._decode, msg)
        if lines:
            with self._stats_lock:
                self.decoder_warnings += 1
            self.get_logger().warning(
                f'decoder warnings on {self.image_topic} (frame used): {summarize(lines)}',
                throttle_duration_sec=ERROR_THROTTLE_S)
        return rgb

    def _process(self, msg):
        want_mask = self._wanted(self._pub_mask)
        want_colored = self._wanted(self._pub_colored)
        want_overlay = self._wanted(self._pub_overlay)
        want_free = self._wanted(self._pub_free)
        want_grid = self._wanted(self._pub_grid)
        want_points = self._wanted(self._pub_points)
        want_grid_image = self._wanted(self._pub_grid_image)
        want_confidence = self._wanted(self._pub_confidence)
        want_scan = self._wanted(self._pub_scan)
        ground = want_grid or want_points or want_grid_image or want_scan
        if not (want_mask or want_colored or want_overlay or want_free or ground
                or want_confidence):
            return
        rule = self.grid_rule
        # The confidence is computed only for its topic, or for a grid rule that reads it.
        need_confidence = want_confidence or (ground and not rule.plain and (
            rule.cut_confidence > 0.0 or rule.mark_confidence > 0.0))
        t0 = time.perf_counter()
        # Output messages and arrays are reused from frame to frame (this worker is the only
        # user, and publish() has copied a message when it returns): no per-frame
        # allocation of camera-sized buffers.
        reuse = self._reuse

        def message(name):
            return reuse.setdefault('msg_' + name, Image())

        def buffer(name, shape):
            buf = reuse.get(name)
            if buf is None or buf.shape != shape:
                buf = reuse[name] = np.empty(shape, np.uint8)
            return buf

        rgb = self._decode_frame(msg)
        if need_confidence:
            mask, confidence = self.pipeline.segment_with_confidence(rgb)
        else:
            mask, confidence = self.pipeline.segment(rgb), None
        header = msg.header
        if want_mask:
            self._pub_mask.publish(array_to_image(mask, 'mono8', header, out=message('mask')))
        if want_confidence:
            self._pub_confidence.publish(array_to_image(confidence, 'mono8', header,
                                                        out=message('confidence')))
        if want_free or ground:
            free = self.pipeline.free_mask(mask, out=buffer('free', mask.shape))
        if want_free:
            self._pub_free.publish(array_to_image(free, 'mono8', header, out=message('free')))
        if ground:
            self._publish_ground(header, free, confidence, rule, want_grid, want_points,
                                 want_grid_image, want_scan)
        if want_colored or want_overlay:
            colored = colorize(mask, self._color_lut, out=buffer('colored', rgb.shape))
            if want_colored:
                if self.params['color_segmentation_mask_encoding'] == 'bgr8':
                    bgr = cv2.cvtColor(colored, cv2.COLOR_RGB2BGR,
                                       dst=buffer('colored_bgr', rgb.shape))
                    self._pub_colored.publish(array_to_image(bgr, 'bgr8', header,
                                                             out=message('colored')))
                else:
                    self._pub_colored.publish(array_to_image(colored, 'rgb8', header,
                                                             out=message('colored')))
            if want_overlay:
                blended = self.pipeline.overlay(rgb, colored, self._alpha,
                                                out=buffer('overlay', rgb.shape))
                self._pub_overlay.publish(array_to_image(blended, 'rgb8', header,
                                                         out=message('overlay')))
        done = time.perf_counter()
        latency = (self.get_clock().now() - Time.from_msg(header.stamp)).nanoseconds * 1e-9
        with self._stats_lock:
            self.processed += 1
            self._latencies.append(latency)
            self._proc_times.append(done - t0)
            self._done_times.append(time.monotonic())

    def _publish_ground(self, header, free, confidence, rule, want_grid, want_points,
                        want_grid_image, want_scan):
        projector = self._update_projector(header, free.shape)
        if projector is None:
            return
        ground = projector.ground(free, confidence, rule)
        grid, points = ground.grid, ground.points
        frame = self.params['base_frame']
        if want_scan:
            self._scan_layout = layout = scan_layout(self._scan_layout, projector,
                                                     self.params['scan_angle_increment'])
            self._pub_scan.publish(scan_to_msg(layout.ranges(ground), layout, header.stamp,
                                               frame))
        if want_grid:
            self._pub_grid.publish(grid_to_msg(grid, projector.grid_spec, header.stamp, frame))
        if want_points:
            self._pub_points.publish(points_to_cloud(points, header.stamp, frame))
        if want_grid_image:
            img = render_grid(grid, self.params['footprint_radius'], grid_spec=projector.grid_spec)
            msg = array_to_image(img, 'rgb8', header)
            msg.header.frame_id = frame
            self._pub_grid_image.publish(msg)

    # -- diagnostics --------------------------------------------------------------------------
    def diagnostics_status(self):
        """Build the node's DiagnosticStatus from the current counters."""
        with self._stats_lock:
            lat = np.array(self._latencies) if self._latencies else None
            proc = np.array(self._proc_times) if self._proc_times else None
            done = list(self._done_times)
            processed, bad, err = self.processed, self.bad_frames, self.last_error
            warned = self.decoder_warnings
        now = time.monotonic()
        recent = [t for t in done if now - t <= 5.0]
        fps = (len(recent) - 1) / (recent[-1] - recent[0]) if len(recent) > 1 and \
            recent[-1] > recent[0] else 0.0
        pipeline = self.pipeline
        state = self.lifecycle_state
        st = DiagnosticStatus(name=f'{self.get_name()}: segmentation',
                              hardware_id=pipeline.engine.describe() if pipeline else 'none')
        stale_after = self.params['input_stale_timeout']
        since = now - (self._last_input_time or self._start_time)
        if state != 'active':
            st.level = DiagnosticStatus.ERROR if self.failure else DiagnosticStatus.WARN
            st.message = f'lifecycle state {state}' + (f': {self.failure}' if self.failure
                                                       else '')
        elif not self.received:
            st.level = DiagnosticStatus.ERROR if since > 3 * stale_after else \
                DiagnosticStatus.WARN
            st.message = f'no images received on {self.image_topic}'
        elif since > stale_after:
            st.level = DiagnosticStatus.ERROR if since > 3 * stale_after else \
                DiagnosticStatus.WARN
            st.message = f'input stale: no image on {self.image_topic} for {since:.1f} s'
        elif not any(self._wanted(pub) for pub in self._pubs):
            st.level, st.message = DiagnosticStatus.OK, \
                'idle: nothing subscribes to the outputs, so no frame is decoded or segmented'
        elif self._info_error and self._wanted(self._pub_grid):
            st.level, st.message = DiagnosticStatus.WARN, \
                f'grid not published: {self._info_error}'
        elif getattr(pipeline.engine if pipeline else None, 'server_error', ''):
            st.level, st.message = DiagnosticStatus.ERROR, \
                f'inference server failing ({bad} frames failed): ' \
                f'{pipeline.engine.server_error}'
        elif bad and processed == 0:
            st.level, st.message = DiagnosticStatus.ERROR, f'every frame failed: {err}'
        elif bad:
            st.level, st.message = DiagnosticStatus.OK, f'running; {bad} bad frames (last: {err})'
        else:
            st.level, st.message = DiagnosticStatus.OK, 'running'

        def ms(a, q):
            return f'{1000.0 * float(np.percentile(a, q)):.1f}' if a is not None else 'n/a'

        values = {
            'fps': f'{fps:.1f}',
            'latency_p50_ms': ms(lat, 50), 'latency_p95_ms': ms(lat, 95),
            'processing_p50_ms': ms(proc, 50), 'processing_p95_ms': ms(proc, 95),
            'frames_received': str(self.received), 'frames_processed': str(processed),
            'frames_dropped': str(self.dropped), 'frames_bad': str(bad),
            'frames_decoder_warnings': str(warned),
            'input_age_s': f'{since:.2f}',
            'lifecycle_state': state,
            'backend': pipeline.engine.backend if pipeline else 'none',
            'devices': ', '.join(pipeline.engine.devices) if pipeline else '',
            'backend_selection': ' | '.join(pipeline.backend_notes) if pipeline else '',
            'model': pipeline.card.model_path if pipeline else self.params['model_file_path'],
            'camera_info': self._info_error or (
                'ok' if self._infos else f'none yet on {self.info_topic}'),
            'camera_pose': self._pose_source.status,
        }
        trips = getattr(pipeline.engine if pipeline else None, 'round_trips', None)
        if trips is not None:
            # Remote backends: the server round trip, apart from the local processing.
            rtt = np.array(trips) if trips else None
            values['server_round_trip_p50_ms'] = ms(rtt, 50)
            values['server_round_trip_p95_ms'] = ms(rtt, 95)
            values['server_url'] = pipeline.engine.url
        st.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return st

    def _publish_diagnostics(self):
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [self.diagnostics_status()]
        self._pub_diag.publish(arr)

    @property
    def dropped(self):
        """Return how many frames a newer one replaced before the worker got to them."""
        slot = self._slot
        return self.dropped_before + (slot.dropped if slot is not None else 0)

    @property
    def image_topic(self):
        """Return the resolved image topic the node listens (or would listen) on."""
        name = 'image/compressed' if self.params['image_transport'] == 'compressed' \
            else 'image'
        return self.resolve_topic_name(name)

    @property
    def info_topic(self):
        return self.resolve_topic_name('camera_info')

    def destroy_node(self):
        """Stop the worker (finishing or dropping the in-flight frame), then destroy."""
        # Tolerates a node whose constructor failed half-way (rclpy destroys it at shutdown).
        if getattr(self, '_pipeline_lock', None) is not None:
            self._stop_work()
            self._release_pipeline()
        return super().destroy_node()


def start_segmentation_node(**kwargs):
    """
    Build a :class:`SegmentationNode` from ``kwargs`` and :meth:`~SegmentationNode.autostart` it.

    On a StartupError the node is destroyed before the error is raised again.
    """
    node = SegmentationNode(**kwargs)
    try:
        node.autostart()
    except StartupError:
        node.destroy_node()
        raise
    return node


def main(args=None):
    """Run ``segmentation_node``; exit code 0 on SIGINT/SIGTERM, 2 on a startup error."""
    # Corrupt images are counted and logged (throttled) by the node: keep OpenCV's own
    # per-frame decoder warnings out of the log.
    logging = getattr(getattr(cv2, 'utils', None), 'logging', None)
    if logging is not None:
        logging.setLogLevel(logging.LOG_LEVEL_FATAL)
    finish_profile = profile_from_environment('segmentation_node')
    try:
        return spin_node(start_segmentation_node, args)
    finally:
        finish_profile()


if __name__ == '__main__':
    raise SystemExit(main())
