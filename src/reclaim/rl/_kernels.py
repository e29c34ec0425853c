"""Compiled kernels of the TVW-RL environment's step (``rl.env``).

Each replaces a handful of small numpy calls made at every decision (the windows are one or a
few steps long, so call overhead, not arithmetic, dominated an episode). The plain references are
``rl.rewards`` (penalties), :func:`reclaim.placement.framework.fits` (mask) and
:class:`reclaim.rl.env.ReferencePlacementEnv` (the whole step); ``tests/rl/test_kernels.py``
checks them bit for bit and ``benchmarks/bench_rl.py`` shows the gain.

Bit-for-bit: every penalty here is an integer count (pair products, unused-unit histogram,
overshoots, waiting workloads); the caller turns counts into floats exactly as the references do,
so no floating-point sum changes order.
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim.tvw._kernels import background_units


@numba.njit(cache=True)
def charge_window(
    total, residents, squares, first, units, host, start, length, seen, arrival, cost
):
    """Penalty counts of the window of steps [first, first + T) (``rl.rewards``' references).

    total (T, H, R) units in use, residents (T, H), squares (T, H, R) int64 sum of the residents'
    squared usage; host/start/length (n,) placement (-1 unplaced), start and length in steps;
    seen (n, R) bool, updated; arrival (n,) sorted steps; cost (units + 1,) float64 the under-use
    penalty of v unused units, integers (so the sum is exact in any order, as the reference's).
    Returns (twice the pairwise inner products, under-use, first overshoots, workload-steps
    waiting).
    """
    steps, n_hosts, n_res = total.shape
    hist = np.zeros(len(cost), np.int64)  # (step, used machine, resource) by unused units
    pairs = 0
    over = False  # some machine above capacity in the window
    for t in range(steps):
        for m in range(n_hosts):
            used = residents[t, m] > 0
            for r in range(n_res):
                s = np.int64(total[t, m, r])
                pairs += s * s - squares[t, m, r]
                over = over or s > units
                if used:
                    hist[max(units - s, 0)] += 1
    overs = 0
    # Speed trick: an overshoot needs a machine above capacity (in 1/3 of the windows here, none)
    for j in range(len(host) if over else 0):
        m = host[j]
        end = start[j] + length[j]
        if m < 0 or start[j] >= first + steps or end <= first:
            continue
        a, b = max(start[j] - first, 0), min(end - first, steps)
        for r in range(n_res):
            hit = False
            for t in range(a, b):
                if total[t, m, r] > units:
                    hit = True
                    break
            if hit and not seen[j, r]:
                overs += 1
                seen[j, r] = True
    # workload-steps waiting in the window: arrived (arrival <= t) and not started (start > t or
    # unplaced), counted per workload as the overlap of [arrival, start) with the window
    stop = first + steps
    waiting = 0
    for j in range(len(arrival)):
        if arrival[j] >= stop:
            break  # sorted: no later workload has arrived either
        began = stop if start[j] < 0 else min(start[j], stop)
        waiting += max(began - max(arrival[j], first), 0)
    underuse = 0.0
    for v in range(len(cost)):
        underuse += hist[v] * cost[v]
    return pairs, underuse, overs, waiting


@numba.njit(cache=True)
def add_squares(squares, now, host, data, lo, hi):
    """squares[now + k, host] += data[lo + k] ** 2 for the k steps of one workload's series."""
    for k in range(hi - lo):
        for r in range(data.shape[1]):
            u = np.int64(data[lo + k, r])
            squares[now + k, host, r] += u * u


@numba.njit(cache=True)
def fit_mask(free, up, request, tolerance, out):
    """out (H,) = machine up and free + tolerance >= request for every resource
    (``placement.framework.fits`` for one request (R,); free (H, R))."""
    for m in range(free.shape[0]):
        ok = up[m]
        for r in range(free.shape[1]):
            if not free[m, r] + tolerance >= request[r]:
                ok = False
        out[m] = ok


@numba.njit(cache=True)
def first_fit(free, up, demand, queue, tolerance, out):
    """The first of ``queue`` (workload indices, arrival order) whose ``demand`` row fits some
    machine, its fit mask written into out[:H]; -1 (out untouched) when none fits
    (``ReferencePlacementEnv._current_mask``)."""
    n_hosts = free.shape[0]
    for q in range(len(queue)):
        request = demand[queue[q]]
        some = False
        for m in range(n_hosts):
            ok = up[m]
            for r in range(free.shape[1]):
                if not free[m, r] + tolerance >= request[r]:
                    ok = False
            if ok:
                some = True
                break
        if some:
            fit_mask(free, up, request, tolerance, out[:n_hosts])
            return queue[q]
    return -1


@numba.njit(cache=True)
def observation(
    data,
    indptr,
    host,
    start,
    label,
    classes,
    now,
    machines,
    history,
    units,
    demand,
    head,
    profile,
    backlog,
    key,
    background,
    out,
):
    """Write TVW-RL's (D,) float32 observation into ``out`` (``PlacementEnv.observe``).

    Images (H, R, h, C): each machine's background usage at the bottom (``key``, ``background``:
    ``tvw._kernels.background_units``; a pixel 1 / classes, as a class-1 workload's), then the
    placed workloads stacked in (start, index) order, a pixel their label / classes; then per
    queue slot ``head`` (waiting workloads, -1 empty): with ``profile`` an (R, h, C) image of its
    first h steps of usage, a pixel label / classes; without, demand / units and label / classes;
    last the backlog fraction (clipped at 1).
    """
    n_hosts, n_res, size = machines, data.shape[1], len(out)
    out[:] = 0.0
    level = np.zeros((n_hosts, history, n_res), np.int64)
    if background > 0:
        value = np.float32(1 / classes)
        for m in range(n_hosts):
            for r in range(n_res):
                for k in range(max(history - now - 1, 0), history):
                    b = background_units(key, now - history + 1 + k, m, r, background)
                    level[m, k, r] = b
                    base = ((m * n_res + r) * history + k) * units
                    for c in range(min(b, units)):
                        out[base + c] = value
    # Speed trick: the env binds in queue (index) order at a clock that never goes back, so the
    # placed workloads are usually in (start, index) order already; sort only when they are not.
    in_order, last = True, -1
    for j in range(len(host)):
        if host[j] >= 0:
            if start[j] < last:
                in_order = False
                break
            last = start[j]
    # argsort's mergesort is stable: ties by index, as the reference
    order = np.arange(len(host)) if in_order else np.argsort(start, kind="mergesort")
    for j in order:
        m = host[j]
        if m < 0:
            continue
        value = np.float32(label[j] / classes)
        oldest = now - history + 1  # the step of image row 0
        length = indptr[j + 1] - indptr[j]
        for k in range(max(start[j] - oldest, 0), min(start[j] + length - oldest, history)):
            row = indptr[j] + oldest + k - start[j]
            for r in range(n_res):
                lo = level[m, k, r]
                hi = min(lo + data[row, r], units)
                base = ((m * n_res + r) * history + k) * units
                for c in range(lo, hi):
                    out[base + c] = value
                level[m, k, r] = lo + data[row, r]
    base = n_hosts * n_res * history * units
    for s in range(len(head)):
        j = head[s]
        if j >= 0:
            queue_slot(data, indptr, j, s, base, np.float32(label[j] / classes), units, history,
                       demand, profile, out)  # fmt: skip
    out[size - 1] = np.float32(min(backlog, 1.0))


@numba.njit(cache=True)
def queue_slot(data, indptr, j, s, base, value, units, history, demand, profile, out):
    """Queue slot s of :func:`observation` (from out[base]) for workload j, label value
    ``value``: with ``profile`` its (R, h, C) image of its first h steps of usage (out zero
    there), without its demand / units and the value."""
    n_res = data.shape[1]
    if profile:
        slot = n_res * history * units
        steps = min(indptr[j + 1] - indptr[j], history)
        for k in range(steps):
            for r in range(n_res):
                at = base + s * slot + (r * history + k) * units
                for c in range(min(data[indptr[j] + k, r], units)):
                    out[at + c] = value
    else:
        for r in range(n_res):
            out[base + s * (n_res + 1) + r] = np.float32(np.float32(demand[j, r]) / units)
        out[base + s * (n_res + 1) + n_res] = value
