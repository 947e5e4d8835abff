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
The typed errors of training/: unusable input, with a message that says what to fix.

Library functions raise them; only a command's ``run`` turns one into an exit status
(``SystemExit`` with the message, or a printed error and exit code 2), so the functions stay
usable from other code and from tests.
"""


class TrainingError(ValueError):
    """Unusable input (options, data, models); the message says what to fix."""


class TrainError(TrainingError):
    """Unusable ``train`` options or data; ``train`` exits with ``train: <message>``."""


class EvalError(TrainingError):
    """Unusable ``eval`` options or data; ``eval`` exits with ``eval: <message>``."""


class RebuildError(TrainingError):
    """An ONNX model that cannot be rebuilt in torch (not this package's float UNet)."""


class FinetuneError(TrainingError):
    """Unusable ``finetune`` input (images, masks, options)."""


class PruneError(TrainingError):
    """Unusable ``prune`` input (model, options, data)."""


class TradeoffError(TrainingError):
    """Unusable ``tradeoff`` options or models."""
