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

"""``tools/device_robust_runs.sh``: valid bash, and every run's options are ``train``'s."""

import argparse
import os
import re
import shlex
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
SCRIPT = os.path.join(REPO, 'tools', 'device_robust_runs.sh')


def script_text():
    with open(SCRIPT, encoding='utf-8') as f:
        return f.read()


@pytest.mark.skipif(shutil.which('bash') is None, reason='needs bash')
def test_the_script_is_valid_bash():
    subprocess.run(['bash', '-n', SCRIPT], check=True)


def test_every_run_parses_as_train_options():
    pytest.importorskip('torch', reason="train's options live beside torch code")
    from freespace_seg.training import train

    text = script_text()
    values = {'W': '/tmp/w', 'LT': '1600', 'LV': '150', 'STEPS': '1300', 'VE': '400',
              'DEV': 'cuda', 'TL': '300'}

    def expand(line):
        line = re.sub(r'\$\(\( *(\w+) \* (\d+)(?: / (\d+))? *\)\)',
                      lambda m: str(int(values[m.group(1)]) * int(m.group(2))
                                    // int(m.group(3) or 1)), line)
        return shlex.split(re.sub(r'\$(\w+)', lambda m: values[m.group(1)], line))

    recipe = re.search(r'^RP="([^"]+)"', text, re.M)
    assert recipe, 'the recipe line RP="..." is gone'
    base = expand(recipe.group(1))
    runs = re.findall(r'^tr (\w+)(.*)$', text, re.M)
    assert [name for name, _ in runs] == ['gp', 'frames', 'valid', 'lrdecay', 'lowlr',
                                          'select', 'light', 'long']
    parser = argparse.ArgumentParser(exit_on_error=False)
    train.add_arguments(parser)
    for name, extra in runs:
        argv = base + expand(extra) + ['--device', 'cuda', '--threads', '1',
                                       '--time-limit', '300']
        args, unknown = parser.parse_known_args(argv)
        assert unknown == [], (name, unknown)
        assert args.arch == 'efficientnet-lite0' and args.seed == 0, name
    args, _ = parser.parse_known_args(base + expand(dict(runs)['long']))
    assert args.steps == 5200 and args.limit_train == 4500
