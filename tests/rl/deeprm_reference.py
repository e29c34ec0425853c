"""DeepRM's environment as it was before its kernels (``rl/_deeprm_kernels.py``): Best-Fit's
ranking through the placement framework, the observation and the penalties in plain numpy. The
reference ``test_deeprm_kernels.py`` checks the compiled step against, bit for bit."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.placement.framework import CycleState, build_placer
from reclaim.rl.deeprm import DeepRMEnv
from reclaim.types import RESOURCES


class ReferenceDeepRMEnv(DeepRMEnv):
    """:class:`DeepRMEnv` with the numpy ranking, observation and penalties."""

    def reset(self, rng: np.random.Generator, sequence=None):
        self._placer = build_placer("best-fit")
        return super().reset(rng, sequence)

    def _hosts(self) -> tuple[NDArray[np.int32], int]:
        """One ranking for all slots (each alone against the current free units), cached until
        the state changes: the mask and the step both ask."""
        replay = self.replay
        key = (replay.now, len(replay.queue), int((replay.host_ >= 0).sum()))
        if self._cache[0] != key:
            out = np.full(self.queue_slots, -1, np.int32)
            head = replay.queue[: self.queue_slots]
            if head:
                state = CycleState(replay.capacity_, replay.free(), replay.up_, replay.demand(head))
                feasible, levels = self._placer.rank(state)
                best = np.where(feasible, levels[0], -np.inf).argmax(axis=1)  # ties: lowest index
                out[: len(head)] = np.where(feasible.any(axis=1), best, -1)
            self._cache = (key, out, int((out >= 0).sum()))
        return self._cache[1:]

    def observe(self) -> NDArray[np.float32]:
        replay, spec, seq = self.replay, self.spec, self.sequence
        ends = replay.start_ + seq.usage.lengths
        placed = replay.host_ >= 0
        k = replay.now + np.arange(self.history)
        running = placed[None, :] & (ends[None, :] > k[:, None])  # (h, n), started by now
        reserved = running.astype(np.float64) @ replay.peak_.astype(np.float64)  # (h, R)
        width = spec.machines * spec.units
        image = np.arange(width)[None, None, :] < reserved.T[:, :, None]  # (R, h, M C)
        slots = np.zeros((self.queue_slots, len(RESOURCES) + 1))
        head = replay.queue[: self.queue_slots]
        if head:
            slots[: len(head), :-1] = replay.demand(head) / spec.units
            slots[: len(head), -1] = np.minimum(seq.usage.lengths[head] / self.history, 1.0)
        backlog = min(max(len(replay.queue) - self.queue_slots, 0) / max(len(seq), 1), 1.0)
        return np.concatenate([image.ravel(), slots.ravel(), [backlog]]).astype(np.float32)

    def _charge(self, stop: int) -> float:
        first = self._charged
        if stop <= first:
            return 0.0
        self._charged = stop
        replay, seq = self.replay, self.sequence
        t = np.arange(first, stop)[:, None]
        lengths = seq.usage.lengths
        ends = np.where(replay.host_ >= 0, replay.start_ + lengths, np.iinfo(np.int64).max)
        in_system = (seq.arrival[None, :] <= t) & (ends[None, :] > t)
        slowdown = (in_system / lengths[None, :]).sum()
        running = (replay.host_ >= 0)[None, :] & (replay.start_[None, :] <= t) & in_system
        reserved = running.astype(np.float64) @ replay.peak_.astype(np.float64)  # (T, R)
        width = self.spec.machines * self.spec.units
        return float(slowdown + self.underuse * ((width - reserved) / width).sum())
