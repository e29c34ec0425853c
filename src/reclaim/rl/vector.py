"""TVW-RL's environment vectorised: B episodes of :class:`~reclaim.rl.env.PlacementEnv` stepped
at once in compiled code (``rl._vector_kernels``), and the policy acting for all of them as one
batched matrix product.

:class:`VectorEnv` holds the episodes' state in arrays (no Python object per episode) and steps
them in one compiled call; an episode that has ended stays ended (reward 0) until the next
``reset``. Each episode is the single env's, bit for bit (observations, masks, rewards, ends:
``tests/rl/test_rl_vector.py``), on the same sequence; so are the sequences' labels by age.

Supported: the ``current`` view (TVW-RL's) and an integral K_u (the penalties' exact path); the
single env serves the rest. Memory: per episode T x H x R steps of usage and squared usage, T
the longest sequence's arrivals plus its longest workload plus ``slack`` steps of waiting (an
episode that outgrows it fails in one line: raise ``slack``).

:func:`act` is the batched forward pass of a :class:`~reclaim.rl.policy.LinearPolicy`: (B, D)
observations times w1 in one product, greedy or sampled over the mask.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

import numpy as np
from numpy.typing import NDArray

from reclaim.errors import ReclaimError
from reclaim.rl import _vector_kernels
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import LinearPolicy
from reclaim.tvw.scenario import Sequence
from reclaim.types import RESOURCES


class VectorEnv:
    """``env``'s settings over ``sequences``, episode b replaying sequences[assign[b]]
    (default: one episode per sequence)."""

    def __init__(
        self,
        env: PlacementEnv,
        sequences: Seq[Sequence],
        assign: NDArray[np.integer] | None = None,
        slack: int | None = None,
        compact: bool = False,
    ) -> None:
        if env.view != "current":
            raise ReclaimError("the vectorised environment replays the current view only")
        cost = np.arange(env.spec.units + 1, dtype=np.float64) ** env.weights.underuse
        if not (np.all(np.isfinite(cost)) and np.all(cost == np.floor(cost))):
            raise ReclaimError("the vectorised environment needs an integral K_u")
        if not sequences:
            raise ReclaimError("the vectorised environment needs at least one sequence")
        self.env = env
        self.assign = np.arange(len(sequences)) if assign is None else np.asarray(assign)
        if self.assign.min() < 0 or self.assign.max() >= len(sequences):
            raise ReclaimError("assign names a sequence that is not given")
        self._cost = cost
        self._w = np.array(
            [env.weights.contention, env.weights.underuse, env.weights.overshoot, env.weights.wait]
        )
        self._pack(list(sequences))
        longest = max(int(s.usage.lengths.max()) for s in sequences if len(s))
        horizon = max(int(s.arrival[-1]) + int(s.usage.lengths.max()) for s in sequences if len(s))
        self.steps = horizon + (longest if slack is None else slack) + 1
        b, n, h, r = len(self.assign), self._njobs.max(), env.spec.machines, len(RESOURCES)
        # Machine-major (rl._vector_kernels). The narrowest integers that cannot overflow: a
        # machine holds at most n workloads of at most ``top`` units each.
        top = int(self._data.max()) if len(self._data) else 0
        narrow = n * top < 2**15 and n * top * top < 2**31
        self._usage = np.zeros((b, h, self.steps, r), np.int16 if narrow else np.int64)
        self._count = np.zeros((b, h, self.steps), np.int16 if narrow else np.int64)
        self._squares = np.zeros((b, h, self.steps, r), np.int32 if narrow else np.int64)
        self._host = np.full((b, n), -1, np.int32)
        self._start = np.full((b, n), -1, np.int64)
        self._seen = np.zeros((b, n, r), bool)
        self._clock = np.zeros((b, 7), np.int64)
        limits = self._njobs[self.assign] if env.hold_limit is None else env.hold_limit
        self._limits = np.broadcast_to(np.asarray(limits, np.int64), (b,)).copy()
        # one episode's scratch, reused by every episode's step (rl._vector_kernels.step_all)
        self._work = (
            np.zeros(h, bool),
            np.zeros((3, 4)),
            np.zeros(env.queue_slots, np.int64),
            np.zeros(n, np.int64),
            np.zeros(h * r * env.history, np.int64),
        )
        # compact (rl.fused): per episode the level of each image row (min(usage, C) pixels of
        # the one label) and the backlog, instead of the (D,) observation
        self.compact = compact
        if compact:
            if not env.queue_images or np.any(self._uniform[self.assign] == 0):
                raise ReclaimError("a compact observation needs queue images and one label")
            if env.spec.units > 127:
                raise ReclaimError("a compact observation holds at most 127 units per row")
            rows = (env.spec.machines + env.queue_slots) * r * env.history
            self.levels = np.zeros((b, rows), np.int8)
            self.tail = np.zeros(b, np.float32)
            self.obs = np.zeros((b, 1), np.float32)
        else:
            self.levels = np.zeros((b, 1), np.int8)
            self.tail = np.zeros(b, np.float32)
            self.obs = np.zeros((b, env.obs_size), np.float32)
        self.mask = np.zeros((b, env.actions), bool)
        self.reward = np.zeros(b)
        self.done = np.zeros(b, bool)
        self.truncated = np.zeros(b, bool)

    @property
    def value(self) -> float:
        """The pixel value of a compact observation's episodes (their one label / G)."""
        labels = np.unique(self._uniform[self.assign])
        if len(labels) != 1 or labels[0] == 0:
            raise ReclaimError("the episodes do not share one label")
        return float(np.float32(labels[0] / self.env.classes))

    @property
    def episodes(self) -> int:
        return len(self.assign)

    def _pack(self, sequences: list[Sequence]) -> None:
        env = self.env
        tables = []
        for s in sequences:
            labels = env.class_labels(s)
            tables.append(labels[:, None] if labels.ndim == 1 else labels)
        ages = max(t.shape[1] for t in tables)
        # a fixed-label table (A = 1) is the same at every age: widen it to the longest
        tables = [np.repeat(t, ages, axis=1) if t.shape[1] == 1 else t for t in tables]
        if any(t.shape[1] != ages for t in tables):
            raise ReclaimError("every sequence's label table must have the same ages")
        self._ages = ages
        # per sequence: its one label when every workload has it at every age (0: they differ)
        self._uniform = np.array(
            [int(t.flat[0]) if t.size and np.all(t == t.flat[0]) else 0 for t in tables], np.int64
        )
        self._table = np.ascontiguousarray(np.concatenate(tables).ravel())
        self._njobs = np.array([len(s) for s in sequences], np.int64)
        self._joff = np.concatenate([[0], np.cumsum(self._njobs)]).astype(np.int64)
        rows = [len(s.usage.data) for s in sequences]
        self._doff = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        self._ioff = np.concatenate([[0], np.cumsum(self._njobs + 1)]).astype(np.int64)
        self._data = np.ascontiguousarray(np.concatenate([s.usage.data for s in sequences]))
        self._indptr = np.concatenate([np.asarray(s.usage.indptr, np.int64) for s in sequences])
        self._arrival = np.concatenate([s.arrival for s in sequences]).astype(np.int64)
        self._length = np.concatenate([s.usage.lengths for s in sequences]).astype(np.int64)
        first = [s.usage.data[s.usage.indptr[:-1]] for s in sequences]  # demand now: 1st step
        self._demand = np.concatenate(first).astype(np.int64)
        if np.any(self._demand > env.spec.units):
            raise ReclaimError(
                f"a workload asks for more than the machines' {env.spec.units} units"
            )

    def _call(self, actions: NDArray[np.int64], reset: bool) -> None:
        env = self.env
        bad = _vector_kernels.step_all(
            actions,
            reset,
            self.assign,
            self._doff,
            self._ioff,
            self._joff,
            self._data,
            self._indptr,
            self._arrival,
            self._length,
            self._demand,
            self._table,
            self._ages,
            self._uniform,
            self._njobs,
            self._limits,
            self._clock,
            self._usage,
            self._count,
            self._squares,
            self._host,
            self._start,
            self._seen,
            self._cost,
            self._w,
            env.spec.units,
            env.history,
            env.classes,
            env.queue_images,
            env.hold,
            self.obs,
            self.mask,
            self.reward,
            self.done,
            self.truncated,
            self.compact,
            self.levels,
            self.tail,
            self._work,
        )
        if bad >= 0:
            raise ReclaimError(
                f"episode {bad} outgrew its {self.steps} steps (waiting): raise slack"
            )

    def reset(self) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
        """Start every episode; returns observations (B, D) and masks (B, A) (views: copy to
        keep)."""
        self._call(np.zeros(self.episodes, np.int64), True)
        return self.obs, self.mask

    def step(self, actions: NDArray[np.integer]):
        """Step every episode not yet ended with its action (B,); returns observations, rewards,
        done, truncated, masks (views of the env's buffers)."""
        actions = np.ascontiguousarray(actions, np.int64)
        if actions.shape != (self.episodes,):
            raise ReclaimError(f"need {self.episodes} actions, not {actions.shape}")
        self._call(actions, False)
        return self.obs, self.reward, self.done, self.truncated, self.mask

    @property
    def ended(self) -> NDArray[np.bool_]:
        """(B,) episodes done or cut off."""
        return self._clock[:, _vector_kernels.DONE].astype(bool)

    def host(self, b: int) -> NDArray[np.int32]:
        """Episode b's machine of each workload (-1 unplaced)."""
        return self._host[b, : self._njobs[self.assign[b]]].copy()

    def start(self, b: int) -> NDArray[np.int64]:
        """Episode b's start step of each workload (-1 unplaced)."""
        return self._start[b, : self._njobs[self.assign[b]]].copy()


def act(
    policy: LinearPolicy,
    obs: NDArray[np.float32],
    mask: NDArray[np.bool_],
    rng: np.random.Generator | None = None,
) -> NDArray[np.int64]:
    """(B,) actions of ``policy`` for observations (B, D): one batched product per layer; the
    most probable unmasked action, or (``rng``) one sampled from the masked softmax. A row with
    no unmasked action gets 0 (an ended episode ignores it)."""
    return sample(policy.logits(obs), mask, rng)


def sample(
    logits: NDArray, mask: NDArray[np.bool_], rng: np.random.Generator | None = None
) -> NDArray[np.int64]:
    """:func:`act` from logits (B, A)."""
    logits = np.where(mask, logits, -np.inf)
    empty = ~mask.any(axis=1)
    logits[empty] = 0.0
    if rng is None:
        return logits.argmax(axis=1)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    cdf = np.cumsum(z, axis=1)
    u = rng.random(len(z))[:, None] * cdf[:, -1:]
    return np.minimum((cdf <= u).sum(axis=1), z.shape[1] - 1)
