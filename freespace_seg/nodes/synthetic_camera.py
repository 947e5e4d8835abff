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
``synthetic_camera``: a camera driver for rooms made by the synthetic renderer.

Publishes ``image`` (rgb8), ``camera_info`` and ``ground_truth/free_mask`` (mono8,
255 = free floor, exact from the ray caster) at ``rate`` Hz, all with the same header. Scenes
are rendered ahead of time (``num_scenes`` of them, cycled) so the camera keeps its rate on
a small CPU. Used by ``make demo`` and by tests; useful on a desk with no robot.
"""

from freespace_seg.nodes.msgs import array_to_image, camera_info_from_intrinsics
from freespace_seg.nodes.params import ParamSpec
from freespace_seg.nodes.ros_util import declare_and_validate, spin_node
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

CAMERA_PARAMS = (
    ParamSpec('rate', 15.0, 'Frames per second.', 'double', min_value=0.1, max_value=240.0),
    ParamSpec('width', 640, 'Image width in pixels.', 'int', min_value=16, max_value=4096,
              read_only=True),
    ParamSpec('height', 360, 'Image height in pixels.', 'int', min_value=16, max_value=4096,
              read_only=True),
    ParamSpec('num_scenes', 20, 'Distinct rendered frames, published in a loop.', 'int',
              min_value=1, max_value=10000, read_only=True),
    ParamSpec('seed', 0, 'Seed of the rooms and camera poses.', 'int', min_value=0,
              max_value=2 ** 31 - 1, read_only=True),
    ParamSpec('frame_id', 'camera_optical_frame', 'frame_id of every header.', 'string',
              read_only=True),
    ParamSpec('max_frames', 0, 'Stop publishing after this many frames (0: never).', 'int',
              min_value=0, max_value=10 ** 9),
)


def render_frames(count, width, height, seed, show_progress=False):
    """Render ``count`` random scenes from the default camera; return the Frame list."""
    from freespace_seg.common.progress import progress
    from freespace_seg.sim import default_intrinsics, default_mount, make_scene, render
    intrinsics = default_intrinsics(width, height)
    mount = default_mount()
    frames = []
    it = range(count)
    if show_progress:
        it = progress(it, total=count, desc='rendering scenes')
    for i in it:
        rng = np.random.default_rng([seed, i])
        scene = make_scene(rng)
        pose = scene.sample_free_pose(rng)
        frames.append(render(scene, intrinsics, mount, robot_pose=pose, rng=rng))
    return frames


class SyntheticCameraNode(Node):
    """Publishes pre-rendered synthetic frames with CameraInfo and their ground truth."""

    def __init__(self, node_name='synthetic_camera', frames=None, **kwargs):
        super().__init__(node_name, **kwargs)
        p = self.params = declare_and_validate(self, CAMERA_PARAMS)
        if frames is None:
            self.get_logger().info(f'rendering {p["num_scenes"]} scenes at '
                                   f'{p["width"]}x{p["height"]}')
            frames = render_frames(p['num_scenes'], p['width'], p['height'], p['seed'])
        self.frames = frames
        self._images = [array_to_image(f.image, 'rgb8') for f in frames]
        self._truth = [array_to_image((f.free > 0).astype(np.uint8) * 255, 'mono8')
                       for f in frames]
        self._infos = [camera_info_from_intrinsics(f.intrinsics) for f in frames]
        self._pub_image = self.create_publisher(Image, 'image', 5)
        self._pub_info = self.create_publisher(CameraInfo, 'camera_info', 5)
        self._pub_truth = self.create_publisher(Image, 'ground_truth/free_mask', 5)
        #: stamp (nanoseconds) -> index into ``frames`` of every frame sent
        self.sent = {}
        self.count = 0
        self._timer = self.create_timer(1.0 / p['rate'], self._tick)

    def _tick(self):
        limit = self.params['max_frames']
        if limit and self.count >= limit:
            return
        i = self.count % len(self.frames)
        now = self.get_clock().now()
        for msg in (self._images[i], self._truth[i], self._infos[i]):
            msg.header.stamp = now.to_msg()
            msg.header.frame_id = self.params['frame_id']
        self.sent[now.nanoseconds] = i
        self._pub_info.publish(self._infos[i])
        self._pub_image.publish(self._images[i])
        if self._pub_truth.get_subscription_count():
            self._pub_truth.publish(self._truth[i])
        self.count += 1

    @property
    def done(self):
        limit = self.params['max_frames']
        return bool(limit) and self.count >= limit


def main(args=None):
    """Run ``synthetic_camera`` until SIGINT/SIGTERM."""
    return spin_node(SyntheticCameraNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
