"""Compiled automatic ARIMA order selection: statsforecast's non-seasonal AutoARIMA, a batch of
series in one call.

statsforecast 2.1.1 (``statsforecast.arima.auto_arima_f``) selects a series' orders in Python:
KPSS tests for d, then a stepwise search over (p, q, constant) where every candidate is fitted by
CSS-ML, each fit being two ``scipy.optimize.minimize(method="BFGS")`` runs over its C++ objective
functions. The C++ parts take microseconds; the Python around them (scipy's line search and finite
differences, thousands of calls per series) takes 60-110 ms per series. This module is the same
algorithm with every step compiled: about 3.5 ms of CPU per window of 40 (0.94 ms per window of
10, the length at a series' first selection in the simulator), and a batch runs
without a Python loop per series, its series spread over numba's threads
(:func:`auto_arima_batch`):

- :func:`kpss_needs_diff`, :func:`ndiffs`: statsmodels' KPSS level test (``nlags`` as statsforecast
  sets it, p < 0.05 from statsmodels' table) and statsforecast's ``ndiffs`` loop, including its
  extra drop of the first difference before the second test.
- :func:`getq0`, :func:`arima_like`, :func:`arima_css`, :func:`partrans`, :func:`invpartrans`:
  line-by-line ports of statsforecast's C++ (``src/arima.cpp``, itself R's ``arima.c``).
- :func:`bfgs`: scipy's ``_minimize_bfgs`` as statsforecast calls it (``tol=1e-8`` as ``gtol``,
  100 iterations, forward differences with absolute step sqrt(eps), MINPACK's ``dcsrch`` line
  search with the Wolfe-2 fallback), ported from scipy 1.17's Python sources.
- :func:`arima_fit` (``myarima`` + ``arima(method="CSS-ML")``) and :func:`auto_arima` (the
  stepwise search of ``auto_arima_f``, or its exhaustive ``search_arima``).
- :func:`fit_order`, :func:`arima_order_batch`: statsforecast's ``ARIMA(order=(p, d, q))``, one
  given order without a search (the shaping paper's simulator runs ARIMA(0, 1, 1) on 2,000
  points): 4-10 ms of CPU per window of 2,000 instead of statsforecast's 23-29 ms. The fit is
  the same number of objective evaluations as statsforecast's, so the saving is per evaluation:
  the Kalman filter's covariance cycle (:func:`arima_like`), without which the compiled fit was
  no faster than statsforecast's C++. The cycle comes late for an MA near -1 (the slower end).

One behaviour of statsforecast is kept on purpose, so that the selected models stay the ones
statsforecast selects (the tests compare them): ``arima_like`` writes its last predicted covariance
into the model's ``Pn``, and statsforecast's ML objective resets only the ARMA block of it before
each evaluation, so for a differenced model every evaluation after the first starts with the d
initial levels known (variance ~0) instead of diffuse; for series far from zero the ML step then
never leaves the CSS estimates (its first line search fails), and the likelihood reported is the
exact one at those estimates. It is marked where it happens (:func:`objective`).

The references the tests compare with are statsforecast itself: its C++ functions for the ported
objectives (equal to the last bit), scipy's ``minimize`` for :func:`bfgs`, statsmodels' KPSS and
statsforecast's ``ndiffs``, and its ``AutoARIMA`` end to end on real windows.

Floating-point: the ports keep the C++/numpy order of operations where it is cheap to do so, but
numpy's pairwise sums and BLAS products are plain loops here, so the objective differs from
statsforecast's in the last bits; the finite-difference gradient amplifies that (step 1.5e-8), so
coefficients agree to about 1e-6 and information criteria to about 1e-9, not bit for bit. Within
this module everything is deterministic: the same window gives the same model bit for bit.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from reclaim._numba_util import borrow as _borrow
from reclaim.forecast._online_kernels import KAPPA

#: scipy's BFGS as statsforecast runs it: forward differences with this absolute step (the square
#: root of the float64 epsilon), stop when the largest gradient component is at most GTOL (the
#: ``tol=1e-8`` statsforecast passes) or after MAXITER iterations; Wolfe constants C1, C2.
FD_STEP = 1.4901161193847656e-08
GTOL = 1e-8
MAXITER = 100
C1 = 1e-4
C2 = 0.9
#: ``minimize`` returns this for an infinite CSS objective (``sys.float_info.max``).
DBL_MAX = 1.7976931348623157e308
LOG_2PI = math.log(2.0 * math.pi)

# objective kinds
CSS = 0
ML = 1
# information criteria
AIC = 0
AICC = 1
BIC = 2
# status of a selection
OK = 0
FAILED = 1  # statsforecast raises: no candidate with a finite criterion, or too little data

_jit = numba.njit(cache=True, error_model="numpy")
#: Speed (run and compile time), measured on 300 real windows of 40 (CPU time per series):
#: - the objective is kept out of line: LLVM otherwise inlines it, with the Kalman filter, into
#:   each of its eight call sites in the optimiser (5.0 -> 3.8 ms). numba marks a function
#:   ``noinline`` when it carries full debug information; bounds checks stay off.
#: - small helpers and the line searches are inlined in numba's IR instead (3.8 -> 3.4 ms): each
#:   numba function is a library that links and optimises all its callees again, so fewer levels
#:   also compile faster (the first compilation takes about 50 s, cached on disk afterwards).
#: - every call passes run-time values, never literal constants: numba compiles a copy of a
#:   function per literal argument value (there were 12 copies of the objective and a 220 s
#:   first compilation).
#: - the arrays the objective reads reach it borrowed (:func:`_borrow`): each owned array passed
#:   to a function that is not inlined costs two atomic reference-count operations, and those took
#:   60 % of a selection on real windows of 10 (1.56 -> 0.94 ms per window on one thread).
_jit_outline = numba.njit(
    cache=True, error_model="numpy", debug=True, boundscheck=False, _dbg_extend_lifetimes=False
)
_jit_inline = numba.njit(cache=True, error_model="numpy", inline="always")


# -- statsforecast's C++ (src/arima.cpp), line by line ------------------------------------------


@_jit
def partrans(p, raw, out):
    """AR coefficients from unconstrained values: tanh, then Durbin-Levinson (C++ ``partrans``)."""
    for j in range(p):
        out[j] = math.tanh(raw[j])
    # the C++ updates a copy and copies it back; the step pairs coefficient k with j - 1 - k,
    # so it can run in place two at a time with the same arithmetic (no allocation per call)
    for j in range(1, p):
        a = out[j]
        for k in range((j + 1) // 2):
            m = j - 1 - k
            lo = out[k] - a * out[m]
            hi = out[m] - a * out[k]
            out[k] = lo
            out[m] = hi


@_jit
def invpartrans(p, phi, out):
    """Inverse of :func:`partrans` (C++ ``invpartrans``): Durbin-Levinson run backwards to the
    partial autocorrelations, then atanh. In place by pairs, as :func:`partrans`."""
    for j in range(p):
        out[j] = phi[j]
    for j in range(p - 1, 0, -1):
        a = out[j]
        for k in range((j + 1) // 2):
            m = j - 1 - k
            lo = (out[k] + a * out[m]) / (1 - a * a)
            hi = (out[m] + a * out[k]) / (1 - a * a)
            out[k] = lo
            out[m] = hi
    for j in range(p):
        out[j] = math.atanh(out[j]) if abs(out[j]) <= 1.0 else np.nan


@_jit
def arima_css(y, n, d, p, q, phi, theta, w, resid):
    """Conditional sum of squares per used observation (C++ ``arima_css``, non-seasonal): the
    d-th difference of ``y``, then ARMA residuals from observation ncond = p + d on."""
    for t in range(n):
        w[t] = y[t]
    for _ in range(d):
        for t in range(n - 1, 0, -1):
            w[t] -= w[t - 1]
    ncond = p + d
    nu = 0
    ssq = 0.0
    for t in range(ncond, n):
        tmp = w[t]
        for j in range(p):
            tmp -= phi[j] * w[t - j - 1]
        for j in range(min(t - ncond, q)):
            tmp -= theta[j] * resid[t - j - 1]
        resid[t] = tmp
        if not math.isnan(tmp):
            nu += 1
            ssq += tmp * tmp
    if nu == 0:
        return np.nan
    return ssq / nu


@_jit
def _inclu2(npar, xnext, xrow, ynext, d, rbar, thetab):
    for i in range(npar):
        xrow[i] = xnext[i]
    ithisr = 0
    for i in range(npar):
        if xrow[i] != 0.0:
            xi = xrow[i]
            di = d[i]
            dpi = di + xi * xi
            d[i] = dpi
            if dpi == 0:
                cbar = np.inf
                sbar = np.inf
            else:
                cbar = di / dpi
                sbar = xi / dpi
            for k in range(i + 1, npar):
                xk = xrow[k]
                rbthis = rbar[ithisr]
                xrow[k] = xk - xi * rbthis
                rbar[ithisr] = cbar * rbthis + sbar * xk
                ithisr += 1
            xk = ynext
            ynext = xk - xi * thetab[i]
            thetab[i] = cbar * thetab[i] + sbar * xk
            if di == 0.0:
                return
        else:
            ithisr += npar - i - 1


@_jit
def getq0(phi, p, theta, q, res, scratch):
    """Stationary covariance of the ARMA state, Gardner et al. (1980) as statsforecast's C++
    ``getQ0``: res[:r*r] (r = max(p, q + 1)), symmetric. scratch: >= 4 np + np (np - 1) / 2
    floats, np = r (r + 1) / 2."""
    r = max(p, q + 1)
    npr_ = r * (r + 1) // 2
    nrbar = npr_ * (npr_ - 1) // 2
    V = scratch[:npr_]
    thetab = scratch[npr_ : 2 * npr_]
    xnext = scratch[2 * npr_ : 3 * npr_]
    xrow = scratch[3 * npr_ : 4 * npr_]
    rbar = scratch[4 * npr_ : 4 * npr_ + nrbar]
    ind = 0
    for j in range(r):
        vj = 0.0
        if j == 0:
            vj = 1.0
        elif j - 1 < q:
            vj = theta[j - 1]
        for i in range(j, r):
            vi = 0.0
            if i == 0:
                vi = 1.0
            elif i - 1 < q:
                vi = theta[i - 1]
            V[ind] = vi * vj
            ind += 1
    if r == 1:
        res[0] = 1.0 if p == 0 else 1.0 / (1 - phi[0] * phi[0])
        return
    for i in range(r * r):
        res[i] = 0.0
    if p > 0:
        for i in range(nrbar):
            rbar[i] = 0.0
        for i in range(npr_):
            thetab[i] = 0.0
            xnext[i] = 0.0
            xrow[i] = 0.0
        ind = 0
        ind1 = -1
        npr = npr_ - r
        npr1 = npr + 1
        indj = npr
        ind2 = npr - 1
        for j in range(r):
            phij = phi[j] if j < p else 0.0
            xnext[indj] = 0.0
            indj += 1
            indi = npr1 + j
            for i in range(j, r):
                ynext = V[ind]
                ind += 1
                phii = phi[i] if i < p else 0.0
                if j != r - 1:
                    xnext[indj] = -phii
                    if i != r - 1:
                        xnext[indi] -= phij
                        ind1 += 1
                        xnext[ind1] = -1.0
                xnext[npr] = -phii * phij
                ind2 += 1
                if ind2 >= npr_:
                    ind2 = 0
                xnext[ind2] += 1.0
                _inclu2(npr_, xnext, xrow, ynext, res, rbar, thetab)
                xnext[ind2] = 0.0
                if i != r - 1:
                    xnext[indi] = 0.0
                    indi += 1
                    xnext[ind1] = 0.0
        ithisr = nrbar - 1
        im = npr_ - 1
        for i in range(npr_):
            bi = thetab[im]
            jm = npr_ - 1
            for _ in range(i):
                bi -= rbar[ithisr] * res[jm]
                ithisr -= 1
                jm -= 1
            res[im] = bi
            im -= 1
        ind = npr
        for i in range(r):
            xnext[i] = res[ind]
            ind += 1
        ind = npr_ - 1
        ind1 = npr - 1
        for _ in range(npr):
            res[ind] = res[ind1]
            ind -= 1
            ind1 -= 1
        for i in range(r):
            res[i] = xnext[i]
    else:
        indn = npr_
        ind = npr_
        for i in range(r):
            for j in range(i + 1):
                ind -= 1
                res[ind] = V[ind]
                if j != 0:
                    indn -= 1
                    res[ind] += res[indn]
    ind = npr_
    for i in range(r - 1, 0, -1):
        for j in range(r - 1, i - 1, -1):
            ind -= 1
            res[r * i + j] = res[ind]
    for i in range(r - 1):
        for j in range(i + 1, r):
            res[i + r * j] = res[j + r * i]


@_jit
def arima_like(y, n, phi, p, theta, q, delta, d, a, P, Pnew, work, use_resid, resid):
    """Gaussian likelihood terms of an ARIMA by the Kalman filter (C++ ``arima_like`` with
    ``up=0``): returns (ssq, sumlog, nu). ``a`` (rd,), ``P`` and ``Pnew`` (rd*rd, column-major as
    the C++) are read and left as the C++ leaves them (``Pnew``: the last predicted covariance).
    work: >= 4 rd + 5 rd*rd + 4 floats.

    Speed: the covariance recursion does not depend on the data, so once a step's predicted
    covariance equals the one two steps before bit for bit, every later step repeats the
    covariance, gain and update of the step two before exactly; from there only the state runs
    (O(rd) per step instead of O(rd^3)). Period 2, not only a fixed point: in a differenced model
    the entries that should be zero are rounding noise flipping sign every step, so the recursion
    settles on a 2-cycle and never on a fixed point (at 2,000 points this was 95 % of an ML
    evaluation). The outputs are bit-identical to running every step
    (benchmarks/bench_forecast.py times it; tests/forecast/test_arima.py checks it against the
    C++).
    """
    r = max(p, q + 1)
    rd = r + d
    rr = rd * rd
    anew = work[:rd]
    mm = work[rd : rd + rr]
    # per parity of the step: its Pnew, P after the update, M, gain and log gain
    slot = 2 * rr + rd + 2
    hist = work[rd + rr : rd + rr + 2 * slot]
    ssq = 0.0
    sumlog = 0.0
    nu = 0
    cycle = False  # the covariance recursion has settled on a cycle of 2 (or 1) steps
    lost = False  # a zero gain happened: the C++ then poisons Pnew; never take the shortcut
    gain = 0.0
    loggain = 0.0
    for t in range(n):
        for i in range(r):
            tmp = a[i + 1] if i < r - 1 else 0.0
            if i < p:
                tmp += phi[i] * a[0]
            anew[i] = tmp
        if d > 0:
            for i in range(r + 1, rd):
                anew[i] = a[i - 1]
            tmp = a[0]
            for i in range(d):
                tmp += delta[i] * a[r + i]
            anew[r] = tmp
        base = (t & 1) * slot
        mb = base + 2 * rr
        if t > 0 and not cycle:
            if d == 0:
                for i in range(r):
                    vi = 0.0
                    if i == 0:
                        vi = 1.0
                    elif i - 1 < q:
                        vi = theta[i - 1]
                    for j in range(r):
                        tmp = 0.0
                        if j == 0:
                            tmp = vi
                        elif j - 1 < q:
                            tmp = vi * theta[j - 1]
                        if i < p and j < p:
                            tmp += phi[i] * phi[j] * P[0]
                        if i < r - 1 and j < r - 1:
                            tmp += P[i + 1 + r * (j + 1)]
                        if i < p and j < r - 1:
                            tmp += phi[i] * P[j + 1]
                        if j < p and i < r - 1:
                            tmp += phi[j] * P[i + 1]
                        Pnew[i + r * j] = tmp
            else:
                for i in range(r):
                    for j in range(rd):
                        tmp = 0.0
                        if i < p:
                            tmp += phi[i] * P[rd * j]
                        if i < r - 1:
                            tmp += P[i + 1 + rd * j]
                        mm[i + rd * j] = tmp
                for j in range(rd):
                    tmp = P[rd * j]
                    for k in range(d):
                        tmp += delta[k] * P[r + k + rd * j]
                    mm[r + rd * j] = tmp
                for i in range(1, d):
                    for j in range(rd):
                        mm[r + i + rd * j] = P[r + i - 1 + rd * j]
                for i in range(r):
                    for j in range(rd):
                        tmp = 0.0
                        if i < p:
                            tmp += phi[i] * mm[j]
                        if i < r - 1:
                            tmp += mm[rd * (i + 1) + j]
                        Pnew[j + rd * i] = tmp
                for j in range(rd):
                    tmp = mm[j]
                    for k in range(d):
                        tmp += delta[k] * mm[rd * (r + k) + j]
                    Pnew[rd * r + j] = tmp
                for i in range(1, d):
                    for j in range(rd):
                        Pnew[rd * (r + i) + j] = mm[rd * (r + i - 1) + j]
                for i in range(q + 1):
                    vi = 1.0 if i == 0 else theta[i - 1]
                    for j in range(q + 1):
                        if j == 0:
                            Pnew[i + rd * j] += vi
                        else:
                            Pnew[i + rd * j] += vi * theta[j - 1]
        # speed: a cycle of the covariance recursion (see the docstring)
        if not cycle and not lost and t >= 2:
            cycle = True
            for i in range(rr):
                if Pnew[i] != hist[base + i]:
                    cycle = False
                    break
        resid0 = y[t] - anew[0]
        for i in range(d):
            resid0 -= delta[i] * anew[r + i]
        if cycle:
            gain = hist[mb + rd]
            loggain = hist[mb + rd + 1]
        else:
            for i in range(rd):
                tmp = Pnew[i]
                for j in range(d):
                    tmp += Pnew[i + (r + j) * rd] * delta[j]
                hist[mb + i] = tmp
            gain = hist[mb]
            for j in range(d):
                gain += delta[j] * hist[mb + r + j]
        if gain < 1e4:
            nu += 1
            if gain == 0:
                ssq = np.inf
            else:
                ssq += resid0 * resid0 / gain
            if not cycle:
                loggain = math.log(gain)
            sumlog += loggain  # a repeated gain has the same log: computed once
        if use_resid:
            resid[t] = np.inf if gain == 0 else resid0 / math.sqrt(gain)
        if gain == 0:
            lost = True
            for i in range(rd):
                a[i] = np.inf
                for j in range(rd):
                    Pnew[i + j * rd] = np.inf
        else:
            for i in range(rd):
                a[i] = anew[i] + hist[mb + i] * resid0 / gain
            if not cycle:
                for i in range(rd):
                    for j in range(rd):
                        P[i + j * rd] = Pnew[i + j * rd] - hist[mb + i] * hist[mb + j] / gain
                for i in range(rr):
                    hist[base + i] = Pnew[i]
                    hist[base + rr + i] = P[i]
                hist[mb + rd] = gain
                hist[mb + rd + 1] = loggain
    if cycle:  # leave P and Pnew as the last step left them
        base = ((n - 1) & 1) * slot
        for i in range(rr):
            Pnew[i] = hist[base + i]
            P[i] = hist[base + rr + i]
    return ssq, sumlog, nu


@_jit
def gradtrans_diag(coef, p, nv, H):
    """Diagonal of A' H A, A the Jacobian of :func:`partrans` by forward differences
    of 1e-3 (C++ ``arima_gradtrans``), identity outside the AR block: statsforecast's coefficient
    variance before dividing by the number of observations. H: (nv, nv) inverse Hessian."""
    A = np.eye(nv)
    if p > 0:
        eps = 1e-3
        w1 = np.empty(p)
        w2 = np.empty(p)
        w3 = np.empty(p)
        for i in range(p):
            w1[i] = coef[i]
        partrans(p, w1, w2)
        for i in range(p):
            w1[i] += eps
            partrans(p, w1, w3)
            for j in range(p):
                A[i, j] = (w3[j] - w2[j]) / eps
            w1[i] -= eps
    out = np.empty(nv)
    for k in range(nv):
        s = 0.0
        for i in range(nv):
            t = 0.0
            for j in range(nv):
                t += H[i, j] * A[j, k]
            s += A[i, k] * t
        out[k] = s
    return out


# -- the objectives statsforecast minimises -------------------------------------------------------


@_jit_outline
def objective(kind, par, x, n, xreg, nx, p, q, d, delta, st, first):
    """statsforecast's ``arma_css_op`` (kind CSS: untransformed AR) or ``armafn`` (kind ML: AR
    through :func:`partrans`) at parameters ``par`` = (ar, ma, regressor coefficient).

    st: the workspace of :func:`workspace` holding the ML model's ``a``, ``P``, ``Pn``. ``first``:
    the first ML evaluation of a fit, which sees the diffuse prior; later ones see what the
    previous evaluation left in ``Pn`` outside the ARMA block (statsforecast's in-place update,
    module docstring).
    """
    xadj, w, resid, phi, theta, a, P, Pn, q0, work, _ = st
    if nx:
        beta = par[p + q]
        for t in range(n):
            xadj[t] = x[t] - xreg[t] * beta
    else:
        for t in range(n):
            xadj[t] = x[t]
    if kind == CSS:
        for i in range(p):
            phi[i] = par[i]
        for i in range(q):
            theta[i] = par[p + i]
        res = arima_css(xadj, n, d, p, q, phi, theta, w, resid)
        if math.isinf(res):
            return DBL_MAX
        if res <= 0.0:
            return -np.inf
        return 0.5 * math.log(res)
    partrans(p, par, phi)
    for i in range(q):
        theta[i] = par[p + i]
    r = max(p, q + 1)
    rd = r + d
    if first:  # make_arima: ARMA block below, diffuse levels, nothing between them
        for i in range(rd * rd):
            Pn[i] = 0.0
            P[i] = 0.0
        for i in range(d):
            Pn[(r + i) * rd + r + i] = KAPPA
    # statsforecast's upARIMA: the ARMA block and the state start afresh; the rest of Pn keeps
    # what the previous evaluation's filter left there (for d >= 1, levels known at ~0 variance
    # instead of the diffuse 1e6): kept on purpose, see the module docstring
    if r > 1:
        getq0(phi, p, theta, q, q0, work)
        for i in range(r):
            for j in range(r):
                Pn[i * rd + j] = q0[i * r + j]
    else:
        Pn[0] = 1.0 / (1.0 - phi[0] * phi[0]) if p > 0 else 1.0
    for i in range(rd):
        a[i] = 0.0
    ssq, sumlog, nu = arima_like(xadj, n, phi, p, theta, q, delta, d, a, P, Pn, work, False, resid)
    if nu == 0:
        return np.inf
    s2 = ssq / nu
    if s2 <= 0:
        return np.nan
    return 0.5 * (math.log(s2) + sumlog / nu)


@_jit
def _borrowed(st):
    """:func:`workspace` ``st`` as borrowed views (:func:`_borrow`)."""
    return (
        _borrow(st[0]),
        _borrow(st[1]),
        _borrow(st[2]),
        _borrow(st[3]),
        _borrow(st[4]),
        _borrow(st[5]),
        _borrow(st[6]),
        _borrow(st[7]),
        _borrow(st[8]),
        _borrow(st[9]),
        _borrow(st[10]),
    )


@_jit
def workspace(n, vmax, rdmax):
    """Scratch arrays of one fit: xadj, w, resid (n), phi, theta (vmax), a (rdmax), P, Pn, q0
    (rdmax^2), work (getQ0's and arima_like's scratch), x1 (3 vmax: the gradient's trial point,
    then :func:`bfgs`'s iterate and line-search point, kept here so that they reach the objective
    borrowed, :func:`_borrow`)."""
    rr = rdmax * rdmax
    npr = rdmax * (rdmax + 1) // 2
    nwork = max(4 * npr + npr * (npr - 1) // 2, 4 * rdmax + 5 * rr + 4)
    return (
        np.zeros(n),
        np.zeros(n),
        np.zeros(n),
        np.zeros(vmax),
        np.zeros(vmax),
        np.zeros(rdmax),
        np.zeros(rr),
        np.zeros(rr),
        np.zeros(rr),
        np.zeros(nwork),
        np.zeros(3 * vmax),
    )


# -- scipy's BFGS (scipy/optimize/_optimize.py, _linesearch.py, _dcsrch.py) ------------------------


@_jit_inline
def _pymax(a, b):
    """Python's ``max(a, b)``: the first unless the second is larger (so NaN-order matters)."""
    return b if b > a else a


@_jit_inline
def _pymin(a, b):
    return b if b < a else a


@_jit_inline
def _clip(x, lo, hi):
    """``np.clip`` of a scalar: NaN stays NaN."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@_jit_inline
def _fval(kind, xv, prob, evals):
    """The objective at ``xv``; ``evals`` (1,) counts evaluations (the first ML one is special)."""
    x, n, xreg, nx, p, q, d, delta, st = prob
    first = evals[0] == 0
    evals[0] += 1
    return objective(kind, xv, x, n, xreg, nx, p, q, d, delta, st, first)


@_jit_inline
def _grad(kind, xk, f0, nv, prob, evals, x1, g):
    """scipy's ``approx_derivative(method='2-point', abs_step=FD_STEP)`` at ``xk`` with f0 = f(xk)."""
    for i in range(nv):
        h = FD_STEP
        dx = (xk[i] + h) - xk[i]
        if dx == 0:
            sign = 1.0 if xk[i] >= 0 else -1.0
            h = FD_STEP * sign * max(1.0, abs(xk[i]))
            dx = (xk[i] + h) - xk[i]
        for j in range(nv):
            x1[j] = xk[j]
        x1[i] = xk[i] + h
        g[i] = (_fval(kind, x1, prob, evals) - f0) / dx


@_jit_inline
def _at(xk, pk, s, nv, out):
    for i in range(nv):
        out[i] = xk[i] + s * pk[i]


@_jit_inline
def _dot(u, v, nv):
    s = 0.0
    for i in range(nv):
        s += u[i] * v[i]
    return s


@_jit_inline
def _norm(v, nv):
    return math.sqrt(_dot(v, v, nv))


@_jit_inline
def _descent(H, g, nv, out):
    """out = -H g."""
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += H[i, j] * g[j]
        out[i] = -s


@_jit_inline
def _bfgs_update(H, sk, yk, rhok, nv, T1, T2):
    """H = (I - rho s y') H (I - rho y s') + rho s s' (in place; T1, T2 scratch)."""
    for i in range(nv):
        for j in range(nv):
            s = 0.0
            for u in range(nv):
                a2 = (1.0 if u == j else 0.0) - yk[u] * sk[j] * rhok
                s += H[i, u] * a2
            T1[i, j] = s
    for i in range(nv):
        for j in range(nv):
            s = 0.0
            for u in range(nv):
                a1 = (1.0 if i == u else 0.0) - sk[i] * yk[u] * rhok
                s += a1 * T1[u, j]
            T2[i, j] = s
    for i in range(nv):
        for j in range(nv):
            H[i, j] = T2[i, j] + rhok * sk[i] * sk[j]


@_jit
def _dcstep(stx, fx, dx, sty, fy, dy, stp, fp, dp, brackt, stpmin, stpmax):
    """MINPACK's dcstep (scipy/optimize/_dcsrch.py)."""
    sgnd = np.sign(dp) * np.sign(dx)
    if fp > fx:
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        s = _pymax(_pymax(abs(theta), abs(dx)), abs(dp))
        gamma = s * np.sqrt((theta / s) ** 2 - (dx / s) * (dp / s))
        if stp < stx:
            gamma *= -1
        p = (gamma - dx) + theta
        q = ((gamma - dx) + gamma) + dp
        r = p / q
        stpc = stx + r * (stp - stx)
        stpq = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx)
        stpf = stpc if abs(stpc - stx) <= abs(stpq - stx) else stpc + (stpq - stpc) / 2.0
        brackt = True
    elif sgnd < 0.0:
        theta = 3 * (fx - fp) / (stp - stx) + dx + dp
        s = _pymax(_pymax(abs(theta), abs(dx)), abs(dp))
        gamma = s * np.sqrt((theta / s) ** 2 - (dx / s) * (dp / s))
        if stp > stx:
            gamma *= -1
        p = (gamma - dp) + theta
        q = ((gamma - dp) + gamma) + dx
        r = p / q
        stpc = stp + r * (stx - stp)
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        brackt = True
    elif abs(dp) < abs(dx):
        theta = 3 * (fx - fp) / (stp - stx) + dx + dp
        s = _pymax(_pymax(abs(theta), abs(dx)), abs(dp))
        gamma = s * np.sqrt(_pymax(0.0, (theta / s) ** 2 - (dx / s) * (dp / s)))
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = (gamma + (dx - dp)) + gamma
        r = p / q
        if r < 0 and gamma != 0:
            stpc = stp + r * (stx - stp)
        elif stp > stx:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        if brackt:
            stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
            if stp > stx:
                stpf = _pymin(stp + 0.66 * (sty - stp), stpf)
            else:
                stpf = _pymax(stp + 0.66 * (sty - stp), stpf)
        else:
            stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
            stpf = _clip(stpf, stpmin, stpmax)
    else:
        if brackt:
            theta = 3.0 * (fp - fy) / (sty - stp) + dy + dp
            s = _pymax(_pymax(abs(theta), abs(dy)), abs(dp))
            gamma = s * np.sqrt((theta / s) ** 2 - (dy / s) * (dp / s))
            if stp > sty:
                gamma = -gamma
            p = (gamma - dp) + theta
            q = ((gamma - dp) + gamma) + dy
            r = p / q
            stpc = stp + r * (sty - stp)
            stpf = stpc
        elif stp > stx:
            stpf = stpmax
        else:
            stpf = stpmin
    if fp > fx:
        sty = stp
        fy = fp
        dy = dp
    else:
        if sgnd < 0:
            sty = stx
            fy = fx
            dy = dx
        stx = stp
        fx = fp
        dx = dp
    return stx, fx, dx, sty, fy, dy, stpf, brackt


# dcsrch tasks
_START = 0
_FG = 1
_CONV = 2
_WARN = 3
_ERROR = 4


@_jit_inline
def _wolfe1(kind, xk, pk, phi0, old_phi0, derphi0, nv, prob, evals, cache, xt, gt):
    """scipy's ``line_search_wolfe1`` (MINPACK dcsrch, amin 1e-100, amax 1e100, xtol 1e-14).
    Returns (ok, stp, phi(stp)); ``gt`` holds the gradient at stp."""
    ftol, gtol, xtol, stpmin, stpmax = C1, C2, 1e-14, 1e-100, 1e100
    if derphi0 != 0:
        alpha1 = _pymin(1.0, 1.01 * 2 * (phi0 - old_phi0) / derphi0)
        if alpha1 < 0:
            alpha1 = 1.0
    else:
        alpha1 = 1.0
    stp = alpha1
    f = phi0
    g = derphi0
    task = _START
    brackt = False
    stage = 1
    finit = ginit = gtest = width = width1 = 0.0
    stx = fx = gx = sty = fy = gy = stmin = stmax = 0.0
    converged_loop = False
    for _ in range(100):
        # -- DCSRCH._iterate(stp, f, g, task)
        if task == _START:
            if stp < stpmin or stp > stpmax or g >= 0:
                task = _ERROR
            else:
                brackt = False
                stage = 1
                finit = f
                ginit = g
                gtest = ftol * ginit
                width = stpmax - stpmin
                width1 = width / 0.5
                stx = 0.0
                fx = finit
                gx = ginit
                sty = 0.0
                fy = finit
                gy = ginit
                stmin = 0.0
                stmax = stp + 4.0 * stp
                task = _FG
        else:
            ftest = finit + stp * gtest
            if stage == 1 and f <= ftest and g >= 0:
                stage = 2
            if brackt and (stp <= stmin or stp >= stmax):
                task = _WARN
            if brackt and stmax - stmin <= xtol * stmax:
                task = _WARN
            if stp == stpmax and f <= ftest and g <= gtest:
                task = _WARN
            if stp == stpmin and (f > ftest or g >= gtest):
                task = _WARN
            if f <= ftest and abs(g) <= gtol * -ginit:
                task = _CONV
            if task != _WARN and task != _CONV:
                if stage == 1 and f <= fx and f > ftest:
                    fm = f - stp * gtest
                    fxm = fx - stx * gtest
                    fym = fy - sty * gtest
                    gm = g - gtest
                    gxm = gx - gtest
                    gym = gy - gtest
                    stx, fxm, gxm, sty, fym, gym, stp, brackt = _dcstep(
                        stx, fxm, gxm, sty, fym, gym, stp, fm, gm, brackt, stmin, stmax
                    )
                    fx = fxm + stx * gtest
                    fy = fym + sty * gtest
                    gx = gxm + gtest
                    gy = gym + gtest
                else:
                    stx, fx, gx, sty, fy, gy, stp, brackt = _dcstep(
                        stx, fx, gx, sty, fy, gy, stp, f, g, brackt, stmin, stmax
                    )
                if brackt:
                    if abs(sty - stx) >= 0.66 * width1:
                        stp = stx + 0.5 * (sty - stx)
                    width1 = width
                    width = abs(sty - stx)
                if brackt:
                    stmin = min(stx, sty)
                    stmax = max(stx, sty)
                else:
                    stmin = stp + 1.1 * (stp - stx)
                    stmax = stp + 4.0 * (stp - stx)
                stp = _clip(stp, stpmin, stpmax)
                if (brackt and (stp <= stmin or stp >= stmax)) or (
                    brackt and stmax - stmin <= xtol * stmax
                ):
                    stp = stx
                task = _FG
        # -- DCSRCH.__call__
        if not math.isfinite(stp):
            task = _WARN
            break
        if task == _FG:
            _at(xk, pk, stp, nv, xt)
            f = _f_at(kind, xt, nv, prob, evals, cache)
            _g_at(kind, xt, nv, prob, evals, cache, gt)
            g = _dot(gt, pk, nv)
        else:
            converged_loop = True
            break
    if not converged_loop:
        return False, 0.0, 0.0
    if task >= _WARN:  # a warning or an error
        return False, 0.0, 0.0
    return True, stp, f


@_jit_inline
def _gradient_into(kind, xv, f0, nv, prob, evals, g):
    _grad(kind, xv, f0, nv, prob, evals, prob[8][10], g)


@_jit_inline
def _same_point(xv, cx, nv):
    for i in range(nv):  # noqa: SIM110 - a plain loop in compiled code
        if xv[i] != cx[i]:
            return False
    return True


@_jit_inline
def _f_at(kind, xv, nv, prob, evals, cache):
    """f at ``xv`` through scipy's ``ScalarFunction`` cache: the last point's value (and
    gradient) are kept, so asking again for the same point costs nothing. Besides the time, the
    count of evaluations then matches scipy's, which the ML objective's first evaluation needs."""
    cx, cg, cf, ci = cache
    if ci[0] and _same_point(xv, cx, nv):
        return cf[0]
    for i in range(nv):
        cx[i] = xv[i]
    ci[0] = 1
    ci[1] = 0
    cf[0] = _fval(kind, xv, prob, evals)
    return cf[0]


@_jit_inline
def _g_at(kind, xv, nv, prob, evals, cache, g):
    """The gradient at ``xv`` into ``g`` (with f there first), cached as :func:`_f_at`."""
    cx, cg, cf, ci = cache
    f0 = _f_at(kind, xv, nv, prob, evals, cache)
    if not ci[1]:
        _gradient_into(kind, cx, f0, nv, prob, evals, cg)
        ci[1] = 1
    for i in range(nv):
        g[i] = cg[i]


@_jit
def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """scipy's ``_cubicmin``; NaN when numpy would raise (division by zero, overflow, invalid)."""
    C = fpa
    db = b - a
    dc = c - a
    denom = (db * dc) ** 2 * (db - dc)
    if denom == 0 or not math.isfinite(denom):
        return np.nan
    v0 = fb - fa - C * db
    v1 = fc - fa - C * dc
    A = dc**2 * v0 + (-(db**2)) * v1
    B = (-(dc**3)) * v0 + db**3 * v1
    if not (math.isfinite(A) and math.isfinite(B)):
        return np.nan
    A /= denom
    B /= denom
    radical = B * B - 3 * A * C
    if radical < 0 or A == 0 or not math.isfinite(radical):
        return np.nan
    xmin = a + (-B + math.sqrt(radical)) / (3 * A)
    return xmin if math.isfinite(xmin) else np.nan


@_jit
def _quadmin(a, fa, fpa, b, fb):
    D = fa
    C = fpa
    db = b - a * 1.0
    if db == 0:
        return np.nan
    B = (fb - D - C * db) / (db * db)
    if B == 0 or not math.isfinite(B):
        return np.nan
    xmin = a - C / (2.0 * B)
    return xmin if math.isfinite(xmin) else np.nan


@_jit_inline
def _wolfe2(kind, xk, pk, phi0, old_phi0, derphi0, nv, prob, evals, cache, xt, gt):
    """scipy's ``line_search_wolfe2`` (amax 1e100, 10 iterations, zoom of 10). Returns
    (ok, alpha, phi(alpha), has_grad); with has_grad ``gt`` holds the gradient at alpha."""
    amax = 1e100
    c1, c2 = C1, C2
    alpha0 = 0.0
    alpha1 = _pymin(1.0, 1.01 * 2 * (phi0 - old_phi0) / derphi0) if derphi0 != 0 else 1.0
    if alpha1 < 0:
        alpha1 = 1.0
    alpha1 = _pymin(alpha1, amax)
    _at(xk, pk, alpha1, nv, xt)
    phi_a1 = _f_at(kind, xt, nv, prob, evals, cache)
    phi_a0 = phi0
    derphi_a0 = derphi0
    derphi_a1 = 0.0
    for i in range(10):
        if alpha1 == 0 or alpha0 > amax:
            return False, 0.0, 0.0, False
        zoom = 0
        if (phi_a1 > phi0 + c1 * alpha1 * derphi0) or ((phi_a1 >= phi_a0) and i > 0):
            zoom = 1
        else:
            # derphi(alpha1): f there is phi_a1, the last evaluation
            _at(xk, pk, alpha1, nv, xt)
            _g_at(kind, xt, nv, prob, evals, cache, gt)
            derphi_a1 = _dot(gt, pk, nv)
            if abs(derphi_a1) <= -c2 * derphi0:
                return True, alpha1, phi_a1, True
            if derphi_a1 >= 0:
                zoom = 2
        if zoom:
            if zoom == 1:
                a_lo, a_hi, phi_lo, phi_hi, derphi_lo = alpha0, alpha1, phi_a0, phi_a1, derphi_a0
            else:
                a_lo, a_hi, phi_lo, phi_hi, derphi_lo = alpha1, alpha0, phi_a1, phi_a0, derphi_a1
            # -- _zoom
            j = 0
            phi_rec = phi0
            a_rec = 0.0
            cchk = 0.0
            while True:
                dalpha = a_hi - a_lo
                if dalpha < 0:
                    a, b = a_hi, a_lo
                else:
                    a, b = a_lo, a_hi
                a_j = np.nan
                if j > 0:
                    cchk = 0.2 * dalpha
                    a_j = _cubicmin(a_lo, phi_lo, derphi_lo, a_hi, phi_hi, a_rec, phi_rec)
                if j == 0 or math.isnan(a_j) or (a_j > b - cchk) or (a_j < a + cchk):
                    qchk = 0.1 * dalpha
                    a_j = _quadmin(a_lo, phi_lo, derphi_lo, a_hi, phi_hi)
                    if math.isnan(a_j) or (a_j > b - qchk) or (a_j < a + qchk):
                        a_j = a_lo + 0.5 * dalpha
                _at(xk, pk, a_j, nv, xt)
                phi_aj = _f_at(kind, xt, nv, prob, evals, cache)
                if (phi_aj > phi0 + c1 * a_j * derphi0) or (phi_aj >= phi_lo):
                    phi_rec = phi_hi
                    a_rec = a_hi
                    a_hi = a_j
                    phi_hi = phi_aj
                else:
                    _g_at(kind, xt, nv, prob, evals, cache, gt)
                    derphi_aj = _dot(gt, pk, nv)
                    if abs(derphi_aj) <= -c2 * derphi0:
                        return True, a_j, phi_aj, True
                    if derphi_aj * (a_hi - a_lo) >= 0:
                        phi_rec = phi_hi
                        a_rec = a_hi
                        a_hi = a_lo
                        phi_hi = phi_lo
                    else:
                        phi_rec = phi_lo
                        a_rec = a_lo
                    a_lo = a_j
                    phi_lo = phi_aj
                    derphi_lo = derphi_aj
                j += 1
                if j > 10:
                    return False, 0.0, 0.0, False
        alpha2 = 2 * alpha1
        alpha2 = _pymin(alpha2, amax)
        alpha0 = alpha1
        alpha1 = alpha2
        phi_a0 = phi_a1
        _at(xk, pk, alpha1, nv, xt)
        phi_a1 = _f_at(kind, xt, nv, prob, evals, cache)
        derphi_a0 = derphi_a1
    # no convergence within the iterations: scipy returns the last step, without its gradient
    return True, alpha1, phi_a1, False


@_jit
def bfgs(kind, x0, nv, prob, evals, xout, H):
    """scipy's ``minimize(fun, x0, method="BFGS", tol=1e-8, options={"maxiter": 100})`` as
    statsforecast calls it. Writes the solution to ``xout`` and the final inverse Hessian estimate
    to ``H`` (nv, nv); returns (fun, status) with scipy's status (0 success, 1 iteration limit,
    2 precision loss, 3 NaN).

    The only departure from scipy is arithmetic: scipy's products (``-H @ g``, ``g @ p``, the
    norm, the update of H) go through BLAS, here through :func:`_descent`, :func:`_dot`,
    :func:`_norm` and :func:`_bfgs_update`; with numpy's in their place the port gives scipy's
    iterates, result and number of evaluations bit for bit (tests/forecast/test_arima.py)."""
    points = prob[8][10]  # the workspace's x1: the gradient's trial point, then xk and xt
    m = len(points) // 3
    xk = points[m : m + nv]
    for i in range(nv):
        xk[i] = x0[i]
    gfk = np.empty(nv)
    pk = np.empty(nv)
    xt = points[2 * m : 2 * m + nv]
    gt = np.empty(nv)
    sk = np.empty(nv)
    yk = np.empty(nv)
    T1 = np.empty((nv, nv))
    T2 = np.empty((nv, nv))
    cache = (np.empty(nv), np.empty(nv), np.empty(1), np.zeros(2, np.int64))
    old_fval = _f_at(kind, xk, nv, prob, evals, cache)
    _g_at(kind, xk, nv, prob, evals, cache, gfk)
    k = 0
    for i in range(nv):
        for j in range(nv):
            H[i, j] = 1.0 if i == j else 0.0
    old_old_fval = old_fval + _norm(gfk, nv) / 2
    warnflag = 0
    gnorm = _maxabs(gfk, nv)
    while gnorm > GTOL and k < MAXITER:
        _descent(H, gfk, nv, pk)
        derphi0 = _dot(gfk, pk, nv)
        ok, alpha_k, fnew = _wolfe1(
            kind, xk, pk, old_fval, old_old_fval, derphi0, nv, prob, evals, cache, xt, gt
        )
        has_grad = True
        if not ok:
            ok, alpha_k, fnew, has_grad = _wolfe2(
                kind, xk, pk, old_fval, old_old_fval, derphi0, nv, prob, evals, cache, xt, gt
            )
        if not ok:
            warnflag = 2
            break
        old_old_fval = old_fval
        old_fval = fnew
        for i in range(nv):
            sk[i] = alpha_k * pk[i]
            xt[i] = xk[i] + sk[i]
        if not has_grad:
            _g_at(kind, xt, nv, prob, evals, cache, gt)
        for i in range(nv):
            xk[i] = xt[i]
            yk[i] = gt[i] - gfk[i]
            gfk[i] = gt[i]
        k += 1
        gnorm = _maxabs(gfk, nv)
        if gnorm <= GTOL:
            break
        if alpha_k * _norm(pk, nv) <= 0.0:
            break
        if not math.isfinite(old_fval):
            warnflag = 2
            break
        rhok_inv = _dot(yk, sk, nv)
        rhok = 1000.0 if rhok_inv == 0.0 else 1.0 / rhok_inv
        _bfgs_update(H, sk, yk, rhok, nv, T1, T2)
    for i in range(nv):
        xout[i] = xk[i]
    if warnflag == 2:
        return old_fval, 2
    if k >= MAXITER:
        return old_fval, 1
    if math.isnan(gnorm) or math.isnan(old_fval):
        return old_fval, 3
    for i in range(nv):
        if math.isnan(xk[i]):
            return old_fval, 3
    return old_fval, 0


@_jit_inline
def _maxabs(v, nv):
    """``np.amax(np.abs(v))``: NaN if any entry is NaN."""
    m = 0.0
    for i in range(nv):
        if math.isnan(v[i]):
            return np.nan
        m = max(m, abs(v[i]))
    return m


# -- statsforecast's arima(method="CSS-ML") and myarima ----------------------------------------------


@_jit
def _min_root_ok(coef, m, sign):
    """statsforecast's root check of one polynomial 1 - sign * sum c_j z^j (sign +1: AR, -1: MA):
    False when a root has modulus below 1.01. As statsforecast, the polynomial is cut after its last
    coefficient above 1e-8 in size and only checked when that is at least the second one (its port
    of R's rule is off by one). The roots are not computed: all of them lie outside the circle of
    radius 1.01 exactly when the polynomial in w = z / 1.01 is stationary, which the step-down
    (Schur-Cohn) recursion decides from its partial autocorrelations."""
    last = -1
    for j in range(m):
        if abs(coef[j]) > 1e-8:
            last = j
    if last <= 0:
        return True
    k = last + 1
    a = np.empty(k)
    scale = 1.0
    for j in range(k):
        scale *= 1.01
        a[j] = sign * coef[j] * scale
    work = np.empty(k)
    for j in range(k - 1, -1, -1):
        kappa = a[j]
        if not abs(kappa) < 1.0:
            return False
        for i in range(j):
            work[i] = (a[i] + kappa * a[j - i - 1]) / (1.0 - kappa * kappa)
        for i in range(j):
            a[i] = work[i]
    return True


@_jit
def _filter_resid(x, n, xreg, nx, beta, phi, p, theta, q, delta, d, st):
    """The fitted model's Kalman filter from statsforecast's ``make_arima`` start (``arimaSS``):
    returns the sum of squared standardised residuals (``np.nansum(residuals ** 2)``)."""
    xadj, w, resid, _, _, a, P, Pn, q0, work, _ = st
    for t in range(n):
        xadj[t] = x[t] - xreg[t] * beta if nx else x[t]
    r = max(p, q + 1)
    rd = r + d
    for i in range(rd * rd):
        Pn[i] = 0.0
        P[i] = 0.0
    for i in range(rd):
        a[i] = 0.0
    if r > 1:
        getq0(phi, p, theta, q, q0, work)
        for i in range(r):
            for j in range(r):
                Pn[i * rd + j] = q0[i * r + j]
    else:
        Pn[0] = 1.0 / (1.0 - phi[0] * phi[0]) if p > 0 else 1.0
    for i in range(d):
        Pn[(r + i) * rd + r + i] = KAPPA
    arima_like(xadj, n, phi, p, theta, q, delta, d, a, P, Pn, work, True, resid)
    total = 0.0
    for t in range(n):
        v = resid[t] * resid[t]
        if not math.isnan(v):
            total += v
    return total


@_jit
def _set_delta(d, delta):
    """Differencing polynomial: x_t = sum delta_i x_{t-i} + w_t (d = 1: [1]; d = 2: [2, -1])."""
    if d == 1:
        delta[0] = 1.0
    elif d == 2:
        delta[0] = 2.0
        delta[1] = -1.0
    else:  # general d, as statsforecast's convolution of (1, -1) d times
        c = np.zeros(d + 1)
        c[0] = 1.0
        for _ in range(d):
            for i in range(d, 0, -1):
                c[i] -= c[i - 1]
        for i in range(d):
            delta[i] = -c[i + 1]


@_jit
def arima_fit(x, n, p, d, q, constant, ic, st, xreg, delta, out):
    """One candidate of the search, as statsforecast's ``myarima`` fits it (``arima`` by CSS-ML):
    CSS estimates by BFGS, then ML by BFGS from them (AR part through ``partrans``), the
    criterion from the ML objective, sigma^2 from the final filter's residuals, and the criterion
    set to inf for a root within 1.01 of the unit circle or a negative coefficient variance.

    x: (n,) the window; constant: an intercept (d = 0) or a drift (d = 1); ic: AIC/AICC/BIC;
    delta: (d,) the differencing polynomial. out: phi (p), theta (q), the regressor coefficient,
    sigma^2, in that order. Returns the criterion (inf when statsforecast would raise or reject).
    """
    nx = 1 if (constant and d <= 1) else 0
    n_used = n - d
    if n_used <= 0:
        return np.inf
    narma = p + q
    nv = narma + nx
    init = np.zeros(nv)
    if nx:
        if d == 1:  # drift regressor 1..n; its start is the OLS slope on the differences
            s = 0.0
            for t in range(n):
                xreg[t] = t + 1.0
            for t in range(1, n):
                s += x[t] - x[t - 1]
            init[narma] = s / (n - 1)
        else:  # intercept; its start is the mean
            s = 0.0
            for t in range(n):
                xreg[t] = 1.0
                s += x[t]
            init[narma] = s / n
    prob = (x, n, xreg, nx, p, q, d, delta, st)
    evals = np.zeros(1, np.int64)
    coef = np.zeros(nv)
    res = np.zeros(nv)
    H = np.zeros((nv, nv))
    fun = np.nan
    # CSS, then ML from its estimates; one call site each for bfgs and the objective keeps numba
    # from compiling a copy of the optimiser per stage
    for kind in range(2):
        if nv == 0:  # nothing to estimate: statsforecast evaluates the ML objective once
            if kind == ML:
                evals[0] = 0
                fun = _fval(kind, init, prob, evals)
            continue
        if kind == ML:
            tmp = np.empty(max(p, 1))
            for i in range(p):
                tmp[i] = init[i]
            invpartrans(p, tmp, init)
            evals[0] = 0
        fun, status = bfgs(kind, init, nv, prob, evals, res, H)
        if kind == CSS and status != 1:  # after an iteration limit statsforecast keeps the start
            for i in range(nv):
                init[i] = res[i]
    bad_var = False
    if nv > 0:
        for i in range(nv):
            coef[i] = res[i]
        var = gradtrans_diag(coef, p, nv, H)
        for i in range(nv):
            if not var[i] / n_used >= 0.0:  # its sqrt is NaN: statsforecast's checkarima
                bad_var = True
        tmp = np.empty(max(p, 1))
        for i in range(p):
            tmp[i] = coef[i]
        partrans(p, tmp, coef)
    phi = out[:p]
    theta = out[p : p + q]
    for i in range(p):
        phi[i] = coef[i]
    for i in range(q):
        theta[i] = coef[p + i]
    beta = coef[narma] if nx else 0.0
    out[p + q] = beta
    npar = nv + 1
    nstar = n - d
    ssr = _filter_resid(x, n, xreg, nx, beta, phi, p, theta, q, delta, d, st)
    out[p + q + 1] = ssr / (nstar - npar + 1)
    value = 2 * n_used * fun + n_used + n_used * LOG_2PI
    aic = value + 2 * (nv + 1)
    if math.isnan(aic):
        return np.inf
    if ic == AIC:
        crit = aic
    elif ic == BIC:
        crit = aic + npar * (math.log(nstar) - 2)
    elif nstar - npar - 1 != 0:
        crit = aic + 2 * npar * (npar + 1) / (nstar - npar - 1)
    else:
        crit = np.inf
    if p > 0 and not _min_root_ok(phi, p, 1.0):
        crit = np.inf
    if q > 0 and crit < np.inf and not _min_root_ok(theta, q, -1.0):
        crit = np.inf
    if bad_var:
        crit = np.inf
    return crit


# -- ndiffs and the search of auto_arima_f ---------------------------------------------------------


@_jit
def _is_constant(x, m):
    for i in range(1, m):  # noqa: SIM110 - a plain loop in compiled code
        if x[i] != x[0]:
            return False
    return True


@_jit
def kpss_needs_diff(x, m):
    """statsmodels' ``kpss(x, "c", nlags=floor(3 sqrt(m) / 13))[1] < 0.05`` as statsforecast's
    ``ndiffs`` asks it: the p-value interpolated in KPSS's table (0.347, 0.463, 0.574, 0.739 at
    10, 5, 2.5, 1 %). A NaN statistic (zero long-run variance) means no difference."""
    nlags = int(math.floor(3.0 * math.sqrt(m) / 13.0))
    mean = 0.0
    for i in range(m):
        mean += x[i]
    mean /= m
    eta = 0.0
    c = 0.0
    for i in range(m):
        c += x[i] - mean
        eta += c * c
    eta /= m * m
    s = 0.0
    for i in range(m):
        s += (x[i] - mean) ** 2
    for lag in range(1, nlags + 1):
        prod = 0.0
        for i in range(lag, m):
            prod += (x[i] - mean) * (x[i - lag] - mean)
        s += 2 * prod * (1.0 - (lag / (nlags + 1.0)))
    s /= m
    stat = eta / s
    crit = (0.347, 0.463, 0.574, 0.739)
    pvals = (0.10, 0.05, 0.025, 0.01)
    if math.isnan(stat):
        return False
    if stat <= crit[0]:
        pv = pvals[0]
    elif stat >= crit[3]:
        pv = pvals[3]
    else:
        j = 0
        while stat >= crit[j + 1]:
            j += 1
        slope = (pvals[j + 1] - pvals[j]) / (crit[j + 1] - crit[j])
        pv = slope * (stat - crit[j]) + pvals[j]
    return pv < 0.05


@_jit
def ndiffs(x, n, max_d, buf):
    """statsforecast's ``ndiffs`` (KPSS, alpha 0.05): -1 where statsforecast raises (a series
    differenced to nothing). As statsforecast, each difference also drops its first value."""
    if _is_constant(x, n):
        return 0
    for i in range(n):
        buf[i] = x[i]
    m = n
    d = 0
    dodiff = kpss_needs_diff(buf, m)
    while dodiff and d < max_d:
        d += 1
        m2 = max(m - 2, 0)  # diff(x, 1, 1)[1:]
        for i in range(m2):
            buf[i] = buf[i + 2] - buf[i + 1]
        m = m2
        if m == 0:
            return -1
        if _is_constant(buf, m):
            return d
        dodiff = kpss_needs_diff(buf, m)
    return d


@_jit
def _newmodel(p, q, c, rp, rq, rc, k):
    for i in range(k):  # noqa: SIM110 - a plain loop in compiled code
        if rp[i] == p and rq[i] == q and rc[i] == c:
            return False
    return True


@_jit
def auto_arima(
    x, n, max_p, max_q, max_d, ic, stepwise, allowdrift, allowmean, st, xreg_buf, delta_buf, best
):
    """statsforecast's ``auto_arima_f`` for one non-seasonal window without missing values.

    st: a :func:`workspace`; xreg_buf (>= n), delta_buf (>= max(max_d, 1)): scratch for the
    regressor and the differencing polynomial, which every evaluation of the objective reads.

    Returns (status, p, d, q); ``best`` receives phi (p), theta (q), the intercept, the drift and
    sigma^2 at offsets 0, p, p + q, p + q + 1, p + q + 2. A constant window is the mean model
    (std 0, forecast the window's value, as statsforecast forecasts it).
    """
    nmodels = 94
    max_order = 5
    if _is_constant(x, n):
        best[0] = x[0]
        best[1] = 0.0
        best[2] = 0.0
        return OK, 0, 0, 0
    max_p = min(max_p, n // 3)
    max_q = min(max_q, n // 3)
    if n <= 3:
        ic = AIC
    buf = np.empty(n)
    d = ndiffs(x, n, max_d, buf)
    if d < 0 or n - d <= 0:
        return FAILED, 0, 0, 0
    delta = delta_buf[: max(d, 1)]
    delta[:] = 0.0
    _set_delta(d, delta)
    xreg = xreg_buf[:n]
    for i in range(n):
        buf[i] = x[i]
    for _ in range(d):
        for i in range(n - 1, 0, -1):
            buf[i] -= buf[i - 1]
    if _is_constant(buf[d:n], n - d):
        # the data are a polynomial: ARIMA(0,d,0), with the drift fixed at the mean difference
        # when d = 1, without a search (statsforecast's special case)
        nx = 1 if d == 1 else 0
        beta = 0.0
        if d == 1:
            for i in range(1, n):
                beta += buf[i]
            beta /= n - 1
        for t in range(n):
            xreg[t] = t + 1.0
        none = np.int64(0)
        ssr = _filter_resid(x, n, xreg, nx, beta, best, none, best, none, delta, d, st)
        best[0] = 0.0
        best[1] = beta
        best[2] = ssr / (n - d)
        return OK, 0, d, 0
    allowdrift = allowdrift and d == 1
    allowmean = allowmean and d == 0
    constant = allowdrift or allowmean
    cand = np.empty(max_p + max_q + 2)
    rp = np.zeros(nmodels, np.int64)
    rq = np.zeros(nmodels, np.int64)
    rc = np.zeros(nmodels, np.bool_)
    k = 0
    best_ic = np.inf
    bp = bq = 0
    bc = False
    found = False
    # the position of the search: stepwise, stage 0-4 are the starting models, 5 the neighbour
    # search (``move`` the next of its 9 moves to try); exhaustive, the next (i, j, kk)
    stage = 0
    move = 0
    startk = 0
    start_p = 2
    start_q = 2
    if n < 10:
        start_p = min(start_p, 1)
        start_q = min(start_q, 1)
    p = min(start_p, max_p)
    q = min(start_q, max_q)
    i = j = kk = 0
    src = -1
    max_k = 1 if constant else 0
    while True:
        # -- the next candidate (tp, tq, tc), or stop
        if not stepwise:  # search_arima: every (p, q) with p + q <= 5, with and without constant
            while i <= max_p and i + j > max_order:
                j += 1
                if j > max_q:
                    j = 0
                    i += 1
            if i > max_p:
                break
            tp, tq, tc = i, j, kk == 1
            src = -1
            kk += 1
            if kk > max_k:
                kk = 0
                j += 1
                if j > max_q:
                    j = 0
                    i += 1
        elif stage < 5:
            tp, tq, tc = 0, 0, constant
            use = True
            if stage == 0:
                tp, tq = p, q
            elif stage == 2:
                tp = 1
                use = max_p > 0
            elif stage == 3:
                tq = 1
                use = max_q > 0
            elif stage == 4:
                tc = False
                use = constant
            src = stage
            stage += 1
            if not use:
                continue
        else:
            if move == 0:
                if not (startk < k and k < nmodels):
                    break
                startk = k
            # statsforecast's neighbours in its order: (p, q) moves, then the constant switched
            pick = -1
            tp, tq, tc = p, q, constant
            while move < 9 and pick < 0:
                tp, tq, tc = p, q, constant
                if move == 0:
                    tp, allowed = p - 1, p > 0
                elif move == 1:
                    tq, allowed = q - 1, q > 0
                elif move == 2:
                    tp, allowed = p + 1, p < max_p
                elif move == 3:
                    tq, allowed = q + 1, q < max_q
                elif move == 4:
                    tp, tq, allowed = p - 1, q - 1, q > 0 and p > 0
                elif move == 5:
                    tp, tq, allowed = p - 1, q + 1, q < max_q and p > 0
                elif move == 6:
                    tp, tq, allowed = p + 1, q - 1, q > 0 and p < max_p
                elif move == 7:
                    tp, tq, allowed = p + 1, q + 1, q < max_q and p < max_p
                else:
                    tc, allowed = not constant, allowdrift or allowmean
                if allowed and k < nmodels and _newmodel(tp, tq, tc, rp, rq, rc, k):
                    pick = move
                move += 1
            if pick < 0:
                move = 0  # a pass without improvement: another one if it fitted anything
                continue
            src = 5
        # -- fit it (the only call site of arima_fit)
        crit = arima_fit(x, n, tp, d, tq, tc, ic, st, xreg, delta, cand)
        if stepwise:
            rp[k] = tp
            rq[k] = tq
            rc[k] = tc
            k += 1
        if crit < best_ic or src == 0:  # the very first model is the best so far, whatever its ic
            best_ic = crit
            bp, bq, bc = tp, tq, tc
            found = True
            for u in range(tp + tq + 2):
                best[u] = cand[u]
            if src == 1 or src == 4:  # (0, 0); a better model without constant leaves the
                p = q = 0  # search with the constant, as statsforecast does
            elif src == 2 or src == 3:
                p, q = tp, tq
            elif src == 5:
                p, q, constant = tp, tq, tc
                move = 0
    if not found or math.isinf(best_ic):
        return FAILED, 0, 0, 0
    return _finish(best, bp, d, bq, bc), bp, d, bq


@_jit
def fit_order(x, n, p, d, q, st, xreg_buf, delta_buf, best):
    """statsforecast's ``ARIMA(order=(p, d, q))`` with its defaults for one window: ``arima`` by
    CSS-ML with an intercept when d = 0 (``include_mean``), no drift (``include_drift`` is False,
    so a differenced model has no constant), and none of the search's rejections (a root within
    1.01 of the unit circle, a negative coefficient variance): statsforecast returns that fit
    whatever they say. No special case for polynomial windows either: the fit runs. A constant
    window is fitted too, but statsforecast forecasts it as its value with a zero std whatever
    the model: sigma^2 is set to 0 for it, so that the Kalman forecast of the kept model gives
    the same (and the model counts as exact, kept only while the window stays flat).

    Returns the status; ``best`` as :func:`auto_arima` writes it. FAILED where statsforecast
    raises (a window no longer than d) and where the fit is not finite (statsforecast returns it,
    and its forecast is then not finite: the same naive fallback either way).
    """
    if n <= d:
        return FAILED
    delta = delta_buf[: max(d, 1)]
    delta[:] = 0.0
    _set_delta(d, delta)
    constant = d == 0
    arima_fit(x, n, p, d, q, constant, AIC, st, xreg_buf[:n], delta, best)
    _finish(best, p, d, q, constant)
    if _is_constant(x, n):
        best[p + q + 2] = 0.0
    for i in range(p + q + 3):
        if not math.isfinite(best[i]):
            return FAILED
    return OK


@_jit
def _finish(best, p, d, q, constant):
    """Lay the best candidate's regressor coefficient out as (intercept, drift, sigma^2)."""
    beta = best[p + q]
    sigma2 = best[p + q + 1]
    has = constant and d <= 1
    best[p + q] = beta if (has and d == 0) else 0.0
    best[p + q + 1] = beta if (has and d == 1) else 0.0
    best[p + q + 2] = sigma2
    return OK


@_jit
def _select_into(x, s, settings, st, xreg, delta, best, outs):
    """:func:`auto_arima` (or :func:`fit_order` of the order max_p, max_d, max_q when ``fixed``)
    on window ``x`` with ``settings`` (:func:`_select_chunk`), written at row ``s`` of the batch
    outputs."""
    out_status, out_orders, out_phi, out_theta, out_delta, out_mu, out_drift, out_sigma2 = outs
    n = len(x)
    max_p, max_q, max_d, ic, stepwise, allowdrift, allowmean, fixed = settings
    if fixed:
        p, d, q = max_p, max_d, max_q
        status = fit_order(x, n, p, d, q, st, xreg, delta, best)
    else:
        status, p, d, q = auto_arima(
            x, n, max_p, max_q, max_d, ic, stepwise, allowdrift, allowmean, st, xreg, delta, best
        )
    out_status[s] = status
    out_phi[s, :] = 0.0
    out_theta[s, :] = 0.0
    out_delta[s, :] = 0.0
    if status != OK:
        out_orders[s, 0] = out_orders[s, 1] = out_orders[s, 2] = -1
        out_mu[s] = out_drift[s] = out_sigma2[s] = 0.0
        return
    out_orders[s, 0] = p
    out_orders[s, 1] = d
    out_orders[s, 2] = q
    for i in range(p):
        out_phi[s, i] = best[i]
    for i in range(q):
        out_theta[s, i] = best[p + i]
    delta = np.zeros(max(d, 1))
    _set_delta(d, delta)
    for i in range(d):
        out_delta[s, i] = delta[i]
    out_mu[s] = best[p + q]
    out_drift[s] = best[p + q + 1]
    out_sigma2[s] = best[p + q + 2]


#: Series per parallel task: each task allocates its own workspace, so results do not depend on
#: the number of threads or on which thread ran a series.
CHUNK = 4


@_jit
def _select_chunk(data, indptr, rows, lo, hi, n_max, settings, outs):
    """:func:`_select_into` for ``rows[lo:hi]`` with one fresh workspace, passed down borrowed
    (:func:`_borrow`): the owners below stay referenced until the loop is done. ``settings``:
    max_p, max_q, max_d, ic, stepwise, allowdrift, allowmean, fixed (fit the order max_p, max_d,
    max_q instead of searching)."""
    max_p, max_q, max_d = settings[0], settings[1], settings[2]
    vmax = max_p + max_q + 1
    owned = workspace(n_max, vmax, max(max_p, max_q + 1) + max_d)
    xreg_owned = np.empty(n_max)
    delta_owned = np.zeros(max(max_d, 1))
    st = _borrowed(owned)
    xreg = _borrow(xreg_owned)
    delta = _borrow(delta_owned)
    best = np.zeros(vmax + 3)
    for k in range(lo, hi):
        s = rows[k]
        x = _borrow(data[indptr[s] : indptr[s + 1]])
        _select_into(x, s, settings, st, xreg, delta, best, outs)
    # the last use of the owners: numba frees an array after its last use, and the views must
    # not outlive them
    return owned[0].size + xreg_owned.size + delta_owned.size


@numba.njit(cache=True, error_model="numpy", parallel=True)
def _batch(data, indptr, rows, settings, outs):
    """:func:`_select_chunk` over ``rows`` in chunks of CHUNK spread over numba's threads (as the
    GP kernels; each window is fitted on its own, so threads share nothing)."""
    n_max = 1
    for k in range(len(rows)):
        s = rows[k]
        n_max = max(n_max, indptr[s + 1] - indptr[s])
    for chunk in numba.prange((len(rows) + CHUNK - 1) // CHUNK):
        lo = chunk * CHUNK
        _select_chunk(data, indptr, rows, lo, min(len(rows), lo + CHUNK), n_max, settings, outs)


@_jit
def auto_arima_batch(
    data,
    indptr,
    rows,
    max_p,
    max_q,
    max_d,
    ic,
    stepwise,
    allowdrift,
    allowmean,
    out_status,
    out_orders,
    out_phi,
    out_theta,
    out_delta,
    out_mu,
    out_drift,
    out_sigma2,
):
    """Select and fit an ARIMA for each series in ``rows`` (statsforecast's AutoARIMA,
    non-seasonal), one call for the batch, the series spread over numba's threads (:func:`_batch`).

    data, indptr: the windows (a GroupedArray's arrays), float64, no NaN. max_p, max_q, max_d,
    ic (AIC/AICC/BIC), stepwise, allowdrift, allowmean: AutoARIMA's settings.
    Outputs, written at ``rows``: out_status (S,) int8 OK/FAILED; out_orders (S, 3) int64 p, d, q;
    out_phi (S, >= max_p), out_theta (S, >= max_q), out_delta (S, >= max_d) the polynomials
    padded with zeros; out_mu, out_drift, out_sigma2 (S,).
    """
    outs = (out_status, out_orders, out_phi, out_theta, out_delta, out_mu, out_drift, out_sigma2)
    settings = (max_p, max_q, max_d, ic, stepwise, allowdrift, allowmean, False)
    _batch(data, indptr, rows, settings, outs)


@_jit
def arima_order_batch(
    data,
    indptr,
    rows,
    p,
    d,
    q,
    out_status,
    out_orders,
    out_phi,
    out_theta,
    out_delta,
    out_mu,
    out_drift,
    out_sigma2,
):
    """Fit the ARIMA of order (p, d, q) to each series in ``rows`` as statsforecast's
    ``ARIMA(order=(p, d, q))`` does (:func:`fit_order`), one call for the batch, the series
    spread over numba's threads (:func:`_batch`). Inputs and outputs as
    :func:`auto_arima_batch`'s (the outputs' widths at least p, q and d)."""
    outs = (out_status, out_orders, out_phi, out_theta, out_delta, out_mu, out_drift, out_sigma2)
    settings = (p, q, d, AIC, False, False, False, True)
    _batch(data, indptr, rows, settings, outs)
