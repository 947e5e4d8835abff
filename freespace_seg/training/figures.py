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
The pictures of ``eval``: worst and best images, and feature maps of ONNX layers.

:func:`write_case_figures` writes ``worst_<i>.png`` and ``best_<i>.png`` (input | prediction
overlay | error map); :func:`write_layers` adds layers' outputs to a copy of the ONNX graph,
runs it on one image and writes ``layers.png``; :func:`resolve_layers` and
:func:`auto_layers` pick those layers. Drawn with OpenCV (pictures of arrays, not plots).
"""

import os

import cv2
from freespace_seg.common.values import round4
from freespace_seg.training import data as datasets
from freespace_seg.training.errors import EvalError
import numpy as np

#: RGB colours of the error map
ERROR_COLORS = {
    'free_correct': (0, 110, 40),       # free floor, predicted free: dark green
    'blocked_correct': (64, 64, 64),    # blocked, predicted blocked: dark grey
    'false_free': (235, 20, 20),        # predicted free but blocked: red, the dangerous error
    'false_blocked': (255, 180, 0),     # predicted blocked but free: orange
    'other': (150, 60, 200),            # two blocked (or two free) classes confused: purple
    'ignored': (0, 0, 0),               # label 255: not scored
}
ERROR_LEGEND = ('dark green: free, correct; dark grey: blocked, correct; red: predicted free '
                'but blocked (the dangerous error); orange: predicted blocked but free; '
                'black: not labelled (ignored)')
LAYER_CHANNELS = 16
AUTO_LAYERS = 7


def error_map(pred, label, free_ids, ignore_index=datasets.IGNORE_INDEX):
    """Return an (H, W, 3) uint8 RGB picture of where a prediction is right or wrong."""
    from freespace_seg.perception.postprocess import class_lut

    is_free = class_lut(free_ids, true_value=1).astype(bool)
    pred_free = is_free[pred]
    label_free = is_free[label]
    valid = label != ignore_index
    correct = pred == label
    out = np.zeros(label.shape + (3,), np.uint8)
    out[valid & correct & label_free] = ERROR_COLORS['free_correct']
    out[valid & correct & ~label_free] = ERROR_COLORS['blocked_correct']
    out[valid & ~correct & (pred_free == label_free)] = ERROR_COLORS['other']
    out[valid & pred_free & ~label_free] = ERROR_COLORS['false_free']
    out[valid & ~pred_free & label_free] = ERROR_COLORS['false_blocked']
    return out


def _caption(bgr, text, height):
    """Return ``bgr`` with a black strip of ``height`` pixels on top holding ``text``."""
    width = bgr.shape[1]
    strip = np.zeros((height, width, 3), np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    scale = height / 34.0
    (tw, th), _ = cv2.getTextSize(text, font, scale, 1)
    if tw > width - 6:
        scale *= (width - 6) / tw
        (tw, th), _ = cv2.getTextSize(text, font, scale, 1)
    cv2.putText(strip, text, (3, (height + th) // 2), font, scale, (255, 255, 255), 1,
                cv2.LINE_AA)
    return np.vstack([strip, bgr])


def case_figure(rgb, label, pred, card, title, miou, alpha=0.5):
    """
    Return one BGR figure: input | prediction overlay | error map, each with a caption.

    The overlay paints the prediction in the model card's palette, as the node does.
    """
    from freespace_seg.perception.postprocess import colorize, overlay, palette_lut

    colored = colorize(np.ascontiguousarray(pred, np.uint8), palette_lut(card.palette))
    panels = [(rgb, f'{title}, mIoU {miou:.3f}'),
              (overlay(rgb, colored, alpha), f'prediction, mIoU {miou:.3f}'),
              (error_map(pred, label, card.free_space),
               'errors: red = false free, orange = false blocked')]
    height = int(max(18, round(rgb.shape[0] * 0.08)))
    gap = np.full((rgb.shape[0] + height, 2, 3), 255, np.uint8)
    tiles = []
    for img, text in panels:
        if tiles:
            tiles.append(gap)
        tiles.append(_caption(cv2.cvtColor(img, cv2.COLOR_RGB2BGR), text, height))
    return np.hstack(tiles)


def write_case_figures(cases, card, out_dir):
    """Write ``worst_<i>.png`` and ``best_<i>.png``; return their list for the reports."""
    os.makedirs(out_dir, exist_ok=True)
    written = {'worst': [], 'best': []}
    for kind, items in (('worst', cases.worst()), ('best', cases.best())):
        for rank, (index, miou, rgb, label, pred) in enumerate(items, 1):
            name = cases.name(index)
            figure = case_figure(rgb, label, pred, card, f'{kind} {rank}: {name}', miou)
            path = os.path.join(out_dir, f'{kind}_{rank}.png')
            if not cv2.imwrite(path, figure):
                raise OSError(f'cannot write {path}')
            written[kind].append({'file': os.path.basename(path), 'image': name,
                                  'index': index, 'miou': round4(miou)})
    return written


def _load_onnx(model_path):
    try:
        import onnx
    except ImportError:
        raise EvalError('--layers needs the onnx package (pip install onnx)')
    return onnx.load(model_path)


def tensor_names(model):
    """Return the names of the tensors computed by the graph's nodes, in graph order."""
    return [name for node in model.graph.node for name in node.output if name]


def auto_layers(model, limit=AUTO_LAYERS):
    """
    Pick a few ReLU outputs worth looking at: the last one of each top-level block.

    ReLU outputs are those of ``Relu`` and ``Clip`` (ReLU6) nodes and tensors named
    ``.../Relu...`` or ``.../Clip...`` (a quantized graph fuses the ReLU into its Conv but
    keeps the name; its float copies after ``DequantizeLinear`` are then picked). In an
    EfficientNet-Lite model (``/encoder/_blocks.N/...``) every MBConv block counts as one.
    Blocks are named by the first part of the tensor name (``/enc2/enc2.1/...`` is in
    ``enc2``). Every encoder block is kept (``stem``, ``enc1`` ... ``bottom``), of the
    decoder blocks (``dec*``, ``up*``) only the last one, at
    most ``limit`` layers in all. The global-context branch (1x1 maps) is left out.
    """
    last = {}
    for node in model.graph.node:
        name = node.output[0] if node.output else ''
        # A quantized graph fuses Conv + ReLU but keeps the ReLU's output name.
        if not name or (node.op_type not in ('Relu', 'Clip')
                        and not name.rsplit('/', 1)[-1].startswith(('Relu', 'Clip'))):
            continue
        parts = [p for p in name.split('/') if p]
        block = parts[0] if len(parts) > 1 else name
        if block == 'encoder' and len(parts) > 2:
            block = f'encoder/{parts[1]}'   # a pretrained encoder: one block per MBConv
        if block == 'context':
            continue  # the global-context branch: 1x1 maps, nothing to look at
        last.pop(block, None)  # keep the block where it last appears
        last[block] = name
    encoder = [n for b, n in last.items() if not b.lower().startswith(('dec', 'up'))]
    decoder = [n for b, n in last.items() if b.lower().startswith(('dec', 'up'))]
    picked = encoder + decoder[-1:]
    if len(picked) > limit:
        keep = np.unique(np.linspace(0, len(picked) - 1, limit).round().astype(int))
        picked = [picked[i] for i in keep]
    return picked


def resolve_layers(model_path, spec):
    """Return the tensor names that ``--layers`` asks for; EvalError if one is unknown."""
    model = _load_onnx(model_path)
    if spec.strip() == 'auto':
        names = auto_layers(model)
        if not names:
            raise EvalError(f'--layers auto found no ReLU output in {model_path}; '
                            'name the tensors instead, e.g. '
                            + ', '.join(tensor_names(model)[:6]))
        return names
    names = [n.strip() for n in spec.split(',') if n.strip()]
    valid = tensor_names(model)
    known = set(valid)
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        hints = auto_layers(model) or valid
        raise EvalError(f'--layers: no tensor named {", ".join(unknown) or "?"} in '
                        f'{model_path} ({len(valid)} tensors); valid names are e.g. '
                        + ', '.join(hints[:6]) + ' (or use --layers auto)')
    return names


def layer_outputs(model_path, tensor, names, threads=2):
    """
    Run the model with ``names`` added as graph outputs; return their arrays in order.

    The tensors are appended to a copy of the graph's outputs (element type from shape
    inference, float when unknown, no shape), and an ONNX Runtime session is built from the
    modified model's bytes.
    """
    import onnx
    from onnx import helper
    import onnxruntime as ort

    model = _load_onnx(model_path)
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            types[vi.name] = vi.type.tensor_type.elem_type
    except Exception:  # noqa: B902 -- the types are only a refinement
        pass
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            elem = types.get(name) or onnx.TensorProto.FLOAT
            model.graph.output.append(helper.make_tensor_value_info(name, elem, None))
            present.add(name)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), sess_options=opts,
                                   providers=['CPUExecutionProvider'])
    feed = {session.get_inputs()[0].name: tensor}
    return session.run(list(names), feed)


def _feature_tile(channel, tile_w, tile_h):
    ch = np.nan_to_num(np.asarray(channel, np.float32))
    lo, hi = float(ch.min()), float(ch.max())
    if hi > lo:
        u8 = ((ch - lo) * (255.0 / (hi - lo))).astype(np.uint8)
    else:
        u8 = np.zeros(ch.shape, np.uint8)
    interp = cv2.INTER_NEAREST if u8.shape[1] < tile_w else cv2.INTER_AREA
    u8 = cv2.resize(u8, (tile_w, tile_h), interpolation=interp)
    return cv2.applyColorMap(u8, cv2.COLORMAP_VIRIDIS)


def layers_figure(network_rgb, outputs, names, title, channels=LAYER_CHANNELS, tile_w=96):
    """
    Return a BGR picture of feature maps: one row per layer of its first ``channels`` maps.

    Each map is min-max normalized on its own to 0..255 (viridis colours) and resized to a
    common tile; the first row shows the network input, each row has its layer name (and
    shape) as caption. 4-D outputs are read as (1, C, H, W).
    """
    in_h, in_w = network_rgb.shape[:2]
    tile_h = max(8, int(round(tile_w * in_h / in_w)))
    gap = 2
    width = channels * tile_w + (channels - 1) * gap
    cap_h = 18
    rows = []
    head = np.zeros((tile_h, width, 3), np.uint8)
    head[:, :tile_w] = cv2.resize(cv2.cvtColor(network_rgb, cv2.COLOR_RGB2BGR),
                                  (tile_w, tile_h), interpolation=cv2.INTER_AREA)
    rows.append(_caption(head, f'network input: {title}', cap_h))
    for name, out in zip(names, outputs):
        arr = np.asarray(out)
        if arr.ndim == 4:
            maps = arr[0]
        elif arr.ndim == 3:
            maps = arr
        elif arr.ndim == 2:
            maps = arr[None]
        else:
            raise EvalError(f'--layers: {name} has shape {arr.shape}, not a feature map')
        row = np.zeros((tile_h, width, 3), np.uint8)
        for c in range(min(channels, maps.shape[0])):
            x = c * (tile_w + gap)
            row[:, x:x + tile_w] = _feature_tile(maps[c], tile_w, tile_h)
        shape = 'x'.join(str(d) for d in arr.shape)
        rows.append(_caption(row, f'{name}  ({shape}, first {min(channels, maps.shape[0])} '
                                  'channels)', cap_h))
    sep = np.full((gap, width, 3), 255, np.uint8)
    stacked = []
    for row in rows:
        if stacked:
            stacked.append(sep)
        stacked.append(row)
    return np.vstack(stacked)


def write_layers(model_path, rgb, names, out_dir, title, threads=2):
    """Run the model on one image, write ``layers.png``; return its entry for the reports."""
    from freespace_seg.perception.pipeline import SegmentationPipeline

    pipe = SegmentationPipeline(model_path, backend='onnxruntime', num_threads=threads)
    pre = pipe.preprocessor(rgb.shape[1], rgb.shape[0])
    tensor = np.array(pre(rgb), copy=True)
    network_rgb = np.array(pre.padded_image, copy=True)
    pipe.close()
    outputs = layer_outputs(model_path, tensor, names, threads)
    figure = layers_figure(network_rgb, outputs, names, title)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, 'layers.png')
    if not cv2.imwrite(path, figure):
        raise OSError(f'cannot write {path}')
    return {'file': 'layers.png', 'image': title,
            'layers': [{'name': n, 'shape': list(np.asarray(o).shape)}
                       for n, o in zip(names, outputs)]}
