"""``optimistic``: shrink every allocation to forecast + buffer and let the OS sort out shortages.

No explicit preemption (the Omega simulator's optimistic policy, as the shaping paper compares
against). Memory allocations are soft limits: a component may exceed its allocation while its
host has memory to spare; when a host runs out, the simulator's OOM killer stops the components
with the largest memory demand until the rest fit, as Linux's does (see the simulator's model).
"""

from __future__ import annotations

from reclaim.core.control import UsageForecast
from reclaim.core.types import Decisions
from reclaim.core.view import ClusterView
from reclaim.registry import register
from reclaim.shaping.shaper import Shaper, resize_where_changed


@register("controller", "optimistic")
class Optimistic(Shaper):
    soft_memory_limits = True

    def decide(self, view: ClusterView, forecast: UsageForecast) -> Decisions:
        target, _ = self.targets(view, forecast)
        return resize_where_changed(view, forecast.rows, target)
