"""One simulation in one call, for notebooks and scripts: ``reclaim.simulate(...)``.

It does what ``reclaim simulate`` does, from the same defaults: sample applications from the
real traces that ship inside the package (Alibaba 2017 jobs, Bitbrains / Google usage shapes,
Google 2019 usage/limit pairing), spread their arrivals at the shaping paper's rate, and replay
them under a controller and a placer. Controllers and forecasters are given by name (built
through the registry) or as objects, so a user's own controller runs without registering it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reclaim import registry
from reclaim.core.tables import HostTable
from reclaim.errors import ReclaimError
from reclaim.placement import build_placer
from reclaim.sim.results import SimResult
from reclaim.sim.run import RunSettings, forecaster_for, replay
from reclaim.validation import APPS, DAYS, SEED, SHARE
from reclaim.workload.builder import (
    BuildReport,
    WorkloadSpec,
    build_workload,
    default_pairing_store,
    default_stores,
    paper_arrival_days,
)
from reclaim.workload.model import Workload


@dataclass(frozen=True)
class Sample:
    """Where applications come from and how many: ``jobs``/``shapes``/``pairing`` stores (None:
    the shipped samples; ``pairing="none"``: the shapes' own levels), ``apps`` sampled with
    ``seed``, ``elastic_share`` of them elastic, arrivals over ``arrival_days`` (None: the
    paper's rate for the cluster's cores)."""

    apps: int = 3000
    seed: int = 0
    elastic_share: float = 0.6
    arrival_days: float | None = None
    jobs: Path | None = None
    shapes: tuple[Path, ...] | None = None
    pairing: Path | str | None = None

    def build(self, hosts: str) -> tuple[Workload, BuildReport, WorkloadSpec, Path | None]:
        """The workload for a cluster of ``hosts``, with the sampler's report, its spec and the
        pairing store used."""
        # the API checks its numbers against the CLI's declarations (reclaim.validation)
        APPS.check(self.apps, "apps")
        SEED.check(self.seed, "seed")
        SHARE.check(self.elastic_share, "elastic_share")
        if self.arrival_days is not None:
            DAYS.check(self.arrival_days, "arrival_days")
        capacity = HostTable.parse(hosts).capacity
        days = self.arrival_days or paper_arrival_days(self.apps, float(capacity[:, 0].sum()))
        default_jobs, default_shapes = default_stores()
        if self.pairing == "none":
            paired = None
        else:
            paired = Path(self.pairing) if self.pairing else default_pairing_store()
        spec = WorkloadSpec(
            n_apps=self.apps,
            seed=self.seed,
            horizon=days * 86400.0,
            elastic_share=self.elastic_share,
        )
        shapes = list(self.shapes) if self.shapes else default_shapes
        workload, report = build_workload(spec, self.jobs or default_jobs, shapes, paired)
        return workload, report, spec, paired


def simulate(
    controller: str | Any = "reservation",
    forecaster: str | Any | None = None,
    *,
    hosts: str = "250x32c128g",
    placement: str = "best-fit",
    sample: Sample | None = None,
    workload: Workload | None = None,
    stop_days: float | None = None,
    forecast_window: int = 40,
    controller_params: dict | None = None,
    forecaster_params: dict | None = None,
    on_tick: Callable[[Any], None] | None = None,
    on_sample: Callable[[Workload, BuildReport], None] | None = None,
) -> SimResult:
    """Replay a workload on ``hosts`` under ``controller`` and return the results.

    ``controller``/``forecaster``: a registered name (with ``*_params``) or an object;
    ``workload``: replayed as given, else drawn by ``sample`` (default: :class:`Sample`'s
    defaults, the CLI's). ``on_sample(workload, report)`` is called once a sample is drawn and
    ``on_tick(simulator)`` at every monitor tick (the CLI's table and progress bar).
    ``result.summary`` holds the headline numbers, ``result.apps`` and ``result.timeline`` the
    per-application and per-tick tables. Every name is checked before a sample is drawn.
    """
    name = _name(controller)
    if isinstance(controller, str):
        controller = registry.build("controller", controller, **(controller_params or {}))
    predictor = forecaster_for(controller, forecaster, forecaster_params or {})
    if forecaster is not None and predictor is None:
        raise ReclaimError(f"controller {name!r} uses no forecaster; drop {forecaster!r}")
    # the run's record: each policy by the name it was given and the settings it runs with
    settings = RunSettings(
        hosts=hosts,
        controller=name,
        controller_params=_settings(controller),
        forecaster=None if predictor is None else _name(forecaster),
        forecaster_params={} if predictor is None else _settings(predictor),
        forecast_window=forecast_window,
        placement=placement,
        horizon_s=None if stop_days is None else stop_days * 86400.0,
    )
    placer = build_placer(placement)
    extra = {}
    if workload is None:
        sample = sample or Sample()
        workload, report, spec, paired = sample.build(hosts)
        extra["workload"] = vars(spec) | {"pairing": None if paired is None else str(paired)}
        if on_sample is not None:
            on_sample(workload, report)
    return replay(workload, settings, (controller, predictor, placer), on_tick, extra)


def _name(component: str | Any) -> str:
    return component if isinstance(component, str) else registry.name_of(component)


def _settings(component: Any) -> dict:
    """What the run's record says of a component: its own settings, not those of what it wraps."""
    return component.get_params(deep=False) if hasattr(component, "get_params") else {}
