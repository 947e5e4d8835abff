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

"""``infer``: image files, folders, globs and videos (written by OpenCV in the test)."""

import os
import subprocess
import sys

import cv2
from freespace_seg.training.data import read_user_image_pair, user_image_pairs
import numpy as np
import pytest
from support import green_red_image, REPO, write_tiny_model

W, H = 64, 48


def run_infer(*argv):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH', ''))
    return subprocess.run([sys.executable, '-m', 'freespace_seg', 'infer', *map(str, argv)],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope='module')
def model(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp('model'))


def write_video(path, n=12, fps=10.0):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), fps, (W, H))
    if not writer.isOpened():
        pytest.skip('this OpenCV build cannot write MJPG AVI')
    for i in range(n):
        writer.write(cv2.cvtColor(green_red_image(W, H, 16 + i), cv2.COLOR_RGB2BGR))
    writer.release()
    return path


def test_video_gives_overlay_video_frames_and_labels(tmp_path, model):
    video = write_video(tmp_path / 'walk.avi')
    out = tmp_path / 'out'
    labels = tmp_path / 'labels'
    proc = run_infer(video, '--model', model, '--out', out, '--mask-video', '--frames',
                     '--export-labels', labels, '--label-every', '5')
    assert proc.returncode == 0, proc.stderr
    assert '12 frames' in proc.stdout
    for kind in ('overlay', 'colored'):
        cap = cv2.VideoCapture(str(out / f'walk_{kind}.mp4'))
        assert cap.isOpened()
        count = 0
        while cap.read()[0]:
            count += 1
        assert count == 12
    assert len(list(out.glob('walk_*_mask.png'))) == 12
    mask = cv2.imread(str(out / 'walk_000000_mask.png'), cv2.IMREAD_UNCHANGED)
    # MJPG blurs the red/green edge by a row or two: the bottom 16 rows are free (class 1).
    assert abs(int((mask == 1).sum()) - W * 16) <= 2 * W
    pairs = user_image_pairs(str(labels))
    assert [os.path.basename(p) for p, _ in pairs] == [
        'walk_000000.png', 'walk_000005.png', 'walk_000010.png']
    rgb, label = read_user_image_pair(*pairs[0])
    assert rgb.shape == (H, W, 3) and label.shape == (H, W)


def test_folder_glob_and_missing(tmp_path, model):
    folder = tmp_path / 'imgs'
    folder.mkdir()
    for i in range(3):
        cv2.imwrite(str(folder / f'f{i}.png'), cv2.cvtColor(green_red_image(W, H, 10 + i),
                                                            cv2.COLOR_RGB2BGR))
    cv2.imwrite(str(folder / 'f0_mask.png'), np.zeros((H, W), np.uint8))  # not an input
    out = tmp_path / 'out'
    proc = run_infer(folder, '--model', model, '--out', out)
    assert proc.returncode == 0, proc.stderr
    assert '3 frames' in proc.stdout
    mask = cv2.imread(str(out / 'f2_mask.png'), cv2.IMREAD_UNCHANGED)
    assert int((mask == 1).sum()) == W * 12
    proc = run_infer(str(folder / 'f[01].png'), tmp_path / 'nothing_*.jpg', '--model', model,
                     '--out', tmp_path / 'out2')
    assert proc.returncode == 1
    assert '2 frames' in proc.stdout and 'no such file, folder or glob match' in proc.stderr


def test_folder_labels_least_confident(tmp_path, model):
    """--label-least-confident 2 on a folder: the two images the tiny model is least sure of."""
    folder = tmp_path / 'imgs'
    folder.mkdir()
    # G - R per image: the nearer 0, the less sure (P(free) = sigmoid(4 (G - R) / 255))
    for i, diff in enumerate((70, 2, 40, -5, 90)):
        rgb = np.zeros((H, W, 3), np.uint8)
        rgb[..., 0], rgb[..., 1] = 100, 100 + diff
        cv2.imwrite(str(folder / f'f{i}.png'), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    labels = tmp_path / 'labels'
    proc = run_infer(folder, '--model', model, '--out', tmp_path / 'out', '--export-labels',
                     labels, '--label-every', '1', '--label-least-confident', '2')
    assert proc.returncode == 0, proc.stderr
    assert '2 label pairs' in proc.stdout
    assert sorted(os.listdir(labels)) == ['f1.png', 'f1_mask.png', 'f3.png', 'f3_mask.png']
