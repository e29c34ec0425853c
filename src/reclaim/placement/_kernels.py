"""Compiled binding for the common case: one monotone plugin that has a score kernel.

:meth:`Placer.place` in ``framework.py`` is the reference; this does the same greedy fill of one run of
identical requests in compiled code, because per-event placement is the simulator's hot path (about a
hundred small numpy calls per placement otherwise). ``tests/placement`` checks that both agree.
Signatures are plain arrays and tuples so that numba's on-disk cache serves every process.

A request reaches these kernels as a tuple of R floats, not an array: numba then knows R when it
compiles, unrolls every loop over resources, and the loops over hosts run about twice as fast
(``benchmarks/bench_placement.py``).
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
def largest_capacity(capacity, req):
    """(R,) the largest capacity of each resource over all hosts; ``req`` only fixes R."""
    top = np.full(len(req), -np.inf)
    for h in range(capacity.shape[0]):
        for r in range(len(req)):
            top[r] = max(top[r], capacity[h, r])
    return top


@numba.njit(cache=True)
def fill_run(free, up, req, raw, hosts):
    """Place ``len(hosts)`` copies of ``req`` (R-tuple) into ``free`` (H, R) float64, in place.

    Feasible hosts are taken by ``raw`` score (higher first, NaN last, ties by lower index) and each
    is filled with as many copies as fit. Writes the host of each copy placed to ``hosts`` (int32)
    in order and returns how many were placed.
    """
    count = len(hosts)
    if count == 1:  # one workload, as most calls are: one pass over the hosts, nothing stored
        best = _select(free, up, req, raw)
        if best < 0:
            return 0
        hosts[0] = best
        for r in range(len(req)):
            free[best, r] -= req[r]
        return 1
    h_count = free.shape[0]
    # Feasible hosts not yet filled. Selecting the next best by a scan, rather than sorting all of
    # them, pays because a run fills few hosts (benchmarks/bench_simulate.py).
    open_ = np.empty(h_count, np.bool_)
    for h in range(h_count):
        ok = up[h]
        for r in range(len(req)):
            ok &= free[h, r] + FIT_TOLERANCE >= req[r]
        open_[h] = ok
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


@numba.njit(cache=True)
def _select(free, up, req, raw):
    """The host :func:`fill_run` would fill first, or -1: the feasible host of highest ``raw``
    (ties: lower index; NaN last).

    The main pass keeps no per-host state, moves only on a strictly higher score, and reads a
    host's free capacity only when its score would beat the best so far: most hosts cost one
    compare (benchmarks/bench_placement.py). Hosts scored -inf or NaN are taken only when nothing
    scored higher fits, by the rare second pass.
    """
    best, top = -1, -np.inf
    for h in range(free.shape[0]):
        v = raw[h]
        if v > top:
            ok = up[h]
            for r in range(len(req)):
                ok &= free[h, r] + FIT_TOLERANCE >= req[r]
            if ok:
                best, top = h, v
    if best >= 0:
        return best
    for h in range(free.shape[0]):
        ok = up[h]
        for r in range(len(req)):
            ok &= free[h, r] + FIT_TOLERANCE >= req[r]
        if ok and (best < 0 or (np.isnan(raw[best]) and not np.isnan(raw[h]))):
            best = h
    return best
