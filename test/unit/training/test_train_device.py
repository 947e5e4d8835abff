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

"""Where training runs (`train --device`) and how its frames are rendered (`--render-jobs`)."""

import importlib

from freespace_seg.training import data as datasets
import numpy as np
import pytest

torch = pytest.importorskip('torch', reason='training needs torch (tools/bootstrap.sh --train)')
augment = importlib.import_module('freespace_seg.training.augment')
device_mod = importlib.import_module('freespace_seg.training.device')
TrainError = importlib.import_module('freespace_seg.training.errors').TrainError
loop = importlib.import_module('freespace_seg.training.loop')
losses = importlib.import_module('freespace_seg.training.losses')
tensors = importlib.import_module('freespace_seg.training.tensors')
unet = importlib.import_module('freespace_seg.training.model')

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason=f'needs a CUDA device: torch {torch.__version__} sees none here '
           f'({"a CPU build" if torch.version.cuda is None else "no GPU or driver"})')


def _batch(n=4, h=36, w=64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, h, w, generator=gen)
    y = (torch.rand(n, h, w, generator=gen) > 0.5).long()
    y[:, :2] = 255  # a pad band, as letterboxing leaves it
    return x, y


@pytest.mark.parametrize('mode', augment.AUGMENT_MODES)
def test_augmentation_normalization_and_loss_stay_on_the_batch_device(mode):
    # The meta device stands in for a GPU: every tensor that meets the batch must be moved
    # to its device, or torch refuses the mix, as it does on CUDA.
    x, y = _batch()
    gen = torch.Generator().manual_seed(3)
    xa, ya = augment.augment(x.to('meta'), y.to('meta'), gen, mode)
    assert xa.device.type == 'meta' and ya.device.type == 'meta'
    assert xa.shape == x.shape and ya.shape == y.shape
    xn = tensors.normalize(xa, ya)
    assert xn.device.type == 'meta'
    net = unet.build_model(widths=(8, 8, 16, 16, 32), context=True).to('meta')
    logits = net(tensors.channels_last(xn))
    assert losses.segmentation_loss(logits, ya).device.type == 'meta'
    assert losses.per_frame_loss(logits, ya).shape == (x.shape[0],)


def test_augmentation_draws_the_same_numbers_whatever_the_device():
    # Batches are augmented by one CPU generator: after a batch on another device it is
    # where it would be after the same batch on the CPU.
    x, y = _batch()
    on_cpu = torch.Generator().manual_seed(5)
    elsewhere = torch.Generator().manual_seed(5)
    augment.augment(x, y, on_cpu, 'strong')
    augment.augment(x.to('meta'), y.to('meta'), elsewhere, 'strong')
    assert torch.equal(on_cpu.get_state(), elsewhere.get_state())


def test_resolve_device_picks_and_refuses_with_reasons():
    assert device_mod.resolve_device('cpu') == torch.device('cpu')
    expected = 'cuda' if torch.cuda.is_available() else 'cpu'
    assert device_mod.resolve_device('auto').type == expected
    assert device_mod.device_record(torch.device('cpu')) == 'cpu'
    with pytest.raises(TrainError, match='expected one of auto, cpu, cuda'):
        device_mod.resolve_device('tpu')
    if not torch.cuda.is_available():
        with pytest.raises(TrainError, match='sees no CUDA device .*use --device cpu'):
            device_mod.resolve_device('cuda')


def test_checkpoint_state_is_a_cpu_copy():
    net = unet.build_model(widths=(8, 8, 16, 16, 32))
    state = loop.cpu_state(net)
    assert set(state) == set(net.state_dict())
    assert all(v.device.type == 'cpu' for v in state.values())
    with torch.no_grad():
        next(net.parameters()).add_(1.0)  # a copy: training on does not change it
    key = next(iter(net.state_dict()))
    assert not torch.equal(state[key], net.state_dict()[key])


@pytest.mark.gpu
@needs_cuda
def test_training_on_cuda_follows_the_cpu_run():
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (8, 48, 64, 3), np.uint8)
    labels = (rng.random((8, 48, 64)) > 0.5).astype(np.uint8)
    tx, ty = tensors.to_tensors(images, labels)
    runs = {}
    for device in ('cpu', 'cuda'):
        torch.manual_seed(0)
        net = unet.build_model(widths=(8, 8, 16, 16, 32), context=True)
        hist = loop.train_model(net, tx, ty, tx[:4], ty[:4], steps=6, batch_size=4,
                                lr=5e-3, seed=3, augment_data='strong', val_every=3,
                                log_every=0, progress_bar=False, log=lambda m: None,
                                device=device)
        assert next(net.parameters()).device.type == 'cpu'  # back on the CPU for export
        runs[device] = hist
    # The same batches and augmentation; the arithmetic differs only in rounding.
    assert np.allclose(runs['cuda']['loss'], runs['cpu']['loss'], rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_rendered_frames_from_worker_processes_are_the_same_frames():
    pytest.importorskip('freespace_seg.sim', reason='needs the synthetic renderer')
    one = list(datasets.rendered_frames(5, 21, 96, 54))
    two = list(datasets.rendered_frames(5, 21, 96, 54, jobs=2))
    assert len(two) == 5
    for (rgb_a, mask_a), (rgb_b, mask_b) in zip(one, two):
        assert np.array_equal(rgb_a, rgb_b) and np.array_equal(mask_a, mask_b)
    # A camera override reaches the workers too.
    camera = {'camera_height': (0.9, 1.2)}
    high = list(datasets.rendered_frames(2, 21, 96, 54, camera=camera, jobs=2))
    assert not np.array_equal(high[0][1], one[0][1])
    ref = list(datasets.rendered_frames(2, 21, 96, 54, camera=camera))
    for (rgb_a, mask_a), (rgb_b, mask_b) in zip(ref, high):
        assert np.array_equal(rgb_a, rgb_b) and np.array_equal(mask_a, mask_b)
