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
The model card of a trained network: what it is, how it was trained and scored.

:func:`build_card` makes the card of a ``train`` run; :func:`dump_card` writes any card
(``train``, ``finetune``, ``prune``, ``quantize``, ``tradeoff``) and :func:`update_card`
merges new scores into one. Importing this module needs no torch.
"""

import os

from freespace_seg.training import data as datasets
import yaml


def pretrained_record(arch):
    """Return the card's ``training.pretrained``: the ImageNet weights an --arch starts from."""
    if arch == 'unet':
        return None
    from freespace_seg.training.backbone import weights_record
    return weights_record(arch.replace('efficientnet-', ''))


def describe_network(arch, context=False):
    """Return one phrase for the card: what the network of ``arch`` is."""
    if arch == 'unet':
        return ('Small UNet (4 levels, 3x3 conv + BatchNorm + ReLU, bilinear upsampling, '
                'logits at 1/2 resolution upsampled to the input'
                + (', a global-context branch at the bottleneck' if context else '') + ')')
    return (f'UNet-style segmentation network on an EfficientNet-{arch[-5:].capitalize()} '
            'encoder (MBConv blocks, ReLU6, no squeeze-excite; ImageNet-pretrained, then '
            'fine-tuned) with a light decoder (bilinear x2, skip concatenation, one 3x3 conv '
            'per level; logits at 1/2 resolution upsampled to the input)')


def _second_generator(training):
    """Whether a --more-data folder of ``training`` came from the second scene generator."""
    data = (training or {}).get('data') or {}
    return any(m.get('generator') == datasets.SECOND_GENERATOR
               for m in data.get('more_data') or ())


def build_card(name, onnx_name, width, height, training, evaluation, latency, data_seed,
               photo_textures=True, arch='unet', floor_photos=True, object_floor_photos=True):
    """Return the model card dict (schema of :mod:`freespace_seg.perception.model_card`)."""
    # tensors needs torch; writing and updating cards (eval, quantize) must not.
    from freespace_seg.training.tensors import CLASS_NAMES, MEAN, PAD_VALUE, PALETTE, STD

    sources = datasets.synthetic_data_sources(data_seed, photo_textures,
                                              floor_photos=floor_photos,
                                              object_floor_photos=object_floor_photos)
    pretrained = pretrained_record(arch)
    if pretrained:
        sources.append(f'pretrained encoder weights: {pretrained["package"]} '
                       f'{pretrained["version"]} ({pretrained["file"]}, {pretrained["licence"]})'
                       f', trained on {pretrained["trained_on"]}')
    return {
        'format_version': 1,
        'name': name,
        'description': (
            describe_network(arch, training.get('context_branch')) + ' that labels every '
            'pixel of an RGB camera image as free floor or blocked, for a small indoor robot. '
            'Trained with torch on procedurally rendered, domain-randomized synthetic '
            'images (freespace_seg.sim, with CC0 / public-domain photos as textures on '
            'walls and obstacles)' + (
                ' and by the second scene generator (freespace_seg.scenes2, written apart '
                'from sim)' if _second_generator(training) else '')
            + '; never trained on real camera images of floors. evaluation '
            'lists every set it was scored on.'),
        'model_file': onnx_name,
        'input': {
            'name': 'input',
            'shape': [1, 3, int(height), int(width)],
            'layout': 'NCHW',
            'dtype': 'float32',
            'color_order': 'RGB',
            'mean': list(MEAN),
            'std': list(STD),
            'resize_mode': 'letterbox',
            'pad_value': PAD_VALUE,
        },
        'output': {'name': 'logits', 'kind': 'logits', 'layout': 'NCHW'},
        'classes': {'names': list(CLASS_NAMES), 'palette': [list(c) for c in PALETTE],
                    'free_space': [1]},
        'evaluation': evaluation,
        'training': training,
        'data_sources': sources,
        'latency_ms': latency,
        'licence': 'Apache-2.0',
    }


class _CardDumper(yaml.SafeDumper):
    """Block style, but short lists of scalars in flow style (``[1, 3, 272, 480]``)."""


def _represent_list(dumper, value):
    flow = all(not isinstance(v, (dict, list)) or (
        isinstance(v, list) and all(not isinstance(w, (dict, list)) for w in v))
        for v in value) and not all(isinstance(v, str) and len(v) > 40 for v in value)
    return dumper.represent_sequence('tag:yaml.org,2002:seq', value, flow_style=flow)


_CardDumper.add_representer(list, _represent_list)
_CardDumper.add_representer(tuple, _represent_list)


def dump_card(card, path):
    """Write a card dict as YAML in the card's key order."""
    text = yaml.dump(card, Dumper=_CardDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=99)
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def update_card(card_path, evaluation=None, latency=None):
    """Merge evaluation entries and/or a latency figure into an existing card file."""
    from freespace_seg.perception.model_card import card_from_dict

    with open(card_path, 'r', encoding='utf-8') as f:
        card = yaml.safe_load(f)
    if evaluation:
        ev = card.get('evaluation') or {}
        ev.update(evaluation)
        card['evaluation'] = ev
        quant = card.get('quantization')
        if isinstance(quant, dict):
            # quantize's note that the card has no evaluation yet is no longer true.
            quant.pop('evaluate_with', None)
    if latency:
        lat = card.get('latency_ms') or {}
        lat.update(latency)
        card['latency_ms'] = lat
    card_from_dict(card, card_path)  # still valid?
    return dump_card(card, card_path)
