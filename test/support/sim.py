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

"""Renderer helpers of the sim tests: what went into the camera model."""

import importlib

from freespace_seg.sim import render

render_module = importlib.import_module('freespace_seg.sim.render')


def render_radiance(monkeypatch, *args, **kwargs):
    """Render and also return the linear radiance (3, H, W) that went into the camera model."""
    seen = []
    original = render_module._camera

    def spy(rad, *rest):
        seen.append(rad.copy())
        return original(rad, *rest)

    with monkeypatch.context() as m:
        m.setattr(render_module, '_camera', spy)
        frame = render(*args, **kwargs)
    return frame, seen[-1]
