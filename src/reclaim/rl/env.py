"""TVW-RL's environment: the TVW replay (``reclaim.tvw.replay``) stepped one placement at a time.

The queue discipline (the same for every placer, ``tvw.evaluate.run_policy``): workloads are
taken in arrival order, and one that fits no machine is passed by later ones that fit. A decision
is about the *subject*: the first waiting workload (arrival order) that fits some machine (the
placement framework's fit test in the replay's view). Actions (the paper's MDP, ``hold=True``):
place the subject on machine 0..M-1 (masked where it does not fit), or hold (action M, the
no-op): the clock moves one step and every waiting workload is charged K_w for it. Between
decisions the clock runs on its own while no waiting workload fits anywhere. The steps the clock
passes are charged the paper's penalties (``rl.rewards``), and once every workload is placed the
rest of the replay is charged at once (contention and overshoot are delayed penalties), ending
the episode. Holds are limited (``hold_limit`` per episode, default one per workload; the hold
action is masked once they are spent): a policy that only holds cannot stall an episode.

The state (the paper's Fig. 2): per machine and resource an h x C image of the last h steps, each
pixel labelled by the equivalence class (1..G) of the resident using that unit (its class at this
decision: a labeler by age re-predicts it as the workload runs, Algorithm 1 line 8), residents
stacked in start order, 0 empty; then ``queue_slots`` waiting workloads, the subject first and
the others in arrival order: with ``queue_images`` (the paper's state) per resource an h x C
image of its usage over its first h steps (the profile it brings if placed now), labelled by its
class; without, its demand now / C and class / G. Last the backlog beyond the slots (/ jobs).
Flattened to (D,) float32 in [0, 1].

``hold=False, queue_images=False`` is the earlier environment (actions: machines only; queue
slots as demand numbers), which the policies shipped before the hold action were trained in; a
policy's settings record which it was (``rl.evaluate.Learned.environment``).

:class:`PlacementEnv` needs numpy only; :func:`make_env` wraps it as a Gymnasium env (the extra
``reclaim[rl]``). A masked action (an unfit machine, or a hold once the holds are spent) holds
all the same; past the hold limit the episode is cut off (truncated).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np
from numpy.typing import NDArray

from reclaim.core.types import RESOURCES
from reclaim.errors import ReclaimError
from reclaim.placement.framework import FIT_TOLERANCE, CycleState, fits
from reclaim.rl import _kernels, rewards
from reclaim.rl.rewards import Weights
from reclaim.tvw._kernels import add_background, background_units
from reclaim.tvw.pool import Pool
from reclaim.tvw.replay import Replay
from reclaim.tvw.scenario import ScenarioSpec, Sequence, sample_sequence

COMPONENTS = ("contention", "underuse", "overshoot", "wait")


@numba.njit(cache=True)
def machine_images(data, indptr, host, start, label, order, now, key, background, out):
    """Write (H, R, h, C) labelled images into ``out`` (zeroed): on each machine's background
    (label 1; ``key``, ``background``: ``tvw._kernels.background_units``) workloads ``order``
    (placed, by start) stack their usage at each of the last h steps (``now`` last); clipped at C."""
    n_hosts, n_res, history, units = out.shape
    level = np.zeros((n_hosts, history, n_res), np.int64)
    for m in range(n_hosts):
        for k in range(history):
            t = now - history + 1 + k
            for r in range(n_res):
                if t >= 0:
                    level[m, k, r] = background_units(key, t, m, r, background)
                    out[m, r, k, : min(level[m, k, r], units)] = 1
    for j in order:
        m = host[j]
        length = indptr[j + 1] - indptr[j]
        for k in range(history):
            t = now - history + 1 + k
            if t < start[j] or t >= start[j] + length:
                continue
            row = indptr[j] + t - start[j]
            for r in range(n_res):
                lo = level[m, k, r]
                hi = min(lo + data[row, r], units)
                for c in range(lo, hi):
                    out[m, r, k, c] = label[j]
                level[m, k, r] = lo + data[row, r]


@dataclass
class PlacementEnv:
    """Settings only; ``reset`` draws a sequence from ``pools`` (or takes one) and starts it.

    labeler: maps a sequence to classes in 1..classes, (n,) fixed for the episode or (n, A) by
    age (a workload's class after 1..A steps of its usage seen: ``rl.running_classes``, the
    paper's run-time re-prediction); None: one class for all.
    """

    pools: list[Pool] = field(default_factory=list)
    spec: ScenarioSpec = field(default_factory=ScenarioSpec)
    load: float = 0.5
    history: int = 20
    weights: Weights = field(default_factory=Weights)
    queue_slots: int = 5
    view: str = "current"
    labeler: Callable[[Sequence], NDArray] | None = None
    classes: int = 1
    hold: bool = True
    queue_images: bool = True
    hold_limit: int | None = None  # holds per episode; None: one per workload of the sequence

    @property
    def actions(self) -> int:
        return self.spec.machines + int(self.hold)

    @property
    def slot_size(self) -> int:
        """Observation entries per queue slot."""
        if self.queue_images:
            return len(RESOURCES) * self.history * self.spec.units
        return len(RESOURCES) + 1

    @property
    def obs_size(self) -> int:
        image = self.spec.machines * len(RESOURCES) * self.history * self.spec.units
        return image + self.queue_slots * self.slot_size + 1

    def class_labels(self, sequence: Sequence) -> NDArray[np.int64]:
        """The labeler's class labels of ``sequence``'s workloads, (n,) or by age (n, A) (no
        labeler: all 1), checked to lie in 1..classes."""
        labels = (
            np.ones(len(sequence), np.int64)
            if self.labeler is None
            else np.asarray(self.labeler(sequence), np.int64)
        )
        if len(labels) and not 1 <= labels.min() <= labels.max() <= self.classes:
            raise ReclaimError(f"class labels must lie in 1..{self.classes}")
        return labels

    # ------------------------------------------------------------------ episode
    def reset(
        self, rng: np.random.Generator, sequence: Sequence | None = None
    ) -> tuple[NDArray[np.float32], dict]:
        """Start a sequence (drawn from ``pools`` with ``rng`` unless given); returns the first
        observation and info with ``action_mask``."""
        if sequence is None:
            if not self.pools:
                raise ReclaimError("the environment has no pool to draw sequences from")
            pool = self.pools[int(rng.integers(len(self.pools)))]
            sequence = sample_sequence(pool, self.spec, self.load, rng, rng)
        self.sequence = sequence
        self.replay = Replay.of(sequence, self.spec, self.view)
        labels = self.class_labels(sequence)
        self.by_age_ = np.ascontiguousarray(labels[:, None] if labels.ndim == 1 else labels)
        self._rows = np.arange(len(sequence)) * self.by_age_.shape[1]  # row starts, flat table
        self._squares = np.zeros((0, *self._shape()), np.int64)  # sum of squared usage
        self._grow(64)
        self._lengths = sequence.usage.lengths
        self._mask_key = None
        self._demand = self.replay.demand(np.arange(len(sequence)))  # (n, R), fixed per view
        # Under-use per unused units v (0..C): v ** K_u, as rewards.under_utilisation computes it.
        units = self.spec.units
        cost = np.arange(units + 1, dtype=np.float64) ** self.weights.underuse
        self._unused_cost = cost
        self._unused_exact = bool(np.all(np.isfinite(cost)) and np.all(cost == np.floor(cost)))
        self._seen = np.zeros((len(sequence), len(RESOURCES)), bool)
        self._charged = 0
        self._holds = 0
        self._limit = len(sequence) if self.hold_limit is None else self.hold_limit
        self._settle()  # nothing placed yet: the steps before the first decision cost nothing
        self.totals_ = dict.fromkeys(COMPONENTS, 0.0)  # penalties charged so far, by component
        return self.observe(), {"action_mask": self.mask()}

    def step(self, action: int) -> tuple[NDArray[np.float32], float, bool, bool, dict]:
        """Place the subject on machine ``action``; the hold action (M), or a masked one, holds:
        the clock moves one step."""
        replay = self.replay
        if replay.done:
            raise ReclaimError("the episode is over; call reset")
        mask = self._current_mask()
        if 0 <= action < self.spec.machines and mask[action]:
            job = self.subject()
            now = replay.now
            replay.bind(job, int(action))
            self._grow(now + int(self._lengths[job]))
            self._add_squares(job, now, int(action))
            penalty = self._settle()
        else:
            self._holds += 1
            replay.advance()
            penalty = self._charge(replay.now)
            penalty = _add(penalty, self._settle())
        for k, v in penalty.items():
            self.totals_[k] += v
        reward = -sum(penalty.values())
        done = replay.done
        truncated = not done and self._holds > self._limit
        info = {"action_mask": self.mask(), **penalty}
        return self.observe(), reward, done, truncated, info

    # ------------------------------------------------------------------ state
    def mask(self) -> NDArray[np.bool_]:
        """(A,) the machines the subject fits in the view (all False when none fits), then the
        hold action (with ``hold``: True while holds remain and a subject waits)."""
        # Speed trick: a step asks for the mask of one state up to three times; the replay's
        # state changes only by bind (the queue shrinks) or advance (the clock moves), so
        # (replay, now, queue length) names it. fits() runs in compiled code (bench_rl.py; the
        # reference is ReferencePlacementEnv._current_mask).
        return self._current_mask().copy()

    def subject(self) -> int:
        """The workload this decision is about: the first waiting one (arrival order) that fits
        some machine; -1 when none does."""
        self._current_mask()
        return self._subject

    def _current_mask(self) -> NDArray[np.bool_]:
        """The mask of the replay's state, cached (not a copy: read only)."""
        replay = self.replay
        key = (replay, replay.now, len(replay.queue), self._holds)
        if self._mask_key != key:
            out = np.zeros(self.actions, bool)
            self._subject = -1
            if replay.queue:
                queue = np.asarray(replay.queue, np.int64)
                self._subject = _kernels.first_fit(
                    replay.free(), replay.up_, self._demand, queue, FIT_TOLERANCE, out
                )
            if self.hold:
                out[-1] = self._subject >= 0 and self._holds < self._limit
            self._mask_key, self._mask = key, out
        return self._mask

    def labels(self) -> NDArray[np.int64]:
        """(n,) each workload's class at this decision (the paper's Algorithm 1, line 8): a placed
        one's at its age, the steps of usage seen since it started (capped at the table's A); a
        waiting one's at age 1, its usage at arrival."""
        table = self.by_age_
        if table.shape[1] == 1:  # fixed labels (A = 1)
            return table[:, 0]
        start, last = self.replay.start_, table.shape[1] - 1
        # Speed trick: a flat lookup in the table the labeler filled at reset, no classifier call
        # per step (benchmarks/bench_running_classes.py).
        column = np.where(start >= 0, np.minimum(self.replay.now - start, last), 0)  # age - 1
        return table.ravel()[self._rows + column]

    def observe(self) -> NDArray[np.float32]:
        """(D,) float32 in [0, 1]: labelled machine images, queue slots, backlog."""
        # Speed trick: one compiled pass writes the float32 observation (bench_rl.py; the
        # reference is ReferencePlacementEnv.observe).
        replay, seq, slots, labels = self.replay, self.sequence, self.queue_slots, self.labels()
        head = np.full(slots, -1, np.int64)
        waiting = self.slots()
        head[: len(waiting)] = waiting
        backlog = max(len(replay.queue) - slots, 0) / max(len(seq), 1)
        out = np.empty(self.obs_size, np.float32)
        _kernels.observation(
            seq.usage.data,
            seq.usage.indptr,
            replay.host_,
            replay.start_,
            labels,
            self.classes,
            replay.now,
            self.spec.machines,
            self.history,
            self.spec.units,
            self._demand,
            head,
            self.queue_images,
            backlog,
            self.sequence.noise_key,
            self.spec.background,
            out,
        )
        return out

    def slots(self) -> list[int]:
        """The waiting workloads the queue slots show: the subject first, then the others in
        arrival order, at most ``queue_slots``."""
        subject, queue = self.subject(), self.replay.queue
        if subject < 0:
            return queue[: self.queue_slots]
        return ([subject] + [j for j in queue[: self.queue_slots + 1] if j != subject])[
            : self.queue_slots
        ]

    # ------------------------------------------------------------------ penalties
    def _shape(self) -> tuple[int, int]:
        return (self.spec.machines, len(RESOURCES))

    def _grow(self, stop: int) -> None:
        if stop > len(self._squares):
            first = len(self._squares)
            more = max(stop, 2 * first) - first
            self._squares = np.concatenate(
                [self._squares, np.zeros((more, *self._shape()), np.int64)]
            )
            # the background process is one more resident in the contention sums
            add_background(self._squares, first, self.sequence.noise_key, self.spec.background, 2)

    def _settle(self) -> dict[str, float]:
        """Run the clock until the head of the queue fits somewhere or all are placed, charging
        the steps passed; once all are placed, charge the rest of the replay."""
        replay = self.replay
        penalty = dict.fromkeys(COMPONENTS, 0.0)
        while not replay.done:
            if replay.queue and self._current_mask()[: self.spec.machines].any():
                return penalty
            replay.advance()
            penalty = _add(penalty, self._charge(replay.now))
        ends = replay.start_ + self.sequence.usage.lengths
        return _add(penalty, self._charge(int(ends.max()) if len(ends) else 0))

    def _add_squares(self, job: int, now: int, host: int) -> None:
        """Add ``job``'s squared usage, started ``now`` on ``host``, to the contention sums."""
        indptr = self.sequence.usage.indptr
        data = self.sequence.usage.data
        _kernels.add_squares(self._squares, now, host, data, indptr[job], indptr[job + 1])

    def _charge(self, stop: int) -> dict[str, float]:
        """Penalties of steps [charged, stop), which no later decision can change."""
        first = self._charged
        if stop <= first:
            return dict.fromkeys(COMPONENTS, 0.0)
        self._charged = stop
        replay, w, units = self.replay, self.weights, self.spec.units
        total, residents = replay.recorded(first, stop)
        self._grow(stop)
        # Speed trick: the four penalties in one compiled pass (bench_rl.py). Every term of the
        # references' float sums is an integer there, so any order of summation gives the same
        # float; a non-integral K_u power (or a sum past 2**53) takes the reference for under-use.
        pairs, underuse, overs, waiting = _kernels.charge_window(
            total,
            residents,
            self._squares[first:stop],
            first,
            units,
            replay.host_,
            replay.start_,
            self._lengths,
            self._seen,
            self.sequence.arrival,
            self._unused_cost,
        )
        if not (self._unused_exact and self._unused_cost[-1] * total.size < 2**53):
            underuse = rewards.under_utilisation(total, residents, units, w.underuse)
        return {
            "contention": w.contention * float(pairs // 2),
            "underuse": underuse,
            "overshoot": w.overshoot * overs,
            "wait": w.wait * waiting,
        }


class ReferencePlacementEnv(PlacementEnv):
    """:class:`PlacementEnv` in plain numpy (no compiled kernels): the reference its kernels are
    tested against, bit for bit (``tests/rl/test_kernels.py``)."""

    def _current_mask(self) -> NDArray[np.bool_]:
        replay = self.replay
        out = np.zeros(self.actions, bool)
        self._subject = -1
        if replay.queue:
            demand = replay.demand(replay.queue)
            fit = fits(CycleState(replay.capacity_, replay.free(), replay.up_, demand))
            some = np.flatnonzero(fit.any(axis=1))
            if len(some):
                self._subject = replay.queue[int(some[0])]
                out[: self.spec.machines] = fit[some[0]]
        if self.hold:
            out[-1] = self._subject >= 0 and self._holds < self._limit
        return out

    def observe(self) -> NDArray[np.float32]:
        replay, seq, labels = self.replay, self.sequence, self.labels()
        images = np.zeros((*self._shape(), self.history, self.spec.units), np.int64)
        placed = np.flatnonzero(replay.host_ >= 0)
        order = placed[np.argsort(replay.start_[placed], kind="stable")]
        machine_images(
            seq.usage.data,
            seq.usage.indptr,
            replay.host_,
            replay.start_,
            labels,
            order,
            replay.now,
            self.sequence.noise_key,
            self.spec.background,
            images,
        )
        head = self.slots()
        if self.queue_images:
            profiles = np.zeros((self.queue_slots, len(RESOURCES), self.history, self.spec.units))
            for s, j in enumerate(head):
                series = seq.usage[j][: self.history]  # (k, R) its first h steps
                for k, row in enumerate(series):
                    for r, u in enumerate(row):
                        profiles[s, r, k, : min(int(u), self.spec.units)] = labels[j]
            slots = profiles / self.classes
        else:
            slots = np.zeros((self.queue_slots, len(RESOURCES) + 1))
            if head:
                slots[: len(head), :-1] = replay.demand(head) / self.spec.units
                slots[: len(head), -1] = labels[head] / self.classes
        backlog = max(len(replay.queue) - self.queue_slots, 0) / max(len(seq), 1)
        return np.concatenate(
            [images.ravel() / self.classes, slots.ravel(), [min(backlog, 1.0)]]
        ).astype(np.float32)

    def _add_squares(self, job: int, now: int, host: int) -> None:
        series = self.sequence.usage[job]
        self._squares[now : now + len(series), host] += series.astype(np.int64) ** 2

    def _charge(self, stop: int) -> dict[str, float]:
        first = self._charged
        if stop <= first:
            return dict.fromkeys(COMPONENTS, 0.0)
        self._charged = stop
        replay, w, units = self.replay, self.weights, self.spec.units
        total, residents = replay.recorded(first, stop)
        self._grow(stop)
        ends = replay.start_ + self.sequence.usage.lengths
        overs = rewards.first_overshoots(
            total, units, first, replay.host_, replay.start_, ends, self._seen
        )
        return {
            "contention": rewards.contention(total, self._squares[first:stop], w.contention),
            "underuse": rewards.under_utilisation(total, residents, units, w.underuse),
            "overshoot": w.overshoot * overs,
            "wait": w.wait * rewards.waiting(self.sequence.arrival, replay.start_, first, stop),
        }


def _add(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: a[k] + b[k] for k in a}


def make_env(**params):
    """A Gymnasium env over :class:`PlacementEnv` built from ``params`` (needs reclaim[rl]).
    ``reset(options={"sequence": seq})`` replays a given sequence."""
    gym = require("gymnasium")
    return _gym_class(gym)(PlacementEnv(**params))


def require(module: str):
    """Import an optional dependency of reclaim[rl], or fail in one line."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ReclaimError(f"{module} is missing: install reclaim[rl]") from None


_GYM_CLASS = None


def _gym_class(gym):
    global _GYM_CLASS
    if _GYM_CLASS is None:

        class TVWEnv(gym.Env):
            """Gymnasium adapter: Box observations, Discrete(M) actions, ``action_mask`` in info."""

            metadata = {"render_modes": []}

            def __init__(self, core: PlacementEnv) -> None:
                self.core = core
                self.observation_space = gym.spaces.Box(0.0, 1.0, (core.obs_size,), np.float32)
                self.action_space = gym.spaces.Discrete(core.actions)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                sequence = (options or {}).get("sequence")
                return self.core.reset(self.np_random, sequence)

            def step(self, action):
                return self.core.step(int(action))

            def action_masks(self):
                return self.core.mask()

        _GYM_CLASS = TVWEnv
    return _GYM_CLASS
