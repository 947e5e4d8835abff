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

"""The training loop: seeds, validation, ONNX --init, train_model."""

import copy
import math
import os
import random
import time

from freespace_seg.perception import metrics
from freespace_seg.perception.model_card import load_card, ModelCardError
from freespace_seg.training.augment import augment
from freespace_seg.training.checkpoint import _atomic_save
from freespace_seg.training.distributed import Ranks
from freespace_seg.training.errors import RebuildError, TrainError
from freespace_seg.training.export import compare_with_torch
from freespace_seg.training.losses import per_frame_loss, segmentation_loss
from freespace_seg.training.prefetch import Prefetcher
from freespace_seg.training.rebuild import REBUILD_TOLERANCE, rebuild_torch_model, unfold_batchnorm
from freespace_seg.training.sampler import FrameSampler
from freespace_seg.training.tensors import channels_last, downscale2x, normalize
import numpy as np
import torch


def seed_everything(seed):
    """Seed python, numpy and torch."""
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


@torch.no_grad()
def validate(model, images, labels, batch_size=8):
    """
    Confusion matrix of the model on letterboxed uint8 tensors (pads ignored).

    The frames may live on the CPU; each batch goes to the model's device.
    """
    model.eval()
    device = next(model.parameters()).device
    acc = metrics.ConfusionAccumulator(model.num_classes)
    for i in range(0, images.shape[0], batch_size):
        y = labels[i:i + batch_size].to(device).long()
        x = channels_last(normalize(images[i:i + batch_size].to(device).float() / 255.0, y))
        pred = model(x).argmax(dim=1)
        acc.update(pred.cpu().numpy(), y.cpu().numpy(), images=x.shape[0])
    model.train()
    return acc.matrix


def cpu_state(model):
    """Return a copy of ``model``'s state dict on the CPU (checkpoints then load anywhere)."""
    return {k: v.detach().to('cpu', copy=True) for k, v in model.state_dict().items()}


# Frames on which an ONNX --init model's BatchNorm statistics are measured.
ONNX_INIT_FRAMES = 256


def onnx_init_state(path, train_x, train_y, threads=2, frames=ONNX_INIT_FRAMES):
    """
    Rebuild a package ONNX model in torch for ``--init MODEL.onnx``; return a checkpoint dict.

    The model is the UNet or an EfficientNet-Lite network (``arch`` and ``decoder`` in the
    result say which). The exporter folds BatchNorm into the convolutions;
    :func:`rebuild.unfold_batchnorm` gives the layers back statistics measured on ``frames``
    training frames (evenly spaced), so that training with live BatchNorm starts from the
    model's function. The rebuilt model is checked against ONNX Runtime
    (:data:`rebuild.REBUILD_TOLERANCE`). ``command``, ``miou`` and ``data_sources`` come from
    the model's card when it has one. Raises :class:`TrainError`.
    """
    if not os.path.isfile(path):
        raise TrainError(f'--init {path}: no such file')
    try:
        rebuilt = rebuild_torch_model(path)
    except RebuildError as e:
        raise TrainError(f'--init {path}: {e}') from None
    n = min(int(frames), train_x.shape[0])
    idx = torch.from_numpy(np.linspace(0, train_x.shape[0] - 1, n).round().astype(np.int64))
    x = normalize(train_x[idx].float() / 255.0, train_y[idx].long())
    unfold_batchnorm(rebuilt, x)
    # On random inputs of the ONNX input's size, as rebuild.rebuild_checked does.
    diff = compare_with_torch(rebuilt, path, threads=threads)
    if not diff <= REBUILD_TOLERANCE:
        raise TrainError(f'--init {path}: the rebuilt torch model differs from ONNX '
                         f'Runtime by {diff:.3g} (> {REBUILD_TOLERANCE:g})')
    arch = getattr(rebuilt, 'arch', 'unet')
    what = (f'UNet (widths {list(rebuilt.widths)})' if arch == 'unet' else
            f'{arch} network (decoder widths {list(rebuilt.decoder_widths)})')
    print(f'train: rebuilt the torch {what} of {path}, BatchNorm statistics from {n} '
          f'training frames; max |logit diff| vs ONNX Runtime {diff:.2e}', flush=True)
    command = miou = None
    sources = []
    try:
        raw = load_card(path).raw
        training = raw.get('training') or {}
        command, miou = training.get('command'), training.get('best_val_miou')
        sources = [str(s) for s in raw.get('data_sources') or []]
    except (ModelCardError, AttributeError):
        pass
    return {'model': rebuilt.state_dict(), 'widths': list(rebuilt.widths),
            'context': rebuilt.context is not None, 'arch': arch,
            'decoder': (None if arch == 'unet' else list(rebuilt.decoder_widths)),
            'command': command, 'miou': miou, 'data_sources': sources,
            'step': None, 'rebuild_max_abs_diff_vs_onnx': float(f'{diff:.3g}'),
            'batchnorm_frames': n}


def _quiet(message):
    pass


def prepare_batch(images, labels, idx, device, gen, augment_data=False, low_res=False):
    """
    Return the network input and labels of one batch: the per-step data path of training.

    Gathers frames ``idx`` of the uint8 ``images`` (N, 3, H, W) and ``labels`` (N, H, W) on
    the CPU, moves them to ``device``, scales to [0, 1] floats, halves them for ``low_res``
    steps, augments them (``augment_data``: ``True`` for ``full`` or an
    :data:`~freespace_seg.training.augment.AUGMENT_MODES` name; the random numbers come from
    the CPU generator ``gen``) and normalizes them in channels-last order. :func:`train_model`
    calls it every step. Returns (x, y) on ``device``: x float (B, 3, H, W), y long (B, H, W).
    """
    x = images[idx].to(device).float() / 255.0
    y = labels[idx].to(device).long()
    if low_res:
        x, y = downscale2x(x, y)
    if augment_data:
        x, y = augment(x, y, gen, 'full' if augment_data is True else augment_data)
    return channels_last(normalize(x, y)), y


def train_model(model, train_x, train_y, val_x=None, val_y=None, steps=100, batch_size=8,
                lr=4e-3, weight_decay=1e-4, dice_weight=1.0, seed=0, augment_data=True,
                val_every=250, patience=0, log_every=50, work_dir=None, log=print,
                progress_bar=True, low_res_steps=0, low_res_batch_size=None,
                checkpoint_meta=None, hard_frames=0.0, resume=None, time_limit=None,
                stop_after=None, device='cpu', encoder_lr_scale=1.0, schedule='one-cycle',
                warmup_steps=100, encoder_lr_decay=1.0, encoder_frozen_steps=0, ranks=None,
                on_step=None, prefetch=None, select_x=None, select_y=None, edge_weight=0.0):
    """
    Train ``model`` in place on uint8 tensors; return a history dict.

    ``train_x`` (N, 3, H, W) uint8 and ``train_y`` (N, H, W) uint8 (255 = ignore). The best
    state by validation mIoU (or the last one without validation data) is loaded back
    into ``model`` at the end.

    Progressive resizing: the first ``low_res_steps`` steps train on the frames downscaled
    2x (batches of ``low_res_batch_size``, default twice ``batch_size``), four times
    cheaper per frame; the rest at full resolution. Validation is always at full resolution.
    ``checkpoint_meta`` (e.g. the command line) is stored in every checkpoint.

    Selection on a second set: with ``select_x``, ``select_y`` (frames from outside the
    training renderer, e.g. a ``generate2`` folder), each validation also scores them, and
    the best state, ``best.pt`` and ``patience`` follow their mIoU instead of the validation
    frames'. ``history['val']`` holds both (``select_miou``); ``history['best_miou']`` stays
    the validation mIoU of the chosen step, ``history['best_select_miou']`` its selection
    mIoU.
    ``hard_frames``: the fraction of each batch drawn by loss (see :class:`FrameSampler`);
    0 (default) walks plain shuffled passes. ``history['hard_drawn']`` counts those frames.
    ``edge_weight``: the pixels within :data:`~.losses.EDGE_RADIUS` pixels of another class
    weigh ``1 + edge_weight`` in the cross-entropy (:func:`~.losses.segmentation_loss`); 0
    (default): all alike.

    Interrupting and resuming: ``last.pt`` in ``work_dir`` (written at every validation)
    holds, under ``'resume'``, everything the loop needs to go on (optimizer, schedule,
    random generator, sampler, history, best state). ``resume`` is that dict: training then
    continues after its step exactly as if it had never stopped (same steps, same batches,
    same augmentation). ``time_limit`` (seconds of this call) and ``stop_after`` (a step)
    end the call early: ``last.pt`` is written, ``history['interrupted']`` is true and the
    model keeps its current (not its best) weights.

    ``device`` (e.g. ``'cuda'``): where the model trains. The frames stay where they are
    (the CPU); each batch goes to the device before augmentation, whose random numbers still
    come from the one CPU generator. The model comes back on the CPU.

    ``prefetch``: make each step's batch (:func:`prepare_batch`) in a background thread
    while the device trains on the one before (:class:`~.prefetch.Prefetcher`); the same
    batches, and the same checkpoints, as without. ``None`` (default): on any device but the
    CPU, whose cores the step already uses. Never with ``hard_frames``, whose draws need the
    losses of the step before.

    ``encoder_lr_scale``: a model with ``encoder_parameters()`` (a pretrained encoder) trains
    those at this fraction of ``lr``.

    Robust fine-tuning of such an encoder: ``encoder_lr_decay`` (< 1) gives each encoder
    stage, from the deepest down, this factor more of decay (layer-wise learning rates, the
    deepest at ``encoder_lr_scale``); ``encoder_frozen_steps`` trains the decoder alone first
    (encoder weights and BatchNorm statistics fixed), then everything (LP-FT).

    ``schedule``: ``one-cycle`` (torch's OneCycleLR, 10 % warm-up) or ``cosine`` (a linear
    warm-up over ``warmup_steps``, then a cosine from the peak to zero).

    ``ranks`` (:class:`~freespace_seg.training.distributed.Ranks`): train as one rank of a
    torchrun group (see :mod:`freespace_seg.training.distributed`); only rank 0 logs,
    validates and writes checkpoints. ``on_step(step, model)`` is called after every
    optimizer step.
    """
    ranks = ranks or Ranks()
    main = ranks.is_main
    if not main:
        log = _quiet
        progress_bar = False
    gen = torch.Generator().manual_seed(int(seed))
    # One rank: one generator draws batches and augments them (as it always has). Several:
    # the batch generator stays alike on every rank, and each augments with its own.
    aug_gen = gen if not ranks.distributed else \
        torch.Generator().manual_seed(int(seed) * 1009 + ranks.rank + 1)
    if ranks.distributed and hard_frames:
        raise ValueError('hard-frame mining needs every frame loss on one rank; train on one '
                         'rank or without it')
    device = torch.device(device)
    model.to(device)
    model.to(memory_format=torch.channels_last)
    net = ranks.wrap(model, device)
    encoder_params = getattr(model, 'encoder_parameters', list)()
    encoder = {id(p) for p in encoder_params}
    decay_factor = float(encoder_lr_decay)
    if decay_factor != 1.0 and not hasattr(model, 'encoder_stages'):
        raise ValueError('layer-wise encoder learning rates need a pretrained encoder')
    if encoder_frozen_steps and not encoder:
        raise ValueError('a frozen-encoder phase needs a pretrained encoder')
    # Parameter sets with their learning-rate factor: the decoder, then the encoder (in
    # stages, deepest at encoder_lr_scale, with layer-wise decay).
    parts = [([p for p in model.parameters() if id(p) not in encoder], 1.0, False)]
    if encoder and decay_factor != 1.0:
        stages = model.encoder_stages()
        for k, stage in enumerate(stages):
            scale = float(encoder_lr_scale) * decay_factor ** (len(stages) - 1 - k)
            parts.append((stage, scale, True))
    elif encoder:
        parts.append((encoder_params, float(encoder_lr_scale), True))
    groups, max_lr, in_encoder = [], [], []
    for params, scale, enc in parts:
        for decay in (True, False):
            group = [p for p in params if (p.ndim > 1) == decay]
            if group:
                groups.append({'params': group, 'weight_decay': weight_decay if decay else 0.0})
                max_lr.append(lr * scale)
                in_encoder.append(enc)
    opt = torch.optim.AdamW(groups, lr=lr)
    total = max(steps, 1)
    if schedule == 'one-cycle':
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=total,
                                                    pct_start=0.1, div_factor=20.0,
                                                    final_div_factor=200.0)
    elif schedule == 'cosine':
        for g, peak in zip(groups, max_lr):
            g['lr'] = peak
        warm = max(0, int(warmup_steps))

        def cosine(i):   # i: optimizer steps taken so far
            w = min(1.0, (i + 1) / warm) if warm else 1.0
            return w * 0.5 * (1.0 + math.cos(math.pi * min(i / total, 1.0)))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, cosine)
    else:
        raise ValueError(f'unknown schedule {schedule!r}; expected one-cycle or cosine')
    frozen_steps = int(encoder_frozen_steps)

    def set_encoder_frozen(frozen):
        for p in encoder_params:
            p.requires_grad_(not frozen)
        model.train()
        if frozen:   # the probe sees fixed features: ImageNet statistics, not the batch's
            for m in model.encoder.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.eval()
    n = train_x.shape[0]
    bs_full = min(batch_size, n)
    bs_low = min(low_res_batch_size or 2 * batch_size, n)
    if ranks.distributed and n < max(bs_full, bs_low) * ranks.world:
        raise ValueError(f'{n} training frames are fewer than one global batch of '
                         f'{max(bs_full, bs_low)} x {ranks.world} ranks')
    sampler = FrameSampler(n, gen, hard_frames)
    history = {'loss': [], 'val': [], 'best_miou': None, 'best_step': None, 'steps': 0,
               'stopped_early': False, 'train_time_s': 0.0, 'resumed_after': []}
    best_state = None
    best_miou = -1.0
    since_best = 0
    running = None
    first = 1
    if resume is not None:
        if int(resume.get('world_size', 1)) != ranks.world:
            raise ValueError(f'the checkpoint is from a run on {resume.get("world_size", 1)} '
                             f'ranks, not {ranks.world}: resume it with as many')
        if int(resume['steps']) != int(steps):
            raise ValueError(f'the checkpoint is from a run of {resume["steps"]} steps, not '
                             f'{steps}: the learning-rate schedule would differ')
        model.load_state_dict(resume['model'])
        opt.load_state_dict(resume['optimizer'])
        sched.load_state_dict(resume['scheduler'])
        gen.set_state(resume['generator'])
        if ranks.distributed:
            aug_gen.set_state(resume['aug_generators'][ranks.rank])
        sampler.load_state_dict(resume['sampler'])
        history = copy.deepcopy(resume['history'])
        best_state = resume['best_state']
        best_miou = float(resume['best_miou'])
        since_best = int(resume['since_best'])
        running = resume['running']
        first = int(resume['step']) + 1
        history.setdefault('resumed_after', []).append(first - 1)
        log(f'resuming after step {first - 1} of {steps}')
    history['interrupted'] = False
    has_val = val_x is not None and val_x.shape[0] > 0
    selecting = select_x is not None and select_x.shape[0] > 0
    if selecting and not has_val:
        raise ValueError('selection frames need validation frames: selection runs with each '
                         'validation')
    time_before = float(history.get('train_time_s') or 0.0)
    t_start = time.perf_counter()

    def clock():
        history['train_time_s'] = time_before + time.perf_counter() - t_start

    def make_batch(step):
        """Make the batch of ``step``: the sampler's draw, then :func:`prepare_batch`."""
        low_res = step <= low_res_steps
        bs = bs_low if low_res else bs_full
        idx = sampler.draw(bs * ranks.world)[ranks.rank * bs:(ranks.rank + 1) * bs]
        return (idx,) + prepare_batch(train_x, train_y, idx, device, aug_gen, augment_data,
                                      low_res)

    def data_state():
        return gen.get_state(), aug_gen.get_state(), sampler.state_dict()

    if prefetch is None:
        prefetch = device.type != 'cpu'
    batches = Prefetcher(make_batch, data_state,
                         enabled=bool(prefetch) and not sampler.hard_fraction)

    def save_last(step, miou, better):
        clock()
        # The generators and sampler after this step's batch (a next one may be under way).
        generator, aug_state, sampler_state = batches.state()
        # A collective: every rank gives its augmentation state, rank 0 writes.
        aug_states = ranks.gather(aug_state) if ranks.distributed else None
        if not work_dir or not main:
            return
        os.makedirs(work_dir, exist_ok=True)
        meta = dict(checkpoint_meta or {}, step=step, miou=miou,
                    arch=getattr(model, 'arch', 'unet'),
                    widths=list(model.widths), context=model.context is not None)
        state = cpu_state(model)
        record = {'steps': steps, 'step': step, 'model': state,
                  'optimizer': opt.state_dict(), 'scheduler': sched.state_dict(),
                  'generator': generator, 'sampler': sampler_state,
                  'history': history, 'best_state': best_state, 'best_miou': best_miou,
                  'since_best': since_best, 'running': running, 'world_size': ranks.world}
        if aug_states is not None:
            record['aug_generators'] = aug_states
        _atomic_save(dict(meta, model=state, resume=record), os.path.join(work_dir, 'last.pt'))
        if better:
            _atomic_save(dict(meta, model=best_state), os.path.join(work_dir, 'best.pt'))

    steps_iter = range(first, steps + 1)
    if progress_bar:
        from freespace_seg.common.progress import progress
        steps_iter = progress(steps_iter, total=len(steps_iter), desc='train')
    model.train()
    frozen = None
    for step in steps_iter:
        if encoder and frozen != (step <= frozen_steps):
            frozen = step <= frozen_steps
            set_encoder_frozen(frozen)
            net = ranks.wrap(model, device)   # DDP registers the parameters that train
            if frozen:
                log(f'steps 1-{min(frozen_steps, steps)}: decoder only, the encoder frozen')
            elif step > 1:
                log(f'step {step}: the encoder trains too')
        idx, x, y = batches.get(step, step + 1 if step < steps else None)
        logits = net(x)
        loss = segmentation_loss(logits, y, dice_weight, edge_weight)
        if sampler.hard_fraction:
            sampler.update(idx, per_frame_loss(logits, y).cpu())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if on_step is not None:
            on_step(step, model)
        value = float(loss.detach())
        history['loss'].append(value)
        running = value if running is None else 0.95 * running + 0.05 * value
        history['steps'] = step
        if log_every and step % log_every == 0:
            log(f'step {step}/{steps} loss {running:.4f} lr {sched.get_last_lr()[0]:.2e} '
                f'{time.perf_counter() - t_start:.0f}s')
        if has_val and (step % val_every == 0 or step == steps):
            miou, better = None, False
            if main:   # rank 0 alone validates; the others wait in save_last's gather
                cm = validate(model, val_x, val_y)
                if frozen:
                    set_encoder_frozen(True)   # validate() ends in train mode
                miou = metrics.mean_iou(cm)
                iou = metrics.per_class_iou(cm)
                entry = {'step': step, 'miou': miou, 'iou': iou.tolist()}
                score = miou
                if selecting:
                    score = metrics.mean_iou(validate(model, select_x, select_y))
                    if frozen:
                        set_encoder_frozen(True)
                    entry['select_miou'] = score
                history['val'].append(entry)
                better = score > best_miou
                if better:
                    best_miou = score
                    best_state = cpu_state(model)
                    history['best_miou'] = miou
                    history['best_step'] = step
                    if selecting:
                        history['best_select_miou'] = score
                    since_best = 0
                else:
                    since_best += 1
                log(f'val step {step}: mIoU {miou:.4f} (IoU ' + ', '.join(
                    f'{v:.4f}' for v in iou) + ')'
                    + (f'; selection set mIoU {score:.4f}' if selecting else '')
                    + (' best' if better else ''))
            save_last(step, miou, better)
            if ranks.agree(patience and since_best >= patience, device):
                log(f'early stop at step {step}: no better '
                    f'{"selection set" if selecting else "val"} mIoU for {patience} scores')
                history['stopped_early'] = True
                break
        if step < steps and ranks.agree((stop_after is not None and step >= stop_after) or (
                time_limit is not None and time.perf_counter() - t_start >= time_limit), device):
            history['interrupted'] = True
            save_last(step, None, False)
            log(f'stopped after step {step} of {steps}'
                + (f'; last.pt in {work_dir} resumes it' if work_dir else ''))
            break
    batches.close()
    history['hard_drawn'] = sampler.hard_drawn
    if encoder:
        set_encoder_frozen(False)
    clock()
    if best_state is not None and not history['interrupted']:
        model.load_state_dict(best_state)
    model.to('cpu')
    model.to(memory_format=torch.contiguous_format)
    model.eval()
    return history
