"""Compiled kernels of the TVW replay (``tvw.replay``); the plain reference of each is the numpy
code in its docstring, which ``tests/tvw/test_replay.py`` checks it against."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def record_bind(usage, count, reserved, now, host, data, lo, hi, peak):
    """Record a workload started ``now`` on ``host`` (its series data[lo:hi], peak (R,)):

    usage[now:now + hi - lo, host] += data[lo:hi]; count[now:now + hi - lo, host] += 1;
    reserved[host] += peak.
    """
    for k in range(hi - lo):
        for r in range(data.shape[1]):
            usage[now + k, host, r] += data[lo + k, r]
        count[now + k, host] += 1
    for r in range(data.shape[1]):
        reserved[host, r] += peak[r]


@numba.njit(cache=True)
def background_units(key, t, m, r, level):
    """Units machine ``m``'s background process uses of resource ``r`` at step ``t``: uniform in
    0..level, a hash (splitmix64's finaliser) of (key, t, m, r), so that any step of any machine
    is known without storing it and every placer of a sequence meets the same noise."""
    if level <= 0:
        return 0
    x = np.uint64(key)
    x ^= np.uint64(t) * np.uint64(0x9E3779B97F4A7C15)
    x ^= np.uint64(m + 1) * np.uint64(0xC2B2AE3D27D4EB4F)
    x ^= np.uint64(r + 1) * np.uint64(0x165667B19E3779F9)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return np.int64(x % np.uint64(level + 1))


@numba.njit(cache=True)
def add_background(out, first, key, level, power):
    """out[t, m, r] += background_units(key, t, m, r, level) ** power for t >= ``first`` (out
    (T, H, R): usage with power 1, squared usage with power 2)."""
    if level <= 0:
        return
    for t in range(first, out.shape[0]):
        for m in range(out.shape[1]):
            for r in range(out.shape[2]):
                out[t, m, r] += background_units(key, t, m, r, level) ** power
