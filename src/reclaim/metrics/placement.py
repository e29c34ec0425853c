"""Operational-excellence metrics of a placement, as TVW-RL defines them (Garefalakis et al. 2018,
Grandl et al. 2014).

Inputs are per step: ``usage`` (T, H, R) units in use on each machine (the sum of its residents'
usage, which may exceed capacity), ``active`` (T, H) bool (at least one workload running), and
``capacity`` (R,) units of every machine (the paper's machines are identical). T is the
observation period, until every workload has finished.

- Avg Util(d) = sum_t sum_m R(m,t,d) / (T x max_t A(t) x C_d), A(t) the machines active at t.
- Avg Frag(d) = 1 - (1/T) sum_t max_{m in A(t)} U_m(t,d) / sum_{m in A(t)} U_m(t,d), U the unused
  units max(C_d - R, 0). The paper leaves 0/0 open: a step with no active machine, or no unused
  units on them, has nothing fragmented and contributes a ratio of 1.
- Avg Overshoot % = 100 x sum_t sum_m sum_d S(m,t,d) / (T x M x C_d), S = max(R - C_d, 0) and M the
  machines of the cluster. The paper sums over resources; the per-resource terms are reported too.
- Machines used: machines on which at least one workload was placed at some time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.core.types import RESOURCES


def utilisation(
    usage: NDArray, active: NDArray[np.bool_], capacity: NDArray
) -> NDArray[np.float64]:
    """(R,) average utilisation of each resource, normalised by the most machines ever active."""
    most = int(active.sum(axis=1).max()) if len(active) else 0
    if most == 0:
        return np.zeros(usage.shape[-1])
    return usage.sum(axis=(0, 1), dtype=np.float64) / (len(usage) * most * np.asarray(capacity))


def fragmentation(
    usage: NDArray, active: NDArray[np.bool_], capacity: NDArray
) -> NDArray[np.float64]:
    """(R,) average fragmentation of the unused units of the active machines."""
    if len(usage) == 0:
        return np.zeros(usage.shape[-1])
    unused = np.maximum(np.asarray(capacity) - usage, 0) * active[:, :, None]  # (T, H, R)
    total = unused.sum(axis=1, dtype=np.float64)
    ratio = np.divide(unused.max(axis=1), total, out=np.ones_like(total), where=total > 0)
    return 1.0 - ratio.mean(axis=0)


def overshoot(usage: NDArray, capacity: NDArray) -> NDArray[np.float64]:
    """(R,) per resource, 100 x the units short summed over steps and machines, over T x M x C_d;
    the paper's Avg Overshoot % is their sum."""
    if len(usage) == 0:
        return np.zeros(usage.shape[-1])
    short = np.maximum(usage - np.asarray(capacity), 0).sum(axis=(0, 1), dtype=np.float64)
    return 100.0 * short / (usage.shape[0] * usage.shape[1] * np.asarray(capacity))


def machines_used(active: NDArray[np.bool_]) -> int:
    """Machines that ran at least one workload at some step."""
    return int(active.any(axis=0).sum())


def operational_summary(
    usage: NDArray,
    active: NDArray[np.bool_],
    capacity: NDArray,
    arrival: NDArray,
    start: NDArray,
    step_s: float,
) -> dict[str, float]:
    """Every metric in one flat dict: util_<r>, frag_<r>, overshoot_<r>, overshoot_pct (the
    paper's, summed over resources), machines_used, and the wait from arrival to start in hours
    (mean and max; ``start`` -1 for a workload never placed, counted in ``unplaced``)."""
    out: dict[str, float] = {}
    util, frag = utilisation(usage, active, capacity), fragmentation(usage, active, capacity)
    over = overshoot(usage, capacity)
    for r, name in enumerate(RESOURCES):
        out[f"util_{name}"] = float(util[r])
        out[f"frag_{name}"] = float(frag[r])
        out[f"overshoot_{name}"] = float(over[r])
    out["overshoot_pct"] = float(over.sum())
    out["machines_used"] = float(machines_used(active))
    placed = start >= 0
    wait_h = (start[placed] - arrival[placed]) * step_s / 3600.0
    out["wait_mean_h"] = float(wait_h.mean()) if len(wait_h) else 0.0
    out["wait_max_h"] = float(wait_h.max()) if len(wait_h) else 0.0
    out["unplaced"] = float((~placed).sum())
    return out
