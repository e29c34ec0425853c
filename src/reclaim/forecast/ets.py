"""``ets``: automatic exponential smoothing (statsforecast's AutoETS, model form chosen by AICc)
with cheap batched state updates between selections.

Selection. statsforecast's ``AutoETS`` fits every admissible form (error A/M, trend N/A/Ad, season
N/A/M when ``season_length`` > 1) on each series' last ``window`` observations and keeps the best
by AICc: a per-series loop, amortised as in :mod:`reclaim.forecast.arima`.

Online (``keys``). A key is selected when new and then every ``reselect`` calls. In between, the
non-seasonal forms (ANN, AAN, AAdN, MNN, MAN, MAdN: every form when ``season_length`` is 1) keep
their smoothing weights and carry their state (level, trend) from call to call: the call's new
observations go through the state update l' = q + alpha e, b' = phi b + beta e with q = l + phi b
and e = y - q (the same for additive and multiplicative errors), then the 1..h step means and
variances (Hyndman et al. 2008 classes 1 and 2) come out of one compiled kernel call for the whole
batch (:mod:`reclaim.forecast._online_kernels`). This is exactly what statsforecast computes for
the fitted model run over the longer series (``forward_ets``, keeping the fit's sigma2); only the
weights are not re-estimated.
Seasonal forms have no batched update here: a key whose selected form is seasonal is selected
again at every call and forecast by statsforecast.

The kernel also answers the selection calls, from the fitted final state: it equals
statsforecast's own forecast (same state, same sigma2, same interval formulas) except for damped
trends beyond one step, where statsforecast 2.1.1 uses 2 phi instead of phi + phi^2 at step 2 and
so on (the bug fixed upstream in Nixtla/statsforecast#1219); we keep the textbook sum.

Carrying state relies on the online contract: each call brings the observations after the
previous call's last one (a series one or more observations longer, or a window capped at a fixed
length slid by one). The state remembers the last value and the series length; when the value just
before the new ones is not the remembered one, the key is reselected instead of being fed data out
of order.

Per-key state (:class:`KeyedState` columns): ``status``, ``age``, ``level``, ``trend``, ``alpha``,
``beta`` (0 without trend), ``phi`` (1 undamped, 0 without trend), ``sigma2``, ``mult`` (1 for
multiplicative errors), ``last_y``, ``n_seen``, ``form`` (index of the form), ``exact``,
``scale``.

Fallbacks as in :mod:`reclaim.forecast.arima`: windows shorter than ``min_length`` (statsforecast
needs at least 7 observations), failed fits and non-finite forecasts are answered by the naive
forecaster and flagged; a model that fits its window exactly (constant data) is kept only while the
new observations match it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.forecast import _online_kernels
from reclaim.forecast.arima import EXACT, MODEL, REFIT, Reselecting, statsforecast_models
from reclaim.forecast.base import ForecastError
from reclaim.registry import register


@register("forecaster", "ets")
class AutoEts(Reselecting):
    """Exponential smoothing with the form chosen by AICc (statsforecast AutoETS) on each series'
    last ``window`` observations, reselected every ``reselect`` calls per key, state carried and
    forecast in one batched kernel call in between (module docstring). Without keys every series
    is selected at every call.

    Settings: window, reselect, min_length (at least 7; shorter windows get the naive fallback),
    season_length, model (statsforecast's three letters: error, trend, season; "Z" selects),
    damped (None: try both). Learned: ``forms_`` (S,) str, statsforecast's four letters (error,
    trend, season, D when damped), e.g. "MAND" for ETS(M,Ad,N); "" for a series without a model.
    """

    name = "ets"
    # statsforecast 2.1.1 sums the damping as 2 phi at step 2 instead of phi + phi^2 (fixed
    # upstream in Nixtla/statsforecast#1219): the kernel's textbook forecast answers every call
    statsforecast_predicts = False

    def __init__(
        self,
        window: int = 40,
        reselect: int = 50,
        season_length: int = 1,
        min_length: int = 10,
        model: str = "ZZZ",
        damped: bool | None = None,
    ) -> None:
        self.window = window
        self.reselect = reselect
        self.season_length = season_length
        self.min_length = min_length
        self.model = model
        self.damped = damped

    def _check_settings(self) -> None:
        super()._check_settings()
        if self.min_length < 7:
            raise ForecastError("ets: min_length must be at least 7 (statsforecast's minimum)")

    def _new_model(self) -> Any:
        return statsforecast_models().AutoETS(
            season_length=self.season_length, model=self.model, damped=self.damped
        )

    def _fields(self) -> dict[str, float]:
        names = ("level", "trend", "alpha", "beta", "phi", "mult", "last_y", "n_seen", "form")
        return dict.fromkeys(names, 0.0)

    def _extract(self, fitted: dict, x: NDArray[np.float64], cols: dict, i: int) -> bool:
        form = fitted["components"]
        error, trend, season, damped = form
        cols["form"][i] = _FORMS.index(form) if form in _FORMS else -1
        cols["sigma2"][i] = float(fitted["sigma2"])
        if season != "N" or trend not in "NA":
            return False
        alpha, beta, _, phi = (float(v) for v in fitted["par"][:4])
        state = fitted["states"][-1]
        has_trend = trend == "A"
        cols["level"][i] = state[0]
        cols["trend"][i] = state[1] if has_trend else 0.0
        cols["alpha"][i] = alpha
        cols["beta"][i] = beta if has_trend else 0.0
        cols["phi"][i] = (phi if damped == "D" else 1.0) if has_trend else 0.0
        cols["mult"][i] = float(error == "M")
        return True

    def _stale(self, y: GroupedArray, tails: GroupedArray, cols: dict, rows: NDArray) -> NDArray:
        ends = y.indptr[rows + 1]
        length = y.lengths[rows]
        seen = cols["n_seen"][rows]
        # a growing series brings length - seen new values; a capped window slid by one brings one
        fresh = np.where(length > seen, length - seen, 1).astype(np.int64)
        before = ends - 1 - fresh  # where the previous call's last value must sit
        ok = before >= y.indptr[rows]
        ok[ok] = self.data_[before[ok]] == cols["last_y"][rows[ok]]
        go = rows[ok]
        n_new = np.zeros(len(y), np.int64)
        n_new[go] = fresh[ok]
        worst = np.zeros(len(y))
        _online_kernels.ets_advance(
            self.data_,
            y.indptr,
            go.astype(np.int64),
            n_new,
            cols["level"],
            cols["trend"],
            cols["alpha"],
            cols["beta"],
            cols["phi"],
            worst,
        )
        misfit = (cols["exact"][rows] > 0) & (worst[rows] > EXACT * cols["scale"][rows])
        return ~ok | misfit

    def _copy_state(self, y: GroupedArray, tails: GroupedArray, cols: dict) -> NDArray:
        # _stale reads a kept model's whole series: its length, and values before the window
        # when more than the window is new; a series that reaches back so far is no one's copy
        length = y.lengths.astype(np.float64)
        fresh = np.where(length > cols["n_seen"], length - cols["n_seen"], 1.0)
        back = (cols["status"] == MODEL) & (fresh + 1 > tails.lengths)
        alone = np.where(back, np.arange(len(tails)), -1.0)
        return np.column_stack([length, alone])

    def _update(self, tails: GroupedArray, cols: dict, rows: NDArray, h: int, mean, var) -> None:
        _online_kernels.ets_forecast(
            rows.astype(np.int64),
            cols["level"],
            cols["trend"],
            cols["alpha"],
            cols["beta"],
            cols["phi"],
            cols["sigma2"],
            cols["mult"] > 0,
            h,
            mean,
            var,
        )

    def _finish(self, y: GroupedArray, cols: dict) -> None:
        # every series now holds the call's data: selected ones were fitted on it, kept ones fed it
        cols["n_seen"][:] = y.lengths
        cols["last_y"][:] = self.data_[y.indptr[1:] - 1]
        has = (cols["status"] == MODEL) | (cols["status"] == REFIT)
        forms = np.array([""] + list(_FORMS), dtype=object)
        self.forms_ = forms[np.where(has, cols["form"].astype(np.int64) + 1, 0)]


#: Every form AutoETS can return, error/trend/season/damped, so a form fits a float column.
_FORMS = tuple(
    f"{e}{t}{s}{d}"
    for e in "AM"
    for t in "NAM"
    for s in "NAM"
    for d in "ND"
    if not (t == "N" and d == "D")
)
