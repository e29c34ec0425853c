"""Replay of a sequence on the cluster, one step (one sample of the series) at a time.

A placed workload uses, at each step of its life, the units its real series says, whatever the
policy assumed when placing it; co-located spikes can therefore exceed a machine's capacity
(overshoot). Workloads wait in a FIFO queue; a placement decision binds one queued workload to one
machine at the current step, and it runs from then for the length of its series.

What a policy is told about the cluster is the ``view``:

- ``current``: a machine's free units are its capacity minus its residents' usage *now*, and a
  workload asks for its usage now (its first step). TVW-RL's Best-Fit: "the least units of the
  dominant resource of the job available at the current time", "without any knowledge of peak or
  future resource usages".
- ``peak``: a machine's free units are its capacity minus its residents' peak usage, and a workload
  asks for its peak: the peak resource usage as the request, as the paper gives Tetris and DeepRM.
  Machines are then never over-committed.

The replay is the environment a learning policy steps (TVW-RL's Algorithm 1): ``queue`` lists the
waiting workloads, ``free()``, ``demand()`` and ``host_usage()`` give the state (units per machine
and the workload's demand), ``bind`` acts, ``advance`` moves the clock; heuristics drive the same
calls through a :class:`~reclaim.placement.Placer` (``tvw.evaluate``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reclaim.core.engine import Engine
from reclaim.core.tables import HostTable
from reclaim.core.types import RESOURCES, Decisions
from reclaim.errors import ReclaimError
from reclaim.tvw import _kernels
from reclaim.tvw.scenario import ScenarioSpec, Sequence

VIEWS = ("current", "peak")
#: The one kind of event: a placed workload leaves (its idx), freeing its peak in the peak view.
LEAVE = 0


@dataclass(frozen=True)
class ReplayResult:
    """usage: (T, H, R) int32 units in use per machine and step (may exceed capacity); active:
    (T, H) bool, at least one workload running; host, start: (n,) int of each workload (start in
    steps); arrival: (n,) steps. T runs from step 0 until the last workload has finished."""

    usage: NDArray[np.int32]
    active: NDArray[np.bool_]
    host: NDArray[np.int32]
    start: NDArray[np.int64]
    arrival: NDArray[np.int64]


class Replay:
    """``sequence`` on ``machines`` machines of ``units`` units per resource, seen through
    ``view``. ``background``: every machine also runs a process no placer knows of, using
    0..background units of each resource per step (``tvw._kernels.background_units``, keyed by
    the sequence): it is in the usage (the current view sees it now, overshoot counts it) but in
    no reservation and no resident count."""

    def __init__(
        self,
        sequence: Sequence,
        machines: int,
        units: int,
        view: str = "current",
        background: int = 0,
    ) -> None:
        if view not in VIEWS:
            raise ReclaimError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
        self.sequence = sequence
        self.machines = machines
        self.units = units
        self.view = view
        self.background = background

    @classmethod
    def of(cls, sequence: Sequence, spec: ScenarioSpec, view: str = "current") -> Replay:
        """``sequence`` on the cluster of ``spec``, with its background, started (``reset``)."""
        return cls(sequence, spec.machines, spec.units, view, spec.background).reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> Replay:
        """Step 0, nothing placed; the workloads arriving at step 0 are queued."""
        seq = self.sequence
        lengths = seq.usage.lengths
        self.peak_ = np.maximum.reduceat(seq.usage.data, seq.usage.indptr[:-1], axis=0)
        if np.any(self.peak_ > self.units):
            raise ReclaimError(f"a workload peaks above the machines' {self.units} units")
        # The machines' ledger: ``allocated`` holds the residents' peaks (the peak view's
        # reservations), in units, which float64 keeps exact.
        self.hosts = HostTable(np.full((self.machines, len(RESOURCES)), float(self.units)))
        # The ledger's own arrays under the names the environments read on every step (plain
        # attributes, not properties: a step reads them several times; bench_rl.py).
        self.capacity_, self.up_ = self.hosts.capacity, self.hosts.up
        self.now = 0
        self.host_ = np.full(len(seq), -1, np.int32)
        self.start_ = np.full(len(seq), -1, np.int64)
        horizon = int(seq.arrival[-1] + lengths.max()) + 1 if len(seq) else 1
        self._usage = np.zeros((horizon, self.machines, len(RESOURCES)), np.int32)
        self._add_background(0)
        self._count = np.zeros((horizon, self.machines), np.int32)
        self._leaving = Engine({LEAVE: self._leave})  # departures, at their end step
        self._arrived = 0
        self.queue: list[int] = []
        self._admit()
        return self

    @property
    def done(self) -> bool:
        """Every workload has been placed (the rest of the replay is already recorded)."""
        return self._arrived == len(self.sequence) and not self.queue

    def free(self) -> NDArray[np.float64]:
        """(H, R) free units of each machine in the view (negative when over capacity)."""
        if self.view == "current":
            return self.hosts.capacity - self._usage[self.now]
        return self.hosts.room

    def demand(self, jobs) -> NDArray[np.float32]:
        """(B, R) units the workloads ``jobs`` ask for in the view."""
        jobs = np.asarray(jobs, np.int64)
        if self.view == "current":
            return self.sequence.usage.data[self.sequence.usage.indptr[jobs]].astype(np.float32)
        return self.peak_[jobs].astype(np.float32)

    def host_usage(self, history: int) -> NDArray[np.int32]:
        """(history, H, R) units in use per machine over the last ``history`` steps, the current
        step last; steps before 0 are zero (TVW-RL's machine images)."""
        window = np.zeros((history, *self._usage.shape[1:]), np.int32)
        first = max(0, self.now - history + 1)
        window[history - (self.now + 1 - first) :] = self._usage[first : self.now + 1]
        return window

    def recorded(self, first: int, stop: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
        """Usage (T, H, R) units and residents (T, H) per machine over steps [first, stop), as
        placed so far (future steps hold the placed workloads' known series): an RL reward reads
        the steps its clock has passed."""
        self._reach(stop)
        return self._usage[first:stop], self._count[first:stop]

    # ------------------------------------------------------------------ actions
    def bind(self, job: int, host: int) -> None:
        """Start queued workload ``job`` on machine ``host`` now."""
        if job not in self.queue:
            raise ReclaimError(f"workload {job} is not waiting")
        if not 0 <= host < self.machines:
            raise ReclaimError(f"no machine {host} (there are {self.machines})")
        usage = self.sequence.usage
        lo, hi = int(usage.indptr[job]), int(usage.indptr[job + 1])
        end = self.now + hi - lo
        self._reach(end)
        # The whole future of the workload is written now; the view reads only the current step.
        # Speed trick: one compiled call instead of three numpy updates (benchmarks/bench_rl.py).
        _kernels.record_bind(
            self._usage,
            self._count,
            self.hosts.allocated,
            self.now,
            host,
            usage.data,
            lo,
            hi,
            self.peak_[job],
        )
        self._leaving.schedule(end, 0, LEAVE, job)
        self.host_[job], self.start_[job] = host, self.now
        self.queue.remove(job)

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        """The bind actuator: carry out the ``bind`` rows of ``decisions`` in order (a placer's
        answer for the queue; Status OK each); TVW workloads are neither resized, moved nor lent,
        so other rows are an error."""
        decisions.require(("bind",), "the TVW replay")
        for job, host in zip(
            decisions.bind_rows.tolist(), decisions.bind_hosts.tolist(), strict=True
        ):
            self.bind(job, host)
        return np.zeros(len(decisions.bind_rows), np.int8)

    def advance(self) -> bool:
        """Move to the next step at which a decision can differ; False once ``done``.

        With workloads waiting in the current view that is the next step (usage changes every
        step); otherwise the next arrival or departure.
        """
        if self.done:
            return False
        if self.queue and self.view == "current":
            nxt = self.now + 1
        else:
            events = [int(self._leaving.next_time())] if self._leaving and self.queue else []
            if self._arrived < len(self.sequence):
                events.append(int(self.sequence.arrival[self._arrived]))
            nxt = min(events) if events else self.now + 1  # waiting on an empty cluster
        self._reach(nxt + 1)
        self._leaving.run(until=nxt)
        self.now = nxt
        self._admit()
        return True

    def _leave(self, _: float, job: int) -> None:
        self.hosts.give(self.host_[job], self.peak_[job])

    def _reach(self, end: int) -> None:
        """Grow the recorded steps to at least ``end`` (waiting pushes work past the first guess)."""
        if end > len(self._usage):
            grow = max(end, 2 * len(self._usage)) - len(self._usage)
            more, first = (grow, *self._usage.shape[1:]), len(self._usage)
            self._usage = np.concatenate([self._usage, np.zeros(more, np.int32)])
            self._count = np.concatenate([self._count, np.zeros(more[:2], np.int32)])
            self._add_background(first)

    def _add_background(self, first: int) -> None:
        """The background processes' usage into the recorded steps from ``first`` on."""
        _kernels.add_background(self._usage, first, self.sequence.noise_key, self.background, 1)

    def _admit(self) -> None:
        arrival = self.sequence.arrival
        while self._arrived < len(arrival) and arrival[self._arrived] <= self.now:
            self.queue.append(self._arrived)
            self._arrived += 1

    def result(self) -> ReplayResult:
        """The recorded replay; call once ``done``."""
        if not self.done:
            raise ReclaimError("the replay has workloads still to place")
        ends = self.start_ + self.sequence.usage.lengths
        horizon = int(ends.max()) if len(ends) else 0
        return ReplayResult(
            self._usage[:horizon],
            self._count[:horizon] > 0,
            self.host_.copy(),
            self.start_.copy(),
            self.sequence.arrival.copy(),
        )
