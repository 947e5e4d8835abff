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
Where the camera's pose in the base frame comes from: TF at the image stamp, or parameters.

With ``use_tf`` the pose of the image's frame_id in ``base_frame`` is looked up through
tf2_ros at the image stamp, with a timeout. When tf2_ros cannot be imported, or a lookup
fails, the node says so once (and once more when TF recovers) and uses the fixed mount from
the ``camera_*`` parameters.
"""

from freespace_seg.ground.geometry import transform_matrix
from rclpy.duration import Duration
from rclpy.time import Time


class CameraPoseSource:
    """Return 4x4 base_from_optical transforms from TF, or None to use the parameters."""

    def __init__(self, node, use_tf, base_frame, timeout_s):
        self._node = node
        self.base_frame = base_frame
        self._timeout = Duration(seconds=float(timeout_s))
        self._buffer = None
        self._tf_error = None
        self._failing = False
        #: a short sentence for diagnostics
        self.status = 'camera_* parameters (use_tf is false)'
        if not use_tf:
            return
        try:
            import tf2_ros
        except ImportError as e:
            self.status = ('camera_* parameters: use_tf is true but tf2_ros is not '
                           f'importable ({e})')
            node.get_logger().warning(self.status)
            return
        self._tf_error = tf2_ros.TransformException
        self._buffer = tf2_ros.Buffer()
        self._listener = tf2_ros.TransformListener(self._buffer, node)
        self.status = f'TF {base_frame} <- image frame at the image stamp'

    def lookup(self, frame_id, stamp):
        """Return the transform of ``frame_id`` in the base frame at ``stamp``, or None."""
        if self._buffer is None:
            return None
        try:
            t = self._buffer.lookup_transform(self.base_frame, frame_id, Time.from_msg(stamp),
                                              timeout=self._timeout)
        except self._tf_error as e:
            if not self._failing:
                self._failing = True
                self.status = (f'camera_* parameters: no TF {self.base_frame} <- {frame_id} '
                               f'at the image stamp ({e})')
                self._node.get_logger().warning(self.status + '; falling back until it appears')
            return None
        if self._failing:
            self._failing = False
            self.status = f'TF {self.base_frame} <- {frame_id} at the image stamp'
            self._node.get_logger().info('TF is back: ' + self.status)
        tr, q = t.transform.translation, t.transform.rotation
        return transform_matrix((tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w))
