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
Data sources for training and evaluation (numpy and OpenCV only, no torch).

Two sources give RGB frames with their free-space labels at camera resolution:

* a dataset directory written by ``python -m freespace_seg generate``:
  ``DIR/<split>/NNNNNN_image.png`` (RGB as PNG) and ``NNNNNN_mask.png`` (class ids,
  0 blocked / 1 free), plus ``DIR/meta.json``;
* the procedural renderer :mod:`freespace_seg.sim`, on the fly, from a seed;
* a folder of the user's own images with masks (:func:`user_image_pairs`), for ``eval
  --images`` and ``finetune``.

For training, frames are letterboxed to the network input exactly as the node does
(:class:`freespace_seg.perception.preprocess.Letterbox`): the image with ``pad_value`` and the
label with :data:`IGNORE_INDEX`, so padding never counts in the loss or the scores.
"""

import glob
import hashlib
import json
import multiprocessing
import os

import cv2
from freespace_seg.perception.preprocess import Letterbox
import numpy as np

IGNORE_INDEX = 255

#: ``generator`` in the meta.json of a ``generate2`` folder (the second scene generator)
SECOND_GENERATOR = 'freespace_seg.scenes2'
SPLITS = ('train', 'val', 'test')
#: file types of user images (a mask is always a PNG)
IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg')
MASK_SUFFIX = '_mask'


class UserImagesError(ValueError):
    """A folder of user images is unusable; the message says what to fix."""


def user_image_pairs(folder):
    """
    Return the sorted (image_path, mask_path) pairs of a folder of user images.

    Images are ``*.png``, ``*.jpg`` and ``*.jpeg`` files whose stem does not end in
    ``_mask``. The mask of ``photo.jpg`` is ``photo_mask.png`` beside it, or ``masks/photo.png``
    or ``masks/photo_mask.png``. Raises :class:`UserImagesError` for a missing folder, a
    folder without images, or images without masks (naming the first and where its mask
    was looked for).
    """
    if not os.path.isdir(folder):
        raise UserImagesError(f'{folder}: no such folder')
    pairs = []
    missing = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        stem, ext = os.path.splitext(name)
        if (ext.lower() not in IMAGE_EXTENSIONS or stem.endswith(MASK_SUFFIX)
                or not os.path.isfile(path)):
            continue
        candidates = (os.path.join(folder, stem + MASK_SUFFIX + '.png'),
                      os.path.join(folder, 'masks', stem + '.png'),
                      os.path.join(folder, 'masks', stem + MASK_SUFFIX + '.png'))
        mask = next((c for c in candidates if os.path.isfile(c)), None)
        if mask is None:
            missing.append((path, candidates))
        else:
            pairs.append((path, mask))
    if missing:
        path, candidates = missing[0]
        raise UserImagesError(f'{len(missing)} image(s) without a mask, e.g. {path}: expected '
                              f'{candidates[0]} or {candidates[1]}')
    if not pairs:
        raise UserImagesError(
            f'no images in {folder}: expected *.png, *.jpg or *.jpeg files, each with a mask '
            '<stem>_mask.png beside it or in masks/<stem>.png')
    return pairs


def read_user_image_pair(image_path, mask_path):
    """
    Read a user image and its mask: (H, W, 3) uint8 RGB and (H, W) uint8, 0 blocked / 1 free.

    In the mask 0 is blocked and any other value free; in a colour mask a pixel is blocked
    where all of R, G and B are 0. A mask with an alpha channel (grey+alpha or RGBA) marks
    the pixels where alpha is 0 as not labelled: they are :data:`IGNORE_INDEX` (255) in the
    result, which scores and fine-tuning skip; any other alpha is ignored. Raises
    :class:`UserImagesError` for an unreadable file or a mask whose size differs from the
    image's.
    """
    bgr = cv2.imread(image_path, cv2.IMREAD_COLOR)
    if bgr is None:
        raise UserImagesError(f'cannot read image {image_path}')
    mask = cv2.imread(mask_path, cv2.IMREAD_UNCHANGED)
    if mask is None:
        raise UserImagesError(f'cannot read mask {mask_path}')
    unlabelled = None
    if mask.ndim == 3:
        channels = mask.shape[2]
        if channels in (2, 4):  # grey+alpha (OpenCV usually gives BGRA for it) or BGRA
            unlabelled = mask[:, :, channels - 1] == 0
            mask = mask[:, :, :channels - 1]
        mask = mask.max(axis=2)
    if mask.shape[:2] != bgr.shape[:2]:
        raise UserImagesError(
            f'size mismatch: mask {mask_path} is {mask.shape[1]}x{mask.shape[0]} but its image '
            f'{image_path} is {bgr.shape[1]}x{bgr.shape[0]}')
    labels = (mask != 0).astype(np.uint8)
    if unlabelled is not None:
        labels[unlabelled] = IGNORE_INDEX
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), labels


def read_meta(data_dir):
    """Return the dataset's ``meta.json`` as a dict ({} if there is none)."""
    path = os.path.join(data_dir, 'meta.json')
    if not os.path.isfile(path):
        return {}
    with open(path, 'r', encoding='utf-8') as f:
        return json.load(f)


def camera_ranges(meta):
    """Return the camera_height / camera_pitch ranges a dataset's meta.json records."""
    randomization = meta.get('randomization')
    if not isinstance(randomization, dict) or not randomization.get('pose_jitter'):
        return {}
    return {name: [float(v) for v in randomization[name]]
            for name in ('camera_height', 'camera_pitch')
            if isinstance(randomization.get(name), list)}


def cameras_text(ranges):
    """Return 'cameras A-B m' for the camera_height of ``ranges`` (camera_ranges), else ''."""
    height = ranges.get('camera_height')
    return f'cameras {height[0]:g}-{height[1]:g} m' if height else ''


def list_split(data_dir, split):
    """Sorted (image_path, mask_path) pairs of one split; raises if the split is empty."""
    folder = os.path.join(data_dir, split)
    images = sorted(glob.glob(os.path.join(folder, '*_image.png')))
    pairs = []
    for image in images:
        mask = image[:-len('_image.png')] + '_mask.png'
        if not os.path.isfile(mask):
            raise FileNotFoundError(f'label missing for {image}: expected {mask}')
        pairs.append((image, mask))
    if not pairs:
        raise FileNotFoundError(f'no *_image.png files in {folder} (make a dataset with '
                                '`python -m freespace_seg generate --out DIR`)')
    return pairs


def read_pair(image_path, mask_path):
    """Read one RGB image (H, W, 3) uint8 and its (H, W) uint8 class-id mask."""
    bgr = cv2.imread(image_path, cv2.IMREAD_COLOR)
    if bgr is None:
        raise OSError(f'cannot read image {image_path}')
    mask = cv2.imread(mask_path, cv2.IMREAD_UNCHANGED)
    if mask is None:
        raise OSError(f'cannot read mask {mask_path}')
    if mask.ndim == 3:
        mask = mask[:, :, 0]
    if mask.shape != bgr.shape[:2]:
        raise ValueError(f'{mask_path} is {mask.shape[1]}x{mask.shape[0]} but its image is '
                         f'{bgr.shape[1]}x{bgr.shape[0]}')
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), mask.astype(np.uint8)


def dataset_frames(data_dir, split, limit=None):
    """Yield (rgb, mask) pairs of one split of a generated dataset, in file order."""
    pairs = list_split(data_dir, split)
    if limit is not None:
        pairs = pairs[:int(limit)]
    for image_path, mask_path in pairs:
        yield read_pair(image_path, mask_path)


def count_frames(data_dir, split, limit=None):
    """How many frames :func:`dataset_frames` yields."""
    n = len(list_split(data_dir, split))
    return n if limit is None else min(n, int(limit))


def frame_seeds(num, seed):
    """One independent seed sequence per rendered frame (frame i does not depend on num)."""
    return np.random.SeedSequence(int(seed)).spawn(int(num))


def rendered_frames(num, seed, width, height, style='default', without=(), camera=None,
                    jobs=1):
    """
    Yield ``num`` (rgb, mask) pairs from the procedural renderer at ``width`` x ``height``.

    Frame ``i`` of seed ``s`` is the same whatever ``num`` is. ``style`` is the renderer's
    appearance style (see :class:`freespace_seg.sim.RandomizationConfig`): ``'shifted'``
    gives a look training never sees, with the same ground truth as ``'default'``.
    ``without`` names randomization factors to switch off (e.g. the ones a model was trained
    without). ``camera`` overrides the config's ``camera_height`` and ``camera_pitch`` ranges
    (a dict; the room, obstacles and looks of frame ``i`` stay the same, only the pose moves).
    ``jobs`` > 1 renders in that many worker processes; the frames, and their order, are the
    same as with one.
    """
    jobs = min(int(jobs), int(num))
    if jobs > 1:
        tasks = [(seq, width, height, style, tuple(without), camera)
                 for seq in frame_seeds(num, seed)]
        with multiprocessing.get_context('spawn').Pool(jobs) as pool:
            yield from pool.imap(_render_task, tasks, chunksize=4)
        return
    for frame in rendered_samples(num, seed, width, height, style, without, camera):
        yield frame_arrays(frame)


def _render_task(task):
    """Worker of :func:`rendered_frames`: one frame's (rgb, mask) from its seed sequence."""
    seq, width, height, style, without, camera = task
    config, intrinsics = _render_setup(width, height, style, without, camera)
    return frame_arrays(_render_one(seq, config, intrinsics))


def frame_arrays(frame):
    """Return (rgb, mask) of a rendered frame as contiguous uint8 arrays."""
    return np.ascontiguousarray(frame.image), np.ascontiguousarray(frame.free, np.uint8)


def _render_setup(width, height, style, without, camera):
    from freespace_seg.sim import default_intrinsics, RandomizationConfig

    config = RandomizationConfig(style=style, **dict(camera or {})).without(*without)
    return config, default_intrinsics(width=int(width), height=int(height))


def _render_one(seq, config, intrinsics):
    from freespace_seg.sim import random_sample

    return random_sample(np.random.default_rng(seq), intrinsics=intrinsics,
                         randomization=config)


def rendered_samples(num, seed, width, height, style='default', without=(), camera=None):
    """Yield the :class:`~freespace_seg.sim.Frame` objects of :func:`rendered_frames`."""
    config, intrinsics = _render_setup(width, height, style, without, camera)
    for seq in frame_seeds(num, seed):
        yield _render_one(seq, config, intrinsics)


def letterbox_pair(rgb, mask, width, height, pad_value=0, mode='letterbox'):
    """Letterbox an image and its label to the network size (label padding = ignore)."""
    box = Letterbox.compute(rgb.shape[1], rgb.shape[0], int(width), int(height), mode)
    image = box.image_to_network(rgb, pad_value=pad_value)
    label = np.full((box.dst_h, box.dst_w), IGNORE_INDEX, np.uint8)
    box.image_to_network(mask, pad_value=IGNORE_INDEX, out=label,
                         interpolation=cv2.INTER_NEAREST_EXACT)
    return image, label


def stack_letterboxed(frames, count, width, height, pad_value=0, desc=''):
    """Letterbox ``count`` (rgb, mask) frames into uint8 arrays (N, H, W, 3) and (N, H, W)."""
    from freespace_seg.common.progress import progress

    images = np.empty((count, int(height), int(width), 3), np.uint8)
    labels = np.empty((count, int(height), int(width)), np.uint8)
    n = 0
    for rgb, mask in progress(frames, total=count, desc=desc):
        if n >= count:
            break
        images[n], labels[n] = letterbox_pair(rgb, mask, width, height, pad_value)
        n += 1
    return images[:n], labels[:n]


def synthetic_data_sources(seed, photo_textures=True, what='training frames', floor_photos=True,
                           object_floor_photos=True):
    """
    Return the model card's ``data_sources`` lines for frames of the synthetic renderer.

    With ``photo_textures`` (the randomization factors ``photo_textures`` and ``floor_photos``)
    the renderer puts real photos on walls, floors, obstacles and posters: their origin and
    licence are listed too (one line naming every texture file, from
    ``freespace_seg/sim/textures/SOURCES.md``). ``floor_photos`` false: not on floors;
    ``object_floor_photos`` false: only the texture-like photos on floors.
    """
    from freespace_seg.sim import photos

    lines = [f'procedural synthetic renderer freespace_seg.sim: {what}, seed {seed}']
    if photo_textures:
        if not floor_photos:
            where = ('walls, obstacles and posters (factor photo_textures; floor_photos off)')
        elif not object_floor_photos:
            where = ('walls, obstacles and posters (factor photo_textures) and, texture-like '
                     'crops only (brick, fur, wood, grass, gravel), floors (factor floor_photos'
                     '; object_floor_photos off)')
        else:
            where = 'walls, floors, obstacles and posters (factors photo_textures, floor_photos)'
        lines.append(
            f'photo textures on {where}: '
            f'{len(photos.texture_names())} crops of CC0 / public-domain sample photos bundled '
            'with scikit-image 0.26 (astronaut, rocket: NASA / SpaceX, public domain; brick, '
            'gravel: CC0Textures, CC0; grass: linolafett, CC0; camera: Lav Varshney, CC0; '
            'chelsea: Stefan van der Walt, CC0; coffee: Rachel Michetti, CC0; text: '
            'Wikipedia Corner.png, public domain); files and crops in '
            'freespace_seg/sim/textures/SOURCES.md')
    return lines


def renderer_fingerprint():
    """Return a short hash of the renderer's source, so cached frames go stale when it changes."""
    import freespace_seg.sim as synthetic

    digest = hashlib.sha1()
    folder = os.path.dirname(os.path.abspath(synthetic.__file__))
    for path in sorted(glob.glob(os.path.join(folder, '**', '*.py'), recursive=True)):
        digest.update(os.path.relpath(path, folder).encode())
        with open(path, 'rb') as f:
            digest.update(f.read())
    return digest.hexdigest()[:12]


def camera_key(camera):
    """Return the cache-name part for camera range overrides ('' for none or the defaults)."""
    from freespace_seg.sim import RandomizationConfig

    defaults = RandomizationConfig()
    parts = []
    for name, tag in (('camera_height', 'h'), ('camera_pitch', 'pt')):
        if camera and camera.get(name) is not None:
            low, high = (float(v) for v in camera[name])
            if (low, high) != tuple(getattr(defaults, name)):
                parts.append(f'-{tag}{low:g}_{high:g}')
    return ''.join(parts)


def rendered_letterboxed(num, seed, width, height, net_width, net_height, pad_value=0,
                         cache_dir=None, desc='', camera=None, jobs=1, without=()):
    """
    Render ``num`` frames and letterbox them (see :func:`stack_letterboxed`).

    With ``cache_dir`` the arrays are kept in an ``.npz`` named after the arguments and a
    hash of the renderer's source, and reused by later runs with the same arguments.
    ``camera``: camera range overrides, ``without``: factors switched off, and ``jobs``
    worker processes, as in :func:`rendered_frames` (the arrays do not depend on ``jobs``).
    """
    path = None
    if cache_dir:
        key = (f'render-n{int(num)}-s{int(seed)}-{int(width)}x{int(height)}-'
               f'{int(net_width)}x{int(net_height)}-p{int(pad_value)}{camera_key(camera)}'
               f'{"".join("-no_" + name for name in sorted(without))}-'
               f'{renderer_fingerprint()}')
        path = os.path.join(cache_dir, key + '.npz')
        if os.path.isfile(path):
            with np.load(path) as cached:
                return cached['images'], cached['labels']
    images, labels = stack_letterboxed(
        rendered_frames(num, seed, width, height, camera=camera, jobs=jobs, without=without),
        int(num),
        net_width, net_height, pad_value, desc=desc)
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = path + '.tmp.npz'
        np.savez(tmp, images=images, labels=labels)
        os.replace(tmp, path)
    return images, labels
