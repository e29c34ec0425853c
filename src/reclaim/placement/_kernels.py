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
    return run_starts_into(request, np.empty(len(request) + 1, np.int64))


@numba.njit(cache=True)
def run_starts_into(request, out):
    """:func:`run_starts` written to ``out`` (B + 1,) (the event loop's scratch, no allocation);
    returns the view of it that holds the bounds."""
    n, n_res = request.shape
    out[0] = 0
    k = 1
    for i in range(1, n):
        for r in range(n_res):
            if request[i, r] != request[i - 1, r]:
                out[k] = i
                k += 1
                break
    out[k] = n
    return out[: k + 1]


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
    return fill_run_into(free, up, req, raw, hosts, np.empty(free.shape[0], np.bool_))


#: Hosts :func:`fill_run_into` selects by a scan before it sorts the rest.
_SCANS = 4


@numba.njit(cache=True)
def fill_run_into(free, up, req, raw, hosts, open_):
    """:func:`fill_run` for ``len(hosts)`` > 1 with ``open_`` (H,) bool scratch (callers that
    place many runs keep one)."""
    count = len(hosts)
    h_count = free.shape[0]
    # Feasible hosts not yet filled. Selecting the next best by a scan, rather than sorting all of
    # them, pays because most runs fill few hosts; a run that fills more than a few sorts the
    # rest once (at 250 hosts a scan per host filled cost more; benchmarks/bench_simulate.py).
    n_open = 0
    for h in range(h_count):
        ok = up[h]
        for r in range(len(req)):
            ok &= free[h, r] + FIT_TOLERANCE >= req[r]
        open_[h] = ok
        n_open += ok
    k = 0
    scans = 0
    while k < count and n_open > 0:
        if scans == _SCANS:
            return _fill_sorted(free, req, raw, hosts, open_, k)
        scans += 1
        best = -1
        for h in range(h_count):
            if open_[h] and (
                best < 0 or raw[h] > raw[best] or (np.isnan(raw[best]) and not np.isnan(raw[h]))
            ):
                best = h
        open_[best] = False
        n_open -= 1
        k = _fill_host(free, req, hosts, k, best)
    return k


@numba.njit(cache=True)
def _fill_host(free, req, hosts, k, best):
    """Put on ``best`` as many copies as fit, up to the ``len(hosts) - k`` still to place."""
    most = len(hosts) - k
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
def _fill_sorted(free, req, raw, hosts, open_, k):
    """The rest of :func:`fill_run_into`: the open hosts in the order its scans would take them
    (higher score first, ties to the lower index, NaN last), each filled in turn."""
    scored = np.flatnonzero(open_ & ~np.isnan(raw))
    order = scored[np.argsort(-raw[scored], kind="mergesort")]  # stable: ties by index
    unscored = np.flatnonzero(open_ & np.isnan(raw))
    for best in order:
        if k == len(hosts):
            return k
        k = _fill_host(free, req, hosts, k, best)
    for best in unscored:
        if k == len(hosts):
            return k
        k = _fill_host(free, req, hosts, k, best)
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


# Compiled stand-ins for the reference path of a placer of one plugin whose scores go through
# ``framework.min_max_normalize``: they rank hosts by the *normalised, weighted* level, not by the
# raw score, because normalising can round two distinct raw scores to one level (a tie the
# reference then breaks by host index). A plugin's ``group_kernel`` is built from these.


@numba.njit(cache=True)
def fits_into(free, up, req, ok):
    """Write to ``ok`` (H,) whether each host is up and covers ``req`` (R,) float64, as
    ``framework.fits`` does; returns how many hosts do."""
    count = 0
    for h in range(free.shape[0]):
        fit = up[h]
        for r in range(len(req)):
            fit &= free[h, r] + FIT_TOLERANCE >= req[r]
        ok[h] = fit
        count += fit
    return count


@numba.njit(cache=True)
def min_max_levels(raw, ok, weight, levels):
    """Write ``weight * min_max_normalize(raw, ok)`` to ``levels`` at the hosts where ``ok``, with
    the reference's arithmetic step for step (NaN propagates through the min and max)."""
    lo, hi = np.inf, -np.inf
    for h in range(len(raw)):
        if ok[h]:
            v = raw[h]
            if not np.isnan(lo) and (np.isnan(v) or v < lo):
                lo = v
            if not np.isnan(hi) and (np.isnan(v) or v > hi):
                hi = v
    span = hi - lo
    spread = span > 0
    scale = 100.0 / span if spread else 0.0
    for h in range(len(raw)):
        if ok[h]:
            scaled = (raw[h] - lo) * scale if spread else 100.0
            if scaled > 100.0:  # np.minimum: NaN stays NaN
                scaled = 100.0
            levels[h] = weight * scaled


@numba.njit(cache=True)
def next_best(ok, levels):
    """The host ``Placer.host_order`` puts first among ``ok``: highest level, NaN last, ties to the
    lower index; -1 if none."""
    best = -1
    for h in range(len(levels)):
        if ok[h] and (
            best < 0
            or levels[h] > levels[best]
            or (np.isnan(levels[best]) and not np.isnan(levels[h]))
        ):
            best = h
    return best


@numba.njit(cache=True)
def copies_that_fit(free, h, req):
    """How many copies of ``req`` (R,) float64 fit in ``free[h]``, as ``framework.copies_that_fit``
    counts them (capped at the int32 maximum)."""
    most = np.inf
    for r in range(len(req)):
        if req[r] > 0:
            most = min(most, np.floor((free[h, r] + FIT_TOLERANCE) / req[r]))
    return np.int64(min(most, 2147483647.0))


@numba.njit(cache=True)
def fill_by_levels(free, up, req_fit, req_take, count, raw, weight, ok, levels, hosts, offset):
    """Place up to ``count`` copies of one request as ``Placer._place_run`` does for a monotone
    plugin scoring ``raw`` (H,): rank the hosts where ``req_fit`` fits once, then fill them best
    first with as many copies of ``req_take`` as fit. ``req_fit`` is the request as float32 (the
    reference tests room with that), ``req_take`` as given; both (R,) float64. Writes the hosts to
    ``hosts[offset:]`` and returns how many copies were placed; ``ok`` and ``levels`` are (H,)
    scratch."""
    if fits_into(free, up, req_fit, ok) == 0:
        return 0
    min_max_levels(raw, ok, weight, levels)
    placed = 0
    before = 0  # copies the hosts ranked so far could hold: the reference's prefix sum
    while before < count:  # every later host would take max(count - before, 0) = 0 copies
        h = next_best(ok, levels)
        if h < 0:
            break
        ok[h] = False
        per = copies_that_fit(free, h, req_take)
        take = min(per, count - before)
        before += per
        for _ in range(take):
            hosts[offset + placed] = h
            placed += 1
        for r in range(len(req_take)):
            free[h, r] -= take * req_take[r]
    return placed


@numba.njit(cache=True)
def fits_nowhere(free, up, request):
    """(B,) bool: rows of ``request`` (B, R) float64 that fit no host, ``~framework.fits(...)
    .any(axis=1)``. Stops at the first host that fits: ~0.05 ms for 300 x 200 against ~2 ms for
    the (B, H, R) numpy test (benchmarks/bench_corp_alloc.py)."""
    n = request.shape[0]
    out = np.ones(n, np.bool_)
    for i in range(n):
        for h in range(free.shape[0]):
            fit = up[h]
            for r in range(request.shape[1]):
                fit &= free[h, r] + FIT_TOLERANCE >= request[i, r]
            if fit:
                out[i] = False
                break
    return out


@numba.njit(cache=True)
def best_by_levels(raw, ok, weight, levels):
    """The host ``Placer.host_order`` puts first for one plugin's ``raw`` (H,) scores normalised
    by ``min_max_normalize`` and weighted, among ``ok``; -1 if none. ``levels``: (H,) scratch."""
    min_max_levels(raw, ok, weight, levels)
    return next_best(ok, levels)
