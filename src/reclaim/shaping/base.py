"""The controller interface shared by the simulator and the live agent."""

from __future__ import annotations

from typing import Any, Protocol

from reclaim.sim.view import ClusterView
from reclaim.types import Decisions


class Controller(Protocol):
    """Decides allocations from the cluster view and a forecast of running workloads' usage.

    ``needs_forecast`` False lets the caller skip forecasting entirely (the forecast is None).
    """

    needs_forecast: bool

    def decide(self, view: ClusterView, forecast: Any) -> Decisions: ...
