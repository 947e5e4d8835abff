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

"""wander's robot height: a tall robot bumps into a table top that a Create 3 drives under."""

from freespace_seg.sim.scene.model import Box, Scene
from freespace_seg.sim.wander import as_seen_by_height, wander
import numpy as np


def _room_with_a_table_top():
    """Return a 4 x 4 m room with a table top (0.70-0.74 m, no legs) 1 m ahead of the start."""
    scene = Scene.empty(size=(4.0, 4.0))
    scene.obstacles.append(Box(0.0, 0.0, 0.8, 1.6, 0.74, bottom=0.70))
    return scene


def _drive(height):
    return wander(_room_with_a_table_top(), np.random.default_rng(0), duration=5.0,
                  pose=(-1.3, 0.0, 0.0), curves=False, height=height)


def test_a_low_robot_drives_under_the_top_and_a_tall_one_bumps_into_it():
    low = _drive(None)
    assert not low.hazards and low.distance > 1.1   # under the top, 0.4 m from the far wall
    tall = _drive(0.9)
    assert tall.hazards, 'a 0.9 m robot must bump into a top at 0.70 m'
    t, (x, y, yaw), bearing = tall.hazards[0]
    assert x < -0.4 + 1e-6 and abs(bearing) < 0.2      # stopped at the top's edge, head-on
    # A robot lower than the top passes as the Create 3 does.
    assert _drive(0.6).path.tolist() == low.path.tolist()


def test_only_raised_things_below_the_height_are_lowered():
    scene = _room_with_a_table_top()
    scene.obstacles.append(Box(1.5, 1.5, 0.2, 0.2, 1.8, bottom=1.2))   # a high shelf
    seen = as_seen_by_height(scene, 1.0)
    assert [o.bottom for o in seen.obstacles] == [0.0, 1.2]
    assert [o.bottom for o in scene.obstacles] == [0.70, 1.2]    # the scene itself is untouched
    assert as_seen_by_height(scene, None) is scene
    assert seen.blocked_top_down(0.0, 0.0) and not scene.blocked_top_down(0.0, 0.0)
