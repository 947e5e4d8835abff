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

"""The driver-alone proxy of the closed loop (`tools/proxy_closed_loop.py`): its rooms."""

import cv2

import numpy as np
from support import load_tool


def _tool():
    return load_tool('proxy_closed_loop')


def test_every_obstacle_of_the_room_blocks_a_cell_thin_legs_included():
    """Room 11 holds a chair with 2-3 cm legs: each footprint must block a cell of the world."""
    proxy = _tool()
    world, pose = proxy.room(11)
    scene, _, (x0, y0) = proxy.scene_and_origin(11)
    rows, cols = np.nonzero(world.blocked)
    xs, ys = x0 + (cols + 0.5) * proxy.RES, y0 + (rows + 0.5) * proxy.RES
    centres = np.mgrid[0:world.ny, 0:world.nx]
    cx = x0 + (centres[1] + 0.5) * proxy.RES
    cy = y0 + (centres[0] + 0.5) * proxy.RES
    thin = 0
    for o in scene.footprints():
        assert np.min(o.distance_xy(xs, ys)) <= 0.5 * proxy.RES, o
        # A footprint that holds no cell centre: sampled at centres alone it would vanish.
        thin += not np.any(o.contains_xy(cx, cy))
    assert thin > 0, 'room 11 should hold a footprint thinner than a cell'
    assert world.clearance(pose[0], pose[1], 0.17)


def test_png_dir_draws_each_room_with_its_path(tmp_path):
    proxy = _tool()
    out = tmp_path / 'rooms'
    assert proxy.main(['--rooms', '1', '--first-seed', '11', '--minutes', '0.2',
                       '--png-dir', str(out)]) == 0
    img = cv2.imread(str(out / 'proxy_room_11.png'))
    assert img is not None and img.shape[0] > img.shape[1] > 100      # the room: 3 x 6 m
    # The path is drawn in blue (BGR: 230, 90, 40) from the start pose on.
    blue = (img[..., 0] > 200) & (img[..., 2] < 80)
    assert blue.sum() > 50
