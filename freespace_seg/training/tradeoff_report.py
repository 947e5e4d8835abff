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
The reports of ``tradeoff``: ``tradeoff.md`` (the table), ``tradeoff.json`` and ``tradeoff.png``.

The plot (mIoU against p50 latency, log scale) is drawn with matplotlib (Agg backend), a
dependency of training and the tests only: no node imports this module.
"""

import json
import os

from freespace_seg.common.markdown import number, table


def padding_text(pad):
    """Describe a padding [left, top, right, bottom]: ``1+1 rows``, ``3+4 cols`` or ``none``."""
    left, top, right, bottom = pad
    parts = []
    if top or bottom:
        parts.append(f'{top}+{bottom} rows')
    if left or right:
        parts.append(f'{left}+{right} cols')
    return ', '.join(parts) or 'none'


def _f(value, digits):
    return number(value, digits, missing='–')


def _delta(value):
    return number(value, 4, missing='–', sign=True)


def table_lines(result):
    """Return the Markdown table of a result as a list of lines."""
    names = result['class_names']
    head = (['model', 'input', 'pad', 'precision', 'params', 'MB', 'mIoU']
            + [f'IoU {n}' for n in names]
            + ['F1 free', 'p50 ms', 'p95 ms', 'fps', 'threads', 'p50 vs ref', 'mIoU vs ref'])
    rows = []
    ref = result['reference']
    for row in result['rows']:
        lat = row['latency']
        name = row['card_name'] if row['kind'] == 'extra' else result['base_model']['name']
        if row['kind'] == 'extra':
            name += ' (extra)'
        size = f'{row["input"][0]}x{row["input"][1]}'
        if row['label'] == ref:
            size = f'**{size}** (ref)'
        cells = ([name, size, padding_text(row['letterbox_pad']), row['precision'],
                  f'{row["params"]:,}',
                  _f(row['model_mb'], 2), _f(row['miou'], 4)]
                 + [_f(row['iou'].get(n), 4) for n in names]
                 + [_f(row['f1_free'], 4), _f(lat['p50_ms'], 1), _f(lat['p95_ms'], 1),
                    _f(lat['fps'], 1), str(lat['threads']),
                    number(row['p50_vs_ref'], 2, missing='–', unit='x'),
                    _delta(row['miou_vs_ref'])])
        rows.append(cells)
    return table(head, rows, align=['---'] * 4 + ['---:'] * (len(head) - 4))


def markdown_report(result):
    """Return ``tradeoff.md``: what was measured, the table and the caveat."""
    s = result['settings']
    m = result['machine']
    base = result['base_model']
    load = m.get('loadavg_1_5_15')
    lines = [
        '# Input size against mIoU against latency',
        '',
        f'`{result["command"]}` ({result["date"]})',
        '',
        f'Scores: {s["frames"]} frames rendered at {s["frame_size"][0]}x{s["frame_size"][1]} '
        f'(seed {s["seed"]}, style {s["style"]}, renderer source hash '
        f'{s.get("renderer_source_hash")}), through the node\'s pipeline (letterbox to '
        "the row's input size, mask mapped back to camera pixels). Latency: the bare model in "
        f'ONNX Runtime {m.get("onnxruntime", "")} on the CPU, {s["threads"]} intra-op '
        f'thread(s), {s["runs"]} timed runs in {s.get("rounds", 1)} rounds interleaved with '
        f'the other rows, after {s["warmup"]} warm-up runs; fps = 1000 / mean. Machine: '
        f'{m.get("cpu", "?")}, {m.get("cores", "?")} cores'
        + (f', load average {load[0]:.2f} at the start' if load else '')
        + (f' and {s["load_end"]:.2f} at the end' if s.get('load_end') is not None else '')
        + '.',
        '',
        *table_lines(result),
        '',
        f'Reference row: {result["reference"]} (fp32 at the size {base["name"]} was trained '
        'at); "p50 vs ref" is the p50 latency divided by the reference\'s, "mIoU vs ref" the '
        'mIoU difference. "pad": letterbox padding of the frames in the network input, in '
        'network pixels (top+bottom rows, left+right columns). Params are the weights after '
        'BatchNorm folding.',
        '',
        f'Caveat: every {base["name"]} row is the same weights, trained at '
        f'{base["input"][0]}x{base["input"][1]}, re-exported at another input size: the scene '
        'at another scale, not what a model trained for that size would score.',
    ]
    if s.get('int8_sizes'):
        lines += ['', 'INT8: static QDQ (weights int8 per channel, activations uint8), '
                  f'calibrated on {s["calib_frames"]} frames of seed {s["calib_seed"]} per '
                  'size.']
    return '\n'.join(lines) + '\n'


#: colour and matplotlib marker of each kind of point
MARKERS = {'fp32': ('#1f77b4', 'o'), 'int8': ('#ff7f0e', 's'), 'extra': ('#2ca02c', '^')}
LEGEND = {'fp32': 'fp32 (same weights, re-exported)', 'int8': 'INT8 of it',
          'extra': 'extra model'}


def _point_label(row):
    text = f'{row["input"][0]}x{row["input"][1]}'
    if row['kind'] == 'extra':
        return f'{row["card_name"]} {text}'
    return text + ' int8' if row['precision'] == 'int8' else text


def draw_plot(result, path, width=960, height=600):
    """
    Plot mIoU against p50 latency (log scale) as a PNG with matplotlib; return ``path``.

    fp32 re-exports are blue circles, their INT8 copies orange squares, extra models green
    triangles; each point is labelled with its input size, the reference row is ringed.
    """
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    from matplotlib.ticker import LogLocator, ScalarFormatter

    rows = [r for r in result['rows'] if r['miou'] is not None and r['latency']['p50_ms']]
    dpi = 100
    fig, ax = plt.subplots(figsize=(width / dpi, height / dpi), dpi=dpi)
    try:
        for kind, (color, marker) in MARKERS.items():
            points = [r for r in rows
                      if ('extra' if r['kind'] == 'extra' else r['precision']) == kind]
            if points:
                ax.scatter([r['latency']['p50_ms'] for r in points],
                           [r['miou'] for r in points], c=color, marker=marker, s=50,
                           label=LEGEND[kind], zorder=3)
        ref = [r for r in rows if r['label'] == result['reference']]
        ax.scatter([r['latency']['p50_ms'] for r in ref], [r['miou'] for r in ref], s=220,
                   facecolors='none', edgecolors='black', label='reference row', zorder=4)
        for i, r in enumerate(rows):
            ax.annotate(_point_label(r), (r['latency']['p50_ms'], r['miou']),
                        xytext=(8, 8 if i % 2 == 0 else -14), textcoords='offset points',
                        fontsize=8)
        ax.set_xscale('log')
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.grid(True, which='major', color='#e6e6e6', zorder=0)
        ax.set_xlabel('p50 latency, ms (log scale)')
        ax.set_ylabel('mIoU')
        s = result['settings']
        ax.set_title(f'{result["base_model"]["name"]}: mIoU ({s["frames"]} frames, seed '
                     f'{s["seed"]}) vs bare-model p50 latency, ONNX Runtime CPU, '
                     f'{s["threads"]} thread(s)', fontsize=10)
        ax.legend(loc='lower right', fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format='png')
    finally:
        plt.close(fig)
    return path


def write_reports(result, out_dir):
    """Write ``tradeoff.json``, ``tradeoff.md`` and ``tradeoff.png``; return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, f'tradeoff.{ext}') for ext in ('json', 'md', 'png')]
    with open(paths[0], 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=2)
        f.write('\n')
    with open(paths[1], 'w', encoding='utf-8') as f:
        f.write(markdown_report(result))
    draw_plot(result, paths[2])
    return paths
