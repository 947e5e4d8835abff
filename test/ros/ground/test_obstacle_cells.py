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
The default model and grid rule call no cell free over an obstacle (issue #33, item 6).

Each case renders an empty room (clean image, 640x360) with one obstacle about 0.6-1.8 m in
front of the node's default camera (0.25 m high, pitched 0.3 rad): thin legs, a cable on the
floor, a low box or a glass partition. The image goes through the node's frame path
(:class:`~freespace_seg.ground.frame.FrameProcessor` with the node's default grid parameters
and default model: ``model_file_path`` empty on the CPU backend runs the packaged INT8 copy,
models/freespace_lite0_int8.onnx), and the true mask through the same projector under the
same rule (its confidence 1 on floor, 0 elsewhere). A cell is *over the obstacle* when its
centre lies in a footprint of the obstacle; the check is that none of those cells is free in
the predicted grid where the truth grid does not call it free. Footprints are laid on cell
boundaries or through cell centres (but for a yawed box and an angled partition), so that a
cell's centre is clearly on or off them.

Where the default model does call such cells free, the case is an expected failure
(``xfail(strict=True, raises=FreeOverObstacle)``) whose reason gives the measured cells and
why; a sanity test per case, never expected to fail, checks that the obstacle is in view: it
blocks pixels of the true mask, and the truth grid marks cells of its footprint occupied (of
every leg of a table or chair).
docs/ground_outputs.md sums the results up.
"""

from dataclasses import dataclass, replace
import math
import os

from freespace_seg.ground.frame import FrameProcessor, GroundParams
from freespace_seg.ground.grid import FREE, OCCUPIED
from freespace_seg.nodes.msgs import camera_info_from_intrinsics
from freespace_seg.nodes.params import SEGMENTATION_PARAMS
from freespace_seg.perception.pipeline import (PACKAGED_INT8_MODEL, packaged_int8_model,
                                               packaged_model_path, SegmentationPipeline)
from freespace_seg.sim import (Box, Cylinder, default_intrinsics, glass_partition, Material,
                               render, Scene)
from freespace_seg.sim.render import free_mask
import numpy as np
import pytest

DEFAULTS = {spec.name: spec.default for spec in SEGMENTATION_PARAMS}
ROOM = (8.0, 8.0)
INTRINSICS = default_intrinsics(640, 360)
#: a black material: the same legs and cable, in a colour far from the grey floor
BLACK = Material('plain', (0.02, 0.02, 0.02), variation=0.0)


class FreeOverObstacle(AssertionError):
    """The predicted grid calls a cell over the obstacle free (the expected failures)."""


def legged(legs, radius, height, material=None):
    """Return a table or chair: a raised top, ``height`` high, on ``legs`` (x, y) of ``radius``."""
    xs, ys = [x for x, _ in legs], [y for _, y in legs]
    top = Box((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2, max(xs) - min(xs) + 0.1,
              max(ys) - min(ys) + 0.1, height, 0.0, height - 0.03)
    extra = {} if material is None else {'material': material}
    return [top] + [Cylinder(x, y, radius, height - 0.03, **extra) for x, y in legs]


def rect(x0, y0, x1, y1, height):
    """Return a standing box over [x0, x1] x [y0, y1] (m)."""
    return Box((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0, height)


def diagonal_cable(x0, y0, cells, width=0.015, height=0.012):
    """Return a cable at 45 degrees through the cell centres (x0 + 0.05 k, y0 + 0.05 k)."""
    length = cells * 0.05 * math.sqrt(2.0) + 0.03
    return Box(x0 + cells * 0.025, y0 + cells * 0.025, length, width, height, math.pi / 4)


@dataclass(frozen=True)
class Case:
    """One obstacle: ``parts`` (Box/Cylinder), ``seen`` of its standing parts must be seen."""

    name: str
    parts: tuple
    seen: int = 1


def xfail(reason, strict=True):
    """
    Mark a case whose grid, measured, calls cells over the obstacle free.

    ``strict=False`` for the cases of one or two cells: their count can differ with the CPU's
    INT8 kernels or another ONNX Runtime, and an unexpected pass must not fail the run.
    """
    return pytest.mark.xfail(strict=strict, raises=FreeOverObstacle, reason=reason)


TABLE_LEGS = ((0.925, -0.325), (0.925, 0.275), (1.425, -0.325), (1.425, 0.275))
CABLE_12 = Box(1.225, -0.1, 0.02, 1.4, 0.012)
# The reasons: measured with the test's scenes (onnxruntime 1.32). The first counts are the
# default model's (run x, 384x216) INT8 copy as a CPU with VNNI runs it (eval --exact-int8
# arithmetic, 2026-12-06), and its 7-bit copy (a CPU without VNNI) where it differs; "the
# soup" is the default before run x (at 480x272), as "the mask" was written for it; "run s"
# (the default before, on an AVX-512 VNNI CPU), "every node INT8" (run s's earlier copy) and
# "run p" (the default before run s) where they differ. "plain" is the plain rule on run s's
# mask, "fp32" run s's fp32 model under the default rule. "Rows" are rows of the 640x360
# image. The P(free) ranges are run p's unless a run is named.
CASES = [
    pytest.param(Case('legs_table', tuple(legged(TABLE_LEGS, 0.0125, 0.72)), seen=4),
                 marks=xfail('run x as the soup. The mask: 2 of the 4 leg cells free (the far '
                             'legs, 1.45 m; plain 2, fp32 2). The model calls the lowest 4-5 '
                             'rows of the grey 2.5 cm legs floor (P(free) 0.75-0.96); on the '
                             'flat floor they fall in the cells of the legs, and no leg pixel '
                             'is sure enough to cut '
                             '(P(blocked) > 0.97): the nearest occupied cells are 0.16-0.2 m '
                             'away')),
    pytest.param(Case('legs_chair', tuple(legged(
        ((0.625, -0.075), (0.625, 0.275), (0.975, -0.075), (0.975, 0.275)), 0.01, 0.45)),
        seen=4), marks=xfail('run x frees 1 (1.01 m), as the 7-bit copy of the soup; the '
                             'soup and run s free no leg cell here (fp32 1). Run p: 1 of '
                             'the 4 leg cells free (1.01 m; plain 1, fp32 1). The bottom rows '
                             'of the grey 2 cm leg are called floor (P(free) 0.62-0.89); the '
                             'occupied cell is the next one behind',
                             strict=False)),
    pytest.param(Case('legs_3cm_table', tuple(legged(
        ((1.275, -0.625), (1.275, 0.125), (1.525, -0.625), (1.525, 0.125)), 0.015, 0.75)),
        seen=4), marks=xfail('run x as the soup. The mask: 1 of the 4 leg cells free (1.65 m; '
                             '7-bit copy 1, run '
                             's 2 at 1.53-1.65 m, plain 2, fp32 1). The bottom rows of the '
                             'grey 3 cm legs are called floor (P(free) 0.62-0.92). Run p '
                             'freed 3 (1.28-1.65 m; plain 2, fp32 2): at the leg at 1.28 m '
                             'its unsure leg pixels (P(blocked) <= 0.97) did not cut, where '
                             'the plain rule marks the cell')),
    pytest.param(Case('legs_black_table', tuple(legged(TABLE_LEGS, 0.0125, 0.72, BLACK)),
                      seen=4)),
    pytest.param(Case('cable_0.8m', (Box(0.825, 0.0, 0.015, 1.2, 0.01),)),
                 marks=xfail('run x: 6 of the 24 cable cells free (its 7-bit copy 20). The '
                             'soup: all 24 cable cells free (0.83-1.01 m; plain 24, '
                             'fp32 24; run p: 23). The model calls the grey 1.5 cm cable '
                             'floor (P(free) 0.62-0.94) and the floor behind it blocked: the '
                             'occupied cells lie one cell (5 cm) behind the cable')),
    pytest.param(Case('cable_1.2m', (CABLE_12,)),
                 marks=xfail('run x: 27 of the 28 cable cells free (its 7-bit copy 28). The '
                             'soup: all 28 cable cells free (1.23-1.45 m; plain 28, fp32 '
                             '28). The model does not see the grey 2 cm cable (P(free) '
                             '0.90-0.99 on it, no blocked pixel on the grid): the grid is that '
                             'of the empty room')),
    pytest.param(Case('cable_diagonal', (diagonal_cable(0.925, -0.475, 12),)),
                 marks=xfail('run x as the soup. The mask: 12 of the 13 cable cells free '
                             '(1.06-1.53 m; 7-bit copy '
                             '13, run s 12, every node INT8 13, plain 13, fp32 13). As '
                             'cable_1.2m: P(free) 0.89-1.00 on the cable, no blocked pixel on '
                             'the grid')),
    pytest.param(Case('cable_black', (replace(CABLE_12, material=BLACK),)),
                 marks=xfail('run x: 4 of the 28 cable cells free (its 7-bit copy 1). The '
                             'soup: 16 of the 28 cable cells free (1.25-1.40 m; 7-bit copy '
                             '25, run s 20, every node INT8 25, plain 25, fp32 19). The '
                             'model calls most of the black 2 cm cable floor (median '
                             'confidence 0.89 on its pixels), where run p, the default before '
                             'run s, freed none of its cells')),
    pytest.param(Case('low_box_5cm', (rect(0.60, -0.15, 0.90, 0.15, 0.05),))),
    pytest.param(Case('low_box_10cm', (rect(1.00, 0.20, 1.40, 0.50, 0.10),)),
                 marks=xfail('run s as shipped frees no cell here. Every node INT8: 1 of the '
                             '48 footprint cells free (13 occupied in the truth; plain 1, fp32 '
                             '0): the far corner cell at 1.39 m, where the '
                             'foot line along the visible side of the box is 1-2 rows high and '
                             'one side pixel has P(free) 0.65', strict=False)),
    pytest.param(Case('low_box_6cm', (rect(1.20, -0.60, 1.50, -0.30, 0.06),)),
                 marks=xfail('run s frees no cell here (plain 0, fp32 0). Run p: 1 of the '
                             '36 footprint cells free (11 occupied in the truth; plain 1, fp32 '
                             '1): the far corner cell at 1.51 m, two side pixels with P(free) '
                             '0.75, as low_box_10cm', strict=False)),
    pytest.param(Case('low_box_yawed', (Box(0.95, -0.05, 0.35, 0.25, 0.08, 0.5),))),
    pytest.param(Case('glass_framed', tuple(glass_partition((1.025, -1.5), (1.025, 1.5), 2.0,
                                                            2))),
                 marks=xfail('run x frees none of the 60 footprint cells; its 7-bit copy 1, at '
                             '1.23 m (the soup and run s none)', strict=False)),
    pytest.param(Case('glass_channel', tuple(glass_partition(
        (1.325, -1.5), (1.325, 1.5), 2.0, 1, bottom_rail=0.02, top_rail=0.0, stiles=False))),
        marks=xfail('run x: 38 of the 60 footprint cells free, with both copies: at 384x216 '
                    'the 2 cm floor channel under the pane is a row or two, called floor. The '
                    'soup: 2 of the 60 footprint cells free (38 occupied in the truth), '
                    'at 1.59-1.62 m by the right image edge, as run p. Run s freed 32 (every '
                    'node INT8: 20, plain 11, fp32 9), at 1.33-1.62 m: it called more of the '
                    '2 cm floor channel and the pane above it floor (median P(free) 0.33 over '
                    'the obstacle pixels). Run p freed 2 (plain 0, fp32 1), at 1.59-1.62 m '
                    'by the right image edge, where the foot of the channel was an exact INT8 '
                    'logit tie (P = 0.5) that grid_mark_confidence 0.5 leaves out', strict=False)),
    pytest.param(Case('glass_angled', tuple(glass_partition((0.8, -1.2), (1.4, 1.2), 2.0, 2)))),
]
IDS = [p.values[0].name for p in CASES]


@dataclass
class Outcome:
    """One case through the node's frame path, and its truth."""

    scene: Scene
    frame: object
    outputs: object
    truth: np.ndarray
    obstacle_pixels: int


@pytest.fixture(scope='module')
def outcome():
    """Return a function of a Case: its :class:`Outcome` (one model session for all)."""
    pytest.importorskip('onnxruntime')
    if not os.path.isfile(packaged_model_path(PACKAGED_INT8_MODEL)):
        pytest.fail(f'the default model is missing: {packaged_model_path(PACKAGED_INT8_MODEL)}')
    # The node's default model: model_file_path '' is the packaged model, run as its INT8
    # copy on the CPU backend (what backend auto falls back to without a GPU).
    pipe = SegmentationPipeline(DEFAULTS['model_file_path'] or None, 'onnxruntime', 1)
    # freespace_lite0_int8, or its 7-bit copy on an x86-64 CPU without VNNI.
    assert pipe.card.name == packaged_int8_model()[:-len('.onnx')]
    params = GroundParams.from_params(DEFAULTS)
    assert params.mount.z == 0.25 and params.mount.pitch == 0.3 and not params.rule.plain
    frames = FrameProcessor(pipe, params)
    info = camera_info_from_intrinsics(INTRINSICS)
    empty = free_mask(Scene.empty(size=ROOM), INTRINSICS, params.mount)
    done = {}

    def run(case):
        if case.name not in done:
            scene = Scene.empty(size=ROOM, obstacles=case.parts)
            frame = render(scene, INTRINSICS, params.mount)
            out = frames.process(frame.image, ('confidence', 'grid'), info)
            assert out.ground_error is None and out.has_ground
            sure = np.where(frame.free > 0, 255, 0).astype(np.uint8)
            truth = frames.projector.ground(sure, sure, params.rule).grid
            pixels = int(np.count_nonzero((empty > 0) & (frame.free == 0)))
            done[case.name] = Outcome(scene, frame, out, truth, pixels)
        return done[case.name]

    yield run
    pipe.close()


def footprint_cells(outputs, parts):
    """Return a (ny, nx) bool array per standing part: cells whose centre lies on it."""
    xs, ys = outputs.grid_spec.cell_centers()
    return [p.contains_xy(xs, ys) for p in parts if p.standing]


@pytest.mark.parametrize('case', [p.values[0] for p in CASES], ids=IDS)
def test_the_obstacle_is_in_view(outcome, case):
    """The checks below have something to check: the truth sees the obstacle on the grid."""
    o = outcome(case)
    assert o.obstacle_pixels >= 20, o.obstacle_pixels
    cells = footprint_cells(o.outputs, case.parts)
    xs, ys = o.outputs.grid_spec.cell_centers()
    on = np.logical_or.reduce(cells)
    assert on.any() and np.all(np.hypot(xs[on], ys[on]) <= o.outputs.grid_spec.max_range)
    seen = sum(bool(np.any(o.truth[c] == OCCUPIED)) for c in cells)
    assert seen >= case.seen, (seen, case.seen)


@pytest.mark.parametrize('case', CASES, ids=IDS)
def test_no_free_cell_over_the_obstacle(outcome, case):
    o = outcome(case)
    on = np.logical_or.reduce(footprint_cells(o.outputs, case.parts))
    bad = on & (o.outputs.grid == FREE) & (o.truth != FREE)
    if bad.any():
        xs, ys = o.outputs.grid_spec.cell_centers()
        where = ', '.join(f'({x:.3f}, {y:.3f}) at {math.hypot(x, y):.2f} m'
                          for x, y in zip(xs[bad], ys[bad]))
        raise FreeOverObstacle(f'{int(bad.sum())} of {int(on.sum())} cells over the obstacle '
                               f'are free: {where}')
