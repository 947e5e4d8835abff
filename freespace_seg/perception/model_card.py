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
Model cards: the YAML file beside each model that tells the node how to use it.

A card makes a new model a configuration change, not a code change. It is found beside the
model with the same stem (``foo.onnx`` -> ``foo.yaml``) and validated on load; any problem
raises :class:`ModelCardError` naming the bad field, e.g. ``input.mean: expected 3 numbers``.

Schema (``format_version: 1``)::

    name: freespace_unet
    model_file: freespace_unet.onnx       # relative to the card
    input:
      name: input
      shape: [1, 3, 272, 480]             # NCHW -> N, C, H, W; NHWC -> N, H, W, C
      layout: NCHW                        # NCHW | NHWC
      dtype: float32                      # float32 | float16 | uint8
      color_order: RGB                    # RGB | BGR
      mean: [0.5, 0.5, 0.5]               # per channel, applied to pixel / 255
      std: [0.5, 0.5, 0.5]
      resize_mode: letterbox              # letterbox | stretch
      pad_value: 0                        # letterbox padding, 0-255 pixel value
    output:
      name: logits
      kind: logits                        # logits | probabilities | argmax
      layout: NCHW                        # NCHW | NHWC (ignored for argmax outputs)
    classes:
      names: [blocked, free]
      palette: [[220, 50, 47], [38, 194, 129]]   # RGB per class
      free_space: [1]                     # class ids that count as free floor
    evaluation: {...}                     # free-form: the card's own measured numbers
    training: {...}                       # free-form
    data_sources: [...]                   # every source of training data
"""

from dataclasses import dataclass
import functools
import os

import yaml

FORMAT_VERSION = 1
LAYOUTS = ('NCHW', 'NHWC')
DTYPES = ('float32', 'float16', 'uint8')
COLOR_ORDERS = ('RGB', 'BGR')
RESIZE_MODES = ('letterbox', 'stretch')
OUTPUT_KINDS = ('logits', 'probabilities', 'argmax')
MAX_CLASSES = 255


class ModelCardError(ValueError):
    """A model card is missing, unreadable or invalid; the message names the field."""


@dataclass(frozen=True)
class ModelCard:
    """A validated model card. Use :func:`load_card` or :func:`card_from_dict` to make one."""

    path: str
    name: str
    model_file: str
    input_name: str
    input_shape: tuple
    layout: str
    dtype: str
    color_order: str
    mean: tuple
    std: tuple
    resize_mode: str
    pad_value: int
    output_name: str
    output_kind: str
    output_layout: str
    class_names: tuple
    palette: tuple
    free_space: tuple
    raw: dict

    @property
    def input_height(self):
        return self.input_shape[2] if self.layout == 'NCHW' else self.input_shape[1]

    @property
    def input_width(self):
        return self.input_shape[3] if self.layout == 'NCHW' else self.input_shape[2]

    @property
    def num_classes(self):
        return len(self.class_names)

    @property
    def model_path(self):
        """Absolute path of the model file the card describes."""
        if os.path.isabs(self.model_file):
            return self.model_file
        return os.path.join(os.path.dirname(os.path.abspath(self.path)), self.model_file)

    @property
    def evaluation(self):
        return self.raw.get('evaluation') or {}

    @property
    def camera_ranges(self):
        """
        Return the camera pose ranges the model was trained on, from ``training.data``.

        A dict with ``camera_height`` (metres) and/or ``camera_pitch`` (radians, positive
        down) as ``(min, max)``; empty when the card does not say (a model from elsewhere).
        """
        data = (self.raw.get('training') or {}).get('data') or {}
        ranges = {}
        for name in ('camera_height', 'camera_pitch'):
            value = data.get(name) if isinstance(data, dict) else None
            try:
                low, high = (float(v) for v in value)
            except (TypeError, ValueError):
                continue
            if low <= high:
                ranges[name] = (low, high)
        return ranges


def _outside(ranges, camera_height, camera_pitch):
    problems = []
    for name, value, unit in (('camera_height', camera_height, 'm'),
                              ('camera_pitch', camera_pitch, 'rad')):
        if name in ranges:
            low, high = ranges[name]
            if not low - 1e-9 <= float(value) <= high + 1e-9:
                problems.append(f'{name} {float(value):g} {unit} is outside the '
                                f'{low:g}-{high:g} {unit} it was trained on')
    return problems


@functools.lru_cache(maxsize=8)
def _ranged_models(directory):
    """(model path, camera ranges) of the cards in ``directory`` that state both ranges."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(('.yaml', '.yml')))
    except OSError:
        return ()
    found = []
    for name in names:
        try:
            card = load_card(os.path.join(directory, name))
        except (ModelCardError, OSError):
            continue
        if len(card.camera_ranges) == 2 and os.path.isfile(card.model_path):
            found.append((card.model_path, card.camera_ranges))
    return tuple(found)


def models_for_mount(directory, camera_height, camera_pitch):
    """
    Return the models in ``directory`` whose cards' training ranges hold the camera mount.

    Only cards that state both ranges count. INT8 copies come first (the node's default
    precision on a CPU), then by name. A missing directory or a broken card is skipped. The
    cards of a directory are read once per process (the node checks the TF mount on the data
    path, whenever the pose moves by a centimetre).
    """
    found = [path for path, ranges in _ranged_models(os.path.abspath(directory))
             if not _outside(ranges, camera_height, camera_pitch)]
    return sorted(found, key=lambda p: ('int8' not in os.path.basename(p), p))


def mount_outside_training(card, camera_height, camera_pitch, models_dir=None):
    """
    Return a warning when the camera mount lies outside the card's training ranges, else None.

    Models see the floor from the heights and pitches they were trained on; a camera mounted
    higher or steeper makes the floor look different (see the README, "Run 13"). With
    ``models_dir`` (the package's ``models/``) the warning names a model there whose training
    ranges hold the mount, if one does.
    """
    problems = _outside(card.camera_ranges, camera_height, camera_pitch)
    if not problems:
        return None
    fits = [p for p in models_for_mount(models_dir, camera_height, camera_pitch)
            if os.path.abspath(p) != os.path.abspath(card.model_path)] \
        if models_dir else []
    hint = (f' The package has a model trained for this mount: model_file_path:={fits[0]}.'
            ' Or train' if fits else ' Train')
    return (f'model {card.name}: ' + '; '.join(problems) + '. Expect more errors.' + hint
            + ' a model for this mount (train --camera-height/--camera-pitch) or fine-tune '
            'it on images from this camera (finetune).')


def card_path_for_model(model_path):
    """Return the card path beside a model: same stem, ``.yaml``."""
    return os.path.splitext(model_path)[0] + '.yaml'


def load_card(path):
    """Load and validate a card from a YAML file, or from the model path it sits beside."""
    if not path.endswith(('.yaml', '.yml')):
        path = card_path_for_model(path)
    if not os.path.isfile(path):
        raise ModelCardError(f'model card not found: {path} (a YAML card must sit beside the '
                             'model with the same name)')
    try:
        with open(path, 'r', encoding='utf-8') as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise ModelCardError(f'model card {path}: cannot parse YAML: {e}') from e
    return card_from_dict(data, path)


def _get(d, key, where):
    if not isinstance(d, dict):
        raise ModelCardError(f'{where}: expected a mapping')
    if key not in d:
        raise ModelCardError(f'{where + "." if where else ""}{key}: missing')
    return d[key]


def _choice(d, key, where, choices, default=None):
    value = d.get(key, default) if default is not None else _get(d, key, where)
    if value not in choices:
        raise ModelCardError(f'{where}.{key}: {value!r} is not one of {", ".join(choices)}')
    return value


def _numbers(value, field, count, positive=False):
    if not isinstance(value, (list, tuple)) or len(value) != count or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ModelCardError(f'{field}: expected {count} numbers, got {value!r}')
    if positive and any(v <= 0 for v in value):
        raise ModelCardError(f'{field}: every value must be > 0, got {value!r}')
    return tuple(float(v) for v in value)


def card_from_dict(data, path='<dict>'):
    """Validate a parsed card and return a :class:`ModelCard`; ``path`` anchors model_file."""
    if not isinstance(data, dict):
        raise ModelCardError(f'model card {path}: expected a mapping at the top level')
    version = data.get('format_version', FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ModelCardError(f'format_version: {version!r} is not supported (expected '
                             f'{FORMAT_VERSION})')
    name = _get(data, 'name', '')
    model_file = _get(data, 'model_file', '')
    if not isinstance(model_file, str) or not model_file:
        raise ModelCardError('model_file: expected a file name')

    inp = _get(data, 'input', '')
    input_name = _get(inp, 'name', 'input')
    layout = _choice(inp, 'layout', 'input', LAYOUTS)
    shape = _get(inp, 'shape', 'input')
    if (not isinstance(shape, (list, tuple)) or len(shape) != 4
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape)):
        raise ModelCardError(f'input.shape: expected 4 positive integers, got {shape!r}')
    if shape[0] != 1:
        raise ModelCardError(f'input.shape: batch must be 1, got {shape[0]}')
    channels = shape[1] if layout == 'NCHW' else shape[3]
    if channels != 3:
        raise ModelCardError(f'input.shape: expected 3 channels for layout {layout}, got '
                             f'{channels} (shape {shape})')
    dtype = _choice(inp, 'dtype', 'input', DTYPES, default='float32')
    color_order = _choice(inp, 'color_order', 'input', COLOR_ORDERS)
    mean = _numbers(_get(inp, 'mean', 'input'), 'input.mean', 3)
    std = _numbers(_get(inp, 'std', 'input'), 'input.std', 3, positive=True)
    resize_mode = _choice(inp, 'resize_mode', 'input', RESIZE_MODES)
    pad_value = inp.get('pad_value', 0)
    if not isinstance(pad_value, int) or isinstance(pad_value, bool) or not 0 <= pad_value <= 255:
        raise ModelCardError(f'input.pad_value: expected an integer 0-255, got {pad_value!r}')

    out = _get(data, 'output', '')
    output_name = _get(out, 'name', 'output')
    output_kind = _choice(out, 'kind', 'output', OUTPUT_KINDS)
    output_layout = _choice(out, 'layout', 'output', LAYOUTS, default='NCHW')

    classes = _get(data, 'classes', '')
    names = _get(classes, 'names', 'classes')
    if (not isinstance(names, (list, tuple)) or not 2 <= len(names) <= MAX_CLASSES
            or not all(isinstance(n, str) and n for n in names)):
        raise ModelCardError(f'classes.names: expected 2-{MAX_CLASSES} non-empty strings, got '
                             f'{names!r}')
    if len(set(names)) != len(names):
        raise ModelCardError(f'classes.names: duplicate names in {names!r}')
    palette = _get(classes, 'palette', 'classes')
    if not isinstance(palette, (list, tuple)) or len(palette) != len(names):
        raise ModelCardError(f'classes.palette: expected one [R, G, B] per class '
                             f'({len(names)}), got {palette!r}')
    colors = []
    for i, c in enumerate(palette):
        if (not isinstance(c, (list, tuple)) or len(c) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255
                           for v in c)):
            raise ModelCardError(f'classes.palette[{i}]: expected [R, G, B] integers 0-255, '
                                 f'got {c!r}')
        colors.append(tuple(c))
    free = _get(classes, 'free_space', 'classes')
    if (not isinstance(free, (list, tuple)) or not free
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in free)):
        raise ModelCardError(f'classes.free_space: expected a non-empty list of class ids, got '
                             f'{free!r}')
    for v in free:
        if not 0 <= v < len(names):
            raise ModelCardError(f'classes.free_space: class id {v} out of range 0-'
                                 f'{len(names) - 1}')
    if len(set(free)) == len(names):
        raise ModelCardError('classes.free_space: every class is free; at least one class must '
                             'be blocked')

    return ModelCard(
        path=path, name=str(name), model_file=model_file, input_name=str(input_name),
        input_shape=tuple(shape), layout=layout, dtype=dtype, color_order=color_order,
        mean=mean, std=std, resize_mode=resize_mode, pad_value=pad_value,
        output_name=str(output_name), output_kind=output_kind, output_layout=output_layout,
        class_names=tuple(names), palette=tuple(colors), free_space=tuple(sorted(set(free))),
        raw=data)
