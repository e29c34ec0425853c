"""DeepRM (Mao et al. 2016) as TVW-RL configured it: a learned job selector feeding Best-Fit.

- Inputs: a workload asks for its peak usage (the replay's ``peak`` view), so machines are never
  over-committed.
- State (DeepRM's: resource images of the cluster and of the job slots): the cluster as one
  monolithic machine of M x C units per resource; per resource an h x (M C) image of the units
  reserved over the next h steps (residents' peaks until they end: DeepRM knows durations), then
  ``queue_slots`` job slots, each per resource an h x C image of the job's request (its peak)
  over its duration (rows 0..duration-1, capped at h), and the backlog (/ jobs).
  ``slot_images=False``: each slot as two numbers, peak / C per resource and duration / h (the
  earlier state, which the shipped selector was trained in; its settings record which).
- Actions: pick slot i (Best-Fit places that workload: the feasible machine with the least free
  units of its dominant resource) or hold (the last action): the clock runs to the next arrival or
  departure. A slot is masked when empty or when its workload fits no machine; when no slot is
  placeable the clock runs on its own.
- Reward per step: DeepRM's slowdown penalty, minus the sum over workloads in the system (waiting
  or running) of 1 / duration, and the extra under-utilisation penalty TVW-RL added: ``underuse``
  x the unreserved units of the cluster / (M C), summed over resources.

Trained with the same REINFORCE (``rl.reinforce``); placed by :func:`run_deeprm` with the numpy
policy. Registered as the placement plugin ``deeprm``: Best-Fit's score, with the selector that
:func:`run_deeprm` consults.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.types import RESOURCES
from reclaim.errors import ReclaimError
from reclaim.placement.framework import CycleState, Placer, build_placer
from reclaim.placement.plugins.best_fit import BestFit
from reclaim.registry import register
from reclaim.rl import _deeprm_kernels
from reclaim.rl.policy import LinearPolicy
from reclaim.tvw.pool import Pool
from reclaim.tvw.replay import Replay, ReplayResult
from reclaim.tvw.scenario import ScenarioSpec, Sequence, sample_sequence

#: The DeepRM selector shipped beside the TVW-RL policy.
SHIPPED = "deeprm_policy.npz"


@dataclass
class DeepRMEnv:
    """Settings only (as :class:`reclaim.rl.env.PlacementEnv`); ``reset`` starts a sequence.

    The step's Best-Fit ranking, observation and penalties are numba kernels
    (``rl/_deeprm_kernels.py``); :class:`ReferenceDeepRMEnv` keeps the numpy reference.
    """

    pools: list[Pool] = field(default_factory=list)
    spec: ScenarioSpec = field(default_factory=ScenarioSpec)
    load: float = 0.5
    history: int = 20
    queue_slots: int = 5
    underuse: float = 1.0
    max_decisions: int = 10  # per workload: a policy that only holds is cut off (truncated)
    slot_images: bool = True

    @property
    def actions(self) -> int:
        return self.queue_slots + 1

    @property
    def slot_size(self) -> int:
        """Observation entries per job slot."""
        if self.slot_images:
            return len(RESOURCES) * self.history * self.spec.units
        return len(RESOURCES) + 1

    @property
    def obs_size(self) -> int:
        cluster = len(RESOURCES) * self.history * self.spec.machines * self.spec.units
        return cluster + self.queue_slots * self.slot_size + 1

    def reset(self, rng: np.random.Generator, sequence: Sequence | None = None):
        if sequence is None:
            if not self.pools:
                raise ReclaimError("the environment has no pool to draw sequences from")
            pool = self.pools[int(rng.integers(len(self.pools)))]
            sequence = sample_sequence(pool, self.spec, self.load, rng, rng)
        self.sequence = sequence
        self.replay = Replay.of(sequence, self.spec, "peak")
        self._lengths = sequence.usage.lengths
        self._charged, self._decisions = 0, 0
        self._cache = (None, None, 0)
        self._settle()
        return self.observe(), {"action_mask": self.mask()}

    def _hosts(self) -> tuple[NDArray[np.int32], int]:
        """(queue_slots,) Best-Fit's machine for each slot's workload (each alone against the
        current free units), -1 if none or empty; and how many slots are placeable.

        Cached per state (a bind shortens the queue, an advance moves the clock): the step, the
        clock and the mask all ask.
        """
        replay = self.replay
        # at a given now the queue only shrinks (arrivals come only with advance()): the key is exact
        key = (replay.now, len(replay.queue))
        if self._cache[0] != key:
            out = np.empty(self.queue_slots, np.int32)
            head = np.array(replay.queue[: self.queue_slots], np.int64)
            # Speed trick: one compiled call instead of the placement framework's ranking
            # (rl/_deeprm_kernels.py, benchmarks/bench_rl.py).
            placeable = _deeprm_kernels.slot_hosts(
                replay.capacity_, replay.free(), replay.up_, replay.peak_, head, out
            )
            self._cache = (key, out, placeable)
        return self._cache[1:]

    def mask(self) -> NDArray[np.bool_]:
        """(slots + 1,) placeable slots, and hold (always allowed)."""
        mask = np.ones(self.actions, bool)
        mask[:-1] = self._hosts()[0] >= 0
        return mask

    def step(self, action: int):
        replay = self.replay
        if replay.done:
            raise ReclaimError("the episode is over; call reset")
        self._decisions += 1
        hosts = self._hosts()[0]
        reward = 0.0
        if action < self.queue_slots and hosts[action] >= 0:
            replay.bind(replay.queue[action], int(hosts[action]))
        else:
            replay.advance()
            reward -= self._charge(replay.now)
        reward -= self._settle()
        truncated = self._decisions >= self.max_decisions * len(self.sequence)
        return self.observe(), reward, replay.done, truncated, {"action_mask": self.mask()}

    def observe(self) -> NDArray[np.float32]:
        replay = self.replay
        head = np.array(replay.queue[: self.queue_slots], np.int64)
        backlog = min(
            max(len(replay.queue) - self.queue_slots, 0) / max(len(self.sequence), 1), 1.0
        )
        out = np.empty(self.obs_size, np.float32)
        _deeprm_kernels.observation(
            replay.peak_,
            replay.host_,
            replay.start_,
            self._lengths,
            replay.now,
            self.history,
            self.spec.units,
            self.spec.machines * self.spec.units,
            head,
            self.slot_images,
            backlog,
            out,
        )
        return out

    def _settle(self) -> float:
        """Run the clock while nothing is placeable; once all are placed, charge the rest."""
        replay, penalty = self.replay, 0.0
        while not replay.done:
            if self._hosts()[1]:
                return penalty
            replay.advance()
            penalty += self._charge(replay.now)
        ends = replay.start_ + self._lengths
        return penalty + self._charge(int(ends.max()) if len(ends) else 0)

    def _charge(self, stop: int) -> float:
        """Slowdown and unreserved-capacity penalties of steps [charged, stop)."""
        first = self._charged
        if stop <= first:
            return 0.0
        self._charged = stop
        replay = self.replay
        slowdown, unreserved = _deeprm_kernels.charge(
            first,
            stop,
            self.sequence.arrival,
            replay.host_,
            replay.start_,
            self._lengths,
            replay.peak_,
            self.spec.machines * self.spec.units,
        )
        return float(slowdown + self.underuse * unreserved)


class ReferenceDeepRMEnv(DeepRMEnv):
    """:class:`DeepRMEnv` in plain numpy (Best-Fit's ranking through the placement framework, no
    compiled kernels): the reference its kernels are tested against, bit for bit
    (``tests/rl/test_deeprm_kernels.py``)."""

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
        head = replay.queue[: self.queue_slots]
        if self.slot_images:
            slots = np.zeros((self.queue_slots, len(RESOURCES), self.history, spec.units))
            for s, j in enumerate(head):
                rows = min(int(seq.usage.lengths[j]), self.history)
                for r in range(len(RESOURCES)):
                    slots[s, r, :rows, : min(int(replay.peak_[j, r]), spec.units)] = 1.0
        else:
            slots = np.zeros((self.queue_slots, len(RESOURCES) + 1))
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


@register("placement", "deeprm")
class DeepRM(BestFit):
    """Best-Fit's score; ``select`` is DeepRM's learned choice of which waiting workload to place
    next (``path``: a saved selector, default the shipped one), used by :func:`run_deeprm`."""

    # stateful: its selection needs DeepRM's state, so it runs through run_deeprm
    __capabilities__ = PlacementCapabilities(stateful=True, selects=True)

    def __init__(self, path: str | None = None) -> None:
        self.path = path

    def select(self, obs: NDArray, mask: NDArray[np.bool_]) -> int:
        if not hasattr(self, "policy_"):
            self.policy_ = LinearPolicy.load(self.path or _shipped())
        return int(self.policy_.act(obs[None, :], mask[None, :])[0])


def _shipped() -> str:
    from importlib.resources import files

    return str(files("reclaim").joinpath("data", SHIPPED))


def run_deeprm(sequence: Sequence, placer: Placer, env: DeepRMEnv) -> ReplayResult:
    """Replay ``sequence``: the placer's DeepRM plugin picks workloads, Best-Fit places them."""
    selectors = placer.declaring("selects")
    if not selectors:
        raise ReclaimError("run_deeprm needs the deeprm plugin in the placer")
    selector = selectors[0]
    obs, info = env.reset(np.random.default_rng(0), sequence)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(selector.select(obs, info["action_mask"]))
        done = terminated or truncated
    if not env.replay.done:
        raise ReclaimError("DeepRM held workloads past its decision limit")
    return env.replay.result()
