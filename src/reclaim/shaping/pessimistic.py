"""``pessimistic``: the shaping paper's Algorithm 1, preempting on purpose instead of by OOM.

At every tick: running applications in scheduling order (FIFO: arrival order); for each, its core
components take forecast + buffer from their hosts, and if any host runs short the whole
application is preempted (its work is lost and it requeues at its original position); then its
elastic components, oldest first, take theirs, and those that no longer fit are preempted (the
youngest, having done the least work, go first). Every survivor is resized to its forecast +
buffer. Allocations therefore never exceed capacity. Memory limits are hard by default (the
paper's simulation: usage above the allocation at a tick is an OOM failure). With
``soft_memory_limits=True`` they are soft, as the live agent writes them (v1
``memory.soft_limit_in_bytes``, v2 ``memory.high``): a component may exceed its allocation while
its host has memory left. That is how the simulator replays a live run of this policy.

Algorithm 1 tests both resources by default; ``fit_on="mem"`` tests memory alone, as the paper's
simulator does (``ZoeDynamicSimulation.scala``:480-555 at commit 8abcf51): CPU is then resized
like memory but never preempts.

One reading of the paper's pseudo-code is ours: it tests core rows with ``free < 0`` and elastic
rows with ``free <= 0``; both use ``free < -FIT_TOLERANCE`` here, because with admission on
reservations an elastic component that exactly fills its host is common, and preempting it for
fitting exactly would be an artefact of the comparison, not a policy.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.control import UsageForecast
from reclaim.core.types import RESOURCES, Decisions
from reclaim.core.view import ClusterView
from reclaim.registry import register
from reclaim.shaping._kernels import fifo_fit
from reclaim.shaping.shaper import Shaper, resize_where_changed


@register("controller", "pessimistic")
class Pessimistic(Shaper):
    def __init__(
        self,
        k1: float = 0.05,
        k2: float = 3.0,
        grace_s: float = 600.0,
        max_failures: int = 3,
        failure_target: float | None = None,
        failure_step: float = 0.5,
        shape_on_fallback: bool = False,
        soft_memory_limits: bool = False,
        fit_on: str = "cpu,mem",
    ) -> None:
        """The settings of :class:`Shaper`, ``soft_memory_limits`` and ``fit_on``, the resources
        Algorithm 1 tests, comma-separated (module docstring)."""
        super().__init__(
            k1, k2, grace_s, max_failures, failure_target, failure_step, shape_on_fallback
        )
        self.soft_memory_limits = soft_memory_limits
        self.fit_on = fit_on

    @property
    def __capabilities__(self) -> ControllerCapabilities:
        return replace(super().__capabilities__, soft_memory_limits=bool(self.soft_memory_limits))

    def decide(self, view: ClusterView, forecast: UsageForecast) -> Decisions:
        wl = view.workloads
        target, _ = self.targets(view, forecast)
        # applications in arrival order, core rows first, elastic rows oldest first
        rows, target, keep = fifo_fit(
            forecast.rows, target, wl.host, wl.app, wl.core, wl.start, view.hosts.capacity,
            np.array(resource_axes(self.fit_on), np.int64),
        )  # fmt: skip
        evict = rows[~keep]  # whole applications (dropped) and elastic rows that did not fit
        self.note_evictions(view, evict)  # their applications fail: a failure target counts them
        return resize_where_changed(view, rows, target, evict=evict, keep=keep)


def resource_axes(names: str) -> list[int]:
    """Axes of the comma-separated resource ``names`` ("cpu,mem", "mem"), in axis order."""
    wanted = [n.strip() for n in names.split(",")]
    unknown = [n for n in wanted if n not in RESOURCES]
    if unknown or not wanted:
        raise ValueError(
            f"fit_on: unknown resource {unknown[0] if unknown else names!r} "
            f"(resources: {', '.join(RESOURCES)})"
        )
    return [r for r, name in enumerate(RESOURCES) if name in wanted]
