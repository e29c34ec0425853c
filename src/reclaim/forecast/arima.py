"""``arima``: automatic ARIMA (statsforecast's AutoARIMA) with cheap batched updates between
order selections, the ARIMA forecaster of the shaping paper (section 3.1.1 and 3.1.3).

Selection. Each series' last ``window`` observations go through statsforecast's ``AutoARIMA``
(Hyndman-Khandakar: KPSS tests for d, stepwise search over (p, q) by AICc, CSS-ML fits), the
method of pmdarima's auto_arima the paper uses. Two engines run it:

- ``engine="numba"`` (default): :mod:`reclaim.forecast._arima_kernels`, the same algorithm
  compiled, one call for all the series selected at a call (no Python loop per series, the
  series spread over numba's threads): the KPSS tests, the stepwise search, and each candidate's
  CSS and ML fits by a port of scipy's BFGS over ports of statsforecast's C++ objectives. About
  3.5 ms of CPU per window of 40 instead of 55-110 ms. It covers the non-seasonal search without
  the CSS approximation (``season_length`` 1, ``approximation`` False, the defaults), and a
  fixed non-seasonal ``order`` (statsforecast's ``ARIMA(order=...)`` with its defaults: CSS-ML,
  an intercept only when d = 0, no drift, no rejection of a fit near the unit circle), the
  shaping paper's ARIMA(0, 1, 1) on 2,000 points among them: 4-10 ms of CPU per window of
  2,000 instead of 23-29 ms, and no Python per series. Other settings run statsforecast.
- ``engine="statsforecast"``: statsforecast itself, one series at a time (the reference).

A fixed order (0, 1, 1) gave statsforecast's coefficients and sigma^2 to the last bit or within
4e-15 on all 236 real windows tried (36 of 40, 60 of 288, 20 of 500, 40 of 2,000 from the shipped
samples and 80 of 300 and 2,000 peaks of the shaping paper's usage; the tests check 50). Other
orders agree where the fit is well conditioned; a fixed order keeps the ill-conditioned fits the
search would reject (below), and there the two may differ as in the search.

The two run the same algorithm and differ only in the optimiser's rounding: the finite-difference
gradients (step 1.5e-8) magnify the last-bit differences between plain loops and numpy's BLAS
calls. On well-conditioned windows that leaves the same orders and forecasts within 1e-4 of a
std (typically 1e-12): every order matched on 436 real windows of 40 (the benchmark's and the
shipped samples'; ``tests/forecast/test_arima.py`` checks 36 of them). On ill-conditioned ones
(a non-invertible MA with drift, an AR at the unit-root bound) BFGS can stop at another point and
the stepwise search then take another path: 85 of the 8,160 selections of ``reclaim forecast
eval`` (1 %) differ, neither engine more accurate (the compiled one closer to the data in 36 of
them), the same MAE and coverage overall. On those windows statsforecast does not agree with
itself either: its result depends on which OpenBLAS kernel runs (with ``OPENBLAS_CORETYPE``
Prescott it selects the compiled engine's order on such a window, with the default kernel
another). With numpy's products in place of its loops, the compiled optimiser reproduces scipy's
bit for bit (tested), so the port itself adds no difference. The compiled engine is
deterministic bit for bit, whatever the number of threads.

A statsforecast 2.1.1 behaviour both engines share: its ML objective resets only the ARMA block of
the state covariance between evaluations, so for a differenced model (d >= 1) every evaluation
after the first treats the d initial levels as known zeros instead of diffuse. For a series far
from zero the ML step then fails its first line search and the model keeps its CSS estimates, with
the exact likelihood at them as its criterion. We keep it so the selections stay statsforecast's.

Online (``keys``). A key's orders and coefficients are selected when the key is new and then every
``reselect`` calls; on the calls between, the coefficients stay fixed and one compiled kernel
(:func:`reclaim.forecast._online_kernels.arima_forecast`) reruns every kept model over its
series' latest window for the whole batch at once, and gives the 1..h step means and Gaussian
error variances. The kernel is statsforecast's own state-space filter: the model in Harvey form
with the differencing in the state, started from the stationary covariance of the ARMA part and a
diffuse (variance 1e6) prior on the d initial levels, then the Kalman forecast; the variance is
sigma^2 Z P_k Z', which is sigma^2 * sum_{j<k} psi_j^2 plus the uncertainty left in the state. So
with the same data it reproduces statsforecast's forecast of the fitted model to rounding.

Why not the cheaper conditional-sum-of-squares restart (innovations from zero at the window's
start): statsforecast 2.1.1 checks the roots of a fitted polynomial only when it has two or more
non-zero coefficients (an off-by-one in its port of R's rule), so it returns MA(1) fits with
theta = -1, not invertible. On 160 random real windows of 40 that was 15, and for them the CSS
forecast differed from the model's exact one by up to 2 standard deviations in the mean and 20% in
the std. For invertible models the two agree within 5% of a std, but the Kalman filter costs
little more (microseconds per series) and has no such case.

On a selection call the compiled engine forecasts the selected series with the same kernel (equal
to statsforecast's forecast of the model to rounding); the statsforecast engine asks statsforecast.
Either way the first call of a key equals the stateless forecast.

Per-key state (:class:`KeyedState`, float columns): ``status`` (none / model / failed fit), ``age``
(calls since the last selection), orders ``p d q P D Q``, the expanded polynomials (seasonal
factors multiplied in) padded with zeros: AR ``phi0...`` to ``max_p + s max_P`` columns, MA
``theta0...`` to ``max_q + s max_Q``, differencing ``delta0...`` to ``max_d + s max_D``, each with
its used length ``n_phi``, ``n_theta``, ``n_delta``; ``mu`` (intercept of an undifferenced model),
``drift`` (slope per step of a once-differenced one), ``sigma2``, and ``exact``/``scale`` (below).
s is ``season_length`` when above 1, else 0: seasonal orders run in the same kernel, at a cost
growing with the cube of the state size (about max_p + max_d + s (max_P + max_D)).

Fallbacks, flagged in ``Forecast.fallback`` and answered by
:func:`reclaim.forecast.naive.naive_forecast`: a window shorter than ``min_length``, a selection
that fails (statsforecast raises: no candidate with a finite criterion, or a window differenced to
nothing; retried at the key's next reselection), a forecast that is not finite. Both engines fail
on the same windows. A constant window gets the mean model and a zero std. A model fitting its
window exactly (std below 1e-5 of the window's largest value: constant or exactly linear data) is
kept only while it still fits the new window exactly; otherwise the key is reselected at once, so a
zero std never outlives the data that justified it.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.forecast import _arima_kernels, _online_kernels
from reclaim.forecast._copies import first_copies
from reclaim.forecast.base import (
    Forecast,
    Forecaster,
    ForecastError,
    KeyedState,
    check_horizon,
    check_keys,
    gaussian_quantile,
    validate_series,
)
from reclaim.forecast.naive import naive_forecast
from reclaim.registry import register

# Status codes of a series' model, kept as a float column of the keyed state.
NONE = 0.0  # no model: new key or window too short
MODEL = 1.0  # a fitted model the batched update can run
FAILED = 2.0  # the last selection raised; naive until the next reselection
REFIT = 3.0  # a fitted model without a batched update: selected again every call

#: A fitted model whose innovation std is below this fraction of its window's largest absolute
#: value fits the window exactly (constant or linear data); see the module docstring.
EXACT = 1e-5

#: statsforecast reports intervals, not std: we ask for this central level and divide its
#: half-width by the matching Gaussian quantile.
_LEVEL = 80


def statsforecast_models() -> Any:
    """``statsforecast.models``, imported on first use: importing it costs seconds, and a process
    that never builds an ``arima``/``ets`` forecaster should not pay that."""
    try:
        import statsforecast.models as models
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ForecastError(
            "the arima and ets forecasters need statsforecast (pip install statsforecast)"
        ) from err
    return models


class Reselecting(Forecaster):
    """Base of forecasters that select a statsforecast model per series at most every
    ``reselect`` calls and update the kept models in one batched kernel call in between.

    Subclasses set ``name`` and implement :meth:`_new_model`, :meth:`_fields`, :meth:`_extract`,
    :meth:`_stale` and :meth:`_update`; see :mod:`reclaim.forecast.arima` for the scheme.
    Learned attributes after :meth:`fit`: ``selected_`` (S,) bool, series selected by this call;
    ``selections_``, statsforecast fits run by this instance so far; ``status_`` (S,) status codes;
    ``same_as_`` (S,) the series each one copies (itself if none): a series with the window and
    state of an earlier one in the batch is neither selected nor run, it takes that one's numbers
    (:mod:`reclaim.forecast._copies`).
    """

    name = ""
    #: On a selection call, forecast the selected series with statsforecast's own predict (True)
    #: or with the batched kernel from the fitted parameters (False).
    statsforecast_predicts = True
    window: int
    reselect: int
    min_length: int

    # -- subclass hooks --------------------------------------------------------------------

    def _new_model(self) -> Any:
        """An unfitted statsforecast model with this forecaster's settings."""
        raise NotImplementedError

    def _fields(self) -> dict[str, float]:
        """Per-series state columns and their fill values (besides the common ones)."""
        raise NotImplementedError

    def _extract(self, fitted: dict, x: NDArray[np.float64], cols: dict, i: int) -> bool:
        """Write the statsforecast model ``fitted`` (its ``model_`` dict, fitted on ``x``) into
        row ``i`` of ``cols``; False when the batched update cannot run this model form."""
        raise NotImplementedError

    def _stale(self, y: GroupedArray, tails: GroupedArray, cols: dict, rows: NDArray) -> NDArray:
        """(len(rows),) bool: kept models that cannot serve this call (reselect them now). May
        advance the kept models' state with the call's new observations."""
        raise NotImplementedError

    def _update(self, tails: GroupedArray, cols: dict, rows: NDArray, h: int, mean, var) -> None:
        """Fill ``mean`` and ``var`` (S, h) at ``rows`` from the kept models."""
        raise NotImplementedError

    def _finish(self, y: GroupedArray, cols: dict) -> None:
        """Last bookkeeping before the state is stored (default: none)."""

    def _copy_state(self, y: GroupedArray, tails: GroupedArray, cols: dict) -> NDArray:
        """(S, k) what a series' numbers depend on besides its window and state columns, so that
        only series equal in it too are copies (default: nothing)."""
        return np.empty((len(tails), 0))

    def _select_rows(self, tails: GroupedArray, cols: dict, rows: NDArray) -> dict[int, Any]:
        """Select and fit a model for each series at ``rows``, writing ``status`` (MODEL, REFIT or
        FAILED) and the model's columns; returns the statsforecast models that will forecast this
        call, by row. Default: statsforecast, one series at a time."""
        status = cols["status"]
        models = {}
        for i in rows:
            x = tails[i]
            model = self._select(x)
            if model is None:
                status[i] = FAILED
                continue
            status[i] = MODEL if self._extract(model.model_, x, cols, i) else REFIT
            if status[i] == REFIT or self.statsforecast_predicts:
                models[int(i)] = model
        return models

    # -- the scheme ------------------------------------------------------------------------

    def _all_fields(self) -> dict[str, float]:
        return {"status": NONE, "age": 0.0, "exact": 0.0, "scale": 0.0, "sigma2": 0.0} | (
            self._fields()
        )

    def _check_settings(self) -> None:
        for setting in ("window", "reselect", "min_length"):
            value = getattr(self, setting)
            if int(value) != value or value < 1:
                raise ForecastError(f"{self.name}: {setting} must be a positive integer")
        if self.min_length > self.window:
            raise ForecastError(f"{self.name}: min_length must not exceed window")

    def _select(self, x: NDArray[np.float64]) -> Any:
        """The statsforecast model fitted on ``x``, or None if the fit raised."""
        model = self._new_model()
        try:
            # the search tries models that do not converge or are near the stationarity bound
            # and reports each on stderr; the chosen model is what counts
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                model.fit(x)
        except Exception:  # noqa: BLE001 - any failure of the fit is answered by the fallback
            return None
        return model

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None) -> Self:
        self._check_settings()
        data = validate_series(y, self.name)
        keys = check_keys(keys, len(y))
        tails = y.tails(self.window)
        fields = self._all_fields()
        if keys is None:
            cols = {name: np.full(len(y), fill) for name, fill in fields.items()}
        else:
            state = getattr(self, "state_", None)
            if state is None or state.fill != fields:  # first call, or settings changed widths
                state = self.state_ = KeyedState(**fields)
            cols, _ = state.align(keys)
        # a copy of an earlier series (same window, same state) takes its numbers
        state = np.column_stack([*cols.values(), self._copy_state(y, tails, cols)])
        same = first_copies(tails.data, tails.indptr, state)
        copy = same != np.arange(len(same))
        status, age = cols["status"], cols["age"]
        age += 1
        short = tails.lengths < self.min_length
        due = (status == NONE) | (status == REFIT) | (age >= self.reselect)
        kept = np.flatnonzero(~short & ~due & (status == MODEL) & ~copy)
        self.data_ = data
        if len(kept):
            due[kept[self._stale(y, tails, cols, kept)]] = True
        due[copy] = due[same[copy]]
        selected = ~short & due
        status[short] = NONE
        rows = np.flatnonzero(selected & ~copy)
        age[rows] = 0
        models = self._select_rows(tails, cols, rows) if len(rows) else {}
        fitted = rows[(status[rows] == MODEL) | (status[rows] == REFIT)]
        if len(fitted):
            scale = np.maximum.reduceat(np.abs(tails.data), tails.indptr[:-1])[fitted]
            cols["scale"][fitted] = scale
            sd = np.sqrt(np.maximum(cols["sigma2"][fitted], 0.0))
            cols["exact"][fitted] = (sd <= EXACT * scale).astype(np.float64)
        for column in cols.values():
            column[copy] = column[same[copy]]
        self._finish(y, cols)
        if keys is not None:
            self.state_.store(keys, cols)
        self.tails_, self.cols_, self.models_ = tails, cols, models
        self.same_as_ = same
        self.selected_ = selected
        self.status_ = status.copy()
        self.selections_ = getattr(self, "selections_", 0) + len(rows)
        return self

    def predict(self, h: int = 1) -> Forecast:
        h = check_horizon(h)
        if not hasattr(self, "tails_"):
            raise ForecastError(f"{self.name}: call fit before predict")
        tails, cols, same = self.tails_, self.cols_, self.same_as_
        n = len(tails)
        copy = same != np.arange(n)
        mean, var = np.zeros((n, h)), np.zeros((n, h))
        answered = np.zeros(n, bool)
        by_model = np.zeros(n, bool)
        by_model[list(self.models_)] = True
        rows = np.flatnonzero((cols["status"] == MODEL) & ~by_model & ~copy)
        if len(rows):
            self._update(tails, cols, rows, h, mean, var)
            answered[rows] = True
        std = np.sqrt(np.maximum(var, 0.0))
        z = float(gaussian_quantile(0.5 + _LEVEL / 200))
        for i, model in self.models_.items():
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    out = model.predict(h, level=[_LEVEL])
            except Exception:  # noqa: BLE001 - the fallback answers, flagged
                continue
            mean[i] = np.asarray(out["mean"], np.float64)
            upper = np.asarray(out[f"hi-{_LEVEL}"], np.float64)
            lower = np.asarray(out[f"lo-{_LEVEL}"], np.float64)
            std[i] = np.maximum(upper - lower, 0.0) / (2 * z)
            answered[i] = True
        for out in (mean, std, answered):
            out[copy] = out[same[copy]]
        answered &= np.isfinite(mean).all(axis=1) & np.isfinite(std).all(axis=1)
        fallback = ~answered
        if fallback.any():
            idx = np.flatnonzero(fallback)
            sub = tails.take(idx)
            naive = naive_forecast(sub, np.asarray(sub.data, np.float64), self.window, h)
            mean[idx], std[idx] = naive.mean, naive.std
        return Forecast(mean, std, fallback)


@register("forecaster", "arima")
class AutoArima(Reselecting):
    """ARIMA with orders chosen by AICc (statsforecast AutoARIMA) on each series' last ``window``
    observations, reselected every ``reselect`` calls per key and updated in one batched kernel
    call in between (module docstring). Without keys every series is selected at every call.

    Settings: window, reselect, min_length (shorter windows get the naive fallback),
    season_length (1: non-seasonal), and AutoARIMA's max_p, max_q, max_d, max_P, max_Q, max_D,
    ic ("aicc", "aic", "bic"), stepwise, approximation (CSS during the search), allowdrift,
    allowmean; engine ("numba": the compiled search for non-seasonal settings without
    approximation, statsforecast otherwise; "statsforecast": always statsforecast); ``order``
    (p, d, q) fits that order without a search (statsforecast's ARIMA), as the shaping paper's
    simulator ran ARIMA(0, 1, 1).
    Learned: ``orders_`` (S, 3) int (p, d, q), -1 where a series has no model; ``reused_``,
    selections answered by this process's :data:`SELECTIONS` instead of the kernel.
    """

    name = "arima"

    def __init__(
        self,
        window: int = 40,
        reselect: int = 50,
        season_length: int = 1,
        min_length: int = 10,
        max_p: int = 5,
        max_q: int = 5,
        max_d: int = 2,
        max_P: int = 2,
        max_Q: int = 2,
        max_D: int = 1,
        ic: str = "aicc",
        stepwise: bool = True,
        approximation: bool = False,
        allowdrift: bool = True,
        allowmean: bool = True,
        engine: str = "numba",
        order: tuple[int, int, int] | None = None,
    ) -> None:
        self.window = window
        self.reselect = reselect
        self.season_length = season_length
        self.min_length = min_length
        self.max_p = max_p
        self.max_q = max_q
        self.max_d = max_d
        self.max_P = max_P
        self.max_Q = max_Q
        self.max_D = max_D
        self.ic = ic
        self.stepwise = stepwise
        self.approximation = approximation
        self.allowdrift = allowdrift
        self.allowmean = allowmean
        self.engine = engine
        self.order = order

    def _check_settings(self) -> None:
        super()._check_settings()
        if self.ic not in _ICS:
            raise ForecastError(f"arima: ic must be one of {sorted(_ICS)}, got {self.ic!r}")
        if self.engine not in ("numba", "statsforecast"):
            raise ForecastError(
                f"arima: engine must be 'numba' or 'statsforecast', not {self.engine!r}"
            )
        if self.order is not None:
            order = list(self.order)
            bounds = (self.max_p, self.max_d, self.max_q)
            if len(order) != 3 or not all(
                isinstance(v, int) and 0 <= v <= b for v, b in zip(order, bounds, strict=True)
            ):
                raise ForecastError(
                    f"arima: order must be three whole numbers (p, d, q) within max_p, max_d "
                    f"and max_q, got {self.order!r}"
                )

    def _compiled(self) -> bool:
        """Whether selections run in the compiled engine (it has no seasonal search and no CSS
        approximation; those settings run statsforecast)."""
        return self.engine == "numba" and self.season_length <= 1 and not self.approximation

    def _select_rows(self, tails: GroupedArray, cols: dict, rows: NDArray) -> dict[int, Any]:
        if not self._compiled():
            return super()._select_rows(tails, cols, rows)
        n = len(tails)
        wp, wq, wd = (max(w, 1) for w in self._widths())
        status = np.zeros(n, np.int8)
        orders = np.full((n, 3), -1, np.int64)
        phi, theta, delta = np.zeros((n, wp)), np.zeros((n, wq)), np.zeros((n, wd))
        mu, drift, sigma2 = np.zeros(n), np.zeros(n), np.zeros(n)
        data = np.ascontiguousarray(tails.data, np.float64)
        indptr = tails.indptr.astype(np.int64)
        # one row per selection: status, p d q, the three polynomials, mu, drift, sigma2
        outs = (status, orders, phi, theta, delta, mu, drift, sigma2)
        if self.order is None:
            self._search(data, indptr, rows, outs)
        else:
            # no cache here: a key of a 2,000-point window would take 16 kB, and the paper's
            # ARIMA cell is the only one of its experiment
            p, d, q = (int(v) for v in self.order)
            _arima_kernels.arima_order_batch(data, indptr, rows.astype(np.int64), p, d, q, *outs)
        failed = rows[status[rows] != _arima_kernels.OK]
        ok = rows[status[rows] == _arima_kernels.OK]
        cols["status"][failed] = FAILED
        cols["status"][ok] = MODEL
        for j, name in enumerate("pdq"):
            cols[name][ok] = orders[ok, j]
        for name in "PDQ":
            cols[name][ok] = 0.0
        for name, poly, used, width in zip(
            _POLYS, (phi, theta, delta), orders[:, [0, 2, 1]].T, self._widths(), strict=True
        ):
            cols[f"n_{name}"][ok] = used[ok]
            for j in range(width):
                cols[f"{name}{j}"][ok] = poly[ok, j]
        cols["mu"][ok] = mu[ok]
        cols["drift"][ok] = drift[ok]
        cols["sigma2"][ok] = sigma2[ok]
        return {}

    def _search(self, data: NDArray, indptr: NDArray, rows: NDArray, outs: tuple) -> None:
        """The compiled search over ``rows``, through this process's :data:`SELECTIONS`."""
        settings = (
            self.max_p,
            self.max_q,
            self.max_d,
            self.ic,
            self.stepwise,
            self.allowdrift,
            self.allowmean,
        )
        keys = [(settings, data[indptr[i] : indptr[i + 1]].tobytes()) for i in rows]
        known = [SELECTIONS.get(key) for key in keys]
        new = rows[np.array([k is None for k in known], bool)]
        _arima_kernels.auto_arima_batch(
            data,
            indptr,
            new.astype(np.int64),
            int(self.max_p),
            int(self.max_q),
            int(self.max_d),
            _ICS[self.ic],
            bool(self.stepwise),
            bool(self.allowdrift),
            bool(self.allowmean),
            *outs,
        )
        for i, key, row in zip(rows, keys, known, strict=True):
            if row is None:
                SELECTIONS.put(key, np.hstack([np.atleast_1d(c[i]) for c in outs]))
                continue
            start = 0
            for c in outs:
                width = c.shape[1] if c.ndim == 2 else 1
                c[i] = row[start : start + width] if c.ndim == 2 else row[start]
                start += width
        self.reused_ = getattr(self, "reused_", 0) + len(rows) - len(new)

    def _new_model(self) -> Any:
        if self.order is not None:  # no search: the order given (the shaping paper's (0, 1, 1))
            return statsforecast_models().ARIMA(order=tuple(self.order))
        return statsforecast_models().AutoARIMA(
            season_length=self.season_length,
            max_p=self.max_p,
            max_q=self.max_q,
            max_d=self.max_d,
            max_P=self.max_P,
            max_Q=self.max_Q,
            max_D=self.max_D,
            ic=self.ic,
            stepwise=self.stepwise,
            approximation=self.approximation,
            allowdrift=self.allowdrift,
            allowmean=self.allowmean,
        )

    def _widths(self) -> tuple[int, int, int]:
        """Padded widths of the AR, MA and differencing polynomial columns."""
        s = self.season_length if self.season_length > 1 else 0
        return (
            self.max_p + s * self.max_P,
            self.max_q + s * self.max_Q,
            self.max_d + s * self.max_D,
        )

    def _fields(self) -> dict[str, float]:
        fields = dict.fromkeys(("p", "d", "q", "P", "D", "Q"), -1.0)
        fields |= dict.fromkeys(("mu", "drift"), 0.0)
        for name, width in zip(_POLYS, self._widths(), strict=True):
            fields[f"n_{name}"] = 0.0
            fields |= {f"{name}{j}": 0.0 for j in range(width)}
        return fields

    def _extract(self, fitted: dict, x: NDArray[np.float64], cols: dict, i: int) -> bool:
        p, q, P, Q, s, d, D = (int(v) for v in fitted["arma"])
        for name, value in zip("pdqPDQ", (p, d, q, P, D, Q), strict=True):
            cols[name][i] = value
        cols["sigma2"][i] = float(fitted["sigma2"])
        spec = fitted["model"]  # the expanded polynomials: seasonal factors multiplied in
        polys = (
            np.asarray(spec["phi"], np.float64),
            np.asarray(spec["theta"], np.float64)[: q + s * Q],  # padded with zeros there
            np.asarray(spec["delta"], np.float64),
        )
        widths = self._widths()
        if any(len(poly) > width for poly, width in zip(polys, widths, strict=True)):
            return False
        for name, poly, width in zip(_POLYS, polys, widths, strict=True):
            cols[f"n_{name}"][i] = len(poly)
            for j in range(width):
                cols[f"{name}{j}"][i] = poly[j] if j < len(poly) else 0.0
        coef = fitted["coef"]  # ARMA terms, intercept, drift: we pass no exogenous regressors
        cols["mu"][i] = float(coef.get("intercept", 0.0))
        # statsforecast's forecast renames the drift "ex_1" and back; accept either name
        cols["drift"][i] = float(coef.get("drift", coef.get("ex_1", 0.0)))
        return True

    def _run(self, tails: GroupedArray, cols: dict, rows: NDArray, h: int, mean, var) -> NDArray:
        """The kernel over ``rows``; returns (S,) the largest one-step error over each window."""
        arrays = []
        for name, width in zip(_POLYS, self._widths(), strict=True):
            columns = [cols[f"{name}{j}"] for j in range(width)] or [np.zeros(len(tails))]
            arrays += [np.column_stack(columns), cols[f"n_{name}"].astype(np.int64)]
        worst = np.zeros(len(tails))
        _online_kernels.arima_forecast(
            np.asarray(tails.data, np.float64),
            tails.indptr,
            rows.astype(np.int64),
            *arrays,
            cols["mu"],
            cols["drift"],
            cols["sigma2"],
            h,
            mean,
            var,
            worst,
        )
        return worst

    def _stale(self, y: GroupedArray, tails: GroupedArray, cols: dict, rows: NDArray) -> NDArray:
        # a window no longer than the differencing cannot be run (a key's series shrank)
        stale = tails.lengths[rows] <= cols["n_delta"][rows]
        exact = rows[(cols["exact"][rows] > 0) & ~stale]
        if len(exact):
            n = len(tails)
            worst = self._run(tails, cols, exact, 1, np.zeros((n, 1)), np.zeros((n, 1)))
            misfit = worst[exact] > EXACT * cols["scale"][exact]
            stale[np.searchsorted(rows, exact[misfit])] = True
        return stale

    def _update(self, tails: GroupedArray, cols: dict, rows: NDArray, h: int, mean, var) -> None:
        self._run(tails, cols, rows, h, mean, var)

    def _finish(self, y: GroupedArray, cols: dict) -> None:
        has = (cols["status"] == MODEL) | (cols["status"] == REFIT)
        orders = np.column_stack([cols["p"], cols["d"], cols["q"]]).astype(np.int64)
        orders[~has] = -1
        self.orders_ = orders


class SelectionCache:
    """The compiled selections this process made, by settings and window values, least recently
    used dropped beyond ``capacity``.

    Why: a selection is a pure function of its window and settings, and the cells of one
    experiment replay the same workload, whose components start with the same samples whatever
    the policy: over two cells of ``pace-fig4`` (750 applications, seed 0), 220,000 of 304,000
    selections were of a window already selected. A hit gives the same model bit for bit."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.rows: OrderedDict[tuple, NDArray[np.float64]] = OrderedDict()

    def get(self, key: tuple) -> NDArray[np.float64] | None:
        row = self.rows.get(key)
        if row is not None:
            self.rows.move_to_end(key)
        return row

    def put(self, key: tuple, row: NDArray[np.float64]) -> None:
        self.rows[key] = row
        if len(self.rows) > self.capacity:
            self.rows.popitem(last=False)

    def clear(self) -> None:
        self.rows.clear()


#: This process's cache (about 0.5 kB a selection, so at most ~150 MB): a seed's cells of
#: ``pace-fig4`` at medium scale select on ~84,000 distinct windows.
SELECTIONS = SelectionCache(300_000)

#: The polynomials of a fitted ARIMA kept per key: AR, MA, differencing.
_POLYS = ("phi", "theta", "delta")

#: Information criteria by name, as the compiled engine numbers them.
_ICS = {"aic": _arima_kernels.AIC, "aicc": _arima_kernels.AICC, "bic": _arima_kernels.BIC}
