"""CORP's allocation (Liu et al., section III-B): pack complementary jobs, then the most matched VM.

Packing: each job's dominant resource is the one it asks the largest share of (against the largest
host's capacity, as best-fit measures it). Taking the batch in order, every job not yet packed is
paired with the unpacked job of a *different* dominant resource whose demands deviate most from its
own, DV(j, i) = sum_k (d_jk - m_k)^2 + (d_ik - m_k)^2 with m_k = (d_jk + d_ik) / 2; a job with no
such partner is an entity alone. The framework binds each pair to one host.

Most matched VM: among the hosts that satisfy the entity's demand, the one with the smallest unused
resource volume, sum_k free_k / C'_k, C' being the largest capacity of each resource over all hosts.
CORP computes volumes over *predicted* unused resources; here ``free`` is whatever the caller says
is unused (``reclaim.tvw`` passes capacity minus the residents' peaks by default).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.placement._kernels import (
    fill_by_levels,
    fits_into,
    min_max_levels,
    next_best,
)
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


def deviation(a: NDArray, b: NDArray) -> NDArray[np.float64]:
    """DV of demand vectors ``a`` (..., R) and ``b`` (..., R): how far apart two jobs' demands are."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    mid = (a + b) / 2
    return ((a - mid) ** 2 + (b - mid) ** 2).sum(axis=-1)


def complementary_pairs(request: NDArray, largest: NDArray) -> NDArray[np.int64]:
    """(B,) entity label of each job of ``request`` (B, R): CORP's greedy pairing, in batch order;
    ties between partners go to the earlier job. ``largest``: (R,) scale of the dominant share.

    Compiled (:func:`_pairs_kernel`) for fewer than 8 resources; :func:`pairs_reference` is the
    plain numpy version it must equal, label for label."""
    request = np.asarray(request)
    largest = np.asarray(largest, np.float64)
    if request.ndim != 2 or request.shape[1] >= 8 or largest.shape != (request.shape[1],):
        return pairs_reference(request, largest)
    # The batch x batch search in numpy calls per job cost ~10 ms for 300 jobs; compiled, ~0.1 ms
    # (benchmarks/bench_corp_alloc.py).
    return _pairs_kernel(np.ascontiguousarray(request, np.float64), largest)


def pairs_reference(request: NDArray, largest: NDArray) -> NDArray[np.int64]:
    """:func:`complementary_pairs` in numpy, one job at a time: the reference."""
    n = len(request)
    dominant = (request / largest).argmax(axis=1)
    label = np.full(n, -1, np.int64)
    entity = 0
    for i in range(n):
        if label[i] >= 0:
            continue
        label[i] = entity
        partners = np.flatnonzero((label < 0) & (dominant != dominant[i]))
        if len(partners):
            label[partners[np.argmax(deviation(request[partners], request[i]))]] = entity
        entity += 1
    return label


@numba.njit(cache=True)
def _argmax_first(v, best, value):
    """Whether ``v`` replaces ``value`` (at index ``best``) as np.argmax scans: the first NaN wins,
    otherwise the first strict maximum."""
    if best < 0:
        return True
    if np.isnan(value):
        return False
    return np.isnan(v) or v > value


@numba.njit(cache=True)
def _pairs_kernel(request, largest):
    """:func:`pairs_reference` for ``request`` (B, R) float64 (exact copies of the float32
    requests), R < 8 (numpy sums fewer than 8 terms in order, as here)."""
    n, n_res = request.shape
    dominant = np.empty(n, np.int64)
    for i in range(n):
        best, value = -1, 0.0
        for r in range(n_res):
            v = request[i, r] / largest[r]
            if _argmax_first(v, best, value):
                best, value = r, v
        dominant[i] = best
    label = np.full(n, -1, np.int64)
    entity = 0
    for i in range(n):
        if label[i] >= 0:
            continue
        label[i] = entity
        best, value = -1, 0.0
        for j in range(i + 1, n):  # rows before i are all labelled
            if label[j] >= 0 or dominant[j] == dominant[i]:
                continue
            dv = -0.0
            for r in range(n_res):
                a, b = request[j, r], request[i, r]
                mid = (a + b) / 2
                dv += (a - mid) * (a - mid) + (b - mid) * (b - mid)
            if _argmax_first(dv, best, value):
                best, value = j, dv
        if best >= 0:
            label[best] = entity
        entity += 1
    return label


@numba.njit(cache=True)
def _volume(free, top, h):
    """Unused volume of host ``h``: the sum of ``free[h, r] / top[r]`` in numpy's own order (in
    blocks of 8 from 8 terms on), so that it equals :meth:`CorpPacking.score` to the bit.
    At most 128 resources (numpy splits longer rows in halves)."""
    n = free.shape[1]
    if n < 8:
        s = -0.0
        for r in range(n):
            s += free[h, r] / top[r]
        return s
    a0, a1 = free[h, 0] / top[0], free[h, 1] / top[1]
    a2, a3 = free[h, 2] / top[2], free[h, 3] / top[3]
    a4, a5 = free[h, 4] / top[4], free[h, 5] / top[5]
    a6, a7 = free[h, 6] / top[6], free[h, 7] / top[7]
    i, stop = 8, n - n % 8
    while i < stop:
        a0 += free[h, i] / top[i]
        a1 += free[h, i + 1] / top[i + 1]
        a2 += free[h, i + 2] / top[i + 2]
        a3 += free[h, i + 3] / top[i + 3]
        a4 += free[h, i + 4] / top[i + 4]
        a5 += free[h, i + 5] / top[i + 5]
        a6 += free[h, i + 6] / top[i + 6]
        a7 += free[h, i + 7] / top[i + 7]
        i += 8
    s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    for r in range(i, n):
        s += free[h, r] / top[r]
    return s


@numba.njit(cache=True)
def corp_group_kernel(
    capacity, free, up, req_fit, req_take, totals, members, bounds, grouped, hopeless, weight, hosts
):
    """Bind a batch as a placer of corp-packing alone does in ``Placer._place_groups`` (``grouped``)
    or, when ``prepare`` paired nothing, in its runs of identical requests (``Placer._place_run``).

    capacity, free: (H, R) float64, ``free`` updated in place; up: (H,) bool; req_fit, req_take:
    (B, R) float64, the requests as float32 (for room tests) and as given (for binding); totals:
    (G, R) float64 summed request of each group; members: (B,) int64 rows, group ``g`` being
    ``members[bounds[g]:bounds[g + 1]]`` (groups in order of their first row, rows ascending; a run
    when not ``grouped``); hopeless: (B,) rows that fit no host; weight: the plugin's weight.
    Writes the host of each placed row to ``hosts`` (B,) int32 (left as is for the others).
    Returns False, binding nothing, for more than 128 resources (the caller then binds by the
    reference path).

    The score is kept per host and recomputed only where a bind changed ``free``, and the hosts
    are ranked by a scan instead of a sort: one entity costs a few passes over H in compiled code
    against ~0.5 ms of numpy calls (benchmarks/bench_corp_alloc.py).
    """
    n_h, n_r = free.shape
    if n_r > 128:
        return False
    top = np.full(n_r, -np.inf)  # capacity.max(axis=0), NaN propagating
    for h in range(n_h):
        for r in range(n_r):
            c = capacity[h, r]
            if not np.isnan(top[r]) and (np.isnan(c) or c > top[r]):
                top[r] = c
    raw = np.empty(n_h)  # minus the unused volume: CorpPacking.score
    for h in range(n_h):
        raw[h] = -_volume(free, top, h)
    ok = np.empty(n_h, np.bool_)
    levels = np.empty(n_h)
    one = np.empty(1, np.int32)
    for g in range(len(bounds) - 1):
        lo, hi = bounds[g], bounds[g + 1]
        if not grouped:
            if not hopeless[members[lo]]:
                placed = fill_by_levels(
                    free,
                    up,
                    req_fit[members[lo]],
                    req_take[members[lo]],
                    hi - lo,
                    raw,
                    weight,
                    ok,
                    levels,
                    hosts,
                    lo,
                )
                for k in range(lo, hi):
                    h = hosts[k]
                    if k < lo + placed and (k == lo or h != hosts[k - 1]):
                        raw[h] = -_volume(free, top, h)
            continue
        whole = hi - lo > 1
        for k in range(lo, hi):
            whole &= not hopeless[members[k]]
        if whole and fits_into(free, up, totals[g], ok) > 0:
            min_max_levels(raw, ok, weight, levels)
            best = next_best(ok, levels)
            for k in range(lo, hi):
                hosts[members[k]] = best
            for r in range(n_r):
                free[best, r] -= totals[g, r]
            raw[best] = -_volume(free, top, best)
            continue
        for k in range(lo, hi):
            m = members[k]
            if hopeless[m]:
                continue
            if fill_by_levels(
                free, up, req_fit[m], req_take[m], 1, raw, weight, ok, levels, one, 0
            ):
                hosts[m] = one[0]
                raw[one[0]] = -_volume(free, top, one[0])
            else:
                hosts[m] = -1
    return True


@register("placement", "corp-packing")
class CorpPacking(Component):
    # monotone: load added to a host only shrinks its unused volume, raising its score; the
    # group kernel binds a whole batch in compiled code, for a placer of this plugin alone
    __capabilities__ = PlacementCapabilities(
        monotone=True, groups=True, group_kernel=corp_group_kernel
    )

    def prepare(self, state: CycleState) -> NDArray[np.int64]:
        """(B,) pair label of each workload of the batch."""
        return complementary_pairs(state.request, state.capacity.max(axis=0))

    def score(self, state: CycleState, feasible):
        """(B, H) minus each host's unused resource volume (the same for every workload)."""
        volume = (state.free / state.capacity.max(axis=0)).sum(axis=1)
        return np.broadcast_to(-volume, feasible.shape)

    normalize = staticmethod(min_max_normalize)
