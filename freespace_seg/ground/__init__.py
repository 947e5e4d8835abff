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
From a class mask to a ground grid, and one frame's outputs.

geometry (camera model, mount, pose) and camera_info; grid (GridSpec, GridRule), projection
(the projector: a mask -> :class:`~freespace_seg.ground.projection.Ground`), scan, drawing,
metrics; frame (the frame path: the perception pipeline, then the ground, for the node, bag,
infer and the benchmarks).
"""
