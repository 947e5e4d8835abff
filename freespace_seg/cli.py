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
Command line: ``python -m freespace_seg <command> [options]``.

Each command lives in its own module and is imported only when it runs, so that
``generate`` never loads rclpy and ``demo`` never loads torch.
"""

import argparse
import importlib
import sys

# name -> (module, one-line help). Each module offers add_arguments(parser) and run(args) -> int,
# or main(argv) -> int when it takes its arguments as they are (a node's --ros-args).
COMMANDS = {
    'demo': ('freespace_seg.tools.demo', 'run the node on a synthetic camera and write pictures'),
    'generate': ('freespace_seg.sim.generate', 'render a synthetic dataset to disk'),
    'generate2': ('freespace_seg.scenes2.generate',
                  'render a test set with the second scene generator (not sim)'),
    'train': ('freespace_seg.training.train', 'train the UNet on synthetic data (torch, CPU)'),
    'seeds': ('freespace_seg.training.seeds',
              'train one recipe with several seeds and report the spread (torch, CPU)'),
    'finetune': ('freespace_seg.training.finetune',
                 'fine-tune a model on your own images with masks (torch, CPU)'),
    'soup': ('freespace_seg.training.soup',
             'average fine-tuned Lite runs (model soup) and/or WiSE-FT towards ImageNet'),
    'eval': ('freespace_seg.training.evaluate', 'IoU, mIoU, F1 and accuracy of a model'),
    'infer': ('freespace_seg.tools.infer',
              'segment images, folders, globs or videos without ROS'),
    'bag': ('freespace_seg.tools.bag',
            'segment the images of a rosbag2 (mcap or sqlite3) into a new bag, without ROS'),
    'build-engine': ('freespace_seg.tools.build_engine',
                     'build, cache and time a TensorRT engine'),
    'quantize': ('freespace_seg.training.quantize',
                 'static INT8 (QDQ) copy of a model, with its card'),
    'prune': ('freespace_seg.training.prune',
              'channel-prune a model and fine-tune it on synthetic frames (torch, CPU)'),
    'resize-input': ('freespace_seg.training.resize_input',
                     "a model's ONNX file at another network input size, with its card"),
    'tradeoff': ('freespace_seg.training.tradeoff',
                 'input size against mIoU against latency: a table and a plot'),
    'bench': ('freespace_seg.tools.bench.run',
              'engine, pipeline, node and naive node: fps, latency, CPU'),
    'bench-soak': ('freespace_seg.tools.bench.soak',
                   'segmentation_node at camera rate for a long time: memory, drops, latency'),
    'bench-bag': ('freespace_seg.tools.bench.bag',
                  'bag against the pipeline it runs: frames/s and memory over a long bag'),
    'bench-train-data': ('freespace_seg.training.bench_data',
                         "train's data path (render, load, batches) against its model step "
                         '(torch)'),
    'bench-projection': ('freespace_seg.tools.bench.projection',
                         'the ground projection: lookup-table build and per-frame cost'),
    'bench-ops': ('freespace_seg.tools.bench.ops',
                  "where a model's time goes in ONNX Runtime: per operator, part and node"),
    'bench-closed-loop': ('freespace_seg.tools.bench.closed_loop',
                          'drive the simulated Create 3 through seeded rooms: collisions, '
                          'coverage'),
    'bench-fleet': ('freespace_seg.tools.bench.fleet',
                    '1, 2, 4, 8 simulated robots on one serve against in-process ONNX Runtime'),
    'bench-naive-node': ('freespace_seg.tools.bench.naive',
                         "the bench's naive baseline node (takes --ros-args)"),
    'serve': ('freespace_seg.tools.serve',
              'a local Triton (KServe V2) inference server for a model, with dynamic batching'),
    'triton-repo': ('freespace_seg.tools.triton_repo',
                    'write a Triton model repository (onnxruntime or tensorrt) for a real server'),
    'grid-rules': ('freespace_seg.tools.grid_rules',
                   'grid rules (speckle tolerance) against the true floor, with a model'),
    'autolabel': ('freespace_seg.tools.autolabel',
                  'label a rosbag2 from where the robot drove: free, blocked, unchecked'),
    'autolabel-sim': ('freespace_seg.tools.autolabel_sim',
                      'drive-over labels against the exact truth in simulated rooms'),
    'own-floor-sim': ('freespace_seg.tools.own_floor_sim',
                      'the own-floor loop in simulation: drive, record, autolabel, finetune, '
                      'check'),
    'real-set': ('freespace_seg.training.real_set',
                 'write the real-photo evaluation set (stereo ground truth)'),
}


def build_parser():
    parser = argparse.ArgumentParser(prog='python -m freespace_seg',
                                     description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module_name)
        # Arguments are added lazily below, only for the chosen command.
    return parser, sub


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, sub = build_parser()
    if argv and argv[0] in COMMANDS:
        module = importlib.import_module(COMMANDS[argv[0]][0])
        if not hasattr(module, 'run'):
            return int(module.main(argv[1:]) or 0)
        cmd_parser = sub.choices[argv[0]]
        module.add_arguments(cmd_parser)
    args = parser.parse_args(argv)
    module = importlib.import_module(args._module)
    return int(module.run(args) or 0)
