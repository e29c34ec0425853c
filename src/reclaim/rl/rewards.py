"""TVW-RL's penalties over a window of replayed steps (Mondal et al. 2021, "Rewards Design").

All are penalties (returned as non-negative amounts; the reward is minus their sum). Inputs are
per step of the window: ``total`` (T, H, R) units in use per machine (the sum over its residents),
``squares`` (T, H, R) the sum of the residents' squared usage, ``residents`` (T, H) how many run.

- Contention P_C = K_c sum_d sum_m Cr(m, d), Cr the sum over resident pairs of the inner product
  of their time-aligned usage series. Summed per step, sum_{i<j} u_i u_j = (S^2 - sum u_i^2) / 2,
  so the window's share of every pair's inner product needs only S and the squares.
- Under-utilisation P_U = sum_d sum_{m used} U_m(t, d)^K_u, U the unused units max(C - S, 0) of
  a machine with at least one resident, summed over the window's steps.
- Overshoot P_O = K_o per workload and resource the first time its machine exceeds capacity.
- Wait P_W = K_w |Q_t| per step, |Q_t| the workloads arrived and not yet started.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Weights:
    """The paper's penalty weights (its defaults): K_c, K_u (an exponent), K_o, K_w."""

    contention: float = 0.1
    underuse: float = 3.0
    overshoot: float = 30000.0
    wait: float = 50.0


def contention(total: NDArray, squares: NDArray, k_c: float) -> float:
    """K_c x the pairwise inner products of co-located usage over the window's steps."""
    s = total.astype(np.float64)
    return k_c * float(((s * s - squares) / 2).sum())


def under_utilisation(total: NDArray, residents: NDArray, capacity: float, k_u: float) -> float:
    """Sum over steps, used machines and resources of unused units to the power K_u."""
    unused = np.maximum(capacity - total.astype(np.float64), 0.0) ** k_u
    return float((unused * (residents > 0)[:, :, None]).sum())


def first_overshoots(
    total: NDArray,
    capacity: float,
    first: int,
    host: NDArray[np.integer],
    start: NDArray[np.integer],
    end: NDArray[np.integer],
    seen: NDArray[np.bool_],
) -> int:
    """How many (workload, resource) pairs overshoot for the first time in the window [first,
    first + T); ``seen`` (n, R) bool is updated. host/start/end: (n,) placement (-1 unplaced) and
    life [start, end) in steps of each workload."""
    steps = len(total)
    over = (total > capacity).astype(np.int64)  # (T, H, R)
    cum = np.concatenate([np.zeros((1, *over.shape[1:]), np.int64), np.cumsum(over, axis=0)])
    # Only workloads alive in the window can overshoot in it.
    placed = np.flatnonzero((host >= 0) & (start < first + steps) & (end > first))
    a = np.clip(start[placed] - first, 0, steps)
    b = np.clip(end[placed] - first, 0, steps)
    h = host[placed]
    hits = (cum[b, h] - cum[a, h]) > 0  # (p, R): overshot while running in the window
    new = hits & ~seen[placed]
    seen[placed] |= hits
    return int(new.sum())


def waiting(arrival: NDArray[np.integer], start: NDArray[np.integer], first: int, stop: int) -> int:
    """Sum over steps [first, stop) of the workloads arrived (arrival <= t) and not started
    (unplaced, start -1, or start > t). ``arrival`` is sorted."""
    t = np.arange(first, stop)
    arrived = np.searchsorted(arrival, t, side="right")
    began = np.sort(start[start >= 0])
    started = np.searchsorted(began, t, side="right")
    return int((arrived - started).sum())
