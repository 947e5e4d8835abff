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

"""Pictures of the ground outputs: a grid drawn top-down (``free_space/grid_image``)."""

import cv2
from freespace_seg.ground.grid import GridSpec
import numpy as np

# RGB colours of render_grid.
FREE_RGB = (90, 200, 110)
OCCUPIED_RGB = (220, 40, 40)
UNKNOWN_RGB = (70, 70, 70)
FOOTPRINT_RGB = (80, 170, 255)


def render_grid(grid, footprint_radius=0.17, scale=4, grid_spec=None):
    """
    Draw a grid as an (H, W, 3) uint8 RGB top-down image for rqt_image_view.

    Orientation: as seen from above with the robot heading up. Base +x (forward) points UP in
    the image and base +y (left) points LEFT, so image rows run along -x and image columns
    along -y; the image is ``scale * nx`` rows by ``scale * ny`` columns. Colours: free
    (0 .. 49) green, occupied (>= 50) red, unknown (< 0) dark grey. The robot footprint is a
    circle of ``footprint_radius`` metres around the base origin with a tick towards +x
    (skipped when the origin is far off the image). ``grid_spec`` gives resolution and origin
    (default: the default GridSpec, whose shape must match).
    """
    spec = grid_spec if grid_spec is not None else GridSpec()
    grid = np.asarray(grid)
    if grid.ndim == 1 and grid.size == spec.size:
        grid = grid.reshape(spec.shape)
    if grid.shape != spec.shape:
        raise ValueError(f'grid shape {grid.shape} does not match GridSpec {spec.shape}')
    scale = int(scale)
    if scale < 1:
        raise ValueError(f'scale must be >= 1, got {scale}')
    palette = np.array([UNKNOWN_RGB, FREE_RGB, OCCUPIED_RGB], dtype=np.uint8)
    klass = np.where(grid < 0, 0, np.where(grid >= 50, 2, 1))
    top_down = klass.T[::-1, ::-1]
    image = palette[np.repeat(np.repeat(top_down, scale, axis=0), scale, axis=1)]
    image = np.ascontiguousarray(image)

    # Continuous image coordinates (pixel centres at integers) of the base origin.
    gx = (0.0 - spec.origin[0]) / spec.resolution
    gy = (0.0 - spec.origin[1]) / spec.resolution
    row = (spec.nx - gx) * scale - 0.5
    col = (spec.ny - gy) * scale - 0.5
    radius = footprint_radius / spec.resolution * scale
    h, w = image.shape[:2]
    if footprint_radius > 0 and -radius < row < h + radius and -radius < col < w + radius:
        shift = 4
        f = 1 << shift
        centre = (int(round(col * f)), int(round(row * f)))
        thickness = max(1, scale // 2)
        cv2.circle(image, centre, int(round(radius * f)), FOOTPRINT_RGB, thickness,
                   cv2.LINE_AA, shift)
        tip = (centre[0], int(round((row - radius) * f)))
        cv2.line(image, centre, tip, FOOTPRINT_RGB, thickness, cv2.LINE_AA, shift)
    return image
