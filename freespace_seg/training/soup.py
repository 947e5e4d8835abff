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
``python -m freespace_seg soup``: weight-space averaging of fine-tuned Lite models.

Two robust fine-tuning tools that need no training:

- **model soups** (Wortsman et al., ICML 2022): the uniform average of the weights of several
  fine-tuned runs of one architecture that started from the same weights (the ImageNet
  encoder and a decoder drawn from the same ``--seed``);
- **WiSE-FT** (Wortsman et al., CVPR 2022): ``--imagenet-alpha A`` moves the encoder's
  weights a fraction A of the way back to the ImageNet ones, ``(1 - A) fine-tuned + A
  ImageNet``; the decoder stays the fine-tuned one.

An ingredient may also be an fp32 ONNX model of this package (the shipped
``models/freespace_lite0.onnx``, say): it is rebuilt in torch and its BatchNorm layers get
statistics measured on ``--data`` frames (:func:`freespace_seg.training.loop.onnx_init_state`),
so that its weights are comparable with those of a run that started from it (``train --init
MODEL.onnx``). With ``--weights`` the average is weighted: ``soup MODEL.onnx run/best.pt
--weights 0.5,0.5`` is WiSE-FT between a model and its fine-tuned copy.

Averaged weights do not match any run's BatchNorm statistics, so they are measured anew on
``--bn-frames`` training frames of ``--data`` (a running mean over all of them), unless
``--keep-bn`` keeps the average of the runs' statistics. The result is exported to ONNX with
a card that names every checkpoint, the weights and the statistics.
"""

import os

from freespace_seg.training import data as datasets
from freespace_seg.training.card import build_card, dump_card
from freespace_seg.training.export import export_and_verify
from freespace_seg.training.model import build_model
from freespace_seg.training.tensors import channels_last, normalize, PAD_VALUE, to_tensors
import torch


class SoupError(ValueError):
    """Checkpoints that cannot be averaged, or a bad option."""


def add_arguments(parser):
    """Add the ``soup`` options to ``parser``."""
    parser.add_argument('checkpoints', nargs='+', metavar='CHECKPOINT',
                        help='best.pt / last.pt files of train runs with the same --arch and '
                             '--decoder-widths (one is enough with --imagenet-alpha), or fp32 '
                             'ONNX models of this package (rebuilt; needs --data)')
    parser.add_argument('--weights', metavar='W,...',
                        help='one weight per checkpoint, normalized to sum 1 (default: equal)')
    parser.add_argument('--out', required=True, help='ONNX file to write; its card beside it')
    parser.add_argument('--imagenet-alpha', type=float, default=0.0, metavar='A',
                        help='WiSE-FT: move the encoder weights a fraction A in [0, 1] back to '
                             'the ImageNet ones (default: %(default)s, the average alone)')
    parser.add_argument('--data', metavar='DIR',
                        help='dataset (generate) whose train split re-measures the BatchNorm '
                             'statistics (needed unless --keep-bn)')
    parser.add_argument('--bn-frames', type=int, default=256,
                        help='training frames for the BatchNorm statistics (default: '
                             '%(default)s)')
    parser.add_argument('--keep-bn', action='store_true',
                        help="average the runs' BatchNorm statistics instead of measuring them")
    parser.add_argument('--threads', type=int, default=2, help='default: %(default)s')


def _frame_loader(data, frames):
    """Return ``load(width, height)``: the first ``frames`` training frames of ``data``, once."""
    loaded = {}

    def load(width, height):
        if (width, height) not in loaded:
            n = datasets.count_frames(data, 'train', frames)
            tx, ty = datasets.stack_letterboxed(datasets.dataset_frames(data, 'train', frames),
                                                n, width, height, PAD_VALUE, desc='bn frames')
            loaded[width, height] = to_tensors(tx, ty)
        return loaded[width, height]
    return load


def _load_onnx(path, data, frames):
    """Return a checkpoint-like dict of an fp32 ONNX model, BatchNorm unfolded on ``data``."""
    from freespace_seg.perception.model_card import load_card, ModelCardError
    from freespace_seg.training.errors import TrainError
    from freespace_seg.training.loop import onnx_init_state
    from freespace_seg.training.rebuild import card_input_size, RebuildError

    if not data:
        raise SoupError(f'{path}: an ONNX ingredient needs --data to measure its BatchNorm '
                        'statistics on')
    try:
        card = load_card(path)
        width, height = card_input_size(card, path)
    except (ModelCardError, RebuildError, OSError) as e:
        raise SoupError(f'{path}: {e}') from None
    x, y = frames(width, height)
    try:
        state = onnx_init_state(path, x, y, frames=x.shape[0])
    except TrainError as e:
        raise SoupError(str(e).replace('--init ', '')) from None
    state['args'] = {'arch': state['arch'], 'decoder_widths': state['decoder'],
                     'input_size': [width, height]}
    state['camera_ranges'] = card.camera_ranges
    return state


def _load(path, data=None, frames=None):
    if path.lower().endswith('.onnx'):
        if not os.path.isfile(path):
            raise SoupError(f'{path}: no such model')
        return _load_onnx(path, data, frames)
    if not os.path.isfile(path):
        raise SoupError(f'{path}: no such checkpoint')
    state = torch.load(path, map_location='cpu')
    if 'model' not in state or 'args' not in state:
        raise SoupError(f'{path}: not a train checkpoint (no weights or options)')
    return state


def _frames_line(folder, what):
    """Return the renderer line for frames of a ``generate`` folder, with seed and cameras."""
    try:
        meta = datasets.read_meta(folder)
    except (OSError, ValueError):
        meta = {}
    camera = datasets.cameras_text(datasets.camera_ranges(meta))
    camera = f', {camera}' if camera else ''
    return (f'procedural synthetic renderer freespace_seg.sim: {what} of '
            f'{os.path.normpath(folder)} (seed {meta.get("seed")}{camera})')


def _checkpoint_sources(state):
    """Return what a ``train`` checkpoint learnt from: its frames and its ``--init``'s."""
    saved = state.get('args') or {}
    if saved.get('data'):
        lines = [_frames_line(saved['data'], 'training frames')]
    else:
        lines = [f'procedural synthetic renderer freespace_seg.sim: training frames rendered '
                 f'on the fly, seed {saved.get("data_seed")}']
    init = state.get('init_record') or {}
    lines += [f'(through --init {init.get("checkpoint")}) {line}'
              for line in init.get('data_sources') or []]
    return lines


def soup_data_sources(base, paths, states, bn_data):
    """
    Return the soup card's ``data_sources``: every ingredient's, and the BatchNorm frames.

    ``base`` is what :func:`build_card` lists (its first line, the renderer's generic one, is
    replaced by each ingredient's own data: a ``train`` checkpoint's ``--data`` folder or
    rendered seed and, through ``--init``, its start model's sources; an ONNX ingredient's
    card's sources). ``bn_data`` is the folder whose frames measured the statistics.
    """
    generic = 'procedural synthetic renderer freespace_seg.sim: training frames, seed'
    out = [line for line in base if not line.startswith(generic)]
    if bn_data:
        out.insert(0, _frames_line(bn_data, 'BatchNorm statistics only, the training frames'))
    seen = {_bare(line) for line in out}
    for path, state in zip(paths, states):
        own = (state.get('data_sources') or [] if path.lower().endswith('.onnx')
               else _checkpoint_sources(state))
        for line in own:
            if _bare(line) not in seen:   # one line per source, however many ways it came
                seen.add(_bare(line))
                out.append(f'(through {path}) {line}')
    return out


def _bare(line):
    """Return a data source line without its leading ``(through ...)`` marks."""
    while line.startswith('(through ') and ') ' in line:
        line = line.split(') ', 1)[1]
    return line


def _state_ranges(state):
    """Return the camera ranges one ingredient was trained on ({} when unknown)."""
    if 'camera_ranges' in state:   # an ONNX ingredient: its card's
        return dict(state['camera_ranges'])
    folder = (state.get('args') or {}).get('data')
    if not folder:
        return {}
    try:
        return datasets.camera_ranges(datasets.read_meta(folder))
    except (OSError, ValueError):
        return {}


def shared_camera_ranges(states):
    """
    Return the soup card's ``training.data``: the camera ranges every ingredient was trained on.

    The intersection of the ingredients' ranges (a ``train`` checkpoint's ``--data`` folder,
    an ONNX ingredient's card), so that ``segmentation_node`` warns about a mount outside
    what the whole soup learnt; {} where an ingredient does not say.
    """
    per = [_state_ranges(s) for s in states]
    out = {}
    for name in ('camera_height', 'camera_pitch'):
        if not per or any(name not in r for r in per):
            continue
        low, high = max(r[name][0] for r in per), min(r[name][1] for r in per)
        if low <= high:
            out[name] = [low, high]
    if out:
        out['camera_ranges_from'] = 'the ranges every ingredient was trained on'
    return out


def _architecture(state):
    args = state['args']
    return (args.get('arch', 'unet'), tuple(args.get('decoder_widths') or ()) or None,
            tuple(args['input_size']))


def average_states(states, weights=None):
    """Return the (weighted; default uniform) average of state dicts of the same network."""
    keys = list(states[0])
    for s in states[1:]:
        if set(s) != set(keys) or any(s[k].shape != states[0][k].shape for k in keys):
            raise SoupError('the checkpoints hold different networks')
    weights = [1.0] * len(states) if weights is None else [float(w) for w in weights]
    total = sum(weights)
    out = {}
    for k in keys:
        if states[0][k].is_floating_point():
            out[k] = sum(w * s[k].double() for w, s in zip(weights, states)) / total
            out[k] = out[k].to(states[0][k].dtype)
        else:
            out[k] = states[0][k].clone()   # counters (num_batches_tracked)
    return out


def wise_ft(model, state, alpha):
    """Load ``state`` into ``model`` with its encoder weights moved ``alpha`` to ImageNet's."""
    imagenet = {k: v.clone() for k, v in model.state_dict().items()}
    mixed = {}
    for k, v in state.items():
        if k.startswith('encoder.') and v.is_floating_point() and 'running_' not in k:
            mixed[k] = (1.0 - alpha) * v + alpha * imagenet[k]
        else:
            mixed[k] = v
    model.load_state_dict(mixed)


@torch.no_grad()
def measure_batchnorm(model, images, labels, batch_size=8):
    """Re-measure every BatchNorm's running statistics on uint8 frames (cumulative mean)."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    saved = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    for i in range(0, images.shape[0], batch_size):
        y = labels[i:i + batch_size].long()
        model(channels_last(normalize(images[i:i + batch_size].float() / 255.0, y)))
    for m, momentum in zip(bns, saved):
        m.momentum = momentum
    model.eval()


def run(args):
    """Average, re-measure, export and document; returns the exit code."""
    try:
        return _soup(args)
    except SoupError as e:
        raise SystemExit(f'soup: {e}')


def _soup(args):
    if not 0.0 <= args.imagenet_alpha <= 1.0:
        raise SoupError(f'--imagenet-alpha must be in [0, 1], got {args.imagenet_alpha}')
    if not args.keep_bn and not args.data:
        raise SoupError('give --data DIR to re-measure the BatchNorm statistics, or --keep-bn')
    weights = None
    if args.weights:
        try:
            weights = [float(w) for w in args.weights.split(',')]
        except ValueError:
            raise SoupError(f'--weights {args.weights}: expected numbers') from None
        if len(weights) != len(args.checkpoints) or min(weights) < 0 or sum(weights) <= 0:
            raise SoupError(f'--weights {args.weights}: expected one weight >= 0 per '
                            f'checkpoint ({len(args.checkpoints)}), not all 0')
    torch.set_num_threads(max(1, args.threads))
    frames = _frame_loader(args.data, args.bn_frames) if args.data else None
    states = [_load(p, args.data, frames) for p in args.checkpoints]
    kinds = {_architecture(s) for s in states}
    if len(kinds) != 1:
        raise SoupError(f'the checkpoints are of different architectures: {sorted(kinds)}')
    arch, decoder, (width, height) = kinds.pop()
    if arch == 'unet':
        raise SoupError('soup averages EfficientNet-Lite runs (their shared ImageNet start '
                        'makes the weights comparable); these are UNet runs')
    model = build_model(arch=arch, decoder=decoder, pretrained=True)
    averaged = average_states([s['model'] for s in states], weights)
    wise_ft(model, averaged, args.imagenet_alpha)
    statistics = 'average of the runs'
    if not args.keep_bn:
        x, y = frames(width, height)
        model.to(memory_format=torch.channels_last)
        measure_batchnorm(model, x, y)
        model.to(memory_format=torch.contiguous_format)
        statistics = f'measured on {x.shape[0]} frames of {os.path.normpath(args.data)}/train'
    model.eval()
    diff = export_and_verify(model, args.out, width, height)
    print(f'soup: wrote {args.out}; ONNX Runtime vs torch max |diff| {diff:.2e}')
    first = states[0]
    recipe = {
        'checkpoints': [{'path': p, 'step': s.get('step'), 'val_miou': s.get('miou'),
                         'command': s.get('command')} for p, s in zip(args.checkpoints, states)],
        'weights': weights,
        'imagenet_alpha': args.imagenet_alpha,
        'batchnorm': statistics,
    }
    training = {'arch': arch, 'input_size': [width, height], 'decoder_widths':
                list(model.decoder_widths), 'soup': recipe,
                'data': shared_camera_ranges(states),
                'command': 'python -m freespace_seg soup ' + ' '.join(args.checkpoints)
                + f' --out {args.out} --imagenet-alpha {args.imagenet_alpha:g}'
                + (f' --weights {args.weights}' if args.weights else '')
                + (' --keep-bn' if args.keep_bn else
                   f' --data {args.data} --bn-frames {args.bn_frames}'),
                'onnx_max_abs_diff_vs_torch': float(f'{diff:.3g}')}
    saved = first['args']
    stem = os.path.splitext(os.path.basename(args.out))[0]
    without = tuple(saved.get('render_without') or ())
    card = build_card(stem, os.path.basename(args.out), width, height, training, {}, {},
                      saved.get('data_seed'), arch=arch,
                      floor_photos='floor_photos' not in without,
                      object_floor_photos='object_floor_photos' not in without)
    card['data_sources'] = soup_data_sources(card['data_sources'], args.checkpoints, states,
                                             None if args.keep_bn else args.data)
    card_path = os.path.splitext(args.out)[0] + '.yaml'
    dump_card(card, card_path)
    print(f'soup: wrote {card_path} (score it with `python -m freespace_seg eval --model '
          f'{args.out}`)')
    return 0
