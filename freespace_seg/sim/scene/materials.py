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

"""Random materials and appearances of floors, walls and objects (and the shifted style)."""

from dataclasses import replace
import math

from freespace_seg.sim.scene.model import (_side_rng, _tuple3, Appearance, DEFAULT_BASEBOARD,
                                           DEFAULT_FLOOR, DEFAULT_OBJECT, DEFAULT_WALL, Light,
                                           Material)
import numpy as np


#: Floor and wall material kinds that only the ``shifted`` style draws.
SHIFTED_FLOOR_KINDS = ('terrazzo', 'herringbone', 'studded')


SHIFTED_WALL_KINDS = ('brick', 'terrazzo')

#: The one floor of every room of the ``one_floor`` style: a matte crimson studded rubber
#: floor. It is the first studded floor that :func:`shifted_floor_material` draws from
#: ``numpy.random.default_rng(9)`` (rounded), the one the default model (run s) handled worst of 21
#: shifted floors drawn that way (docs/own_data.md).
ONE_FLOOR = Material('studded', (0.6054, 0.0022, 0.1476), (0.7362, 0.0026, 0.1795),
                     scale=0.05186, scale2=0.2727, angle=0.6481, variation=0.02521,
                     specular=0.0017, shininess=34.92, offset=(38.877, 35.804),
                     seed=1031913736)


# --- random scenes ----------------------------------------------------------------------

def _srgb_to_linear(c):
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lin(rgb):
    return _tuple3(np.clip(_srgb_to_linear(rgb), 0.0, 1.0))


def _hsv(rng, h, s, v):
    """Draw a linear RGB colour from HSV ranges (each a (lo, hi) pair), uniformly."""
    hue = rng.uniform(*h) % 1.0
    sat = rng.uniform(*s)
    val = rng.uniform(*v)
    k = (np.array([5.0, 3.0, 1.0]) + hue * 6.0) % 6.0
    rgb = val - val * sat * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return _lin(rgb)


def _jitter_color(rng, color, amount):
    return _tuple3(np.clip(np.asarray(color) * np.exp(rng.normal(0.0, amount, 3)), 0.0, 1.0))


def _kelvin_rgb(kelvin):
    """Approximate linear RGB of a light of colour temperature ``kelvin``, luminance 1."""
    table_k = [2500.0, 3000.0, 3500.0, 4000.0, 5000.0, 6500.0, 8000.0]
    table = np.array([[1.00, 0.62, 0.30], [1.00, 0.70, 0.42], [1.00, 0.77, 0.54],
                      [1.00, 0.82, 0.64], [1.00, 0.90, 0.81], [1.00, 1.00, 1.00],
                      [0.88, 0.93, 1.00]])
    rgb = np.array([np.interp(kelvin, table_k, table[:, i]) for i in range(3)])
    rgb = _srgb_to_linear(rgb)
    return _tuple3(rgb / (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]))


def random_floor_material(rng, config):
    """Draw a floor material: wood, tiles, checker, carpet, concrete or vinyl."""
    if not config.floor_materials:
        return DEFAULT_FLOOR
    kind = rng.choice(['wood', 'tile', 'checker', 'carpet', 'concrete', 'vinyl', 'plain'],
                      p=[0.27, 0.2, 0.05, 0.18, 0.12, 0.1, 0.08])
    spec = config.specular
    seed = int(rng.integers(1 << 30))
    angle = float(rng.choice([0.0, math.pi / 2])) + float(rng.normal(0.0, 0.02))
    off = (float(rng.uniform(0, 50)), float(rng.uniform(0, 50)))
    if kind == 'wood':
        base = _hsv(rng, (0.05, 0.1), (0.2, 0.7), (0.3, 0.85))
        second = _tuple3(np.clip(np.asarray(base) * rng.uniform(0.5, 0.85)
                                 * np.exp(rng.normal(0.0, 0.04, 3)), 0.0, 1.0))
        return Material('wood', base, second,
                        scale=float(rng.uniform(0.08, 0.25)), scale2=float(rng.uniform(0.6, 2.2)),
                        angle=angle, variation=float(rng.uniform(0.05, 0.3)),
                        specular=float(rng.uniform(0.0, 0.35)) if spec else 0.0,
                        shininess=float(rng.uniform(10, 80)), offset=off, seed=seed)
    if kind in ('tile', 'checker'):
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.3), (0.35, 0.95))
        if kind == 'checker':
            second = _hsv(rng, (0.0, 1.0), (0.0, 0.4), (0.05, 0.5))
        else:
            second = _hsv(rng, (0.0, 1.0), (0.0, 0.15), (0.2, 0.8))
        if rng.random() < 0.2:
            angle += math.pi / 4
        return Material(kind, base, second, scale=float(rng.uniform(0.15, 0.7)),
                        scale2=float(rng.uniform(0.002, 0.008)), angle=angle,
                        variation=float(rng.uniform(0.02, 0.2)),
                        specular=float(rng.uniform(0.05, 0.6)) if spec else 0.0,
                        shininess=float(rng.uniform(20, 150)), offset=off, seed=seed)
    if kind == 'carpet':
        base = _hsv(rng, (0.0, 1.0), (0.05, 0.5), (0.1, 0.7))
        return Material('noise', base, _jitter_color(rng, base, 0.1),
                        scale=float(rng.uniform(0.003, 0.02)), scale2=float(rng.uniform(0.2, 1.0)),
                        variation=float(rng.uniform(0.1, 0.4)), offset=off, seed=seed)
    if kind == 'concrete':
        base = _hsv(rng, (0.05, 0.15), (0.0, 0.12), (0.35, 0.75))
        return Material('noise', base, _jitter_color(rng, base, 0.1),
                        scale=float(rng.uniform(0.005, 0.03)), scale2=float(rng.uniform(0.3, 2.0)),
                        variation=float(rng.uniform(0.05, 0.2)),
                        specular=float(rng.uniform(0.0, 0.4)) if spec else 0.0,
                        shininess=float(rng.uniform(5, 40)), offset=off, seed=seed)
    base = _hsv(rng, (0.0, 1.0), (0.0, 0.3) if rng.random() < 0.8 else (0.3, 0.6), (0.15, 0.9))
    return Material('plain', base, base, scale=0.05, scale2=float(rng.uniform(0.5, 3.0)),
                    variation=float(rng.uniform(0.0, 0.12)) if kind == 'vinyl' else 0.02,
                    specular=float(rng.uniform(0.0, 0.5)) if spec else 0.0,
                    shininess=float(rng.uniform(10, 100)), offset=off, seed=seed)


def random_object_material(rng, config, floor=None):
    """Draw a material for furniture and clutter (sometimes the floor's own, a hard case)."""
    if not config.object_textures:
        return DEFAULT_OBJECT
    seed = int(rng.integers(1 << 30))
    if floor is not None and rng.random() < 0.08:
        return replace(floor, seed=seed)
    spec = float(rng.uniform(0.0, 0.5)) if config.specular and rng.random() < 0.5 else 0.0
    kind = rng.choice(['plain', 'wood', 'noise', 'stripes'], p=[0.5, 0.2, 0.22, 0.08])
    palette = rng.random()
    if palette < 0.35:  # neutrals: white, grey, black
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.05, 0.95))
    elif palette < 0.65:  # wood and cardboard browns
        base = _hsv(rng, (0.04, 0.12), (0.3, 0.8), (0.2, 0.85))
    else:  # painted and plastic colours
        base = _hsv(rng, (0.0, 1.0), (0.3, 1.0), (0.2, 1.0))
    return Material(str(kind), base, _jitter_color(rng, base, 0.2),
                    scale=float(rng.uniform(0.02, 0.3)), scale2=float(rng.uniform(0.3, 1.5)),
                    angle=float(rng.choice([0.0, math.pi / 2])),
                    variation=float(rng.uniform(0.02, 0.25)), specular=spec,
                    shininess=float(rng.uniform(10, 120)), seed=seed)


def random_appearance(rng, config, outline, wall_height, floor=None):
    """Walls, baseboard, ceiling and lights for a room (inside ``outline``)."""
    wall = DEFAULT_WALL
    baseboard = DEFAULT_BASEBOARD
    bb_height = 0.08
    if config.wall_textures:
        if rng.random() < 0.7:  # paint: mostly light neutrals
            wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.25), (0.55, 0.97))
        else:
            wcol = _hsv(rng, (0.0, 1.0), (0.1, 0.7), (0.25, 0.9))
        kind = rng.choice(['plain', 'noise', 'stripes', 'tile'], p=[0.55, 0.25, 0.1, 0.1])
        wall = Material(str(kind), wcol, _jitter_color(rng, wcol, 0.2),
                        scale=float(rng.uniform(0.05, 0.4)), scale2=0.004,
                        variation=float(rng.uniform(0.01, 0.1)), seed=int(rng.integers(1 << 30)),
                        specular=float(rng.uniform(0, 0.15)) if config.specular else 0.0)
        bcol = rng.choice(3)
        if bcol == 0:
            bcolor = _hsv(rng, (0.0, 1.0), (0.0, 0.05), (0.8, 0.98))
        elif bcol == 1:
            bcolor = _hsv(rng, (0.04, 0.1), (0.4, 0.8), (0.2, 0.6))
        else:
            bcolor = _hsv(rng, (0.0, 1.0), (0.0, 0.2), (0.05, 0.4))
        baseboard = Material('plain', bcolor, variation=0.01,
                             specular=0.1 if config.specular else 0.0, shininess=20.0)
        bb_height = float(rng.uniform(0.0, 0.15)) if rng.random() < 0.85 else 0.0
    lights = []
    poly = np.asarray(outline)
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    z = wall_height - 0.05
    if config.lighting:
        n = int(rng.integers(1, 4))
        ambient = float(rng.uniform(0.08, 0.4))
        for _ in range(n):
            x, y = rng.uniform(lo, hi)
            kelvin = rng.uniform(2700, 7000) if config.color_temperature else 6500.0
            color = _kelvin_rgb(kelvin) if config.color_temperature else (1.0, 1.0, 1.0)
            radius = 0.0
            if config.shadows and rng.random() < 0.6:
                radius = float(rng.uniform(0.1, 0.6))
            lights.append(Light((float(x), float(y), float(z - rng.uniform(0.0, 0.6))),
                                float(rng.uniform(0.3, 1.5)), color, radius))
    else:
        ambient = 0.35
        lights.append(Light((float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, z), 1.0))
    ceiling = _hsv(rng, (0.0, 1.0), (0.0, 0.08), (0.7, 0.95)) if config.wall_textures \
        else (0.75, 0.75, 0.75)
    return Appearance(floor=floor if floor is not None else DEFAULT_FLOOR, wall=wall,
                      baseboard=baseboard, baseboard_height=bb_height, ceiling_color=ceiling,
                      lights=tuple(lights), ambient=ambient, shadows=config.shadows,
                      contact_shadows=float(rng.uniform(0.2, 0.6)) if config.shadows else 0.0,
                      lamp_radius=float(rng.uniform(0.1, 0.3)))


def shifted_floor_material(rng, config):
    """Draw a ``shifted`` style floor: terrazzo, herringbone parquet or studded rubber."""
    if not config.floor_materials:
        return DEFAULT_FLOOR
    kind = str(rng.choice(SHIFTED_FLOOR_KINDS, p=[0.4, 0.35, 0.25]))
    spec = config.specular
    seed = int(rng.integers(1 << 30))
    angle = float(rng.uniform(-math.pi, math.pi))
    off = (float(rng.uniform(0, 50)), float(rng.uniform(0, 50)))
    if kind == 'terrazzo':
        base = _hsv(rng, (0.0, 1.0), (0.0, 0.25), (0.45, 0.92))
        chips = _hsv(rng, (0.0, 1.0), (0.2, 0.9), (0.05, 0.6))
        return Material(kind, base, chips, scale=float(rng.uniform(0.012, 0.04)),
                        scale2=float(rng.uniform(0.35, 0.75)), angle=angle,
                        variation=float(rng.uniform(0.05, 0.2)),
                        specular=float(rng.uniform(0.2, 0.7)) if spec else 0.0,
                        shininess=float(rng.uniform(40, 150)), offset=off, seed=seed)
    if kind == 'herringbone':
        base = _hsv(rng, (0.0, 1.0), (0.15, 0.75), (0.2, 0.85))
        second = _tuple3(np.clip(np.asarray(base) * rng.uniform(0.4, 0.8), 0.0, 1.0))
        width = float(rng.uniform(0.06, 0.12))
        return Material(kind, base, second, scale=width,
                        scale2=width * float(rng.integers(3, 7)), angle=angle,
                        variation=float(rng.uniform(0.1, 0.35)),
                        specular=float(rng.uniform(0.0, 0.4)) if spec else 0.0,
                        shininess=float(rng.uniform(10, 80)), offset=off, seed=seed)
    base = _hsv(rng, (0.0, 1.0), (0.75, 1.0), (0.25, 0.85))
    studs = _tuple3(np.clip(np.asarray(base) * rng.uniform(1.2, 1.8), 0.0, 1.0))
    return Material(kind, base, studs, scale=float(rng.uniform(0.03, 0.08)),
                    scale2=float(rng.uniform(0.2, 0.35)), angle=angle,
                    variation=float(rng.uniform(0.02, 0.1)),
                    specular=float(rng.uniform(0.0, 0.3)) if spec else 0.0,
                    shininess=float(rng.uniform(10, 40)), offset=off, seed=seed)


def shifted_appearance(rng, config, outline, wall_height, floor, like):
    """
    Redraw the look of a room in the ``shifted`` style; ``like`` is its default appearance.

    Walls become brick or stone, the baseboard a saturated colour, the ceiling darker; the
    lights become one strong low-angle light near a wall (long shadows), often coloured, plus
    sometimes a dim coloured ceiling light, with very little ambient light.
    """
    app = replace(like, floor=floor)
    if config.wall_textures:
        kind = str(rng.choice(SHIFTED_WALL_KINDS, p=[0.65, 0.35]))
        if kind == 'brick':
            palette = rng.random()
            if palette < 0.5:  # clay
                wcol = _hsv(rng, (0.0, 0.07), (0.45, 0.85), (0.25, 0.65))
            elif palette < 0.8:  # painted
                wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.7, 0.95))
            else:  # dark block
                wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.2), (0.1, 0.35))
            mortar = _hsv(rng, (0.0, 1.0), (0.0, 0.1), (0.4, 0.9))
            wall = Material(kind, wcol, mortar, scale=float(rng.uniform(0.06, 0.2)),
                            scale2=float(rng.uniform(0.008, 0.015)),
                            variation=float(rng.uniform(0.1, 0.3)),
                            seed=int(rng.integers(1 << 30)))
        else:
            wcol = _hsv(rng, (0.0, 1.0), (0.0, 0.3), (0.2, 0.8))
            wall = Material(kind, wcol, _hsv(rng, (0.0, 1.0), (0.0, 0.6), (0.05, 0.9)),
                            scale=float(rng.uniform(0.01, 0.03)),
                            scale2=float(rng.uniform(0.3, 0.7)),
                            variation=float(rng.uniform(0.05, 0.2)),
                            seed=int(rng.integers(1 << 30)),
                            specular=float(rng.uniform(0.1, 0.4)) if config.specular else 0.0)
        baseboard = Material('plain', _hsv(rng, (0.0, 1.0), (0.7, 1.0), (0.2, 0.8)),
                             variation=0.01, specular=0.2 if config.specular else 0.0)
        app = replace(app, wall=wall, baseboard=baseboard,
                      baseboard_height=float(rng.uniform(0.05, 0.2)),
                      ceiling_color=_hsv(rng, (0.0, 1.0), (0.05, 0.4), (0.25, 0.6)))
    if config.lighting:
        poly = np.asarray(outline)
        lo, hi = poly.min(axis=0), poly.max(axis=0)
        # One strong light low on a side of the room, shining across it.
        side = int(rng.integers(4))
        x, y = (float(v) for v in rng.uniform(lo + 0.15, hi - 0.15))
        if side == 0:
            x = float(lo[0]) + 0.15
        elif side == 1:
            x = float(hi[0]) - 0.15
        elif side == 2:
            y = float(lo[1]) + 0.15
        else:
            y = float(hi[1]) - 0.15
        if config.color_temperature and rng.random() < 0.6:
            color = _unit_luminance(_hsv(rng, (0.0, 1.0), (0.5, 0.9), (1.0, 1.0)))
        else:
            color = (1.0, 1.0, 1.0)
        lights = [Light((x, y, float(rng.uniform(0.3, 1.0))), float(rng.uniform(2.0, 5.0)),
                        color, float(rng.uniform(0.0, 0.05)) if config.shadows else 0.0)]
        if rng.random() < 0.5:
            x2, y2 = (float(v) for v in rng.uniform(lo, hi))
            color2 = _unit_luminance(_hsv(rng, (0.0, 1.0), (0.4, 0.9), (1.0, 1.0))) \
                if config.color_temperature else (1.0, 1.0, 1.0)
            lights.append(Light((x2, y2, wall_height - 0.05), float(rng.uniform(0.1, 0.4)),
                                color2, 0.0))
        app = replace(app, lights=tuple(lights), ambient=float(rng.uniform(0.0, 0.05)),
                      lamp_radius=0.0)
    return app


def _unit_luminance(rgb):
    rgb = np.asarray(rgb, dtype=np.float64)
    return _tuple3(rgb / max(0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2], 1e-3))


def one_floor_material(config):
    """Return the floor of the ``one_floor`` style (:data:`ONE_FLOOR`) under ``config``."""
    if not config.floor_materials:
        return DEFAULT_FLOOR
    return ONE_FLOOR if config.specular else replace(ONE_FLOOR, specular=0.0)


def _restyle(rng, scene, config, floor):
    """
    Give a finished default-style scene the ``shifted`` look; ``rng`` is not advanced.

    The ``one_floor`` style draws the same look, then lays :data:`ONE_FLOOR` in every room.
    """
    side = _side_rng(rng, 0x5e1f7ed)
    new_floor = shifted_floor_material(side, config)  # drawn in either style: same walls
    if config.style == 'one_floor':
        new_floor = one_floor_material(config)
    scene.appearance = shifted_appearance(side, config, scene.outline, scene.wall_height,
                                          new_floor, scene.appearance)
    if config.floor_materials:
        # Objects made of the floor's own material (a hard case) follow the new floor; steps
        # whose top is the floor itself get the new floor itself.
        same = replace(floor, seed=0)
        scene.obstacles = [replace(o, material=new_floor) if o.material == floor
                           else replace(o, material=replace(new_floor, seed=o.material.seed))
                           if replace(o.material, seed=0) == same else o
                           for o in scene.obstacles]
