"""One simulation from names and numbers: what the CLI and the benchmarks call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import reclaim.forecast  # noqa: F401  (registers the built-in forecasters)
from reclaim import registry
from reclaim.errors import ReclaimError
from reclaim.placement import build_placer
from reclaim.shaping import optimistic, pessimistic, reservation, vpa  # noqa: F401  (register)
from reclaim.sim.results import SimResult
from reclaim.sim.simulator import Simulator
from reclaim.state.tables import HostTable
from reclaim.workload.model import Workload


@dataclass
class RunSettings:
    """Everything that defines a run besides the workload. Hosts as ``COUNTxCORESgMEMg``."""

    hosts: str = "250x32c128g"
    controller: str = "reservation"
    controller_params: dict = field(default_factory=dict)
    forecaster: str | None = None  # required by controllers that need a forecast
    forecaster_params: dict = field(default_factory=dict)
    forecast_window: int = 40
    placement: str = "best-fit"
    horizon_s: float | None = None


def simulate(
    workload: Workload,
    settings: RunSettings,
    on_tick: Callable[[Simulator], None] | None = None,
    extra: dict | None = None,
) -> SimResult:
    """Build hosts, controller and placer by name, replay ``workload``, collect the results."""
    controller = registry.build("controller", settings.controller, **settings.controller_params)
    forecaster = None
    if getattr(controller, "needs_forecast", False):
        if settings.forecaster is None:
            raise ReclaimError(f"controller {settings.controller!r} needs a forecaster")
        forecaster = registry.build("forecaster", settings.forecaster, **settings.forecaster_params)
    sim = Simulator(
        workload,
        HostTable.parse(settings.hosts),
        controller,
        build_placer(settings.placement),
        forecaster=forecaster,
        forecast_window=settings.forecast_window,
        horizon=settings.horizon_s,
        on_tick=on_tick,
    ).run()
    return SimResult.from_simulator(sim, asdict(settings) | (extra or {}))
