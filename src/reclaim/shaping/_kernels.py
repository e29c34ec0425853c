"""Compiled Algorithm 1 of the shaping paper, beside the plain-Python reference it must match."""

from __future__ import annotations

import numba
import numpy as np

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
