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
The ``triton`` backend: the model runs on a KServe V2 inference server (Triton, MLServer).

The client is ``tritonclient.grpc``, used at the V2 protocol level only (health, model
metadata and config, infer), so it talks to NVIDIA Triton and to ``python -m freespace_seg
serve`` alike. ``model_file_path`` still names the model whose card describes the input and
output; at startup the server's model must be ready and agree with the card on names, shapes
and dtypes, else :class:`EngineError` names both sides. ``auto`` never picks this backend.

While running, a failed request raises :class:`EngineError` (the node counts the frame as
failed); the next requests within a backoff window (doubling from 0.1 s to 2 s) fail at once
without touching the network, then one request tries the server again. gRPC reconnects by
itself, so the engine recovers as soon as the server answers. Each call's server round trip
is kept in :attr:`TritonEngine.round_trips` for the node's diagnostics.

With ``triton_shared_memory`` the tensors travel through two POSIX shared-memory regions
(``/dev/shm``) that the engine creates and registers with the server
(:class:`SystemSharedMemory`); only the request header goes over gRPC. That needs the server
on the same host (it maps the regions by name). A restarted server has forgotten them: after
a failed request they are registered again before the next one. :meth:`TritonEngine.close`
unregisters and unlinks them.
"""

import collections
import os
import time
import uuid

from freespace_seg.perception.engines.base import BackendUnavailable, Engine, EngineError
import numpy as np

#: V2 datatype -> the card's dtype name
V2_DTYPES = {'FP32': 'float32', 'FP16': 'float16', 'UINT8': 'uint8'}
#: card dtype -> V2 datatype
CARD_TO_V2 = {v: k for k, v in V2_DTYPES.items()}
BACKOFF_MIN_S = 0.1
BACKOFF_MAX_S = 2.0


def check_against_card(card, metadata, max_batch_size, where):
    """
    Compare the server's model metadata with the card; raise :class:`EngineError` if they differ.

    ``metadata`` is the V2 model metadata as a dict (``inputs``/``outputs`` with ``name``,
    ``datatype``, ``shape``); shapes there include the batch dimension (-1 when batched).
    """
    inputs = {t['name']: t for t in metadata.get('inputs', [])}
    outputs = {t['name']: t for t in metadata.get('outputs', [])}
    if card.input_name not in inputs:
        raise EngineError(f"{where} has no input {card.input_name!r} (the card's input.name, "
                          f'{card.path}); the server model has inputs {sorted(inputs)}')
    if card.output_name not in outputs:
        raise EngineError(f"{where} has no output {card.output_name!r} (the card's "
                          f'output.name, {card.path}); the server model has outputs '
                          f'{sorted(outputs)}')
    inp = inputs[card.input_name]
    dtype = V2_DTYPES.get(inp['datatype'], inp['datatype'])
    if dtype != card.dtype:
        raise EngineError(f'{where} input {inp["name"]!r} is {inp["datatype"]} ({dtype}); the '
                          f'card {card.path} says {card.dtype}')
    shape = [int(d) for d in inp['shape']]
    expected = list(card.input_shape)
    ok = len(shape) == len(expected) and all(
        s in (-1, e) if i == 0 else s == e for i, (s, e) in enumerate(zip(shape, expected)))
    if not ok:
        raise EngineError(f'{where} input {inp["name"]!r} has shape {shape}; the card '
                          f'{card.path} says {expected}')
    out = outputs[card.output_name]
    oshape = [int(d) for d in out['shape']]
    if card.output_kind != 'argmax' and len(oshape) == 4:
        channels = oshape[1] if card.output_layout == 'NCHW' else oshape[3]
        if channels not in (-1, 1, card.num_classes):
            raise EngineError(f'{where} output {out["name"]!r} has shape {oshape} '
                              f'({channels} channels); the card {card.path} lists '
                              f'{card.num_classes} classes')


class TritonEngine(Engine):
    """
    A model on a V2 inference server, reached over gRPC with ``tritonclient``.

    Options (node parameter names): ``triton_url`` (``host:port`` of the gRPC endpoint;
    default ``$FREESPACE_SEG_TRITON_URL``, else ``localhost:8001``: how ``infer``, ``bag``,
    ``eval`` and ``bench --backend triton`` find the server),
    ``triton_model_name`` (default: the card's ``name``), ``triton_model_version`` (empty:
    the server's choice), ``triton_timeout`` (seconds per request), ``triton_shared_memory``
    (tensors through system shared memory; the server must be on this host).
    """

    backend = 'triton'

    def __init__(self, card, num_threads=0, **options):
        super().__init__()
        try:
            import tritonclient.grpc as grpcclient
            from tritonclient.utils import InferenceServerException
        except (ImportError, RuntimeError) as e:
            raise BackendUnavailable(f'tritonclient[grpc] is not importable ({e}); pip install '
                                     "'tritonclient[grpc]'") from e
        self._grpc = grpcclient
        self._server_error = InferenceServerException
        self.url = (options.get('triton_url') or os.environ.get('FREESPACE_SEG_TRITON_URL')
                    or 'localhost:8001')
        self.model = options.get('triton_model_name') or card.name
        self.version = str(options.get('triton_model_version') or '')
        self.timeout = float(options.get('triton_timeout') or 1.0)
        where = f'model {self.model!r}' + (f' version {self.version}' if self.version else '') \
            + f' on the server at {self.url}'
        try:
            self._client = grpcclient.InferenceServerClient(self.url)
        except Exception as e:  # noqa: B902 - grpc raises several types for a bad URL
            raise EngineError(f'cannot connect to the inference server at {self.url}: {e}') \
                from e
        try:
            live = self._client.is_server_live(client_timeout=self.timeout)
        except InferenceServerException as e:
            self.close()
            raise EngineError(f'inference server at {self.url} is unreachable: '
                              f'{_reason(e)} (is it running? python -m freespace_seg serve '
                              'starts one)') from e
        if not live:
            self.close()
            raise EngineError(f'inference server at {self.url} is not live')
        try:
            ready = self._client.is_model_ready(self.model, self.version,
                                                client_timeout=self.timeout)
        except InferenceServerException as e:
            ready, why = False, _reason(e)
        else:
            why = ''
        if not ready:
            models = self._model_names()
            self.close()
            raise EngineError(f'{where} is not ready{": " + why if why else ""}; the server '
                              f'has {", ".join(models) or "no models"} (set '
                              'triton_model_name)')
        try:
            meta = self._client.get_model_metadata(self.model, self.version, as_json=True,
                                                   client_timeout=self.timeout)
            config = self._client.get_model_config(self.model, self.version, as_json=True,
                                                   client_timeout=self.timeout)
        except InferenceServerException as e:
            self.close()
            raise EngineError(f'cannot read the metadata of {where}: {_reason(e)}') from e
        max_batch = int(config.get('config', {}).get('max_batch_size', 0) or 0)
        try:
            check_against_card(card, meta, max_batch, where)
        except EngineError:
            self.close()
            raise
        self._input = card.input_name
        self._output = card.output_name
        self._datatype = CARD_TO_V2[card.dtype]
        self._shape = list(card.input_shape)
        #: the shared-memory regions (None: tensors go over gRPC)
        self.shm = None
        if options.get('triton_shared_memory'):
            try:
                self.shm = SystemSharedMemory(self._client, self.url, card, meta, self.timeout,
                                              self._server_error)
                self.shm.register()
            except EngineError:
                self.close()
                raise
        self.devices = [f'{meta.get("platform") or "server"} at {self.url}']
        self.notes.append(f'server model {self.model} '
                          f'{"version " + self.version if self.version else ""} '
                          f'(max_batch_size {max_batch}) at {self.url}'.replace('  ', ' '))
        if self.shm is not None:
            self.notes.append(f'tensors through system shared memory {self.shm.describe()}')
        #: seconds of each recent server round trip (request sent to response decoded)
        self.round_trips = collections.deque(maxlen=300)
        #: why the last request failed; empty while the server answers
        self.server_error = ''
        self.failed_requests = 0
        self._backoff = 0.0
        self._retry_at = 0.0

    def _model_names(self):
        try:
            index = self._client.get_model_repository_index(as_json=True,
                                                            client_timeout=self.timeout)
        except self._server_error:
            return []
        return sorted(m['name'] for m in index.get('models', []))

    def run(self, tensor):
        """Send one input tensor to the server and return the output array."""
        if self._client is None:
            raise EngineError('engine is closed')
        now = time.monotonic()
        if now < self._retry_at:
            raise EngineError(f'inference server at {self.url} unavailable ({self.server_error}); '
                              f'retrying in {self._retry_at - now:.1f} s')
        request = self._grpc.InferInput(self._input, self._shape, self._datatype)
        wanted = self._grpc.InferRequestedOutput(self._output)
        t0 = time.perf_counter()
        try:
            if self.shm is None:
                request.set_data_from_numpy(tensor)
            else:
                self.shm.prepare(request, wanted, tensor)
            result = self._client.infer(self.model, [request], model_version=self.version,
                                        outputs=[wanted], client_timeout=self.timeout)
            output = result.as_numpy(self._output) if self.shm is None else \
                self.shm.output(result.get_output(self._output))
        except (self._server_error, EngineError) as e:
            if self.shm is not None:
                self.shm.registered = False   # a restarted server has forgotten the regions
            self.failed_requests += 1
            self.server_error = _reason(e)
            self._backoff = min(BACKOFF_MAX_S, max(BACKOFF_MIN_S, 2 * self._backoff))
            self._retry_at = time.monotonic() + self._backoff
            raise EngineError(f'inference server at {self.url}: {self.server_error}') from e
        self.round_trips.append(time.perf_counter() - t0)
        self.server_error = ''
        self._backoff = 0.0
        self._retry_at = 0.0
        if output is None:
            raise EngineError(f'the server returned no output {self._output!r}')
        return output

    def close(self):
        shm, self.shm = getattr(self, 'shm', None), None
        if shm is not None:
            shm.close()
        client, self._client = getattr(self, '_client', None), None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: B902 - closing a broken channel must not raise
                pass


class SystemSharedMemory:
    """
    The input and output regions of one engine in POSIX shared memory, registered with a server.

    Names are unique per engine (``freespace_<pid>_<random>_in`` / ``_out``, keys under
    ``/dev/shm``). The output region is sized from the server's output shape (batch as the
    card's); a model whose output shape is not fixed cannot use it (:class:`EngineError`).
    """

    def __init__(self, client, url, card, metadata, timeout, server_error):
        try:
            import tritonclient.utils.shared_memory as shm
            from tritonclient.utils import triton_to_np_dtype
        except (ImportError, RuntimeError) as e:
            raise EngineError(f'triton_shared_memory: tritonclient.utils.shared_memory is not '
                              f'importable ({e})') from e
        self._lib = shm
        self._client = client
        self._timeout = timeout
        self._server_error = server_error
        self.url = url
        out = {t['name']: t for t in metadata.get('outputs', [])}[card.output_name]
        shape = [int(d) for d in out['shape']]
        if shape and shape[0] == -1:
            shape[0] = int(card.input_shape[0])
        if any(d < 0 for d in shape):
            raise EngineError(f'triton_shared_memory: the server output {card.output_name!r} '
                              f'has shape {out["shape"]}, not fixed, so no region can be sized '
                              'for it; set triton_shared_memory false')
        self.out_dtype = np.dtype(triton_to_np_dtype(out['datatype']))
        self.out_shape = shape
        self.in_bytes = int(np.prod(card.input_shape)) * np.dtype(card.dtype).itemsize
        self.out_bytes = int(np.prod(shape)) * self.out_dtype.itemsize
        tag = f'freespace_{os.getpid()}_{uuid.uuid4().hex[:8]}'
        self.names = {'in': tag + '_in', 'out': tag + '_out'}
        self.keys = {k: '/' + v for k, v in self.names.items()}
        self._handles = {}
        try:
            for part, size in (('in', self.in_bytes), ('out', self.out_bytes)):
                self._handles[part] = shm.create_shared_memory_region(
                    self.names[part], self.keys[part], size, create_only=True)
        except shm.SharedMemoryException as e:
            self.close()
            raise EngineError(f'triton_shared_memory: cannot create {self.keys} in /dev/shm: '
                              f'{e.__cause__ or e}') from e
        self.registered = False

    def describe(self):
        return (f'{self.keys["in"]} ({self.in_bytes} B) and {self.keys["out"]} '
                f'({self.out_bytes} B)')

    def register(self):
        """Register both regions with the server (dropping stale registrations of the names)."""
        for part, size in (('in', self.in_bytes), ('out', self.out_bytes)):
            try:
                self._client.unregister_system_shared_memory(self.names[part],
                                                             client_timeout=self._timeout)
                self._client.register_system_shared_memory(self.names[part], self.keys[part],
                                                           size, client_timeout=self._timeout)
            except self._server_error as e:
                raise EngineError(f'triton_shared_memory: the server at {self.url} cannot map '
                                  f'{self.keys[part]}: {_reason(e)} (the server must run on '
                                  'this host and see its /dev/shm; else set '
                                  'triton_shared_memory false)') from e
        self.registered = True

    def prepare(self, request, wanted, tensor):
        """Copy ``tensor`` into the input region and point the request and output at them."""
        if not self.registered:
            self.register()
        if tensor.nbytes != self.in_bytes:
            raise EngineError(f'input of {tensor.nbytes} B does not fit the {self.in_bytes} B '
                              'shared-memory region')
        self._lib.set_shared_memory_region(self._handles['in'], [tensor])
        request.set_shared_memory(self.names['in'], self.in_bytes)
        wanted.set_shared_memory(self.names['out'], self.out_bytes)

    def output(self, meta):
        """Return a copy of the output region, shaped as the response says."""
        shape = [int(d) for d in meta.shape] if meta is not None else self.out_shape
        view = self._lib.get_contents_as_numpy(self._handles['out'], self.out_dtype, shape)
        return np.array(view, copy=True)   # the next request overwrites the region

    def close(self):
        """Unregister the regions (if the server still answers) and unlink them."""
        if self.registered:
            for name in self.names.values():
                try:
                    self._client.unregister_system_shared_memory(name, client_timeout=1.0)
                except Exception:  # noqa: B902 - a lost server has nothing to unregister
                    pass
            self.registered = False
        handles, self._handles = self._handles, {}
        for handle in handles.values():
            try:
                self._lib.destroy_shared_memory_region(handle)
            except (self._lib.SharedMemoryException, OSError):
                pass   # already gone (removed by hand, or by the resource tracker)


def model_statistics(url, model, timeout=10.0):
    """
    Return the server's counters of ``model`` (all versions): a dict for :func:`stats_delta`.

    ``requests`` (successful inference requests), ``failed``, ``executions`` (model runs:
    one per batch), ``batches`` (batch size -> executions), ``queue_s`` and
    ``compute_infer_s`` (summed over requests) and ``compute_infer_by_batch_s``. Read with
    the V2 statistics extension (``tritonclient.grpc``).
    """
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        stats = client.get_inference_statistics(model, as_json=True, client_timeout=timeout)
    finally:
        client.close()
    out = {'requests': 0, 'failed': 0, 'executions': 0, 'batches': {}, 'queue_s': 0.0,
           'compute_infer_s': 0.0, 'compute_infer_by_batch_s': {}}
    for m in stats.get('model_stats', []):
        inf = m.get('inference_stats', {})
        out['requests'] += int(inf.get('success', {}).get('count', 0))
        out['failed'] += int(inf.get('fail', {}).get('count', 0))
        out['executions'] += int(m.get('execution_count', 0))
        out['queue_s'] += int(inf.get('queue', {}).get('ns', 0)) * 1e-9
        out['compute_infer_s'] += int(inf.get('compute_infer', {}).get('ns', 0)) * 1e-9
        for b in m.get('batch_stats', []):
            size = int(b['batch_size'])
            out['batches'][size] = out['batches'].get(size, 0) + int(
                b.get('compute_infer', {}).get('count', 0))
            out['compute_infer_by_batch_s'][size] = out['compute_infer_by_batch_s'].get(
                size, 0.0) + int(b.get('compute_infer', {}).get('ns', 0)) * 1e-9
    return out


def stats_delta(before, after):
    """Return what :func:`model_statistics` counted between ``before`` and ``after``."""
    out = {}
    for key, value in after.items():
        if isinstance(value, dict):
            out[key] = {k: v - before[key].get(k, 0) for k, v in value.items()
                        if v - before[key].get(k, 0)}
        else:
            out[key] = value - before[key]
    return out


def _reason(error):
    """Return the short message of a tritonclient exception."""
    text = error.message() if hasattr(error, 'message') else str(error)
    status = error.status() if hasattr(error, 'status') else None
    return f'{status}: {text}' if status else str(text)
