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
``python -m freespace_seg bench-train-data``: the data path of ``train`` against its model step.

Every row runs the code ``train`` runs, on this machine, and prints a Markdown table:

* ``render``: :func:`~freespace_seg.training.data.rendered_frames` letterboxed by
  :func:`~freespace_seg.training.data.stack_letterboxed` (what ``train --render N`` does
  before its first step), with 1 and with ``--render-jobs`` worker processes. The start (the
  pool's processes, the textures) is in the frames/s; the time to the first frame is given,
  and for one job the rate after it, which a long render reaches.
* ``generate`` and ``load``: ``generate`` writes the same number of frames to a temporary
  folder (or ``--data DIR`` is read instead), and ``train --data``'s loader
  (:func:`~freespace_seg.training.data.dataset_frames` into ``stack_letterboxed``) reads them
  back into memory. A folder just written is read from the page cache.
* ``batch``: the per-step data path of :func:`~freespace_seg.training.loop.train_model`: the
  :class:`~freespace_seg.training.sampler.FrameSampler` draw and
  :func:`~freespace_seg.training.loop.prepare_batch` (gather, uint8 to float, ``--augment``,
  normalize, channels-last), per ``--augment`` mode, on the training device (``--device``,
  the CPU by default) and on torch's ``meta`` device. The ``meta`` rows are what the main
  process still does in a GPU step: the tensors there hold no data, so only the CPU's work is
  left (the gather, the random numbers, which come from one CPU generator, and the calls),
  not the copies to the GPU. :class:`DataPathProbe` then counts, over a few more batches,
  the bytes copied to the device, the calls made there, and the CPU time of the operations
  on CPU tensors alone: a meta call costs more than a CUDA launch, so the GPU's share lies
  between that time and the row's.
* ``model step``: :func:`~freespace_seg.training.loop.train_model` without augmentation (its
  gather and normalize are in it), ``--steps`` timed after one warm-up step: forward,
  backward, AdamW and the schedule of ``--arch`` at ``--input-size``, batch ``--batch-size``.

``x model`` is a row's frames/s over the frames/s the model step consumes. Under the table:
how many render jobs render 16,000 frames in 10 minutes, and whether the main process's share
keeps up with a GPU that trains ``--gpu-rate`` frames/s (an assumption, 500 by default), in
line with each step and with the batch made ahead in a thread, as ``train`` does on a GPU
(:mod:`freespace_seg.training.prefetch`).
Wall-clock rates depend on what else runs; the CPU-time column depends on it much less.
``--quick`` measures tiny frames and a few steps (for the tests).
"""

import argparse
import math
import os
import platform
import sys
import tempfile
import time

from freespace_seg.common.markdown import number, table
from freespace_seg.common.values import split_size
from freespace_seg.training import data as datasets
from freespace_seg.training.augment import AUGMENT_MODES
from freespace_seg.training.device import DEVICES, resolve_device
from freespace_seg.training.errors import TrainError
from freespace_seg.training.loop import prepare_batch, train_model
from freespace_seg.training.model import ARCHS, build_model
from freespace_seg.training.sampler import FrameSampler
from freespace_seg.training.tensors import CLASS_NAMES, PAD_VALUE, to_tensors
import torch
from torch.overrides import TorchFunctionMode

NAME = 'bench-train-data'

#: the Lite0 recipe's decoder, the default here
LITE0_DECODER = (96, 64, 40, 24)

#: option -> (default, --quick value); None: as computed in :func:`resolve`
SETTINGS = {
    'frames': (32, 4),
    'render_jobs': (None, 2),
    'render_size': ((480, 270), (96, 54)),
    'input_size': ((480, 272), (96, 64)),
    'batch_size': (8, 2),
    'augment': (('jitter', 'light', 'strong'), ('jitter', 'light')),
    'batches': (30, 3),
    'steps': (5, 1),
}

#: batches of a batch row timed again under :class:`DataPathProbe` (not on the CPU)
PROBE_BATCHES = 5

#: frames and minutes of the render plan printed under the table
PLAN_FRAMES, PLAN_MINUTES = 16000, 10


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got {text!r}')
    return value


def _size(text):
    try:
        w, h = split_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected WIDTHxHEIGHT, got {text!r}') from None
    if w < 16 or h < 16:
        raise argparse.ArgumentTypeError(f'expected at least 16x16, got {text!r}')
    return w, h


def _modes(text):
    names = tuple(dict.fromkeys(v.strip() for v in text.split(',') if v.strip()))
    known = AUGMENT_MODES + ('none',)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f'unknown --augment modes {unknown or [text]}; expected some of {", ".join(known)}')
    return names


def _widths(text):
    try:
        values = tuple(int(v) for v in text.split(','))
    except ValueError:
        values = ()
    if len(values) != 4 or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f'expected 4 positive comma-separated channel counts, got {text!r}')
    return values


def _rate(text):
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'expected a positive rate, got {text!r}')
    return value


def add_arguments(parser):
    """Add the options of ``bench-train-data`` to ``parser``."""
    parser.add_argument('--frames', type=_positive, metavar='N',
                        help='frames rendered (with each --render-jobs), written and loaded; '
                             'the batches are drawn from them (default: 32)')
    parser.add_argument('--render-jobs', type=_positive, metavar='N',
                        help='the second render row: N worker processes (default: the CPU '
                             'count, %d here)' % (os.cpu_count() or 1))
    parser.add_argument('--render-size', type=_size, metavar='WxH',
                        help="rendered camera size, train's --render-size (default: 480x270)")
    parser.add_argument('--input-size', type=_size, metavar='WxH',
                        help='network input size (default: 480x272)')
    parser.add_argument('--data', metavar='DIR',
                        help='time the loader on the train split of this `generate` folder '
                             '(at most --frames frames) instead of a temporary one')
    parser.add_argument('--batch-size', type=_positive, metavar='B', help='default: 8')
    parser.add_argument('--augment', type=_modes, metavar='MODE[,MODE...]',
                        help='augmentation modes of the batch rows, or none (default: '
                             'jitter,light,strong)')
    parser.add_argument('--batches', type=_positive, metavar='N',
                        help='batches timed per batch row, after 2 untimed (default: 30)')
    parser.add_argument('--steps', type=_positive, metavar='N',
                        help='model steps timed, after 1 untimed (default: 5)')
    parser.add_argument('--arch', choices=ARCHS, default='efficientnet-lite0',
                        help='network of the model step (default: %(default)s)')
    parser.add_argument('--decoder-widths', type=_widths, metavar='D1,..,D4',
                        help='with a Lite --arch: decoder channels (default: %s, the Lite0 '
                             'recipe)' % ','.join(map(str, LITE0_DECODER)))
    parser.add_argument('--device', choices=DEVICES, default='cpu',
                        help='where the model step and the first batch rows run '
                             '(default: %(default)s)')
    parser.add_argument('--threads', type=_positive, default=2,
                        help='torch threads (default: %(default)s)')
    parser.add_argument('--gpu-rate', type=_rate, default=500.0, metavar='FRAMES_PER_S',
                        help='frames/s a GPU is assumed to train, for the verdict under the '
                             'table (default: %(default)g)')
    parser.add_argument('--seed', type=int, default=0, help='renderer and batch seed (0)')
    parser.add_argument('--json', metavar='PATH', help='also write the rows as JSON')
    parser.add_argument('--quick', action='store_true',
                        help='tiny frames, few batches and one step (for the tests): '
                             + ', '.join(f'--{k.replace("_", "-")} {_show(q)}'
                                         for k, (_, q) in SETTINGS.items()))


def _show(value):
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f'{value[0]}x{value[1]}'
    if isinstance(value, tuple):
        return ','.join(map(str, value))
    return str(value)


def resolve(args):
    """Fill the options not given with their defaults (or ``--quick`` values); return args."""
    for key, (default, quick) in SETTINGS.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else default)
    if args.render_jobs is None:
        args.render_jobs = os.cpu_count() or 1
    return args


def _clocks(children=False):
    """(wall s, CPU s of this process, and of its waited-for children with ``children``)."""
    cpu = time.process_time()
    if children:   # in clock ticks, enough for the seconds of a render
        t = os.times()
        cpu += t.children_user + t.children_system
    return time.perf_counter(), cpu


def _stamped(frames, stamps):
    for frame in frames:
        stamps.append(time.perf_counter())
        yield frame


def _row(part, case, frames, wall, cpu, unit=None, count=None, **extra):
    return dict(part=part, case=case, frames=int(frames), wall_s=wall, cpu_s=cpu,
                frames_per_s=frames / wall if wall > 0 else None,
                cpu_ms_per_frame=1e3 * cpu / frames if frames else None,
                unit=unit, count=count,
                ms_per_unit=1e3 * wall / count if count else None, **extra)


def time_render(args, jobs):
    """Render and letterbox ``--frames`` frames as ``train --render`` does; (row, x, y)."""
    rw, rh = args.render_size
    w, h = args.input_size
    stamps = []
    wall, cpu = _clocks(children=True)
    frames = datasets.rendered_frames(args.frames, args.seed, rw, rh, jobs=jobs)
    x, y = datasets.stack_letterboxed(_stamped(frames, stamps), args.frames, w, h, PAD_VALUE,
                                      desc=f'{NAME}: render, {jobs} job(s)')
    end, end_cpu = _clocks(children=True)
    n = len(stamps)
    # One process hands the frames over one by one; worker processes in chunks, whose rate
    # after the first frame would say little.
    steady = (n - 1) / (stamps[-1] - stamps[0]) if jobs == 1 and n > 1 and \
        stamps[-1] > stamps[0] else None
    row = _row('render', f'{jobs} job{"s" if jobs > 1 else ""}, {rw}x{rh} to {w}x{h}', n,
               end - wall, end_cpu - cpu, first_frame_s=stamps[0] - wall if stamps else None,
               after_first_per_s=steady, jobs=jobs)
    return row, x, y


def write_dataset(args, folder, jobs):
    """Write ``--frames`` training frames with ``generate`` into ``folder``; return the row."""
    from freespace_seg.sim import generate

    parser = argparse.ArgumentParser(prog=f'{NAME} generate')
    generate.add_arguments(parser)
    rw, rh = args.render_size
    gen_args = parser.parse_args(['--out', folder, '--num', str(args.frames), '--splits',
                                  '1,0,0', '--seed', str(args.seed), '--width', str(rw),
                                  '--height', str(rh), '--jobs', str(jobs)])
    wall, cpu = _clocks(children=True)
    if generate.run(gen_args) != 0:
        raise TrainError(f'generate into {folder} failed')
    end, end_cpu = _clocks(children=True)
    return _row('generate', f'{jobs} job{"s" if jobs > 1 else ""}: render and write PNGs, '
                f'{rw}x{rh}', args.frames, end - wall, end_cpu - cpu, jobs=jobs)


def time_load(args, folder, where):
    """Read the train split of ``folder`` as ``train --data`` does; return the row."""
    w, h = args.input_size
    n = datasets.count_frames(folder, 'train', args.frames)
    wall, cpu = _clocks()
    x, _ = datasets.stack_letterboxed(datasets.dataset_frames(folder, 'train', args.frames), n,
                                      w, h, PAD_VALUE, desc=f'{NAME}: load')
    end, end_cpu = _clocks()
    return _row('load', f'PNG to memory at {w}x{h}, {where}', x.shape[0], end - wall,
                end_cpu - cpu)


def _tensors(value):
    """Yield the tensors in ``value`` and in the tuples, lists and dicts it holds."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


class DataPathProbe(TorchFunctionMode):
    """
    What a batch's data path asks of the CPU when its tensors live on another device.

    ``bytes``: what ``Tensor.to`` copies from CPU tensors to the device. ``cpu_s``: the CPU
    time (of this thread) of the calls that touch CPU tensors only (the gather, the random
    numbers of the CPU generator, the small tensors made of them): the work left to the CPU
    on any device. ``device_calls``: the calls that return a tensor on the device, which a
    GPU launches.
    """

    def __init__(self):
        super().__init__()
        self.bytes = 0
        self.cpu_s = 0.0
        self.device_calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        start = time.thread_time()   # CPU time: what else runs on the machine adds nothing
        out = func(*args, **kwargs)
        took = time.thread_time() - start
        given = list(_tensors((args, kwargs)))
        made = list(_tensors(out))
        elsewhere = [t for t in made if t.device.type != 'cpu']
        if elsewhere:
            self.device_calls += 1
            if getattr(func, '__name__', '') == 'to' and given and \
                    given[0].device.type == 'cpu':
                self.bytes += given[0].nbytes
        elif all(t.device.type == 'cpu' for t in given):
            self.cpu_s += took
        return out


def _sync(device):
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def time_batches(args, images, labels, mode, device):
    """Time the sampler's draw and :func:`prepare_batch` for ``--batches`` batches; a row."""
    gen = torch.Generator().manual_seed(int(args.seed))
    sampler = FrameSampler(images.shape[0], gen)
    augment_data = False if mode == 'none' else mode
    bs = args.batch_size

    def one():
        idx = sampler.draw(bs)
        x, y = prepare_batch(images, labels, idx, device, gen, augment_data)
        _sync(device)
        return x, y
    for _ in range(2):
        one()
    wall, cpu = _clocks()
    for _ in range(args.batches):
        one()
    end, end_cpu = _clocks()
    row = _row('batch', f'{mode}, on the {"CPU" if device.type == "cpu" else device.type}',
               args.batches * bs, end - wall, end_cpu - cpu, 'batch', args.batches, mode=mode,
               device=device.type)
    if device.type != 'cpu':
        probes = min(args.batches, PROBE_BATCHES)
        probe = DataPathProbe()
        with probe:
            for _ in range(probes):
                one()
        row.update(to_device_mb=probe.bytes / probes / 1e6,
                   cpu_ops_ms=1e3 * probe.cpu_s / probes,
                   device_calls=probe.device_calls / probes)
        row['case'] = (f'{mode}, the main process of a GPU step (meta device)'
                       if device.type == 'meta' else row['case']) + (
            f': {row["to_device_mb"]:.1f} MB to the device, {row["device_calls"]:.0f} calls '
            f'there, {row["cpu_ops_ms"]:.1f} ms of CPU in CPU tensor ops a batch')
    return row


def time_model(args, images, labels, device):
    """Time ``--steps`` steps of :func:`train_model` (after one) without augmentation; a row."""
    decoder = None if args.arch == 'unet' else (args.decoder_widths or LITE0_DECODER)
    model = build_model(num_classes=len(CLASS_NAMES), arch=args.arch, pretrained=True,
                        decoder=decoder)
    stamps = []

    def on_step(step, model):
        _sync(device)
        stamps.append(_clocks())
    train_model(model, images, labels, steps=args.steps + 1, batch_size=args.batch_size,
                seed=args.seed, augment_data=False, log=lambda m: None, device=device,
                encoder_lr_scale=0.5 if args.arch != 'unet' else 1.0, on_step=on_step)
    (wall, cpu), (end, end_cpu) = stamps[0], stamps[-1]
    bs = min(args.batch_size, images.shape[0])
    w, h = args.input_size
    name = args.arch + ('' if decoder is None else ' ' + ','.join(map(str, decoder)))
    return _row('model step', f'{name}, batch {bs} at {w}x{h}, {device.type}, '
                f'{args.threads} thread{"s" if args.threads > 1 else ""}', args.steps * bs,
                end - wall, end_cpu - cpu, 'step', args.steps)


def render_plan(render_rows):
    """
    Return (frames/s of one render job after its start, jobs for the plan), or (None, None).

    The jobs render :data:`PLAN_FRAMES` frames in :data:`PLAN_MINUTES` minutes at that rate.
    """
    one = next((r for r in render_rows if r['jobs'] == 1), None)
    rate = one and (one['after_first_per_s'] or one['frames_per_s'])
    if not rate:
        return None, None
    return rate, int(math.ceil(PLAN_FRAMES / (PLAN_MINUTES * 60.0 * rate)))


def _busy(step_ms, data_ms, overlapped=False):
    """Return the per cent of time a GPU step of ``step_ms`` computes, batches ``data_ms``."""
    share = step_ms / max(step_ms, data_ms) if overlapped else step_ms / (step_ms + data_ms)
    return f'{100.0 * share:.0f}'


def report(rows, args, header, model_fps):
    """Return (the header and the table, the lines under it) as lists of lines."""
    body = []
    for r in rows:
        ratio = r['frames_per_s'] / model_fps if model_fps and r['frames_per_s'] else None
        extra = ''
        if r['part'] == 'render':
            extra = f'; first frame after {r["first_frame_s"]:.1f} s' + (
                f', then {r["after_first_per_s"]:.1f} frames/s' if r['after_first_per_s']
                else '')
        per = f'{number(r["ms_per_unit"], 1)} a {r["unit"]}' if r['unit'] else ''
        body.append((r['part'], r['case'] + extra, r['frames'], number(r['frames_per_s'], 1),
                     per, number(r['cpu_ms_per_frame'], 1), number(ratio, 2)))
    lines = header + [''] + table(
        ('part', 'case', 'frames', 'frames/s', 'wall ms', 'CPU ms a frame', 'x model'), body,
        align=['---', '---'] + ['---:'] * 5)
    rate, jobs = render_plan([r for r in rows if r['part'] == 'render'])
    summary = []
    if rate:
        summary.append(f'Render up front: one job renders {rate:.1f} frames/s after its '
                       f'start; {PLAN_FRAMES} frames in {PLAN_MINUTES} minutes need {jobs} '
                       'such jobs (one free core each).')
    bs = args.batch_size
    step_ms = 1e3 * bs / args.gpu_rate
    for r in rows:
        if r['part'] == 'batch' and r['device'] == 'meta':
            # Wall time grows with what else runs, CPU time with threads that spin: the less.
            low, high = r['cpu_ops_ms'], min(r['ms_per_unit'], r['cpu_ms_per_frame'] * bs)
            verdict = ('enough' if high <= step_ms else 'too few' if low > step_ms else
                       'enough only if the calls cost little')
            summary.append(
                f'GPU at {args.gpu_rate:g} frames/s (assumed: {step_ms:.1f} ms a step of '
                f'{bs}), --augment {r["mode"]}: the main process spends {low:.1f} ms (its CPU '
                f'tensor ops) to {high:.1f} ms (the meta device row) a batch, '
                f'{1e3 * bs / high:.0f} to {1e3 * bs / max(low, 1e-9):.0f} frames/s: '
                f'{verdict}. In line with the step the GPU is busy {_busy(step_ms, high)} to '
                f'{_busy(step_ms, low)} % of the time; with the batch made ahead in a thread '
                f'(train on a GPU), {_busy(step_ms, high, True)} to '
                f'{_busy(step_ms, low, True)} %.')
    return lines, summary


def measure(args):
    """Run every row; return (rows, header lines, model frames/s). Raises TrainError."""
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.arch == 'unet' and args.decoder_widths:
        raise TrainError('--decoder-widths needs an EfficientNet-Lite --arch')
    if args.frames < args.batch_size:
        raise TrainError(f'--frames {args.frames} is fewer than one batch of '
                         f'--batch-size {args.batch_size}')
    if args.data is not None and not os.path.isdir(args.data):
        raise TrainError(f'--data {args.data}: no such folder')
    load = os.getloadavg()
    rows = []
    images = labels = None
    for jobs in dict.fromkeys((1, args.render_jobs)):
        print(f'{NAME}: rendering {args.frames} frames with {jobs} job(s)', file=sys.stderr,
              flush=True)
        row, x, y = time_render(args, jobs)
        rows.append(row)
        if images is None:
            images, labels = to_tensors(x, y)
    with tempfile.TemporaryDirectory(prefix=f'{NAME}-') as tmp:
        folder, where = args.data, f'from {args.data}'
        if folder is None:
            folder, where = tmp, 'just written (page cache)'
            print(f'{NAME}: generate into {tmp}', file=sys.stderr, flush=True)
            rows.append(write_dataset(args, tmp, args.render_jobs))
        try:
            rows.append(time_load(args, folder, where))
        except (OSError, ValueError) as e:
            raise TrainError(f'--data {folder}: {e}') from None
    for mode in args.augment:
        for dev in dict.fromkeys((device, torch.device('meta'))):
            print(f'{NAME}: {args.batches} batches of {args.batch_size}, --augment {mode}, '
                  f'{dev.type}', file=sys.stderr, flush=True)
            rows.append(time_batches(args, images, labels, mode, dev))
    print(f'{NAME}: {args.steps} model steps ({args.arch}) on {device.type}', file=sys.stderr,
          flush=True)
    model = time_model(args, images, labels, device)
    rows.append(model)
    header = [
        f'{NAME} on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, '
        f'torch {torch.__version__} with {args.threads} thread'
        f'{"s" if args.threads > 1 else ""}, device {device.type}; '
        f'{args.frames} frames, batches of {args.batch_size}; load average '
        f'{load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.']
    return rows, header, model['frames_per_s']


def run(args):
    """Measure and print the table; return the exit code (2 for unusable options)."""
    resolve(args)
    try:
        rows, header, model_fps = measure(args)
    except TrainError as e:
        print(f'{NAME}: error: {e}', file=sys.stderr)
        return 2
    lines, summary = report(rows, args, header, model_fps)
    print('\n'.join(lines + [''] + summary), flush=True)
    if args.json:
        import json

        record = {'header': header[0], 'options': {k: v for k, v in vars(args).items()
                                                   if not k.startswith('_')},
                  'model_frames_per_s': model_fps, 'rows': rows, 'summary': summary}
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(record, f, indent=2, default=str)
            f.write('\n')
    return 0
