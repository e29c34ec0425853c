"""VPA's recommender arithmetic, compiled: decaying histograms of usage samples, their
percentiles, the confidence-scaled estimate and the updater's rule (the controller that uses
them is :mod:`reclaim.shaping.vpa`, whose docstring states what VPA does and where it is from).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

#: Confidence multipliers (logic/recommender.go): upper * (1 + 1/c)^1, lower * (1 + 0.001/c)^-2.
UPPER_CONFIDENCE = (1.0, 1.0)
LOWER_CONFIDENCE = (0.001, -2.0)
#: decaying_histogram.go renormalises once a weight factor would exceed 2^100.
MAX_DECAY_EXPONENT = 100.0


# ---------------------------------------------------------------------------- histogram helpers
def bucket_starts(first: float, ratio: float, top: float) -> NDArray[np.float64]:
    """(B,) start of each exponential bucket: 0, then ``first * (ratio^n - 1) / (ratio - 1)``;
    as many buckets as needed for the last one to start at or above ``top``. ``ratio`` 1 gives
    linear buckets of width ``first`` (histogram_options.go's linear options, which upstream's
    own histogram tests use)."""
    if ratio == 1.0:
        return first * np.arange(int(np.ceil(top / first)) + 1, dtype=np.float64)
    n = int(np.ceil(np.log(top * (ratio - 1) / first + 1) / np.log(ratio))) + 1
    return first * (ratio ** np.arange(n, dtype=np.float64) - 1) / (ratio - 1)


def find_bucket(values: NDArray, first: float, ratio: float, n: int) -> NDArray[np.int64]:
    """(m,) bucket of each value (the inverse of :func:`bucket_starts`), clipped to [0, n-1]."""
    v = np.maximum(np.asarray(values, np.float64), 0.0)
    if ratio == 1.0:
        b = np.floor(v / first).astype(np.int64)
    else:
        b = np.floor(np.log(v * (ratio - 1) / first + 1) / np.log(ratio)).astype(np.int64)
    return np.clip(b, 0, n - 1)


def bucket_ends(starts: NDArray[np.float64]) -> NDArray[np.float64]:
    """(B,) what a percentile falling in each bucket reports: the bucket's end, i.e. the next
    bucket's start (the last bucket is open, so its own start)."""
    return np.concatenate([starts[1:], starts[-1:]])


def percentiles_reference(hist, slots, qs, ends):
    """(n, m) percentiles ``qs`` (in (0, 1]) of rows ``slots`` of ``hist`` (K, B), as
    histogram.go computes them, by a full scan: the end ``ends[b]`` of the first bucket ``b``
    whose cumulative weight reaches ``q * total`` (the last non-empty bucket if rounding leaves
    the sum a hair short); NaN for an empty row. The tests hold the incremental kernels to it."""
    rows = np.asarray(hist, np.float64)[np.asarray(slots)]
    cum = np.cumsum(rows, axis=1)
    total = cum[:, -1]
    last = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)
    out = np.empty((len(rows), len(qs)))
    for j, q in enumerate(qs):
        reached = cum >= q * total[:, None]
        out[:, j] = ends[np.where(reached.any(axis=1), np.argmax(reached, axis=1), last)]
    out[total <= 0] = np.nan
    return out


def grown(arr: NDArray, size: int, fill) -> NDArray:
    """``arr`` extended along axis 0 to at least ``size`` rows (doubling), new rows ``fill``."""
    if len(arr) >= size:
        return arr
    bigger = np.full((max(size, 2 * len(arr)), *arr.shape[1:]), fill, arr.dtype)
    bigger[: len(arr)] = arr
    return bigger


# Percentiles are kept up to date sample by sample instead of found by scanning: for each row and
# percentile q, ``idx`` is the bucket holding it and ``below`` the weight of the buckets under
# ``idx``, so that below < q * total <= below + h[idx]. Once a row holds a few samples, one more
# moves a percentile by a bucket or two, so keeping them costs O(1) per sample, where scanning each
# row at each tick took most of the controller's time (and cache misses all over a K x 176 array).
@numba.njit(cache=True)
def _settle(h, lo, hi, total, q, idx, below):
    """Move percentile ``q``'s bucket ``idx`` and ``below`` until they hold again."""
    thr = q * total
    while idx < hi and below + h[idx] < thr:
        below += h[idx]
        idx += 1
    while idx > lo and below >= thr:
        idx -= 1
        below -= h[idx]
    while idx > lo and h[idx] <= 0.0 and below + h[idx] < thr:
        # rounding left the weight a hair short of q * total: the last non-empty bucket
        idx -= 1
        below -= h[idx]
    if idx == lo:
        below = 0.0  # an exact anchor, so that rounding in the running sum cannot build up
    return idx, below


@numba.njit(cache=True)
def add_weights(hist, total, lo, hi, idx, below, qs, slots, buckets, weights):
    """Add non-negative ``weights`` to buckets ``buckets`` of rows ``slots`` (may repeat) of
    ``hist`` (K, B), keeping each row's ``total``, occupied range [lo, hi] and percentiles ``qs``
    (``idx``, ``below``: (K, m))."""
    for i in range(len(slots)):
        s, b, w = slots[i], buckets[i], weights[i]
        h = hist[s]
        empty = total[s] <= 0.0
        h[b] += w
        total[s] += w
        lo[s] = min(lo[s], b)
        hi[s] = max(hi[s], b)
        for j in range(len(qs)):
            if empty:
                idx[s, j], below[s, j] = b, 0.0
            else:
                if b < idx[s, j]:
                    below[s, j] += w
                idx[s, j], below[s, j] = _settle(
                    h, lo[s], hi[s], total[s], qs[j], idx[s, j], below[s, j]
                )


@numba.njit(cache=True)
def remove_weights(hist, total, lo, hi, idx, below, qs, slots, buckets, weights, eps):
    """Remove ``weights`` added before, as histogram.go does: a bucket left below ``eps`` is
    emptied (no rounding residue of a removed peak stays behind)."""
    for i in range(len(slots)):
        s, b = slots[i], buckets[i]
        h = hist[s]
        w = h[b] if weights[i] > h[b] - eps else weights[i]
        h[b] -= w
        total[s] -= w
        if total[s] < eps:  # nothing left but rounding
            total[s] = 0.0
        for j in range(len(qs)):
            if b < idx[s, j]:
                below[s, j] -= w
            idx[s, j], below[s, j] = _settle(
                h, lo[s], hi[s], total[s], qs[j], idx[s, j], below[s, j]
            )


class DecayingHistograms:
    """K decaying exponential histograms of one resource, one row per aggregate slot, with their
    percentiles ``qs`` kept up to date.

    weight: (K, B) float64, the bucket weights relative to the reference time ``ref`` (s, a
    multiple of the half-life; decaying_histogram.go): a sample at time t weighs
    ``w * 2^((t - ref) / half_life)``, so older samples count less without touching stored
    weights. total: (K,) float64, each row's weight. lo, hi: (K,) int64, the range of buckets
    that may hold weight (VPA's min/maxBucket, only ever widened). idx, below: (K, m), see
    :func:`add_weights`.
    """

    def __init__(
        self,
        k: int,
        first: float,
        ratio: float,
        top: float,
        half_life: float,
        eps: float,
        qs: NDArray[np.float64],
    ) -> None:
        starts = bucket_starts(first, ratio, top)
        self.first, self.ratio, self.half_life, self.eps = first, ratio, half_life, eps
        self.qs = np.asarray(qs, np.float64)
        self.ends = bucket_ends(starts)
        self.n_buckets = len(starts)
        self.weight = np.zeros((k, self.n_buckets))
        self.total = np.zeros(k)
        self.lo = np.full(k, self.n_buckets, np.int64)
        self.hi = np.full(k, -1, np.int64)
        self.idx = np.zeros((k, len(qs)), np.int64)
        self.below = np.zeros((k, len(qs)))
        self.ref = np.nan

    def grow(self, size: int) -> None:
        self.weight = grown(self.weight, size, 0.0)
        self.total = grown(self.total, size, 0.0)
        self.lo = grown(self.lo, size, self.n_buckets)
        self.hi = grown(self.hi, size, -1)
        self.idx = grown(self.idx, size, 0)
        self.below = grown(self.below, size, 0.0)

    def clear(self, slots: NDArray[np.int64]) -> None:
        self.weight[slots] = 0.0
        self.total[slots] = 0.0
        self.lo[slots] = self.n_buckets
        self.hi[slots] = -1
        self.idx[slots] = 0
        self.below[slots] = 0.0

    def factor(self, t: NDArray[np.float64] | float) -> NDArray[np.float64]:
        """Weight factor 2^((t - ref) / half-life) of samples at times ``t`` (s); first moves
        the reference forward, rescaling the stored weights, if a factor would pass 2^100."""
        latest = float(np.max(t))
        if np.isnan(self.ref) or (latest - self.ref) / self.half_life > MAX_DECAY_EXPONENT:
            new_ref = np.round(latest / self.half_life) * self.half_life
            if not np.isnan(self.ref):
                scale = np.exp2(np.round((self.ref - new_ref) / self.half_life))  # exact: 2^-k
                self.weight *= scale
                self.total *= scale
                self.below *= scale
            self.ref = new_ref
        return np.exp2((np.asarray(t, np.float64) - self.ref) / self.half_life)

    def _args(self, slots, values, weights):
        bucket = find_bucket(values, self.first, self.ratio, self.n_buckets)
        weights = np.array(np.broadcast_to(weights, bucket.shape), np.float64)  # one signature
        state = (self.weight, self.total, self.lo, self.hi, self.idx, self.below, self.qs)
        return (*state, np.ascontiguousarray(slots, np.int64), bucket, weights)

    def add(self, slots: NDArray[np.int64], values: NDArray, weights: NDArray) -> None:
        """Add samples ``values`` with (decayed) ``weights`` to rows ``slots`` (may repeat)."""
        add_weights(*self._args(slots, values, weights))

    def remove(self, slots: NDArray[np.int64], values: NDArray, weights: NDArray) -> None:
        """Remove samples added before with the same (decayed) ``weights``."""
        remove_weights(*self._args(slots, values, weights), self.eps)

    def percentiles(self, slots: NDArray[np.int64]) -> NDArray[np.float64]:
        """(n, m) the percentiles ``qs`` of rows ``slots``; NaN for empty rows."""
        out = self.ends[self.idx[slots]]
        out[self.total[slots] <= 0.0] = np.nan
        return out


# ---------------------------------------------------------------------------- the estimator
@numba.njit(cache=True, error_model="numpy")
def confidence_multiplier(confidence, multiplier, exponent):
    """estimator.go's confidence multiplier ``(1 + multiplier / confidence)^exponent``, where
    ``confidence`` is the history length in days (scalar or array): inf (exponent > 0) or 0
    (exponent < 0) with no history. The recommender scales the upper bound by (1, 1) and the
    lower bound by (0.001, -2)."""
    return (1.0 + multiplier / confidence) ** exponent


def estimate(percentiles, confidence, margin, minimums):
    """(n, 3, R) lower bound, target and upper bound, recommender.go's chain, plain numpy:
    ``percentiles`` (n, 3, R) (lower, target, upper percentile; cores, GiB) plus the safety
    ``margin`` (fraction), the bounds scaled by :func:`confidence_multiplier` of ``confidence``
    (n,) days, then all raised to ``minimums`` (R,); not capped."""
    est = np.asarray(percentiles, np.float64) * (1.0 + margin)
    confidence = np.asarray(confidence, np.float64)
    for k, (mult, exp) in ((2, UPPER_CONFIDENCE), (0, LOWER_CONFIDENCE)):
        est[:, k] *= confidence_multiplier(confidence, mult, exp)[:, None]
    return np.maximum(est, minimums)


# ---------------------------------------------------------------------------- the updater
def update_rule(est, request, limit, new, age, update_threshold, lifetime):
    """The updater's choice, plain numpy: which rows to resize and to what.

    est: (n, 3, R) lower bound, target, upper bound (cores, GiB), uncapped; request, limit:
    (n, R) the original request (maxAllowed) and the current allocation; new: (n,) bool, rows
    not seen before (the admission controller sets them); age: (n,) s since the row started.
    Returns update (n,) bool and the capped targets (n, R) float32: new rows, rows whose limit
    is outside [lower, upper] for some resource, and rows at least ``lifetime`` old whose
    targets differ by ``update_threshold`` or more (sum over resources of |target - limit| /
    limit) are set to the target for every resource, where that changes the limit.
    """
    est = np.minimum(est, request[:, None, :])  # the capping processor: maxAllowed
    lower, target, upper = est[:, 0], est[:, 1], est[:, 2]
    outside = np.any((limit < lower) | (limit > upper), axis=1)
    change = np.sum(np.abs(target - limit) / np.maximum(limit, 1e-9), axis=1)
    update = new | outside | ((age >= lifetime) & (change >= update_threshold))
    target32 = target.astype(np.float32)
    update &= np.any(target32 != limit.astype(np.float32), axis=1)
    return update, target32


@numba.njit(cache=True, error_model="numpy")
def recommend_and_update(
    slots,
    cpu_idx,
    cpu_ends,
    mem_idx,
    mem_ends,
    first,
    last,
    observed,
    request,
    limit,
    new,
    age,
    margin,
    confidence_interval,
    min_cpu,
    min_mem,
    update_threshold,
    lifetime,
):
    """The recommender's :func:`estimate` and :func:`update_rule`
    fused in one pass over rows whose (non-empty) aggregates are ``slots`` (the 60-odd numpy
    calls they take cost more than the arithmetic at 10,000 rows). ``*_idx`` (K, 3) are the
    percentile buckets, lower, target, upper. Returns update (n,) bool and targets (n, R)
    float32 as :func:`update_rule` does."""
    n = len(slots)
    update = np.zeros(n, np.bool_)
    target32 = np.empty((n, 2), np.float32)
    for i in range(n):
        s = slots[i]
        confidence = min(last[s] - first[s], observed[s]) / confidence_interval
        up_mult = confidence_multiplier(confidence, UPPER_CONFIDENCE[0], UPPER_CONFIDENCE[1])
        low_mult = confidence_multiplier(confidence, LOWER_CONFIDENCE[0], LOWER_CONFIDENCE[1])
        outside, change, differs = False, 0.0, False
        for r in range(2):
            if r == 0:
                idx, ends, floor = cpu_idx[s], cpu_ends, min_cpu
            else:
                idx, ends, floor = mem_idx[s], mem_ends, min_mem
            cap, cur = request[i, r], limit[i, r]
            lower = min(max(ends[idx[0]] * (1.0 + margin) * low_mult, floor), cap)
            target = min(max(ends[idx[1]] * (1.0 + margin), floor), cap)
            upper = min(max(ends[idx[2]] * (1.0 + margin) * up_mult, floor), cap)
            outside = outside or cur < lower or cur > upper
            change += abs(target - cur) / max(cur, 1e-9)
            target32[i, r] = np.float32(target)
            differs = differs or target32[i, r] != np.float32(cur)
        update[i] = differs and (
            new[i] or outside or (age[i] >= lifetime and change >= update_threshold)
        )
    return update, target32
