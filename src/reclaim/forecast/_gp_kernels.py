"""Compiled kernels of the ``gp`` forecaster, each beside a plain-numpy reference the tests compare.

The kernels never build the pattern matrix. They work on each series' standardised window,
right-aligned in W = h + N slots: Z: (S, W) float64, count: (S,) int64 the number of real
patterns (a series of w observations fills the last w slots and has count = min(w - h, N)).
Pattern slot j = 0..N-1 is x_j = [(j - N) * dt, Z[j], ..., Z[j+h-1]] with target Z[j+h]; series s
uses slots ``N - count[s] .. N - 1``. A series with ``count < 2`` is skipped (outputs NaN), which is
also how a caller leaves series out of one call without copying arrays. :func:`patterns_reference`
materialises the patterns for the references and for checks against other GP codes.

The covariance is K = s2 * (C_l + r I) with C_l the exponential (Matern 1/2) correlation
exp(-||x - x'|| / l) or the squared exponential exp(-||x - x'||^2 / (2 l^2)), r the noise ratio
(noise variance sigma^2 = r * s2). For fixed (l, r) the evidence is maximised over s2 in closed
form, s2 = z^T (C_l + r I)^{-1} z / n, so a search only walks the (log l, log r) plane.
"""

from __future__ import annotations

import math

import numba
import numpy as np

LOG_2PI = math.log(2.0 * math.pi)
# floor of the profiled signal variance (standardised units): a constant window has z = 0 and
# would otherwise give log(0) in the evidence
S2_MIN = 1e-12
# a point must beat the best so far by this much (nats) to replace it: where the evidence is flat
# (l far below every distance makes C = I, and r then changes nothing), rounding noise would
# otherwise pick the point
TIE = 1e-9
# series per parallel chunk: work buffers are allocated once per chunk, not once per series
CHUNK = 64


# --------------------------------------------------------------------------- compiled


@numba.njit(cache=True, error_model="numpy")
def standardise(data, indptr, width):
    """Each series' last ``width`` observations, standardised and right-aligned.

    data: (T,) float64, indptr: (S+1,). Returns Z (S, width) (empty slots 0), length (S,) int64
    (observations used), loc (S,) the mean and scale (S,) the standard deviation of the window
    (1 where the window is constant to 1e-12 relative), both in the series' units.
    """
    S = len(indptr) - 1
    Z = np.zeros((S, width))
    length = np.empty(S, np.int64)
    loc = np.empty(S)
    scale = np.empty(S)
    for s in range(S):
        end = indptr[s + 1]
        begin = max(indptr[s], end - width)
        m = end - begin
        length[s] = m
        if m == 0:
            loc[s], scale[s] = 0.0, 1.0
            continue
        mean = 0.0
        for i in range(begin, end):
            mean += data[i]
        mean /= m
        ss = 0.0
        for i in range(begin, end):
            ss += (data[i] - mean) ** 2
        sd = math.sqrt(ss / m)
        sc = sd if sd > 1e-12 * max(1.0, abs(mean)) else 1.0
        loc[s], scale[s] = mean, sc
        for i in range(m):
            Z[s, width - m + i] = (data[begin + i] - mean) / sc
    return Z, length, loc, scale


@numba.njit(cache=True, error_model="numpy")
def _pair_terms(Z, s, start, n, h, dt, exp_kernel, E):
    """E[a, b] = ||x_a - x_b|| (exp) or ||x_a - x_b||^2 / 2 (rbf) for slots start + a, start + b;
    the correlation at length scale l is then exp(-E / l) or exp(-E / l^2). Lower triangle."""
    for a in range(n):
        E[a, a] = 0.0
        ja = start + a
        for b in range(a):
            jb = start + b
            acc = ((a - b) * dt) ** 2
            for k in range(h):
                diff = Z[s, ja + k] - Z[s, jb + k]
                acc += diff * diff
            E[a, b] = math.sqrt(acc) if exp_kernel else 0.5 * acc


@numba.njit(cache=True, error_model="numpy")
def _correlation(E, n, coef, C):
    for a in range(n):
        C[a, a] = 1.0
        for b in range(a):
            C[a, b] = math.exp(-E[a, b] * coef)


@numba.njit(cache=True, error_model="numpy")
def _factor(C, zz, n, r, L, dinv, v):
    """Cholesky factor L of C + r I (lower triangle of C read), row by row, and v = L^{-1} zz
    alongside while each row is hot. dinv: (n,) scratch, 1 / L[i, i].

    Returns (log det(C + r I), zz^T (C + r I)^{-1} zz), or NaNs when the matrix is not numerically
    positive definite.
    """
    logdet = 0.0
    prod = 1.0
    q = 0.0
    for i in range(n):
        for j in range(i):
            acc = C[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc * dinv[j]
        acc = C[i, i] + r
        t = zz[i]
        for k in range(i):
            acc -= L[i, k] * L[i, k]
            t -= L[i, k] * v[k]
        if not acc > 0.0:
            return math.nan, math.nan
        # one log per matrix instead of one per pivot, flushed before the product can underflow
        prod *= acc
        if prod < 1e-200 or prod > 1e200:
            logdet += math.log(prod)
            prod = 1.0
        piv = math.sqrt(acc)
        L[i, i] = piv
        dinv[i] = 1.0 / piv
        v[i] = t * dinv[i]
        q += v[i] * v[i]
    return logdet + math.log(prod), q


@numba.njit(cache=True, error_model="numpy")
def _profiled_many(Cs, which, zz, n, rs, m, lml, s2, L, dinv, v, logdet, q, prod, bad):
    """:func:`_profiled` of ``m`` matrices at once: ``Cs[which[k]] + rs[k] I`` for k < m, into
    ``lml`` and ``s2`` (m,); ``L`` (m, N, N), ``dinv``, ``v`` (m, N) and the rest (m,) scratch.

    Speed trick: a 10 x 10 Cholesky factorisation is one long chain of dependent subtractions,
    which keeps the processor waiting on each; a search evaluates several points at a time (the
    grid's noise ratios, a compass round's four moves), so their factorisations are interleaved,
    each still doing :func:`_factor`'s arithmetic in its order: the same bits, in about 60 % of
    the time (benchmarks/bench_shaping.py). A matrix that is not positive definite goes on with
    NaNs and is reported as :func:`_profiled` reports it."""
    for k in range(m):
        logdet[k], prod[k], q[k], bad[k] = 0.0, 1.0, 0.0, False
    for i in range(n):
        for j in range(i):
            for k in range(m):
                acc = Cs[which[k], i, j]
                for p in range(j):
                    acc -= L[k, i, p] * L[k, j, p]
                L[k, i, j] = acc * dinv[k, j]
        for k in range(m):
            acc = Cs[which[k], i, i] + rs[k]
            t = zz[i]
            for p in range(i):
                acc -= L[k, i, p] * L[k, i, p]
                t -= L[k, i, p] * v[k, p]
            bad[k] |= not acc > 0.0
            prod[k] *= acc
            piv = math.sqrt(acc)
            L[k, i, i] = piv
            dinv[k, i] = 1.0 / piv
            v[k, i] = t * dinv[k, i]
            q[k] += v[k, i] * v[k, i]
        for k in range(m):
            # one log per matrix instead of one per pivot, flushed before the product can underflow
            if prod[k] < 1e-200 or prod[k] > 1e200:
                logdet[k] += math.log(prod[k])
                prod[k] = 1.0
    for k in range(m):
        if bad[k]:
            lml[k], s2[k] = -math.inf, math.nan
            continue
        det = logdet[k] + math.log(prod[k])
        s2[k] = max(q[k] / n, S2_MIN)
        lml[k] = -0.5 * (q[k] / s2[k] + n * math.log(s2[k]) + det + n * LOG_2PI)


@numba.njit(cache=True, error_model="numpy")
def _forward(L, n, b, out):
    """out = L^{-1} b; returns out . out."""
    q = 0.0
    for i in range(n):
        acc = b[i]
        for k in range(i):
            acc -= L[i, k] * out[k]
        out[i] = acc / L[i, i]
        q += out[i] * out[i]
    return q


@numba.njit(cache=True, error_model="numpy")
def _back(L, n, v, out):
    """out = L^{-T} v."""
    for i in range(n - 1, -1, -1):
        acc = v[i]
        for k in range(i + 1, n):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]


@numba.njit(cache=True, error_model="numpy")
def _profiled(C, zz, n, r, L, dinv, v):
    """(log evidence, s2) at correlation C and noise ratio r, s2 maximised in closed form."""
    logdet, q = _factor(C, zz, n, r, L, dinv, v)
    if math.isnan(logdet):
        return -math.inf, math.nan
    s2 = max(q / n, S2_MIN)
    return -0.5 * (q / s2 + n * math.log(s2) + logdet + n * LOG_2PI), s2


@numba.njit(cache=True, error_model="numpy")
def _coef(log_length, exp_kernel):
    """Multiplier of E in the correlation exponent: 1 / l (exp) or 1 / l^2 (rbf)."""
    return math.exp(-log_length) if exp_kernel else math.exp(-2.0 * log_length)


@numba.njit(cache=True, error_model="numpy")
def _power(src, n, times, dst):
    """dst = src ** (2 ** times) entrywise (lower triangle, unit diagonal): the correlation at
    length scale l * 2 ** (-times) (exp) or l * 2 ** (-times / 2) (rbf), by squarings or square
    roots instead of exponentials, which cost several times more."""
    for a in range(n):
        dst[a, a] = 1.0
        for b in range(a):
            x = src[a, b]
            if times > 0:
                if x < 1e-40:  # its powers are negligible next to 1; squaring would go subnormal
                    x = 0.0
                for _ in range(times):
                    x *= x
            else:
                for _ in range(-times):
                    x = math.sqrt(x)
            dst[a, b] = x


@numba.njit(cache=True, error_model="numpy")
def _copy(src, n, dst):
    for a in range(n):
        for b in range(a + 1):
            dst[a, b] = src[a, b]


@numba.njit(cache=True, parallel=True, error_model="numpy")
def search(Z, count, h, dt, exp_kernel, top, levels, log_r, rounds, L, alpha):
    """Evidence maximisation per series over the (log l, log r) box; writes the factor at the
    optimum.

    Box: l in [exp(top) / 4 ** (levels - 1), exp(top)], log r in [log_r[0], log_r[-1]]. First the
    grid of l = exp(top) / 4 ** i (i < levels) by the evenly spaced log_r (G,), then ``rounds`` of
    compass search: from the best point so far, one step down and up in log l, then in log r (in
    the box), each round at half the previous step (first: ln 2 in log l, half the grid step in
    log r). A point replaces the best only when better by more than ``TIE``, so it is
    deterministic.

    Returns l, r, s2, log evidence (S,); fills L[s, :n, :n] (Cholesky factor of C + r I) and
    alpha[s, :n] ((C + r I)^{-1} z) of every searched series.
    """
    S, W = Z.shape
    N = W - h
    out_l = np.full(S, np.nan)
    out_r = np.full(S, np.nan)
    out_s2 = np.full(S, np.nan)
    out_lml = np.full(S, np.nan)
    octave = 1 if exp_kernel else 2  # squarings that halve l
    ln2 = math.log(2.0)
    eps = 1e-9
    lo_l, hi_l = top - 2.0 * ln2 * (levels - 1), top
    lo_r, hi_r = log_r[0], log_r[-1]
    step_r = (hi_r - lo_r) / (len(log_r) - 1) if len(log_r) > 1 else 0.0
    G = len(log_r)
    m_most = max(G, 4)
    for chunk in numba.prange((S + CHUNK - 1) // CHUNK):
        E = np.empty((N, N))
        # correlations: 0 the current l (a grid level; a compass round's step down), 1 a round's
        # step up, 2 the best l so far (the centre)
        Cs = np.empty((3, N, N))
        dinv = np.empty(N)
        v = np.empty(N)
        # _profiled_many's points and scratch
        which = np.zeros(m_most, np.int64)
        rs = np.empty(m_most)
        lmls, s2s = np.empty(m_most), np.empty(m_most)
        Fs = np.empty((m_most, N, N))
        dinvs, vs = np.empty((m_most, N)), np.empty((m_most, N))
        logdet, q, prod = np.empty(m_most), np.empty(m_most), np.empty(m_most)
        bad = np.empty(m_most, np.bool_)
        for s in range(chunk * CHUNK, min(S, (chunk + 1) * CHUNK)):
            n = count[s]
            if n < 2:
                continue
            start = N - n
            zz = Z[s, start + h :]
            col, up_col, centre = Cs[0], Cs[1], Cs[2]
            _pair_terms(Z, s, start, n, h, dt, exp_kernel, E)
            best, best_a, best_b, best_s2 = -math.inf, hi_l, lo_r, math.nan
            _correlation(E, n, _coef(top, exp_kernel), col)
            which[:G] = 0
            for k in range(G):
                rs[k] = math.exp(log_r[k])
            for i in range(levels):
                if i > 0:  # l / 4: two octaves
                    _power(col, n, 2 * octave, col)
                _profiled_many(
                    Cs, which, zz, n, rs, G, lmls, s2s, Fs, dinvs, vs, logdet, q, prod, bad
                )
                found = False
                for j in range(G):  # in the grid's order, as one at a time
                    if lmls[j] > best + TIE:
                        best, best_a, best_b = lmls[j], top - 2.0 * ln2 * i, log_r[j]
                        best_s2 = s2s[j]
                        found = True
                if found:
                    _copy(col, n, centre)
            da, db = 2.0 * ln2, step_r
            for _ in range(rounds):
                da *= 0.5
                db *= 0.5
                ca, cb = best_a, best_b
                # the round's four moves do not depend on each other's outcome: evaluated
                # together, then taken in order (down, up in l; down, up in r) as one at a time
                octaves = da / ln2
                whole = math.floor(octaves + 0.5)
                for u in (-1, 1):  # along l: the correlation changes
                    dst = col if u < 0 else up_col
                    if abs(octaves - whole) < eps:  # whole octaves: no exponentials
                        _power(centre, n, -u * octave * int(whole), dst)
                    else:
                        _correlation(E, n, _coef(ca + u * da, exp_kernel), dst)
                b_down, b_up = cb + (-1) * db, cb + 1 * db
                which[0], which[1], which[2], which[3] = 0, 1, 2, 2
                rs[0], rs[1] = math.exp(cb), math.exp(cb)
                rs[2], rs[3] = math.exp(b_down), math.exp(b_up)
                _profiled_many(
                    Cs, which, zz, n, rs, 4, lmls, s2s, Fs, dinvs, vs, logdet, q, prod, bad
                )
                moved = -1
                for k in range(2):
                    a = ca + (2 * k - 1) * da
                    if a < lo_l - eps or a > hi_l + eps:
                        continue
                    if lmls[k] > best + TIE:
                        best, best_a, best_b, best_s2 = lmls[k], a, cb, s2s[k]
                        moved = k
                for k in range(2, 4):  # along r, at the centre's l
                    b = b_down if k == 2 else b_up
                    if b < lo_r - eps or b > hi_r + eps:
                        continue
                    if lmls[k] > best + TIE:
                        best, best_a, best_b, best_s2 = lmls[k], ca, b, s2s[k]
                        moved = -1
                if moved >= 0:
                    _copy(Cs[moved], n, centre)
            if best == -math.inf:
                continue  # no point of the box gave a positive definite matrix
            out_l[s] = math.exp(best_a)
            out_r[s] = math.exp(best_b)
            out_s2[s] = best_s2
            out_lml[s] = best
            _factor(centre, zz, n, out_r[s], L[s], dinv, v)
            _back(L[s], n, v, alpha[s])
    return out_l, out_r, out_s2, out_lml


@numba.njit(cache=True, parallel=True, error_model="numpy")
def factor(Z, count, h, dt, exp_kernel, length, ratio, L, alpha):
    """Profiled s2 and log evidence at given l, r (S,) per series; fills L[s, :n, :n] and
    alpha[s, :n] like :func:`search`. Returns s2, lml (S,)."""
    S, W = Z.shape
    N = W - h
    out_s2 = np.full(S, np.nan)
    out_lml = np.full(S, np.nan)
    for chunk in numba.prange((S + CHUNK - 1) // CHUNK):
        C = np.empty((N, N))
        dinv = np.empty(N)
        v = np.empty(N)
        for s in range(chunk * CHUNK, min(S, (chunk + 1) * CHUNK)):
            n = count[s]
            if n < 2:
                continue
            start = N - n
            _pair_terms(Z, s, start, n, h, dt, exp_kernel, C)
            _correlation(C, n, _coef(math.log(length[s]), exp_kernel), C)  # in place
            lml, s2 = _profiled(C, Z[s, start + h :], n, ratio[s], L[s], dinv, v)
            out_lml[s], out_s2[s] = lml, s2
            if not math.isnan(s2):
                _back(L[s], n, v, alpha[s])
    return out_s2, out_lml


@numba.njit(cache=True, parallel=True, error_model="numpy")
def posterior(Z, count, h, dt, exp_kernel, length, ratio, s2, L, alpha, steps):
    """Predictive mean and variance of an observation, iterated ``steps`` ahead, from the factor
    L, alpha that :func:`search` or :func:`factor` wrote.

    Step k (0-based) queries [k * dt, the h values before it], the means of earlier steps fed back
    as history; the training set stays the observed patterns. Variance
    s2 * (max(1 - c^T (C + r I)^{-1} c, 0) + r). Returns mean, var (S, steps), standardised.
    """
    S, W = Z.shape
    N = W - h
    mean = np.full((S, steps), np.nan)
    var = np.full((S, steps), np.nan)
    for chunk in numba.prange((S + CHUNK - 1) // CHUNK):
        c = np.empty(N)
        w = np.empty(N)
        ext = np.empty(W + steps)  # the window, then the predicted means
        for s in range(chunk * CHUNK, min(S, (chunk + 1) * CHUNK)):
            n = count[s]
            if n < 2 or math.isnan(s2[s]):
                continue
            start = N - n
            coef = _coef(math.log(length[s]), exp_kernel)
            for i in range(W):
                ext[i] = Z[s, i]
            for step in range(steps):
                m = 0.0
                for a in range(n):
                    j = start + a
                    acc = ((step + N - j) * dt) ** 2
                    for k in range(h):
                        diff = ext[N + step + k] - ext[j + k]
                        acc += diff * diff
                    e = math.sqrt(acc) if exp_kernel else 0.5 * acc
                    c[a] = math.exp(-e * coef)
                    m += c[a] * alpha[s, a]
                explained = _forward(L[s], n, c, w)
                mean[s, step] = m
                var[s, step] = s2[s] * (max(1.0 - explained, 0.0) + ratio[s])
                ext[W + step] = m
    return mean, var


# --------------------------------------------------------------------------- references


def standardise_reference(data, indptr, width):
    """numpy :func:`standardise`."""
    lengths = np.diff(indptr)
    S = len(lengths)
    w = np.minimum(lengths, width)
    Z = np.zeros((S, width))
    mask = np.zeros((S, width), dtype=bool)
    rows = np.repeat(np.arange(S), w)
    within = np.arange(w.sum()) - np.repeat(np.cumsum(w) - w, w)
    Z[rows, within + np.repeat(width - w, w)] = data[np.repeat(indptr[1:] - w, w) + within]
    mask[rows, within + np.repeat(width - w, w)] = True
    size = np.maximum(w, 1)
    loc = Z.sum(1) / size
    dev = np.where(mask, Z - loc[:, None], 0.0)
    sd = np.sqrt((dev**2).sum(1) / size)
    scale = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(loc)), sd, 1.0)
    return dev / scale[:, None], w.astype(np.int64), loc, scale


def patterns_reference(Z, h, dt):
    """The pattern slots X (S, N, h+1) and targets (S, N) of the windows Z (S, h+N)."""
    S, W = Z.shape
    N = W - h
    X = np.empty((S, N, h + 1))
    X[:, :, 0] = (np.arange(N) - N) * dt
    X[:, :, 1:] = np.lib.stride_tricks.sliding_window_view(Z, h, axis=1)[:, :N]
    return X, Z[:, h:].copy()


def _valid(count, N):
    """(S, N) slots that hold real patterns of series with at least 2."""
    return (np.arange(N)[None, :] >= (N - count)[:, None]) & (count >= 2)[:, None]


def _padded(X, valid, exp_kernel, length, ratio):
    """C + r I on real slots, identity on empty ones (a padded slot has target 0, so it adds
    nothing to the quadratic form nor to the log determinant); and the coefficient per series."""
    active = valid.any(1)
    coef = np.where(active, 1.0 / length if exp_kernel else 1.0 / length**2, 1.0)
    sq = ((X[:, :, None, :] - X[:, None, :, :]) ** 2).sum(-1)
    C = np.exp(-(np.sqrt(sq) if exp_kernel else 0.5 * sq) * coef[:, None, None])
    pair = valid[:, :, None] & valid[:, None, :]
    eye = np.eye(X.shape[1], dtype=bool)[None]
    r = np.where(active, ratio, 0.0)
    return np.where(pair, C + r[:, None, None] * eye, eye * 1.0), coef, r


def factor_reference(Z, count, h, dt, exp_kernel, length, ratio):
    """numpy :func:`factor` (s2 and log evidence), batched Cholesky factors of padded stacks."""
    X, target = patterns_reference(Z, h, dt)
    valid = _valid(count, X.shape[1])
    A, _, _ = _padded(X, valid, exp_kernel, length, ratio)
    L = np.linalg.cholesky(A)
    logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(1)
    v = np.linalg.solve(L, np.where(valid, target, 0.0)[:, :, None])[:, :, 0]
    q = (v**2).sum(1)
    n = np.maximum(count, 1)
    s2 = np.maximum(q / n, S2_MIN)
    lml = -0.5 * (q / s2 + n * np.log(s2) + logdet + n * LOG_2PI)
    active = valid.any(1)
    return np.where(active, s2, np.nan), np.where(active, lml, np.nan)


def search_reference(Z, count, h, dt, exp_kernel, top, levels, log_r, rounds):
    """numpy :func:`search`: the same walk, every series at once (returns l, r, s2, lml)."""
    S = len(Z)
    ln2 = np.log(2.0)
    lo_l, hi_l = top - 2 * ln2 * (levels - 1), top
    lo_r, hi_r = log_r[0], log_r[-1]
    eps = 1e-9
    best = np.full(S, -np.inf)
    best_a, best_b = np.full(S, hi_l), np.full(S, lo_r)
    best_s2 = np.full(S, np.nan)

    def consider(a, b, ok):
        nonlocal best, best_a, best_b, best_s2
        s2, lml = factor_reference(Z, count, h, dt, exp_kernel, np.exp(a), np.exp(b))
        better = (np.nan_to_num(lml, nan=-np.inf) > best + TIE) & ok
        best = np.where(better, lml, best)
        best_a, best_b = np.where(better, a, best_a), np.where(better, b, best_b)
        best_s2 = np.where(better, s2, best_s2)

    everyone = np.ones(S, dtype=bool)
    for i in range(levels):
        for b in log_r:
            consider(np.full(S, top - 2 * ln2 * i), np.full(S, b), everyone)
    da = 2 * ln2
    db = (hi_r - lo_r) / (len(log_r) - 1) if len(log_r) > 1 else 0.0
    for _ in range(rounds):
        da, db = da / 2, db / 2
        ca, cb = best_a.copy(), best_b.copy()
        for a in (ca - da, ca + da):
            consider(a, cb, (a >= lo_l - eps) & (a <= hi_l + eps))
        for b in (cb - db, cb + db):
            consider(ca, b, (b >= lo_r - eps) & (b <= hi_r + eps))
    found = (count >= 2) & (best > -np.inf)
    return tuple(
        np.where(found, x, np.nan) for x in (np.exp(best_a), np.exp(best_b), best_s2, best)
    )


def posterior_reference(Z, count, h, dt, exp_kernel, length, ratio, s2, steps):
    """numpy :func:`posterior`, batched solves on padded stacks."""
    X, target = patterns_reference(Z, h, dt)
    S, N, _ = X.shape
    valid = _valid(count, N)
    A, coef, r = _padded(X, valid, exp_kernel, length, ratio)
    L = np.linalg.cholesky(A)
    alpha = np.linalg.solve(A, np.where(valid, target, 0.0)[:, :, None])[:, :, 0]
    hist = Z[:, N:].copy()
    mean, var = np.empty((S, steps)), np.empty((S, steps))
    for step in range(steps):
        query = np.concatenate([np.full((S, 1), step * dt), hist], axis=1)
        sq = ((query[:, None, :] - X) ** 2).sum(-1)
        c = np.where(valid, np.exp(-(np.sqrt(sq) if exp_kernel else 0.5 * sq) * coef[:, None]), 0)
        m = (c * alpha).sum(1)
        w = np.linalg.solve(L, c[:, :, None])[:, :, 0]
        mean[:, step] = m
        var[:, step] = s2 * (np.maximum(1.0 - (w**2).sum(1), 0.0) + r)
        hist = np.concatenate([hist[:, 1:], m[:, None]], axis=1)
    active = valid.any(1)
    return np.where(active[:, None], mean, np.nan), np.where(active[:, None], var, np.nan)
