"""What the shaping controllers share: the safe-guard buffer and the rules for whom to shape.

The shaping paper (section 3.2, eq. 9) sizes each component's allocation as its forecast plus a
buffer ``beta = K1 * request + K2 * V``. The paper writes V as the prediction's variance but reads
K2 in {0, 1, 2, 3} as sigma bands (the three-sigma rule), so V here is the predictive standard
deviation: ``allocation = mean + K1 * request + K2 * std``, per component and resource, never
above the request (the reservation is what the component asked for and what its usage is
clipped to). A component is not shaped, and keeps its request, during a grace period after it
starts (the paper's system waits 10 minutes), while it has no forecast, and once its application
has failed ``max_failures`` times (the paper stops shaping an application after repeated
failures without saying after how many; 3 is our default). The same rule applies to a component
that ran out of memory ``max_failures`` times on its own: an elastic component's OOM does not fail
its application, and a rerun replays the same usage, so without the rule a component whose memory
outgrows its forecast would be stopped at the same age on every attempt and never finish.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.shaping.base import UsageForecast
from reclaim.sim.view import ClusterView
from reclaim.types import Decisions


class Shaper:
    """Base of the forecast-driven controllers: settings and the target allocation of each row."""

    needs_forecast = True

    def __init__(
        self, k1: float = 0.05, k2: float = 3.0, grace_s: float = 600.0, max_failures: int = 3
    ) -> None:
        self.k1 = k1
        self.k2 = k2
        self.grace_s = grace_s
        self.max_failures = max_failures

    def targets(
        self, view: ClusterView, forecast: UsageForecast
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """(n, R) allocation each forecast row should have (cores, GiB), and which rows are shaped.

        Targets are rounded to float32, the precision allocations are stored in, so that sums a
        controller computes are the sums the simulator will hold.
        """
        wl, rows = view.workloads, forecast.rows
        request = wl.request[rows].astype(np.float64)
        shaped = (
            (view.now - wl.start[rows] >= self.grace_s)
            & np.isfinite(forecast.mean).all(axis=1)
            & (view.app_failures[wl.app[rows]] < self.max_failures)
            & (view.component_ooms[wl.component[rows]] < self.max_failures)
        )
        with np.errstate(invalid="ignore"):  # inf std on unshaped rows; they keep the request
            wanted = forecast.mean + self.k1 * request + self.k2 * forecast.std
        target = np.where(shaped[:, None], np.clip(wanted, 0.0, request), request)
        return target.astype(np.float32).astype(np.float64), shaped

    def get_params(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in ("k1", "k2", "grace_s", "max_failures")}


def resize_where_changed(
    view: ClusterView, rows: NDArray[np.int64], target: NDArray[np.float64], evict=()
) -> Decisions:
    """Decisions resizing those ``rows`` whose limit differs from ``target``, plus ``evict``."""
    changed = np.any(view.workloads.limit[rows] != target.astype(np.float32), axis=1)
    return Decisions(resize_rows=rows[changed], resize_limit=target[changed], evict=evict)
