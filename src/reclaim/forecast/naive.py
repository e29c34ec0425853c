"""``naive``: tomorrow looks like today. The last value, with the spread of its recent errors.

Also the documented fallback of the other models: a series too short for a model is answered by
this one and flagged in ``Forecast.fallback``.
"""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import Forecast, Forecaster, check_horizon, validate_series
from reclaim.registry import register


def naive_forecast(y: GroupedArray, data: NDArray[np.float64], window: int, h: int) -> Forecast:
    """Last value; std = RMS of the one-step changes over the last ``window`` steps, times sqrt(k)
    at step k (a random walk). A series with a single observation has no error to measure:
    its std is ``inf`` and it is flagged as a fallback."""
    ends = y.indptr[1:]
    last = data[ends - 1]
    steps = np.diff(data)
    # a change is valid when both of its observations belong to the same series and it lies in
    # the series' last ``window`` changes
    owner = np.repeat(np.arange(len(y)), y.lengths)[1:]
    same = owner == np.repeat(np.arange(len(y)), y.lengths)[:-1]
    position = np.arange(1, len(data))
    recent = same & (position >= ends[owner] - window)
    count = np.bincount(owner[recent], minlength=len(y))
    sq = np.bincount(owner[recent], steps[recent] ** 2, minlength=len(y))
    with np.errstate(divide="ignore", invalid="ignore"):
        rms = np.where(count > 0, np.sqrt(sq / np.maximum(count, 1)), np.inf)
    k = np.sqrt(np.arange(1, h + 1))
    return Forecast(np.repeat(last[:, None], h, axis=1), np.outer(rms, k), fallback=count == 0)


@register("forecaster", "naive")
class Naive(Forecaster):
    """Last observed value; uncertainty from the last ``history`` one-step changes."""

    def __init__(self, history: int = 10) -> None:
        self.history = history

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None) -> Self:
        self.y_ = y
        self.data_ = validate_series(y, "naive")
        return self

    def predict(self, h: int = 1) -> Forecast:
        return naive_forecast(self.y_, self.data_, self.history, check_horizon(h))
