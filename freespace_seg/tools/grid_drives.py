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
``grid-rules --drives N``: the grid rules over frames of a drive, with agreement in odom.

Single frames cannot show what :class:`~freespace_seg.ground.agreement.GridAgreement` does:
it needs the grids before, seen from the poses before. Per set, this drives ``N`` rendered
rooms (:func:`freespace_seg.sim.wander.wander`, bump and turn, at the robot's 0.25 m/s),
one camera per room drawn from the set's ranges (the robot as tall as its camera, so that a
mast camera never passes under a table top), renders a frame every ``frame_every`` seconds
for ``seconds`` seconds, segments it, projects it under each rule and filters each rule's
grids by each agreement (odometry exact: the drive's own poses). Every frame from the
``warmup``-th of a drive on (the most frames any agreement keeps, less one) is scored as
``grid-rules`` scores a frame (:func:`freespace_seg.tools.grid_scoring.score`), so every row
counts the same frames. A row is ``rule`` (no agreement) or ``rule ~K/M`` (M of the last K
grids call the spot free); with ``--occlusion`` memories (seconds) each rule is also filtered
by :class:`~freespace_seg.ground.occlusion.OcclusionMemory` first, as the node does
(``rule occ10`` for 10 s; the camera's mount as the drive's, odometry exact).
"""

import time

import numpy as np

#: the drive's defaults
DRIVE_DEFAULTS = {'seconds': 10.0, 'frame_every': 0.1, 'agreement': '1,2,3,3/2,5/4'}


def agreement_key(rule, params):
    """Return the row key of ``rule`` filtered by ``params`` (the rule's name when off)."""
    return rule if not params.active else f'{rule} ~{params.name}'


def occlusion_key(rule, memory):
    """Return the name of ``rule`` with an occlusion memory of ``memory`` s (0: the rule's)."""
    return rule if not memory else f'{rule} occ{memory:g}'


def parse_occlusions(text):
    """Return the ``--occlusion`` memories (seconds), in order, without repeats."""
    from freespace_seg.ground.occlusion import OcclusionParams

    out = []
    for part in str(text).split(','):
        if part.strip():
            try:
                memory = float(part)
            except ValueError:
                raise ValueError(f'bad --occlusion {part.strip()!r}: expected seconds, e.g. '
                                 '0,10') from None
            OcclusionParams(memory)
            if memory not in out:
                out.append(memory)
    if not out:
        raise ValueError('--occlusion needs at least one memory in seconds (0: off)')
    return out


def row_keys(rules, agreements, occlusions=(0.0,)):
    """Return the row keys of every rule, occlusion memory and agreement, in table order."""
    return [agreement_key(occlusion_key(r, m), a) for r in rules for m in occlusions
            for a in agreements]


def parse_agreements(text, tolerance=1):
    """Return the ``--agreement`` list as AgreementParams, in order, without repeats."""
    from freespace_seg.ground.agreement import AgreementParams

    out = []
    for part in str(text).split(','):
        if part.strip():
            p = AgreementParams.parse(part, max_age=0.0, tolerance=tolerance)
            if p.name not in [o.name for o in out]:
                out.append(p)
    if not out:
        raise ValueError('--agreement needs at least one K or K/M')
    return out


def drive_frames(index, seed, style, camera, width, height, seconds, frame_every):
    """
    Yield the frames of room ``index``'s drive: (time s, Frame), the camera fixed per room.

    Yields nothing for a room with no free start pose.
    """
    from freespace_seg.sim import default_intrinsics, default_mount, jitter_camera, render
    from freespace_seg.sim.randomization import RandomizationConfig
    from freespace_seg.sim.scene import make_scene
    from freespace_seg.sim.wander import wander

    rng = np.random.default_rng([seed, index])
    config = RandomizationConfig(style=style, **dict(camera or {}))
    scene = make_scene(rng, config)
    intrinsics, mount = jitter_camera(rng, default_intrinsics(width, height), default_mount(),
                                      config)
    try:
        drive = wander(scene, rng, duration=seconds, height=mount.z + 0.05)
    except RuntimeError:
        return
    for i, t in enumerate(np.arange(0.0, seconds, frame_every)):
        frame_rng = np.random.default_rng([seed, index, i])
        yield float(t), render(scene, intrinsics, mount, drive.pose_at(t), frame_rng, config)


def measure_drives(pipeline, rules, agreements, sets, rooms, seed, width, height,
                   seconds=DRIVE_DEFAULTS['seconds'], frame_every=DRIVE_DEFAULTS['frame_every'],
                   log=print, occlusions=(0.0,)):
    """
    Return ({set: {row key: summary}}, {set: frames scored}) over ``rooms`` drives per set.

    ``pipeline``: a SegmentationPipeline or a function of a Frame returning (free, conf), as
    :func:`freespace_seg.tools.grid_rules.measure` takes. ``occlusions``: occlusion memories
    in seconds (0: none), each rule's grids filtered by each before the agreements.
    """
    from freespace_seg.common.progress import Progress
    from freespace_seg.ground.agreement import GridAgreement
    from freespace_seg.ground.grid import GridSpec
    from freespace_seg.ground.occlusion import OcclusionMemory, OcclusionParams
    from freespace_seg.ground.projection import GroundProjector
    from freespace_seg.tools.grid_scoring import (add, new_totals, perceive, score, SETS,
                                                  summary, truth_grids)

    spec = GridSpec()
    warmup = max(a.frames for a in agreements) - 1
    per_drive = len(np.arange(0.0, seconds, frame_every))
    keys = row_keys(rules, agreements, occlusions)
    result, scored = {}, {}
    for name in sets:
        style, camera = SETS[name]
        acc = new_totals(keys)
        t0 = time.time()
        bar = Progress(None, total=rooms * per_drive, desc=name)
        for index in range(rooms):
            filters = {(r, m, a.name): GridAgreement(a) for r in rules for m in occlusions
                       for a in agreements}
            memories = {(r, m): OcclusionMemory(OcclusionParams(m)) for r in rules
                        for m in occlusions}
            proj = None
            for i, (t, frame) in enumerate(drive_frames(index, seed, style, camera, width,
                                                        height, seconds, frame_every)):
                bar.update(1)
                free, conf = perceive(pipeline, frame)
                if proj is None:
                    proj = GroundProjector(frame.intrinsics, frame.mount, spec)
                exact, visible = truth_grids(proj, frame.free)
                for rule_name, rule in rules.items():
                    ground = proj.ground(free, conf, rule)
                    for m in occlusions:
                        seen = memories[(rule_name, m)].apply(
                            ground.grid, spec, frame.robot_pose, t, proj.pose.position,
                            ground.occluders if m else None)
                        for a in agreements:
                            grid = filters[(rule_name, m, a.name)].apply(
                                seen, spec, frame.robot_pose, t)
                            if i >= warmup:
                                add(acc[agreement_key(occlusion_key(rule_name, m), a)],
                                    score(frame, grid, exact, spec, visible))
        bar.close()
        result[name] = {k: summary(a) for k, a in acc.items()}
        scored[name] = result[name][keys[0]]['frames']
        log(f'{name}: {rooms} drives, {scored[name]} frames scored in '
            f'{time.time() - t0:.0f} s')
    return result, scored
