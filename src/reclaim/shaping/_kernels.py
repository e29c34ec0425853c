"""Compiled Algorithm 1 of the shaping paper, beside the plain-Python reference it must match."""

from __future__ import annotations

import numba
import numpy as np

from reclaim._numba_util import radix_argsort
from reclaim.core.control import in_grace
from reclaim.placement.framework import FIT_TOLERANCE


@numba.njit(cache=True)
def pessimistic_fit(host, app, core, need, capacity):
    """Algorithm 1's allocation pass over rows sorted by application (scheduling order), core
    rows first, then elastic rows oldest first.

    host, app: (n,) int; core: (n,) bool; need: (n, R) float64 forecast + buffer; capacity:
    (H, R) float64. Returns keep (n,) bool (the row fits and is resized to ``need``) and
    app_dropped (n,) bool (the row's application is preempted whole: one of its core rows did not
    fit). A host is full when its free capacity would drop below -FIT_TOLERANCE.
    """
    n, R = need.shape
    free = capacity.copy()
    keep = np.zeros(n, np.bool_)
    dropped = np.zeros(n, np.bool_)
    i = 0
    while i < n:
        j = i
        while j < n and app[j] == app[i]:
            j += 1
        c, ok = i, True
        while c < j and core[c]:
            h = host[c]
            for r in range(R):
                free[h, r] -= need[c, r]
            c += 1
            for r in range(R):
                if free[h, r] < -FIT_TOLERANCE:
                    ok = False
            if not ok:
                break
        if not ok:  # give back what this application's core rows took; preempt all of it
            for k in range(i, c):
                for r in range(R):
                    free[host[k], r] += need[k, r]
            for k in range(i, j):
                dropped[k] = True
        else:
            for k in range(i, c):
                keep[k] = True
            for e in range(c, j):
                h = host[e]
                fits = True
                for r in range(R):
                    if free[h, r] - need[e, r] < -FIT_TOLERANCE:
                        fits = False
                if fits:
                    for r in range(R):
                        free[h, r] -= need[e, r]
                    keep[e] = True
        i = j
    return keep, dropped


def pessimistic_fit_reference(host, app, core, need, capacity):
    """The same pass written as Algorithm 1 reads, one application at a time."""
    free = capacity.astype(np.float64).copy()
    keep = np.zeros(len(host), bool)
    dropped = np.zeros(len(host), bool)
    for a in dict.fromkeys(app.tolist()):
        rows = np.flatnonzero(app == a)
        trial = free.copy()
        removed = False
        for c in rows[core[rows]]:
            trial[host[c]] -= need[c]
            if np.any(trial[host[c]] < -FIT_TOLERANCE):
                removed = True
                break
        if removed:
            dropped[rows] = True
            continue
        free = trial
        keep[rows[core[rows]]] = True
        for e in rows[~core[rows]]:
            after = free[host[e]] - need[e]
            if np.all(after >= -FIT_TOLERANCE):
                free[host[e]] = after
                keep[e] = True
    return keep, dropped


# Speed trick: at paper scale (pace-paper, ~30,000 running rows a tick, 130,000 ticks) the
# shapers' numpy over all rows, a dozen temporaries per step, was most of a tick; the kernels
# below do each step in one pass (benchmarks/bench_pace.py). Each is compared bit for bit with
# the numpy it replaces (tests/shaping/test_shaper_kernels.py).


@numba.njit(cache=True)
def shaped_targets(
    rows, now, start, request, app, component, app_failures, component_ooms, mean, std,
    fallback, grace_s, k1, k2, max_failures, shape_on_fallback,
):  # fmt: skip
    """``Shaper.targets`` in one pass (:func:`shaped_targets_reference` is the numpy it replaces):
    (n, R) float64 target of each of ``rows`` (float32-rounded) and (n,) bool shaped.

    start, request, app, component: the workload table's columns; app_failures,
    component_ooms: the view's counters; mean, std (n, R) float64 and fallback (n,) bool: the
    forecast of ``rows``. Clipping follows numpy's ``clip``: NaN passes, else max then min.
    """
    n, n_res = mean.shape  # the grace rule inline: core.control.in_grace
    target = np.empty((n, n_res))
    shaped = np.empty(n, np.bool_)
    for i in range(n):
        r = rows[i]
        ok = (
            not (now - start[r] < grace_s)
            and (shape_on_fallback or not fallback[i])
            and app_failures[app[r]] < max_failures
            and component_ooms[component[r]] < max_failures
        )
        for j in range(n_res):
            ok = ok and np.isfinite(mean[i, j]) and np.isfinite(std[i, j])
        shaped[i] = ok
        for j in range(n_res):
            q = np.float64(request[r, j])
            v = q
            if ok:
                w = mean[i, j] + k1 * q + k2 * std[i, j]
                w = w if (np.isnan(w) or w > 0.0) else 0.0
                v = w if (np.isnan(w) or w < q) else q
            target[i, j] = np.float64(np.float32(v))
    return target, shaped


def shaped_targets_reference(
    rows, now, start, request, app, component, app_failures, component_ooms, mean, std,
    fallback, grace_s, k1, k2, max_failures, shape_on_fallback,
):  # fmt: skip
    """What :func:`shaped_targets` computes, in numpy (the shaper's rule, module docstring of
    ``shaping.shaper``)."""
    req = request[rows].astype(np.float64)
    shaped = (
        ~in_grace(now, start[rows], grace_s)
        & np.isfinite(mean).all(axis=1)
        # a forecast without a spread (one sample: std inf) gives no buffer; at K2 = 0,
        # which a failure target may reach, 0 * inf would otherwise make the target NaN
        & np.isfinite(std).all(axis=1)
        # the paper shapes only once the model has enough history (section 5, grace period)
        & (shape_on_fallback | ~fallback)
        & (app_failures[app[rows]] < max_failures)
        & (component_ooms[component[rows]] < max_failures)
    )
    with np.errstate(invalid="ignore"):  # inf std on unshaped rows; they keep the request
        wanted = mean + k1 * req + k2 * std
    target = np.where(shaped[:, None], np.clip(wanted, 0.0, req), req)
    return target.astype(np.float32).astype(np.float64), shaped


@numba.njit(cache=True)
def changed_limits(rows, limit, target, keep):
    """The resizes a shaper asks for: those of ``rows`` (n,) where ``keep`` whose ``limit``
    (W, R) float32 differs from ``target`` (n, R) rounded to float32 on some resource, as (k,)
    int32 rows and (k, R) float32 limits (what ``Decisions`` holds)."""
    n, n_res = target.shape
    out_rows = np.empty(n, np.int32)
    out = np.empty((n, n_res), np.float32)
    k = 0
    for i in range(n):
        if not keep[i]:
            continue
        differs = False
        for j in range(n_res):
            differs |= limit[rows[i], j] != np.float32(target[i, j])
        if differs:
            out_rows[k] = rows[i]
            for j in range(n_res):
                out[k, j] = np.float32(target[i, j])
            k += 1
    return out_rows[:k], out[:k]


def changed_limits_reference(rows, limit, target, keep):
    """What :func:`changed_limits` computes, in numpy."""
    rows, target = rows[keep], target[keep]
    changed = np.any(limit[rows] != target.astype(np.float32), axis=1)
    return rows[changed].astype(np.int32), target[changed].astype(np.float32)


@numba.njit(cache=True)
def fifo_fit(rows, target, host, app, core, start, capacity, axes):
    """Algorithm 1 over ``rows`` with targets ``target`` (n, R) float64, in FIFO order
    (:func:`fifo_order`), testing the resources ``axes`` of ``capacity`` (H, R) float64: returns
    the rows and their targets in that order and :func:`pessimistic_fit`'s keep. ``host``,
    ``app``, ``core``, ``start``: the workload table's columns (:func:`fifo_fit_reference` is
    the numpy it replaces)."""
    n, n_axes = len(rows), len(axes)
    r_app = np.empty(n, app.dtype)
    r_core = np.empty(n, np.bool_)
    r_start = np.empty(n)
    for i in range(n):
        r_app[i], r_core[i], r_start[i] = app[rows[i]], core[rows[i]], start[rows[i]]
    order = fifo_order(r_app, r_core, r_start)
    s_rows = np.empty_like(rows)
    s_target = np.empty_like(target)
    s_host = np.empty(n, host.dtype)
    s_app = np.empty(n, app.dtype)
    s_core = np.empty(n, np.bool_)
    need = np.empty((n, n_axes))
    for i in range(n):
        k = order[i]
        s_rows[i], s_host[i], s_app[i], s_core[i] = rows[k], host[rows[k]], r_app[k], r_core[k]
        for j in range(target.shape[1]):  # element by element: a row slice is an array to build
            s_target[i, j] = target[k, j]
        for a in range(n_axes):
            need[i, a] = target[k, axes[a]]
    room = np.empty((capacity.shape[0], n_axes))
    for h in range(capacity.shape[0]):
        for a in range(n_axes):
            room[h, a] = capacity[h, axes[a]]
    keep, _ = pessimistic_fit(s_host, s_app, s_core, need, room)
    return s_rows, s_target, keep


def fifo_fit_reference(rows, target, host, app, core, start, capacity, axes):
    """What :func:`fifo_fit` computes, in numpy: applications in arrival order, core rows first,
    elastic rows oldest first, then Algorithm 1's pass."""
    order = np.lexsort((start[rows], ~core[rows], app[rows]))
    rows, target = rows[order], target[order]
    keep, _ = pessimistic_fit_reference(
        host[rows], app[rows], core[rows], target[:, axes], capacity[:, axes]
    )
    return rows, target, keep


@numba.njit(cache=True)
def fifo_order(app, core, start):
    """``np.lexsort((start, ~core, app))`` of (n,) int ``app`` >= 0, bool ``core`` and float64
    ``start``: applications in order, core rows first, then oldest first; ties keep their order.

    A stable radix sort on ``app`` (11-bit digits), then per application a stable merge sort on
    (not core, start): applications hold few rows, so that is nearly linear.
    """
    n = len(app)
    idx = radix_argsort(app.astype(np.uint64))
    tmp = np.empty(n, np.int64)
    g = 0
    while g < n:
        e = g + 1
        while e < n and app[idx[e]] == app[idx[g]]:
            e += 1
        if e - g > 1:
            _merge_sort_rows(idx[g:e], tmp[g:e], core, start)
        g = e
    return idx


@numba.njit(cache=True)
def _before(core, start, a, b):
    """Row ``a`` goes strictly before row ``b``: core first, then the earlier start."""
    if core[a] != core[b]:
        return core[a]
    return start[a] < start[b]


@numba.njit(cache=True)
def _merge_sort_rows(idx, tmp, core, start):
    """Stable sort of the row indices ``idx`` by :func:`_before`, ``tmp`` scratch of its size:
    insertion sort of runs of 16, then bottom-up merges."""
    n, run = len(idx), 16
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            v = idx[i]
            j = i
            while j > lo and _before(core, start, v, idx[j - 1]):
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = v
    src, dst = idx, tmp
    width, in_tmp = run, False
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, o = lo, mid, lo
            while i < mid and j < hi:
                if _before(core, start, src[j], src[i]):  # strictly: ties take the left run
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        idx[:] = tmp
