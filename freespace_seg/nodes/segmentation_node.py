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

Subscribes ``image`` (or ``image/compressed``), ``camera_info`` and ``odom``
(nav_msgs/Odometry, read only with ``grid_agreement_frames`` > 1), runs the model off the
executor thread on the newest frame only (``num_workers`` frames at once, each worker with its
own engine, outputs in arrival order), and publishes at camera resolution, each header
equal to its input's: ``segmentation/mask`` (mono8 class ids), ``segmentation/colored_mask``,
``segmentation/overlay`` (rgb8), ``segmentation/confidence`` (mono8, P(free) x 255) and
``free_space/mask`` (mono8, 255 = free). From the same mask, once CameraInfo has arrived, it
projects the free floor onto the ground and publishes in ``base_frame`` with the image's
stamp: ``free_space/grid`` (nav_msgs/OccupancyGrid), ``free_space/obstacles``
(sensor_msgs/PointCloud2), ``free_space/scan`` (sensor_msgs/LaserScan) and
``free_space/grid_image`` (rgb8), all under one grid rule (:class:`GridRule`), and with
``grid_agreement_frames`` free only where the last grids agree in the odom frame
(:mod:`freespace_seg.ground.agreement`). With
``mask_horizon`` and a CameraInfo, the masks are blocked above the horizon
(:mod:`freespace_seg.ground.horizon`). Plus ``/diagnostics``. Parameters:
:data:`freespace_seg.nodes.params.SEGMENTATION_PARAMS`.
"""

import collections
import functools
import math
import os
import threading
import time

import cv2
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from freespace_seg.common.profiling import name_native_thread, profile_from_environment
from freespace_seg.driving.driver_logic import DriverConfig
from freespace_seg.ground.agreement import GridAgreement, odom_pose, PoseHistory
from freespace_seg.ground.frame import (CameraInfoHistory, FrameProcessor, GROUND_PARAMS,
                                        GroundParams, TOPICS)
from freespace_seg.ground.occlusion import OcclusionMemory
from freespace_seg.nodes.camera_pose import CameraPoseSource
from freespace_seg.nodes.msgs import frame_output_msg, make_decoder
from freespace_seg.nodes.params import ENGINE_OPTION_PARAMS, palette_from_ints, SEGMENTATION_PARAMS
from freespace_seg.nodes.ros_util import (declare_and_validate, ends_in, InOrderGate,
                                          LATCHED_QOS, LatestSlot, on_parameter_changes,
                                          qos_from_name, spin_node, StartupError)
from freespace_seg.nodes.segmentation_status import status_level
from freespace_seg.nodes.stderr_capture import decode_capturing, summarize
from freespace_seg.perception.engines import EngineError
from freespace_seg.perception.image_codec import ImageCodecError
from freespace_seg.perception.model_card import ModelCardError, mount_outside_training
from freespace_seg.perception.pipeline import packaged_model_path, SegmentationPipeline
from freespace_seg.perception.postprocess import palette_lut
from nav_msgs.msg import OccupancyGrid, Odometry
import numpy as np
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.qos import qos_profile_sensor_data
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, LaserScan, PointCloud2

#: freespace_driver's default blind_distance (m): unseen floor nearer than this is passable
DRIVER_BLIND_DISTANCE = DriverConfig().blind_distance
#: the parameter specs by name, to check changes before applying them
SEGMENTATION_SPECS = {spec.name: spec for spec in SEGMENTATION_PARAMS}
#: seconds between repeats of the same error in the log
ERROR_THROTTLE_S = 5.0
#: the grid's QoS: reliable + transient_local, depth 1. Nav2's StaticLayer subscribes
#: transient_local by default (map_subscribe_transient_local: true) and volatile
#: subscribers (the driver, rviz) match it too; a late joiner gets the newest grid at once.
GRID_QOS = LATCHED_QOS
#: the outputs in the order their publishers are created (output_topics), and their types
PUBLISHED = (('mask', Image), ('colored', Image), ('overlay', Image), ('free', Image),
             ('grid', OccupancyGrid), ('points', PointCloud2), ('grid_image', Image),
             ('confidence', Image), ('scan', LaserScan))


class FrameWorker:
    """
    What one worker thread of :class:`SegmentationNode` owns: a frame path of its own.

    ``frames``: its :class:`FrameProcessor` (its pipeline, hence its engine, whose output
    buffer is reused from run to run, and its buffers, projector and horizon cut);
    ``reuse``: the output messages it fills (see :func:`frame_output_msg`); ``lock``: held
    while it processes a frame and while its pipeline is swapped or released; ``thread``:
    the thread running it while the node is active; ``frames_done``: the frames it has
    computed (published or dropped late).
    """

    def __init__(self, index, frames):
        self.index = index
        self.frames = frames
        self.reuse = {}
        self.lock = threading.Lock()
        self.thread = None
        self.frames_done = 0

    @property
    def pipeline(self):
        """Return the worker's SegmentationPipeline (None while it has none)."""
        return self.frames.pipeline


class SegmentationNode(LifecycleNode):
    """
    Free-floor segmentation of camera images with a model described by a model card.

    A managed (lifecycle) node. ``configure`` loads the model and engine (one per worker,
    ``num_workers``) and creates the publishers; ``activate`` subscribes and starts the
    workers; ``deactivate`` stops them and frees the engines; ``cleanup`` and ``shutdown``
    release everything. The constructor makes no transition: with ``autostart`` (the
    default) :meth:`autostart` configures and activates, called from :func:`main` through
    :func:`start_segmentation_node`, as yolo_ros does from its main.
    """

    def __init__(self, node_name='freespace_segmentation', **kwargs):
        super().__init__(node_name, **kwargs)
        #: the lifecycle state's label, kept by the transition callbacks (see _ends_in)
        self._lifecycle_label = 'unconfigured'
        self.params = declare_and_validate(self, SEGMENTATION_PARAMS)
        p = self.params
        try:
            ground = GroundParams.from_params(p)
        except ValueError as e:
            raise StartupError(f'invalid grid parameters: {e}') from e
        try:
            self._decode = make_decoder(p['image_decoder'])
        except ImageCodecError as e:
            raise StartupError(str(e)) from e
        decoder = getattr(self._decode, 'decoder_name', 'builtin')
        why = getattr(self._decode, 'fallback_reason', '')
        self.get_logger().info(f'image decoder: {decoder}'
                               + (f' (auto: {why})' if why else ''))
        self._publish_all = p['publish_unsubscribed']
        self._infos = CameraInfoHistory()
        self._info_error = ''
        self._pose_source = CameraPoseSource(self, p['use_tf'], p['base_frame'],
                                             p['tf_timeout'])
        self._sub = self._info_sub = self._odom_sub = None
        self._output_pubs = {}
        self._slot = None
        # One frame path per worker (ground/frame.py); each holds its pipeline while
        # configured, and its lock while it processes a frame or its model is swapped.
        # The grids' agreement in the odom frame, one for all workers (off by default).
        self._odom = PoseHistory()
        self._odom_frame_note = ''
        agreement = GridAgreement(ground.agreement)
        occlusion = OcclusionMemory(ground.occlusion)
        self._workers = [
            FrameWorker(i, FrameProcessor(None, ground, alpha=p['overlay_alpha'],
                                          footprint_radius=p['footprint_radius'], reuse=True,
                                          agreement=agreement, occlusion=occlusion))
            for i in range(p['num_workers'])]
        #: the last frame's agreement: None (off), True (applied), False (no odometry)
        self._agreement_state = None
        #: the same for the occlusion memory
        self._occlusion_state = None
        #: the worker whose frame was published last (the read-only views' projector...)
        self._latest = self._workers[0]
        # With several workers, frames finish out of order: the gate lets them out in order.
        self._in_order = InOrderGate() if len(self._workers) > 1 else None
        self.failure = ''
        #: the warning when the camera mount is outside the model's training ranges, or None
        self.mount_note = None
        self._tf_mount_key = None
        #: the warning when the camera sees no floor within freespace_driver's default
        #: blind_distance (:meth:`check_view`), or None
        self.view_note = None
        #: the nearest floor in view (m, to 1 cm) that check_view last judged, None before
        self.checked_view = None

        # Counters and recent latencies for diagnostics (written by the workers).
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

    @property
    def pipeline(self):
        """Return the first worker's SegmentationPipeline; None while unconfigured, inactive."""
        return self._workers[0].pipeline

    @property
    def pipelines(self):
        """Return each worker's SegmentationPipeline (None where it has none), in order."""
        return tuple(w.pipeline for w in self._workers)

    def _set_pipelines(self, pipelines):
        """Give each worker its pipeline (None: none), each swapped under the worker's lock."""
        for worker, pipeline in zip(self._workers, pipelines):
            with worker.lock:
                worker.frames.pipeline = pipeline

    # -- lifecycle ----------------------------------------------------------------------------
    def _load_pipeline(self, model_file_path, backend=None, num_threads=None, first=True):
        p = self.params
        model_path = model_file_path or packaged_model_path()
        backend = p['backend'] if backend is None else backend
        num_threads = p['num_threads'] if num_threads is None else num_threads
        options = {k: p[k] for k in ENGINE_OPTION_PARAMS}
        if not first:
            options['force_engine_update'] = False   # the first worker has just rebuilt it
        try:
            # Empty: the pipeline picks the packaged model (INT8 on the CPU backend).
            pipeline = SegmentationPipeline(model_file_path or None, backend, num_threads,
                                            engine_options=options)
        except (ModelCardError, EngineError, OSError) as e:
            raise StartupError(f'cannot load model {model_path}: {e}') from e
        except Exception as e:  # noqa: B902 - rclpy would swallow it in a transition
            raise StartupError(f'cannot load model {model_path}: {type(e).__name__}: {e}') \
                from e
        if first:
            for note in pipeline.backend_notes:
                self.get_logger().info(f'backend {note}')
        return pipeline

    def _load_pipelines(self, model_file_path, backend=None, num_threads=None):
        """
        Return one new pipeline per worker; StartupError (none left open) if one fails.

        The first one picks the backend (``auto``...); the others are loaded on the backend
        it chose, so every worker runs the same engine or the load fails.
        """
        first = self._load_pipeline(model_file_path, backend, num_threads)
        pipelines = [first]
        try:
            for i in range(1, len(self._workers)):
                try:
                    pipelines.append(self._load_pipeline(
                        model_file_path, first.engine.backend, num_threads, first=False))
                except StartupError as e:
                    raise StartupError(f'worker {i + 1} of {len(self._workers)}: {e}') from e
        except BaseException:
            for pipeline in pipelines:
                pipeline.close()
            raise
        if len(pipelines) > 1:
            self.get_logger().info(f'{len(pipelines)} workers, each with its own '
                                   f'{first.engine.describe()}')
        return pipelines

    @ends_in('inactive', 'unconfigured')
    def on_configure(self, state):
        """Load the model and engines (one per worker), and create the publishers."""
        try:
            pipelines = self._load_pipelines(self.params['model_file_path'])
            lut = self._palette_lut(self.params['color_palette'], pipelines[0].card)
        except StartupError as e:
            self.failure = str(e)
            self.get_logger().error(f'configure failed: {e}')
            return TransitionCallbackReturn.FAILURE
        for worker in self._workers:
            worker.frames.color_lut = lut
        self._set_pipelines(pipelines)
        pipeline = pipelines[0]
        p = self.params
        if len(self._workers) > 1 and p['num_threads'] == 0 and \
                pipeline.engine.backend == 'onnxruntime':
            self.get_logger().warning(
                f'num_workers {len(self._workers)} with num_threads 0: the engine of each '
                'worker uses one thread per core; set num_threads (1 on 2 cores) to share them')
        out_qos = qos_from_name(p['output_qos'], p['output_qos_depth'])
        self._output_pubs = {
            name: self.create_lifecycle_publisher(
                kind, TOPICS[name], GRID_QOS if name == 'grid' else out_qos)
            for name, kind in PUBLISHED}
        card = pipeline.card
        self.get_logger().info(
            f'configured: model {card.name} ({card.model_path}), input '
            f'{card.input_width}x{card.input_height} {card.resize_mode}, backend '
            f'{pipeline.engine.describe()}')
        self._check_mount(card, self.params)
        return TransitionCallbackReturn.SUCCESS

    def _check_mount(self, card, params):
        """Warn when the camera mount is outside the model's training ranges (mount_note)."""
        note = mount_outside_training(card, params['camera_height'], params['camera_pitch'],
                                      models_dir=os.path.dirname(packaged_model_path()))
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

    def check_view(self, projector):
        """
        Warn when the nearest floor in view lies beyond freespace_driver's blind zone.

        Once per distinct distance (1 cm), at most every 5 s; :attr:`view_note` has the
        warning, or None. An obstacle nearer than that floor is never in view, and the driver
        passes unseen floor only within its ``blind_distance`` (0.45 m by default), so it
        stands still before such a band or drives into it blind.
        """
        near = projector.nearest_floor
        key = round(near, 2) if math.isfinite(near) else near
        if key == self.checked_view:
            return
        self.checked_view = key
        note = None
        if near > DRIVER_BLIND_DISTANCE:
            seen = f'from {near:.2f} m on' if math.isfinite(near) else 'nowhere'
            note = (f'the camera sees the floor {seen} ({self.params["base_frame"]} origin): '
                    'nothing nearer is ever in view, and freespace_driver passes unseen '
                    f'floor only within its blind_distance ({DRIVER_BLIND_DISTANCE} m by '
                    'default); pitch the camera further down or mount it lower')
            # A mount from TF may wander by centimetres: at most one warning per 5 s.
            self.get_logger().warning(note, throttle_duration_sec=ERROR_THROTTLE_S)
        self.view_note = note

    @ends_in('active', 'inactive')
    def on_activate(self, state):
        """Reload the engines if deactivate freed them, subscribe, and start the workers."""
        if self.pipeline is None:
            try:
                self._set_pipelines(self._load_pipelines(self.params['model_file_path']))
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
        # Odometry for grid_agreement_frames (cheap at a base's 20 Hz; kept while active, so
        # that the agreement can be switched on at run time).
        # Sensor-data QoS, as freespace_driver: matches a reliable or best-effort publisher.
        self._odom_sub = self.create_subscription(Odometry, 'odom', self._on_odom,
                                                  qos_profile_sensor_data)
        self._slot = LatestSlot()
        many = len(self._workers) > 1
        for worker in self._workers:
            name = f'segmentation_worker_{worker.index}' if many else 'segmentation_worker'
            worker.thread = threading.Thread(target=self._work, args=(worker, self._slot),
                                             name=name, daemon=True)
            worker.thread.start()
        self._last_input_time = None
        self._start_time = time.monotonic()
        result = super().on_activate(state)
        self.get_logger().info(f'active: listening on {self._sub.topic_name}')
        return result

    def _stop_work(self):
        """Unsubscribe and stop the workers, each finishing or dropping its in-flight frame."""
        for sub in (self._sub, self._info_sub, self._odom_sub):
            if sub is not None:
                self.destroy_subscription(sub)
        self._sub = self._info_sub = self._odom_sub = None
        if self._slot is not None:
            self.dropped_before += self._slot.dropped
            self._slot.close()
        for worker in self._workers:
            thread = worker.thread
            if thread is not None and thread.is_alive() and \
                    threading.current_thread() is not thread:
                thread.join(timeout=5.0)
            worker.thread = None
        self._slot = None

    def _release_pipeline(self):
        for worker in self._workers:
            with worker.lock:
                if worker.pipeline is not None:
                    worker.pipeline.close()
                worker.frames.pipeline = None

    @ends_in('inactive', 'active')
    def on_deactivate(self, state):
        """Stop work and free the engines' memory (activate loads them again)."""
        self._stop_work()
        self._release_pipeline()
        self.get_logger().info('deactivated: engine released')
        return super().on_deactivate(state)

    @ends_in('unconfigured', 'inactive')
    def on_cleanup(self, state):
        """Release the publishers and the model."""
        self._release_pipeline()
        for pub in self._output_pubs.values():
            self.destroy_lifecycle_publisher(pub)
        self._output_pubs = {}
        for worker in self._workers:
            worker.frames.reset()
        return TransitionCallbackReturn.SUCCESS

    @ends_in('finalized', 'finalized')
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
        """Apply checked parameter changes; nothing unless all of them fit together."""
        try:
            ready = self._prepare_changes(changes)
        except (StartupError, ValueError) as e:
            return str(e)
        self._commit_changes(ready, changes)
        return None

    def _prepare_changes(self, changes):
        """
        Build what ``changes`` need (a new model, palette, ground parameters); change nothing.

        on_parameter_changes has checked every value alone; this checks that they fit
        together. Returns a dict for :meth:`_commit_changes`; raises StartupError or
        ValueError (a new pipeline loaded on the way is closed again).
        """
        ready = {}
        try:
            if self.pipeline is not None and any(
                    k in changes for k in ('model_file_path', 'backend', 'num_threads')):
                # A reconfigure: load the new model / backend for every worker, each swapped
                # in between two of its frames.
                ready['pipelines'] = self._load_pipelines(
                    changes.get('model_file_path', self.params['model_file_path']),
                    changes.get('backend'), changes.get('num_threads'))
            pipeline = ready['pipelines'][0] if 'pipelines' in ready else self.pipeline
            if pipeline is not None and ('color_palette' in changes or 'pipelines' in ready):
                ready['color_lut'] = self._palette_lut(
                    list(changes.get('color_palette', self.params['color_palette'])),
                    pipeline.card)
            if any(name in GROUND_PARAMS for name in changes):
                merged = dict(self.params)
                merged.update({k: list(v) if k == 'grid_origin' else v
                               for k, v in changes.items()})
                ready['ground'] = GroundParams.from_params(merged)
        except BaseException:
            for pipeline in ready.get('pipelines', ()):
                pipeline.close()
            raise
        return ready

    def _commit_changes(self, ready, changes):
        """Apply what :meth:`_prepare_changes` built, and the plain values of ``changes``."""
        agreement = occlusion = None
        before = self._workers[0].frames.ground_params
        if 'ground' in ready and ready['ground'].agreement != before.agreement:
            agreement = GridAgreement(ready['ground'].agreement)
        if 'ground' in ready and ready['ground'].occlusion != before.occlusion:
            occlusion = OcclusionMemory(ready['ground'].occlusion)
        for worker in self._workers:
            if 'ground' in ready:
                worker.frames.ground_params = ready['ground']
            if agreement is not None:
                worker.frames.agreement = agreement
            if occlusion is not None:
                worker.frames.occlusion = occlusion
            if 'color_lut' in ready:
                worker.frames.color_lut = ready['color_lut']
        new_pipelines = ready.get('pipelines')
        new_pipeline = new_pipelines[0] if new_pipelines else None
        if new_pipelines:
            for worker, pipeline in zip(self._workers, new_pipelines):
                with worker.lock:
                    old, worker.frames.pipeline = worker.pipeline, pipeline
                if old is not None:
                    old.close()
            self.get_logger().info(f'model swapped to {new_pipeline.card.model_path} on '
                                   f'{new_pipeline.engine.describe()}')
        for name, value in changes.items():
            if name in self.params:
                self.params[name] = list(value) if name in ('color_palette', 'grid_origin') \
                    else value
        if self.pipeline is not None and (new_pipeline is not None
                                          or {'camera_height', 'camera_pitch'} & set(changes)):
            self._check_mount(self.pipeline.card, self.params)
        for worker in self._workers:
            worker.frames.alpha = float(self.params['overlay_alpha'])
            worker.frames.footprint_radius = float(self.params['footprint_radius'])
        self._publish_all = bool(self.params['publish_unsubscribed'])

    # -- data path ----------------------------------------------------------------------------
    def _on_image(self, msg):
        slot = self._slot
        if slot is None:
            return
        self.received += 1
        self._last_input_time = time.monotonic()
        slot.put((self.received, msg))   # numbered in arrival order, for the InOrderGate

    def _on_info(self, msg):
        self._infos.add(msg)

    def _on_odom(self, msg):
        self._odom.add(*odom_pose(msg))
        base = self.params['base_frame']
        child = msg.child_frame_id
        self._odom_frame_note = '' if not child or child == base else (
            f'odometry of {child}, grids in {base}: poses used as they are')

    def odom_pose_at(self, t_ns):
        """Return the odometry (x, y, yaw) received for time ``t_ns``, within 0.2 s, or None."""
        return self._odom.at(t_ns)

    def _odom_at(self, header):
        """Return ((x, y, yaw), stamp s) of the odometry at an image's stamp, or None."""
        t_ns = Time.from_msg(header.stamp).nanoseconds
        pose = self._odom.at(t_ns)
        return None if pose is None else (pose, t_ns * 1e-9)

    def _wanted(self, pub):
        return self._publish_all or pub.get_subscription_count() > 0

    # -- read-only views, for tests and tools ---------------------------------------------------
    @property
    def output_topics(self):
        """Return the resolved names of the output topics; empty while unconfigured."""
        return [pub.topic_name for pub in self._output_pubs.values()]

    @property
    def wanted_outputs(self):
        """Return the output topics the next frame is published on (subscribed, or all)."""
        return [pub.topic_name for pub in self._output_pubs.values() if self._wanted(pub)]

    def wants(self, topic):
        """Return whether the next frame is published on output ``topic`` (name as created)."""
        return self.resolve_topic_name(topic) in self.wanted_outputs

    @property
    def mount(self):
        """Return the :class:`CameraMount` of the camera_* parameters now in use."""
        return self._workers[0].frames.ground_params.mount

    @property
    def grid_spec(self):
        """Return the :class:`GridSpec` of the grid_* parameters now in use."""
        return self._workers[0].frames.ground_params.grid_spec

    @property
    def overlay_alpha(self):
        """Return the overlay's blending weight now in use."""
        return self._workers[0].frames.alpha

    @property
    def publish_unsubscribed(self):
        """Return whether outputs nobody subscribes to are published anyway, now."""
        return self._publish_all

    @property
    def projector(self):
        """Return the ground projector of the latest frame, None before one was projected."""
        return self._latest.frames.projector

    @property
    def horizon(self):
        """Return the (mask_horizon, horizon_margin_deg) now in use."""
        params = self._workers[0].frames.ground_params
        return params.mask_horizon, params.horizon_margin_deg

    @property
    def horizon_cut(self):
        """Return the :class:`HorizonCut` of the latest frame cut at the horizon, or None."""
        return self._latest.frames.horizon

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
        """Return the (first) worker thread while active, else None."""
        return self._workers[0].thread

    @property
    def worker_threads(self):
        """Return the threads that process the frames (``num_workers``) while active, else ()."""
        return tuple(w.thread for w in self._workers if w.thread is not None)

    @property
    def worker_frame_counts(self):
        """Return how many frames each worker has computed (published or dropped late)."""
        with self._stats_lock:
            return tuple(w.frames_done for w in self._workers)

    @property
    def late_dropped(self):
        """Return the frames computed but dropped because a later frame had been published."""
        return self._in_order.late if self._in_order is not None else 0

    @property
    def frame_waiting(self):
        """Return whether a received frame waits for a worker (a newer one replaces it)."""
        slot = self._slot
        return slot is not None and slot.waiting

    @property
    def grid_rule(self):
        """Return the :class:`GridRule` of the grid_* parameters."""
        return self._workers[0].frames.ground_params.rule

    @property
    def grid_occlusion(self):
        """Return the grids' :class:`~freespace_seg.ground.occlusion.OcclusionParams`."""
        return self._workers[0].frames.ground_params.occlusion

    @property
    def grid_agreement(self):
        """Return the grids' :class:`~freespace_seg.ground.agreement.AgreementParams`."""
        return self._workers[0].frames.ground_params.agreement

    @property
    def grid_mask_width(self):
        """Return the grid_mask_width now in use (0: the mask is projected as it is)."""
        return self._workers[0].frames.ground_params.mask_width

    def _work(self, worker, slot):
        # Seen as seg_worker (seg_worker_<i> with several) by top -H and bench's per-thread CPU.
        many = len(self._workers) > 1
        name_native_thread(f'seg_worker_{worker.index}' if many else 'seg_worker')
        while True:
            item = slot.take(timeout=0.5)
            if item is None:
                if slot.closed:
                    return
                continue
            seq, msg = item
            try:
                with worker.lock:
                    if worker.pipeline is None:
                        continue
                    self._process(worker, seq, msg)
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

    def _process(self, worker, seq, msg):
        """
        Make the outputs someone subscribes to (or all) of frame ``seq``, and publish them.

        A single worker publishes each output as soon as it is made. With several, a frame's
        outputs are collected and published together through the :class:`InOrderGate`,
        which drops them when a frame that arrived later has already been published.
        """
        want = {name for name, pub in self._output_pubs.items() if self._wanted(pub)}
        if not want:
            return
        t0 = time.perf_counter()
        rgb = self._decode_frame(msg)
        header = msg.header
        publish = functools.partial(self._publish, worker, header)
        gate = self._in_order
        made = []
        # CameraInfo and TF are looked up after the segmentation, as late as possible.
        out = worker.frames.process(
            rgb, want, functools.partial(self._camera_info, header),
            functools.partial(self._camera_transform, header),
            ready=publish if gate is None else lambda name, out: made.append(name),
            odom=functools.partial(self._odom_at, header))
        missing = []
        for param, attr, state in (('grid_agreement_frames', '_agreement_state', out.agreement),
                                   ('grid_occlusion_memory', '_occlusion_state', out.occlusion)):
            if state is None and not out.has_ground:
                continue
            if state is False and getattr(self, attr) is not False:
                missing.append(param)
            setattr(self, attr, state)
        if missing:
            self.get_logger().warning(
                f'{" and ".join(missing)} {"is" if len(missing) == 1 else "are"} on but no '
                f'odometry on {self.odom_topic} within 0.2 s of the image stamp: grids pass '
                'unfiltered until it comes', throttle_duration_sec=ERROR_THROTTLE_S)
        if out.ground_error is not None:
            self._info_error = f'unusable CameraInfo: {out.ground_error}'
        elif out.has_ground or out.horizon is not None:
            self._info_error = ''
        if out.has_ground:
            self.check_view(worker.frames.projector)
        published = True
        if gate is not None:
            def publish_all():
                for name in made:
                    publish(name, out)
                self._latest = worker
            published = gate.publish(seq, publish_all)
        done = time.perf_counter()
        latency = (self.get_clock().now() - Time.from_msg(header.stamp)).nanoseconds * 1e-9
        with self._stats_lock:
            worker.frames_done += 1
            self._proc_times.append(done - t0)
            if published:
                self.processed += 1
                self._latencies.append(latency)
                self._done_times.append(time.monotonic())

    def _camera_info(self, header):
        """Return the CameraInfo for an image (None, noted for diagnostics, when none came)."""
        info = self._infos.match(header)
        if info is None:
            self._info_error = f'no CameraInfo received on {self.info_topic}'
        return info

    def _camera_transform(self, header):
        """Return TF's base <- optical transform at the image's stamp, None: the parameters."""
        transform = self._pose_source.lookup(header.frame_id, header.stamp)
        if transform is not None:
            self.check_tf_mount(transform)
        return transform

    def _publish(self, worker, header, name, out):
        """Publish output ``name`` of ``worker``'s :class:`FrameOutputs` ``out`` as its message."""
        p = self.params
        self._output_pubs[name].publish(frame_output_msg(
            name, out, header, p['base_frame'], worker.reuse,
            p['color_segmentation_mask_encoding']))

    # -- diagnostics --------------------------------------------------------------------------
    def diagnostics_status(self):
        """Build the node's DiagnosticStatus from the current counters."""
        with self._stats_lock:
            lat = np.array(self._latencies) if self._latencies else None
            proc = np.array(self._proc_times) if self._proc_times else None
            done = list(self._done_times)
            processed, bad, err = self.processed, self.bad_frames, self.last_error
            warned = self.decoder_warnings
            per_worker = [w.frames_done for w in self._workers]
        now = time.monotonic()
        recent = [t for t in done if now - t <= 5.0]
        fps = (len(recent) - 1) / (recent[-1] - recent[0]) if len(recent) > 1 and \
            recent[-1] > recent[0] else 0.0
        pipeline = self.pipeline
        # Each worker's pipeline read once: a transition in another thread may release it.
        engines = [p.engine for p in self.pipelines if p is not None]
        state = self.lifecycle_state
        st = DiagnosticStatus(name=f'{self.get_name()}: segmentation',
                              hardware_id=pipeline.engine.describe() if pipeline else 'none')
        stale_after = self.params['input_stale_timeout']
        since = now - (self._last_input_time or self._start_time)
        grid = self._output_pubs.get('grid')
        st.level, st.message = status_level(
            state, self.failure, self.received, since, stale_after, self.image_topic,
            idle=not any(self._wanted(pub) for pub in self._output_pubs.values()),
            grid_error=self._info_error if grid is not None and self._wanted(grid) else '',
            server_error=next((e.server_error for e in engines
                               if getattr(e, 'server_error', '')), ''),
            bad=bad, processed=processed, last_error=err)

        def ms(a, q):
            return f'{1000.0 * float(np.percentile(a, q)):.1f}' if a is not None else 'n/a'

        values = {
            'fps': f'{fps:.1f}',
            'latency_p50_ms': ms(lat, 50), 'latency_p95_ms': ms(lat, 95),
            'processing_p50_ms': ms(proc, 50), 'processing_p95_ms': ms(proc, 95),
            'frames_received': str(self.received), 'frames_processed': str(processed),
            'frames_dropped': str(self.dropped), 'frames_bad': str(bad),
            'frames_decoder_warnings': str(warned),
            'workers': str(len(self._workers)),
            'frames_per_worker': ', '.join(str(n) for n in per_worker),
            'frames_dropped_late': str(self.late_dropped),
            'input_age_s': f'{since:.2f}',
            'lifecycle_state': state,
            'backend': pipeline.engine.backend if pipeline else 'none',
            'devices': ', '.join(pipeline.engine.devices) if pipeline else '',
            'backend_selection': ' | '.join(pipeline.backend_notes) if pipeline else '',
            'model': pipeline.card.model_path if pipeline else self.params['model_file_path'],
            'camera_info': self._info_error or (
                'ok' if self._infos else f'none yet on {self.info_topic}'),
            'camera_pose': self._pose_source.status,
            'nearest_floor_in_view_m': self._nearest_floor_text(),
            'grid_agreement': self.agreement_status,
            'grid_occlusion': self.occlusion_status,
        }
        if engines and getattr(engines[0], 'round_trips', None) is not None:
            # Remote backends: the server round trip, apart from the local processing.
            trips = [t for e in engines for t in list(e.round_trips)]
            rtt = np.array(trips) if trips else None
            values['server_round_trip_p50_ms'] = ms(rtt, 50)
            values['server_round_trip_p95_ms'] = ms(rtt, 95)
            values['server_url'] = pipeline.engine.url
        st.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return st

    def _nearest_floor_text(self):
        """Return the nearest floor in view (m) of the latest projected frame, for diagnostics."""
        projector = self.projector
        if projector is None:
            return 'n/a (no grid output yet)'
        near = projector.nearest_floor
        return f'{near:.2f}' if math.isfinite(near) else 'none (no pixel sees the floor)'

    def _publish_diagnostics(self):
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [self.diagnostics_status()]
        self._pub_diag.publish(arr)

    @property
    def dropped(self):
        """
        Return how many received frames were dropped to keep the latency bounded.

        Those a newer one replaced before a worker got to them, and those computed but
        dropped late (:attr:`late_dropped`, only with several workers).
        """
        slot = self._slot
        return self.dropped_before + (slot.dropped if slot is not None else 0) + \
            self.late_dropped

    @property
    def image_topic(self):
        """Return the resolved image topic the node listens (or would listen) on."""
        name = 'image/compressed' if self.params['image_transport'] == 'compressed' \
            else 'image'
        return self.resolve_topic_name(name)

    @property
    def info_topic(self):
        return self.resolve_topic_name('camera_info')

    @property
    def odom_topic(self):
        return self.resolve_topic_name('odom')

    @property
    def agreement_status(self):
        """Return a short sentence on the grid agreement, for diagnostics."""
        params = self.grid_agreement
        return self._odom_filter_status(
            params.active, f'{params.needed} of the last {params.frames} grids',
            self._agreement_state)

    @property
    def occlusion_status(self):
        """Return a short sentence on the occlusion memory, for diagnostics."""
        params = self.grid_occlusion
        return self._odom_filter_status(
            params.active, f'obstacles of the last {params.memory:g} s', self._occlusion_state)

    def _odom_filter_status(self, active, text, state):
        """Return the status of a grid filter of the odom frame (``state`` as the frame's)."""
        if not active:
            return 'off'
        if state is None:
            text += ': no grid yet'
        elif state:
            text += f': applied (odometry on {self.odom_topic})'
        else:
            text += f': not applied, no odometry on {self.odom_topic} at the image stamps'
        return text + (f'; {self._odom_frame_note}' if self._odom_frame_note else '')

    def destroy_node(self):
        """Stop the workers (finishing or dropping the frames in flight), then destroy."""
        # Tolerates a node whose constructor failed half-way (rclpy destroys it at shutdown).
        if getattr(self, '_workers', None) is not None:
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
