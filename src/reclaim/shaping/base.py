"""The controller interface shared by the simulator and the live agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from reclaim.types import Decisions

if TYPE_CHECKING:
    from reclaim.sim.view import ClusterView


@dataclass(frozen=True, slots=True)
class UsageForecast:
    """One-step forecast of running workloads' demand, as a controller receives it.

    rows: (n,) int64 rows of the view's workload table; mean, std: (n, R) float64 cores and GiB
    for the coming interval (NaN / inf where a row has no sample yet); fallback: (n,) bool, rows
    the forecaster could not model (answered by its documented fallback).
    """

    rows: NDArray[np.int64]
    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    fallback: NDArray[np.bool_]


class Controller(Protocol):
    """Decides allocations from the cluster view and a forecast of running workloads' usage.

    ``needs_forecast`` False lets the caller skip forecasting entirely (the forecast is None).
    """

    needs_forecast: bool

    def decide(self, view: ClusterView, forecast: Any) -> Decisions: ...
