"""CORP's prediction of allocated-but-unused resource (Liu, Shen and Chen, section III-A).

Per job and resource, at a prediction time t, from the job's utilisation history:

1. **DNN** (III-A-1-a): a multilayer perceptron fed the utilisation of the last ``window`` (the
   paper's Delta) slots predicts the unused amount over the next ``horizon`` (the paper's L) slots,
   the window DeltaW = (t, t + L]. One network serves every job: inputs and target are fractions of
   the job's allocation (request), so jobs of all sizes share the weights, and it is trained once on
   the windows of all the jobs handed to :meth:`UnusedPredictor.fit` (the paper trains on the
   historical data of many jobs). Table II: 4 hidden layers (h) of 50 units (N_n), sigmoid units
   (eq. 5); trained "until the validation set error converges" (scikit-learn's early stopping on a
   held-out fraction).
2. **HMM** (III-A-1-b): the history of unused amounts is cut into windows of L slots, each window
   is given a symbol (peak, center, valley; see :func:`symbols`), a 3-state x 3-symbol categorical
   HMM is initialised from the counts of the labelled history, re-estimated by Baum-Welch, decoded
   by Viterbi, and the next symbol is the argmax of eq. 17. The DNN output is then corrected by
   ``min(h - m, m - l)`` (see :func:`correction`).
3. **Confidence bound** (eq. 18-19): the reallocatable amount is the lower end of the interval,
   ``u_hat - sigma_hat * z``, clipped at 0, with ``sigma_hat`` the deviation of the eq. 20 errors.
4. **Unlock rule** (eq. 21): the amount may be lent out when ``Pr(0 <= delta < eps) >= P_th``
   under a Gaussian model of the prediction error delta (:func:`unlockable`).

Defaults. Table II gives the network shape, H = 3, P_th = 0.95, theta = 5 %-30 % and
eta = 50 %-90 %; it gives neither Delta, L nor eps. L: the paper predicts a 1-minute window on a
trace resampled to 10-second slots, so L = 6 slots; we keep L = 6 slots (on the shipped 5-minute
samples that is 30 minutes). Delta = 12 slots (two windows) and eps = 10 % of the request are our
choices. Confidence: eta = 0.95 (theta = 5 %, the low end of Table II's theta range; the paper's
two ranges disagree, eta = 1 - theta). Under the Gaussian model the lower bound leaves
``Pr(delta >= 0) = 1 - theta / 2``, so with P_th = 0.95 nothing can ever be unlocked unless
theta < 10 %, i.e. eta > 0.9; eta = 0.95 is the smallest round level inside Table II's theta range
for which the rule can fire.

Units: every public output is in the series' own units (cores, GiB, percent); internally the work is
in fractions of the request. "Unused" is ``request - usage`` and can be negative when a job uses
more than it asked for; predictions are clipped to [0, request].
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

from reclaim.core.component import Component
from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import (
    Forecast,
    Forecaster,
    ForecastError,
    check_horizon,
    check_keys,
    validate_series,
)
from reclaim.registry import register

# symbol codes: the paper's 1, 2, 3 (peak, center, valley) minus one
PEAK, CENTER, VALLEY = 0, 1, 2
# hidden states, paired with the symbols they emit most (section III-A-1-b, Figure 3)
OVER, NORMAL, UNDER = 0, 1, 2


# --------------------------------------------------------------------------------------------
# symbols, HMM, correction, bound, unlock rule: pure functions on one series or arrays


def symbols(
    unused: ArrayLike, window: int, statistic: str = "level", over: str = "slots"
) -> tuple[NDArray[np.int8], NDArray[np.int8], tuple[float, float]]:
    """Peak/center/valley symbols and OP/NP/UP state labels of a history of unused amounts.

    unused: (n,) float, unused amount per slot (any units). window: L, slots per observation.
    Returns (symbols (T,) int8, states (T,) int8, (lo, hi)) with T = n // L, the oldest
    ``n % L`` slots dropped so that the last symbol describes the most recent window.

    The paper (III-A-1-b) splits [min, max] of the unused amounts at
    ``lo = min + (m - min) / 2`` and ``hi = m + (max - m) / 2`` (m = mean). Observation slots are
    L slots apart; the window between two of them holds L slots, i.e. L - 1 sub-windows, and gives
    the symbol of its closing slot: a value in ``[min, lo]`` is a **valley**, in ``(lo, hi)`` a
    **center**, otherwise a **peak**. States are labelled by the symbol they emit: peak ->
    over-provisioning (much unused), center -> normal, valley -> under-provisioning.

    Where the text is ambiguous or self-contradictory we chose, and say so:

    * The text first names the three sub-intervals, lowest first, "peak, center, valley,
      respectively", and then classifies a value in the lowest one as a valley. We follow the
      classification rule: it is the only reading consistent with the state pairing (peak ->
      over-provisioning, i.e. much unused) and with the correction (a predicted peak *raises* the
      predicted unused amount). Peak and valley thus refer to the unused amount, not to demand.
    * The value classified. The text's Delta_j is ``max - min`` of the unused amount inside the
      window, a spread compared against intervals of amounts. ``statistic="range"`` does exactly
      that (a spread below ``min`` counts as a valley, not as "otherwise" a peak). The default
      ``statistic="level"`` classifies the window's mean unused amount, which is what the rest of
      the section predicts ("whether the amount of unused resource will be in the peak or valley at
      t + L") and what the correction by the distance of peak and valley from the mean assumes.
    * A flat history (max == min) has no peak or valley: every window is a center.
    * ``over="windows"``: min, mean and max are those of the window means instead of the slots
      (the thresholds then describe the quantity classified by ``"level"``; the history must be
      whole windows).
    """
    u = np.asarray(unused, dtype=np.float64).reshape(-1)
    if window < 1:
        raise ForecastError(f"symbols: window must be >= 1 slot, got {window}")
    if statistic not in ("level", "range"):
        raise ForecastError(f"symbols: statistic must be 'level' or 'range', got {statistic!r}")
    n_obs = len(u) // window
    ref = u
    if over == "windows" and n_obs:
        ref = u[len(u) - n_obs * window :].reshape(n_obs, window).mean(axis=1)
    lo_v, mean, hi_v = float(ref.min()), float(ref.mean()), float(ref.max())
    lo = lo_v + 0.5 * (mean - lo_v)
    hi = mean + 0.5 * (hi_v - mean)
    if n_obs == 0:
        empty = np.empty(0, np.int8)
        return empty, empty.copy(), (lo, hi)
    blocks = u[len(u) - n_obs * window :].reshape(n_obs, window)
    value = blocks.mean(axis=1) if statistic == "level" else np.ptp(blocks, axis=1)
    sym = np.full(n_obs, CENTER, np.int8)
    if hi_v > lo_v:
        sym[value <= lo] = VALLEY
        sym[value >= hi] = PEAK
    states = sym.copy()  # PEAK->OVER, CENTER->NORMAL, VALLEY->UNDER share codes 0, 1, 2
    return sym, states, (lo, hi)


def counted_hmm(
    sym: NDArray[np.integer], states: NDArray[np.integer], pseudocount: float = 1.0
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(pi (3,), A (3, 3), B (3, 3)) counted from a labelled history, plus ``pseudocount`` per cell.

    pi from the first state, A from consecutive state pairs, B from (state, symbol) pairs (eq.
    9-11). The pseudocount keeps every probability positive: Baum-Welch can never move a zero, and
    with states labelled by their symbol the raw B is the identity.
    """
    pi = np.full(3, pseudocount)
    a = np.full((3, 3), pseudocount)
    b = np.full((3, 3), pseudocount)
    if len(states):
        pi[states[0]] += 1.0
        np.add.at(a, (states[:-1], states[1:]), 1.0)
        np.add.at(b, (states, sym), 1.0)
    return pi / pi.sum(), a / a.sum(1, keepdims=True), b / b.sum(1, keepdims=True)


def hmm_next_symbol(
    sym: NDArray[np.integer],
    states: NDArray[np.integer],
    n_iter: int = 20,
    pseudocount: float = 1.0,
    seed: int = 0,
    backend: str = "numba",
    tol: float = 1e-4,
) -> tuple[int, int, NDArray[np.float64]]:
    """Next fluctuation symbol of one series: (symbol, current state q_T*, E_P (3,)).

    A 3-state x 3-symbol categorical HMM started from :func:`counted_hmm`, re-estimated by
    Baum-Welch (at most ``n_iter`` steps, until the log-likelihood gains less than ``tol``), Viterbi
    for the current state q_T*, then eq. 17: ``E_P(k) = sum_j A[q_T*, j] * B[j, k]``. A tie between
    center and another symbol goes to center (no correction), otherwise to the lower code.
    backend: "hmmlearn" (CategoricalHMM, the reference; ``seed`` is its random_state, unused since
    every parameter is initialised by hand) or "numba" (:mod:`._corp_kernels`, the same iteration,
    about a hundred times faster).
    """
    pi, a, b = counted_hmm(sym, states, pseudocount)
    x = np.asarray(sym, dtype=np.int64)
    if backend == "numba":
        from reclaim.forecast._corp_kernels import next_symbol_probs

        q_t, p, _, _ = next_symbol_probs(x, pi, a, b, int(n_iter), float(tol))
        q_t = int(q_t)
    elif backend == "hmmlearn":
        from hmmlearn.hmm import CategoricalHMM  # imported here: hmmlearn is slow to import

        model = CategoricalHMM(
            n_components=3,
            n_features=3,
            n_iter=n_iter,
            tol=tol,
            params="ste",
            init_params="",
            random_state=seed,
        )
        model.startprob_, model.transmat_, model.emissionprob_ = pi, a, b
        hmm_log = logging.getLogger("hmmlearn.base")
        hmm_log.addFilter(_quiet_degenerate)  # short histories are expected; the prior helps
        try:
            model.fit(x.reshape(-1, 1))
        finally:
            hmm_log.removeFilter(_quiet_degenerate)
        _, path = model.decode(x.reshape(-1, 1), algorithm="viterbi")
        q_t = int(path[-1])
        p = model.transmat_[q_t] @ model.emissionprob_
    else:
        raise ForecastError(f"hmm backend must be 'numba' or 'hmmlearn', got {backend!r}")
    nxt = CENTER if p[CENTER] >= p.max() else int(np.argmax(p))
    return nxt, q_t, p


def _quiet_degenerate(record: logging.LogRecord) -> bool:
    return "degenerate solution" not in record.getMessage()


def correction(unused: ArrayLike, symbol: ArrayLike, window: int = 1) -> NDArray[np.float64]:
    """Signed correction added to the DNN's prediction: (S,) in the units of ``unused``.

    ``unused``: (S, n) history of unused amounts (or (n,) for one series); ``symbol``: (S,)
    predicted next symbol. With h, m, l the max, mean and min of the history, the paper adds
    ``min(h - m, m - l)`` for a predicted **peak** of unused resource and subtracts it for a
    **valley** ("if the predicted observation symbol ... falls in the valley, CORP reduces the
    predicted amount"); a center leaves it unchanged. Peak/valley are of the unused amount (see
    :func:`symbols`): a demand peak is an unused valley, so the predicted lendable amount shrinks.
    ``window`` > 1: h, m, l are taken over the means of consecutive ``window``-slot blocks (n must
    be a multiple), the quantity the DNN predicts (``hmm_extremes="windows"``).
    """
    u = np.atleast_2d(np.asarray(unused, dtype=np.float64))
    if window > 1:
        u = u.reshape(len(u), -1, int(window)).mean(axis=2)
    s = np.atleast_1d(np.asarray(symbol))
    m = u.mean(axis=1)
    size = np.minimum(u.max(axis=1) - m, m - u.min(axis=1))
    sign = np.where(s == PEAK, 1.0, np.where(s == VALLEY, -1.0, 0.0))
    return sign * size


def confidence_z(confidence: float) -> float:
    """z_{theta/2} of eq. 18 for confidence eta = 1 - theta, taken as the positive critical value.

    The paper calls it "the value for the 100 theta/2 percentile in the standard normal", which
    read literally is negative and would *raise* the bound of eq. 19; a two-sided interval of
    level eta has half-width ``sigma * Phi^-1(1 - theta/2)``, which is what we use (1.96 at 0.95).
    """
    if not 0.0 < confidence < 1.0:
        raise ForecastError(f"confidence must lie in (0, 1), got {confidence}")
    return float(ndtri(1.0 - (1.0 - confidence) / 2.0))


def lower_bound(u_hat: ArrayLike, sigma: ArrayLike, confidence: float) -> NDArray[np.float64]:
    """Eq. 19: ``u_hat - sigma * z_{theta/2}``, clipped at 0 (no negative amount is lent).

    u_hat, sigma: broadcastable arrays in the same units; returns their broadcast shape.
    """
    z = confidence_z(confidence)
    out = np.asarray(u_hat, np.float64) - np.asarray(sigma, np.float64) * z
    return np.maximum(out, 0.0)


def unlockable(
    sigma: ArrayLike, epsilon: ArrayLike, p_threshold: float = 0.95, mean: ArrayLike = 0.0
) -> NDArray[np.bool_]:
    """Eq. 21: ``Pr(0 <= delta < eps) >= P_th`` for delta ~ Normal(mean, sigma^2).

    delta = actual unused - predicted (eq. 20), so delta >= 0 means the amount lent out was really
    free and delta < eps that little was wasted. ``mean`` is the expected error of the amount that
    is lent: 0 for an unbiased point prediction, ``z * sigma`` for the eq. 19 lower bound of one.
    sigma, epsilon, mean: broadcastable, same units; sigma = 0 means delta == mean exactly and
    sigma = inf never unlocks. Returns a bool array of the broadcast shape.
    """
    sigma, eps, mu = np.broadcast_arrays(
        np.asarray(sigma, np.float64), np.asarray(epsilon, np.float64), np.asarray(mean, np.float64)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        prob = ndtr((eps - mu) / sigma) - ndtr(-mu / sigma)
    exact = (mu >= 0) & (mu < eps)
    prob = np.where(sigma == 0, exact.astype(np.float64), prob)
    prob = np.where(np.isinf(sigma), 0.0, prob)
    return np.asarray(prob >= p_threshold)


# --------------------------------------------------------------------------------------------
# the batched predictor


@dataclass(frozen=True, slots=True)
class UnusedPrediction:
    """CORP's outputs per series for the window (t, t + L] after the end of each history.

    All (S,) float64 in the series' units unless said otherwise.
    dnn: the DNN's prediction of the unused amount (mean over the window).
    corrected: ``dnn`` + the HMM correction (``u_hat_{t+L}``), clipped to [0, request].
    lower: eq. 19 lower bound of ``corrected``, clipped at 0: the amount CORP would lend.
    sigma: sigma_hat, deviation of the eq. 20 per-slot errors of ``corrected``.
    symbol: (S,) int8, predicted next symbol (PEAK 0, CENTER 1, VALLEY 2).
    unlock: (S,) bool, eq. 21 holds for ``lower``.
    fallback: (S,) bool, history shorter than the DNN's input window: ``dnn`` and ``corrected``
    are the history's mean unused amount, ``lower`` is 0 and nothing is unlocked.
    request: (S,) the allocation the fractions were taken of.
    """

    dnn: NDArray[np.float64]
    corrected: NDArray[np.float64]
    lower: NDArray[np.float64]
    sigma: NDArray[np.float64]
    symbol: NDArray[np.int8]
    unlock: NDArray[np.bool_]
    fallback: NDArray[np.bool_]
    request: NDArray[np.float64]


class UnusedPredictor(Component):
    """CORP's unused-resource predictor over a batch of jobs (one resource).

    Settings (stored only; see the module docstring for where each default comes from):
    window: Delta, input slots. horizon: L, slots predicted (the window DeltaW).
    hidden_layer_sizes, max_iter, validation_fraction: the MLP (Table II: 4 x 50, sigmoid).
    confidence: eta of eq. 18. epsilon: eq. 21 tolerance, fraction of the request.
    p_threshold: P_th of eq. 21. statistic: what :func:`symbols` classifies.
    hmm: apply the HMM correction. hmm_iter: Baum-Welch steps. hmm_backend: "numba" (every
    series and origin in one compiled call) or "hmmlearn" (per series, see
    :func:`hmm_next_symbol`). hmm_extremes: what the symbol thresholds (min, mean, max) and the
    correction ``min(h - m, m - l)`` are taken over: "slots" (the per-slot history, the paper's
    words) or "windows" (the means of the L-slot windows, the quantity the "level" symbols
    classify and the DNN predicts; see docs/corp.md for what each does to the error). hmm_tol: Baum-Welch stops when the log-likelihood gains less (1e-2,
    hmmlearn's default; against 1e-4 the predicted symbol agrees on 99.9 % of 5,440 Google 2019
    histories and the HMM costs a third less, ``benchmarks/bench_corp_predict.py``).
    hmm_history: at most this many
    L-slot windows of history feed the HMM (caps work on long series). min_symbols: fewer windows
    than this and the HMM is skipped (no correction) for that series.
    sigma_windows: the last this-many windows of each history are held out; the eq. 20 errors of
    the full pipeline there give that series' sigma_hat, shrunk towards the pooled one by
    ``sigma_prior`` pseudo-errors (sigma_s^2 = (n_s v_s + k v_pool) / (n_s + k), v = mean squared
    error; the bias counts as error). max_train_windows: cap on DNN training windows (the most
    recent of each series are kept). seed: the MLP's and the HMM's random_state.

    Learned (after fit): network_, sigma_pool_ (fraction of request), n_train_.
    """

    def __init__(
        self,
        window: int = 12,
        horizon: int = 6,
        hidden_layer_sizes: tuple[int, ...] = (50, 50, 50, 50),
        confidence: float = 0.95,
        epsilon: float = 0.1,
        p_threshold: float = 0.95,
        statistic: str = "level",
        hmm: bool = True,
        hmm_iter: int = 20,
        hmm_backend: str = "numba",
        hmm_history: int = 48,
        min_symbols: int = 6,
        sigma_windows: int = 3,
        sigma_prior: float = 6.0,
        max_train_windows: int = 20_000,
        max_iter: int = 300,
        validation_fraction: float = 0.1,
        seed: int = 0,
        hmm_extremes: str = "slots",
        hmm_tol: float = 1e-2,
    ) -> None:
        self.hmm_tol = hmm_tol
        self.window = window
        self.horizon = horizon
        self.hidden_layer_sizes = hidden_layer_sizes
        self.confidence = confidence
        self.epsilon = epsilon
        self.p_threshold = p_threshold
        self.statistic = statistic
        self.hmm = hmm
        self.hmm_iter = hmm_iter
        self.hmm_backend = hmm_backend
        self.hmm_extremes = hmm_extremes
        self.hmm_history = hmm_history
        self.min_symbols = min_symbols
        self.sigma_windows = sigma_windows
        self.sigma_prior = sigma_prior
        self.max_train_windows = max_train_windows
        self.max_iter = max_iter
        self.validation_fraction = validation_fraction
        self.seed = seed

    # ---- fitting

    def fit(self, usage: GroupedArray, request: ArrayLike | None = None) -> Self:
        """Train the DNN on the windows of every series, then pool sigma_hat.

        usage: S series of usage per slot (units of the resource). request: (S,) allocation per
        series, same units; default each series' largest usage (a stand-in when the allocation is
        unknown). The last ``sigma_windows * horizon`` slots of each series are kept out of the
        training windows; the errors there give the pooled sigma_hat.
        """
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPRegressor

        util, req = self._fractions(usage, request)
        delta, big_l = int(self.window), int(self.horizon)
        cap = max(1, math.ceil(self.max_train_windows / max(len(util), 1)))
        xs, ys = [], []
        for u in util:
            last = len(u) - self.sigma_windows * big_l - big_l  # last origin whose target is free
            if last < delta:
                continue
            origins = np.arange(delta, last + 1)[-cap:]
            xs.append(_inputs(u, origins, delta))
            ys.append(_targets(1.0 - u, origins, big_l))
        x = np.concatenate(xs) if xs else np.empty((0, delta))
        y = np.concatenate(ys) if ys else np.empty(0)
        self.n_train_ = len(y)
        self.network_ = None
        if len(y) >= 20:
            early = len(y) * self.validation_fraction >= 5  # a held-out set worth the name
            net = MLPRegressor(
                hidden_layer_sizes=tuple(self.hidden_layer_sizes),
                activation="logistic",
                solver="adam",
                max_iter=self.max_iter,
                early_stopping=early,
                validation_fraction=self.validation_fraction,
                n_iter_no_change=10,
                random_state=self.seed,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                self.network_ = net.fit(x, y)
        # pooled sigma_hat: eq. 20 errors at the held-out origins of every series
        flat = _Flat.of(util)
        sq, count = self._validation_errors(flat)
        sq, count = float(sq.sum()), int(count.sum())
        if count == 0:  # no held-out window anywhere: the spread of the unused amounts
            every = flat.u if len(flat.u) else np.zeros(1)
            sq, count = float(np.sum((every - every.mean()) ** 2)), every.size
        self.sigma_pool_ = math.sqrt(sq / max(count, 1))
        self.request_ = req
        self.util_ = util
        return self

    # ---- prediction

    def predict(
        self, usage: GroupedArray | None = None, request: ArrayLike | None = None
    ) -> UnusedPrediction:
        """Predict the window after the end of each history (default: the fitted ones).

        Batched: every series' DNN input, HMM (one compiled call for all series and held-out
        origins) and eq. 20 errors are array operations over the whole batch; no Python step
        runs per series (``hmm_backend="hmmlearn"`` excepted).
        """
        if not hasattr(self, "sigma_pool_"):
            raise ForecastError("UnusedPredictor: call fit before predict")
        reach = self._reach()
        if usage is None:
            flat, req = _Flat.of([u[-reach:] for u in self.util_]), self.request_
        else:
            flat, req = self._flat_fractions(usage, request, reach)
        n = len(req)
        ends = flat.lengths
        usable = ends >= self.window
        series = np.flatnonzero(usable)
        dnn, corr, sym = self._point(flat, series, ends[series])
        # per-series sigma_hat from the held-out windows, shrunk towards the pool
        sq, count = self._validation_errors(flat)
        k = float(self.sigma_prior)
        pool = self.sigma_pool_**2
        sigma = np.sqrt(np.where(count > 0, (sq + k * pool) / (count + k), pool))
        dnn_f = np.zeros(n)  # fallbacks: the mean unused fraction of their (short) history
        for i in np.flatnonzero(~usable & (ends > 0)):
            dnn_f[i] = 1.0 - flat.u[flat.indptr[i] : flat.indptr[i + 1]].mean()
        dnn_f[series] = dnn
        corr_f = np.zeros(n)
        corr_f[series] = corr
        sym_f = np.full(n, CENTER, np.int8)
        sym_f[series] = sym
        dnn_f = np.clip(dnn_f, 0.0, 1.0)
        point = np.clip(dnn_f + corr_f, 0.0, 1.0)
        low = lower_bound(point, sigma, self.confidence)
        low = np.where(usable, low, 0.0)
        z = confidence_z(self.confidence)
        unlock = unlockable(sigma, self.epsilon, self.p_threshold, mean=z * sigma) & usable
        return UnusedPrediction(
            dnn=dnn_f * req,
            corrected=point * req,
            lower=low * req,
            sigma=sigma * req,
            symbol=sym_f,
            unlock=unlock,
            fallback=~usable,
            request=req,
        )

    # ---- internals (fractions of the request throughout)

    def _requests(self, usage: GroupedArray, request: ArrayLike | None) -> NDArray[np.float64]:
        data = validate_series(usage, "corp")
        if request is None:
            lengths = usage.lengths
            top = np.full(len(usage), np.nan)
            has = lengths > 0
            if has.any():
                top[has] = np.maximum.reduceat(data, usage.indptr[:-1][has])
            req = top
        else:
            req = np.asarray(request, np.float64).reshape(-1)
            if len(req) != len(usage):
                raise ForecastError(f"corp: {len(usage)} series but {len(req)} requests")
        return np.where(np.isfinite(req) & (req > 0), req, 1.0)  # idle or unknown: units as given

    def _fractions(
        self, usage: GroupedArray, request: ArrayLike | None
    ) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
        flat, req = self._flat_fractions(usage, request)
        return [flat.u[flat.indptr[i] : flat.indptr[i + 1]] for i in range(len(req))], req

    def _flat_fractions(
        self, usage: GroupedArray, request: ArrayLike | None, reach: int | None = None
    ) -> tuple[_Flat, NDArray[np.float64]]:
        """Fractions of the request, flat; ``reach``: only the last this-many slots of each series
        (the request is still taken over the whole series)."""
        req = self._requests(usage, request)
        if reach is not None:
            usage = usage.tails(reach)
        data = np.asarray(usage.data, np.float64)
        indptr = np.asarray(usage.indptr, np.int64)
        u = data[indptr[0] : indptr[-1]] / np.repeat(req, np.diff(indptr))
        return _Flat(u, indptr - indptr[0]), req

    def _reach(self) -> int:
        """Slots before a series' end that :meth:`predict` reads: the DNN input or the HMM history
        before each held-out origin and the prediction origin. Speed: dividing only those by the
        request, not whole histories (2,000 Bitbrains histories of 4,026 slots, without the HMM:
        79,000 -> 130,000 series/s)."""
        big_l = int(self.horizon)
        return int(self.sigma_windows) * big_l + max(
            int(self.window), int(self.hmm_history) * big_l, 1
        )

    def _point(
        self, flat: _Flat, series: NDArray[np.int64], origins: NDArray[np.int64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int8]]:
        """DNN prediction, HMM correction and symbol for each task (series[k], origins[k]):
        (K,) each, fractions. An origin t >= window predicts (t, t + L] of its series. Every
        input window goes through the network in one call, every HMM in one compiled call."""
        delta = int(self.window)
        starts = flat.indptr[series]
        x = flat.u[(starts + origins - delta)[:, None] + np.arange(delta)]
        if self.network_ is not None and len(x):
            with _one_blas_thread():
                dnn = self.network_.predict(x)
        else:  # no network (too little to train on): the mean unused fraction of the input
            dnn = 1.0 - x.mean(axis=1) if len(x) else np.zeros(0)
        k = len(series)
        if not self.hmm or not k:
            return dnn, np.zeros(k), np.full(k, CENTER, np.int8)
        if self.hmm_backend == "numba":
            sym, corr = self._hmm_batch(flat, starts, starts + origins)
            return dnn, corr, sym
        sym, corr = np.full(k, CENTER, np.int8), np.zeros(k)
        for j, (a, b) in enumerate(zip(starts, starts + origins, strict=True)):
            sym[j], corr[j] = self._hmm_correction(1.0 - flat.u[a:b])
        return dnn, corr, sym

    def _extremes_window(self) -> int:
        if self.hmm_extremes not in ("slots", "windows"):
            raise ForecastError(
                f"hmm_extremes must be 'slots' or 'windows', got {self.hmm_extremes!r}"
            )
        return int(self.horizon) if self.hmm_extremes == "windows" else 1

    def _hmm_batch(
        self, flat: _Flat, starts: NDArray[np.int64], ends: NDArray[np.int64]
    ) -> tuple[NDArray[np.int8], NDArray[np.float64]]:
        """(symbols (K,), corrections (K,)) for the histories ``u[starts[k]:ends[k]]``, by
        :func:`reclaim.forecast._corp_kernels.hmm_corrections`: the same steps as
        :meth:`_hmm_correction`, compiled and without a Python call per series."""
        from reclaim.forecast._corp_kernels import hmm_corrections

        if self.statistic not in ("level", "range"):
            raise ForecastError(f"statistic must be 'level' or 'range', got {self.statistic!r}")
        if self.hmm_backend not in ("numba", "hmmlearn"):
            raise ForecastError(
                f"hmm backend must be 'numba' or 'hmmlearn', got {self.hmm_backend!r}"
            )
        return hmm_corrections(
            1.0 - flat.u,
            np.ascontiguousarray(starts, np.int64),
            np.ascontiguousarray(ends, np.int64),
            int(self.horizon),
            int(self.hmm_history),
            int(self.min_symbols),
            0 if self.statistic == "level" else 1,
            int(self._extremes_window() > 1),
            int(self.hmm_iter),
            float(self.hmm_tol),
        )

    def _hmm_correction(self, unused: NDArray[np.float64]) -> tuple[int, float]:
        """Per-series reference of :meth:`_hmm_batch` (and the hmmlearn path)."""
        big_l = int(self.horizon)
        hist = unused[-int(self.hmm_history) * big_l :]
        hist = hist[len(hist) % big_l :]  # whole windows, the same slots for thresholds and symbols
        if len(hist) < max(self.min_symbols, 1) * big_l or np.ptp(hist) == 0:
            return CENTER, 0.0  # too short for an HMM, or flat: no fluctuation to predict
        over = "windows" if self._extremes_window() > 1 else "slots"
        sym, states, _ = symbols(hist, big_l, self.statistic, over)
        nxt, _, _ = hmm_next_symbol(
            sym, states, self.hmm_iter, seed=self.seed, backend=self.hmm_backend, tol=self.hmm_tol
        )
        return nxt, float(correction(hist, [nxt], self._extremes_window())[0])

    def _validation_errors(self, flat: _Flat) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Eq. 20 errors (actual - predicted, per slot) at each series' held-out origins:
        per series (sum of squared errors (S,), number of errors (S,)).

        The origins are the starts of the last ``sigma_windows`` windows of L slots of each series
        (those with a full input window).
        """
        big_l, delta = int(self.horizon), int(self.window)
        n = len(flat.lengths)
        back = big_l * np.arange(self.sigma_windows, 0, -1, dtype=np.int64)
        origins = flat.lengths[:, None] - back[None, :]  # (S, sigma_windows)
        ok = origins >= delta
        series = np.nonzero(ok)[0]
        o = origins[ok]
        if not len(o):
            return np.zeros(n), np.zeros(n, np.int64)
        dnn, corr, _ = self._point(flat, series, o)
        pred = np.clip(np.clip(dnn, 0.0, 1.0) + corr, 0.0, 1.0)
        actual = 1.0 - flat.u[(flat.indptr[series] + o)[:, None] + np.arange(big_l)]  # (K, L)
        sq = ((actual - pred[:, None]) ** 2).sum(axis=1)
        return np.bincount(series, weights=sq, minlength=n), np.bincount(
            series, minlength=n
        ).astype(np.int64) * big_l


_BLAS: list[Any] = []


def _one_blas_thread():
    """Context: BLAS on one thread. Speed: the network's products are small (a few hundred rows
    x 50); multi-threaded OpenBLAS spent 9 ms per product waking threads on a shared 2-core
    machine, one thread 0.3 ms (``benchmarks/bench_corp_predict.py``, 359 histories: 2,000 ->
    10,000 series/s). The controller is built once (listing the loaded libraries is slow)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


@dataclass(frozen=True, slots=True)
class _Flat:
    """Utilisation fractions of S series, flat: u (sum lengths,) float64, indptr (S + 1,)."""

    u: NDArray[np.float64]
    indptr: NDArray[np.int64]

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.indptr)

    @classmethod
    def of(cls, util: list[NDArray[np.float64]]) -> _Flat:
        lengths = np.array([len(u) for u in util], np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        u = np.concatenate(util).astype(np.float64) if len(util) else np.zeros(0)
        return cls(u, indptr)


def _windows(u: NDArray[np.float64], starts: NDArray[np.int64], width: int) -> NDArray[np.float64]:
    """(len(starts), width) slices ``u[s : s + width]``."""
    return u[starts[:, None] + np.arange(width)]


def _inputs(u: NDArray[np.float64], origins: NDArray[np.int64], delta: int) -> NDArray[np.float64]:
    """DNN inputs: utilisation of the ``delta`` slots before each origin, (k, delta)."""
    return _windows(u, np.asarray(origins) - delta, delta)


def _targets(unused: NDArray[np.float64], origins: NDArray[np.int64], big_l: int) -> NDArray:
    """DNN targets: mean unused fraction over (t, t + L] for each origin t, (k,)."""
    return _windows(unused, np.asarray(origins), big_l).mean(axis=1)


# --------------------------------------------------------------------------------------------
# the shared Forecaster interface


@register("forecaster", "corp")
class Corp(Forecaster):
    """CORP as a forecaster of **usage**: a thin adapter over :class:`UnusedPredictor`.

    The forecaster interface carries no allocation, so the request of each series is taken as its
    largest observed usage (``request=None`` of :meth:`UnusedPredictor.fit`); the DNN is trained on
    the batch it is given. mean (S, h) = request - corrected unused prediction, the same for every
    step (CORP predicts one amount for the window of L slots and is re-run every L slots; steps
    beyond L repeat it); std (S, h) = sigma_hat, the deviation of the per-slot errors (eq. 20), so
    ``quantile(1 - theta/2)`` is request minus the eq. 19 lower bound on unused. Series shorter
    than ``window`` are flagged fallbacks (mean = their mean usage, std = the pooled sigma_hat).
    ``keys`` are accepted and ignored: the model keeps no state between calls.
    """

    # the same settings as UnusedPredictor, stored one by one so get_params/configs see them
    def __init__(
        self,
        window: int = 12,
        horizon: int = 6,
        hidden_layer_sizes: tuple[int, ...] = (50, 50, 50, 50),
        confidence: float = 0.95,
        statistic: str = "level",
        hmm: bool = True,
        hmm_iter: int = 20,
        hmm_backend: str = "numba",
        hmm_history: int = 48,
        min_symbols: int = 6,
        sigma_windows: int = 3,
        sigma_prior: float = 6.0,
        max_train_windows: int = 20_000,
        max_iter: int = 300,
        validation_fraction: float = 0.1,
        seed: int = 0,
        hmm_extremes: str = "slots",
        hmm_tol: float = 1e-2,
    ) -> None:
        self.hmm_tol = hmm_tol
        self.window = window
        self.horizon = horizon
        self.hidden_layer_sizes = hidden_layer_sizes
        self.confidence = confidence
        self.hmm_extremes = hmm_extremes
        self.statistic = statistic
        self.hmm = hmm
        self.hmm_iter = hmm_iter
        self.hmm_backend = hmm_backend
        self.hmm_history = hmm_history
        self.min_symbols = min_symbols
        self.sigma_windows = sigma_windows
        self.sigma_prior = sigma_prior
        self.max_train_windows = max_train_windows
        self.max_iter = max_iter
        self.validation_fraction = validation_fraction
        self.seed = seed

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None, **kw: Any) -> Self:
        check_keys(keys, len(y))
        self.model_ = UnusedPredictor(**self.get_params()).fit(y)
        return self

    def predict(self, h: int = 1) -> Forecast:
        h = check_horizon(h)
        out = self.model_.predict()
        mean = out.request - out.corrected
        mean = np.where(
            out.fallback,
            [float(np.mean(u)) * r for u, r in zip(self.model_.util_, out.request, strict=True)],
            mean,
        )
        return Forecast(
            np.repeat(mean[:, None], h, axis=1),
            np.repeat(out.sigma[:, None], h, axis=1),
            fallback=out.fallback,
        )
