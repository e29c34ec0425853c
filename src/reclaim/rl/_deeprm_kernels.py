"""Compiled kernels of DeepRM's environment step (``rl.deeprm.DeepRMEnv``).

Each replaces the dozen small numpy calls a step made (Best-Fit's ranking of the job slots
through the placement framework, the reserved-units image, the penalties of the steps the clock
passed): call overhead, not arithmetic, dominated an episode. The plain numpy reference is
:class:`reclaim.rl.deeprm.ReferenceDeepRMEnv`; ``tests/rl/test_deeprm_kernels.py`` checks whole
episodes and a seeded training against it bit for bit, and ``benchmarks/bench_rl.py`` shows the
gain.

Bit-for-bit: reserved units are integer sums (exact in any order); the slowdown and unreserved
penalties are float sums, added in numpy's pairwise order (:func:`pairwise_sum`) over the same
values the reference sums.
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim.placement._kernels import best_by_levels, fits_into
from reclaim.placement.plugins.best_fit import best_fit_kernel

#: numpy's pairwise-summation block (``PW_BLOCKSIZE`` in its ``loops_utils.h``).
_BLOCK = 128


@numba.njit(cache=True)
def pairwise_sum(a, lo, n):
    """a[lo:lo + n].sum() exactly as numpy adds a contiguous float64 array: its pairwise sum,
    halving (to a multiple of 8) down to blocks of at most 128 summed by :func:`_block_sum`.
    The recursion runs on an explicit stack (numba's cache crashes on recursive functions)."""
    starts, sizes = np.empty(192, np.int64), np.empty(192, np.int64)  # size -1: add the last two
    sums = np.empty(64)
    starts[0], sizes[0] = lo, n
    tasks, done = 1, 0
    while tasks > 0:
        tasks -= 1
        first, size = starts[tasks], sizes[tasks]
        if size < 0:
            done -= 1
            sums[done - 1] += sums[done]
        elif size <= _BLOCK:
            sums[done] = _block_sum(a, first, size)
            done += 1
        else:
            half = size // 2
            half -= half % 8
            starts[tasks : tasks + 3] = (0, first + half, first)  # popped last to first
            sizes[tasks : tasks + 3] = (-1, size - half, half)
            tasks += 3
    return sums[0]


@numba.njit(cache=True)
def _block_sum(a, lo, n):
    """numpy's sum of a block of at most 128: 8 running sums, combined pairwise, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    # Eight scalars rather than an (8,) array: they stay in registers.
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = lo + 8
    while i < lo + n - n % 8:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for k in range(i, lo + n):
        res += a[k]
    return res


@numba.njit(cache=True)
def slot_hosts(capacity, free, up, peak, head, out):
    """Write to ``out`` (S,) Best-Fit's machine for each workload of ``head`` (its peak (R,) against
    ``free`` (H, R) alone), -1 where it fits none or past the B <= S workloads:
    ``build_placer("best-fit").rank`` and the highest level, ties to the lower index. Returns how
    many fit somewhere. peak: (n, R) units; head: (B,) int64 workloads."""
    n_hosts, n_res = free.shape
    req = np.empty(n_res)
    raw, levels = np.empty(n_hosts), np.empty(n_hosts)
    ok = np.empty(n_hosts, np.bool_)
    placeable = 0
    for s in range(len(head)):
        for r in range(n_res):
            req[r] = peak[head[s], r]
        best_fit_kernel(capacity, free, req, raw)
        fits_into(free, up, req, ok)
        out[s] = best_by_levels(raw, ok, 1.0, levels)
        placeable += out[s] >= 0
    out[len(head) :] = -1
    return placeable


@numba.njit(cache=True)
def observation(peak, host, start, length, now, history, units, width, head, images, backlog, out):
    """Write DeepRM's (D,) float32 observation into ``out`` (``DeepRMEnv.observe``).

    Per resource an (h, width) image: pixel (k, c) is 1 where c < the units reserved at step
    now + k (placed workloads' peaks until they end); then per slot of ``head`` (waiting
    workloads): with ``images`` DeepRM's job-slot image, per resource (h, units), pixel (k, c) 1
    where k < its length and c < its peak; without, peak / units and length / h (capped at 1);
    last ``backlog``.
    """
    n_res = peak.shape[1]
    reserved = np.zeros((n_res, history), np.int64)
    for j in range(len(host)):
        if host[j] >= 0:
            for k in range(min(start[j] + length[j] - now, history)):
                for r in range(n_res):
                    reserved[r, k] += peak[j, r]
    out[:] = 0.0
    for r in range(n_res):
        for k in range(history):
            base = (r * history + k) * width
            for c in range(min(reserved[r, k], width)):
                out[base + c] = 1.0
    base = n_res * history * width
    if images:
        slot = n_res * history * units
        for s in range(len(head)):
            j = head[s]
            for r in range(n_res):
                for k in range(min(length[j], history)):
                    at = base + s * slot + (r * history + k) * units
                    for c in range(min(peak[j, r], units)):
                        out[at + c] = 1.0
        out[len(out) - 1] = np.float32(backlog)
        return
    for s in range(len(head)):
        j = head[s]
        for r in range(n_res):
            out[base + s * (n_res + 1) + r] = np.float32(np.float32(peak[j, r]) / units)
        out[base + s * (n_res + 1) + n_res] = np.float32(min(length[j] / history, 1.0))
    out[len(out) - 1] = np.float32(backlog)


@numba.njit(cache=True)
def charge(first, stop, arrival, host, start, length, peak, width):
    """DeepRM's penalties of steps [first, stop): (the sum over steps and workloads in the system,
    arrived and not finished, of 1 / length; the sum over steps and resources of the unreserved
    units / width). Each summed as numpy sums the reference's (T, n) and (T, R) arrays."""
    steps, n, n_res = stop - first, len(host), peak.shape[1]
    slowdown = np.zeros(steps * n)
    reserved = np.zeros((steps, n_res), np.int64)
    for j in range(n):
        placed = host[j] >= 0
        end = min(start[j] + length[j], stop) if placed else stop
        share = 1.0 / length[j]
        for t in range(max(arrival[j], first), end):
            slowdown[(t - first) * n + j] = share
        if placed:
            for t in range(max(start[j], first), end):
                for r in range(n_res):
                    reserved[t - first, r] += peak[j, r]
    unreserved = (width - reserved.ravel()) / width
    return pairwise_sum(slowdown, 0, len(slowdown)), pairwise_sum(unreserved, 0, len(unreserved))
