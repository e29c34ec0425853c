"""Compiled parts of the simulator's control step: the oracle's forecast and the actuator's
resizes, each beside the numpy it replaces (tests/sim/test_step_kernels.py compares them bit for
bit).

Speed trick: in the shaping paper's world at its scale (~30,000 running rows a tick, 130,000 ticks
a run) these two steps were a third of a tick in numpy temporaries (``benchmarks/bench_pace.py``);
here each is one pass over the rows.
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim.core.types import Status
from reclaim.sim._kernels import add_allocation

_UNSCHEDULABLE = np.int8(Status.UNSCHEDULABLE)


@numba.njit(cache=True)
def oracle_forecast(rows, running, demand, t, period, grace_s, start):
    """The oracle's one-step forecast of ``rows`` (sorted, a subset of the sorted ``running``
    whose demand for the coming interval is ``demand`` (m, R) float32): mean = demand and std 0
    for the rows past the grace period with a sample (started a period ago or more), else NaN and
    inf and a fallback. Returns mean, std (n, R) float64, fallback (n,) bool and how many rows
    were forecast. ``start``: the workload table's start column (s)."""
    n, n_res = len(rows), demand.shape[1]
    mean = np.full((n, n_res), np.nan)
    std = np.full((n, n_res), np.inf)
    fallback = np.ones(n, np.bool_)
    same = n == len(running)
    j, count = 0, 0
    for i in range(n):
        age = t - start[rows[i]]
        if age < grace_s or not age >= period:  # in grace (core.control.in_grace), or unseen
            continue
        if same:
            j = i
        else:
            while running[j] < rows[i]:
                j += 1
        for r in range(n_res):
            mean[i, r] = demand[j, r]
            std[i, r] = 0.0
        fallback[i] = False
        count += 1
    return mean, std, fallback, count


def oracle_forecast_reference(rows, running, demand, t, period, grace_s, start):
    """What :func:`oracle_forecast` computes, in numpy."""
    n = len(rows)
    mean, std = np.full((n, demand.shape[1]), np.nan), np.full((n, demand.shape[1]), np.inf)
    fallback = np.ones(n, bool)
    due = ~(t - start[rows] < grace_s)
    sub = rows[due]
    seen = t - start[sub] >= period
    sub = sub[seen]
    idx = np.flatnonzero(due)[seen]
    at = idx if n == len(running) else np.searchsorted(running, sub)
    mean[idx] = demand[at]
    std[idx] = 0.0
    fallback[idx] = False
    return mean, std, fallback, len(sub)


@numba.njit(cache=True)
def apply_resizes(rows, limit, host, wt_limit, allocated, capacity, refuse_whole, status):
    """Resize ``rows`` (n,) int64 to ``limit`` (n, R) float32 where their hosts can hold it, as
    ``SimActuator.apply`` states (:func:`apply_resizes_reference` is its numpy): a raise that
    would take a host over capacity is refused, whole (``refuse_whole``) or on the resources that
    overflow; rows no longer running and refused rows get UNSCHEDULABLE in ``status`` (n,) int8.
    ``host``, ``wt_limit``: the workload table's columns; ``allocated`` (H, R) float64 follows.
    Returns whether some allocation went down."""
    n, n_res = limit.shape
    sums = np.zeros(allocated.shape)
    delta = np.zeros((n, n_res), np.float32)
    old = np.empty((n, n_res), np.float32)  # limits before: a row named twice is written twice
    for i in range(n):
        h = host[rows[i]]
        if h < 0:
            status[i] = _UNSCHEDULABLE
            continue
        for r in range(n_res):
            old[i, r] = wt_limit[rows[i], r]
            delta[i, r] = limit[i, r] - old[i, r]
            sums[h, r] += np.float64(delta[i, r])
    over = np.empty(allocated.shape, np.bool_)
    for h in range(allocated.shape[0]):
        for r in range(n_res):
            over[h, r] = allocated[h, r] + sums[h, r] > capacity[h, r] + 1e-6
    kept = np.empty((n, n_res), np.bool_)
    changed_hosts = np.empty(n, np.int32)
    changed_delta = np.empty((n, n_res), np.float32)
    m, shrank = 0, False
    for i in range(n):
        h = host[rows[i]]
        if h < 0:
            continue
        if refuse_whole:
            raise_, full = False, False
            for r in range(n_res):
                raise_ |= delta[i, r] > 0
                full |= over[h, r]
            for r in range(n_res):
                kept[i, r] = not (raise_ and full)
        else:
            for r in range(n_res):
                kept[i, r] = not (over[h, r] and delta[i, r] > 0)
        some, every = False, True
        for r in range(n_res):
            some |= kept[i, r]
            every &= kept[i, r]
        if not every:
            status[i] = _UNSCHEDULABLE
        if some:
            changed_hosts[m] = h
            for r in range(n_res):
                changed_delta[m, r] = delta[i, r] if kept[i, r] else np.float32(0.0)
                shrank |= changed_delta[m, r] < 0
            m += 1
    add_allocation(allocated, changed_hosts[:m], changed_delta[:m], 1)
    for i in range(n):
        if host[rows[i]] < 0:
            continue
        for r in range(n_res):
            wt_limit[rows[i], r] = limit[i, r] if kept[i, r] else old[i, r]
    return shrank


def apply_resizes_reference(rows, limit, host, wt_limit, allocated, capacity, refuse_whole, status):
    """What :func:`apply_resizes` does, in numpy."""
    alive = host[rows] >= 0
    status[: len(rows)][~alive] = _UNSCHEDULABLE
    rows, limit = rows[alive], limit[alive]
    if len(rows) == 0:
        return False
    where = host[rows]
    delta = limit - wt_limit[rows]
    after = allocated.copy()
    for r in range(limit.shape[1]):
        after[:, r] += np.bincount(where, delta[:, r], minlength=len(allocated))
    over = after > capacity + 1e-6
    if refuse_whole:
        refused = np.any(over, axis=1)[where] & np.any(delta > 0, axis=1)
        kept = np.repeat(~refused[:, None], limit.shape[1], axis=1)
    else:  # each resource's raise stands or falls alone
        kept = ~(over[where] & (delta > 0))
        refused = ~kept.all(axis=1)
    changed = kept.any(axis=1)
    delta = np.where(kept, delta, 0).astype(delta.dtype)[changed]
    add_allocation(allocated, where[changed], delta, 1)
    wt_limit[rows] = np.where(kept, limit, wt_limit[rows])
    status[np.flatnonzero(alive)[refused]] = _UNSCHEDULABLE
    return bool(np.any(delta < 0))
