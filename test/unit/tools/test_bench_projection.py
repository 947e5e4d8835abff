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

"""bench-projection's grid_mask_width table: full size is the reference, narrower is close."""

from freespace_seg.tools.bench.projection import mask_width_markdown, measure_mask_width


def test_the_mask_width_table_compares_each_width_with_the_full_size_grid():
    results = measure_mask_width(frames=3, widths=(0, 640))
    assert [r['mask'] for r in results] == ['1280x720', '640x360']
    full, shrunk = results
    assert full['agree'] == 1.0 and full['occupied_free'] == 0.0
    assert 0.8 <= shrunk['agree'] < 1.0 and shrunk['occupied_free'] < 0.05
    assert all(r['median_ms'] > 0.0 for r in results)
    text = mask_width_markdown(results, 3)
    assert '| 640 | 640x360 |' in text and '| 0 | 1280x720 |' in text
