"""Poisson arrivals whose rate gives a target average cluster load (TVW-RL's 30, 50, 80 %)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.errors import ReclaimError


def rate_for_load(work: NDArray, machines: int, units: int, load: float) -> float:
    """Arrivals per step that keep ``load`` of the cluster busy on average.

    work: (n, R) unit-steps each workload uses over its life, per resource. The offered load of
    resource d is rate x mean work_d / (machines x units); the rate makes its mean over resources
    equal to ``load``.
    """
    if not load > 0:
        raise ReclaimError(f"load must be above 0, got {load}")
    per_job = float(np.mean(work))
    if per_job <= 0:
        raise ReclaimError("workloads use no resources; no arrival rate gives a load")
    return load * machines * units / per_job


def poisson_arrivals(n: int, rate: float, rng: np.random.Generator) -> NDArray[np.int64]:
    """(n,) non-decreasing arrival steps of a Poisson process of ``rate`` per step, the first at 0:
    exponential gaps, each arrival taking the step it falls in."""
    gaps = rng.exponential(1.0 / rate, max(n - 1, 0))
    return np.floor(np.concatenate([[0.0], np.cumsum(gaps)])).astype(np.int64)
