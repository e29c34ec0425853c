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
def fill_run(free, up, req, raw, count):
    """Place ``count`` copies of ``req`` (R,) into ``free`` (H, R) float64, updated in place.

    Feasible hosts are taken by ``raw`` score (higher first, ties by lower index) and each is
    filled with as many copies as fit. Returns (count,) int32 hosts, -1 where nothing fit.
    """
    h_count = free.shape[0]
    hosts = np.full(count, -1, np.int32)
    feasible = np.empty(h_count, np.bool_)
    for h in range(h_count):
        feasible[h] = up[h] and np.all(free[h] + FIT_TOLERANCE >= req)
    candidates = np.flatnonzero(feasible)
    order = candidates[np.argsort(-raw[candidates], kind="mergesort")]
    k = 0
    for h in order:
        if k == count:
            break
        most = count - k
        for r in range(len(req)):
            if req[r] > 0:
                most = min(most, int(np.floor((free[h, r] + FIT_TOLERANCE) / req[r])))
        for _ in range(most):
            hosts[k] = h
            k += 1
        for r in range(len(req)):
            free[h, r] -= most * req[r]
    return hosts
