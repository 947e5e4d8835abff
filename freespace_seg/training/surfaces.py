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
Where a model's errors lie on rendered frames: each pixel named by the surface it shows.

The renderer knows what every camera ray hits first. :func:`surface_map` casts the rays of a
rendered :class:`~freespace_seg.sim.Frame` again and names each pixel: ``floor``,
``wall``, ``ceiling``, ``none`` (nothing: open sky over an endless floor), or an obstacle's
label and face, ``'<label> top'`` for a hit on its horizontal top, ``'<label> side'`` for
anything else (labels: ``box``, ``bin``, ``pole``, ``table``, ``chair``, ``low``, ``cable``,
``step``, ``glass``, ``wall_clutter``; ``object`` for an unlabelled one). A floor pixel is
wrong when called blocked, any other pixel when called free (the ground-truth rule of
:mod:`freespace_seg.sim.scene`).

:class:`SurfaceErrors` adds these up over many frames: per surface, its share of the pixels,
the share of its pixels called wrong, and its share of all wrong pixels, plus the mIoU the
model would reach if the pixels of one kind of surface were all right
(:meth:`SurfaceErrors.miou`; only kinds with wrong pixels are listed).
``python -m freespace_seg eval --render N --by-surface`` writes that table into its report.

This lives outside :mod:`freespace_seg.sim` on purpose: the render caches are keyed by
a hash of that package's source.
"""

from collections import defaultdict
import importlib

from freespace_seg.common.markdown import number, table
import numpy as np

#: the surface names that are free; every other one is blocked
FREE_SURFACES = ('floor',)
#: a hit within this distance (m) of an obstacle's top height counts as its top face
TOP_TOLERANCE = 0.003


class SurfaceError(RuntimeError):
    """The recomputed hits do not reproduce the frame's own labels."""


def surface_map(frame):
    """
    Return ``(codes, names)``: an int32 (H, W) array and the name of each code.

    The rays are cast again from the frame's camera (lens distortion included), with the
    renderer's own intersection code, so the map matches ``frame.free`` pixel for pixel; a
    mismatch (a frame not made by this renderer) raises :class:`SurfaceError`.
    """
    # The renderer's own modules (the sim package exports a function named render).
    rays = importlib.import_module('freespace_seg.sim.render.rays')
    cast = importlib.import_module('freespace_seg.sim.render.cast')
    scene = frame.scene
    origin, r_wo = rays.camera_in_world(frame.mount, frame.robot_pose)
    _, dx, dy, dz = rays.world_rays(frame.intrinsics, frame.mount, frame.robot_pose)
    rects = rays._screen_rects(cast._object_points(scene), origin, r_wo, frame.intrinsics)
    t, ids = cast._cast(scene, origin, dx, dy, dz, rects)
    if not np.array_equal(ids == cast.ID_FLOOR, np.asarray(frame.free) == 1):
        raise SurfaceError("the recast rays do not reproduce the frame's free mask: not a "
                           'frame of this renderer')
    names = ['none', 'floor', 'ceiling', 'wall']
    codes = np.zeros(ids.shape, np.int32)
    codes[ids == cast.ID_FLOOR] = 1
    codes[ids == cast.ID_CEILING] = 2
    walls = len(scene.walls()[0])
    codes[(ids >= cast.ID_WALL0) & (ids < cast.ID_WALL0 + walls)] = 3
    base = cast.ID_WALL0 + walls
    with np.errstate(invalid='ignore'):
        z = np.float32(origin[2]) + t * dz
    index = {n: i for i, n in enumerate(names)}
    for m, obj in enumerate(scene.obstacles):
        hit = ids == base + m
        if not hit.any():
            continue
        label = obj.label or 'object'
        top = hit & (np.abs(z - np.float32(obj.height)) < TOP_TOLERANCE)
        for face, sel in (('top', top), ('side', hit & ~top)):
            if sel.any():
                name = f'{label} {face}'
                codes[sel] = index.setdefault(name, len(index))
    names = sorted(index, key=index.get)
    return codes, names


def surface_kind(name):
    """Return the kind of a surface name: ``'step'`` for ``'step top'``, else the name."""
    return name.rsplit(' ', 1)[0] if name.endswith((' top', ' side')) else name


class SurfaceErrors:
    """Pixels and wrong pixels per surface name, added up over frames."""

    def __init__(self):
        self.pixels = defaultdict(int)
        self.wrong = defaultdict(int)
        self.frames = defaultdict(int)
        self.images = 0

    def add(self, pred, label, codes, names, free_ids=(1,), ignore_index=255):
        """Count one frame: ``pred`` and ``label`` class ids, ``codes``/``names`` its surfaces."""
        pred, label, codes = np.asarray(pred), np.asarray(label), np.asarray(codes)
        if not pred.shape == label.shape == codes.shape:
            raise ValueError(f'shapes differ: prediction {pred.shape}, label {label.shape}, '
                             f'surfaces {codes.shape}')
        scored = label != ignore_index
        free_surface = np.array([n in FREE_SURFACES for n in names])
        # A pixel is wrong when "called free" differs from "its surface is free".
        wrong = np.isin(pred, free_ids) != free_surface[codes]
        pixels = np.bincount(codes[scored], minlength=len(names))
        wrong = np.bincount(codes[scored & wrong], minlength=len(names))
        for code in np.flatnonzero(pixels):
            self.pixels[names[code]] += int(pixels[code])
            self.wrong[names[code]] += int(wrong[code])
            self.frames[names[code]] += 1
        self.images += 1

    def miou(self, right=()):
        """Return the two-class mIoU, counting the pixels of the ``right`` surfaces as right."""
        free_total = sum(n for s, n in self.pixels.items() if s in FREE_SURFACES)
        blocked_total = sum(n for s, n in self.pixels.items() if s not in FREE_SURFACES)
        fb = sum(w for s, w in self.wrong.items() if s in FREE_SURFACES and s not in right)
        bf = sum(w for s, w in self.wrong.items() if s not in FREE_SURFACES and s not in right)
        ious = []
        for total, lost in ((blocked_total, bf), (free_total, fb)):
            good = total - lost  # pixels of this class called right
            union = good + bf + fb
            if union:
                ious.append(good / union)
        return float(np.mean(ious)) if ious else float('nan')

    def wrong_in(self, names):
        """Return the number of wrong pixels on these surfaces."""
        return sum(self.wrong[n] for n in names)

    def rows(self):
        """Return one dict per surface, most wrong pixels first."""
        total = sum(self.pixels.values())
        wrong = sum(self.wrong.values())
        rows = []
        for name in sorted(self.pixels, key=lambda s: (-self.wrong[s], s)):
            n = self.pixels[name]
            rows.append({
                'surface': name,
                'truth': 'free' if name in FREE_SURFACES else 'blocked',
                'pixel_share': n / total if total else 0.0,
                'frames': self.frames[name],
                'called_wrong': self.wrong[name] / n if n else 0.0,
                'share_of_errors': self.wrong[name] / wrong if wrong else 0.0,
            })
        return rows

    def summary(self):
        """Return a JSON-able dict: the rows, pixel totals and what-if mIoUs by label."""
        groups = defaultdict(list)  # an obstacle kind's top and sides together
        for name in self.pixels:
            groups[surface_kind(name)].append(name)
        what_if = {kind: round(self.miou(right=names), 4)
                   for kind, names in sorted(groups.items()) if self.wrong_in(names)}
        return {
            'images': self.images,
            'pixels': int(sum(self.pixels.values())),
            'wrong_pixels': int(sum(self.wrong.values())),
            'miou': round(self.miou(), 4),
            'miou_if_right': what_if,
            'rows': [dict(r, pixel_share=round(r['pixel_share'], 5),
                          called_wrong=round(r['called_wrong'], 4),
                          share_of_errors=round(r['share_of_errors'], 4))
                     for r in self.rows()],
        }


def markdown(summary, limit=12):
    """Return the Markdown section of an eval report for :meth:`SurfaceErrors.summary`."""
    lines = ['## Errors by surface', '',
             f'What each pixel of the {summary["images"]} rendered frames shows (the first hit '
             'of its camera ray). A floor pixel is wrong when called blocked, any other when '
             f'called free. {summary["wrong_pixels"]} of {summary["pixels"]} pixels are '
             'wrong.', '']
    rows = [(r['surface'], r['truth'], number(100 * r['pixel_share'], 2, unit=' %'), r['frames'],
             number(100 * r['called_wrong'], 1, unit=' %'),
             number(100 * r['share_of_errors'], 1, unit=' %'))
            for r in summary['rows'][:limit]]
    rest = summary['rows'][limit:]
    if rest:
        rows.append((f'{len(rest)} more', '',
                     number(100 * sum(r['pixel_share'] for r in rest), 2, unit=' %'), '', '',
                     number(100 * sum(r['share_of_errors'] for r in rest), 1, unit=' %')))
    lines += table(('surface', 'truth', 'share of pixels', 'frames', 'called wrong',
                    'share of errors'), rows, align=['---'] * 2 + ['---:'] * 4)
    if summary['miou_if_right']:
        lines += ['', f'mIoU {summary["miou"]:.4f}; with every pixel of one kind of surface '
                  '(an obstacle kind: its top and sides) right: ' + ', '.join(
                      f'{k} {v:.4f}' for k, v in sorted(summary['miou_if_right'].items(),
                                                        key=lambda kv: -kv[1]))]
    return '\n'.join(lines) + '\n'
