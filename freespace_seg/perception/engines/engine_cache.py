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
The TensorRT engine cache: where engines live, when a cached one is stale, and safe writes.

Free of ROS and of TensorRT so that all of it is tested on any machine; the TensorRT backend
hands it two callables, ``build_fn() -> bytes`` and ``load_fn(bytes) -> engine``.

* Location: ``engine_file_path`` when given, else a per-user cache directory
  (``$XDG_CACHE_HOME/freespace_seg/engines``, else ``~/.cache/freespace_seg/engines``; never a
  shared ``/tmp`` path), with a file name that spells out what the engine was built for.
* Staleness: a JSON key file beside the engine (``<engine>.json``) records the full
  :class:`EngineKey` plus the engine's size and sha256. An engine is rebuilt, with the reason,
  when the key differs, a file is missing, unreadable or truncated, or ``load_fn`` fails.
* Safety: one exclusive ``flock`` on ``<engine>.lock`` around check, build and write, so two
  nodes starting together build once; every file is written to a temporary file in the same
  directory and moved into place with ``os.replace``, so no reader ever sees half a file.
"""

import contextlib
import dataclasses
import fcntl
import glob
import hashlib
import json
import os
import re
import tempfile
import time

from freespace_seg.perception.engines.base import EngineError

#: bump when the key file's meaning changes; older key files then read as stale
CACHE_FORMAT = 1
ENGINE_SUFFIX = '.engine'
_MIB = 1 << 20


class EngineCacheError(EngineError):
    """The engine cache cannot be used (no home directory, directory not writable, ...)."""


def default_cache_root(environ=None):
    """
    Return the per-user cache root of this package, ``<XDG cache>/freespace_seg``.

    ``$XDG_CACHE_HOME`` is used when set to an absolute path (the XDG spec says to ignore a
    relative one), else ``$HOME/.cache``. There is deliberately no fallback to ``/tmp``.
    """
    env = os.environ if environ is None else environ
    xdg = env.get('XDG_CACHE_HOME', '')
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, 'freespace_seg')
    home = env.get('HOME') or (os.path.expanduser('~') if environ is None else '')
    if not home or not os.path.isabs(home):
        raise EngineCacheError('no per-user cache directory: neither XDG_CACHE_HOME nor HOME '
                               'is an absolute path; set engine_file_path')
    return os.path.join(home, '.cache', 'freespace_seg')


def default_engine_dir(environ=None):
    """Directory of the TensorRT backend's engines."""
    return os.path.join(default_cache_root(environ), 'engines')


def ort_tensorrt_cache_dir(environ=None):
    """Directory of ONNX Runtime's TensorRT execution provider engine and timing caches."""
    return os.path.join(default_cache_root(environ), 'onnxruntime_tensorrt')


def file_sha256(path, chunk_size=_MIB):
    """Hex sha256 of a file's contents."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(chunk_size), b''):
            digest.update(chunk)
    return digest.hexdigest()


def _slug(text):
    return re.sub(r'[^a-z0-9._]+', '-', str(text).lower()).strip('-.') or 'unknown'


@dataclasses.dataclass(frozen=True)
class EngineKey:
    """Everything a serialized TensorRT engine depends on; equal keys mean reusable engines."""

    model_sha256: str
    tensorrt_version: str
    gpu_name: str
    compute_capability: str          # e.g. '8.7'
    fp16: bool
    int8: bool
    max_workspace_size: int          # bytes
    dla_core: int = -1               # -1: GPU only
    input_shape: tuple = ()          # the card's input shape (fixes dynamic dimensions)
    cache_format: int = CACHE_FORMAT

    def as_dict(self):
        d = dataclasses.asdict(self)
        d['input_shape'] = list(self.input_shape)
        return d

    @classmethod
    def from_dict(cls, data):
        """Rebuild a key from :meth:`as_dict` output; ValueError/TypeError/KeyError if bad."""
        if not isinstance(data, dict):
            raise TypeError('the key must be a mapping')
        names = {f.name for f in dataclasses.fields(cls)}
        missing = names - set(data)
        if missing:
            raise KeyError(f'key fields missing: {sorted(missing)}')
        values = {n: data[n] for n in names}
        values['input_shape'] = tuple(values['input_shape'])
        return cls(**values)

    def differences(self, other):
        """List ``'field: mine -> other'`` for every field that differs."""
        out = []
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a != b:
                out.append(f'{f.name}: {a!r} -> {b!r}')
        return out

    @property
    def precision(self):
        """``fp32``, ``fp16``, ``int8`` or ``fp16-int8``."""
        parts = [p for p, on in (('fp16', self.fp16), ('int8', self.int8)) if on]
        return '-'.join(parts) or 'fp32'

    def file_name(self, model_name):
        """
        Return an engine file name that names what the engine was built for.

        e.g. ``freespace_unet-3f2a9c0d1e4b-trt10.3.0-orin-sm87-fp16-ws512m.engine``
        """
        ws = self.max_workspace_size
        ws_text = f'{ws // _MIB}m' if ws % _MIB == 0 else f'{ws}b'
        dla = f'-dla{self.dla_core}' if self.dla_core >= 0 else ''
        cc = str(self.compute_capability).replace('.', '')
        return (f'{_slug(model_name)}-{self.model_sha256[:12]}-trt{_slug(self.tensorrt_version)}'
                f'-{_slug(self.gpu_name)}-sm{_slug(cc)}-{self.precision}-ws{ws_text}{dla}'
                f'{ENGINE_SUFFIX}')


def default_engine_path(key, model_path, environ=None):
    """Engine path in the per-user cache for ``key`` and the model at ``model_path``."""
    stem = os.path.splitext(os.path.basename(model_path))[0]
    return os.path.join(default_engine_dir(environ), key.file_name(stem))


def _fsync_dir(directory):
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def temp_prefix(path):
    """Prefix of the temporary files :func:`atomic_write` makes for ``path``."""
    return '.' + os.path.basename(path) + '.'


def atomic_write(path, data):
    """
    Write ``data`` to ``path`` so that readers see the old file or the new one, never a part.

    ``data`` is a bytes-like object (TensorRT's serialized engine is one) or an iterable of
    bytes-like chunks. The bytes go to a temporary file in the same directory (so the final
    ``os.replace`` is an atomic rename on one file system), are flushed to disk, and the
    temporary file is removed if anything fails before the rename.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix='.tmp', dir=directory)
    try:
        with os.fdopen(fd, 'wb') as f:
            try:
                chunks = [memoryview(data)]
            except TypeError:
                chunks = data
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


@dataclasses.dataclass
class CacheResult:
    """What :meth:`EngineCache.get_or_build` did."""

    engine: object                  # what load_fn returned
    path: str
    built: bool                     # False: loaded from the cache
    reason: str = ''                # why it was (re)built, or '' when loaded
    verified: bool = True           # False: a user-supplied engine with no key file
    build_seconds: float = 0.0
    load_seconds: float = 0.0

    @property
    def notes(self):
        """One or two human-readable lines for the startup log and diagnostics."""
        if self.built:
            return [f'engine cache: built {self.path} in {self.build_seconds:.1f} s '
                    f'because {self.reason}']
        if not self.verified:
            return [f'engine cache: loaded {self.path} without a key file (built elsewhere, '
                    'e.g. by trtexec): not checked against the model file; set '
                    'force_engine_update to rebuild it']
        return [f'engine cache: loaded {self.path}']


class EngineCache:
    """
    One engine file, its key file and its lock.

    ``trust_unkeyed``: an engine file with no key file beside it is used (unverified) rather
    than rebuilt. Use it for an ``engine_file_path`` the user named, which may hold an engine
    built with trtexec; in the per-user cache every engine has a key file.
    """

    def __init__(self, engine_path, key, log=None, trust_unkeyed=False):
        self.path = os.path.abspath(os.path.expanduser(engine_path))
        self.key = key
        self.trust_unkeyed = trust_unkeyed
        self._log = log or (lambda message: None)

    @property
    def key_path(self):
        return self.path + '.json'

    @property
    def lock_path(self):
        return self.path + '.lock'

    def check(self):
        """
        Read the cached engine if it is usable for this key.

        Returns ``(data, reason, verified)``: ``data`` is the engine's bytes or None, with
        ``reason`` saying why it cannot be used; ``verified`` is False for an engine used
        without a key file.
        """
        try:
            with open(self.path, 'rb') as f:
                data = f.read()
        except FileNotFoundError:
            return None, 'there is no engine file yet', True
        except OSError as e:
            return None, f'the engine file is unreadable ({e})', True
        if not data:
            return None, 'the engine file is empty', True
        try:
            with open(self.key_path, 'r', encoding='utf-8') as f:
                meta = json.load(f)
        except FileNotFoundError:
            if self.trust_unkeyed:
                return data, '', False
            return None, f'the engine has no key file ({self.key_path})', True
        except (OSError, ValueError) as e:
            return None, f'the key file is unreadable ({e})', True
        try:
            cached = EngineKey.from_dict(meta['key'])
        except (KeyError, TypeError, ValueError) as e:
            return None, f'the key file is invalid ({e})', True
        diffs = cached.differences(self.key)
        if diffs:
            return None, 'the engine was built for something else: ' + '; '.join(diffs), True
        if meta.get('engine_size') != len(data):
            return None, (f'the engine file is truncated or was changed ({len(data)} bytes, '
                          f'the key file says {meta.get("engine_size")})'), True
        if meta.get('engine_sha256') != hashlib.sha256(data).hexdigest():
            return None, 'the engine file does not match its key file (sha256 differs)', True
        return data, '', True

    def write(self, data):
        """Write the engine and its key file, each atomically; the key file goes first."""
        view = memoryview(data)
        meta = {
            'key': self.key.as_dict(),
            'engine_size': view.nbytes,
            'engine_sha256': hashlib.sha256(view).hexdigest(),
            'created': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
            'writer': 'freespace_seg',
        }
        # Key file first: a crash between the two renames leaves a key whose sha256 does not
        # match the old engine (or no engine), which reads as stale, never as valid.
        atomic_write(self.key_path, json.dumps(meta, indent=1, sort_keys=True).encode())
        atomic_write(self.path, view)

    @contextlib.contextmanager
    def locked(self):
        """Hold the exclusive build lock; waits, with a log line, while another holds it."""
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise EngineCacheError(f'cannot open the lock file {self.lock_path}: {e}') from e
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._log(f'waiting for another process that holds {self.lock_path} '
                          '(probably building this engine)')
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)    # closing the only descriptor releases the flock

    def _remove_leftovers(self):
        # Only writers make temporary files, and writers hold the lock we hold now: any left
        # are from a process that died mid-write.
        for pattern in (temp_prefix(self.path) + '*.tmp', temp_prefix(self.key_path) + '*.tmp'):
            for leftover in glob.glob(os.path.join(glob.escape(os.path.dirname(self.path)),
                                                   pattern)):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)

    def get_or_build(self, build_fn, load_fn, force=False):
        """
        Load the cached engine, or build, store and load a new one; return a CacheResult.

        ``force`` (``force_engine_update``) rebuilds even a valid engine. A cached engine that
        ``load_fn`` rejects (any exception) is rebuilt; errors from ``build_fn`` and from
        loading a freshly built engine propagate.
        """
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise EngineCacheError(f'cannot create the engine directory {directory}: {e}') from e
        with self.locked():
            self._remove_leftovers()
            return self._get_or_build_locked(build_fn, load_fn, force)

    def _get_or_build_locked(self, build_fn, load_fn, force):
        if force:
            reason = 'force_engine_update is set'
        else:
            data, reason, verified = self.check()
            if data is not None:
                t0 = time.monotonic()
                try:
                    engine = load_fn(data)
                except Exception as e:  # noqa: B902 - any failure to load means rebuild
                    reason = f'the cached engine could not be loaded ({e})'
                else:
                    return CacheResult(engine, self.path, built=False, verified=verified,
                                       load_seconds=time.monotonic() - t0)
        self._log(f'building TensorRT engine {self.path} because {reason}; this can take '
                  'minutes')
        t0 = time.monotonic()
        data = build_fn()
        build_seconds = time.monotonic() - t0
        try:
            self.write(data)
        except OSError as e:
            raise EngineCacheError(f'cannot write the engine {self.path}: {e}') from e
        t0 = time.monotonic()
        engine = load_fn(data)
        return CacheResult(engine, self.path, built=True, reason=reason,
                           build_seconds=build_seconds, load_seconds=time.monotonic() - t0)
