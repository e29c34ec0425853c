"""``conformal``: any forecaster's intervals, calibrated online to a coverage the user asks for.

The shaping paper sizes its buffer as K1 * request + K2 * sigma and leaves K2 to hand tuning; a
forecaster that is over-confident (ARIMA, in the paper's own figures) then fails applications.
This wrapper turns the question around: ask for ``coverage`` (say 0.99, a 1 % chance that usage
exceeds the upper bound) and it learns the bound that delivers it on the data.

Method: adaptive conformal inference (Gibbs and Candes, 2021) on normalised scores. For each
forecast the base model gives mean m and std s; when the next observation y arrives its score is
(y - m) / s. The bound issued is m + q * s, where q is the empirical (1 - alpha_t) quantile of the
last ``window`` scores of all series (split conformal on recent residuals), and the level adapts
after every call: alpha_{t+1} = alpha_t + gamma * (alpha - miss_t), with alpha = 1 - coverage and
miss_t the share of the call's series whose value fell above its bound. Guarantee (their
Proposition 4.1, no assumption on the data): after T calls the average miss rate is within
(max(alpha_1, 1 - alpha_1) + gamma) / (gamma * T) of alpha, for every sequence. It is a
cluster-wide guarantee (one level for all series), which is what a failure-rate target means.

The result is the base forecast with its std scaled by q / z(coverage), so that the Gaussian
quantile at ``coverage`` is the calibrated bound (other levels scale alike; they are not separately
calibrated). q is floored at 0, so a bound below the mean is never issued. Until ``min_scores``
scores have been seen, q is the base model's own z(coverage).

Online contract (see :mod:`reclaim.forecast.base`): call once per period with ``keys``; each call
scores the newest observation of every key seen at the previous call against the bound issued then.
Without keys nothing can be scored, and the wrapper passes the current calibration through.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike

from reclaim import registry
from reclaim.core.capabilities import ForecasterCapabilities, capabilities
from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import (
    Forecast,
    Forecaster,
    ForecastError,
    KeyedState,
    check_keys,
    gaussian_quantile,
    validate_series,
)
from reclaim.registry import register


@register("forecaster", "conformal")
class Conformal(Forecaster):
    """Online-calibrated upper bound at ``coverage`` around the ``base`` forecaster's forecast."""

    def __init__(
        self,
        base: str = "gp-exp",
        base_params: dict[str, Any] | None = None,
        coverage: float = 0.99,
        gamma: float = 0.005,
        window: int = 20_000,
        min_scores: int = 100,
    ) -> None:
        self.base = base
        self.base_params = base_params
        self.coverage = coverage
        self.gamma = gamma
        self.window = window
        self.min_scores = min_scores

    @property
    def __capabilities__(self) -> ForecasterCapabilities:  # type: ignore[override]
        # its calibrated bound is a spread of its own, whatever the base gives
        return replace(
            capabilities(self._base(), ForecasterCapabilities), spread=True, reports=True
        )

    def _base(self) -> Forecaster:
        if not hasattr(self, "base_"):
            if not 0.0 < self.coverage < 1.0:
                raise ForecastError(f"conformal: coverage must lie in (0, 1), got {self.coverage}")
            self.base_ = registry.build("forecaster", self.base, **(self.base_params or {}))
            self.z_ = float(gaussian_quantile(self.coverage))  # the base model's own bound
            self.alpha_ = 1.0 - self.coverage
            self.scores_ = np.empty(0)  # the last ``window`` scores, oldest first
            self.state_ = KeyedState(mean=np.nan, std=np.nan, bound=np.nan)
            self.calls_ = 0
            self.misses_ = 0.0  # sum of per-call miss rates, for the realised average
        return self.base_

    @property
    def q_(self) -> float:
        """Current bound in standard deviations of the base forecast."""
        if len(self.scores_) < self.min_scores:
            return self.z_
        if self.alpha_ <= 0.0:
            return float(np.max(self.scores_))  # asked for more than the data has seen
        if self.alpha_ >= 1.0:
            return 0.0
        return float(np.quantile(self.scores_, 1.0 - self.alpha_))

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None, **kw: Any) -> Self:
        data = validate_series(y, "conformal")
        base = self._base()
        self.keys_ = check_keys(keys, len(y))
        if self.keys_ is not None:
            prev, _ = self.state_.align(self.keys_)
            self._update(prev, data[y.indptr[1:] - 1])
        base.fit(y, keys, **kw)
        return self

    def _update(self, prev: dict[str, np.ndarray], latest: np.ndarray) -> None:
        """Score each series' newest value against the bound issued for it at the last call."""
        seen = np.isfinite(prev["std"])
        if not seen.any():
            return
        mean, std, y = prev["mean"][seen], prev["std"][seen], latest[seen]
        miss = float(np.mean(y > prev["bound"][seen]))
        positive = std > 0  # a zero-std forecast has no scale to normalise by; its miss counts
        scores = (y[positive] - mean[positive]) / std[positive]
        self.scores_ = np.concatenate([self.scores_, scores])[-self.window :]
        self.alpha_ += self.gamma * ((1.0 - self.coverage) - miss)
        self.calls_ += 1
        self.misses_ += miss

    @property
    def miss_rate_(self) -> float:
        """Average share of series above their bound over the calls scored so far."""
        return self.misses_ / self.calls_ if self.calls_ else float("nan")

    def run_summary(self) -> dict[str, float]:
        """The coverage the bounds realised over the run (none before a call was scored)."""
        if not hasattr(self, "calls_") or not self.calls_:
            return {}
        return {"realised_coverage": 1.0 - float(self.miss_rate_)}

    def predict(self, h: int = 1) -> Forecast:
        raw = self.base_.predict(h)
        q = max(self.q_, 0.0)
        std = raw.std * (q / self.z_)
        if self.keys_ is not None:
            with np.errstate(invalid="ignore"):  # inf std: the bound is inf, as it should be
                bound = np.where(np.isinf(std[:, 0]), np.inf, raw.mean[:, 0] + q * raw.std[:, 0])
            self.state_.store(
                self.keys_, {"mean": raw.mean[:, 0], "std": raw.std[:, 0], "bound": bound}
            )
        return Forecast(raw.mean, std, raw.fallback)
