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

"""The level and message of ``segmentation_node``'s DiagnosticStatus: a rule on its counters."""

from diagnostic_msgs.msg import DiagnosticStatus


def status_level(state, failure, received, since, stale_after, image_topic, idle=False,
                 grid_error='', server_error='', bad=0, processed=0, last_error=''):
    """
    Return ``(level, message)`` for the node's state, the first rule that applies.

    ``state``: the lifecycle state's label, ``failure`` why a transition failed; ``received``
    frames so far and ``since`` seconds since the last one (or the start), stale after
    ``stale_after``; ``idle``: nobody subscribes to any output; ``grid_error``: why the grid
    someone wants is not published; ``server_error``: a remote backend's failure; ``bad`` and
    ``processed`` frames, ``last_error`` the last bad frame's.
    """
    if state != 'active':
        level = DiagnosticStatus.ERROR if failure else DiagnosticStatus.WARN
        return level, f'lifecycle state {state}' + (f': {failure}' if failure else '')
    stale = DiagnosticStatus.ERROR if since > 3 * stale_after else DiagnosticStatus.WARN
    if not received:
        return stale, f'no images received on {image_topic}'
    if since > stale_after:
        return stale, f'input stale: no image on {image_topic} for {since:.1f} s'
    if idle:
        return DiagnosticStatus.OK, \
            'idle: nothing subscribes to the outputs, so no frame is decoded or segmented'
    if grid_error:
        return DiagnosticStatus.WARN, f'grid not published: {grid_error}'
    if server_error:
        return DiagnosticStatus.ERROR, \
            f'inference server failing ({bad} frames failed): {server_error}'
    if bad and processed == 0:
        return DiagnosticStatus.ERROR, f'every frame failed: {last_error}'
    if bad:
        return DiagnosticStatus.OK, f'running; {bad} bad frames (last: {last_error})'
    return DiagnosticStatus.OK, 'running'
