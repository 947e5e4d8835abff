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
``python -m freespace_seg demo``: the real node on a synthetic camera, over real topics.

1. Renders rooms with the synthetic renderer (exact free-floor ground truth per pixel).
2. Starts ``segmentation_node`` in its own process, as ``ros2 run`` would, with the Fast DDS
   large-image profile from ``config/``.
3. Publishes the frames as a camera would (``image`` + ``camera_info``) and listens to the
   node's outputs.
4. Prints fps, stamp-to-publish latency, mIoU against the ground truth and the IoU of the
   free cells of ``free_space/grid``, and writes PNGs (input, ground truth, colored mask,
   overlay, the node's grid and the true grid) to the output folder. No display needed.
5. Unless ``--drive 0``: closes the loop for ``--drive`` simulated seconds in room
   ``--drive-room`` (``sim_robot`` + the node + ``freespace_driver``, see
   :mod:`freespace_seg.tools.closed_loop`), prints collisions, distance and coverage and writes a
   top-down picture of the path, ``closed_loop_room_<seed>.png``.
"""

import os
import sys
import threading
import time

import cv2
from freespace_seg.common.markdown import number, table
from freespace_seg.ground.drawing import render_grid
from freespace_seg.ground.grid import GridSpec
from freespace_seg.ground.metrics import grid_iou
from freespace_seg.ground.projection import GroundProjector
from freespace_seg.perception.engines import BACKENDS
from freespace_seg.perception.image_codec import image_to_array
from freespace_seg.perception.metrics import ConfusionAccumulator, summarize
from freespace_seg.perception.model_card import load_card
from freespace_seg.perception.postprocess import colorize, palette_lut
from freespace_seg.tools.child import node_environment, NodeProcess, segmentation_node_command
import numpy as np

OUTPUT_TOPICS = ('segmentation/mask', 'segmentation/colored_mask', 'segmentation/overlay',
                 'free_space/mask', 'free_space/grid_image')


def add_arguments(parser):
    parser.add_argument('--frames', type=int, default=150, help='frames to publish (150)')
    parser.add_argument('--rate', type=float, default=15.0, help='camera rate in Hz (15)')
    parser.add_argument('--scenes', type=int, default=24, help='distinct rooms rendered (24)')
    parser.add_argument('--width', type=int, default=640, help='camera width (640)')
    parser.add_argument('--height', type=int, default=360, help='camera height (360)')
    parser.add_argument('--seed', type=int, default=1000,
                        help='scene seed; the default differs from the training seeds')
    parser.add_argument('--model', default='', help='ONNX model (default: the packaged one)')
    parser.add_argument('--backend', default='auto', choices=BACKENDS)
    parser.add_argument('--num-threads', type=int, default=0)
    parser.add_argument('--save', type=int, default=4, help='frames to save as PNG (4)')
    parser.add_argument('--out', default='demo_output', help='output folder (demo_output)')
    parser.add_argument('--drive', type=float, default=20.0,
                        help='then drive the simulated Create 3 this many simulated seconds '
                        'with the model in the loop (20; 0: skip)')
    parser.add_argument('--drive-room', type=int, default=1,
                        help='seed of the room for --drive (1)')


def wait_for_connection(camera, listener, namespace, timeout=30.0):
    """
    Wait until the node subscribes to the camera and publishes every output (or timeout).

    Every output topic, not only the mask: the node makes only what is subscribed, and on a
    busy machine discovery of the picture topics can lag the mask's by seconds (a short demo
    then saved no panel).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (
            camera._pub_image.get_subscription_count() == 0
            or any(listener.count_publishers(f'{namespace}/{t}') == 0 for t in OUTPUT_TOPICS)):
        time.sleep(0.05)
    time.sleep(0.5)


def save_panels(out_dir, index, pictures):
    """Write each picture of one frame plus a panel: camera views left, grids right."""
    for name, img in pictures.items():
        cv2.imwrite(os.path.join(out_dir, f'frame{index:02d}_{name}.png'),
                    cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    h = pictures['input'].shape[0]
    tiles = {}
    for name, img in pictures.items():
        if img.shape[0] != h:
            img = cv2.resize(img, (int(round(img.shape[1] * h / img.shape[0])), h),
                             interpolation=cv2.INTER_NEAREST)
        tile = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
        cv2.putText(tile, name.replace('_', ' '), (8, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.7,
                    (255, 255, 255), 2, cv2.LINE_AA)
        tiles[name] = tile
    panel = np.vstack([np.hstack([tiles['input'], tiles['ground_truth'], tiles['true_grid']]),
                       np.hstack([tiles['colored_mask'], tiles['overlay'],
                                  tiles['node_grid']])])
    path = os.path.join(out_dir, f'frame{index:02d}_panel.png')
    cv2.imwrite(path, panel)
    return path


def grid_scores(frame, pred_free, spec):
    """
    Score the grid of a predicted mask against the truth; return two free-cell IoUs.

    1. Against the grid projected from the exact mask: what the model's errors cost.
    2. Against the true floor: cells seen in the exact grid (not unknown) whose centre is
       truly free in the room (``Scene.blocked_top_down``); this also counts what the
       projection itself gets wrong at cell edges.
    """
    projector = GroundProjector(frame.intrinsics, frame.mount, spec)
    pred = projector.ground(pred_free).grid
    exact = projector.ground(frame.free).grid
    a = grid_iou(pred, exact == 0, exact != -1)
    x, y = spec.cell_centers()
    px, py, yaw = frame.robot_pose
    wx = px + np.cos(yaw) * x - np.sin(yaw) * y
    wy = py + np.sin(yaw) * x + np.cos(yaw) * y
    true_free = ~frame.scene.blocked_top_down(wx, wy)
    b = grid_iou(pred, true_free, exact != -1)
    return a, b


def run(args):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import Image

    from freespace_seg.nodes.ros_util import stop_spin_thread
    from freespace_seg.nodes.synthetic_camera import render_frames, SyntheticCameraNode
    from freespace_seg.perception.pipeline import packaged_model_path

    model = os.path.abspath(args.model) if args.model else packaged_model_path()
    card = load_card(model)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    env = node_environment()
    for key in ('FASTDDS_DEFAULT_PROFILES_FILE', 'ROS_AUTOMATIC_DISCOVERY_RANGE'):
        os.environ[key] = env[key]
    print(f'freespace_seg demo: model {card.name} ({model})', file=sys.stderr)
    frames = render_frames(args.scenes, args.width, args.height, args.seed, show_progress=True)

    namespace = f'/freespace_demo_{os.getpid()}'
    node = NodeProcess(segmentation_node_command(
        ['-r', f'__ns:={namespace}', '-p', f'model_file_path:={model}',
         '-p', f'backend:={args.backend}', '-p', f'num_threads:={args.num_threads}']), env,
        echo='  [node] ')
    rclpy.init()
    camera = SyntheticCameraNode(
        frames=frames, namespace=namespace,
        parameter_overrides=[Parameter('rate', value=float(args.rate)),
                             Parameter('max_frames', value=int(args.frames))])
    listener = Node('demo_listener', namespace=namespace)
    received = {t: {} for t in OUTPUT_TOPICS}
    arrival = {}

    def make_cb(topic):
        def cb(msg):
            stamp = msg.header.stamp.sec * 10 ** 9 + msg.header.stamp.nanosec
            received[topic][stamp] = msg
            if topic == 'segmentation/mask':
                arrival[stamp] = time.time_ns()
        return cb

    for t in OUTPUT_TOPICS:
        listener.create_subscription(Image, t, make_cb(t), 10)
    # Single-threaded: one callback hop costs well under a millisecond, where rclpy's
    # MultiThreadedExecutor added up to hundreds of ms to the measured latency here.
    executor = SingleThreadedExecutor()
    executor.add_node(listener)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    code = 1
    try:
        if not node.ready.wait(timeout=120):
            print('demo: the node did not start; its log is above', file=sys.stderr)
            return 1
        wait_for_connection(camera, listener, namespace)
        executor.add_node(camera)
        start = time.monotonic()
        print(f'publishing {args.frames} frames at {args.rate:g} Hz, '
              f'{args.width}x{args.height} rgb8 ...', file=sys.stderr)
        while not camera.done and time.monotonic() - start < args.frames / args.rate * 3 + 10:
            time.sleep(0.1)
        time.sleep(1.0)
        elapsed = time.monotonic() - start
        code = report(args, card, camera, received, arrival, elapsed, out_dir)
    finally:
        stop_spin_thread(executor, spin)
        camera.destroy_node()
        listener.destroy_node()
        rclpy.try_shutdown()
        rc = node.stop()
        print(f'node exited with code {rc}', file=sys.stderr)
        if rc != 0:
            code = code or 1
    if code == 0 and args.drive > 0:
        code = drive(args, model, out_dir)
    return code


def drive(args, model, out_dir):
    """Close the loop in one simulated room; print its row, write the picture; 0 if no crash."""
    from freespace_seg.tools.closed_loop import draw_path_png, markdown_table, run_room
    print(f'closed loop: sim_robot + segmentation_node + freespace_driver in room '
          f'{args.drive_room} for {args.drive:g} s simulated (lockstep) ...', file=sys.stderr)
    r = run_room(args.drive_room, duration=args.drive, perception='model', model_path=model,
                 num_threads=1)
    path = os.path.join(out_dir, f'closed_loop_room_{args.drive_room}.png')
    draw_path_png(r, path)
    print('\n' + markdown_table([r]) + '\n')
    notes = f' ({"; ".join(r.notes)})' if r.notes else ''
    print(f'closed loop: {r.collisions} collisions, {r.distance:.1f} m in {r.duration:.0f} s, '
          f'{r.wall_time:.0f} s wall{notes}; path picture: {path}')
    return 0


def report(args, card, camera, received, arrival, elapsed, out_dir):
    """Print the numbers, save the pictures; return 0 if the node answered at all."""
    masks = received['segmentation/mask']
    sent = camera.sent
    matched = [s for s in masks if s in sent]
    if not matched:
        print('demo: no mask came back from the node', file=sys.stderr)
        return 1
    acc = ConfusionAccumulator(2)
    palette = palette_lut(card.palette)
    free_ids = np.array(card.free_space)
    spec = GridSpec()
    iou_vs_mask, iou_vs_floor = [], []
    for stamp in matched:
        frame = camera.frames[sent[stamp]]
        pred_free = np.isin(image_to_array(masks[stamp]), free_ids).astype(np.uint8)
        acc.update(pred_free, frame.free.astype(np.uint8))
        a, b = grid_scores(frame, pred_free, spec)
        iou_vs_mask.append(a)
        iou_vs_floor.append(b)
    scores = summarize(acc.matrix, ['blocked', 'free'], positive_class='free')
    lat = np.array([(arrival[s] - s) * 1e-6 for s in matched])
    first, last = min(matched), max(matched)
    span = (arrival[last] - arrival[first]) * 1e-9
    fps = (len(matched) - 1) / span if span > 0 else float('nan')

    saved = []
    # Only frames for which every picture topic arrived (a late or dropped overlay must not
    # cost a panel), spread evenly over the run.
    topics = ('segmentation/colored_mask', 'segmentation/overlay', 'free_space/grid_image')
    complete = [s for s in sorted(matched) if all(s in received[t] for t in topics)]
    for stamp in complete[::max(1, len(complete) // max(1, args.save))][:args.save]:
        i = sent[stamp]
        frame = camera.frames[i]
        parts = [received[t][stamp] for t in topics]
        true_grid = GroundProjector(frame.intrinsics, frame.mount, spec).ground(frame.free).grid
        pictures = {
            'input': frame.image, 'ground_truth': colorize(frame.free.astype(np.uint8), palette),
            'true_grid': render_grid(true_grid, grid_spec=spec),
            'colored_mask': image_to_array(parts[0]), 'overlay': image_to_array(parts[1]),
            'node_grid': image_to_array(parts[2])}
        saved.append(save_panels(out_dir, len(saved), pictures))

    lines = [''] + table(('metric', 'value'), [
        ('frames published / answered', f'{camera.count} / {len(matched)}'),
        ('camera rate', f'{args.rate:g} Hz, {args.width}x{args.height} rgb8'),
        ('processed fps', number(fps, 1)),
        ('latency stamp->mask p50 / p95', f'{number(np.percentile(lat, 50), 1)} / '
         f'{number(np.percentile(lat, 95), 1, unit=" ms")}'),
        ('mIoU vs ground truth', number(scores['miou'], 3)),
        ('IoU free / blocked',
         f'{number(scores["iou"]["free"], 3)} / {number(scores["iou"]["blocked"], 3)}'),
        ('F1 free', number(scores['f1_free'], 3)),
        ('pixel accuracy', number(scores['pixel_accuracy'], 3)),
        ('grid free-cell IoU vs grid of the true mask', number(np.mean(iou_vs_mask), 3)),
        (f'grid free-cell IoU vs true floor in view (<= {spec.max_range:g} m)',
         number(np.mean(iou_vs_floor), 3)),
    ]) + ['']
    print('\n'.join(lines))
    print(f'pictures: {out_dir} ({len(saved)} panels: input, ground truth, true grid / '
          'colored mask, overlay, node grid)')
    with open(os.path.join(out_dir, 'summary.md'), 'w') as f:
        f.write('\n'.join(lines))
    return 0
