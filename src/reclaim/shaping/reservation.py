"""The reservation baseline: every component is allocated exactly what it requested, always.

This is what Mesos- and YARN-style schedulers do and what the shaping paper compares against.
"""

from __future__ import annotations

import numpy as np

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.component import Component
from reclaim.core.types import Decisions
from reclaim.core.view import ClusterView
from reclaim.registry import register


@register("controller", "reservation")
class Reservation(Component):
    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def decide(self, view: ClusterView, forecast: object = None) -> Decisions:
        """Resize back to the request any running row whose limit differs from it."""
        wl = view.workloads
        rows = view.running
        drifted = rows[np.any(wl.limit[rows] != wl.request[rows], axis=1)]
        return Decisions(resize_rows=drifted, resize_limit=wl.request[drifted])
