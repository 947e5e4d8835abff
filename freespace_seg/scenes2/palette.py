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


"""Random materials for floors, walls, ceilings, rugs and objects (linear RGB colours)."""

import colorsys

import numpy as np


def lin(rgb):
    """Return linear RGB from sRGB-like colour values in [0, 1]."""
    return [float(np.clip(c, 0.0, 1.0)) ** 2.2 for c in rgb]


def hsv(rng, h=None, s=(0.1, 0.7), v=(0.2, 0.9)):
    h = rng.random() if h is None else h
    return lin(colorsys.hsv_to_rgb(h, rng.uniform(*s), rng.uniform(*v)))


def jitter(rng, rgb, amount=0.06):
    return lin(np.clip(np.asarray(rgb) + rng.uniform(-amount, amount, 3), 0, 1))


def floor_material(rng, light=False):
    """Return a floor: marble, wood planks, tiles, carpet, concrete or vinyl; some glossy."""
    kind = rng.choice(['marble', 'wood', 'tile', 'carpet', 'concrete', 'plain'],
                      p=[0.18, 0.26, 0.2, 0.12, 0.14, 0.1])
    if light and kind == 'carpet':
        kind = 'tile'
    m = {'kind': str(kind), 'angle': float(rng.uniform(0, np.pi)), 'noise': int(rng.integers(4)),
         'gloss': 0.1, 'shine': 20.0, 'reflect': 0.0, 'rough': 0.0}
    v = (0.7, 0.95) if light else (0.15, 0.9)
    if kind == 'marble':
        base = rng.choice([0.93, 0.85, 0.6, 0.12]) if not light else rng.uniform(0.82, 0.95)
        m['c1'] = jitter(rng, [base, base * rng.uniform(0.95, 1.0), base * rng.uniform(0.88, 1)],
                         0.03)
        m['c2'] = jitter(rng, [1 - base * 0.6] * 3 if base < 0.3 else [0.35, 0.35, 0.37], 0.08)
        m['scale'] = float(rng.uniform(0.4, 1.5))
        m['tile'] = float(rng.choice([0.0, 0.6, 0.8, 1.2]))
        m['gloss'], m['shine'] = 0.6, 200.0
        m['reflect'] = float(rng.uniform(0.15, 0.55)) if rng.random() < 0.85 else 0.0
    elif kind == 'wood':
        tone = rng.uniform(*((0.65, 0.9) if light else (0.25, 0.85)))
        m['c1'] = lin([tone, tone * rng.uniform(0.7, 0.85), tone * rng.uniform(0.45, 0.65)])
        m['c2'] = lin([tone * 0.7, tone * 0.5, tone * 0.3])
        m['plank'] = float(rng.uniform(0.09, 0.25))
        m['length'] = float(rng.uniform(0.6, 2.0))
        m['angle'] = float(rng.choice([0.0, np.pi / 2]) + rng.normal(0, 0.02))
        m['gloss'], m['shine'] = 0.35, 60.0
        m['reflect'] = float(rng.uniform(0.05, 0.3)) if rng.random() < 0.5 else 0.0
    elif kind == 'tile':
        m['c1'] = hsv(rng, s=(0.0, 0.35), v=v)
        m['c2'] = lin([rng.choice([0.9, 0.55, 0.25])] * 3)
        m['scale'] = float(rng.choice([0.15, 0.3, 0.45, 0.6, 0.8]))
        m['grout'] = float(rng.uniform(0.002, 0.008))
        m['checker'] = bool(rng.random() < 0.15)
        m['angle'] = float(rng.choice([0.0, np.pi / 4]))
        m['gloss'], m['shine'] = 0.5, 120.0
        m['reflect'] = float(rng.uniform(0.05, 0.35)) if rng.random() < 0.6 else 0.0
    elif kind == 'carpet':
        m['c1'] = hsv(rng, s=(0.0, 0.5), v=(0.2, 0.75))
        m['c2'] = m['c1']
        m['scale'] = float(rng.uniform(0.3, 2.0))
        m['gloss'] = 0.0
    elif kind == 'concrete':
        g = rng.uniform(*((0.65, 0.85) if light else (0.35, 0.8)))
        m['c1'] = jitter(rng, [g, g, g * 0.97], 0.03)
        m['c2'] = jitter(rng, [g * 0.8] * 3, 0.03)
        m['scale'] = float(rng.uniform(0.5, 3.0))
        m['gloss'], m['shine'] = 0.3, 40.0
        m['reflect'] = float(rng.uniform(0.1, 0.4)) if rng.random() < 0.4 else 0.0
    else:
        m['c1'] = hsv(rng, s=(0.0, 0.3), v=v)
        m['c2'] = m['c1']
        m['texture'] = 0.08
        m['gloss'], m['shine'] = 0.4, 80.0
        m['reflect'] = float(rng.uniform(0.05, 0.3)) if rng.random() < 0.5 else 0.0
    m['rough'] = float(rng.choice([0.0, 0.0, 1.5, 3.0, 6.0]))
    return m


def wall_material(rng, white=False):
    """Return a wall: paint, wallpaper or glossy white, with a baseboard band at the bottom."""
    kind = 'glossy' if white and rng.random() < 0.4 else str(
        rng.choice(['paint', 'wallpaper', 'glossy'], p=[0.65, 0.2, 0.15]))
    if white:
        kind = 'paint' if kind == 'wallpaper' else kind
    m = {'kind': kind, 'noise': int(rng.integers(4)), 'gloss': 0.05, 'shine': 10.0,
         'reflect': 0.0, 'texture': float(rng.uniform(0.01, 0.06))}
    if kind == 'glossy' or white:
        m['c1'] = jitter(rng, [rng.uniform(0.85, 0.97)] * 3, 0.02)
        m['gloss'], m['shine'] = (0.5, 60.0) if kind == 'glossy' else (0.05, 10.0)
    elif kind == 'paint':
        m['c1'] = hsv(rng, s=(0.0, 0.45), v=(0.45, 0.95)) if rng.random() < 0.7 else hsv(rng)
    else:
        m['c1'] = hsv(rng, s=(0.05, 0.4), v=(0.5, 0.9))
        m['scale'] = float(rng.uniform(0.05, 0.3))
        m['pattern'] = int(rng.integers(2))
    m['c2'] = m['c1'] if kind == 'wallpaper' else (
        jitter(rng, [0.9] * 3, 0.05) if rng.random() < 0.6 else hsv(rng, v=(0.1, 0.6)))
    if kind == 'wallpaper':
        m['c2'] = hsv(rng, s=(0.1, 0.6), v=(0.3, 0.8))
    m['baseboard'] = float(rng.choice([0.0, 0.06, 0.1, 0.14]))
    return m


def ceiling_material(rng):
    return {'kind': 'plain', 'c1': jitter(rng, [0.9] * 3, 0.04), 'c2': [0.9] * 3,
            'texture': 0.02, 'gloss': 0.0, 'shine': 10.0, 'reflect': 0.0}


def object_material(rng, kind=None):
    """Return an object's surface: plain colour, wood, fabric, metal or glossy plastic."""
    kind = kind or str(rng.choice(['plain', 'wood', 'fabric', 'metal', 'glossy'],
                                  p=[0.35, 0.2, 0.2, 0.12, 0.13]))
    m = {'kind': kind, 'noise': int(rng.integers(4)), 'gloss': 0.1, 'shine': 20.0,
         'reflect': 0.0, 'angle': float(rng.uniform(0, np.pi))}
    if kind == 'wood':
        tone = rng.uniform(0.25, 0.85)
        m['c1'] = lin([tone, tone * 0.75, tone * 0.5])
        m['c2'] = lin([tone * 0.7, tone * 0.5, tone * 0.3])
        m['plank'], m['length'] = float(rng.uniform(0.1, 0.5)), 3.0
        m['gloss'], m['shine'] = 0.3, 40.0
    elif kind == 'metal':
        g = rng.uniform(0.2, 0.8)
        m['c1'] = jitter(rng, [g, g, g * 1.02], 0.03)
        m['gloss'], m['shine'] = 0.9, 80.0
    elif kind == 'glossy':
        m['c1'] = hsv(rng, s=(0.0, 0.9), v=(0.1, 0.95))
        m['gloss'], m['shine'] = 0.6, 100.0
    else:
        m['c1'] = hsv(rng, s=(0.0, 0.9), v=(0.08, 0.95))
        m['texture'] = 0.05
    m['c2'] = m.get('c2', m['c1'])
    return m


def rug_material(rng):
    m = {'kind': str(rng.choice(['rug', 'carpet'])), 'noise': int(rng.integers(4)),
         'c1': hsv(rng, s=(0.2, 0.9), v=(0.2, 0.9)), 'c2': hsv(rng, s=(0.2, 0.9), v=(0.1, 0.9)),
         'scale': float(rng.uniform(0.05, 0.4)), 'angle': float(rng.uniform(0, np.pi)),
         'gloss': 0.0, 'shine': 10.0, 'reflect': 0.0}
    return m


def light_color(rng):
    """Colour of a lamp between warm (2700 K) and cool daylight (6500 K), as linear RGB."""
    t = rng.uniform(0.0, 1.0)
    warm, cool = np.array([1.0, 0.72, 0.45]), np.array([0.92, 0.97, 1.05])
    return (warm * (1 - t) + cool * t).tolist()
