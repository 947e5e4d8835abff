#!/usr/bin/env python3
"""
Regenerate the photo texture bank of the synthetic renderer from scikit-image's sample photos.

Writes ``freespace_seg/sim/textures/*.jpg`` (JPEG quality 90, at most 256 x 256 px)
and ``SOURCES.md`` (source, origin, licence and crop of every file). Only photos that
scikit-image states to be CC0 or in the public domain are used (see the docstrings of the
loaders in ``skimage/data/_fetchers.py``); never the Middlebury stereo pair
(``stereo_motorcycle``), which is reserved for evaluation. Run from the repository root:

    .venv/bin/python tools/make_textures.py

The output is deterministic for a given scikit-image and OpenCV version.
"""

import os
import sys

import cv2
import numpy as np
import skimage.data

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'freespace_seg',
                   'sim', 'textures')
SIZE = 256
QUALITY = 90

#: Source loader: (origin as scikit-image states it, licence as scikit-image states it).
ORIGINS = {
    'astronaut': ('NASA Great Images database (Eileen Collins)',
                  'public domain ("No known copyright restrictions, released into the public '
                  'domain")'),
    'brick': ('CC0Textures, Bricks25', 'CC0'),
    'camera': ('photographer Lav Varshney', 'CC0 ("No copyright restrictions")'),
    'chelsea': ('photographer Stefan van der Walt', 'CC0 ("No copyright restrictions")'),
    'coffee': ('photographer Rachel Michetti (Pikolo Espresso Bar)',
               'CC0 ("No copyright restrictions")'),
    'grass': ('DeviantArt, linolafett, Grass 01', 'CC0'),
    'gravel': ('CC0Textures, Gravel04', 'CC0'),
    'rocket': ('SpaceX Photos (DSCOVR launch on Falcon 9)', 'public domain'),
    'text': ('Wikipedia, File:Corner.png',
             'public domain ("No known copyright restrictions, released into the public '
             'domain")'),
}

#: Output file: (loader, crop rows r0:r1, crop cols c0:c1 of the source, or None for all).
TEXTURES = {
    'astronaut.jpg': ('astronaut', None),
    'astronaut_flag.jpg': ('astronaut', (0, 256, 0, 256)),
    'brick.jpg': ('brick', None),
    'camera.jpg': ('camera', (100, 500, 50, 450)),
    'chelsea.jpg': ('chelsea', (0, 300, 60, 420)),
    'chelsea_fur.jpg': ('chelsea', (150, 300, 250, 451)),
    'coffee.jpg': ('coffee', (0, 400, 100, 500)),
    'coffee_wood.jpg': ('coffee', (0, 160, 0, 200)),
    'grass.jpg': ('grass', None),
    'gravel.jpg': ('gravel', (0, 256, 0, 256)),
    'rocket.jpg': ('rocket', None),
    'text.jpg': ('text', (0, 172, 0, 300)),
}


def make_texture(loader, crop):
    """Load ``loader`` from skimage.data, crop it and shrink it to fit SIZE x SIZE (BGR)."""
    image = np.asarray(getattr(skimage.data, loader)())
    if crop is not None:
        r0, r1, c0, c1 = crop
        image = image[r0:r1, c0:c1]
    h, w = image.shape[:2]
    scale = min(1.0, SIZE / max(h, w))
    if scale < 1.0:
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    return image


def main():
    """Write the texture bank and its SOURCES.md."""
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for name, (loader, crop) in sorted(TEXTURES.items()):
        image = make_texture(loader, crop)
        cv2.imwrite(os.path.join(OUT, name), image, [cv2.IMWRITE_JPEG_QUALITY, QUALITY])
        origin, licence = ORIGINS[loader]
        where = 'whole image' if crop is None else \
            f'rows {crop[0]}:{crop[1]}, columns {crop[2]}:{crop[3]}'
        h, w = image.shape[:2]
        rows.append(f'| {name} | skimage.data.{loader}() | {origin} | {licence} | '
                    f'{where}; {w}x{h} px |')
    with open(os.path.join(OUT, 'SOURCES.md'), 'w') as f:
        f.write('# Photo textures of the synthetic renderer\n\n'
                'Crops of the sample photos bundled with scikit-image, made by\n'
                '`tools/make_textures.py` (JPEG quality 90, at most 256 x 256 px). Origin and\n'
                'licence as scikit-image states them in the docstrings of its loaders\n'
                '(`skimage/data/_fetchers.py`); only CC0 and public-domain photos are used.\n\n'
                '| File | Source | Origin | Licence | Crop |\n'
                '| --- | --- | --- | --- | --- |\n')
        f.write('\n'.join(rows) + '\n')
    print(f'wrote {len(rows)} textures to {os.path.normpath(OUT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
