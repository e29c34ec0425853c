"""Batched forecasters with predictive uncertainty, registered by name (kind ``forecaster``)."""

from reclaim.forecast import arima, conformal, corp, ets, gp, naive, oracle  # noqa: F401  (register)
from reclaim.forecast.base import Forecast, Forecaster, ForecastError

__all__ = ["Forecast", "ForecastError", "Forecaster"]
