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

"""Which frames a batch draws: uniform, or weighted towards the hard ones."""

import torch


class FrameSampler:
    """
    Which training frames each step uses.

    Without hard-frame mining (``hard_fraction`` 0) it walks shuffled passes over the frames,
    every frame once per pass, in the order the seed has always given. With ``hard_fraction``
    h in (0, 1), ``round(h * batch)`` frames of each batch (at least one, at most all but
    one) are drawn instead in proportion to each frame's last seen loss, without repeats in
    a batch; frames not seen yet count as the mean of those seen. The frames the model gets
    most wrong (a wall filling the view) then come back more often than once per pass, while
    the rest of each batch still walks the passes.
    """

    def __init__(self, n, gen, hard_fraction=0.0):
        if not 0.0 <= float(hard_fraction) < 1.0:
            raise ValueError(f'hard_fraction must be in [0, 1), got {hard_fraction}')
        if n < 1:
            raise ValueError('no training frames')
        self.n = int(n)
        self.gen = gen
        self.hard_fraction = float(hard_fraction)
        self.loss = torch.full((self.n,), float('nan'))
        self.order = torch.randperm(self.n, generator=gen)
        self.cursor = 0
        self.hard_drawn = 0

    def hard_count(self, batch_size):
        """Frames of a ``batch_size`` batch drawn by loss."""
        if not self.hard_fraction or batch_size < 2:
            return 0
        return min(batch_size - 1, max(1, int(round(self.hard_fraction * batch_size))))

    def weights(self):
        """Draw weights: the last loss of each frame, the mean seen loss for unseen ones."""
        seen = ~torch.isnan(self.loss)
        fill = float(self.loss[seen].mean()) if bool(seen.any()) else 1.0
        return torch.where(seen, self.loss, torch.full_like(self.loss, fill)).clamp_min(1e-6)

    def draw(self, batch_size):
        """Return the indices (a 1-D long tensor) of the next batch of ``batch_size`` frames."""
        k = self.hard_count(batch_size)
        m = batch_size - k
        if self.cursor + m > self.n:
            self.order = torch.randperm(self.n, generator=self.gen)
            self.cursor = 0
        idx = self.order[self.cursor:self.cursor + m]
        self.cursor += m
        if not k:
            return idx
        w = self.weights()
        w[idx] = 0.0
        hard = torch.multinomial(w, k, replacement=False, generator=self.gen)
        self.hard_drawn += k
        return torch.cat([idx, hard])

    def update(self, idx, losses):
        """Record the loss each frame of a batch just had (1-D, same order as ``idx``)."""
        self.loss[idx] = losses.detach().float().cpu()

    def state_dict(self):
        """Where the sampler is (the pass order, its cursor, the losses), for a resume."""
        return {'n': self.n, 'hard_fraction': self.hard_fraction, 'order': self.order.clone(),
                'cursor': self.cursor, 'loss': self.loss.clone(),
                'hard_drawn': self.hard_drawn}

    def load_state_dict(self, state):
        """Continue from :meth:`state_dict` of a sampler over the same frames."""
        if int(state['n']) != self.n or float(state['hard_fraction']) != self.hard_fraction:
            raise ValueError(f'sampler state is for {state["n"]} frames with hard fraction '
                             f'{state["hard_fraction"]}, not {self.n} and {self.hard_fraction}')
        self.order = state['order'].clone()
        self.cursor = int(state['cursor'])
        self.loss = state['loss'].clone()
        self.hard_drawn = int(state['hard_drawn'])
