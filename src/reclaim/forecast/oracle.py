"""``oracle``: the true future, handed over by the caller, with zero uncertainty.

An upper bound for what any forecaster can buy a policy: the simulator and the evaluation pass the
trace's real next values as ``future``.
"""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import ArrayLike

from reclaim.core.capabilities import ForecasterCapabilities
from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import (
    Forecast,
    Forecaster,
    ForecastError,
    check_horizon,
    validate_series,
)
from reclaim.registry import register


@register("forecaster", "oracle")
class Oracle(Forecaster):
    """Mean = the true future (S, h) given to :meth:`fit`; std = 0."""

    __capabilities__ = ForecasterCapabilities(needs_future=True, spread=False)

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None, *, future: ArrayLike) -> Self:
        validate_series(y, "oracle")
        future = np.asarray(future, dtype=np.float64)
        if future.ndim == 1:
            future = future[:, None]
        if future.ndim != 2 or len(future) != len(y):
            raise ForecastError(
                f"oracle: future must be (S, h) for {len(y)} series, got {future.shape}"
            )
        if not np.all(np.isfinite(future)):
            raise ForecastError("oracle: the future holds NaN or infinite values")
        self.future_ = future
        return self

    def predict(self, h: int = 1) -> Forecast:
        h = check_horizon(h)
        if h > self.future_.shape[1]:
            raise ForecastError(f"oracle: asked {h} steps ahead, knows {self.future_.shape[1]}")
        mean = self.future_[:, :h]
        return Forecast(mean, np.zeros_like(mean))
