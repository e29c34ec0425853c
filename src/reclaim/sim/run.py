"""One simulation from settings: ``RunSettings`` name everything but the workload, the policies
are built from them once, and :func:`replay` runs the simulator. ``reclaim.simulate`` (the API
and the CLI) and the shaping experiment's runs both end here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from reclaim import registry
from reclaim.core.capabilities import ControllerCapabilities, capabilities
from reclaim.core.control import Controller
from reclaim.core.tables import HostTable
from reclaim.errors import ReclaimError
from reclaim.forecast.base import Forecaster
from reclaim.placement import Placer, build_placer
from reclaim.sim.checkpoint import Checkpoint
from reclaim.sim.results import SimResult
from reclaim.sim.simulator import SimRules, Simulator
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
    rules: dict = field(default_factory=dict)  # SimRules settings that differ from its defaults

    def identity(self) -> dict:
        """The settings that name a run: ``rules`` only when set, so that runs named before the
        rules existed keep their names."""
        out = asdict(self)
        if not out["rules"]:
            del out["rules"]
        return out


def build_policies(settings: RunSettings) -> tuple[Controller, Forecaster | None]:
    """The controller the settings name, and its forecaster if it needs one."""
    controller = registry.build("controller", settings.controller, **settings.controller_params)
    return controller, forecaster_for(controller, settings.forecaster, settings.forecaster_params)


def forecaster_for(
    controller: Controller,
    forecaster: str | Forecaster | None,
    params: dict,
) -> Forecaster | None:
    """The forecaster ``controller`` needs, built by name or as given; None if it needs none."""
    if not capabilities(controller, ControllerCapabilities).needs_forecast:
        return None
    if forecaster is None:
        raise ReclaimError(f"controller {registry.name_of(controller)!r} needs a forecaster")
    if isinstance(forecaster, str):
        return registry.build("forecaster", forecaster, **params)
    return forecaster


def build_simulator(
    workload: Workload,
    settings: RunSettings,
    controller: Controller,
    forecaster: Forecaster | None,
    on_tick: Callable[[Simulator], None] | None = None,
    placer: Placer | None = None,
) -> Simulator:
    """A simulator of ``workload`` on the settings' hosts, placement (``placer`` when already
    built from it) and horizon."""
    return Simulator(
        workload,
        HostTable.parse(settings.hosts),
        controller,
        placer or build_placer(settings.placement),
        forecaster=forecaster,
        forecast_window=settings.forecast_window,
        horizon=settings.horizon_s,
        on_tick=on_tick,
        rules=SimRules(**settings.rules),
    )


def replay(
    workload: Workload,
    settings: RunSettings,
    policies: tuple[Controller, Forecaster | None, Placer] | None = None,
    on_tick: Callable[[Simulator], None] | None = None,
    extra: dict | None = None,
    checkpoint: Checkpoint | None = None,
) -> SimResult:
    """Replay ``workload`` under ``settings`` and collect the results. ``policies``: the
    controller, forecaster and placer when already built (else built from the settings' names);
    the settings must describe them, since they are the run's record. With ``checkpoint`` the run
    saves itself there every so often and resumes from it when it is there."""
    if policies is None:
        policies = (*build_policies(settings), build_placer(settings.placement))
    controller, forecaster, placer = policies

    def build() -> Simulator:
        return build_simulator(workload, settings, controller, forecaster, on_tick, placer)

    sim = build().run() if checkpoint is None else checkpoint.run(build, workload, on_tick)
    return SimResult.from_simulator(sim, settings.identity() | (extra or {}))
