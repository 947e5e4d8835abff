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

"""Static checks of the package: config, README, package.xml, setup.py and launch files agree."""

import ast
import glob
import importlib.util
import os
import re
import sys
import types
import xml.etree.ElementTree as ET

from freespace_seg.nodes.freespace_driver import DRIVER_PARAMS
from freespace_seg.nodes.params import markdown_table, SEGMENTATION_PARAMS, validate
from freespace_seg.nodes.sim_robot import SIM_PARAMS
from freespace_seg.nodes.synthetic_camera import CAMERA_PARAMS
import pytest
from support import REPO
from test_distro import DISTROS
import yaml


#: System keys of rosdep (base.yaml, python.yaml), the same on every distro.
ROSDEP_SYSTEM_KEYS = {'python3-numpy', 'python3-opencv', 'python3-yaml', 'python3-tqdm',
                      'python3-onnxruntime-pip', 'python3-pytest', 'python3-hypothesis'}
_ROS_EVERYWHERE = {'rclpy', 'sensor_msgs', 'std_msgs', 'nav_msgs', 'geometry_msgs',
                   'diagnostic_msgs', 'lifecycle_msgs', 'rosgraph_msgs', 'ament_index_python',
                   'cv_bridge', 'ament_copyright', 'ament_flake8', 'ament_pep257', 'launch',
                   'launch_ros', 'launch_testing', 'launch_testing_ros', 'tf2_ros',
                   'rqt_image_view'}
#: ROS packages released in each distro (rosdistro <distro>/distribution.yaml).
ROS_PACKAGES = {'humble': _ROS_EVERYWHERE | {'irobot_create_msgs'},
                'jazzy': _ROS_EVERYWHERE | {'irobot_create_msgs'},
                'kilted': _ROS_EVERYWHERE}


def read(*parts):
    with open(os.path.join(REPO, *parts), encoding='utf-8') as f:
        return f.read()


def test_config_yaml_matches_the_declared_defaults():
    data = yaml.safe_load(read('config', 'freespace_seg.yaml'))
    params = data['/**']['ros__parameters']
    specs = {s.name: s for s in SEGMENTATION_PARAMS}
    assert set(params) == set(specs), 'config and node must list the same parameters'
    for name, value in params.items():
        assert value == specs[name].default, name
        assert validate(specs[name], value) is None, name


#: Each node's page in docs/nodes/ and the parameters it documents.
NODE_PAGES = {'segmentation_node': SEGMENTATION_PARAMS, 'synthetic_camera': CAMERA_PARAMS,
              'freespace_driver': DRIVER_PARAMS, 'sim_robot': SIM_PARAMS}


def test_docs_parameter_tables_match_the_nodes():
    """Each node's page holds its full parameter table, generated from the node's specs."""
    for node, specs in NODE_PAGES.items():
        page = read('docs', 'nodes', node + '.md')
        assert markdown_table(specs) in page, f'docs/nodes/{node}.md: parameter table is stale'
    # One home per table: the README links to the pages instead of holding a copy.
    readme = read('README.md')
    assert '| parameter | type | default |' not in readme
    for node in NODE_PAGES:
        assert f'(docs/nodes/{node}.md)' in readme, node


def test_readme_is_a_contract_of_about_300_lines():
    """The README stays short (at most 310 lines); everything else lives in docs/."""
    lines = read('README.md').splitlines()
    assert len(lines) <= 310, f'README.md has {len(lines)} lines'
    assert os.path.isfile(os.path.join(REPO, 'docs', 'README.md'))


_LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+"[^"]*")?\)')
_FENCE = re.compile(r'^(```|~~~).*?^\1', re.S | re.M)


def _slug(heading):
    """Return GitHub's anchor for a Markdown heading: lower case, punctuation out, - for space."""
    text = re.sub(r'`|\*\*|\[|\]\([^)]*\)', '', heading.strip().lower())
    return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


def _anchors(text):
    seen, anchors = {}, set()
    for line in _FENCE.sub('', text).splitlines():
        m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else f'{slug}-{n}')
    return anchors


def broken_links(paths):
    """Return 'file: link' for each relative link in the Markdown files that leads nowhere."""
    broken = []
    for path in paths:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        body = re.sub(r'`[^`\n]*`', '', _FENCE.sub('', text))
        for target in _LINK.findall(body):
            if re.match(r'[a-z][a-z0-9+.-]*:', target):      # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(dest):
                broken.append(f'{os.path.relpath(path, REPO)}: {target}')
            elif anchor and dest.endswith('.md'):
                with open(dest, encoding='utf-8') as f:
                    if anchor not in _anchors(f.read()):
                        broken.append(f'{os.path.relpath(path, REPO)}: {target} (no such heading)')
    return broken


def markdown_files():
    return [os.path.join(REPO, 'README.md')] + sorted(
        glob.glob(os.path.join(REPO, 'docs', '**', '*.md'), recursive=True))


def test_every_relative_link_in_the_readme_and_docs_resolves():
    assert len(markdown_files()) > 20
    assert broken_links(markdown_files()) == []


def test_the_link_check_finds_broken_links(tmp_path):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'b.md').write_text('# B page\n\n## A `code` heading: yes\n')
    page = tmp_path / 'a.md'
    page.write_text('[ok](sub/b.md) [ok](sub/b.md#a-code-heading-yes) [ok](#top) '
                    '[web](https://example.com/x.md) `[not a link](nowhere.md)`\n'
                    '# Top\n[gone](sub/c.md) ![gone](img.png) [bad anchor](sub/b.md#nope)\n'
                    '```\n[in code](nowhere.md)\n```\n')
    found = broken_links([str(page)])
    assert [f.split(': ', 1)[1] for f in found] == [
        'sub/c.md', 'img.png', 'sub/b.md#nope (no such heading)']


def test_every_default_is_valid():
    for spec in SEGMENTATION_PARAMS + CAMERA_PARAMS:
        assert validate(spec, spec.default) is None, spec.name


def test_package_xml_declares_runtime_and_test_dependencies():
    root = ET.fromstring(read('package.xml'))
    assert root.get('format') == '3'
    deps = {e.tag: set() for e in root}
    for e in root:
        deps[e.tag].add(e.text)
    for key in ('rclpy', 'sensor_msgs', 'std_msgs', 'nav_msgs', 'geometry_msgs',
                'diagnostic_msgs', 'cv_bridge', 'python3-numpy', 'python3-opencv'):
        assert key in deps['exec_depend'], key
    assert any('onnxruntime' in d for d in deps['exec_depend'])
    for key in ('ament_flake8', 'ament_pep257', 'ament_copyright', 'python3-pytest'):
        assert key in deps['test_depend'], key
    # Every key must resolve with rosdep on every distro the package supports: checked
    # against ros/rosdistro (rosdep/base.yaml, rosdep/python.yaml: the same on every distro)
    # and each distro's released ROS packages. python3-onnx, for one, is not a key.
    for distro in DISTROS:
        keys = set().union(*(v for k, v in deps.items() if k.endswith('depend')))
        missing = keys - ROSDEP_SYSTEM_KEYS - ROS_PACKAGES[distro]
        assert not missing, f'{distro}: {sorted(missing)}'
    assert root.find('export/build_type').text == 'ament_python'
    email = root.find('maintainer').get('email')
    assert '@' in email and '.' in email.split('@')[1] and len(email.split('@')[1]) > 4


def _setup_call():
    tree = ast.parse(read('setup.py'))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'setup':
            return {k.arg: k.value for k in node.keywords}
    raise AssertionError('setup() not found')


def entry_points():
    kw = _setup_call()
    scripts = ast.literal_eval(kw['entry_points'])['console_scripts']
    return {s.split('=')[0].strip(): s.split('=')[1].strip() for s in scripts}


def test_entry_points_resolve_to_main_functions():
    import importlib
    eps = entry_points()
    assert 'segmentation_node' in eps
    for name, target in eps.items():
        module, func = target.split(':')
        assert callable(getattr(importlib.import_module(module), func)), name


def test_setup_installs_launch_config_and_models():
    text = read('setup.py')
    for pattern in ("'launch/*.launch.py'", "'config/*'", "'models/*'"):
        assert pattern in text
    assert glob.glob(os.path.join(REPO, 'launch', '*.launch.py'))
    assert os.path.isfile(os.path.join(REPO, 'resource', 'freespace_seg'))
    assert 'script_dir=$base/lib/freespace_seg' in read('setup.cfg')


LAUNCH_FILES = sorted(glob.glob(os.path.join(REPO, 'launch', '*.launch.py')))


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_launch_file_statically(path):
    """Launch files cannot run here (no ROS 2 launch); check what can be checked without it."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read())
    funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert 'generate_launch_description' in funcs
    eps = entry_points()
    declared = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, 'id', getattr(node.func, 'attr', ''))
        kw = {k.arg: k.value for k in node.keywords}
        if name == 'DeclareLaunchArgument':
            arg = ast.literal_eval(node.args[0])
            declared.add(arg)
            assert 'description' in kw, f'launch argument {arg!r} has no description'
            if 'choices' in kw and 'default_value' in kw:
                choices = ast.literal_eval(kw['choices'])
                default = kw['default_value']
                if isinstance(default, ast.Constant):
                    assert default.value in choices, arg
        if name == 'Node' and isinstance(kw.get('package'), ast.Constant):
            if kw['package'].value == 'freespace_seg':
                exe = ast.literal_eval(kw['executable'])
                assert exe in eps, f'{exe} is not a registered entry point'
    used = {ast.literal_eval(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, 'id', '') == 'LaunchConfiguration'}
    assert used <= declared, f'undeclared launch arguments: {used - declared}'
    # Files the launch file refers to in the package share must exist in the source tree.
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value.endswith(('.yaml', '.onnx', '.xml')) and '/' not in node.value:
            matches = glob.glob(os.path.join(REPO, '*', node.value))
            assert matches, f'{node.value} is referenced but not in config/ or models/'


class _Recorded:
    """An action or substitution of the fake launch API below: its arguments, kept."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


#: the launch API the launch files use, faked: each name a _Recorded subclass
_FAKE_LAUNCH = {
    'launch': ['LaunchDescription'],
    'launch.actions': ['DeclareLaunchArgument', 'GroupAction', 'IncludeLaunchDescription',
                       'OpaqueFunction'],
    'launch.conditions': ['IfCondition'],
    'launch.launch_description_sources': ['PythonLaunchDescriptionSource'],
    'launch.substitutions': ['LaunchConfiguration', 'PythonExpression'],
    'launch_ros.actions': ['Node', 'PushRosNamespace'],
    'launch_ros.parameter_descriptions': ['ParameterValue'],
}


@pytest.fixture
def fake_launch(monkeypatch):
    """Load a launch file against a recording fake of launch/launch_ros (restored after)."""
    for module, names in _FAKE_LAUNCH.items():
        fake = types.ModuleType(module)
        for name in names:
            setattr(fake, name, type(name, (_Recorded,), {}))
        monkeypatch.setitem(sys.modules, module, fake)
    packages = types.ModuleType('ament_index_python.packages')
    packages.get_package_share_directory = lambda package: REPO   # the share is the tree
    monkeypatch.setitem(sys.modules, 'ament_index_python', types.ModuleType('ament_index'))
    monkeypatch.setitem(sys.modules, 'ament_index_python.packages', packages)

    def load(name):
        path = os.path.join(REPO, 'launch', name)
        spec = importlib.util.spec_from_file_location('launch_file_' + name.split('.')[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


def _walk(entity):
    """Yield every _Recorded in ``entity``, depth first, through lists, tuples and dicts."""
    if isinstance(entity, _Recorded):
        yield entity
        for item in list(entity.args) + list(entity.kwargs.values()):
            yield from _walk(item)
    elif isinstance(entity, (list, tuple)):
        for item in entity:
            yield from _walk(item)
    elif isinstance(entity, dict):
        for item in entity.values():
            yield from _walk(item)


def _expand(description, arguments):
    """
    Run a fake launch description's OpaqueFunctions with its defaults plus ``arguments``.

    Return (every action, including what the functions returned; the launch arguments).
    """
    declared = {a.args[0]: a.kwargs.get('default_value', '') for a in _walk(description)
                if type(a).__name__ == 'DeclareLaunchArgument'}
    assert set(arguments) <= set(declared), set(arguments) - set(declared)
    config = dict(declared, **arguments)
    context = types.SimpleNamespace(launch_configurations=config)
    actions = list(_walk(description))
    for action in list(actions):
        if type(action).__name__ == 'OpaqueFunction':
            actions += list(_walk(action.kwargs['function'](context)))
    return actions, config


def _value(entity, config):
    """Return a launch argument's text, a LaunchConfiguration looked up in ``config``."""
    if type(entity).__name__ == 'LaunchConfiguration':
        return config[entity.args[0]]
    return entity


def _segmentation_nodes(actions):
    return [a for a in actions if type(a).__name__ == 'Node'
            and a.kwargs.get('executable') == 'segmentation_node']


def _included_segmentation(fake_launch, robot_file, arguments):
    """Check the robot file includes freespace_seg.launch.py; return the node it starts."""
    actions, config = _expand(fake_launch(robot_file).generate_launch_description(), arguments)
    assert _segmentation_nodes(actions) == [], f'{robot_file} declares segmentation_node again'
    includes = [a for a in actions if type(a).__name__ == 'IncludeLaunchDescription']
    assert len(includes) == 1, robot_file
    source = includes[0].args[0]
    assert type(source).__name__ == 'PythonLaunchDescriptionSource'
    assert source.args[0] == os.path.join(REPO, 'launch', 'freespace_seg.launch.py')
    passed = {k: _value(v, config) for k, v in includes[0].kwargs['launch_arguments']}
    seg_actions, seg_config = _expand(
        fake_launch('freespace_seg.launch.py').generate_launch_description(), passed)
    nodes = _segmentation_nodes(seg_actions)
    assert len(nodes) == 1
    return nodes[0], seg_config


def _params(node):
    params_file, overrides = node.kwargs['parameters']
    return params_file, overrides


def test_freespace_seg_launch_keeps_the_params_file_values_unless_given(fake_launch):
    launch_file = fake_launch('freespace_seg.launch.py')
    actions, config = _expand(launch_file.generate_launch_description(), {})
    (node,) = _segmentation_nodes(actions)
    params_file, overrides = _params(node)
    assert params_file == os.path.join(REPO, 'config', 'freespace_seg.yaml')
    assert overrides == {'backend': 'auto', 'image_transport': 'raw', 'use_sim_time': False}
    assert ('/tf', 'tf') not in node.kwargs['remappings']
    actions, config = _expand(launch_file.generate_launch_description(), {
        'model_file_path': 'm.onnx', 'camera_height': '0.4', 'use_tf': 'true',
        'remap_tf': 'true', 'image_topic': 'cam/image'})
    (node,) = _segmentation_nodes(actions)
    _, overrides = _params(node)
    assert overrides['model_file_path'] == 'm.onnx' and overrides['camera_height'] == 0.4
    assert overrides['use_tf'] is True and 'camera_pitch' not in overrides
    remaps = node.kwargs['remappings']
    assert ('image', 'cam/image') in remaps and ('image/compressed', 'cam/image/compressed') \
        in remaps and ('/tf', 'tf') in remaps and ('/tf_static', 'tf_static') in remaps
    with pytest.raises(RuntimeError, match='camera_x must be a number'):
        _expand(launch_file.generate_launch_description(), {'camera_x': 'high'})


def test_create3_launch_includes_freespace_seg_launch(fake_launch):
    node, config = _included_segmentation(fake_launch, 'create3_freespace.launch.py',
                                          {'namespace': '/robot1', 'camera': 'oakd',
                                           'camera_z': '0.3'})
    assert config['namespace'] == '/robot1'
    _, overrides = _params(node)
    assert overrides['camera_height'] == 0.3 and overrides['camera_pitch'] == 0.3
    assert overrides['base_frame'] == 'base_link' and overrides['use_tf'] is False
    assert 'model_file_path' not in overrides                 # empty: params_file's value
    remaps = node.kwargs['remappings']
    assert ('image', 'oakd/rgb/preview/image_raw') in remaps
    assert ('camera_info', 'oakd/rgb/preview/camera_info') in remaps
    assert ('/tf', 'tf') in remaps and ('/tf_static', 'tf_static') in remaps


def test_sim_demo_launch_includes_freespace_seg_launch(fake_launch):
    node, config = _included_segmentation(fake_launch, 'sim_demo.launch.py',
                                          {'namespace': 'sim', 'model_file_path': 'm.onnx'})
    assert config['namespace'] == 'sim'
    _, overrides = _params(node)
    assert overrides['model_file_path'] == 'm.onnx' and overrides['backend'] == 'auto'
    assert ('/tf', 'tf') in node.kwargs['remappings']


def _readme_section(title):
    readme = read('README.md')
    start = readme.index('\n## ' + title)
    end = readme.find('\n## ', start + 1)
    return readme[start:end if end > 0 else None]


def test_readme_robot_install_names_the_apt_packages_of_package_xml():
    """The robot install steps name exactly the ros-$ROS_DISTRO-* packages rosdep installs."""
    root = ET.fromstring(read('package.xml'))
    keys = {e.text for e in root if e.tag in ('exec_depend', 'test_depend', 'depend')}
    ros = {'ros-$ROS_DISTRO-' + k.replace('_', '-') for k in keys if not k.startswith('python3-')}
    apt = {k for k in keys if k.startswith('python3-') and not k.endswith('-pip')}
    section = _readme_section('Use it on a robot')
    named = set(re.findall(r'ros-\$ROS_DISTRO-[a-z0-9-]+', section))
    assert named == ros
    lines = ' '.join(ln for ln in section.splitlines() if 'apt install' in ln or
                     ln.startswith('    ros-') or ln.startswith('    python3-'))
    assert set(re.findall(r'python3-[a-z0-9-]+', lines)) == apt
    assert 'pip install onnxruntime' in section


def test_github_workflow_matches_the_readme():
    """.github/workflows/ci.yml (untested here): the distros and actions the README names."""
    workflow = yaml.safe_load(read('.github', 'workflows', 'ci.yml'))
    job = workflow['jobs']['colcon']
    matrix = job['strategy']['matrix']['include']
    assert tuple(m['ros_distro'] for m in matrix) == DISTROS
    ubuntu = {'humble': 'ubuntu:jammy', 'jazzy': 'ubuntu:noble', 'kilted': 'ubuntu:noble'}
    assert {m['ros_distro']: m['docker_image'] for m in matrix} == ubuntu
    assert job['container']['image'] == '${{ matrix.docker_image }}'
    uses = [step['uses'].split('@')[0] for step in job['steps'] if 'uses' in step]
    assert uses == ['ros-tooling/setup-ros', 'ros-tooling/action-ros-ci']
    setup, ci = (step for step in job['steps'] if 'uses' in step)
    assert setup['with']['required-ros-distributions'] == '${{ matrix.ros_distro }}'
    assert ci['with'] == {'package-name': 'freespace_seg',
                          'target-ros2-distro': '${{ matrix.ros_distro }}'}
    lint = workflow['jobs']['lint']
    assert lint['strategy']['matrix']['linter'] == ['flake8', 'pep257']
    assert [s['uses'].split('@')[0] for s in lint['steps']][-1] == 'ros-tooling/action-ros-lint'
    # The README says the same, and that it is untested here.
    tests = _readme_section('Tests')
    para = tests[tests.index('.github/workflows/ci.yml'):]
    para = para[:para.find('\n\n')]
    assert 'untested here' in para
    assert 'on ' + ', '.join(DISTROS[:-1]) + ' and ' + DISTROS[-1] in ' '.join(para.split())
    for action in uses + ['ros-tooling/action-ros-lint', 'ament_flake8', 'ament_pep257']:
        assert action in para, action
