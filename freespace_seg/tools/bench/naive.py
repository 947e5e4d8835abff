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
The naive baseline node of ``bench``: what a first, obvious rclpy segmentation node does.

``python -m freespace_seg bench-naive-node --ros-args -p model_file_path:=...`` runs it; the
bench starts it in its own process as condition (d).
"""

import cv2
import numpy as np


def main(argv=None):
    """
    Run the naive baseline node: what a first, obvious rclpy segmentation node does.

    The image is copied out of the message, resized and normalized with float numpy
    arithmetic, laid out with ``transpose``; ONNX Runtime runs inside the subscription
    callback (default session options apart from the thread count); the class mask comes
    from ``np.argmax``, is resized back and published with ``msg.data = ndarray``.
    Subscription and publisher use a depth-10 reliable QoS, so frames queue while it works.
    """
    import onnxruntime as ort
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image

    from freespace_seg.perception.model_card import card_path_for_model, load_card

    rclpy.init(args=argv)
    node = Node('naive_segmentation')
    model = node.declare_parameter('model_file_path', '').value
    threads = node.declare_parameter('num_threads', 0).value
    card = load_card(card_path_for_model(model))
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = int(threads)
    session = ort.InferenceSession(model, opts, providers=['CPUExecutionProvider'])
    input_name = session.get_inputs()[0].name
    width, height = card.input_width, card.input_height
    mean = np.array(card.mean)
    std = np.array(card.std)
    pub = node.create_publisher(Image, 'segmentation/mask', 10)

    def on_image(msg):
        img = np.frombuffer(msg.data, dtype=np.uint8).copy().reshape(msg.height, msg.width, 3)
        x = cv2.resize(img, (width, height)).astype(np.float32) / 255.0
        x = (x - mean) / std
        x = x.transpose(2, 0, 1)[np.newaxis].astype(np.float32)
        logits = session.run(None, {input_name: x})[0]
        mask = np.argmax(logits[0], axis=0).astype(np.uint8)
        mask = cv2.resize(mask, (msg.width, msg.height), interpolation=cv2.INTER_NEAREST)
        out = Image()
        out.header = msg.header
        out.height, out.width = mask.shape
        out.encoding = 'mono8'
        out.step = mask.shape[1]
        out.data = mask.ravel()
        pub.publish(out)

    node.create_subscription(Image, 'image', on_image, 10)
    node.get_logger().info(f'naive node listening on {node.resolve_topic_name("image")}')
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
