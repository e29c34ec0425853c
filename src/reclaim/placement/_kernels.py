"""Compiled binding for the common case: one monotone plugin that has a score kernel.

:meth:`Placer.place` in ``framework.py`` is the reference; this does the same greedy fill of one run of
identical requests in compiled code, because per-event placement is the simulator's hot path (about a
hundred small numpy calls per placement otherwise). ``tests/placement`` checks that both agree.
Signatures are plain arrays so that numba's on-disk cache serves every process.
"""

from __future__ import annotations

import numba
import numpy as np

FIT_TOLERANCE = 1e-6  # same as framework.FIT_TOLERANCE


@numba.njit(cache=True)
def run_starts(request):
    """(k+1,) int64 bounds of the runs of identical rows in ``request`` (B, R), B >= 1:
    run ``i`` is ``request[starts[i]:starts[i+1]]``."""
    n, n_res = request.shape
    starts = np.empty(n + 1, np.int64)
    k = 1
    starts[0] = 0
    for i in range(1, n):
        for r in range(n_res):
            if request[i, r] != request[i - 1, r]:
                starts[k] = i
                k += 1
                break
    starts[k] = n
    return starts[: k + 1]


@numba.njit(cache=True)
def fill_run(free, up, req, raw, hosts):
    """Place ``len(hosts)`` copies of ``req`` (R,) into ``free`` (H, R) float64, updated in place.

    Feasible hosts are taken by ``raw`` score (higher first, NaN last, ties by lower index) and each
    is filled with as many copies as fit. Writes the host of each copy placed to ``hosts`` (int32)
    in order and returns how many were placed.
    """
    count = len(hosts)
    h_count, n_res = free.shape
    # Feasible hosts not yet filled. Selecting the next best by a scan, rather than sorting all of
    # them, pays because a run fills few hosts (benchmarks/bench_simulate.py).
    open_ = np.empty(h_count, np.bool_)
    for h in range(h_count):
        open_[h] = up[h]
        for r in range(n_res):
            open_[h] &= free[h, r] + FIT_TOLERANCE >= req[r]
    k = 0
    while k < count:
        best = -1
        for h in range(h_count):
            if open_[h] and (
                best < 0 or raw[h] > raw[best] or (np.isnan(raw[best]) and not np.isnan(raw[h]))
            ):
                best = h
        if best < 0:
            break
        open_[best] = False
        most = count - k
        for r in range(len(req)):
            if req[r] > 0:
                most = min(most, int(np.floor((free[best, r] + FIT_TOLERANCE) / req[r])))
        for _ in range(most):
            hosts[k] = best
            k += 1
        for r in range(len(req)):
            free[best, r] -= most * req[r]
    return k
