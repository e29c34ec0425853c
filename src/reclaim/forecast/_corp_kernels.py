"""Numba kernel for CORP's per-series HMM: Baum-Welch, Viterbi and the eq. 17 next symbol.

The reference is hmmlearn's CategoricalHMM (``corp.hmm_next_symbol(..., backend="hmmlearn")``),
which the tests compare this kernel against. Why a kernel: hmmlearn costs about 8 ms per fit of a
3 x 3 model on a few dozen symbols (Python overhead, not arithmetic), and CORP fits one per series
and prediction origin; ``benchmarks/bench_corp_predict.py`` prints both throughputs.

The iteration mirrors hmmlearn 0.3 (``implementation="log"``, priors 1, params "ste"): E-step with
the current parameters, M-step, stop when the log-likelihood gained less than ``tol`` over the
previous iteration or after ``n_iter`` iterations. The E-step uses the scaled forward-backward
recursion instead of log-space sums: the same quantities up to rounding.

Speed (8,000 HMMs on 48 windows of the Google 2019 histories of
``benchmarks/bench_corp_predict.py``, one thread, same load, before -> after: 15.4 -> 8.8 us per
HMM without the log-likelihood shortcut below, 29.6 -> 14.1 us with it on a busier machine; the
same symbols and corrections bit for bit):

- the model is CORP's 3 states x 3 symbols, written out: the forward and backward recursions are
  chains of dependent multiplications, additions and divisions (latency-bound), and with the
  states unrolled and the parameters in registers each step is a few operations deep. Every
  quantity is >= 0, so sums that the general version started from 0.0 start from their first
  term: the same value, one addition less on the chain.
- no allocation per series: every buffer comes from a :func:`workspace` made once per chunk of
  series and passed down borrowed (:func:`reclaim._numba_util.borrow`, no reference counting:
  the two atomics took 10 % of ``predict``'s samples); the history is read by index, not sliced
  (a slice of an owned array is reference-counted too).
- the stopping test reads a log-likelihood summed from a few logs of running products, and the
  exact per-symbol sum only where that one could decide differently (:func:`_gained_less`).
- Viterbi keeps only the scores of the last step: eq. 17 needs the last state of the best path,
  which is the argmax of the final scores, not the back pointers.
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim._numba_util import borrow

#: symbol codes (as ``corp``): the paper's 1, 2, 3 (peak, center, valley) minus one
PEAK, CENTER, VALLEY = 0, 1, 2
#: HMM histories per chunk of :func:`hmm_corrections`: each chunk has its own workspace, so the
#: results do not depend on the number of threads or on which thread ran a chunk.
CHUNK = 64

_jit = numba.njit(cache=True)
_jit_inline = numba.njit(cache=True, inline="always")


@_jit
def workspace(n_obs):
    """Owned buffers of one HMM on at most ``n_obs`` symbols: obs (n_obs,) int64; blocks, value,
    (n_obs,); scale (2, n_obs); alpha, beta (n_obs, 3); pi, start (3,); a, b, trans, emit, lb (3,
    3)."""
    n = max(n_obs, 1)
    return (
        np.empty(n, np.int64),
        np.empty(n),
        np.empty(n),
        np.empty((2, n)),
        np.empty((n, 3)),
        np.empty((n, 3)),
        np.empty(3),
        np.empty(3),
        np.empty((3, 3)),
        np.empty((3, 3)),
        np.empty((3, 3)),
        np.empty((3, 3)),
        np.empty((3, 3)),
    )


@_jit
def _borrowed(ws):
    """:func:`workspace` ``ws`` as borrowed views (:func:`reclaim._numba_util.borrow`)."""
    return (
        borrow(ws[0]),
        borrow(ws[1]),
        borrow(ws[2]),
        borrow(ws[3]),
        borrow(ws[4]),
        borrow(ws[5]),
        borrow(ws[6]),
        borrow(ws[7]),
        borrow(ws[8]),
        borrow(ws[9]),
        borrow(ws[10]),
        borrow(ws[11]),
        borrow(ws[12]),
    )


@_jit
def _estep(obs, t_len, pi, a, b, start, trans, emit, alpha, beta, scale):
    """Scaled forward-backward over ``obs[:t_len]``: writes the sufficient statistics start (3,),
    trans (3, 3), emit (3, 3). alpha, beta (>= T, 3), scale (>= T,): buffers; scale keeps the
    scaling factors, whose logs sum to log P(O) (:func:`_log_likelihood`).

    Returns log P(O) up to rounding, or NaN where a factor is below 1e-100 or NaN: the logs of
    running products of the factors (each <= 1), taken before a product falls below 1e-200, so
    every product is a normal number. Speed: one or two logs per pass instead of one per symbol
    (the logs took 40 % of the kernel's samples, ``perf record``)."""
    a00, a01, a02 = a[0, 0], a[0, 1], a[0, 2]
    a10, a11, a12 = a[1, 0], a[1, 1], a[1, 2]
    a20, a21, a22 = a[2, 0], a[2, 1], a[2, 2]
    ll = 0.0
    o = obs[0]
    v0, v1, v2 = pi[0] * b[0, o], pi[1] * b[1, o], pi[2] * b[2, o]
    s = v0 + v1 + v2
    scale[0] = s
    ok = s >= 1e-100
    q = s
    f0, f1, f2 = v0 / s, v1 / s, v2 / s
    alpha[0, 0], alpha[0, 1], alpha[0, 2] = f0, f1, f2
    for t in range(1, t_len):
        o = obs[t]
        v0 = (f0 * a00 + f1 * a10 + f2 * a20) * b[0, o]
        v1 = (f0 * a01 + f1 * a11 + f2 * a21) * b[1, o]
        v2 = (f0 * a02 + f1 * a12 + f2 * a22) * b[2, o]
        s = v0 + v1 + v2
        scale[t] = s
        ok &= s >= 1e-100
        if q < 1e-200:
            ll += np.log(q)
            q = 1.0
        q *= s
        f0, f1, f2 = v0 / s, v1 / s, v2 / s
        alpha[t, 0], alpha[t, 1], alpha[t, 2] = f0, f1, f2
    g0 = g1 = g2 = 1.0  # beta[t + 1]
    beta[t_len - 1, 0], beta[t_len - 1, 1], beta[t_len - 1, 2] = g0, g1, g2
    t00 = t01 = t02 = t10 = t11 = t12 = t20 = t21 = t22 = 0.0
    for t in range(t_len - 2, -1, -1):
        o = obs[t + 1]
        inv = 1.0 / scale[t + 1]
        c0 = b[0, o] * g0 * inv  # b[j, obs[t + 1]] * beta[t + 1, j] / scale[t + 1]
        c1 = b[1, o] * g1 * inv
        c2 = b[2, o] * g2 * inv
        x0, x1, x2 = alpha[t, 0], alpha[t, 1], alpha[t, 2]
        t00 += x0 * a00 * c0
        t01 += x0 * a01 * c1
        t02 += x0 * a02 * c2
        t10 += x1 * a10 * c0
        t11 += x1 * a11 * c1
        t12 += x1 * a12 * c2
        t20 += x2 * a20 * c0
        t21 += x2 * a21 * c1
        t22 += x2 * a22 * c2
        g0 = a00 * c0 + a01 * c1 + a02 * c2
        g1 = a10 * c0 + a11 * c1 + a12 * c2
        g2 = a20 * c0 + a21 * c1 + a22 * c2
        beta[t, 0], beta[t, 1], beta[t, 2] = g0, g1, g2
    trans[0, 0], trans[0, 1], trans[0, 2] = t00, t01, t02
    trans[1, 0], trans[1, 1], trans[1, 2] = t10, t11, t12
    trans[2, 0], trans[2, 1], trans[2, 2] = t20, t21, t22
    emit[:] = 0.0
    for t in range(t_len):
        o = obs[t]
        for i in range(3):
            emit[i, o] += alpha[t, i] * beta[t, i]
    for i in range(3):
        start[i] = alpha[0, i] * beta[0, i]
    return ll + np.log(q) if ok else np.nan


@_jit
def _log_likelihood(scale, t_len):
    """log P(O) as the reference sums it: the logs of the scaling factors, in order from 0.0."""
    ll = 0.0
    for t in range(t_len):
        ll += np.log(scale[t])
    return ll


@_jit
def _gained_less(ll, prev, tol, t_len, scale, prev_scale):
    """The reference's stopping test ``ll - prev < tol`` on the exact log-likelihoods, from the
    running-product ones of :func:`_estep` (``ll``, ``prev``) where those decide it: each is within
    4 T eps (|log P| + 1) of the exact sum (rounding of T logs, products and additions), far less
    than ``margin``. Otherwise, or for NaN, the exact sums of both iterations' factors decide."""
    margin = (t_len + 1) * 1e-13 * (abs(ll) + abs(prev) + 2.0)
    d = ll - prev
    if abs(d - tol) > margin:
        return d < tol
    exact = _log_likelihood(scale, t_len) - _log_likelihood(prev_scale, t_len)
    return exact < tol


@_jit_inline
def _normalised_rows(src, dst):
    """dst = src with each row divided by its sum, rows summing to 0 copied as they are."""
    for i in range(3):
        s = src[i, 0] + src[i, 1] + src[i, 2]
        for j in range(3):
            dst[i, j] = src[i, j] / s if s > 0 else src[i, j]


@_jit
def _baum_welch(obs, t_len, n_iter, tol, pi, a, b, start, trans, emit, alpha, beta, scale):
    """Re-estimate (pi (3,), A (3, 3), B (3, 3)) in place on ``obs[:t_len]`` int64; returns the
    number of iterations run. The other arrays are buffers (:func:`workspace`); the rows of scale
    (2, >= T) take turns, so the previous iteration's factors are at hand for
    :func:`_gained_less`."""
    prev = -np.inf
    it = 0
    for it in range(1, n_iter + 1):
        ll = _estep(obs, t_len, pi, a, b, start, trans, emit, alpha, beta, scale[it % 2])
        s = start[0] + start[1] + start[2]
        for i in range(3):
            pi[i] = start[i] / s
        _normalised_rows(trans, a)
        _normalised_rows(emit, b)
        if it > 1 and _gained_less(ll, prev, tol, t_len, scale[it % 2], scale[1 - it % 2]):
            break
        prev = ll
    return it


@_jit_inline
def _max_plus(d0, d1, d2, l0, l1, l2):
    """max_i (d_i + l_i), -inf if none is larger (the reference's loop, NaN skipped)."""
    best = -np.inf
    v = d0 + l0
    if v > best:
        best = v
    v = d1 + l1
    if v > best:
        best = v
    v = d2 + l2
    if v > best:
        best = v
    return best


@_jit_inline
def _argmax3(x0, x1, x2):
    """``np.argmax`` of (x0, x1, x2): the first maximum, or the first NaN."""
    if np.isnan(x0):
        return 0
    arg, best = 0, x0
    if np.isnan(x1):
        return 1
    if x1 > best:
        arg, best = 1, x1
    if np.isnan(x2):
        return 2
    if x2 > best:
        arg = 2
    return arg


@_jit
def _last_state(obs, t_len, pi, a, b, lb):
    """q_T*: the last state of the Viterbi path of ``obs[:t_len]`` (log space; ties go to the
    lower state). lb (3, 3): buffer for log B."""
    la00, la01, la02 = np.log(a[0, 0]), np.log(a[0, 1]), np.log(a[0, 2])
    la10, la11, la12 = np.log(a[1, 0]), np.log(a[1, 1]), np.log(a[1, 2])
    la20, la21, la22 = np.log(a[2, 0]), np.log(a[2, 1]), np.log(a[2, 2])
    for i in range(3):
        for m in range(3):
            lb[i, m] = np.log(b[i, m])
    o = obs[0]
    d0 = np.log(pi[0]) + lb[0, o]
    d1 = np.log(pi[1]) + lb[1, o]
    d2 = np.log(pi[2]) + lb[2, o]
    for t in range(1, t_len):
        o = obs[t]
        n0 = _max_plus(d0, d1, d2, la00, la10, la20) + lb[0, o]
        n1 = _max_plus(d0, d1, d2, la01, la11, la21) + lb[1, o]
        n2 = _max_plus(d0, d1, d2, la02, la12, la22) + lb[2, o]
        d0, d1, d2 = n0, n1, n2
    return _argmax3(d0, d1, d2)


@_jit_inline
def _next_probs(q, a, b):
    """Eq. 17: E_P(m) = sum_j A[q, j] B[j, m], as three scalars."""
    p0 = a[q, 0] * b[0, 0] + a[q, 1] * b[1, 0] + a[q, 2] * b[2, 0]
    p1 = a[q, 0] * b[0, 1] + a[q, 1] * b[1, 1] + a[q, 2] * b[2, 1]
    p2 = a[q, 0] * b[0, 2] + a[q, 1] * b[1, 2] + a[q, 2] * b[2, 2]
    return p0, p1, p2


@_jit
def next_symbol_probs(obs, pi, a, b, n_iter, tol):
    """Baum-Welch from (pi (3,), A (3, 3), B (3, 3)) on ``obs`` (T,) int64, Viterbi, then eq. 17:
    (q_T* int, E_P (3,), A, B) with the re-estimated A and B (copies)."""
    t_len = len(obs)
    obs_, _, _, scale, alpha, beta, pi_, start, a_, b_, trans, emit, lb = workspace(t_len)
    obs_[:t_len] = obs
    pi_[:] = pi
    a_[:] = a
    b_[:] = b
    _baum_welch(obs_, t_len, n_iter, tol, pi_, a_, b_, start, trans, emit, alpha, beta, scale)
    q = _last_state(obs_, t_len, pi_, a_, b_, lb)
    return q, np.array(_next_probs(q, a_, b_)), a_, b_


@_jit
def _hmm_task(unused, end, n_obs, big_l, statistic, extremes, n_iter, tol, pseudocount, ws):
    """Symbol and signed correction for the history ``unused[end - n_obs * big_l : end]`` of
    unused amounts (whole L-slot windows, finite): :func:`reclaim.forecast.corp.symbols`,
    ``counted_hmm``, ``hmm_next_symbol`` and ``correction`` in one compiled pass. Returns (CENTER,
    0.0) for a flat history. ws: :func:`workspace` borrowed (:func:`_borrowed`).

    The reference's min, max and mean (numpy's: first element then strict comparisons; a
    left-to-right sum from 0.0) of the slots and of each window come from one pass."""
    obs, blocks, value, scale, alpha, beta, pi, start, a, b, trans, emit, lb = ws
    beg = end - n_obs * big_l
    lo_v = hi_v = unused[beg]
    total = 0.0
    for j in range(n_obs):
        first = beg + j * big_l
        block_lo = block_hi = unused[first]
        acc = 0.0
        for i in range(first, first + big_l):
            x = unused[i]
            acc += x
            total += x
            if x < block_lo:
                block_lo = x
            if x > block_hi:
                block_hi = x
            if x < lo_v:
                lo_v = x
            if x > hi_v:
                hi_v = x
        blocks[j] = acc / big_l
        value[j] = blocks[j] if statistic == 0 else block_hi - block_lo
    if hi_v - lo_v == 0.0:
        return CENTER, 0.0
    mean = total / (n_obs * big_l)
    if extremes == 1:  # thresholds and correction over the window means
        lo_v = hi_v = blocks[0]
        total = 0.0
        for j in range(n_obs):
            x = blocks[j]
            total += x
            if x < lo_v:
                lo_v = x
            if x > hi_v:
                hi_v = x
        mean = total / n_obs
    lo = lo_v + 0.5 * (mean - lo_v)
    hi = mean + 0.5 * (hi_v - mean)
    for j in range(n_obs):
        obs[j] = CENTER
        if hi_v > lo_v:
            if value[j] <= lo:
                obs[j] = VALLEY
            if value[j] >= hi:
                obs[j] = PEAK
    # counted_hmm: states are labelled by their symbol
    pi[:] = pseudocount
    a[:] = pseudocount
    b[:] = pseudocount
    pi[obs[0]] += 1.0
    for j in range(n_obs - 1):
        a[obs[j], obs[j + 1]] += 1.0
    for j in range(n_obs):
        b[obs[j], obs[j]] += 1.0
    s = pi[0] + pi[1] + pi[2]
    for i in range(3):
        pi[i] /= s
    _normalised_rows(a, a)
    _normalised_rows(b, b)
    _baum_welch(obs, n_obs, n_iter, tol, pi, a, b, start, trans, emit, alpha, beta, scale)
    p0, p1, p2 = _next_probs(_last_state(obs, n_obs, pi, a, b, lb), a, b)
    top = _argmax3(p0, p1, p2)
    nxt = CENTER if p1 >= (p0, p1, p2)[top] else top  # a tie with center goes to center
    if nxt == CENTER:
        return nxt, 0.0
    size = min(hi_v - mean, mean - lo_v)
    return nxt, size if nxt == PEAK else -size


@_jit
def _corrections_chunk(unused, starts, ends, lo, hi, settings, sym, corr):
    """:func:`hmm_corrections` for tasks ``lo:hi`` with one workspace, passed down borrowed: the
    owner stays referenced until the loop is done. ``settings``: big_l, hmm_history, min_symbols,
    statistic, extremes, n_iter, tol."""
    big_l, hmm_history, min_symbols, statistic, extremes, n_iter, tol = settings
    owned = workspace(hmm_history)
    ws = _borrowed(owned)
    u = borrow(unused)
    for k in range(lo, hi):
        n_obs = min(hmm_history, (ends[k] - starts[k]) // big_l)
        if n_obs < max(min_symbols, 1):
            continue
        sym[k], corr[k] = _hmm_task(
            u, ends[k], n_obs, big_l, statistic, extremes, n_iter, tol, 1.0, ws
        )
    # the last use of the owner: numba frees an array after its last use, and the views must not
    # outlive it
    return owned[0].size


@_jit
def hmm_corrections(
    unused, starts, ends, big_l, hmm_history, min_symbols, statistic, extremes, n_iter, tol
):
    """Batched HMM step of CORP's predictor: per task k, the history ``unused[starts[k]:ends[k]]``
    (unused amounts, fractions of the request; contiguous float64, finite) is cut to its last
    ``hmm_history`` whole windows of ``big_l`` slots; returns (symbols (K,) int8, corrections (K,)
    float64). Histories shorter than ``min_symbols`` windows, or flat, give CENTER and 0 (as the
    per-series Python path).

    Serial on purpose: ``numba.prange`` over the chunks ran 14.5 us per HMM against 8.8 serial on
    the shared 2-core machine, and 36x slower on 359 short histories (thread wake-ups).
    """
    k_tasks = len(starts)
    sym = np.full(k_tasks, CENTER, np.int8)
    corr = np.zeros(k_tasks)
    settings = (big_l, hmm_history, min_symbols, statistic, extremes, n_iter, tol)
    for c in range((k_tasks + CHUNK - 1) // CHUNK):
        lo = c * CHUNK
        _corrections_chunk(unused, starts, ends, lo, min(k_tasks, lo + CHUNK), settings, sym, corr)
    return sym, corr
