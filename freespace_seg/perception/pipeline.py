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
The ROS-free segmentation pipeline: RGB image -> class mask at camera resolution.

    rgb (H, W, 3) -> Preprocessor -> engine -> decode_classes -> Letterbox.mask_to_source

The node, the demo, ``infer`` and the benchmarks all use this one class, so what is measured
without ROS is what runs on the robot.
"""

import dataclasses
import os
import time

from freespace_seg.common.machine import cpu_has_vnni
from freespace_seg.perception import postprocess
from freespace_seg.perception.engines import create_engine
from freespace_seg.perception.model_card import card_path_for_model, load_card
from freespace_seg.perception.preprocess import Preprocessor
import numpy as np


#: the default models: the EfficientNet-Lite0 model (docs/model/lite0.md) in fp32, and
#: its static INT8 (QDQ) copy, the default on the CPU
PACKAGED_MODEL = 'freespace_lite0.onnx'
PACKAGED_INT8_MODEL = 'freespace_lite0_int8.onnx'
#: the same model quantized with 7-bit weights (``quantize --weights int8-reduced``): the
#: default on x86-64 CPUs without VNNI, where ONNX Runtime's u8 x s8 kernels saturate with
#: full-range int8 weights (docs/model/int8_cpus.md)
PACKAGED_INT8R_MODEL = 'freespace_lite0_int8r.onnx'
#: the small UNet (from random weights), the default before: still shipped; what ``train
#: --init``, ``prune`` and ``tradeoff`` rebuild in torch
PACKAGED_UNET_MODEL = 'freespace_unet.onnx'
#: the EfficientNet-Lite0 model by its architecture's name (today the default's fp32 file)
PACKAGED_LITE0_MODEL = 'freespace_lite0.onnx'


def packaged_model_path(name=PACKAGED_MODEL):
    """Path of a model shipped in the package's ``models/`` directory (default: the fp32 one)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory('freespace_seg'), 'models', name)
        if os.path.isfile(path):
            return path
    except (ImportError, LookupError, ValueError, OSError):
        pass
    # Running from a source checkout.
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), 'models', name)


def packaged_int8_model(has_vnni=None):
    """
    Return the file name of the packaged INT8 copy for this CPU.

    :data:`PACKAGED_INT8R_MODEL` (7-bit weights) on an x86-64 CPU without VNNI, where it is
    installed; else :data:`PACKAGED_INT8_MODEL`. ``has_vnni``: :func:`cpu_has_vnni` unless
    given.
    """
    if has_vnni is None:
        has_vnni = cpu_has_vnni()
    if has_vnni is False and os.path.isfile(packaged_model_path(PACKAGED_INT8R_MODEL)):
        return PACKAGED_INT8R_MODEL
    return PACKAGED_INT8_MODEL


@dataclasses.dataclass
class Segmentation:
    """One image's segmentation (:meth:`SegmentationPipeline.segment_parts`); None: not made."""

    mask: np.ndarray
    confidence: object = None
    network_mask: object = None
    network_confidence: object = None
    letterbox: object = None


class SegmentationPipeline:
    """
    One model, ready to segment RGB images of any size.

    Per-size state (letterbox geometry and buffers) is built on the first image of each
    size and kept. Results are fresh arrays, safe to hand to other threads.
    """

    def __init__(self, model_path=None, backend='auto', num_threads=0, card=None,
                 engine_options=None):
        """
        Load ``model_path`` (its card beside it, or ``card``) on ``backend``.

        No ``model_path``: the packaged model, and where the chosen backend is ONNX Runtime
        on the CPU, its INT8 copy (same quality within 0.01 mIoU, about twice as fast on a
        CPU; see the README), when it is installed: the one with 7-bit weights on an x86-64
        CPU without VNNI (:func:`packaged_int8_model`).
        """
        packaged = not model_path and card is None
        model_path = model_path or packaged_model_path()
        card = card or load_card(card_path_for_model(model_path))
        # Run the file we were given, even if a copied card names another one.
        self.card = dataclasses.replace(card, model_file=os.path.abspath(model_path))
        self.engine, self.backend_notes = create_engine(self.card, backend, num_threads,
                                                        **(engine_options or {}))
        # The CPU's INT8 copy is looked up only for the packaged model (reads /proc/cpuinfo).
        int8_name = packaged_int8_model() if packaged else None
        int8 = packaged_model_path(int8_name) if packaged else ''
        if packaged and self.engine.backend == 'onnxruntime' and os.path.isfile(int8):
            int8_card = load_card(card_path_for_model(int8))
            int8_card = dataclasses.replace(int8_card, model_file=os.path.abspath(int8))
            engine, notes = create_engine(int8_card, 'onnxruntime', num_threads,
                                          **(engine_options or {}))
            self.engine.close()
            self.engine, self.card = engine, int8_card
            why = (' (7-bit weights: this x86-64 CPU has no VNNI, where full-range int8 '
                   'weights saturate)') if int8_name == PACKAGED_INT8R_MODEL else ''
            self.backend_notes += [f'onnxruntime: the CPU runs the packaged INT8 model '
                                   f'{int8_name}{why}'] + notes[1:]
        self._pre = {}
        # The output is decoded at once, so the engine may reuse its output buffer.
        self._run = getattr(self.engine, 'run_reusing_output', self.engine.run)
        self._net_mask = None
        if self.card.output_layout == 'NCHW' or self.card.output_kind == 'argmax':
            self._net_mask = np.empty((self.card.input_height, self.card.input_width),
                                      np.uint8)
        #: the network-sized (mask, confidence, letterbox) of the last segmentation
        self._network = (None, None, None)
        self.free_lut = postprocess.class_lut(self.card.free_space)
        self.color_lut = postprocess.palette_lut(self.card.palette)
        #: seconds spent in each stage of the last call to :meth:`segment`
        self.timings = {}

    def preprocessor(self, width, height):
        """Return the cached :class:`Preprocessor` for one input size."""
        pre = self._pre.get((width, height))
        if pre is None:
            if len(self._pre) > 8:
                self._pre.clear()
            pre = self._pre[(width, height)] = Preprocessor(self.card, width, height)
        return pre

    def segment(self, rgb):
        """Return the (H, W) uint8 class-id mask for an (H, W, 3) uint8 RGB image."""
        return self._segment(rgb, False)[0]

    def segment_with_confidence(self, rgb):
        """
        Return ``(mask, confidence)`` for an (H, W, 3) uint8 RGB image.

        ``confidence`` is (H, W) uint8: P(free) x 255 of each pixel, from the same network
        pixel as its class id (:func:`postprocess.free_probability`; nearest-neighbour back to
        the camera resolution like the mask, so a pixel's class and confidence agree). Its
        cost is in ``timings['confidence']``.
        """
        return self._segment(rgb, True)

    def segment_parts(self, rgb, confidence=False, network_confidence=False):
        """
        Return a :class:`Segmentation` of an (H, W, 3) uint8 RGB image.

        Its ``mask`` always; ``confidence`` (as :meth:`segment_with_confidence`) when asked
        for; ``network_mask`` (class ids at the network's input size, padding included: a
        buffer that the next call may overwrite) and ``letterbox`` always;
        ``network_confidence`` (P(free) x 255 at the network's size, fresh) when asked for.
        The network-sized outputs let a caller make a smaller copy of the masks without
        going through the camera's size (:class:`freespace_seg.ground.frame.NetworkShrink`).
        """
        mask, conf = self._segment(rgb, confidence, network_confidence)
        net_mask, net_conf, letterbox = self._network
        return Segmentation(mask, conf, net_mask, net_conf, letterbox)

    def _segment(self, rgb, want_confidence, want_network_confidence=False):
        t0 = time.perf_counter()
        pre = self.preprocessor(rgb.shape[1], rgb.shape[0])
        tensor = pre(rgb)
        t1 = time.perf_counter()
        output = self._run(tensor)
        t2 = time.perf_counter()
        net_mask = postprocess.decode_classes(output, self.card.output_kind,
                                              self.card.output_layout, out=self._net_mask)
        mask = pre.letterbox.mask_to_source(net_mask)
        if self._net_mask is not None and np.shares_memory(mask, self._net_mask):
            mask = mask.copy()  # no resize was needed: never hand out the reused buffer
        t3 = time.perf_counter()
        self.timings = {'preprocess': t1 - t0, 'inference': t2 - t1, 'postprocess': t3 - t2}
        self._network = (net_mask, None, pre.letterbox)
        if not (want_confidence or want_network_confidence):
            return mask, None
        card = self.card
        net_conf = postprocess.free_probability(output, card.output_kind, card.free_space,
                                                card.output_layout)
        self._network = (net_mask, net_conf, pre.letterbox)
        confidence = None
        if want_confidence:
            confidence = pre.letterbox.mask_to_source(net_conf)  # net_conf is fresh: no copy
        self.timings['confidence'] = time.perf_counter() - t3
        return mask, confidence

    def free_mask(self, class_mask, out=None):
        """255 where the class counts as free floor, else 0."""
        return postprocess.free_space_mask(class_mask, self.free_lut, out=out)

    def colorize(self, class_mask, out=None):
        return postprocess.colorize(class_mask, self.color_lut, out=out)

    def overlay(self, rgb, colored, alpha, out=None):
        return postprocess.overlay(rgb, colored, alpha, out=out)

    def close(self):
        self.engine.close()
