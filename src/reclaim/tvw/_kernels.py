"""Compiled kernels of the TVW replay (``tvw.replay``); the plain reference of each is the numpy
code in its docstring, which ``tests/tvw/test_replay.py`` checks it against."""

from __future__ import annotations

import numba


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
