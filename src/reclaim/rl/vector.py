"""TVW-RL's environment vectorised: B episodes of :class:`~reclaim.rl.env.PlacementEnv` stepped
at once in compiled code (``rl._vector_kernels``), and the policy acting for all of them as one
batched matrix product.

:class:`VectorEnv` holds the episodes' state in arrays (no Python object per episode) and steps
them in one compiled call; an episode that has ended stays ended (reward 0) until the next
``reset``. Each episode is the single env's, bit for bit (observations, masks, rewards, ends:
``tests/rl/test_rl_vector.py``), on the same sequence; so are the sequences' labels by age.

Supported: the ``current`` view (TVW-RL's) and an integral K_u (the penalties' exact path); the
single env serves the rest, and at most 64 machines. Memory: per episode H x T x R steps of usage
and T x R of contention counts (int16 and int32 here: 0.35 MB), T the longest sequence's
arrivals plus its longest workload plus ``slack`` steps of waiting (an episode that outgrows it
fails in one line: raise ``slack``).

:func:`act` is the batched forward pass of a :class:`~reclaim.rl.policy.LinearPolicy`: (B, D)
observations times w1 in one product, greedy or sampled over the mask.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

import numba
import numpy as np
from numpy.typing import NDArray

from reclaim._numba_util import threaded
from reclaim.core.types import RESOURCES
from reclaim.errors import ReclaimError
from reclaim.rl import _vector_kernels
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import LinearPolicy
from reclaim.tvw.scenario import Sequence

# episodes a thread takes at a time (``threads`` > 1): finished ones cost nothing, so the
# threads share the rest in small chunks
CHUNK = 4


class VectorEnv:
    """``env``'s settings over ``sequences``, episode b replaying sequences[assign[b]]
    (default: one episode per sequence); ``threads`` > 1 shares the episodes among that many
    numba threads (the same results). ``reuse``: an env done with, whose arrays this one takes
    over when their shapes allow (the same episodes as fresh arrays give; ``reuse`` cannot be
    stepped again)."""

    def __init__(
        self,
        env: PlacementEnv,
        sequences: Seq[Sequence],
        assign: NDArray[np.integer] | None = None,
        slack: int | None = None,
        compact: bool = False,
        threads: int = 1,
        reuse: VectorEnv | None = None,
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
        self._cost = cost.astype(np.int64)
        self._w = np.array(
            [env.weights.contention, env.weights.underuse, env.weights.overshoot, env.weights.wait]
        )
        self._pack(list(sequences))
        longest = max(int(s.usage.lengths.max()) for s in sequences if len(s))
        horizon = max(int(s.arrival[-1]) + int(s.usage.lengths.max()) for s in sequences if len(s))
        self.steps = horizon + (longest if slack is None else slack) + 1
        b, n, h, r = len(self.assign), self._njobs.max(), env.spec.machines, len(RESOURCES)
        # the under-use costs are summed as integers where the single env sums floats: the
        # same values while every sum stays below 2**53
        if cost[-1] * self.steps * h * r >= 2**53:
            raise ReclaimError("the vectorised environment needs a smaller K_u (exact sums)")
        if h > 64:
            raise ReclaimError("the vectorised environment holds at most 64 machines")
        # Machine-major (rl._vector_kernels). The narrowest integers that cannot overflow: a
        # machine holds at most n workloads of at most ``top`` units each, and a step's pairs
        # count at most (n top)^2 per resource.
        top = int(self._data.max()) if len(self._data) else 0
        most = n * top + env.spec.background  # a machine's usage at most
        narrow = most < 2**15
        small = most**2 < 2**31
        limits = self._njobs[self.assign] if env.hold_limit is None else env.hold_limit
        self._limits = np.broadcast_to(np.asarray(limits, np.int64), (b,)).copy()
        self.threads = threads
        self.compact = compact
        if compact:
            if not env.queue_images or np.any(self._uniform[self.assign] == 0):
                raise ReclaimError("a compact observation needs queue images and one label")
            if env.spec.units > 127:
                raise ReclaimError("a compact observation holds at most 127 units per row")
        types = (
            np.dtype(np.int16 if narrow else np.int64),
            np.dtype(np.int32 if small else np.int64),
        )
        buffers = _buffers(env, b, n, self.steps, types, compact)
        if reuse is not None and _fits(reuse.__dict__, buffers):
            # Speed trick: a new env's arrays are fresh pages, faulted in and zeroed by the kernel
            # as the episodes first write them (a paper-volume iteration makes ten such envs);
            # taking over a spent env's instead costs only the clearing of what its episodes
            # wrote (reset)
            buffers = {k: reuse.__dict__.pop(k) for k in buffers}
            self.steps = buffers["_usage"].shape[2]
        else:
            buffers = {k: np.zeros(shape, dtype) for k, (shape, dtype) in buffers.items()}
            buffers["_host"][:] = -1
            buffers["_start"][:] = -1
        self.__dict__.update(buffers)

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
        if env.spec.background:
            # the images read off the usage show the background with the one label; the
            # single env shows it as class 1, so only label 1 may take that path
            self._uniform[self._uniform != 1] = 0
        self._keys = np.array([s.noise_key for s in sequences], np.int64)
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
        seqs = (
            self.assign, self._doff, self._ioff, self._joff, self._data, self._indptr,
            self._arrival, self._length, self._demand, self._table, self._ages, self._uniform,
            self._njobs, self._limits, self._keys,
        )  # fmt: skip
        state = (
            self._clock, self._usage, self._used, self._pairs, self._host, self._start,
            self._seen, self._fits,
        )  # fmt: skip
        outs = (self.obs, self.mask, self.reward, self.done, self.truncated, self.levels, self.tail)
        cfg = (
            env.spec.units, env.history, env.classes, env.queue_images, env.hold, self.compact,
            env.spec.background,
        )  # fmt: skip
        work = (self._work0, self._work1, self._work2, self._work3)
        args = (actions, reset, seqs, state, outs, cfg, self._cost, self._w, work)
        kernels = (_vector_kernels.step_all, _vector_kernels.step_all_parallel)
        bad = threaded(*kernels, self.threads, *args, chunk=CHUNK)
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


def _buffers(env: PlacementEnv, b: int, n: int, steps: int, types, compact: bool) -> dict:
    """The (shape, dtype) of each state and output array of a VectorEnv of b episodes of at most
    n workloads over ``steps`` steps (``types``: the usage's and pairs' integers)."""
    h, r = env.spec.machines, len(RESOURCES)
    p = max(numba.config.NUMBA_NUM_THREADS, 1)
    rows = (env.spec.machines + env.queue_slots) * r * env.history
    return {
        # machine-major (rl._vector_kernels)
        "_usage": ((b, h, steps, r), types[0]),
        "_used": ((b, steps), np.dtype(np.int64)),  # bitmask of the machines with residents
        "_pairs": ((b, steps, r), types[1]),
        "_host": ((b, n), np.dtype(np.int32)),
        "_start": ((b, n), np.dtype(np.int64)),
        "_seen": ((b, n, r), np.dtype(bool)),
        "_clock": ((b, len(_vector_kernels.CLOCK)), np.dtype(np.int64)),
        "_fits": ((b, h), np.dtype(bool)),
        # one episode's scratch per thread, reused by every episode's step
        "_work0": ((p, 3, 4), np.dtype(np.float64)),
        "_work1": ((p, env.queue_slots), np.dtype(np.int64)),
        "_work2": ((p, n), np.dtype(np.int64)),
        "_work3": ((p, h * r * env.history), np.dtype(np.int64)),
        # compact (rl.fused): per episode the level of each image row (min(usage, C) pixels of
        # the one label) and the backlog, instead of the (D,) observation
        "levels": ((b, rows if compact else 1), np.dtype(np.int8)),
        "tail": ((b,), np.dtype(np.float32)),
        "obs": ((b, 1 if compact else env.obs_size), np.dtype(np.float32)),
        "mask": ((b, env.actions), np.dtype(bool)),
        "reward": ((b,), np.dtype(np.float64)),
        "done": ((b,), np.dtype(bool)),
        "truncated": ((b,), np.dtype(bool)),
    }


def _fits(old: dict, new: dict) -> bool:
    """Whether the arrays ``old`` (a spent env's attributes) can serve as ``new`` (``_buffers``):
    the same shapes and types, except at least as many steps and workloads."""
    for key, (shape, dtype) in new.items():
        have = old.get(key)
        if have is None or have.dtype != dtype or have.ndim != len(shape):
            return False
        wide = {"_usage": 2, "_used": 1, "_pairs": 1, "_host": 1, "_start": 1, "_seen": 1,
                "_work2": 1}.get(key)  # fmt: skip
        for axis, (a, want) in enumerate(zip(have.shape, shape, strict=True)):
            if a != want and not (axis == wide and a > want):
                return False
    return True
