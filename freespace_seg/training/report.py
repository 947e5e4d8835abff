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

"""The reports of ``eval``: ``metrics.json``, ``metrics.md`` and the card's evaluation entry."""

import json
import os

from freespace_seg.common.machine import cpu_label
from freespace_seg.common.markdown import number, table
from freespace_seg.common.values import round4
from freespace_seg.training.figures import ERROR_LEGEND, LAYER_CHANNELS


def card_scores(summary, split_seed, source):
    """Return the card's ``evaluation.synthetic_<split>`` entry for a summary."""
    names = list(summary['iou'])
    positive = [k for k in summary if k.startswith('f1_') and k != 'f1_macro']
    entry = {
        'miou': round4(summary['miou']),
        'iou': {n: round4(summary['iou'][n]) for n in names},
    }
    if summary.get('blocked_called_free') is not None:
        entry['blocked_called_free'] = round4(summary['blocked_called_free'])
    for key in positive:
        entry[key] = round4(summary[key])
    entry.update({
        'f1_macro': round4(summary['f1_macro']),
        'pixel_accuracy': round4(summary['pixel_accuracy']),
        'images': int(summary['images']),
        'split_seed': split_seed,
        'source': source,
    })
    return entry


def _fmt(x):
    return number(x, 4, missing='n/a')


#: the rule cell of the evaluation report's tables (``| --- |``)
_RULE = ' --- '


def markdown_report(result):
    """Return a Markdown summary: one headline row plus a per-class table."""
    s = result['metrics']
    names = list(s['iou'])
    f1_pos = [k for k in s if k.startswith('f1_') and k != 'f1_macro']
    pos = f1_pos[0] if f1_pos else None
    lines = [
        f'# Evaluation of `{result["model_name"]}`',
        '',
        f'- model: `{result["model"]}`',
        f'- data: {result["source"]}',
        f'- images: {s["images"]} ({s["pixels"]} labelled pixels)',
        f'- engine: ONNX Runtime CPU, {result["threads"]} threads, through the node\'s pipeline',
        f'- date: {result["date"]}',
    ]
    if result.get('machine'):
        lines.append(f'- CPU: {cpu_label(result["machine"])}')
    if result.get('int8_math'):
        lines.append(f'- arithmetic: {result["int8_math"]}')
    if result.get('note'):
        lines.append(f'- note: {result["note"]}')
    lines.append('')
    unsafe = 'blocked_called_free' in s
    head = (['Model', 'Data', 'mIoU'] + (['Blocked called free'] if unsafe else [])
            + [f'IoU {n}' for n in names]
            + ([f'F1 {pos[3:]}'] if pos else []) + ['F1 macro', 'Pixel accuracy'])
    cells = ([result['model_name'], result['source_short'], _fmt(s['miou'])]
             + ([_fmt(s['blocked_called_free'])] if unsafe else [])
             + [_fmt(s['iou'][n]) for n in names] + ([_fmt(s[pos])] if pos else [])
             + [_fmt(s['f1_macro']), _fmt(s['pixel_accuracy'])])
    lines += table(head, [cells], cell=_RULE) + ['']
    lines += table(['Class', 'IoU', 'F1', 'Precision', 'Recall'],
                   [[n] + [_fmt(s[k][n]) for k in ('iou', 'f1', 'precision', 'recall')]
                    for n in names], cell=_RULE)
    lines += ['', 'Confusion matrix (rows: label, columns: prediction):', '']
    lines += table(['label \\ pred'] + names,
                   [[n] + list(row) for n, row in zip(names, s['confusion'])], cell=_RULE)
    if result.get('latency_ms'):
        lat = result['latency_ms']
        lines += ['', f'Bare model latency (ONNX Runtime CPU, {lat["threads"]} threads, input '
                  f'{lat["shape"]}): median {lat["p50_ms"]} ms, p90 {lat["p90_ms"]} ms; '
                  f'whole pipeline {result["pipeline_ms_per_image"]} ms per image.']
    if result.get('surfaces'):
        from freespace_seg.training.surfaces import markdown as surfaces_markdown
        lines += ['', surfaces_markdown(result['surfaces']).rstrip('\n')]
    lines += _figures_markdown(result)
    return '\n'.join(lines) + '\n'


def _figures_markdown(result):
    lines = []
    figures = result.get('figures')
    if figures and (figures['worst'] or figures['best']):
        stats = figures.get('per_image_miou')
        lines += ['', '## Worst and best images', '',
                  'By the mIoU of each image alone. Each figure shows the input, the '
                  'prediction over it and an error map (' + ERROR_LEGEND + ').', '']
        if stats:
            lines += [f'Per-image mIoU over {stats["images"]} images: mean '
                      f'{_fmt(stats["mean"])}, median {_fmt(stats["median"])}, min '
                      f'{_fmt(stats["min"])}, max {_fmt(stats["max"])}.', '']
        lines += table(['Figure', 'Image', 'mIoU'],
                       [[f'[{e["file"]}]({e["file"]})', e['image'], _fmt(e['miou'])]
                        for kind in ('worst', 'best') for e in figures[kind]], cell=_RULE)
    layers = result.get('layers')
    if layers:
        lines += ['', '## Feature maps', '',
                  f'[{layers["file"]}]({layers["file"]}): the first {LAYER_CHANNELS} channels '
                  f'of each layer on {layers["image"]}, each channel min-max normalized on its '
                  'own.', '']
        lines += table(['Layer', 'Shape'],
                       [[f'`{e["name"]}`', e['shape']] for e in layers['layers']], cell=_RULE)
    return lines


def write_reports(result, out_dir):
    """Write ``metrics.json`` and ``metrics.md`` into ``out_dir``; return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, 'metrics.json')
    md_path = os.path.join(out_dir, 'metrics.md')
    with open(json_path, 'w', encoding='utf-8') as f:
        json.dump(result, f, indent=2)
        f.write('\n')
    with open(md_path, 'w', encoding='utf-8') as f:
        f.write(markdown_report(result))
    return json_path, md_path
