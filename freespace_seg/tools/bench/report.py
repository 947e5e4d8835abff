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

"""The bench's report: the table, the ratios and goals, the latency plot, bench.md."""

import json
import os

import cv2
from freespace_seg.common.markdown import number, table
import numpy as np


# ---------------------------------------------------------------------------------------------
# Report


def _f(x, digits=1):
    return number(x, digits)


#: the results table's columns
COLUMNS = ('#', 'measured', 'model', 'threads', 'input', 'camera', 'fps', 'p50 ms', 'p95 ms',
           'max ms', 'dropped', 'CPU %', 'RSS MB', 'bench CPU %', 'other CPU %')


def markdown_table(rows):
    """Return the Markdown results table."""
    cells = []
    for i, r in enumerate(rows, 1):
        kind = r['kind'] + (' (all outputs)' if r.get('all_outputs') else '') + \
            (f' (ground outputs {r["ground"]})' if r.get('ground') else '') + \
            (f' ({r["workers"]} workers)' if r.get('workers', 1) > 1 else '')
        dropped = '-' if 'published' not in r else f'{r["dropped"]}/{r["published"]}'
        cells.append([
            i, kind, r['model'], r['threads'], r['input'], r.get('camera', '-'), _f(r['fps']),
            _f(r['p50_ms']), _f(r['p95_ms']), _f(r['max_ms']), dropped,
            _f(r['cpu_percent'], 0), _f(r.get('rss_mb'), 0),
            _f(r.get('bench_cpu_percent'), 0), _f(r.get('other_cpu_percent'), 0)])
    return '\n'.join(table(COLUMNS, cells))


def find(rows, kind, model=None, threads=None, rate=None, transport='rgb8', all_outputs=False,
         workers=1):
    """Return the first row matching the filters (``workers``: the node's), or None."""
    for r in rows:
        if r['kind'] != kind or (model is not None and r['model'] != model):
            continue
        if r.get('workers', 1) != workers:
            continue
        if threads is not None and r['threads'] != threads:
            continue
        if rate is not None and r.get('rate_hz') != rate:
            continue
        if kind in ('node', 'naive') and not r['input'].startswith(transport):
            continue
        if bool(r.get('all_outputs')) != all_outputs or r.get('ground'):
            continue
        return r
    return None


def saturated(rows, model, threads):
    """
    Return the node's best row where it, not the camera, set the pace, or None.

    That is the closed-loop row, or a raw rgb8 row whose camera published over 5 % more
    frames than the node processed; rows of one worker only.
    """
    best = None
    for r in rows:
        if r['kind'] != 'node' or r['model'] != model or r['threads'] != threads or \
                r.get('all_outputs') or r.get('ground') or not r['input'].startswith('rgb8') \
                or r.get('workers', 1) != 1:
            continue
        if r['rate_hz'] == 0 or r['camera_fps'] > 1.05 * r['fps']:
            if best is None or r['fps'] > best['fps']:
                best = r
    return best


def ratios_and_goals(rows, threads_list, rates, models):
    """
    Compute the quoted ratios and check the goals; return (ratios, goals).

    Goals (one run on one machine): node throughput >= 0.95x the raw engine's at saturation
    (:func:`saturated`);
    p95 latency at 30 Hz <= 1.3x the engine's mean time + 3 ms; >= 3x the naive node's fps
    and <= 1/3 of its p95 at 30 Hz and above; >= 60 fps end to end at a 60 Hz camera (also
    for each condition with several workers). The other ratios and goals read the node's
    one-worker rows only.
    """
    ratios, goals = [], []

    def goal(name, value, target, ok, detail):
        goals.append({'goal': name, 'value': value, 'target': target, 'met': bool(ok),
                      'detail': detail})

    for model in models:
        for t in threads_list:
            eng = find(rows, 'engine', model, t)
            sat = saturated(rows, model, t)
            if eng and sat:
                r = sat['fps'] / eng['fps']
                ratios.append({'ratio': f'node/engine throughput, {model} {t}t, saturation',
                               'value': r})
                goal(f'node >= 0.95x engine throughput at saturation ({model}, {t}t)',
                     r, 0.95, r >= 0.95,
                     f'node {sat["fps"]:.1f} fps ({sat["camera"]}) vs engine '
                     f'{eng["fps"]:.1f} fps')
            node30 = find(rows, 'node', model, t, rate=30.0)
            if eng and node30 and node30['p95_ms'] is not None:
                limit = 1.3 * eng['mean_ms'] + 3.0
                goal(f'p95 at 30 Hz <= 1.3x engine + 3 ms ({model}, {t}t)',
                     node30['p95_ms'], limit, node30['p95_ms'] <= limit,
                     f'p95 {node30["p95_ms"]:.1f} ms vs limit {limit:.1f} ms '
                     f'(engine mean {eng["mean_ms"]:.1f} ms)')
            node60 = find(rows, 'node', model, t, rate=60.0)
            if node60:
                goal(f'>= 60 fps end to end at 60 Hz ({model}, {t}t)', node60['fps'], 60.0,
                     node60['fps'] >= 60.0 * 0.98,
                     f'{node60["fps"]:.1f} fps of {node60["camera_fps"]:.1f} Hz published')
    for r in rows:
        # The same goal for the conditions with several workers (--workers), as labelled.
        workers = r.get('workers', 1)
        if r['kind'] == 'node' and workers > 1 and r.get('rate_hz') == 60.0 and \
                r['input'].startswith('rgb8') and r['model'] in models:
            goal(f'>= 60 fps end to end at 60 Hz ({r["model"]}, {workers}w{r["threads"]}t)',
                 r['fps'], 60.0, r['fps'] >= 60.0 * 0.98,
                 f'{r["fps"]:.1f} fps of {r["camera_fps"]:.1f} Hz published')
    for rate in rates:
        naive = find(rows, 'naive', rate=rate)
        if not naive:
            continue
        for model in models:
            node = find(rows, 'node', model, naive['threads'], rate=rate)
            if not node:
                continue
            fr = node['fps'] / naive['fps'] if naive['fps'] else float('inf')
            ratios.append({'ratio': f'node {model}/naive fps at {rate:g} Hz', 'value': fr})
            pr = None
            if node['p95_ms'] is not None and naive['p95_ms']:
                pr = node['p95_ms'] / naive['p95_ms']
                ratios.append({'ratio': f'node {model}/naive p95 at {rate:g} Hz', 'value': pr})
            if rate >= 30:
                goal(f'>= 3x naive fps at {rate:g} Hz ({model})', fr, 3.0, fr >= 3.0,
                     f'node {node["fps"]:.1f} vs naive {naive["fps"]:.1f} fps')
                if pr is not None:
                    goal(f'<= 1/3 naive p95 at {rate:g} Hz ({model})', pr, 1 / 3,
                         pr <= 1 / 3,
                         f'node {node["p95_ms"]:.1f} vs naive {naive["p95_ms"]:.1f} ms')
    before = [r for r in rows if r.get('ground') == 'before']
    after = [r for r in rows if r.get('ground') == 'after']
    if before and after:
        b, a = before[0], after[0]
        fr = a['fps'] / b['fps'] if b['fps'] else float('nan')
        ratios.append({'ratio': 'ground outputs after/before fps at 30 Hz', 'value': fr})
        goal('every ground output within 10 % of before (fps)', fr, 0.9, fr >= 0.9,
             f'after {a["fps"]:.1f} fps vs before {b["fps"]:.1f} fps')
        if a['p95_ms'] is not None and b['p95_ms']:
            pr = a['p95_ms'] / b['p95_ms']
            ratios.append({'ratio': 'ground outputs after/before p95 at 30 Hz', 'value': pr})
            goal('every ground output within 10 % of before (p95)', pr, 1.1, pr <= 1.1,
                 f'after {a["p95_ms"]:.1f} ms vs before {b["p95_ms"]:.1f} ms')
    for model in models:
        for t in threads_list:
            eng = find(rows, 'engine', model, t)
            pipe = find(rows, 'pipeline', model, t)
            if eng and pipe:
                ratios.append({'ratio': f'pipeline/engine throughput, {model} {t}t',
                               'value': pipe['fps'] / eng['fps']})
    return ratios, goals


def ratio_lines(ratios, goals):
    lines = table(('ratio', 'value'), [(r['ratio'], number(r['value'], 2)) for r in ratios])
    lines += [''] + table(('goal', 'measured', 'target', 'met', 'detail'), [
        (g['goal'], number(g['value'], 2), number(g['target'], 2),
         'yes' if g['met'] else '**no**', g['detail']) for g in goals])
    return '\n'.join(lines)


def draw_latency_plot(rows, path, title=''):
    """
    Draw every row's latency (or per-call time) distribution as a PNG, with OpenCV.

    One line per row: a bar from p5 to p95, a tick at the median, a whisker to the maximum,
    on a log-scaled time axis; the processed fps is written at the right.
    """
    rows = [r for r in rows if r.get('samples_ms')]
    left, right, top, line_h = 430, 110, 60, 26
    width = 1280
    height = top + line_h * max(1, len(rows)) + 60
    img = np.full((height, width, 3), 255, np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    values = [v for r in rows for v in r['samples_ms'] if v > 0]
    lo = 10 ** np.floor(np.log10(max(min(values), 1e-3))) if values else 0.1
    top_value = max(values) if values else 1000.0
    decade = 10 ** np.floor(np.log10(top_value))
    hi = next(decade * m for m in (1, 2, 5, 10) if decade * m >= top_value)
    hi = max(hi, lo * 10)
    x0, x1 = left, width - right

    def x_of(ms):
        ms = min(max(ms, lo), hi)
        return int(round(x0 + (np.log10(ms) - np.log10(lo)) / (np.log10(hi) - np.log10(lo))
                         * (x1 - x0)))

    cv2.putText(img, title or 'latency (stamp -> mask received) and per-call time, ms',
                (10, 25), font, 0.6, (0, 0, 0), 1, cv2.LINE_AA)
    decade = lo
    while decade <= hi * 1.0001:
        for m in (1, 2, 5):
            v = decade * m
            if lo <= v <= hi:
                x = x_of(v)
                cv2.line(img, (x, top - 10), (x, height - 45), (225, 225, 225), 1)
                cv2.putText(img, f'{v:g}', (x - 10, height - 28), font, 0.45, (80, 80, 80), 1,
                            cv2.LINE_AA)
        decade *= 10
    colors = {'engine': (180, 119, 31), 'pipeline': (14, 127, 255), 'node': (44, 160, 44),
              'naive': (40, 39, 214)}  # BGR
    for i, r in enumerate(rows):
        y = top + i * line_h + line_h // 2
        a = np.asarray(r['samples_ms'])
        p5, p50, p95, mx = (float(np.percentile(a, q)) for q in (5, 50, 95, 100))
        label = r.get('label') or f'{r["kind"]} {r["model"]} {r["threads"]}t'
        cv2.putText(img, label[:58], (8, y + 5), font, 0.42, (0, 0, 0), 1, cv2.LINE_AA)
        color = colors.get(r['kind'], (0, 0, 0))
        cv2.line(img, (x_of(p95), y), (x_of(mx), y), color, 1, cv2.LINE_AA)
        cv2.rectangle(img, (x_of(p5), y - 7), (max(x_of(p95), x_of(p5) + 2), y + 7), color, -1)
        cv2.line(img, (x_of(p50), y - 10), (x_of(p50), y + 10), (0, 0, 0), 2)
        cv2.putText(img, f'{r["fps"]:.1f} fps', (x1 + 10, y + 5), font, 0.45, (0, 0, 0), 1,
                    cv2.LINE_AA)
    cv2.putText(img, 'ms (log scale); bar p5-p95, black tick median, line to max',
                (x0, height - 8), font, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.imwrite(path, img)
    return path


def memory_summary(row):
    """Return RSS growth figures of a memory run: after the first minute to the end."""
    series = [(t, r) for t, r in row.get('rss_series', []) if r is not None]
    if len(series) < 2:
        return None
    settle = min(60.0, series[-1][0] / 4)
    base = next(((t, r) for t, r in series if t >= settle), series[0])
    end = series[-1]
    minutes = (end[0] - base[0]) / 60.0
    return {'rss_first_mb': series[0][1], 'rss_after_settle_mb': base[1],
            'settle_s': base[0], 'rss_end_mb': end[1], 'growth_mb': end[1] - base[1],
            'growth_mb_per_min': (end[1] - base[1]) / minutes if minutes > 0 else None,
            'rss_max_mb': max(r for _, r in series), 'minutes': end[0] / 60.0}


def thread_lines(rows, least=1.0):
    """
    Markdown lines: the node process's CPU per thread for each node row that has it.

    Threads under ``least`` % are left out. ``seg_worker`` runs a frame from decoding to
    publishing (ONNX Runtime's ``run`` included), ``main`` the executor (receiving the
    images). A thread inherits the name of the thread that started it: OpenCV's pool, started
    by the worker, shows as a second ``seg_worker``; ONNX Runtime's pool as ``python``.
    """
    lines = [f'| {i} | {row.get("label") or row["kind"]} | '
             + ', '.join(f'{name} {pct:.0f} %' for name, pct in row['thread_cpu'] if pct >= least)
             + ' |'
             for i, row in enumerate(rows, 1) if row.get('thread_cpu')]
    if not lines:
        return ''
    return ('\nCPU per thread of the node process (100 % = one core; threads under '
            f"{least:g} % left out; a second `seg_worker`: OpenCV's pool, started by the "
            "worker; `python`: ONNX Runtime's pool):\n\n"
            '| # | condition | threads |\n|---|---|---|\n' + '\n'.join(lines) + '\n')


def write_report(result, out_dir):
    """
    Print the Markdown report of a result and write bench.md, bench.json and latency.png.

    The ratios and goals are computed here from the rows, so ``--from-json`` can redo the
    report of an earlier run.
    """
    info, rows, memory = result['machine'], result['rows'], result.get('memory')
    models = result['models']
    given = result.get('args', {})
    result.setdefault('camera', [given.get('width'), given.get('height')])
    result.setdefault('seed', given.get('seed'))
    result.setdefault('threads', sorted({r['threads'] for r in rows}))
    result.setdefault('rates', sorted({r['rate_hz'] for r in rows if r.get('rate_hz')}))
    ratios, goals = ratios_and_goals(rows, result['threads'], result['rates'], list(models))
    result['ratios'], result['goals'] = ratios, goals
    width, height = result['camera']
    jpeg = f'{result["jpeg_kb"]:.0f} KB' if result.get('jpeg_kb') else '?'
    info.setdefault('loadavg_end', None)
    node_param = given.get('node_param') or ()
    node_note = (' Node parameters of every node row: '
                 + ', '.join(f'`{p}`' for p in node_param) + '.') if node_param else ''
    header = [
        f'# freespace_seg benchmark ({info.get("date", "")})',
        '',
        f'Machine: {info["cpu"]}, {info["cores"]} cores; load average at start '
        f'{info["loadavg_1_5_15"]}, at end {info["loadavg_end"]}. ONNX Runtime '
        f'{info["onnxruntime"]} (CPU), OpenCV {info["opencv"]}, numpy {info["numpy"]}, '
        f'Python {info["python"]}.',
        'Models: ' + ', '.join(f'{k} `{os.path.basename(v)}`' for k, v in models.items())
        + f'. Camera {width}x{height}, {result["scenes"]} synthetic scenes (seed '
        f'{result["seed"]}), JPEG {jpeg} average. '
        f'{result["duration_s"]:g} s measured per topic condition after '
        f'{result["warmup_s"]:g} s warm-up.{node_note}',
        '',
        'engine/pipeline rows: per-call time in this process. node/naive rows: latency '
        'stamp -> receipt of segmentation/mask in the bench process (the publish time '
        'plus one transport hop); fps counts masks received for frames published in the '
        'window; dropped = published - answered; CPU % and RSS of the node process '
        '(100 % = one core); bench CPU %: this process (camera and receiver); other CPU %: '
        'everything else on the machine during the window (/proc/stat). The node '
        'rows subscribe segmentation/mask and free_space/grid (the naive node publishes '
        'the mask only).',
        '',
    ]
    text = '\n'.join(header) + '\n' + markdown_table(rows) + '\n\n' + \
        ratio_lines(ratios, goals) + '\n'
    text += thread_lines(rows)
    profiles = [(i, r['profile']) for i, r in enumerate(rows, 1) if r.get('profile')]
    if profiles:
        text += ('\nProfiles of the node processes (stack samples, '
                 'freespace_seg.common.profiling): '
                 + ', '.join(f'row {i}: `{name}`' for i, name in profiles) + '.\n')
    if memory:
        text += (f'\nMemory: RSS {memory["rss_after_settle_mb"]:.1f} MB after '
                 f'{memory["settle_s"]:.0f} s, {memory["rss_end_mb"]:.1f} MB at '
                 f'{memory["minutes"]:.1f} min (max {memory["rss_max_mb"]:.1f} MB): growth '
                 f'{memory["growth_mb"]:+.1f} MB'
                 + (f' ({memory["growth_mb_per_min"]:+.2f} MB/min)'
                    if memory['growth_mb_per_min'] is not None else '') + '.\n')
    print(text)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, 'bench.md'), 'w') as f:
        f.write(text)
    draw_latency_plot(rows, os.path.join(out_dir, 'latency.png'))
    with open(os.path.join(out_dir, 'bench.json'), 'w') as f:
        json.dump(result, f, indent=1)
    return text
