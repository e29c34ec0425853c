"""The policy's first layer on the compact observation: no (D,) observation is written.

With one label (no equivalence classes) and queue images, every image row of TVW-RL's observation
(a machine's resource at one step, or a queue slot's resource at one step of its profile) is
``level`` pixels of one value v from the left and zeros after (``rl._vector_kernels``), so

    w1 . x = v sum_rows P[row, level_row] + w1[:, -1] x backlog,

P the prefix sums of w1 along each row's C units: 600 lookups of a (hidden,) vector per
observation instead of a 4,801 x 20 product. The gradient of the first layer is likewise a
difference array per row (+g at unit 0, -g at the level), summed once per batch. ``VectorEnv(...,
compact=True)`` writes the levels (B, rows) int8 and the backlog (B,).

The sums run in another order than the dense product's, so logits agree with
``LinearPolicy.logits`` to float32 rounding, not bit for bit (``tests/rl/test_rl_fused.py``); a
run is still deterministic.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from reclaim._numba_util import add_run, sub_scaled_run, threaded
from reclaim.rl.policy import LinearPolicy


def prefix(policy: LinearPolicy, rows: int, units: int) -> NDArray[np.float32]:
    """(rows, units + 1, hidden) float32: P[row, l] = the sum of w1 over the row's first l
    units."""
    hidden = policy.w1.shape[0]
    w = policy.w1[:, : rows * units].astype(np.float64).reshape(hidden, rows, units)
    out = np.zeros((rows, units + 1, hidden))
    out[:, 1:, :] = np.cumsum(w, axis=2).transpose(1, 2, 0)
    return out.astype(np.float32)


@numba.njit(cache=True, inline="always")
def _first_one(levels, tail, value, table, last, b1, b, acc, pre):
    """pre[b] = b1 + value x sum_rows table[row, level] + last x tail[b] (acc (hidden,):
    scratch).

    Speed tricks (2.2x): every row is added, level 0 too, whose prefix is +0 (adding +0 leaves
    the sum's bits as they are: it starts at +0 and never becomes -0), so no branch mispredicts
    on the levels; and each row's 20 sums are two vector adds (``_numba_util.add_run``), LLVM
    leaving that loop scalar. Each sum still runs over the rows in order: the same bits."""
    rows, width, hidden = table.shape
    flat = table.reshape(table.size)
    acc[:] = 0.0
    for row in range(rows):
        add_run(acc, 0, flat, (row * width + levels[b, row]) * hidden, hidden)
    for h in range(hidden):
        pre[b, h] = b1[h] + value * acc[h] + last[h] * tail[b]


@numba.njit(cache=True)
def _first_layer(levels, tail, value, table, last, b1, which, pre):
    """pre[b] (hidden,) = b1 + value x sum_rows table[row, level] + last x tail for b in
    ``which``; b1 for the other rows."""
    for b in range(len(pre)):
        pre[b] = b1
    acc = np.zeros(table.shape[2], np.float32)
    for b in which:
        _first_one(levels, tail, value, table, last, b1, b, acc, pre)


@numba.njit(cache=True, parallel=True)
def _first_layer_parallel(levels, tail, value, table, last, b1, which, pre):
    """:func:`_first_layer` with the episodes shared among numba's threads (each episode's sum
    as the serial one runs it: the same bits)."""
    for b in range(len(pre)):
        pre[b] = b1
    for i in numba.prange(len(which)):
        acc = np.empty(table.shape[2], np.float32)
        _first_one(levels, tail, value, table, last, b1, which[i], acc, pre)


def forward(
    policy: LinearPolicy,
    table: NDArray,
    levels: NDArray,
    tail: NDArray,
    value: float,
    live: NDArray[np.bool_] | None = None,
    threads: int = 1,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """(pre-activations (B, hidden), logits (B, A)) of compact observations; with ``live``
    (B,), the rows not live are not read (pre-activations b1: ended episodes, whose logits only
    meet a weight of 0 in the loss). ``threads`` > 1: the rows shared among that many numba
    threads (the same results)."""
    pre = np.empty((len(levels), policy.w1.shape[0]), np.float32)
    last = np.ascontiguousarray(policy.w1[:, -1])
    which = np.arange(len(levels)) if live is None else np.flatnonzero(live)
    args = (levels, tail, np.float32(value), table, last, policy.b1, which, pre)
    threaded(_first_layer, _first_layer_parallel, threads, *args)
    logits = np.maximum(pre, 0.0) @ policy.w2.T + policy.b2
    return pre, logits


@numba.njit(cache=True, inline="always")
def _difference_rows(levels, value, dpre, which, diff, lo, hi):
    """Rows lo..hi of :func:`_difference`'s sums by level (each over the steps in order). Speed
    tricks as ``_first_one``'s: no branch on the level (level 0's sums, unused, are reset by
    ``_difference_ends``), vector runs (``_numba_util.sub_scaled_run``)."""
    rows, width, hidden = diff.shape
    flat = diff.reshape(diff.size)
    grad = dpre.reshape(dpre.size)
    for b in which:
        for row in range(lo, hi):
            at = (row * width + levels[b, row]) * hidden
            sub_scaled_run(flat, at, value, grad, b * hidden, hidden)


@numba.njit(cache=True, inline="always")
def _difference_ends(tail, dpre, which, diff, last):
    """:func:`_difference`'s last column and unit-0 entries."""
    hidden = dpre.shape[1]
    for b in which:
        for h in range(hidden):
            last[h] += dpre[b, h] * tail[b]
    diff[:, 0, :] = 0.0  # level 0's sums (``_difference_rows``): unit 0 starts from 0
    for row in range(diff.shape[0]):
        for level in range(1, diff.shape[1]):
            for h in range(hidden):
                diff[row, 0, h] -= diff[row, level, h]


@numba.njit(cache=True)
def _difference(levels, tail, value, dpre, which, diff, last, parts):
    """Accumulate the first layer's gradient as a difference array diff (rows, units + 1,
    hidden): per row +value dpre at unit 0 and -value dpre at its level; last (hidden,) +=
    dpre x tail; over the steps ``which`` (ascending). One add per row and step: the sums by
    level are kept, unit 0 filled at the end. ``parts``: unused (the parallel twin's)."""
    _difference_rows(levels, value, dpre, which, diff, 0, levels.shape[1])
    _difference_ends(tail, dpre, which, diff, last)


@numba.njit(cache=True, parallel=True)
def _difference_parallel(levels, tail, value, dpre, which, diff, last, parts):
    """:func:`_difference` with the rows in ``parts`` shares among numba's threads (each entry
    summed over the steps in order, as the serial one sums it: the same bits)."""
    rows = levels.shape[1]
    for part in numba.prange(parts):
        lo, hi = rows * part // parts, rows * (part + 1) // parts
        _difference_rows(levels, value, dpre, which, diff, lo, hi)
    _difference_ends(tail, dpre, which, diff, last)


def gradients(
    policy: LinearPolicy,
    levels: NDArray,
    tail: NDArray,
    value: float,
    pre: NDArray,
    dlogits: NDArray,
    units: int,
    alive: NDArray[np.bool_] | None = None,
    threads: int = 1,
) -> dict[str, NDArray[np.float64]]:
    """Gradients of a loss with d loss / d logits ``dlogits`` (B, A) at compact observations
    (pre-activations ``pre`` (B, hidden)): w1 (hidden, D), b1, w2, b2, as float64.

    ``alive`` (B,): rows whose d loss / d logits is zero by construction (ended episodes: a
    weight of 0) may be marked not alive, and the first layer skips them. Exact: their terms
    are signed zeros, and adding one leaves every sum here unchanged (x - 0 = x, and a sum that
    starts at +0 never becomes -0). ``threads`` > 1: the first layer's rows shared among that
    many numba threads (the same results)."""
    dlogits = dlogits.astype(np.float64)
    active = np.maximum(pre.astype(np.float64), 0.0)
    dpre = (dlogits @ policy.w2.astype(np.float64)) * (pre > 0)
    rows = levels.shape[1]
    hidden = policy.w1.shape[0]
    diff = np.zeros((rows, units + 1, hidden))
    last = np.zeros(hidden)
    which = np.arange(len(levels)) if alive is None else np.flatnonzero(alive)
    args = (levels, tail.astype(np.float64), float(value), dpre, which, diff, last, threads)
    threaded(_difference, _difference_parallel, threads, *args)
    w1 = np.zeros(policy.w1.shape)
    w1[:, : rows * units] = (
        np.cumsum(diff[:, :units, :], axis=1).transpose(2, 0, 1).reshape(hidden, rows * units)
    )
    w1[:, -1] = last
    return {
        "w1": w1,
        "b1": dpre.sum(axis=0),
        "w2": dlogits.T @ active,
        "b2": dlogits.sum(axis=0),
    }


def dense(levels: NDArray, tail: NDArray, value: float, units: int) -> NDArray[np.float32]:
    """The (B, D) observations the compact ones stand for (for tests and checks)."""
    batch, rows = levels.shape
    pixels = (np.arange(units)[None, None, :] < levels[:, :, None]).astype(np.float32)
    out = np.concatenate(
        [pixels.reshape(batch, rows * units) * np.float32(value), tail[:, None]], 1
    )
    return out.astype(np.float32)
