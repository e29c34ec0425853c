"""``optimistic``: shrink every allocation to forecast + buffer and let the OS sort out shortages.

No explicit preemption (the Omega simulator's optimistic policy, as the shaping paper compares
against). Memory allocations are soft limits by default: a component may exceed its allocation
while its host has memory to spare; when a host runs out, the simulator's OOM killer stops the
components with the largest memory demand until the rest fit, as Linux's does (see the
simulator's model). With ``soft_memory_limits=False`` they are hard, as in the paper's simulator
(``Scheduler.scala``:147-162 at commit 8abcf51): usage above the allocation at a tick is an OOM
failure, and a raise its host cannot hold becomes one.
"""

from __future__ import annotations

from dataclasses import replace

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.control import UsageForecast
from reclaim.core.types import Decisions
from reclaim.core.view import ClusterView
from reclaim.registry import register
from reclaim.shaping.shaper import Shaper, resize_where_changed


@register("controller", "optimistic")
class Optimistic(Shaper):
    def __init__(
        self,
        k1: float = 0.05,
        k2: float = 3.0,
        grace_s: float = 600.0,
        max_failures: int = 3,
        failure_target: float | None = None,
        failure_step: float = 0.5,
        shape_on_fallback: bool = False,
        soft_memory_limits: bool = True,
    ) -> None:
        """The settings of :class:`Shaper`, and ``soft_memory_limits`` (module docstring)."""
        super().__init__(
            k1, k2, grace_s, max_failures, failure_target, failure_step, shape_on_fallback
        )
        self.soft_memory_limits = soft_memory_limits

    @property
    def __capabilities__(self) -> ControllerCapabilities:
        return replace(super().__capabilities__, soft_memory_limits=bool(self.soft_memory_limits))

    def decide(self, view: ClusterView, forecast: UsageForecast) -> Decisions:
        target, _ = self.targets(view, forecast)
        return resize_where_changed(view, forecast.rows, target)
