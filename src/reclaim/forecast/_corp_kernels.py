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
def _estep(obs, pi, a, b, start, trans, emit):
    """Scaled forward-backward; adds the sufficient statistics in place, returns log P(O)."""
    t_len = len(obs)
    k = len(pi)
    alpha = np.empty((t_len, k))
    beta = np.empty((t_len, k))
    scale = np.empty(t_len)
    for i in range(k):
        alpha[0, i] = pi[i] * b[i, obs[0]]
    scale[0] = alpha[0].sum()
    alpha[0] /= scale[0]
    for t in range(1, t_len):
        for j in range(k):
            acc = 0.0
            for i in range(k):
                acc += alpha[t - 1, i] * a[i, j]
            alpha[t, j] = acc * b[j, obs[t]]
        scale[t] = alpha[t].sum()
        alpha[t] /= scale[t]
    beta[t_len - 1] = 1.0
    for t in range(t_len - 2, -1, -1):
        for i in range(k):
            acc = 0.0
            for j in range(k):
                acc += a[i, j] * b[j, obs[t + 1]] * beta[t + 1, j]
            beta[t, i] = acc / scale[t + 1]
    for t in range(t_len):
        for i in range(k):
            g = alpha[t, i] * beta[t, i]
            emit[i, obs[t]] += g
            if t == 0:
                start[i] += g
    for t in range(t_len - 1):
        for i in range(k):
            for j in range(k):
                trans[i, j] += (
                    alpha[t, i] * a[i, j] * b[j, obs[t + 1]] * beta[t + 1, j] / scale[t + 1]
                )
    return np.log(scale).sum()


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
    pi = pi.copy()
    a = a.copy()
    b = b.copy()
    prev = -np.inf
    it = 0
    for it in range(1, n_iter + 1):
        start = np.zeros_like(pi)
        trans = np.zeros_like(a)
        emit = np.zeros_like(b)
        ll = _estep(obs, pi, a, b, start, trans, emit)
        pi = start / start.sum()
        a = trans
        _normalise_rows(a)
        b = emit
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
