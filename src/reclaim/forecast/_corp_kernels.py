"""Numba kernel for CORP's per-series HMM: Baum-Welch, Viterbi and the eq. 17 next symbol.

The reference is hmmlearn's CategoricalHMM (``corp.hmm_next_symbol(..., backend="hmmlearn")``),
which the tests compare this kernel against. Why a kernel: hmmlearn costs about 8 ms per fit of a
3 x 3 model on a few dozen symbols (Python overhead, not arithmetic), and CORP fits one per series
and prediction origin; ``benchmarks/bench_corp_predict.py`` prints both throughputs.

The iteration mirrors hmmlearn 0.3 (``implementation="log"``, priors 1, params "ste"): E-step with
the current parameters, M-step, stop when the log-likelihood gained less than ``tol`` over the
previous iteration or after ``n_iter`` iterations. The E-step uses the scaled forward-backward
recursion instead of log-space sums: the same quantities up to rounding.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _estep(obs, pi, a, b, start, trans, emit, alpha, beta, scale):
    """Scaled forward-backward; adds the sufficient statistics in place, returns log P(O).

    alpha, beta (>= T, K) and scale (>= T,) are work buffers (reused across iterations and
    series: no allocation per call). Speed: ``beta`` first holds ``b[:, obs[t]] * beta[t]``
    products only where needed; the emission column of each slot is read once per pass.
    """
    t_len = len(obs)
    k = len(pi)
    s0 = 0.0
    o0 = obs[0]
    for i in range(k):
        alpha[0, i] = pi[i] * b[i, o0]
        s0 += alpha[0, i]
    scale[0] = s0
    for i in range(k):
        alpha[0, i] /= s0
    for t in range(1, t_len):
        ot = obs[t]
        st = 0.0
        for j in range(k):
            acc = 0.0
            for i in range(k):
                acc += alpha[t - 1, i] * a[i, j]
            v = acc * b[j, ot]
            alpha[t, j] = v
            st += v
        scale[t] = st
        for j in range(k):
            alpha[t, j] /= st
    for i in range(k):
        beta[t_len - 1, i] = 1.0
    bb = np.empty(k)  # b[j, obs[t + 1]] * beta[t + 1, j] / scale[t + 1]
    for t in range(t_len - 2, -1, -1):
        o1 = obs[t + 1]
        inv = 1.0 / scale[t + 1]
        for j in range(k):
            bb[j] = b[j, o1] * beta[t + 1, j] * inv
        for i in range(k):
            acc = 0.0
            ati = alpha[t, i]
            for j in range(k):
                acc += a[i, j] * bb[j]
                trans[i, j] += ati * a[i, j] * bb[j]
            beta[t, i] = acc
    for t in range(t_len):
        ot = obs[t]
        for i in range(k):
            emit[i, ot] += alpha[t, i] * beta[t, i]
    for i in range(k):
        start[i] += alpha[0, i] * beta[0, i]
    ll = 0.0
    for t in range(t_len):
        ll += np.log(scale[t])
    return ll


@numba.njit(cache=True)
def _normalise_rows(m):
    for i in range(m.shape[0]):
        s = m[i].sum()
        if s > 0:
            m[i] /= s


@numba.njit(cache=True)
def baum_welch(obs, pi, a, b, n_iter, tol):
    """Re-estimate (pi (K,), A (K,K), B (K,M)) on ``obs`` (T,) int64; returns copies and the
    number of iterations run."""
    t_len, k = len(obs), len(pi)
    return _baum_welch(
        obs, pi, a, b, n_iter, tol, np.empty((t_len, k)), np.empty((t_len, k)), np.empty(t_len)
    )


@numba.njit(cache=True)
def _baum_welch(obs, pi, a, b, n_iter, tol, alpha, beta, scale):
    """:func:`baum_welch` with caller-owned work buffers."""
    pi = pi.copy()
    a = a.copy()
    b = b.copy()
    start = np.empty_like(pi)
    trans = np.empty_like(a)
    emit = np.empty_like(b)
    prev = -np.inf
    it = 0
    for it in range(1, n_iter + 1):
        start[:] = 0.0
        trans[:] = 0.0
        emit[:] = 0.0
        ll = _estep(obs, pi, a, b, start, trans, emit, alpha, beta, scale)
        pi[:] = start / start.sum()
        a[:] = trans
        _normalise_rows(a)
        b[:] = emit
        _normalise_rows(b)
        if it > 1 and ll - prev < tol:
            break
        prev = ll
    return pi, a, b, it


@numba.njit(cache=True)
def viterbi(obs, pi, a, b):
    """Most likely state path (T,) int64 (log space; ties go to the lower state)."""
    t_len = len(obs)
    k = len(pi)
    la = np.log(a)
    lb = np.log(b)
    delta = np.log(pi) + lb[:, obs[0]]
    back = np.zeros((t_len, k), np.int64)
    for t in range(1, t_len):
        new = np.empty(k)
        for j in range(k):
            best, arg = -np.inf, 0
            for i in range(k):
                v = delta[i] + la[i, j]
                if v > best:
                    best, arg = v, i
            new[j] = best + lb[j, obs[t]]
            back[t, j] = arg
        delta = new
    path = np.empty(t_len, np.int64)
    path[-1] = np.argmax(delta)
    for t in range(t_len - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path


@numba.njit(cache=True)
def next_symbol_probs(obs, pi, a, b, n_iter, tol):
    """Baum-Welch, Viterbi, then eq. 17: (q_T* int, E_P (M,), A, B)."""
    pi, a, b, _ = baum_welch(obs, pi, a, b, n_iter, tol)
    q_t = viterbi(obs, pi, a, b)[-1]
    return q_t, a[q_t] @ b, a, b


@numba.njit(cache=True)
def _next_symbol_buffered(obs, pi, a, b, n_iter, tol, alpha, beta, scale):
    """:func:`next_symbol_probs` with caller-owned work buffers: (q_T*, E_P (M,))."""
    pi, a, b, _ = _baum_welch(obs, pi, a, b, n_iter, tol, alpha, beta, scale)
    q_t = viterbi(obs, pi, a, b)[-1]
    p = np.zeros(b.shape[1])
    for j in range(a.shape[0]):
        for m in range(b.shape[1]):
            p[m] += a[q_t, j] * b[j, m]
    return q_t, p


@numba.njit(cache=True)
def _hmm_task(hist, big_l, statistic, extremes, n_iter, tol, pseudocount, alpha, beta, scale):
    """Symbol and signed correction for one history of unused amounts (whole L-slot windows,
    not flat): :func:`reclaim.forecast.corp.symbols`, ``counted_hmm``, ``hmm_next_symbol`` and
    ``correction`` in one compiled pass."""
    n = len(hist)
    n_obs = n // big_l
    value = np.empty(n_obs)
    blocks = np.empty(n_obs)
    for j in range(n_obs):
        block = hist[j * big_l : (j + 1) * big_l]
        blocks[j] = block.mean()
        if statistic == 0:
            value[j] = blocks[j]
        else:
            value[j] = block.max() - block.min()
    if extremes == 1:  # thresholds and correction over the window means
        lo_v, hi_v, mean = blocks.min(), blocks.max(), blocks.mean()
    else:
        lo_v, hi_v, mean = hist.min(), hist.max(), hist.mean()
    lo = lo_v + 0.5 * (mean - lo_v)
    hi = mean + 0.5 * (hi_v - mean)
    sym = np.full(n_obs, 1, np.int64)  # CENTER
    if hi_v > lo_v:
        for j in range(n_obs):
            if value[j] <= lo:
                sym[j] = 2  # VALLEY
            if value[j] >= hi:
                sym[j] = 0  # PEAK
    # counted_hmm: states are labelled by their symbol
    pi = np.full(3, pseudocount)
    a = np.full((3, 3), pseudocount)
    b = np.full((3, 3), pseudocount)
    pi[sym[0]] += 1.0
    for j in range(n_obs - 1):
        a[sym[j], sym[j + 1]] += 1.0
    for j in range(n_obs):
        b[sym[j], sym[j]] += 1.0
    pi /= pi.sum()
    _normalise_rows(a)
    _normalise_rows(b)
    _, p = _next_symbol_buffered(sym, pi, a, b, n_iter, tol, alpha, beta, scale)
    nxt = 1 if p[1] >= p.max() else int(np.argmax(p))  # a tie with center goes to center
    if nxt == 1:
        return nxt, 0.0
    size = min(hi_v - mean, mean - lo_v)
    return nxt, size if nxt == 0 else -size


@numba.njit(cache=True)
def hmm_corrections(
    unused, starts, ends, big_l, hmm_history, min_symbols, statistic, extremes, n_iter, tol
):
    """Batched HMM step of CORP's predictor: per task k, the history ``unused[starts[k]:ends[k]]``
    (unused amounts, fractions of the request) is cut to its last ``hmm_history`` whole windows
    of ``big_l`` slots; returns (symbols (K,) int8, corrections (K,) float64). Histories shorter
    than ``min_symbols`` windows, or flat, give CENTER and 0 (as the per-series Python path).

    Serial on purpose: a ``prange`` version ran 40 ms per call on 359 short histories on a
    shared 2-core machine (thread wake-ups), against about 1 ms serial.
    """
    k_tasks = len(starts)
    sym = np.full(k_tasks, 1, np.int8)
    corr = np.zeros(k_tasks)
    n_chunks = min(k_tasks, 64)
    for c in range(n_chunks):
        lo = c * k_tasks // n_chunks
        hi = (c + 1) * k_tasks // n_chunks
        alpha = np.empty((hmm_history, 3))
        beta = np.empty((hmm_history, 3))
        scale = np.empty(hmm_history)
        for k in range(lo, hi):
            end = ends[k]
            beg = max(starts[k], end - hmm_history * big_l)
            n = end - beg
            n -= n % big_l
            beg = end - n
            if n < max(min_symbols, 1) * big_l or n == 0:
                continue
            hist = unused[beg:end]
            if hist.max() - hist.min() == 0.0:
                continue
            s, v = _hmm_task(hist, big_l, statistic, extremes, n_iter, tol, 1.0, alpha, beta, scale)
            sym[k] = s
            corr[k] = v
    return sym, corr
