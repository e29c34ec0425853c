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

from reclaim.rl.policy import LinearPolicy


def prefix(policy: LinearPolicy, rows: int, units: int) -> NDArray[np.float32]:
    """(rows, units + 1, hidden) float32: P[row, l] = the sum of w1 over the row's first l
    units."""
    hidden = policy.w1.shape[0]
    w = policy.w1[:, : rows * units].astype(np.float64).reshape(hidden, rows, units)
    out = np.zeros((rows, units + 1, hidden))
    out[:, 1:, :] = np.cumsum(w, axis=2).transpose(1, 2, 0)
    return out.astype(np.float32)


@numba.njit(cache=True)
def _first_layer(levels, tail, value, table, last, b1, pre):
    """pre (B, hidden) = b1 + value x sum_rows table[row, level] + last x tail."""
    batch, rows = levels.shape
    hidden = table.shape[2]
    acc = np.zeros(hidden, np.float32)
    for b in range(batch):
        acc[:] = 0.0
        for row in range(rows):
            level = levels[b, row]
            if level > 0:
                for h in range(hidden):
                    acc[h] += table[row, level, h]
        for h in range(hidden):
            pre[b, h] = b1[h] + value * acc[h] + last[h] * tail[b]


def forward(
    policy: LinearPolicy, table: NDArray, levels: NDArray, tail: NDArray, value: float
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """(pre-activations (B, hidden), logits (B, A)) of compact observations."""
    pre = np.empty((len(levels), policy.w1.shape[0]), np.float32)
    last = np.ascontiguousarray(policy.w1[:, -1])
    _first_layer(levels, tail, np.float32(value), table, last, policy.b1, pre)
    logits = np.maximum(pre, 0.0) @ policy.w2.T + policy.b2
    return pre, logits


@numba.njit(cache=True)
def _difference(levels, tail, value, dpre, diff, last):
    """Accumulate the first layer's gradient as a difference array diff (rows, units + 1,
    hidden): per row +value dpre at unit 0 and -value dpre at its level; last (hidden,) +=
    dpre x tail. One add per row and step: the sums by level are kept, unit 0 filled at the end."""
    batch, rows = levels.shape
    hidden = dpre.shape[1]
    for b in range(batch):
        for row in range(rows):
            level = levels[b, row]
            if level > 0:
                for h in range(hidden):
                    diff[row, level, h] -= value * dpre[b, h]
        for h in range(hidden):
            last[h] += dpre[b, h] * tail[b]
    for row in range(rows):
        for level in range(1, diff.shape[1]):
            for h in range(hidden):
                diff[row, 0, h] -= diff[row, level, h]


def gradients(
    policy: LinearPolicy,
    levels: NDArray,
    tail: NDArray,
    value: float,
    pre: NDArray,
    dlogits: NDArray,
    units: int,
) -> dict[str, NDArray[np.float64]]:
    """Gradients of a loss with d loss / d logits ``dlogits`` (B, A) at compact observations
    (pre-activations ``pre`` (B, hidden)): w1 (hidden, D), b1, w2, b2, as float64."""
    dlogits = dlogits.astype(np.float64)
    active = np.maximum(pre.astype(np.float64), 0.0)
    dpre = (dlogits @ policy.w2.astype(np.float64)) * (pre > 0)
    rows = levels.shape[1]
    hidden = policy.w1.shape[0]
    diff = np.zeros((rows, units + 1, hidden))
    last = np.zeros(hidden)
    _difference(levels, tail.astype(np.float64), float(value), dpre, diff, last)
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
