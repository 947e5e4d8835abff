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
A second scene generator, written apart from :mod:`freespace_seg.sim`.

It is an out-of-renderer proxy for choosing models. It ray casts analytic geometry (numpy): the
floor plane, a ceiling, boxes turned about the vertical (walls, partitions with door openings
and lintels, cabinets, tabletops and shelf boards), vertical cylinders (legs, bins, pillars),
spheres (balls, plants) and rugs lying on the floor. Layouts are one room, L-shaped rooms, two
rooms with doorways, corridors with side rooms. The camera is a pinhole or an equidistant
fisheye lens (60-150 degrees wide), 0.1-1.5 m high, pitched 0-0.7 rad down, slightly rolled.
Light comes from point and area lamps with inverse-square falloff, soft shadows, ambient
occlusion, highlights and mirror reflections on glossy floors; then exposure, white balance,
vignetting, noise and JPEG.

Label rule (the mask, computed at the output size from the geometry, never from the image):

* a pixel is free (1) when the first surface its ray hits is the floor plane, inside the
  rooms, at a point that is not under or inside any obstacle's footprint (the turned
  rectangle of a box, tabletop or shelf board, the disc of a cylinder or sphere);
* rugs and mats lie flat on the floor: they are floor, so free unless under an obstacle;
* everything else is blocked (0): walls, doors, obstacles, tabletops and shelf boards (even
  when they look like floor), the floor under them, the ceiling, lamps, and the pixels
  outside a fisheye lens's circle;
* mirror images on glossy floors do not change the label: only the first hit counts, so a
  floor pixel that reflects a wall is still floor.
"""

from .camera import Camera, random_camera
from .geometry import Scene
from .layout import random_scene
from .render import render_frame, render_mask

__all__ = ['Camera', 'Scene', 'random_camera', 'random_scene', 'render_frame', 'render_mask']
