"""Batched forecasters with predictive uncertainty, built by name through the
registry (kind ``forecaster``), which imports each module on first use."""

from reclaim.forecast.base import Forecast, Forecaster, ForecastError

__all__ = ["Forecast", "ForecastError", "Forecaster"]
