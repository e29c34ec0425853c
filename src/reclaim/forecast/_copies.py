"""Which series of a batch are copies of an earlier one, so that a forecaster fits each distinct
series once and hands its copies the same numbers.

Why: in the shaping paper's world every component of an application follows the application's
one usage curve, so the simulator's batch holds each curve about four times per tick (19
components per application, most started together). A forecaster's answer for a series depends
only on its values and its keyed state, so copies of both get the bits their own fit would give.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


def first_copies(
    data: NDArray[np.float64], indptr: NDArray[np.int64], state: NDArray[np.float64]
) -> NDArray[np.int64]:
    """(S,) for each series the first series (lowest index) with the same values (``data``
    between ``indptr`` bounds) and the same row of ``state`` (S, E), bit for bit; itself where
    none comes before."""
    return _first_equal(
        np.ascontiguousarray(data, np.float64),
        np.asarray(indptr, np.int64),
        np.ascontiguousarray(state, np.float64),
    )


@numba.njit(cache=True)
def _first_equal(data, indptr, state):
    """Series grouped by a hash of their bits and compared in full within a group, so that a
    hash collision never makes two different series copies."""
    S, E = state.shape
    values, extra = data.view(np.uint64), state.view(np.uint64)
    digest = np.empty(S, np.uint64)
    for s in range(S):
        x = np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(indptr[s + 1] - indptr[s])
        for i in range(indptr[s], indptr[s + 1]):
            x = (x ^ values[i]) * np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(31)
        for e in range(E):
            x = (x ^ extra[s, e]) * np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(31)
        digest[s] = x
    order = np.argsort(digest, kind="mergesort")  # stable: equal digests in index order
    same = np.arange(S)
    i = 0
    while i < S:
        j = i + 1
        while j < S and digest[order[j]] == digest[order[i]]:
            j += 1
        for a in range(i + 1, j):
            sa = order[a]
            for b in range(i, a):
                sb = order[b]
                if same[sb] == sb and _equal(values, extra, indptr, sa, sb):
                    same[sa] = sb
                    break
        i = j
    return same


@numba.njit(cache=True)
def _equal(values, extra, indptr, a, b):
    n = indptr[a + 1] - indptr[a]
    if indptr[b + 1] - indptr[b] != n:
        return False
    for k in range(n):
        if values[indptr[a] + k] != values[indptr[b] + k]:
            return False
    for e in range(extra.shape[1]):  # noqa: SIM110 - a plain loop in compiled code
        if extra[a, e] != extra[b, e]:
            return False
    return True
