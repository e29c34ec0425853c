"""One simulation from names and numbers: what the CLI and the benchmarks call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from reclaim import registry
from reclaim.placement import build_placer
from reclaim.shaping import reservation  # noqa: F401  (registers the built-in controllers)
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
    placement: str = "best-fit"
    horizon_s: float | None = None


def simulate(
    workload: Workload,
    settings: RunSettings,
    on_tick: Callable[[Simulator], None] | None = None,
    extra: dict | None = None,
) -> SimResult:
    """Build hosts, controller and placer by name, replay ``workload``, collect the results."""
    sim = Simulator(
        workload,
        HostTable.parse(settings.hosts),
        registry.build("controller", settings.controller, **settings.controller_params),
        build_placer(settings.placement),
        horizon=settings.horizon_s,
        on_tick=on_tick,
    ).run()
    return SimResult.from_simulator(sim, asdict(settings) | (extra or {}))
