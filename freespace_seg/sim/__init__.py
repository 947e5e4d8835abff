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
Synthetic training data: seeded indoor rooms, an exact ray caster and domain randomization.

This is the light stand-in for Isaac Sim: :func:`make_scene` builds a random room,
:func:`render` casts every pixel's ray into it and returns the image with an exact free-floor
mask, :func:`random_sample` does both with a jittered camera. See :mod:`.scene` for the
ground-truth rule.
"""

from freespace_seg.sim.randomization import (default_intrinsics, default_mount, jitter_camera,
                                             RandomizationConfig)
from freespace_seg.sim.render import Frame, material_albedo, random_sample, render
from freespace_seg.sim.scene import (Appearance, Box, Cylinder, Decal, Door, FOOTPRINT_EPS,
                                     glass_partition, Light, make_scene, Material, Scene,
                                     WallDecal)

__all__ = [
    'Appearance', 'Box', 'Cylinder', 'Decal', 'default_intrinsics', 'default_mount', 'Door',
    'FOOTPRINT_EPS', 'Frame', 'glass_partition', 'jitter_camera', 'Light', 'make_scene',
    'Material', 'material_albedo', 'random_sample', 'RandomizationConfig', 'render', 'Scene',
    'WallDecal',
]
