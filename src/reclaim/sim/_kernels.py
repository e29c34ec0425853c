"""Compiled per-event bookkeeping of the simulator over its struct-of-arrays.

An event (a completion batch, a pass that starts a few components) touches a handful of rows; done
with numpy it cost dozens of small array calls, each a few microseconds of overhead, and millions of
events make a paper-scale run. These kernels do each step in one call (``benchmarks/bench_simulate.py``
shows what that pays). ``tests/sim/test_kernels.py`` compares them with plain numpy references.
Signatures are arrays, scalars and named tuples of arrays, all of which numba's on-disk cache
serves to every process;
``error_model="numpy"`` makes a division by zero give inf/nan as numpy does (a component allocated
no CPU never finishes) instead of raising.

Below the kernels: the containers the Python path and the compiled event loop share (admission
queue, waiting applications, returned components, pending completions) and the event loop itself,
:func:`run_events`, which ``tests/sim/test_event_loop.py`` compares with the Python handlers.
Kernels marked ``_nrt=False`` allocate nothing and skip numba's reference counting of the arrays
they are handed (two atomic operations per array per call, which at 40 arrays a call and millions
of calls was a seventh of the run): speed tricks, like every other marked so.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from reclaim._numba_util import radix_argsort
from reclaim.core.types import CPU, MEM, R, Status
from reclaim.placement._kernels import run_starts
from reclaim.placement.compiled import place, place_runs

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
        finish[i] = _set_rate(rows[i], demand_cpu[i], limit_cpu[i], t, remaining, rate, epoch)
    return _finishing(rows, finish, t, period, epoch)


@numba.njit(cache=True, error_model="numpy")
def _set_rate(r, demand_cpu, limit_cpu, t, remaining, rate, epoch):
    """Row ``r``'s rate from ``t`` on (float32 cores in); returns when it finishes at that rate."""
    q = 1.0
    if demand_cpu > limit_cpu:
        q = np.float64(limit_cpu / demand_cpu)  # float32 quotient, as numpy computes it
    rate[r] = q
    epoch[r] += 1
    return t + remaining[r] / q


@numba.njit(cache=True)
def _finishing(rows, finish, t, period, epoch):
    """What :func:`set_rates` returns, given each row's ``finish`` (n,) s."""
    next_tick = (np.floor(t / period) + 1) * period
    soon = np.flatnonzero(finish < next_tick)
    order = soon[stable_argsort(finish[soon])]
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


#: Below this many keys :func:`stable_argsort` merges; above, it sorts by radix.
_RADIX_FROM = 256


@numba.njit(cache=True)
def stable_argsort(keys):
    """``np.argsort(keys, kind="mergesort")`` of finite ``keys`` >= 0 (n,) float64.

    Speed trick: a tick sets thousands of rows' rates and sorts those finishing before the next
    one; numba's merge sort cost more than the rest of that step. Non-negative doubles order as
    their bit patterns, so a least-significant-digit radix sort on them (stable, 11-bit digits,
    digits all keys share skipped: keys within one period of each other share the top ones) gives
    the same permutation in a few passes (bench_simulate.py)."""
    n = len(keys)
    if n < _RADIX_FROM:
        return np.argsort(keys, kind="mergesort")
    return radix_argsort(np.ascontiguousarray(keys).view(np.uint64))


class WorkloadColumns(NamedTuple):
    """The workload's per-component arrays the kernels read: request (C, R) float32, work (C,)
    float32, core (C,) bool, shape and shape_offset (C,) int32, and the usage shapes' indptr and
    data (the rows of a :class:`~reclaim.core.grouped.GroupedArray`)."""

    request: np.ndarray
    work: np.ndarray
    core: np.ndarray
    shape: np.ndarray
    shape_offset: np.ndarray
    shape_indptr: np.ndarray
    shape_data: np.ndarray


class RowColumns(NamedTuple):
    """Per row of the workload table: its columns (``WorkloadTable``'s but ``used``), then the
    simulator's progress of the row (work left, since when, speed, completion epoch) and where its
    usage shape starts, how long it is and its offset."""

    component: np.ndarray
    app: np.ndarray
    host: np.ndarray
    request: np.ndarray
    limit: np.ndarray
    core: np.ndarray
    start: np.ndarray
    remaining: np.ndarray
    since: np.ndarray
    rate: np.ndarray
    epoch: np.ndarray
    shape_base: np.ndarray
    shape_len: np.ndarray
    shape_offset: np.ndarray


@numba.njit(cache=True, error_model="numpy")
def start(free_rows, top, comps, where, n_returned, app, t, workload, row_columns, comp_state,
          allocated, period):  # fmt: skip
    """Start those of ``app``'s components ``comps`` (m,) that were placed, on hosts ``where`` (m,)
    (-1: not placed), at ``t``, in rows popped from the free-row stack ``free_rows[:top]``. Fills
    the rows (limit = request), caches where each row's usage shape starts, marks the components
    RUNNING, adds their requests to the hosts' allocation and sets their rates. ``workload``: a
    :class:`WorkloadColumns`; ``row_columns``: a :class:`RowColumns`.

    Returns the new top, what :func:`elastic_outcome` says of ``comps`` but the count, then what
    :func:`set_rates` returns. One call instead of two pays in the simulator's hot path. When the
    stack holds fewer rows than were placed, nothing changes and the top returned is -1.
    """
    wl_request, wl_work, wl_core, wl_shape, wl_offset, shape_indptr, shape_data = workload
    wt_component, wt_app, wt_host, wt_request, wt_limit, wt_core, wt_start = row_columns[:7]
    remaining, since, rate, epoch, shape_base, shape_len, shape_offset = row_columns[7:]
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


@numba.njit(cache=True)
def covers(free_total, need):
    """:func:`total_covers` given the column sums ``free_total`` (R,) of ``free``."""
    short = False
    for r in range(len(need)):
        short |= need[r] > free_total[r] + 1e-6
    return not short


@numba.njit(cache=True, error_model="numpy")
def elastic_stop(free, smallest, first, end):
    """How far into an application's fresh elastic components ``first:end`` a pass need look, given
    ``free`` (H, R) and its smallest elastic request ``smallest`` (R,): -1 when no host has room
    even for that; else no more can fit than the total free capacity holds copies of it (plus one,
    a margin for rounding)."""
    totals = np.empty(free.shape[1])
    for r in range(free.shape[1]):
        totals[r] = column_sum(free, r)
    return elastic_stop_given(free, totals, smallest, first, end)


@numba.njit(cache=True, error_model="numpy")
def elastic_stop_given(free, free_total, smallest, first, end):
    """:func:`elastic_stop` given the column sums ``free_total`` (R,) of ``free``."""
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
        copies = np.floor(free_total[r] / np.float64(smallest[r]))
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
        lag = periods_since(t - start[r], period)
        k = shape_offset[r] + lag
        if k >= shape_len[r]:  # most rows have not come round their shape: no division
            k %= shape_len[r]
        k += shape_base[r]
        for j in range(request.shape[1]):
            out[i, j] = shape_data[k, j] * request[r, j]
    return out


@numba.njit(cache=True)
def periods_since(x, period):
    """``int(x // period)`` for ``x >= 0`` s, exactly. Speed trick: Python's floor division goes
    through ``fmod``, several times the cost of a division, and this runs for every row at every
    tick; ``floor(x / period)`` is the same number unless ``x / period`` lies within its rounding
    error (a few ulps) of a whole number, and only then is ``//`` asked (bench_simulate.py)."""
    d = x / period
    f = np.floor(d)
    margin = 1e-12 * d  # far above the quotient's rounding error, 2**-53 * d
    if d - f > margin and f + 1.0 - d > margin:
        return np.int64(f)
    return np.int64(x // period)


@numba.njit(cache=True)
def usage_history(
    rows, now, period, window, start, request, shape_base, shape_len, shape_offset, shape_data
):
    """Each row's demand at each whole period since its start, the last ``window`` of them,
    oldest first: (T, R) float32 samples and (n + 1,) int64 bounds per row. What
    ``Simulator.usage_history`` computed with a dozen numpy calls over T ~ 40 n samples."""
    n, n_res = len(rows), request.shape[1]
    indptr = np.empty(n + 1, np.int64)
    indptr[0] = 0
    for i in range(n):
        lag = periods_since(now - start[rows[i]], period)
        indptr[i + 1] = indptr[i] + min(lag, window)
    data = np.empty((indptr[n], n_res), np.float32)
    for i in range(n):
        r = rows[i]
        length = indptr[i + 1] - indptr[i]
        first = periods_since(now - start[r], period) - length
        for j in range(length):
            k = (shape_offset[r] + first + j) % shape_len[r] + shape_base[r]
            for q in range(n_res):
                data[indptr[i] + j, q] = shape_data[k, q] * request[r, q]
    return data, indptr


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


#: ``limit * (1 + 1e-6)`` of a float32 limit is a float32 product, as numpy computes it.
_OOM_MARGIN = np.float32(1 + 1e-6)


@numba.njit(cache=True)
def over_limit(rows, demand_, limit):
    """(n,) bool where ``rows``' memory ``demand_`` (n, R) exceeds the row's memory ``limit`` by
    more than the margin of rounding: an out-of-memory stop under hard limits."""
    over = np.empty(len(rows), np.bool_)
    for i in range(len(rows)):
        over[i] = demand_[i, MEM] > limit[rows[i], MEM] * _OOM_MARGIN
    return over


@numba.njit(cache=True, error_model="numpy")
def observe(
    rows,
    demand_,
    t,
    period,
    host,
    app,
    request,
    limit,
    used,
    allocated,
    host_used,
    app_requested,
    app_allocated,
    app_used,
    remaining,
    rate,
    epoch,
    totals,
    throttle,
):
    """The end of a monitor tick in one call: ``rows``' usage is their ``demand_`` (n, R) with CPU
    capped at the limit where ``throttle`` (else uncapped, and progress at full speed; written to
    ``used``), host totals are recounted (:func:`recount`), the
    interval is added to the applications' totals (:func:`accumulate_by_app`), ``totals`` (2R,)
    gets the cluster's allocation and usage (column sums in host order, as numpy sums them) and
    the rows' rates are set; returns what :func:`set_rates` returns. Several calls and the numpy
    in between cost more than the work at paper scale (``benchmarks/bench_simulate.py``)."""
    n, n_res = len(rows), used.shape[1]
    finish = np.empty(n)
    allocated[:] = 0.0
    host_used[:] = 0.0
    # One pass over the rows doing what recount, accumulate_by_app and set_rates do in turn: each
    # sum still receives its terms in row order, so the results are the same bits.
    for i in range(n):
        r = rows[i]
        for j in range(n_res):
            used[r, j] = demand_[i, j]
        cap = limit[r, CPU] if throttle else demand_[i, CPU]
        if cap < used[r, CPU]:
            used[r, CPU] = cap
        h, a = host[r], app[r]
        for j in range(n_res):
            allocated[h, j] += limit[r, j]
            host_used[h, j] += used[r, j]
            app_requested[a, j] += period * request[r, j]
            app_allocated[a, j] += period * limit[r, j]
            app_used[a, j] += period * used[r, j]
        finish[i] = _set_rate(r, demand_[i, CPU], cap, t, remaining, rate, epoch)
    for j in range(n_res):
        totals[j] = column_sum(allocated, j)
        totals[n_res + j] = column_sum(host_used, j)
    return _finishing(rows, finish, t, period, epoch)


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
    if len(request) == 0:
        return True
    return may_fit_runs(free, up, request, run_starts(request))


@numba.njit(cache=True)
def may_fit_runs(free, up, request, bounds):
    """:func:`may_fit` given the runs of identical rows of ``request``, ``bounds`` =
    ``run_starts(request)``: the event loop keeps those of the queue's head, which it tests again
    and again, instead of scanning thousands of core components each time."""
    n_res = request.shape[1]
    for k in range(len(bounds) - 1):
        i, j = bounds[k], bounds[k + 1]
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


# --------------------------------------------------------------------------- shared containers
# The admission queue, the applications whose elastic components wait, the components returned
# to them and the pending completion events live in arrays, so that the Python path (monitor
# ticks, the reference event handlers) and the compiled event loop below work on the same state.

#: Application states, as ``simulator`` numbers them (checked there).
APP_QUEUED, APP_RUNNING, APP_DONE, APP_REJECTED = 0, 1, 2, 3


@numba.njit(cache=True)
def queue_push(q, app):
    """Count ``app`` (already in state QUEUED) into the queue ``q`` = [cursor, count]: no
    application below the cursor is queued."""
    q[1] += 1
    if app < q[0]:
        q[0] = app


@numba.njit(cache=True)
def queue_head(q, app_state):
    """The queue's head, its smallest queued application (FIFO by arrival, a requeued one at its
    old place), or -1; moves the cursor up to it."""
    if q[1] == 0:
        return -1
    a = q[0]
    while app_state[a] != APP_QUEUED:
        a += 1
    q[0] = a
    return a


@numba.njit(cache=True)
def set_add(items, n, x):
    """Insert ``x`` into the sorted set ``items[:n[0]]`` (no-op if present)."""
    k = n[0]
    i = np.searchsorted(items[:k], x)
    if i < k and items[i] == x:
        return
    for j in range(k, i, -1):
        items[j] = items[j - 1]
    items[i] = x
    n[0] = k + 1


@numba.njit(cache=True)
def set_discard(items, n, x):
    """Remove ``x`` from the sorted set ``items[:n[0]]`` (no-op if absent)."""
    k = n[0]
    i = np.searchsorted(items[:k], x)
    if i == k or items[i] != x:
        return
    for j in range(i, k - 1):
        items[j] = items[j + 1]
    n[0] = k - 1


@numba.njit(cache=True)
def lists_compact(off, length, pool, end):
    """Slide the live lists ``pool[off[a]:off[a] + length[a]]`` (length > 0) down to the front,
    in place, keeping their order; returns the new end of the used pool."""
    live = np.flatnonzero(length > 0)
    order = live[np.argsort(off[live], kind="mergesort")]
    w = 0
    for a in order:
        o, k = off[a], length[a]
        for i in range(k):
            pool[w + i] = pool[o + i]
        off[a] = w
        w += k
    return w


@numba.njit(cache=True)
def lists_set(off, length, pool, state, a, items):
    """List ``a`` := ``items``, written at the end of the pool (``state[0]``), which has room."""
    end = state[0]
    for i in range(len(items)):
        pool[end + i] = items[i]
    off[a] = end
    length[a] = len(items)
    state[0] = end + len(items)


@numba.njit(cache=True)
def _heap_less(h_time, h_seq, i, j):
    return h_time[i] < h_time[j] or (h_time[i] == h_time[j] and h_seq[i] < h_seq[j])


@numba.njit(cache=True)
def _heap_swap(h_time, h_seq, h_off, h_len, i, j):
    h_time[i], h_time[j] = h_time[j], h_time[i]
    h_seq[i], h_seq[j] = h_seq[j], h_seq[i]
    h_off[i], h_off[j] = h_off[j], h_off[i]
    h_len[i], h_len[j] = h_len[j], h_len[i]


@numba.njit(cache=True)
def push_completions(
    rows, epochs, finish, starts, h_time, h_seq, h_off, h_len, b_rows, b_epoch, hs
):
    """Schedule one completion event per group of :func:`set_rates`' output: its rows and epochs go
    to the batch pool ``b_rows``/``b_epoch`` (which has room) at ``hs[1]``, the event to the heap
    ordered by (time, sequence number ``hs[2]``), as the engine orders events of one kind.
    ``hs`` = [events in the heap, end of the used pool, next sequence number]."""
    for g in range(len(starts) - 1):
        i, j = starts[g], starts[g + 1]
        end = hs[1]
        for k in range(j - i):
            b_rows[end + k] = rows[i + k]
            b_epoch[end + k] = epochs[i + k]
        hs[1] = end + j - i
        _heap_push(h_time, h_seq, h_off, h_len, hs, finish[i], end, j - i)


@numba.njit(cache=True, _nrt=False)
def _heap_pop(h_time, h_seq, h_off, h_len, hs):
    """Remove the earliest event; returns its (offset, length) in the batch pool."""
    off, ln = h_off[0], h_len[0]
    n = hs[0] - 1
    hs[0] = n
    if n > 0:
        _heap_swap(h_time, h_seq, h_off, h_len, 0, n)
        i = 0
        while True:  # sift down
            small, left = i, 2 * i + 1
            if left < n and _heap_less(h_time, h_seq, left, small):
                small = left
            if left + 1 < n and _heap_less(h_time, h_seq, left + 1, small):
                small = left + 1
            if small == i:
                break
            _heap_swap(h_time, h_seq, h_off, h_len, i, small)
            i = small
    return off, ln


@numba.njit(cache=True)
def batches_compact(h_off, h_len, b_rows, b_epoch, hs):
    """Slide the batches of the pending events down to the front of the pool, in place."""
    n = hs[0]
    order = np.argsort(h_off[:n], kind="mergesort")
    w = 0
    for e in order:
        o, k = h_off[e], h_len[e]
        for i in range(k):
            b_rows[w + i] = b_rows[o + i]
            b_epoch[w + i] = b_epoch[o + i]
        h_off[e] = w
        w += k
    hs[1] = w


# --------------------------------------------------------------------------- the event loop
# Speed trick: between two monitor ticks the simulator runs arrivals, completions and the
# admission passes they trigger here, in one compiled call, instead of one Python handler, a heap
# operation and a dozen kernel calls per event (2.8 million events at paper scale;
# benchmarks/bench_simulate.py). It does exactly what ``Simulator._on_arrival``,
# ``_on_complete``, ``_schedule``, ``_place_elastic`` and ``Placer.place`` do for a placer that
# ``reclaim.placement.compiled`` binds (best-fit, first-fit, random-fit);
# ``tests/sim/test_event_loop.py`` runs both and compares the results.

# Loop state ``ist`` (int64): the admission pass in progress (phase 0 none, 1 waiting elastic
# applications, 2 the queue, 3 the elastic components of the application just admitted), where in
# it, and the counters the simulator keeps in Python between calls.
I_PHASE, I_POS, I_SNAP_N, I_APP, I_SUB, I_SC_N, I_SC_NRET, I_NEED = 0, 1, 2, 3, 4, 5, 6, 7
I_DIRTY, I_EVENTS, I_ARRIVED, I_TOP, I_FINISHED = 8, 9, 10, 11, 12
I_RUNS_APP, I_RUNS_N = 13, 14  # the application whose core runs ``runs`` holds, and their count
# Hosts whose allocation changed since free capacity was last computed (all, or the first
# ``I_NDIRTY`` of ``dirty_list``), and whether ``free_total`` holds the column sums of ``free``.
I_ALLDIRTY, I_NDIRTY, I_TOTALS = 15, 16, 17
# The application whose admission last failed with free capacity ``failed_free`` and up mask
# ``failed_up`` (scratch), -1 none: see :func:`_failed_before`.
I_FAILED_APP = 18
I_SIZE = 19
# ``fst`` (float64): time of the last event, time of the pass in progress.
F_LAST, F_PASS_T = 0, 1
# What a call returns: done, or what the simulator must provide before calling again (the loop
# then resumes where it stopped): rows for the workload table (``ist[I_NEED]`` placed components
# wait for them, exactly when ``Simulator._start`` grows it), room in the completion-batch pool or
# in the returned-components pool.
DONE_LOOP, NEED_ROWS, NEED_BATCHES, NEED_RETURNED = 0, 1, 2, 3


# Allocation-free versions of what the loop calls per event. Speed trick: ``start``,
# ``set_rates``, ``complete`` and ``place`` allocate some 35 small arrays per event between them,
# and at 2.8 million events their allocation and reference counting cost more than the work
# (benchmarks/bench_simulate.py). These write into scratch the simulator keeps instead, do the
# same arithmetic in the same order, and are compared with the originals by the simulator tests.


@numba.njit(cache=True)
def _add_rows(allocated, rows, host, amount, sign, sums):
    """:func:`add_allocation` of ``amount[rows]`` on ``host[rows]``; ``sums`` (H, R) scratch."""
    n, n_res = len(rows), amount.shape[1]
    if n < _PER_HOST_SUMS:
        for i in range(n):
            for r in range(n_res):
                allocated[host[rows[i]], r] += sign * np.float64(amount[rows[i], r])
        return
    sums[:] = 0.0
    for i in range(n):
        for r in range(n_res):
            sums[host[rows[i]], r] += amount[rows[i], r]
    for h in range(allocated.shape[0]):
        for r in range(n_res):
            allocated[h, r] += sign * sums[h, r]


@numba.njit(cache=True, _nrt=False)
def _mark(dirty, dirty_list, ist, h):
    """Note that host ``h``'s allocation changed."""
    if not dirty[h]:
        dirty[h] = True
        dirty_list[ist[I_NDIRTY]] = h
        ist[I_NDIRTY] += 1


@numba.njit(cache=True, _nrt=False)
def _refresh_free(capacity, allocated, up, free, dirty, dirty_list, ist):
    """``free_capacity`` into ``free``. Speed trick: between two calls of the loop only the hosts
    a start or a completion touched changed, and only their rows are recomputed, with the same
    expression (an admission pass starts at every event: 250 hosts each time otherwise)."""
    if ist[I_ALLDIRTY]:
        free_capacity(capacity, allocated, up, free)
    else:
        for i in range(ist[I_NDIRTY]):
            h = dirty_list[i]
            for r in range(free.shape[1]):
                free[h, r] = capacity[h, r] - allocated[h, r] if up[h] else 0.0
    for i in range(ist[I_NDIRTY]):
        dirty[dirty_list[i]] = False
    ist[I_ALLDIRTY], ist[I_NDIRTY], ist[I_TOTALS] = 0, 0, 0


@numba.njit(cache=True, _nrt=False)
def _failed_before(app, free, up, failed_free, failed_up, ist):
    """Whether placing ``app``'s core components already failed on exactly this free capacity and
    up mask. Placing is a function of them (random-fit's draws too: each is seeded by a digest of
    the call's input), so it would fail again, and a failed attempt leaves nothing behind. Speed
    trick: in a flooded cluster the queue's head is tried at every event, arrivals included, and
    at paper scale those futile attempts were most of the event loop's time."""
    if ist[I_FAILED_APP] != app:
        return False
    for h in range(free.shape[0]):
        if up[h] != failed_up[h]:
            return False
        for r in range(free.shape[1]):
            if free[h, r] != failed_free[h, r]:
                return False
    return True


@numba.njit(cache=True, _nrt=False)
def _free_totals(free, free_total, ist):
    """The column sums of ``free`` in ``free_total``, computed again only after ``free`` changed
    (several tests of a pass read them; placing is what changes them)."""
    if not ist[I_TOTALS]:
        for r in range(free.shape[1]):
            free_total[r] = column_sum(free, r)
        ist[I_TOTALS] = 1


@numba.njit(cache=True, _nrt=False)
def _complete_into(
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
    app_state,
    app_end,
    t,
    sums,
    dirty,
    dirty_list,
    ist,
):
    """:func:`complete`, then the simulator's bookkeeping of the applications it finishes (state
    DONE, end ``t``). The live rows are gathered into ``rows`` itself, which the caller no longer
    needs; their hosts are marked (:func:`_mark`). Returns (rows finished, new free-row top,
    applications finished)."""
    n = 0
    for i in range(len(rows)):
        r = rows[i]
        if host[r] >= 0 and row_epoch[r] == epoch[i]:
            rows[n] = r
            n += 1
    live = rows[:n]
    for r in live:
        comp_state[component[r]] = _DONE
        app_done[app[r]] += 1
    k = 0
    for r in live:
        a = app[r]
        if app_done[a] == app_size[a] and app_state[a] != APP_DONE:
            app_state[a] = APP_DONE
            app_end[a] = t
            k += 1
    _add_rows(allocated, live, host, limit, -1, sums)
    for i in range(n):
        _mark(dirty, dirty_list, ist, host[live[i]])
        host[live[i]] = -1
        app[live[i]] = -1
        free_rows[top + i] = live[i]
    return n, top + n, k


@numba.njit(cache=True)
def _stable_sort(keys, idx, n, tmp_keys, tmp_idx):
    """Sort ``keys[:n]`` ascending, carrying ``idx[:n]``, stably (equal keys keep their order):
    what ``np.argsort(kind="mergesort")`` orders, in scratch. Insertion sort for short runs, then
    bottom-up merges."""
    run = 16
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            k, v = keys[i], idx[i]
            j = i
            while j > lo and keys[j - 1] > k:
                keys[j], idx[j] = keys[j - 1], idx[j - 1]
                j -= 1
            keys[j], idx[j] = k, v
    width = run
    src_k, src_i, dst_k, dst_i = keys, idx, tmp_keys, tmp_idx
    in_tmp = False
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, o = lo, mid, lo
            while i < mid and j < hi:
                if src_k[j] < src_k[i]:  # strictly less: ties take the left run first
                    dst_k[o], dst_i[o] = src_k[j], src_i[j]
                    j += 1
                else:
                    dst_k[o], dst_i[o] = src_k[i], src_i[i]
                    i += 1
                o += 1
            while i < mid:
                dst_k[o], dst_i[o] = src_k[i], src_i[i]
                i += 1
                o += 1
            while j < hi:
                dst_k[o], dst_i[o] = src_k[j], src_i[j]
                j += 1
                o += 1
        src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for i in range(n):
            keys[i], idx[i] = tmp_keys[i], tmp_idx[i]


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _start_into(
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
    h_time,
    h_seq,
    h_off,
    h_len,
    b_rows,
    b_epoch,
    hs,
    still,
    sums,
    keys,
    order,
    tmp_keys,
    tmp_order,
    dirty,
    dirty_list,
    ist,
):
    """:func:`start`, then :func:`push_completions` of what it returns, in scratch (hosts marked
    as :func:`_mark` says): the
    components still waiting go to ``still``; ``sums``, ``keys``, ``order``, ``tmp_*`` are
    scratch. Returns (new top or -1 as :func:`start`, how many still wait, where fresh ones
    resume)."""
    m = len(comps)
    n, last = 0, -1
    for i in range(m):
        if where[i] >= 0:
            n += 1
            if i >= n_returned:
                last = i
    n_still = 0
    for i in range(max(last, n_returned)):
        if where[i] < 0:
            still[n_still] = comps[i]
            n_still += 1
    after = comps[last] + 1 if last >= 0 else -1
    if top < n:
        return -1, n_still, after
    rows = free_rows[top - n : top]  # popped; nothing is pushed before they are copied below
    next_tick = (np.floor(t / period) + 1) * period
    soon = 0
    j = 0
    for i in range(m):
        if where[i] < 0:
            continue
        r, c = rows[j], comps[i]
        wt_component[r] = c
        wt_app[r] = app
        wt_host[r] = where[i]
        _mark(dirty, dirty_list, ist, where[i])
        for k in range(wl_request.shape[1]):
            wt_request[r, k] = wl_request[c, k]
            wt_limit[r, k] = wl_request[c, k]
        wt_core[r] = wl_core[c]
        wt_start[r] = t
        remaining[r] = wl_work[c]
        since[r] = t
        base = shape_indptr[wl_shape[c]]
        shape_base[r] = base
        shape_len[r] = shape_indptr[wl_shape[c] + 1] - base
        shape_offset[r] = wl_offset[c]
        comp_state[c] = _RUNNING
        # Lag 0: a component starts at the shape sample its offset names; set_rates' arithmetic.
        k = wl_offset[c]
        if k >= shape_len[r]:  # offsets are drawn within their shape: no division as a rule
            k %= shape_len[r]
        demand_cpu = shape_data[base + k, CPU] * wl_request[c, CPU]
        limit_cpu = wl_request[c, CPU]
        q = 1.0
        if demand_cpu > limit_cpu:
            q = np.float64(limit_cpu / demand_cpu)
        rate[r] = q
        epoch[r] += 1
        finish = t + remaining[r] / q
        if finish < next_tick:
            keys[soon], order[soon] = finish, j
            soon += 1
        j += 1
    _add_rows(allocated, rows, wt_host, wt_request, 1, sums)
    _stable_sort(keys, order, soon, tmp_keys, tmp_order)
    g = 0
    while g < soon:  # one event per group of equal finish time, as push_completions
        e = g + 1
        while e < soon and keys[e] == keys[g]:
            e += 1
        end = hs[1]
        for k in range(e - g):
            r = rows[order[g + k]]
            b_rows[end + k] = r
            b_epoch[end + k] = epoch[r]
        hs[1] = end + e - g
        _heap_push(h_time, h_seq, h_off, h_len, hs, keys[g], end, e - g)
        g = e
    return top - n, n_still, after


@numba.njit(cache=True)
def _heap_push(h_time, h_seq, h_off, h_len, hs, time, off, length):
    """Add the event of the batch ``off:off + length`` finishing at ``time``."""
    n = hs[0]
    h_time[n], h_seq[n], h_off[n], h_len[n] = time, hs[2], off, length
    hs[0] = n + 1
    hs[2] += 1
    while n > 0:  # sift up
        parent = (n - 1) // 2
        if not _heap_less(h_time, h_seq, n, parent):
            break
        _heap_swap(h_time, h_seq, h_off, h_len, n, parent)
        n = parent


@numba.njit(cache=True)
def _room_batches(need, h_time, h_off, h_len, b_rows, b_epoch, hs):
    """True when the completion heap and its batch pool have room for ``need`` more rows (and as
    many events), compacting the pool first if that leaves it at most half full (else the
    simulator grows it: compacting a pool that stays nearly full, at every event, costs more)."""
    if hs[0] + need > len(h_time):
        return False
    if hs[1] + need <= len(b_rows):
        return True
    batches_compact(h_off, h_len, b_rows, b_epoch, hs)
    return hs[1] + need <= len(b_rows) // 2


@numba.njit(cache=True)
def _room_returned(need, r_off, r_len, r_pool, r_state):
    """True when the returned-components pool has room for a list of ``need`` (compacted as in
    :func:`_room_batches`)."""
    if r_state[0] + need <= len(r_pool):
        return True
    r_state[0] = lists_compact(r_off, r_len, r_pool, r_state[0])
    return r_state[0] + need <= len(r_pool) // 2


class AppColumns(NamedTuple):
    """Per application: state, first start, start, end, components done and its size, core
    components and their total request, smallest elastic request, next elastic to start."""

    state: np.ndarray
    first_start: np.ndarray
    start: np.ndarray
    end: np.ndarray
    done: np.ndarray
    size: np.ndarray
    n_core: np.ndarray
    core_total: np.ndarray
    min_elastic: np.ndarray
    next_elastic: np.ndarray


class HostColumns(NamedTuple):
    """The host table's capacity, allocation and up, with the loop's cache of free room (per host
    and in total) and the hosts whose cache is stale (flags and list)."""

    capacity: np.ndarray
    allocated: np.ndarray
    up: np.ndarray
    free: np.ndarray
    free_total: np.ndarray
    dirty: np.ndarray
    dirty_list: np.ndarray


class QueueColumns(NamedTuple):
    """The admission queue, the set of applications with elastic components waiting, and the
    lists of returned components (:class:`AppQueue`, :class:`AppSet`, :class:`ComponentLists`)."""

    queue: np.ndarray
    waiting_items: np.ndarray
    waiting_n: np.ndarray
    returned_off: np.ndarray
    returned_len: np.ndarray
    returned_pool: np.ndarray
    returned_state: np.ndarray


class HeapColumns(NamedTuple):
    """The pending completions (:class:`CompletionHeap`): times, tie-break sequence, each event's
    batch (offset, length) into rows and epochs, and the heap's counters."""

    time: np.ndarray
    seq: np.ndarray
    off: np.ndarray
    len: np.ndarray
    rows: np.ndarray
    epoch: np.ndarray
    state: np.ndarray


class Scratch(NamedTuple):
    """Buffers the loop's passes reuse instead of allocating (placement and sorting scratch)."""

    comps: np.ndarray
    where: np.ndarray
    req: np.ndarray
    raw: np.ndarray
    before: np.ndarray
    buf: np.ndarray
    runs: np.ndarray
    still: np.ndarray
    sums: np.ndarray
    sort_keys: np.ndarray
    sort_idx: np.ndarray
    open_: np.ndarray
    bounds: np.ndarray
    message: np.ndarray
    levels: np.ndarray
    failed_free: np.ndarray
    failed_up: np.ndarray


@numba.njit(cache=True, error_model="numpy")
def run_events(until, pass_only, t_pass, binding, period, biggest, cap_total, arrival, cp, workload,
               apps, comp_state, hosts, free_rows, row_columns, queues, heap, ist, fst, snap,
               scratch):  # fmt: skip
    """Process arrivals and completions up to and including time ``until``, each followed by the
    admission pass it triggers, as the engine and the simulator's handlers would; with
    ``pass_only``, only the pass a monitor tick at ``t_pass`` asks for. A call that returns
    anything but ``DONE_LOOP`` stopped before what it needs; called again, it resumes there.

    The arguments are the simulator's arrays, grouped in the named tuples above (the workload, per
    application, hosts, workload table rows, the shared containers); ``ist``/``fst`` hold the
    loop's state. Each group is unpacked into locals here, and the helpers below take those
    arrays one by one. One function, not one per step: every array handed to a compiled call is
    reference-counted on the way in and out, and with helpers taking tuples of them that counting
    was most of the loop's time.
    """
    wl_request, wl_work, wl_core, wl_shape, wl_offset, shape_indptr, shape_data = workload
    app_state, app_first_start, app_start, app_end, app_done, app_size = apps[:6]
    n_core, core_total, min_elastic, next_elastic = apps[6:]
    capacity, allocated, up, free, free_total, dirty, dirty_list = hosts
    wt_component, wt_app, wt_host, wt_request, wt_limit, wt_core, wt_start = row_columns[:7]
    remaining, since, rate, epoch, shape_base, shape_len, shape_offset = row_columns[7:]
    q, w_items, w_n, r_off, r_len, r_pool, r_state = queues
    h_time, h_seq, h_off, h_len, b_rows, b_epoch, hs = heap
    sc_comps, sc_where, sc_req, raw, before, buf, runs, sc_still, sums = scratch[:9]
    sort_keys, sort_idx, open_, bounds_, message, levels, failed_free, failed_up = scratch[9:]
    n_apps = len(arrival)
    ist[I_ALLDIRTY] = 1  # the simulator may have changed any host since the last call
    while True:
        phase = ist[I_PHASE]
        if phase == 0:  # between passes: the next event, then the pass it triggers
            if pass_only:
                if ist[I_DIRTY] == 0:
                    return DONE_LOOP
                t = t_pass
            else:
                a = ist[I_ARRIVED]
                if hs[0] == 0 and a >= n_apps:
                    return DONE_LOOP
                tc = h_time[0] if hs[0] > 0 else np.inf
                ta = arrival[a] if a < n_apps else np.inf
                completion = tc <= ta  # at equal times completions free capacity first
                t = tc if completion else ta
                if not t <= until:
                    return DONE_LOOP
                ist[I_EVENTS] += 1
                fst[F_LAST] = t
                if completion:  # Simulator._on_complete
                    off, ln = _heap_pop(h_time, h_seq, h_off, h_len, hs)
                    n, top, k = _complete_into(
                        b_rows[off : off + ln],
                        b_epoch[off : off + ln],
                        epoch,
                        wt_host,
                        wt_app,
                        wt_component,
                        wt_limit,
                        allocated,
                        free_rows,
                        ist[I_TOP],
                        comp_state,
                        app_done,
                        app_size,
                        app_state,
                        app_end,
                        t,
                        sums,
                        dirty,
                        dirty_list,
                        ist,
                    )
                    ist[I_TOP] = top
                    if n == 0:
                        continue
                    ist[I_FINISHED] += k
                else:  # Simulator._on_arrival
                    ist[I_ARRIVED] = a + 1
                    if _never_fits(a, cp, wl_request, core_total, biggest, cap_total):
                        app_state[a] = APP_REJECTED
                        ist[I_FINISHED] += 1
                        continue
                    app_state[a] = APP_QUEUED
                    queue_push(q, a)
            # Simulator._schedule: free capacity afresh, then the waiting applications in order
            ist[I_DIRTY] = 0
            _refresh_free(capacity, allocated, up, free, dirty, dirty_list, ist)
            k = w_n[0]
            snap[:k] = w_items[:k]
            ist[I_SNAP_N], ist[I_POS], ist[I_PHASE] = k, 0, 1
            fst[F_PASS_T] = t
            continue

        t = fst[F_PASS_T]
        if phase == 2:  # one turn of the queue loop: admit or reject the head, or end the pass
            if ist[I_SUB] == 0:
                app = queue_head(q, app_state)
                if app >= 0:
                    _free_totals(free, free_total, ist)
                if app < 0 or not covers(free_total, core_total[app]):
                    ist[I_PHASE] = 0
                    continue
                first, k = cp[app], n_core[app]
                ist[I_NEED] = k
                if not _room_batches(k, h_time, h_off, h_len, b_rows, b_epoch, hs):
                    return NEED_BATCHES
                request = wl_request[first : first + k]
                where = sc_where[:k]
                if k > 0 and ist[I_RUNS_APP] != app:  # the head's runs of identical requests
                    bounds = run_starts(request)
                    runs[: len(bounds)] = bounds
                    ist[I_RUNS_APP], ist[I_RUNS_N] = app, len(bounds)
                bounds = runs[: ist[I_RUNS_N]]
                if k > 0 and _failed_before(app, free, up, failed_free, failed_up, ist):
                    where[:] = -1
                elif k == 0 or may_fit_runs(free, up, request, bounds):
                    place_runs(
                        binding,
                        capacity,
                        free,
                        up,
                        request,
                        True,
                        where,
                        raw,
                        before,
                        buf,
                        open_,
                        bounds,
                        message,
                        levels,
                    )
                    ist[I_TOTALS] = 0  # placing changed free capacity (or put it back)
                    if k > 0 and where[0] < 0:
                        ist[I_FAILED_APP] = app
                        failed_free[:] = free
                        failed_up[:] = up
                else:  # hopeless; most attempts are, and placing costs more
                    where[:] = -1
                if k > 0 and where[0] < 0:
                    if ist[I_TOP] == len(wt_host):  # the cluster is empty: it never fits
                        q[1] -= 1
                        app_state[app] = APP_REJECTED
                        ist[I_FINISHED] += 1
                        continue
                    ist[I_PHASE] = 0
                    continue
                ist[I_APP] = app
                if ist[I_TOP] < k:
                    ist[I_SUB], ist[I_NEED] = 1, k
                    return NEED_ROWS
            app = ist[I_APP]
            ist[I_SUB] = 0
            first, stop = cp[app], cp[app] + n_core[app]
            q[1] -= 1
            app_state[app] = APP_RUNNING
            app_start[app] = t
            if np.isnan(app_first_start[app]):
                app_first_start[app] = t
            for i in range(stop - first):
                sc_comps[i] = first + i
            n_comps, n_ret = stop - first, 0
        else:  # phases 1 and 3: Simulator._place_elastic of one application
            if phase == 1:
                if ist[I_POS] >= ist[I_SNAP_N]:
                    ist[I_PHASE] = 2
                    continue
                app = snap[ist[I_POS]]
            else:
                app = ist[I_APP]
            if ist[I_SUB] == 0:
                first = next_elastic[app]
                _free_totals(free, free_total, ist)
                stop = elastic_stop_given(free, free_total, min_elastic[app], first, cp[app + 1])
                if stop < 0:
                    if phase == 1:
                        ist[I_POS] += 1
                    else:
                        ist[I_PHASE] = 2
                    continue
                n_ret = r_len[app]
                need = n_ret + stop - first
                ist[I_NEED] = need
                if not _room_batches(need, h_time, h_off, h_len, b_rows, b_epoch, hs):
                    return NEED_BATCHES
                if not _room_returned(need, r_off, r_len, r_pool, r_state):
                    return NEED_RETURNED
                o = r_off[app]
                for i in range(n_ret):
                    sc_comps[i] = r_pool[o + i]
                for i in range(stop - first):
                    sc_comps[n_ret + i] = first + i
                where = sc_where[:need]
                if n_ret == 0:  # the usual case: the fresh components' requests, not copied
                    request = wl_request[first:stop]
                    place(
                        binding,
                        capacity,
                        free,
                        up,
                        request,
                        False,
                        where,
                        raw,
                        before,
                        buf,
                        open_,
                        bounds_,
                        message,
                        levels,
                    )
                else:
                    for i in range(need):
                        for r in range(R):
                            sc_req[i, r] = wl_request[sc_comps[i], r]
                    request = sc_req[:need]
                    place(
                        binding,
                        capacity,
                        free,
                        up,
                        request,
                        False,
                        where,
                        raw,
                        before,
                        buf,
                        open_,
                        bounds_,
                        message,
                        levels,
                    )
                ist[I_TOTALS] = 0  # placing changed free capacity
                r_len[app] = 0
                ist[I_SC_N], ist[I_SC_NRET] = need, n_ret
                placed = 0
                for i in range(need):
                    placed += where[i] >= 0
                if ist[I_TOP] < placed:
                    ist[I_SUB], ist[I_NEED] = 1, placed
                    return NEED_ROWS
            ist[I_SUB] = 0
            n_comps, n_ret = ist[I_SC_N], ist[I_SC_NRET]

        # Simulator._start, rows being enough: fill them, schedule their completions
        top, n_still, after = _start_into(
            free_rows,
            ist[I_TOP],
            sc_comps[:n_comps],
            sc_where[:n_comps],
            n_ret,
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
            h_time,
            h_seq,
            h_off,
            h_len,
            b_rows,
            b_epoch,
            hs,
            sc_still,
            sums,
            sort_keys[0],
            sort_idx[0],
            sort_keys[1],
            sort_idx[1],
            dirty,
            dirty_list,
            ist,
        )
        ist[I_TOP] = top
        if phase == 2:  # admitted: its elastic components next
            stop = cp[app] + n_core[app]
            next_elastic[app] = stop
            if stop < cp[app + 1]:
                set_add(w_items, w_n, app)
                ist[I_PHASE] = 3
            continue
        end = cp[app + 1]
        if after >= 0:
            next_elastic[app] = after
        if n_still:
            lists_set(r_off, r_len, r_pool, r_state, app, sc_still[:n_still])
        if next_elastic[app] >= end and r_len[app] == 0:
            set_discard(w_items, w_n, app)
        if phase == 1:
            ist[I_POS] += 1
        else:
            ist[I_PHASE] = 2


@numba.njit(cache=True)
def _never_fits(app, cp, wl_request, core_total, biggest, cap_total):
    """``Simulator._on_arrival``'s test: a component larger than the largest host, or core
    components larger than the whole cluster."""
    for c in range(cp[app], cp[app + 1]):
        for r in range(wl_request.shape[1]):
            if wl_request[c, r] > biggest[r]:
                return True
    over = False
    for r in range(core_total.shape[1]):
        over |= core_total[app, r] > cap_total[r]
    return over


class AppQueue:
    """The admission queue: the applications in state QUEUED of ``app_state``, the smallest first
    (see :func:`queue_head`); ``q`` = [cursor, count]. A caller moves the head out of state QUEUED
    right after :meth:`pop`."""

    def __init__(self, app_state: np.ndarray) -> None:
        self.app_state = app_state
        self.q = np.array([len(app_state), 0], np.int64)

    def push(self, app: int) -> None:
        queue_push(self.q, int(app))

    def head(self) -> int:
        return int(queue_head(self.q, self.app_state))

    def pop(self) -> None:
        self.q[1] -= 1

    def __len__(self) -> int:
        return int(self.q[1])


class AppSet:
    """A set of application indices kept sorted in ``items[:n[0]]``."""

    def __init__(self, capacity: int) -> None:
        self.items = np.empty(capacity, np.int64)
        self.n = np.zeros(1, np.int64)

    def add(self, app: int) -> None:
        set_add(self.items, self.n, int(app))

    def discard(self, app: int) -> None:
        set_discard(self.items, self.n, int(app))

    def sorted(self) -> list[int]:
        return self.items[: self.n[0]].tolist()

    def __contains__(self, app: int) -> bool:
        return int(app) in self.sorted()

    def __len__(self) -> int:
        return int(self.n[0])


class ComponentLists:
    """Per application, a list of component indices (those returned to wait again, in order),
    each a slice ``pool[off[a]:off[a] + length[a]]``; ``state[0]`` ends the used pool."""

    def __init__(self, n_apps: int, capacity: int = 1024) -> None:
        self.off = np.zeros(n_apps, np.int64)
        self.length = np.zeros(n_apps, np.int64)
        self.pool = np.empty(capacity, np.int64)
        self.state = np.zeros(1, np.int64)

    def __contains__(self, app: int) -> bool:
        return bool(self.length[app] > 0)

    def pop(self, app: int) -> np.ndarray | None:
        k = int(self.length[app])
        if k == 0:
            return None
        self.length[app] = 0
        return self.pool[self.off[app] : self.off[app] + k].copy()

    def set(self, app: int, items) -> None:
        items = np.asarray(items, np.int64)
        self.length[app] = 0
        if len(items):
            self.reserve(len(items))
            lists_set(self.off, self.length, self.pool, self.state, int(app), items)

    def extend(self, apps: np.ndarray, comps: np.ndarray) -> np.ndarray:
        """Append each ``comps[i]`` to the list of ``apps[i]``, in order; returns the distinct
        applications, sorted (one list rewritten per application, not per component)."""
        order = np.argsort(apps, kind="stable")
        apps, comps = apps[order], np.asarray(comps, np.int64)[order]
        first = np.flatnonzero(np.r_[True, apps[1:] != apps[:-1]])
        for app, added in zip(apps[first].tolist(), np.split(comps, first[1:]), strict=True):
            before = self.pop(app)
            self.set(app, added if before is None else np.concatenate([before, added]))
        return apps[first]

    def reserve(self, need: int) -> None:
        """Room for a list of ``need`` at the end of the pool: compacted, and grown unless that
        left it at most half full."""
        if self.state[0] + need <= len(self.pool):
            return
        self.state[0] = lists_compact(self.off, self.length, self.pool, self.state[0])
        if self.state[0] + need > len(self.pool) // 2:
            grown = np.empty(max(2 * len(self.pool), 2 * (self.state[0] + need)), np.int64)
            grown[: self.state[0]] = self.pool[: self.state[0]]
            self.pool = grown


class CompletionHeap:
    """The compiled loop's pending completion events: a heap of (time, seq) over batches of rows
    and their epochs in a pool (see :func:`push_completions`); ``state`` = [events, end of the
    used pool, next sequence number]."""

    def __init__(self, capacity: int = 4096) -> None:
        self.time = np.empty(capacity)
        self.seq = np.empty(capacity, np.int64)
        self.off = np.empty(capacity, np.int64)
        self.len = np.empty(capacity, np.int64)
        self.rows = np.empty(capacity, np.int64)
        self.epoch = np.empty(capacity, np.int64)
        self.state = np.zeros(3, np.int64)

    def __len__(self) -> int:
        return int(self.state[0])

    def reserve(self, need: int) -> None:
        """Room for ``need`` more rows in as many events: the pool compacted, and grown unless
        that left it at most half full; the heap grown if it would overflow."""
        n, end = self.state[0], self.state[1]
        if end + need > len(self.rows):
            batches_compact(self.off, self.len, self.rows, self.epoch, self.state)
            end = self.state[1]
            if end + need > len(self.rows) // 2:
                size = max(2 * len(self.rows), 2 * (end + need))
                for name in ("rows", "epoch"):
                    grown = np.empty(size, np.int64)
                    grown[:end] = getattr(self, name)[:end]
                    setattr(self, name, grown)
        if n + need > len(self.time):
            size = max(2 * len(self.time), n + need)
            for name in ("time", "seq", "off", "len"):
                old = getattr(self, name)
                grown = np.empty(size, old.dtype)
                grown[:n] = old[:n]
                setattr(self, name, grown)

    def push(self, rows, epochs, finish, starts) -> None:
        """One event per group of :func:`set_rates`' output."""
        self.reserve(len(rows))
        push_completions(
            rows,
            epochs,
            finish,
            starts,
            self.time,
            self.seq,
            self.off,
            self.len,
            self.rows,
            self.epoch,
            self.state,
        )
