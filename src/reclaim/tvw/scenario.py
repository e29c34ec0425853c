"""The TVW-RL evaluation scenario: a sequence of time-varying workloads arriving at a cluster.

The paper's setting, its defaults here: 10 machines of 8 units per resource (CPU, memory); each
sequence mixes workloads half long-running (> 30 h), and CPU- and memory-intensive in about equal
numbers; Poisson arrivals calibrated to an average cluster load of 30, 50 or 80 %. The paper's
episodes hold a fixed number of jobs (at most 200); we draw 200.

A workload is a window of one continuous record of the pool (its real usage, step by step, in
units). The paper does not say how long its short jobs run nor how long its long ones; we draw the
window's length uniformly, in [``min_hours``, ``long_hours``] for the others and in
(``long_hours``, ``max_hours``] for the long-running ones, and its start uniformly within the
record. Only records long enough for the window qualify.

How usage becomes units (``scale``, ``max_units``, ``scale_quantile``, ``max_gap_s``) is the pool's
(``tvw.pool``); :func:`load_pools` reads stores with a spec's settings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError
from reclaim.tvw.arrivals import poisson_arrivals, rate_for_load
from reclaim.tvw.pool import LEGACY_SCALE, SCALES, Pool, load_pool

#: What a spec's quantisation was before policies recorded it (``quantisation``).
LEGACY_QUANTISATION = {
    "scale": LEGACY_SCALE,
    "max_units": 6,
    "scale_quantile": 0.9,
    "max_gap_s": 3600.0,
}


@dataclass(frozen=True)
class ScenarioSpec:
    """machines x units: the cluster (every machine has ``units`` of each resource); jobs per
    sequence; long_share of long-running jobs; window lengths in hours (module docstring);
    max_units, scale_quantile, max_gap_s, scale: how usage becomes units (``tvw.pool``; scale
    auto: each workload's own limit where the store has limits, else the peak quantile).

    The paper's noise (its Table 2, "Robustness Against Noisy Environment"): ``background``, the
    most units a background process no placer knows of uses on every machine (uniform in
    0..background per step and resource, ``Sequence.noise_key``); ``jitter``, the most units
    added to or taken from each step of every workload (uniform, kept in 1..max_units).
    0: none."""

    machines: int = 10
    units: int = 8
    jobs: int = 200
    long_share: float = 0.5
    long_hours: float = 30.0
    min_hours: float = 1.0
    max_hours: float = 120.0
    max_units: int = 6
    scale_quantile: float = 0.9
    max_gap_s: float = 3600.0
    scale: str = "auto"
    background: int = 0
    jitter: int = 0

    @property
    def quantisation(self) -> dict:
        """The settings that turn usage into units, as a trained policy records them."""
        return {k: getattr(self, k) for k in LEGACY_QUANTISATION}

    def check(self) -> ScenarioSpec:
        """Raise ReclaimError on settings no scenario can have; return self."""
        problems = [
            (self.machines >= 1, "machines must be at least 1"),
            (self.units >= 1, "units must be at least 1"),
            (self.jobs >= 1, "jobs must be at least 1"),
            (0 <= self.long_share <= 1, "long_share must be in [0, 1]"),
            (0 < self.min_hours <= self.long_hours < self.max_hours, "need 0 < min <= long < max"),
            (
                1 <= self.max_units <= self.units,
                "max_units must be in [1, units]: a job fits a machine",
            ),
            (0 < self.scale_quantile <= 1, "scale_quantile must be in (0, 1]"),
            (self.scale in SCALES, f"scale must be {', '.join(SCALES)}"),
            (0 <= self.background <= self.units, "background must be in [0, units]"),
            (0 <= self.jitter < self.max_units, "jitter must be in [0, max_units)"),
        ]
        for ok, problem in problems:
            if not ok:
                raise ReclaimError(f"scenario: {problem}")
        return self


def load_pools(stores: list[Path], spec: ScenarioSpec) -> list[Pool]:
    """The pool of each store, its usage in units as ``spec`` says."""
    q = spec.check().quantisation
    return [
        load_pool(p, q["max_units"], q["scale_quantile"], q["max_gap_s"], q["scale"])
        for p in stores
    ]


@dataclass(frozen=True)
class Sequence:
    """Workloads in arrival order. usage: GroupedArray of (N, R) int16 units, one row per step of
    each workload's life; arrival: (n,) int64 steps; long, cpu_intensive: (n,) bool; record,
    offset: (n,) where in the pool each came from; rate: arrivals per step."""

    usage: GroupedArray
    arrival: NDArray[np.int64]
    long: NDArray[np.bool_]
    cpu_intensive: NDArray[np.bool_]
    record: NDArray[np.int64]
    offset: NDArray[np.int64]
    rate: float

    def __len__(self) -> int:
        return len(self.arrival)

    @cached_property
    def noise_key(self) -> int:
        """A 63-bit key of this sequence's workloads and arrivals, which seeds its noise
        (``ScenarioSpec.background`` and ``jitter``): the same sequence, the same noise, for
        every placer and in every process, with no generator's draws spent on it."""
        h = hashlib.sha256()
        for array in (self.record, self.offset, self.arrival, self.usage.indptr):
            h.update(np.ascontiguousarray(array, np.int64).tobytes())
        return int.from_bytes(h.digest()[:8], "little") >> 1

    @property
    def work(self) -> NDArray[np.int64]:
        """(n, R) unit-steps each workload uses over its life."""
        return unit_steps(self.usage)


def unit_steps(usage: GroupedArray) -> NDArray[np.int64]:
    """(n, R) sum of each series of ``usage`` (every series non-empty)."""
    return np.add.reduceat(usage.data, usage.indptr[:-1], axis=0, dtype=np.int64)


def sample_sequence(
    pool: Pool, spec: ScenarioSpec, load: float, jobs_rng: np.random.Generator, arrivals_rng
) -> Sequence:
    """One sequence of ``spec.jobs`` workloads from ``pool`` arriving at ``load``.

    ``jobs_rng`` draws the workloads and ``arrivals_rng`` their arrival times, so that one jobs seed
    gives the same workloads at every load.
    """
    steps = 3600.0 / pool.period_s
    long_steps, min_steps = int(spec.long_hours * steps), max(1, int(spec.min_hours * steps))
    max_steps = int(spec.max_hours * steps)
    n_long = round(spec.jobs * spec.long_share)
    strata = [  # (long, cpu-intensive, how many)
        (True, True, n_long // 2),
        (True, False, n_long - n_long // 2),
        (False, True, (spec.jobs - n_long) // 2),
        (False, False, spec.jobs - n_long - (spec.jobs - n_long) // 2),
    ]
    lengths = pool.lengths
    picked = []
    for long, cpu, count in strata:
        if count == 0:
            continue
        shortest = long_steps + 1 if long else min_steps
        eligible = np.flatnonzero((pool.cpu_intensive == cpu) & (lengths >= shortest))
        if not len(eligible):
            kind = ("long-running " if long else "") + ("CPU" if cpu else "memory")
            raise ReclaimError(
                f"{pool.report.store}: no {kind}-intensive record of at least {shortest} steps "
                f"({shortest / steps:.1f} h) to draw workloads from"
            )
        record = jobs_rng.choice(eligible, count)
        top = np.minimum(max_steps if long else long_steps, lengths[record])
        length = jobs_rng.integers(shortest, top + 1)
        offset = jobs_rng.integers(0, lengths[record] - length + 1)
        picked.append((record, length, offset, np.full(count, long), np.full(count, cpu)))
    record, length, offset, long, cpu = (np.concatenate(c) for c in zip(*picked, strict=True))
    order = jobs_rng.permutation(len(record))
    record, length, offset, long, cpu = (
        record[order],
        length[order],
        offset[order],
        long[order],
        cpu[order],
    )
    starts = pool.units.indptr[record] + offset
    rows = np.repeat(starts - np.concatenate([[0], np.cumsum(length)[:-1]]), length)
    rows += np.arange(length.sum())
    usage = GroupedArray(pool.units.data[rows], np.concatenate([[0], np.cumsum(length)]))
    rate = rate_for_load(unit_steps(usage), spec.machines, spec.units, load)
    arrival = poisson_arrivals(len(record), rate, arrivals_rng)
    sequence = Sequence(usage, arrival, long, cpu, record, offset, rate)
    return jittered(sequence, spec) if spec.jitter else sequence


def jittered(sequence: Sequence, spec: ScenarioSpec) -> Sequence:
    """``sequence`` with every step of every workload moved by up to ``spec.jitter`` units
    (uniform, from its noise key), kept in 1..max_units: the paper's perturbed shapes. The rate
    stays the unperturbed one, so that the arrivals are those of the sequence without noise."""
    rng = np.random.default_rng([sequence.noise_key, 1])
    data = sequence.usage.data.astype(np.int64)
    data += rng.integers(-spec.jitter, spec.jitter + 1, data.shape)
    noisy = np.clip(data, 1, spec.max_units).astype(sequence.usage.data.dtype)
    usage = GroupedArray(noisy, sequence.usage.indptr)
    return replace(sequence, usage=usage)
