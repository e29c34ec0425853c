"""The shaping experiment (``kind = "shaping"``, the default): a spec -> runs of the shaping
simulator -> results.

A spec names a workload, a cluster, scales (apps, hosts, seeds) and groups of runs whose
list-valued settings form a grid; docs/experiments.md is the reference::

    name = "pace-fig4"                      # letters, digits, . _ -
    description = "..."
    kind = "shaping"                        # the default
    [workload]                              # optional; every key has a default
    jobs = "sample:alibaba2017"             # "sample:NAME" = shipped sample, else a store path
    shapes = ["sample:bitbrains"]           # relative paths are from the spec's folder
    pairing = "sample:google2019-usage"     # optional: calibrate shapes to real usage/limit ratios
    arrival_days_per_150k = 90              # arrival span, see below
    elastic_share = 0.6                     # ... and the other WorkloadSpec fields
    [workloads.paper]                       # optional named workloads a group may pick
    source = "pace-paper"                   # the shaping paper's own generator (paper_world.py)
    jobs = "sample:google2011-jobs"         # its Google 2011 tables; PaperWorldSpec fields too
    [cluster]
    placement = "best-fit"
    forecast_window = 40
    horizon_days = 90                       # optional: stop the simulation there
    rules = { throttle_cpu = false }        # optional: SimRules settings (sim/simulator.py)
    [scale.small]                           # one table per scale; --scale picks one
    apps = 300
    hosts = "10x32c128g"
    seeds = [0, 1]
    [[runs]]                                # a group: lists are grid axes (cross product)
    controller = "pessimistic"              # or a list of names
    forecaster = ["arima", "gp-exp"]
    controller_params = { k1 = [0.0, 0.05], k2 = [0, 3] }
    forecaster_params = { window = 40 }
    coverage = [0.9, 0.99]                  # forecaster_params.coverage = c, controller k2 = z(c)
    placement = "first-fit"                 # overrides [cluster] for this group, as do
                                            # forecast_window, horizon_days and rules
    workload = "paper"                      # one of [workloads.NAME]; default [workload]
    host_shape = "32c128g"                  # the scale's host count at this size
    world = "paper"                         # names the setting the group's cells live in:
                                            # turnaround ratios are taken against the
                                            # reservation run of the same world and seed
    label = "pessimistic/gp-exp"            # default: controller or controller/forecaster

Arrivals (workloads of the trace builder): 150,000 applications over ``arrival_days_per_150k`` days on the paper's 250 hosts of 32
cores. Other scales keep the paper's load per core, so a small cluster is not swamped:
``days = arrival_days_per_150k * apps / 150000 * 8000 / cluster cores``.

Runs are ordered group by group, grid cell by cell (the last axis fastest), seed by seed. A run's
``run_id`` is a readable slug plus a hash of what the spec asks for it (workload, settings, label,
coverage, seed and scale) and of the reclaim version, so a rerun finds its results and a run made
with other settings or another version is never taken for one of them. Every problem is a ReclaimError naming the
spec file and the key, raised before anything runs.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import polars as pl

from reclaim import __version__, registry
from reclaim.core.capabilities import (
    ControllerCapabilities,
    ForecasterCapabilities,
    capabilities,
)
from reclaim.core.tables import HostTable
from reclaim.core.types import CPU
from reclaim.errors import ReclaimError
from reclaim.experiments.kind import ExperimentKind, KindRun, identity, unique
from reclaim.experiments.spec import SAMPLE_PREFIX, ScaledSpec, SpecErrors, settings_of
from reclaim.forecast.base import gaussian_quantile
from reclaim.sim.checkpoint import Checkpoint
from reclaim.sim.results import SimResult
from reclaim.sim.run import RunSettings, replay
from reclaim.sim.simulator import SimRules
from reclaim.validation import (
    APPS,
    DAYS,
    GRID_CELLS,
    PAPER_WORLD,
    PROBABILITY,
    SAMPLES,
    WORKLOAD,
)
from reclaim.workload.builder import (
    WorkloadSpec,
    build_workload,
    default_pairing_store,
    default_stores,
    paper_arrival_days,
)
from reclaim.workload.model import Workload
from reclaim.workload.paper_world import (
    PaperInputs,
    PaperWorldSpec,
    build_paper_world,
    trace_shapes,
)

#: WorkloadSpec fields a spec may set; apps, seed and the horizon come from the scale.
WORKLOAD_FIELDS = {
    f.name: f.type.split("|")[0].strip()
    for f in fields(WorkloadSpec)
    if f.name not in ("n_apps", "seed", "horizon")
}
GROUP_KEYS = (
    "controller",
    "forecaster",
    "controller_params",
    "forecaster_params",
    "coverage",
    "placement",
    "forecast_window",
    "horizon_days",
    "rules",
    "workload",
    "host_shape",
    "world",
    "label",
)
#: Workload sources: the trace builder (default) and the shaping paper's own generator.
PAPER_SOURCE = "pace-paper"
PAPER_FIELDS = {f.name for f in fields(PaperWorldSpec) if f.name not in ("n_apps", "seed")}


@dataclass(frozen=True)
class Scale:
    name: str
    apps: int
    hosts: str
    seeds: tuple[int, ...]


#: The identifying columns of a shaping run in runs.parquet, before its summary's metrics.
SHAPING_COLUMNS = {
    "run_id": pl.String,
    "experiment": pl.String,
    "scale": pl.String,
    "label": pl.String,
    "world": pl.String,
    "controller": pl.String,
    "forecaster": pl.String,
    "k1": pl.Float64,
    "k2": pl.Float64,
    "coverage": pl.Float64,
    "seed": pl.Int64,
    "wall_s": pl.Float64,
}


@dataclass(frozen=True)
class ShapingRun(KindRun):
    """One simulation. ``workload``: WorkloadSpec fields (but seed) plus ``jobs`` and ``shapes``
    as the spec writes them; ``stores``: those stores' folders (jobs, shapes, pairing or None).
    k1/k2: the controller's resolved settings, None if it has none (k2 also None when the
    forecaster gives no spread, as the oracle)."""

    coverage: float | None
    k1: float | None
    k2: float | None
    workload: dict[str, Any]
    stores: tuple[str, tuple[str, ...], str | None]
    settings: RunSettings
    world: str = ""

    kind = "shaping"

    def columns(self) -> dict[str, Any]:
        """This run's identifying columns of runs.parquet (but ``wall_s``, from its result)."""
        return {
            "run_id": self.run_id,
            "experiment": self.experiment,
            "scale": self.scale,
            "label": self.label,
            "world": self.world,
            "controller": self.settings.controller,
            "forecaster": self.settings.forecaster,
            "k1": self.k1,
            "k2": self.k2,
            "coverage": self.coverage,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class _Cell:
    """One grid cell of a group: everything but the scale and the seed."""

    label: str
    slug: str
    coverage: float | None
    k1: float | None
    k2: float | None
    settings: RunSettings
    workload: str = ""  # a [workloads.NAME]; "" the spec's [workload]
    host_shape: str = ""
    world: str = ""


@dataclass(frozen=True)
class SpecWorkload:
    """One workload of a spec: its settings as the spec writes them (``source`` and the stores
    included), its stores' folders (jobs, shapes, pairing or None) and, for the trace builder,
    its arrival span per 150,000 applications."""

    settings: dict[str, Any]
    stores: tuple[str, tuple[str, ...], str | None]
    arrival_days_per_150k: float | None

    def at_scale(self, apps: int, hosts: str) -> dict[str, Any]:
        """The settings with this scale's application count (and arrival span)."""
        out = self.settings | {"n_apps": apps}
        if self.arrival_days_per_150k is not None:
            cores = float(HostTable.parse(hosts).capacity[:, CPU].sum())
            days = paper_arrival_days(apps, cores, self.arrival_days_per_150k)
            out["horizon"] = days * 86400.0
        return out


@dataclass(frozen=True)
class ShapingSpec(ScaledSpec):
    workloads: dict[str, SpecWorkload]  # "" is the spec's [workload]
    cells: tuple[_Cell, ...]
    kind = "shaping"

    @property
    def workload(self) -> dict[str, Any]:
        return self.workloads[""].settings

    @property
    def stores(self) -> tuple[str, tuple[str, ...], str | None]:
        return self.workloads[""].stores

    def runs(self, scale: str | None = None) -> list[ShapingRun]:
        """Every run at ``scale`` (default: ``default_scale``), in run order."""
        sc = self.scale(scale)
        runs = []
        for cell in self.cells:
            hosts = with_host_shape(sc.hosts, cell.host_shape)
            chosen = self.workloads[cell.workload]
            workload = chosen.at_scale(sc.apps, hosts)
            settings = RunSettings(**asdict(cell.settings) | {"hosts": hosts})
            for seed in sc.seeds:
                ident = {
                    "reclaim": __version__,
                    "scale": sc.name,
                    "seed": seed,
                    "label": cell.label,
                    "coverage": cell.coverage,
                    "workload": workload,
                    "settings": settings.identity(),
                } | ({"world": cell.world} if cell.world else {})
                runs.append(
                    ShapingRun(
                        **identity(self, sc.name, cell.label, seed, cell.slug, ident),
                        coverage=cell.coverage,
                        k1=cell.k1,
                        k2=cell.k2,
                        workload=workload,
                        stores=chosen.stores,
                        settings=settings,
                        world=cell.world,
                    )
                )
        return unique(runs, self.path)


def parse_shaping_spec(doc: dict[str, Any], path: Path, text: str) -> ShapingSpec:
    """Validate a shaping spec and expand its grids into cells; every problem is one line naming
    the file and key."""
    err = SpecErrors(path)
    err.keys(
        doc,
        ("name", "kind", "description", "workload", "workloads", "cluster", "scale", "runs"),
        "top level",
    )
    head = err.head(doc, text)
    workloads = {"": _workload(doc.get("workload", {}), "workload", err)}
    named = err.typed(doc.get("workloads", {}), dict, "[workloads.NAME]")
    for name, table in named.items():
        if not name:
            err.fail("[workloads.NAME]", "a named workload needs a name")
        workloads[name] = _workload(table, f"workloads.{name}", err)

    cluster = err.typed(doc.get("cluster", {}), dict, "[cluster]")
    err.keys(cluster, ("placement", "forecast_window", "horizon_days", "rules"), "[cluster]")
    defaults = {
        "placement": err.placement(cluster.get("placement", "best-fit"), "cluster.placement"),
        "forecast_window": err.quantity(
            cluster.get("forecast_window", 40), "cluster.forecast_window", SAMPLES
        ),
        "horizon_days": cluster.get("horizon_days"),
        "rules": rules(err, cluster.get("rules", {}), "cluster.rules"),
    }
    if defaults["horizon_days"] is not None:
        err.quantity(defaults["horizon_days"], "cluster.horizon_days", DAYS)

    scales = err.typed(doc.get("scale"), dict, "[scale.NAME]")
    if not scales:
        err.fail("[scale.NAME]", "at least one scale is needed")
    groups = err.typed(doc.get("runs"), list, "[[runs]]")
    if not groups:
        err.fail("[[runs]]", "at least one group of runs is needed")
    cells = [
        cell for i, g in enumerate(groups, 1) for cell in _expand(g, i, defaults, workloads, err)
    ]
    return ShapingSpec(
        **head,
        workloads=workloads,
        scales={n: _scale(n, s, err) for n, s in scales.items()},
        cells=tuple(cells),
    )


def _workload(table: Any, where: str, err: SpecErrors) -> SpecWorkload:
    """A ``[workload]`` table: the trace builder's (jobs, shapes, pairing stores and WorkloadSpec
    fields) or, with ``source = "pace-paper"``, the paper's generator's (a google2011-jobs store
    and PaperWorldSpec fields)."""
    wl = err.typed(table, dict, f"[{where}]")
    source = wl.get("source", "")
    if source == PAPER_SOURCE:
        err.keys(wl, ("source", "jobs", "shapes", "pairing", *sorted(PAPER_FIELDS)), f"[{where}]")
        jobs = err.typed(wl.get("jobs", SAMPLE_PREFIX + "google2011-jobs"), str, f"{where}.jobs")
        settings: dict[str, Any] = {"source": source, "jobs": jobs}
        for key in sorted(PAPER_FIELDS & set(wl)):
            if key in PAPER_WORLD:
                settings[key] = err.quantity(wl[key], f"{where}.{key}", PAPER_WORLD[key])
            else:  # usage: a name
                settings[key] = err.typed(wl[key], str, f"{where}.{key}")
        try:
            PaperWorldSpec(**{k: v for k, v in settings.items() if k in PAPER_FIELDS}).check()
        except ReclaimError as problem:
            err.fail(where, str(problem))
        shapes, pairing = (), None
        if settings.get("usage") == "traces":  # reclaim's usage: its shape and pairing stores
            _, default_shapes = default_stores()
            names = wl.get("shapes", [SAMPLE_PREFIX + p.name for p in default_shapes])
            shapes = tuple(err.store(n, f"{where}.shapes") for n in names)
            settings["shapes"] = list(names)
            settings["pairing"] = wl.get("pairing", SAMPLE_PREFIX + default_pairing_store().name)
            pairing = err.store(settings["pairing"], f"{where}.pairing")
        elif "shapes" in wl or "pairing" in wl:
            err.fail(where, 'shapes and pairing are read only with usage = "traces"')
        return SpecWorkload(settings, (err.store(jobs, f"{where}.jobs"), shapes, pairing), None)
    if source:
        err.fail(f"{where}.source", f"unknown source {source!r} (known: {PAPER_SOURCE})")
    err.keys(wl, ("jobs", "shapes", "pairing", "arrival_days_per_150k", *WORKLOAD_FIELDS), where)
    default_jobs, default_shapes = default_stores()
    jobs = err.typed(wl.get("jobs", SAMPLE_PREFIX + default_jobs.name), str, f"{where}.jobs")
    shapes = err.typed(
        wl.get("shapes", [SAMPLE_PREFIX + p.name for p in default_shapes]), list, f"{where}.shapes"
    )
    if not shapes or not all(isinstance(s, str) for s in shapes):
        err.fail(f"{where}.shapes", "expected a non-empty list of stores")
    pairing = wl.get("pairing")
    if pairing is not None:
        err.typed(pairing, str, f"{where}.pairing")
    stores = (
        err.store(jobs, f"{where}.jobs"),
        tuple(err.store(s, f"{where}.shapes") for s in shapes),
        None if pairing is None else err.store(pairing, f"{where}.pairing"),
    )
    workload: dict[str, Any] = {"jobs": jobs, "shapes": list(shapes)}
    if pairing is not None:
        workload["pairing"] = pairing
    for key in WORKLOAD_FIELDS:
        if key in wl:
            workload[key] = err.quantity(wl[key], f"{where}.{key}", WORKLOAD[key])
    days = err.quantity(
        wl.get("arrival_days_per_150k", 90.0),
        f"{where}.arrival_days_per_150k",
        WORKLOAD["arrival_days_per_150k"],
    )
    return SpecWorkload(workload, stores, days)


def with_host_shape(hosts: str, shape: str) -> str:
    """``hosts`` ("250x32c64g") with every pool's size replaced by ``shape`` ("32c128g")."""
    if not shape:
        return hosts
    return "+".join(
        f"{part.split('x', 1)[0]}x{shape}" for part in hosts.replace(" ", "").split("+")
    )


def _scale(name: str, table: Any, err: SpecErrors) -> Scale:
    where = f"scale.{name}"
    table = err.typed(table, dict, f"[{where}]")
    err.keys(table, ("apps", "hosts", "seeds"), f"[{where}]")
    for key in ("apps", "hosts", "seeds"):
        if key not in table:
            err.fail(f"{where}.{key}", "missing")
    apps = err.quantity(table["apps"], f"{where}.apps", APPS)
    hosts = err.typed(table["hosts"], str, f"{where}.hosts")
    try:
        HostTable.parse(hosts)
    except ReclaimError as problem:
        err.fail(f"{where}.hosts", str(problem))
    return Scale(name, apps, hosts, err.seeds(table["seeds"], f"{where}.seeds"))


def _expand(
    group: Any, i: int, defaults: dict[str, Any], workloads: dict, err: SpecErrors
) -> list[_Cell]:
    """The grid cells of the ``i``-th [[runs]] group, last axis fastest."""
    where = f"runs[{i}]"
    group = err.typed(group, dict, f"[[runs]] #{i}")
    err.keys(group, GROUP_KEYS, f"[[runs]] #{i}")
    if "controller" not in group:
        err.fail(f"{where}.controller", "missing")
    axes: list[tuple[tuple[str, ...], list[Any]]] = []
    for key in ("controller", "forecaster", "placement", "forecast_window", "coverage"):
        if key in group:
            axes.append(((key,), err.axis(group[key], f"{where}.{key}")))
    for table in ("controller_params", "forecaster_params"):
        params = err.typed(group.get(table, {}), dict, f"{where}.{table}")
        for key, value in params.items():
            axes.append(((table, key), err.axis(value, f"{where}.{table}.{key}")))
    label = err.typed(group.get("label", ""), str, f"{where}.label")
    plain = {
        key: err.typed(group.get(key, ""), str, f"{where}.{key}")
        for key in ("workload", "host_shape", "world")
    }
    if plain["workload"] not in workloads:
        known = ", ".join(n for n in workloads if n) or "none"
        err.fail(f"{where}.workload", f"no [workloads.{plain['workload']}] (named: {known})")
    if plain["host_shape"]:
        try:
            HostTable.parse(f"1x{plain['host_shape']}")
        except ReclaimError:
            err.fail(f"{where}.host_shape", f"expected CORESgMEMg like 32c128g, got "
                     f"{plain['host_shape']!r}")  # fmt: skip
    world = {
        "horizon_days": defaults["horizon_days"],
        "rules": defaults["rules"] | rules(err, group.get("rules", {}), f"{where}.rules"),
    }
    if "horizon_days" in group:
        world["horizon_days"] = err.quantity(group["horizon_days"], f"{where}.horizon_days", DAYS)
    # counted before any cell is built: a huge grid would otherwise check cells for hours
    size = math.prod(len(values) for _, values in axes)
    if not GRID_CELLS.accepts(size):
        err.fail(where, f"the grid has {size:,} cells; at most {GRID_CELLS.le:,} are run")
    cells = []
    for values in itertools.product(*(v for _, v in axes)):
        cell: dict[str, Any] = {"controller_params": {}, "forecaster_params": {}}
        for (key, *sub), value in zip((k for k, _ in axes), values, strict=True):
            if sub:
                cell[key][sub[0]] = value
            else:
                cell[key] = value
        cells.append(_cell(cell | world | plain, label, defaults, where, err))
    return cells


def _cell(cell: dict, label: str, defaults: dict, where: str, err: SpecErrors) -> _Cell:
    """Check one grid cell's names and settings, link coverage to k2, name it."""
    controller = err.name("controller", cell["controller"], f"{where}.controller")
    forecaster = cell.get("forecaster")
    if forecaster is not None:
        forecaster = err.name("forecaster", forecaster, f"{where}.forecaster")
    cp, fp = dict(cell["controller_params"]), dict(cell["forecaster_params"])
    coverage = cell.get("coverage")
    slug = [f"{k}={_short(v)}" for k, v in (cp | fp).items()]
    if coverage is not None:
        coverage = err.quantity(coverage, f"{where}.coverage", PROBABILITY)
        if "k2" in cp or "coverage" in fp:
            err.fail(f"{where}.coverage", "sets k2 and the forecaster's coverage; give one")
        if forecaster is None or "coverage" not in settings_of("forecaster", forecaster):
            err.fail(f"{where}.coverage", "needs a forecaster with a coverage (conformal)")
        fp["coverage"] = coverage
        cp["k2"] = float(gaussian_quantile(coverage))
        slug.append(f"cov={_short(coverage)}")
    resolved = err.build("controller", controller, cp, f"{where}.controller_params")
    needs = capabilities(resolved, ControllerCapabilities).needs_forecast
    if needs and forecaster is None:
        err.fail(f"{where}.forecaster", f"controller {controller!r} needs a forecaster")
    if not needs and (forecaster is not None or fp):
        err.fail(f"{where}.forecaster", f"controller {controller!r} uses no forecast")
    built = (
        None
        if forecaster is None
        else err.build("forecaster", forecaster, fp, f"{where}.forecaster_params")
    )
    placement = cell.get("placement", defaults["placement"])
    window = cell.get("forecast_window", defaults["forecast_window"])
    horizon = cell.get("horizon_days")
    settings = RunSettings(
        controller=controller,
        controller_params=cp,
        forecaster=forecaster,
        forecaster_params=fp,
        forecast_window=err.quantity(window, f"{where}.forecast_window", SAMPLES),
        placement=err.placement(placement, f"{where}.placement"),
        horizon_s=None if horizon is None else horizon * 86400.0,
        rules=cell.get("rules", {}),
    )
    for key in ("placement", "forecast_window"):
        if key in cell:
            slug.append(f"{key}={_short(cell[key])}")
    if cell.get("world"):
        slug.insert(0, cell["world"])
    label = label or (controller if forecaster is None else f"{controller}/{forecaster}")
    params = resolved.get_params() if hasattr(resolved, "get_params") else {}
    k1, k2 = (params.get(k) for k in ("k1", "k2"))
    if built is not None and not capabilities(built, ForecasterCapabilities).spread:
        k2 = None  # forecasts without spread (the oracle's): K2 changes nothing, so none is named
    return _Cell(
        label=label,
        slug="_".join([label, *slug]),
        coverage=coverage,
        k1=None if k1 is None else float(k1),
        k2=None if k2 is None else float(k2),
        settings=settings,
        workload=cell.get("workload", ""),
        host_shape=cell.get("host_shape", ""),
        world=cell.get("world", ""),
    )


def rules(err: SpecErrors, value: Any, key: str) -> dict[str, bool]:
    """A table of SimRules settings (true or false each)."""
    table = err.typed(value, dict, key)
    err.keys(table, tuple(f.name for f in fields(SimRules)), key)
    return {k: err.typed(v, bool, f"{key}.{k}") for k, v in table.items()}


def _short(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@registry.register("experiment", "shaping")
class ShapingKind(ExperimentKind):
    """Shaping experiments: grids of controllers, forecasters and settings on the simulator."""

    columns = SHAPING_COLUMNS
    report_module = "reclaim.report.shaping_report"

    def parse(self, doc: dict[str, Any], path: Path, text: str) -> ShapingSpec:
        return parse_shaping_spec(doc, path, text)

    def run(self, run: ShapingRun) -> SimResult:
        return execute(run)

    def run_with_checkpoints(self, run: ShapingRun, checkpoints: Path) -> SimResult:
        return execute(run, checkpoints)


# ---------------------------------------------------------------------------------- execution
#: Workload keys that name stores or the source, not settings of the workload's spec.
STORE_KEYS = ("jobs", "shapes", "pairing", "source")

#: The last workload built in this process: runs are handed out seed by seed, so a worker moving
#: through a grid builds each workload once. Only one is kept because at the paper's scale a
#: workload holds ~3 GB of arrays.
_cached: tuple[str, Workload] | None = None


def execute(run: ShapingRun, checkpoints: Path | None = None) -> SimResult:
    """Simulate ``run``; the same run gives bit-identical results in any process, and with
    ``checkpoints`` saves itself as ``<run_id>.pkl`` there every few minutes and resumes from it."""
    settings = {k: v for k, v in run.workload.items() if k not in STORE_KEYS}
    if run.workload.get("source") == PAPER_SOURCE:
        spec = PaperWorldSpec(seed=run.seed, **settings)
    else:
        spec = WorkloadSpec(seed=run.seed, **settings)
    extra = {
        "workload": run.workload | {"seed": run.seed},
        "experiment": {
            "name": run.experiment,
            "scale": run.scale,
            "run_id": run.run_id,
            "label": run.label,
            "coverage": run.coverage,
        },
    }
    checkpoint = None if checkpoints is None else Checkpoint(checkpoints / f"{run.run_id}.pkl")
    return replay(workload_for(spec, run.stores), run.settings, extra=extra, checkpoint=checkpoint)


def workload_for(
    spec: WorkloadSpec | PaperWorldSpec, stores: tuple[str, tuple[str, ...], str | None]
) -> Workload:
    """The workload of ``spec`` from ``stores``, reusing the last one built in this process."""
    global _cached
    key = json.dumps([type(spec).__name__, asdict(spec), stores], sort_keys=True)
    if _cached is None or _cached[0] != key:
        _cached = None  # let the old arrays go before the new ones are built
        jobs, shapes, pairing = stores
        if isinstance(spec, PaperWorldSpec):
            traces = None
            if spec.usage == "traces":
                traces = trace_shapes([Path(s) for s in shapes], Path(pairing), spec.period,
                                      spec.seed)  # fmt: skip
            workload = build_paper_world(spec, PaperInputs.load(Path(jobs)), traces)
        else:
            paired = None if pairing is None else Path(pairing)
            workload = build_workload(spec, Path(jobs), [Path(s) for s in shapes], paired)[0]
        _cached = key, workload
    return _cached[1]
