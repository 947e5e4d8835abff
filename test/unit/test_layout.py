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
The package's layout rules, checked by walking every module's imports (ast, nothing runs).

* The core (perception, ground, driving, sim, scenes2, training, common) imports no ROS: no
  rclpy, no launch, no message packages (``*_msgs``). Only nodes/ and the tools that start
  nodes may. scenes2 is a second scene generator kept apart from sim (an out-of-renderer proxy).
* Only training/ imports torch.
* The rooms import one way, along the data path: the core never imports
  nodes/ or tools/, nodes/ never imports tools/, perception/ imports neither ground/ nor
  driving/, and ground/ does not import driving/ (:data:`BELOW`).
* Every tool is a ``python -m freespace_seg`` subcommand: no module outside nodes/ has a
  ``__main__`` block of its own.
* Nodes as the ROS anchors write them: no lifecycle transition (``trigger_*``) inside an
  ``__init__`` (autostart is done from main()); no read of rclpy's private state
  (``_state_machine``); no attribute set up through ``__dict__`` (buffers go in ``__init__``).

And the tests' own layout: conftest.py holds fixtures and hooks only, so no file under test/
imports it (``from conftest import`` / ``import conftest``); shared helpers come from the
``support`` package (test/support/). And no test reads a node's private state: an attribute
``x._name`` (one leading underscore, not a dunder) on anything but ``self`` / ``cls`` is a
break when ``x`` names a node (the name, or the last attribute of a dotted ``rig.node``, is or
ends in ``node``, ``driver``, ``robot`` or ``camera``, or is ``seg``, ``sim``, ``drv`` or
``cam``, digits allowed after it), or when ``_name`` is one that a node class in nodes/ (a
subclass of ``Node`` / ``LifecycleNode``) defines as a method or sets on ``self``. Tests use
the nodes' public, documented read-only hooks (``wants()``, ``worker_thread``, ...), rclpy's
public API (``node.publishers``, ``node.subscriptions``) or the topics. A private read of
another object (a module's helper, a torch model's layer) is allowed.
"""

import ast
import functools
import os
import re
import shutil
import subprocess
import sys

import pytest
from support import REPO
from support.layout import ros_uses

TEST_DIR = os.path.join(REPO, 'test')
PACKAGE = os.path.join(REPO, 'freespace_seg')
CORE = ('perception', 'ground', 'driving', 'sim', 'scenes2', 'training', 'common')
#: the tools that start or are nodes, and so talk to rclpy
ROS_TOOLS = ('tools.demo', 'tools.closed_loop', 'tools.bench.topics', 'tools.bench.naive',
             'tools.bench.soak', 'tools.bench.fleet')
ROS_ROOTS = ('rclpy', 'launch', 'launch_ros', 'launch_testing', 'rosidl_runtime_py',
             'rcl_interfaces', 'builtin_interfaces', 'tf2_ros', 'cv_bridge', 'message_filters')


def imported_roots(source):
    """Return the top-level package names that ``source`` imports, anywhere in it."""
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split('.')[0])
        elif isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'import_module' \
                and node.args and isinstance(node.args[0], ast.Constant):
            roots.add(str(node.args[0].value).split('.')[0])
    return roots


def is_ros(root):
    return root in ROS_ROOTS or root.endswith('_msgs') or root.endswith('_srvs')


def has_main_block(source):
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                isinstance(node.test.left, ast.Name) and node.test.left.id == '__name__':
            return True
    return False


def node_style_problems(module, source):
    """Return the breaks of the node rules (see the module docstring) in ``source``."""
    out = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == '__init__':
            for inner in ast.walk(node):
                if isinstance(inner, ast.Attribute) and inner.attr.startswith('trigger_'):
                    out.append(f'{module}: {inner.attr}() inside __init__; autostart from main()')
        elif isinstance(node, ast.Attribute) and node.attr == '_state_machine':
            out.append(f"{module} reads rclpy's private _state_machine")
        elif isinstance(node, ast.Attribute) and node.attr == '__dict__':
            out.append(f'{module} uses __dict__; set the attribute up in __init__')
    return out


def problems(module, source):
    """Return the rule breaks of ``module`` (dotted, relative to the package) with ``source``."""
    out = []
    top = module.split('.')[0]
    roots = imported_roots(source)
    may_ros = top == 'nodes' or module in ROS_TOOLS or module.startswith(
        tuple(t + '.' for t in ROS_TOOLS))
    for root in sorted(roots):
        if is_ros(root) and not may_ros:
            where = 'the core' if top in CORE else 'a module that starts no node'
            out.append(f'{module} imports {root}, but it is {where}')
        if root == 'torch' and top != 'training':
            out.append(f'{module} imports torch; only training/ may')
    if has_main_block(source) and top != 'nodes' and module != '__main__':
        out.append(f'{module} has a __main__ block; make it a cli command instead')
    return out + node_style_problems(module, source)


def package_modules():
    for dirpath, dirnames, filenames in os.walk(PACKAGE):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        for name in sorted(filenames):
            if name.endswith('.py'):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, '.')
                if rel.endswith('.__init__'):
                    rel = rel[:-len('.__init__')]
                yield rel, path


def test_every_module_keeps_the_layout_rules():
    found = []
    modules = list(package_modules())
    assert len(modules) > 40, 'the walk found too few modules'
    for module, path in modules:
        with open(path, encoding='utf-8') as f:
            found += problems(module, f.read())
    assert found == []


def test_every_package_is_one_of_the_known_rooms():
    rooms = {m.split('.')[0] for m, path in package_modules() if '.' in m}
    assert rooms == set(CORE) | {'nodes', 'tools'}, rooms
    loose = {m for m, path in package_modules() if os.path.dirname(path) == PACKAGE}
    assert loose == {'__init__', '__main__', 'cli'}, loose


@pytest.mark.parametrize('module, source, expected', [
    ('perception.pipeline', 'import rclpy\n', 'imports rclpy'),
    ('ground.projection', 'from sensor_msgs.msg import Image\n', 'imports sensor_msgs'),
    ('sim.scene', 'def f():\n    from rclpy.node import Node\n', 'imports rclpy'),
    ('driving.driver_logic', 'import torch.nn\n', 'imports torch'),
    ('perception.preprocess', 'import torch\n', 'only training/ may'),
    ('tools.infer', 'import rclpy\n', 'starts no node'),
    ('tools.bag', 'import importlib\nimportlib.import_module("rclpy")\n', 'imports rclpy'),
    ('tools.demo', 'import torch\n', 'imports torch'),
    ('cli', 'import rclpy\n', 'imports rclpy'),
    ('tools.bench.projection', "if __name__ == '__main__':\n    pass\n", '__main__ block'),
    ('nodes.segmentation_node',
     'class N:\n    def __init__(self):\n        self.trigger_configure()\n', 'inside __init__'),
    ('nodes.segmentation_node', 'def f(node):\n    return node._state_machine.current_state\n',
     '_state_machine'),
    ('nodes.segmentation_node', "def f(self):\n    return self.__dict__.setdefault('_b', {})\n",
     '__dict__'),
])
def test_the_checker_catches_a_break(module, source, expected):
    found = problems(module, source)
    assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize('module, source', [
    ('nodes.segmentation_node', "import rclpy\nif __name__ == '__main__':\n    pass\n"),
    ('tools.demo', 'import rclpy\nfrom sensor_msgs.msg import Image\n'),
    ('tools.bench.naive', 'from rclpy.node import Node\n'),
    ('training.train', 'import torch\n'),
    ('perception.pipeline', 'import numpy\nimport onnxruntime\n'),
    ('nodes.segmentation_node', 'def main():\n    node = N()\n    node.trigger_configure()\n'),
])
def test_the_checker_allows_what_the_rules_allow(module, source):
    assert problems(module, source) == []


#: room -> the rooms it must not import (they come after it on the data path)
BELOW = {**{room: ('nodes', 'tools') for room in CORE},
         'nodes': ('tools',),
         'perception': ('ground', 'driving', 'nodes', 'tools'),
         'ground': ('driving', 'nodes', 'tools')}


def imported_rooms(module, source):
    """
    Return the package's rooms (``freespace_seg.<room>``) that ``source`` imports, anywhere.

    Absolute (``freespace_seg.x.y``, ``from freespace_seg import x``), relative (``from ..x
    import y``, resolved from ``module``) and ``importlib.import_module('freespace_seg.x')``
    imports count, lazy ones inside functions too.
    """
    here = module.split('.')
    rooms = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            prefix = node.module or ''
            if node.level:
                tail = [node.module] if node.module else []
                prefix = '.'.join(['freespace_seg'] + here[:len(here) - node.level] + tail)
            names = [prefix] + [f'{prefix}.{alias.name}' for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'import_module' \
                and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        for name in names:
            parts = name.split('.')
            if parts[0] == 'freespace_seg' and len(parts) > 1:
                rooms.add(parts[1])
    return rooms


def room_problems(module, source):
    """Return the imports of ``module`` that go against the data path (:data:`BELOW`)."""
    room = module.split('.')[0]
    return [f'{module} imports freespace_seg.{other}, which comes after {room}'
            for other in sorted(imported_rooms(module, source) & set(BELOW.get(room, ())))]


def test_the_rooms_import_one_way():
    found = []
    for module, path in package_modules():
        with open(path, encoding='utf-8') as f:
            found += room_problems(module, f.read())
    assert found == []


@pytest.mark.parametrize('module, source, bad', [
    ('nodes.segmentation_node', 'from freespace_seg.tools.profiling import f\n', True),
    ('nodes.segmentation_node', 'from freespace_seg.common.profiling import f\n', False),
    ('perception.pipeline', 'def f():\n    from freespace_seg.ground import grid\n', True),
    ('ground.frame', 'from freespace_seg.perception.pipeline import P\n', False),
    ('ground.scan', 'import freespace_seg.driving.driver_logic\n', True),
    ('driving.driver_logic', 'from freespace_seg.ground.grid import UNKNOWN\n', False),
    ('sim.robot', 'from freespace_seg import nodes\n', True),
    ('tools.bag', 'from freespace_seg.nodes.params import P\n', False),
    ('training.train', 'def f():\n    from freespace_seg.tools import serve\n', True),
    ('nodes.segmentation_node', 'from ..tools import profiling\n', True),
    ('nodes.segmentation_node', 'from freespace_seg import tools\n', True),
    ('common.progress', 'import freespace_seg.nodes.msgs\n', True),
    ('sim.scene', "import importlib\nimportlib.import_module('freespace_seg.tools.x')\n", True),
    ('tools.bag', 'from freespace_seg.nodes import msgs\nfrom ..ground import scan\n', False),
    ('nodes.segmentation_node', 'from freespace_seg.perception import pipeline\n', False),
])
def test_the_room_checker(module, source, bad):
    assert bool(room_problems(module, source)) is bad


# -- the tests' own rules --------------------------------------------------------------------

def suite_files():
    """Yield (name relative to test/, path) of every Python file under test/."""
    for dirpath, dirnames, filenames in os.walk(TEST_DIR):
        dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
        for name in sorted(filenames):
            if name.endswith('.py'):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, TEST_DIR), path


#: a receiver that holds a node, by its name (see the module docstring)
NODE_NAME = re.compile(r'((^|_)(node|driver|robot|camera)|^(seg|sim|drv|cam))\d*$')


def is_private(name):
    return name.startswith('_') and not name.startswith('__')


@functools.lru_cache(maxsize=1)
def node_private_names():
    """Return the private names (methods, ``self._x``) the node classes in nodes/ define."""
    names = set()
    for module, path in package_modules():
        if not module.startswith('nodes.'):
            continue
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read())
        for cls in ast.walk(tree):
            if not (isinstance(cls, ast.ClassDef) and any(
                    getattr(b, 'id', getattr(b, 'attr', '')).endswith('Node') for b in cls.bases)):
                continue
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef) and is_private(node.name):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                        isinstance(node.value, ast.Name) and node.value.id == 'self' and \
                        is_private(node.attr):
                    names.add(node.attr)
    return frozenset(names)


def receiver_name(expr):
    """Return the name an attribute is read on: ``node`` for ``node._x`` and ``rig.node._x``."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return ''


def suite_problems(name, source, node_privates=frozenset()):
    """Return the breaks of the tests' rules (see the module docstring) in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = receiver_name(node.value)
            if owner in ('self', 'cls'):
                continue
            if NODE_NAME.search(owner) or node.attr in node_privates:
                out.append(f'{name}:{node.lineno} reads {ast.unparse(node)}, private state of '
                           'a node; use a public hook of the node or a topic')
            continue
        if isinstance(node, ast.Import):
            roots = [alias.name.split('.')[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots = [node.module.split('.')[0]]
        else:
            continue
        if 'conftest' in roots:
            out.append(f'{name}:{node.lineno} imports conftest; import the helper from support')
    return out


def test_every_test_file_keeps_the_test_rules():
    found = []
    files = list(suite_files())
    assert len(files) > 50 and ('conftest.py', os.path.join(TEST_DIR, 'conftest.py')) in files
    privates = node_private_names()
    assert {'_wanted', '_output_pubs', '_pub_odom', '_e_stop', '_tick'} <= privates, privates
    for name, path in files:
        with open(path, encoding='utf-8') as f:
            found += suite_problems(name, f.read(), privates)
    assert found == []


def location_problem(name, source):
    """
    Return why test file ``name`` (relative to test/) is in the wrong place, or None.

    test/unit/<room>/ mirrors the package's rooms (test/unit/ itself holds the checks of the
    whole repository: lint, layout) and needs no ROS; test/ros/ holds what does. conftest.py
    and support/ are shared.
    """
    parts = name.split('/')
    base = parts[-1]
    if parts[0] == 'support' or base == 'conftest.py' or not base.startswith('test_'):
        return None
    if parts[0] == 'unit':
        if len(parts) > 3 or (len(parts) == 3 and parts[1] not in set(CORE) | {'tools'}):
            return f'{name}: test/unit/<room>/ mirrors the package ({", ".join(CORE)}, tools)'
        uses = ros_uses(source)
        return f'{name} uses {", ".join(uses)}: a ROS test, for test/ros/' if uses else None
    if parts[0] == 'ros':
        return None
    return f'{name}: a test lives under test/unit/<room>/ or test/ros/'


def test_every_test_file_is_where_it_belongs():
    found = []
    files = [(n.replace(os.sep, '/'), p) for n, p in suite_files()]
    assert sum(n.startswith('unit/') for n, _ in files) > 30
    assert sum(n.startswith('ros/') for n, _ in files) > 10
    for name, path in files:
        with open(path, encoding='utf-8') as f:
            problem = location_problem(name, f.read())
        if problem:
            found.append(problem)
    assert found == []


@pytest.mark.parametrize('name, source, expected', [
    ('unit/ground/test_x.py', 'import rclpy\n', 'rclpy'),
    ('unit/ground/test_x.py', 'def test_x():\n    from sensor_msgs.msg import Image\n',
     'sensor_msgs.msg'),
    ('unit/tools/test_x.py', 'from freespace_seg.nodes.msgs import grid_msg\n',
     'freespace_seg.nodes'),
    ('unit/tools/test_x.py', 'from support.ros import Harness\n', 'support.ros'),
    ('unit/perception/test_x.py', "rclpy = pytest.importorskip('rclpy')\n", 'rclpy'),
    ('unit/perception/test_x.py', 'def test_x(ros_init):\n    pass\n', 'fixture ros_init'),
    ('unit/nodes/test_x.py', 'import numpy\n', 'mirrors the package'),
    ('test_x.py', 'import numpy\n', 'under test/unit/<room>/ or test/ros/'),
])
def test_the_location_checker_catches_a_break(name, source, expected):
    problem = location_problem(name, source)
    assert problem and expected in problem, problem


def test_the_unit_conftest_refuses_a_planted_ros_test(tmp_path):
    # A copy of test/unit/ with its conftest and the support package, and one bad file.
    unit = tmp_path / 'test' / 'unit'
    (unit / 'ground').mkdir(parents=True)
    shutil.copy(os.path.join(TEST_DIR, 'unit', 'conftest.py'), unit / 'conftest.py')
    shutil.copytree(os.path.join(TEST_DIR, 'support'), tmp_path / 'test' / 'support')
    (tmp_path / 'test' / 'conftest.py').write_text(
        'import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n')
    (unit / 'ground' / 'test_fine.py').write_text('def test_fine():\n    assert True\n')
    cmd = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', str(tmp_path / 'test')]
    ok = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (unit / 'ground' / 'test_bad.py').write_text(
        'def test_bad():\n    import rclpy\n    assert rclpy\n')
    bad = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    assert 'ground/test_bad.py uses rclpy' in bad.stdout + bad.stderr, bad.stdout + bad.stderr


@pytest.mark.parametrize('name, source', [
    ('unit/ground/test_x.py', 'import numpy\nfrom freespace_seg.ground import grid\n'),
    ('unit/test_x.py', 'import subprocess\n'),
    ('ros/nodes/test_x.py', 'import rclpy\n'),
    ('ros/test_x.py', 'def test_x(ros_init):\n    pass\n'),
    ('support/ros.py', 'import rclpy\n'),
])
def test_the_location_checker_allows_what_the_rules_allow(name, source):
    assert location_problem(name, source) is None


@pytest.mark.parametrize('source, expected', [
    ('from conftest import write_tiny_model\n', 'imports conftest'),
    ('import conftest\n', 'imports conftest'),
    ('import os, conftest\n', 'imports conftest'),
    ('def test_x():\n    from conftest import REPO\n', 'imports conftest'),
    ('def test_x(rig):\n    assert rig.node._wanted(rig.node.pub)\n', 'rig.node._wanted'),
    ('def f(node):\n    return node._pubs\n', 'node._pubs'),
    ('def f(seg_node):\n    return seg_node._slot\n', 'seg_node._slot'),
    ('def f(driver2):\n    return driver2._e_stop\n', 'driver2._e_stop'),
    ('def f(sim):\n    sim._on_cmd(None)\n', 'sim._on_cmd'),
    ('def f(cam):\n    return cam._timer\n', 'cam._timer'),
    ('def f(n):\n    return n._output_pubs\n', 'n._output_pubs'),
    ('def f(h):\n    return h.nodes[0]._workers\n', '_workers'),
    ('def f(node):\n    return node._state_machine\n', 'node._state_machine'),
])
def test_the_test_checker_catches_a_break(source, expected):
    found = suite_problems('test_x.py', source, node_private_names())
    assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize('source', [
    'from support import write_tiny_model\n',
    'from support.ros import Harness\n',
    'import conftest_helpers\n',
    'def f(node):\n    return node.wants("free_space/grid"), node.__class__\n',
    'class Rig:\n    def go(self):\n        self._grid_timer = self._send()\n',
    'def f(model):\n    return model.encoder._conv_stem\n',
    'def f(prune):\n    return prune._cache_record\n',
    'def f(nodes):\n    return nodes._x\n',
])
def test_the_test_checker_allows_what_the_rules_allow(source):
    assert suite_problems('test_x.py', source, node_private_names()) == []


def package_imports(module, source, known):
    """
    Return the modules of ``known`` that ``source`` (module ``module``) imports, anywhere.

    Names are dotted and relative to the package (``training.loop``); lazy imports inside
    functions count, and so does ``importlib.import_module('freespace_seg...')``. An import
    of a package's name (``from freespace_seg.training import loop``) counts as one of the
    module ``training.loop`` when that exists, else of the package ``training``.
    """
    found = set()
    base = module.split('.')

    def add(name):
        if name in known and name != module:
            found.add(name)

    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ''
            if node.level:
                name = '.'.join(['freespace_seg'] + base[:len(base) - node.level]
                                + ([name] if name else []))
            targets = [(name, [alias.name for alias in node.names])]
        elif isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'import_module' \
                and node.args and isinstance(node.args[0], ast.Constant):
            targets = [(str(node.args[0].value), None)]
        for name, names in targets:
            if name != 'freespace_seg' and not name.startswith('freespace_seg.'):
                continue
            rel = name[len('freespace_seg.'):] if name != 'freespace_seg' else ''
            for sub in names or [None]:
                full = f'{rel}.{sub}' if rel and sub else (sub or rel)
                if sub and full in known:
                    add(full)
                elif rel:
                    add(rel)
    return found


def import_cycles(graph):
    """Return the import cycles of ``graph`` ({module: set of modules}), each as a list."""
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = 'open'
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 'open':
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 'done'

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def module_graph(modules):
    """Return {module: modules of the package it imports} for (module, path) pairs."""
    modules = list(modules)
    known = {m for m, _ in modules}
    graph = {}
    for module, path in modules:
        with open(path, encoding='utf-8') as f:
            graph[module] = package_imports(module, f.read(), known)
    return graph


def test_no_import_cycle_among_the_package_modules():
    # A package's __init__ is left out: importing freespace_seg.x.y runs it first anyway.
    graph = module_graph((m, p) for m, p in package_modules()
                         if not p.endswith('__init__.py'))
    assert import_cycles(graph) == []


def test_the_cycle_check_catches_a_planted_cycle(tmp_path):
    (tmp_path / 'a.py').write_text('from freespace_seg.training import b\n')
    (tmp_path / 'b.py').write_text('def f():\n    from freespace_seg.training.a import g\n')
    (tmp_path / 'c.py').write_text('import freespace_seg.training.a\n')
    modules = [(f'training.{n}', str(tmp_path / f'{n}.py')) for n in 'abc']
    graph = module_graph(modules)
    assert graph == {'training.a': {'training.b'}, 'training.b': {'training.a'},
                     'training.c': {'training.a'}}
    assert import_cycles(graph) == [['training.a', 'training.b', 'training.a']]
    (tmp_path / 'b.py').write_text('import os\n')
    assert import_cycles(module_graph(modules)) == []
