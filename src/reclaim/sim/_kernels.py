"""Compiled per-event bookkeeping of the simulator over its struct-of-arrays.

An event (a completion batch, a pass that starts a few components) touches a handful of rows; done
with numpy it cost dozens of small array calls, each a few microseconds of overhead, and millions of
events make a paper-scale run. These kernels do each step in one call (``benchmarks/bench_simulate.py``
shows what that pays). ``tests/sim/test_kernels.py`` compares them with plain numpy references. Signatures are plain arrays and scalars so that numba's
on-disk cache serves every process; ``error_model="numpy"`` makes a division by zero give inf/nan as
numpy does (a component allocated no CPU never finishes) instead of raising.
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim.types import CPU, Status

_DONE = int(Status.DONE)
_RUNNING = int(Status.RUNNING)
#: Below this many rows a batch is added to the host allocation row by row; above, summed per host
#: first. The summation order fixes the float64 rounding, so it is kept stable across versions.
_PER_HOST_SUMS = 64


@numba.njit(cache=True)
def add_allocation(allocated, hosts, amount, sign):
    """``allocated`` (H, R) float64 += ``sign`` x ``amount`` (n, R) cores and GiB on ``hosts`` (n,)."""
    n, n_res = amount.shape
    if n < _PER_HOST_SUMS:
        for i in range(n):
            for r in range(n_res):
                allocated[hosts[i], r] += sign * np.float64(amount[i, r])
        return
    sums = np.zeros(allocated.shape)
    for i in range(n):
        for r in range(n_res):
            sums[hosts[i], r] += amount[i, r]
    for h in range(allocated.shape[0]):
        for r in range(n_res):
            allocated[h, r] += sign * sums[h, r]


@numba.njit(cache=True)
def release(rows, host, app, limit, allocated, free_rows, top):
    """Free ``rows``: their limits leave their hosts' allocation, ``host`` and ``app`` become -1 and
    the rows are pushed, in order, on the free-row stack ``free_rows[:top]``. Returns the new top."""
    n = len(rows)
    hosts = np.empty(n, np.int64)
    amount = np.empty((n, limit.shape[1]), limit.dtype)
    for i in range(n):
        hosts[i] = host[rows[i]]
        amount[i] = limit[rows[i]]
    add_allocation(allocated, hosts, amount, -1)
    for i in range(n):
        host[rows[i]] = -1
        app[rows[i]] = -1
        free_rows[top + i] = rows[i]
    return top + n


@numba.njit(cache=True)
def complete(
    rows,
    epoch,
    row_epoch,
    host,
    app,
    component,
    limit,
    allocated,
    free_rows,
    top,
    comp_state,
    app_done,
    app_size,
):
    """Finish the rows of one completion batch scheduled when their epochs were ``epoch`` (n,).

    A row is stale (skipped) once freed or once its rate was set again (its ``row_epoch`` moved on).
    The others' components become DONE, count towards their applications' ``app_done`` and their
    rows are released. Returns (rows finished, new free-row top, (k,) applications now complete).
    """
    live = np.empty(len(rows), np.int64)
    n = 0
    for i in range(len(rows)):
        r = rows[i]
        if host[r] >= 0 and row_epoch[r] == epoch[i]:
            live[n] = r
            n += 1
    live = live[:n]
    finished = np.empty(n, np.int64)
    k = 0
    for r in live:
        comp_state[component[r]] = _DONE
        app_done[app[r]] += 1
    for r in live:
        a = app[r]
        if app_done[a] == app_size[a]:
            seen = False
            for j in range(k):
                seen |= finished[j] == a
            if not seen:
                finished[k] = a
                k += 1
    top = release(live, host, app, limit, allocated, free_rows, top)
    return n, top, finished[:k]


@numba.njit(cache=True, error_model="numpy")
def set_rates(rows, demand_cpu, limit_cpu, t, period, remaining, rate, epoch):
    """Throttled progress rates of ``rows`` from ``t`` on, and their completions before the next tick.

    ``demand_cpu``, ``limit_cpu``: (n,) float32 cores. A row demanding more CPU than its limit
    progresses at ``limit / demand``; setting a rate bumps the row's ``epoch`` (older completion
    events become stale). Returns the rows finishing before the next tick sorted by finish time
    (ties in row order), their epochs, finish times (s), and ``starts`` (g+1,) bounding the groups
    of equal finish time: group ``i`` is ``starts[i]:starts[i+1]``.
    """
    n = len(rows)
    finish = np.empty(n)
    for i in range(n):
        r = rows[i]
        q = 1.0
        if demand_cpu[i] > limit_cpu[i]:
            q = np.float64(limit_cpu[i] / demand_cpu[i])  # float32 quotient, as numpy computes it
        rate[r] = q
        epoch[r] += 1
        finish[i] = t + remaining[r] / q
    next_tick = (np.floor(t / period) + 1) * period
    soon = np.flatnonzero(finish < next_tick)
    order = soon[np.argsort(finish[soon], kind="mergesort")]
    out_rows, out_finish = rows[order], finish[order]
    out_epoch = np.empty(len(order), np.int64)
    starts = np.empty(len(order) + 1, np.int64)
    g = 0
    for i in range(len(order)):
        out_epoch[i] = epoch[out_rows[i]]
        if i == 0 or out_finish[i] != out_finish[i - 1]:
            starts[g] = i
            g += 1
    starts[g] = len(order)
    return out_rows, out_epoch, out_finish, starts[: g + 1]


@numba.njit(cache=True, error_model="numpy")
def start(
    free_rows,
    top,
    comps,
    where,
    n_returned,
    app,
    t,
    wl_request,
    wl_work,
    wl_core,
    wl_shape,
    wl_offset,
    shape_indptr,
    shape_data,
    wt_component,
    wt_app,
    wt_host,
    wt_request,
    wt_limit,
    wt_core,
    wt_start,
    remaining,
    since,
    shape_base,
    shape_len,
    shape_offset,
    comp_state,
    allocated,
    period,
    rate,
    epoch,
):
    """Start those of ``app``'s components ``comps`` (m,) that were placed, on hosts ``where`` (m,)
    (-1: not placed), at ``t``, in rows popped from the free-row stack ``free_rows[:top]``. Fills
    the rows (limit = request), caches where each row's usage shape starts, marks the components
    RUNNING, adds their requests to the hosts' allocation and sets their rates.

    Returns the new top, what :func:`elastic_outcome` says of ``comps`` but the count, then what
    :func:`set_rates` returns. One call instead of two pays in the simulator's hot path. When the
    stack holds fewer rows than were placed, nothing changes and the top returned is -1.
    """
    n, still, after = elastic_outcome(comps, where, n_returned)
    if top < n:
        none = np.empty(0, np.int64)
        return -1, still, after, none, none, np.empty(0), none
    placed = np.flatnonzero(where >= 0)
    hosts = where[placed]
    rows = free_rows[top - n : top].copy()
    demand_cpu = np.empty(n, np.float32)
    limit_cpu = np.empty(n, np.float32)
    for i in range(n):
        r, c = rows[i], comps[placed[i]]
        wt_component[r] = c
        wt_app[r] = app
        wt_host[r] = hosts[i]
        wt_request[r] = wl_request[c]
        wt_limit[r] = wl_request[c]
        wt_core[r] = wl_core[c]
        wt_start[r] = t
        remaining[r] = wl_work[c]
        since[r] = t
        base = shape_indptr[wl_shape[c]]
        shape_base[r] = base
        shape_len[r] = shape_indptr[wl_shape[c] + 1] - base
        shape_offset[r] = wl_offset[c]
        comp_state[c] = _RUNNING
        # Lag 0: a component starts at the shape sample its offset names.
        demand_cpu[i] = shape_data[base + wl_offset[c] % shape_len[r], CPU] * wl_request[c, CPU]
        limit_cpu[i] = wl_request[c, CPU]
    add_allocation(allocated, hosts, wt_request[rows], 1)
    completions = set_rates(rows, demand_cpu, limit_cpu, t, period, remaining, rate, epoch)
    return (top - n, still, after) + completions


@numba.njit(cache=True)
def free_capacity(capacity, allocated, up, out):
    """``out`` (H, R) = capacity not allocated, zero on hosts that are down (``HostTable.free``
    written into a buffer the simulator reuses); returns ``out``."""
    for h in range(capacity.shape[0]):
        for r in range(capacity.shape[1]):
            out[h, r] = capacity[h, r] - allocated[h, r] if up[h] else 0.0
    return out


@numba.njit(cache=True)
def column_sum(a, r):
    """``a[:, r].sum()`` added in row order, as numpy sums ``a.sum(axis=0)``."""
    total = 0.0  # a scalar accumulator: summing into an array row by row is several times slower
    for h in range(a.shape[0]):
        total += a[h, r]
    return total


@numba.njit(cache=True)
def total_covers(free, need):
    """True when the cluster's total ``free`` (H, R) covers ``need`` (R,) on every resource."""
    short = False
    for r in range(free.shape[1]):
        short |= need[r] > column_sum(free, r) + 1e-6
    return not short


@numba.njit(cache=True, error_model="numpy")
def elastic_stop(free, smallest, first, end):
    """How far into an application's fresh elastic components ``first:end`` a pass need look, given
    ``free`` (H, R) and its smallest elastic request ``smallest`` (R,): -1 when no host has room
    even for that; else no more can fit than the total free capacity holds copies of it (plus one,
    a margin for rounding)."""
    roomy = False
    for h in range(free.shape[0]):
        fits = True
        for r in range(free.shape[1]):
            fits &= free[h, r] + 1e-6 >= smallest[r]
        if fits:
            roomy = True
            break
    if not roomy:
        return -1
    most = np.inf
    for r in range(free.shape[1]):
        copies = np.floor(column_sum(free, r) / np.float64(smallest[r]))
        if np.isnan(copies):
            return end
        most = min(most, copies)
    return end if not np.isfinite(most) else min(end, first + int(most) + 1)


@numba.njit(cache=True)
def elastic_outcome(waiting, where, n_returned):
    """Sort out an elastic pass: ``waiting`` (n,) components, the first ``n_returned`` of them
    returned after a loss and the rest fresh in order, placed on ``where`` (n,) (-1: not placed).

    Fresh components are taken in order, so any skipped before the last placed one wait with the
    returned ones. Returns (how many were placed, components still waiting, the fresh component
    after the last placed, or -1 if no fresh one was placed).
    """
    n_placed, last = 0, -1
    for i in range(len(waiting)):
        if where[i] >= 0:
            n_placed += 1
            if i >= n_returned:
                last = i
    skipped = np.flatnonzero(where[: max(last, n_returned)] < 0)
    after = waiting[last] + 1 if last >= 0 else -1
    return n_placed, waiting[skipped], after


@numba.njit(cache=True)
def advance(rows, t, remaining, since, rate):
    """Account the work (s at full speed) ``rows`` did at their rates from ``since`` to ``t``."""
    for r in rows:
        left = remaining[r] - rate[r] * (t - since[r])
        remaining[r] = left if left >= 0.0 else 0.0
        since[r] = t


@numba.njit(cache=True)
def demand(rows, t, period, start, request, shape_base, shape_len, shape_offset, shape_data):
    """(n, R) float32 cores and GiB each row asks for during the interval starting at ``t``: the
    sample ``lag = (t - start) // period`` periods after its start of its cached usage shape."""
    out = np.empty((len(rows), request.shape[1]), np.float32)
    for i in range(len(rows)):
        r = rows[i]
        lag = np.int64((t - start[r]) // period)
        k = shape_base[r] + (shape_offset[r] + lag) % shape_len[r]
        for j in range(request.shape[1]):
            out[i, j] = shape_data[k, j] * request[r, j]
    return out


@numba.njit(cache=True)
def recount(rows, host, limit, used, allocated, host_used):
    """Host totals ``allocated`` and ``host_used`` (H, R) float64 summed afresh over ``rows``'
    ``limit`` and ``used`` (W, R) float32, in row order."""
    allocated[:] = 0.0
    host_used[:] = 0.0
    for r in rows:
        for j in range(limit.shape[1]):
            allocated[host[r], j] += limit[r, j]
            host_used[host[r], j] += used[r, j]


@numba.njit(cache=True)
def accumulate_by_app(
    rows, app, request, limit, used, seconds, app_requested, app_allocated, app_used
):
    """Add ``seconds`` x ``rows``' ``request``, ``limit`` and ``used`` (W, R) into their
    applications' running totals ``app_requested``, ``app_allocated`` and ``app_used`` (A, R)
    float64 (resource-seconds)."""
    for r in rows:
        a = app[r]
        for j in range(limit.shape[1]):
            app_requested[a, j] += seconds * request[r, j]
            app_allocated[a, j] += seconds * limit[r, j]
            app_used[a, j] += seconds * used[r, j]


@numba.njit(cache=True)
def same_row(a, i, j):
    """``a[i] == a[j]`` on every column, without allocating."""
    same = True
    for r in range(a.shape[1]):
        same &= a[i, r] == a[j, r]
    return same


@numba.njit(cache=True)
def may_fit(free, up, request):
    """False only when no placer can place all of ``request`` (n, R) into ``free`` (H, R): a run of
    identical requests outnumbers the copies of it the up hosts have room for, even counted with
    twice the placer's tolerance. A cheap test that spares the simulator most hopeless attempts to
    admit the head of the queue."""
    n, n_res = request.shape
    i = 0
    while i < n:
        j = i + 1
        while j < n and same_row(request, i, j):
            j += 1
        slots = 0
        for h in range(free.shape[0]):
            if not up[h]:
                continue
            copies = j - i  # a request of zeros fits any number of times
            for r in range(n_res):
                if request[i, r] > 0:
                    room = np.floor((free[h, r] + 2e-6) / request[i, r])
                    copies = min(copies, max(int(room), 0))
            slots += copies
            if slots >= j - i:
                break
        if slots < j - i:
            return False
        i = j
    return True


def host_oom_victims(host, mem, capacity):
    """(n,) bool: the components a host's OOM killer stops, largest memory demand first, until
    each host's remaining demand fits its capacity. Plain numpy: one sort, no Python loop.

    host: (n,) int32 host of each component; mem: (n,) float32 GiB demand; capacity: (H,) GiB.
    """
    n = len(host)
    if n == 0:
        return np.zeros(0, np.bool_)
    total = np.bincount(host, mem.astype(np.float64), minlength=len(capacity))
    excess = total - capacity
    if not np.any(excess > 1e-6):
        return np.zeros(n, np.bool_)
    order = np.lexsort((-mem.astype(np.float64), host))  # per host, largest demand first
    h, m = host[order], mem[order].astype(np.float64)
    running = np.cumsum(m)
    first = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    group_start = np.repeat(first, np.diff(np.r_[first, n]))
    removed_before = running - m - (running[group_start] - m[group_start])
    victim = np.zeros(n, np.bool_)
    victim[order] = (excess[h] > 1e-6) & (removed_before < excess[h] - 1e-6)
    return victim
