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
"""

import collections
import os
import time

from freespace_seg.perception.engines.base import BackendUnavailable, Engine, EngineError

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
    the server's choice), ``triton_timeout`` (seconds per request).
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
        self.devices = [f'{meta.get("platform") or "server"} at {self.url}']
        self.notes.append(f'server model {self.model} '
                          f'{"version " + self.version if self.version else ""} '
                          f'(max_batch_size {max_batch}) at {self.url}'.replace('  ', ' '))
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
        request.set_data_from_numpy(tensor)
        t0 = time.perf_counter()
        try:
            result = self._client.infer(self.model, [request], model_version=self.version,
                                        outputs=[self._grpc.InferRequestedOutput(self._output)],
                                        client_timeout=self.timeout)
            output = result.as_numpy(self._output)
        except self._server_error as e:
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
        client, self._client = getattr(self, '_client', None), None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: B902 - closing a broken channel must not raise
                pass


def _reason(error):
    """Return the short message of a tritonclient exception."""
    text = error.message() if hasattr(error, 'message') else str(error)
    status = error.status() if hasattr(error, 'status') else None
    return f'{status}: {text}' if status else str(text)
