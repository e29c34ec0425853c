"""The CORP experiment (``kind = "corp"``): a spec -> runs of the short-job simulator -> results.

A spec fixes the scenario (``reclaim.corp.scenario.build_scenario`` settings but the number of
jobs and the seed) and the simulation, lists per scale the numbers of jobs (the x axis of the
paper's Figures 6 and 7) and the seeds, and has groups of runs whose lists are grids over the
provisioner and its settings::

    name = "corp"
    kind = "corp"
    [scenario]                         # build_scenario settings
    n_vms = 200
    n_pms = 40
    [simulation]                       # simulate settings: window (L slots), epsilon, borrowing
    window = 6
    [scale.small]
    jobs = [50, 100, 200, 300]
    seeds = [0, 1]
    [[runs]]
    provisioner = ["corp", "rccr", "cloudscale", "dra"]
    [[runs]]                           # a sweep at one number of jobs (Figures 8 and 9)
    provisioner = "corp"
    params = { p_threshold = [0.5, 0.9] }
    jobs = "max"                       # the scale's largest number of jobs only
    [[runs]]                           # a group may also sweep scenario and simulation settings
    provisioner = "dra"
    scenario = { resample = ["calibrated", "percentiles"] }
    simulation = { epsilon = [0.05, 0.2] }

A provisioner is fitted once per (settings, seed, scenario) in a worker process and reused across
numbers of jobs (the training jobs of a scenario depend on its seed, not on how many test jobs it
has) and across the settings it only reads when predicting (its ``PREDICT_SETTINGS``, e.g. CORP's
confidence, epsilon and P_th).
"""

from __future__ import annotations

import inspect
import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from reclaim import registry
from reclaim.experiments.kind import (
    IDENTITY_COLUMNS,
    ExperimentKind,
    KindRun,
    RunResult,
    identity,
    unique,
)
from reclaim.experiments.spec import ScaledSpec, SpecErrors

COLUMNS = IDENTITY_COLUMNS | {
    "provisioner": pl.String,
    "params": pl.String,
    "n_jobs": pl.Int64,
    "slots": pl.String,
    "epsilon": pl.Float64,
    "wall_s": pl.Float64,
}
SIMULATION_KEYS = ("window", "epsilon", "borrowing")
#: Fitted provisioners kept per worker process (a sweep visits a few scenarios per seed).
FIT_CACHE = 8


@dataclass(frozen=True)
class CorpScale:
    name: str
    jobs: tuple[int, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class CorpRun(KindRun):
    """One simulation of ``n_jobs`` jobs under one provisioner with ``params``."""

    provisioner: str
    params: dict[str, Any]
    n_jobs: int
    scenario: dict[str, Any]
    simulation: dict[str, Any]

    kind = "corp"

    def columns(self) -> dict[str, Any]:
        return self.identity() | {
            "provisioner": self.provisioner,
            "params": json.dumps(self.params, sort_keys=True),
            "n_jobs": self.n_jobs,
            "slots": str(self.scenario.get("resample", "hold")),
            "epsilon": float(self.simulation["epsilon"]),
        }


@dataclass(frozen=True)
class CorpSpec(ScaledSpec):
    scenario: dict[str, Any]
    simulation: dict[str, Any]
    # label, provisioner, params, max only, scenario and simulation settings of the cell
    cells: tuple[tuple[str, str, dict[str, Any], bool, dict[str, Any], dict[str, Any]], ...]
    kind = "corp"

    def headline(self, table: pl.DataFrame) -> list[str]:
        """Fig. 6 per method from its predictions, and what it lent (:func:`reclaim.corp.report.
        headline`)."""
        from reclaim.corp.report import headline

        return headline(table)

    def runs(self, scale: str | None = None) -> list[CorpRun]:
        """Cell by cell, number of jobs by number of jobs, seed by seed."""
        sc = self.scale(scale)
        runs = []
        for label, provisioner, params, max_only, scenario, simulation in self.cells:
            for n_jobs, seed in itertools.product(
                (max(sc.jobs),) if max_only else sc.jobs, sc.seeds
            ):
                ident = {
                    "provisioner": provisioner,
                    "params": params,
                    "n_jobs": n_jobs,
                    "seed": seed,
                    "scenario": scenario,
                    "simulation": simulation,
                }
                runs.append(
                    CorpRun(
                        **identity(self, sc.name, label, seed, f"{label}_jobs{n_jobs}", ident),
                        provisioner=provisioner,
                        params=params,
                        n_jobs=n_jobs,
                        scenario=scenario,
                        simulation=simulation,
                    )
                )
        return unique(runs, self.path)


def parse_corp_spec(doc: dict[str, Any], path: Path, text: str) -> CorpSpec:
    """Validate a ``kind = "corp"`` spec; every problem is one line naming the file and key."""
    from reclaim.corp.scenario import RESAMPLERS, WINDOW_RESAMPLERS, build_scenario
    from reclaim.corp.simulator import BORROWING, simulate

    err = SpecErrors(path)
    err.keys(
        doc,
        ("name", "kind", "description", "scenario", "simulation", "scale", "runs"),
        "top level",
    )
    head = err.head(doc, text)

    allowed = set(inspect.signature(build_scenario).parameters) - {"n_jobs", "seed"}

    def scenario_settings(table: dict[str, Any], where: str) -> None:
        for key, value in table.items():
            if key not in allowed:
                err.fail(
                    f"{where}.{key}", f"no such setting (settings: {', '.join(sorted(allowed))})"
                )
            if key == "resample" and value not in (*RESAMPLERS, *WINDOW_RESAMPLERS):
                options = ", ".join((*RESAMPLERS, *WINDOW_RESAMPLERS))
                err.fail(f"{where}.resample", f"expected one of {options}, got {value!r}")
            if not isinstance(value, str | list):
                err.number(value, f"{where}.{key}", integer=key in ("n_vms", "n_pms", "n_train"))

    def simulation_settings(table: dict[str, Any], where: str) -> None:
        err.keys(table, SIMULATION_KEYS, f"[{where}]")
        for key, value in table.items():
            if key == "borrowing":
                if value not in BORROWING:
                    err.fail(f"{where}.borrowing", f"expected one of {', '.join(BORROWING)}")
            else:
                err.number(value, f"{where}.{key}", integer=key == "window")

    scenario = dict(err.typed(doc.get("scenario", {}), dict, "[scenario]"))
    scenario_settings(scenario, "scenario")
    simulation = dict(err.typed(doc.get("simulation", {}), dict, "[simulation]"))
    simulation_settings(simulation, "simulation")
    # run ids hash the settings: spell out the defaults so that a change of default is a new run
    defaults = inspect.signature(simulate).parameters
    simulation = {k: defaults[k].default for k in SIMULATION_KEYS} | simulation

    scales = {}
    for scale_name, table in err.typed(doc.get("scale"), dict, "[scale.NAME]").items():
        where = f"scale.{scale_name}"
        table = err.typed(table, dict, f"[{where}]")
        err.keys(table, ("jobs", "seeds"), f"[{where}]")
        jobs = [
            err.number(j, f"{where}.jobs", integer=True)
            for j in err.axis(table.get("jobs", [300]), f"{where}.jobs")
        ]
        if min(jobs) < 1:
            err.fail(f"{where}.jobs", "numbers of jobs must be at least 1")
        seeds = err.seeds(table.get("seeds", [0]), f"{where}.seeds")
        scales[scale_name] = CorpScale(scale_name, tuple(sorted(set(jobs))), seeds)
    if not scales:
        err.fail("[scale.NAME]", "at least one scale is needed")

    cells = []
    for i, group in enumerate(err.typed(doc.get("runs"), list, "[[runs]]"), 1):
        where = f"runs[{i}]"
        group = err.typed(group, dict, f"[[runs]] #{i}")
        err.keys(
            group,
            ("provisioner", "params", "jobs", "label", "scenario", "simulation"),
            f"[[runs]] #{i}",
        )
        if "provisioner" not in group:
            err.fail(f"{where}.provisioner", "missing")
        jobs = group.get("jobs", "all")
        if jobs not in ("all", "max"):
            err.fail(f"{where}.jobs", f"expected 'all' or 'max', got {jobs!r}")
        tables = {
            part: err.typed(group.get(part, {}), dict, f"{where}.{part}")
            for part in ("params", "scenario", "simulation")
        }
        keys = [(part, k) for part, table in tables.items() for k in table]
        axes = [err.axis(group["provisioner"], f"{where}.provisioner")]
        axes += [err.axis(tables[part][k], f"{where}.{part}.{k}") for part, k in keys]
        for provisioner, *values in itertools.product(*axes):
            provisioner = err.name("provisioner", provisioner, f"{where}.provisioner")
            chosen = {part: {} for part in tables}
            for (part, k), v in zip(keys, values, strict=True):
                chosen[part][k] = v
            err.build("provisioner", provisioner, chosen["params"], f"{where}.params")
            scenario_settings(chosen["scenario"], f"{where}.scenario")
            simulation_settings(chosen["simulation"], f"{where}.simulation")
            label = group.get("label") or provisioner
            varied = chosen["scenario"] | chosen["simulation"] | chosen["params"]
            if varied:
                label += " " + " ".join(
                    f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in varied.items()
                )
            cells.append(
                (
                    label,
                    provisioner,
                    chosen["params"],
                    jobs == "max",
                    scenario | chosen["scenario"],
                    simulation | chosen["simulation"],
                )
            )
    if not cells:
        err.fail("[[runs]]", "at least one group of runs is needed")
    return CorpSpec(
        **head,
        scales=scales,
        scenario=scenario,
        simulation=simulation,
        cells=tuple(cells),
    )


@registry.register("experiment", "corp")
class CorpKind(ExperimentKind):
    """CORP experiments: provisioners x numbers of jobs on the short-job simulator."""

    columns = COLUMNS
    report_module = "reclaim.corp.report"

    def parse(self, doc: dict[str, Any], path: Path, text: str) -> CorpSpec:
        return parse_corp_spec(doc, path, text)

    def run(self, run: CorpRun) -> RunResult:
        return execute(run)


# ---------------------------------------------------------------------------------- execution
_fitted: dict[str, list[Any]] = {}


def execute(run: CorpRun) -> RunResult:
    """Build the scenario, fit the provisioner (or reuse one this process fitted alike), simulate."""
    from reclaim.corp.scenario import build_scenario
    from reclaim.corp.simulator import fit_provisioners, simulate

    started = time.perf_counter()
    scenario = build_scenario(n_jobs=run.n_jobs, seed=run.seed, **run.scenario)
    epsilon = run.simulation.get("epsilon")
    fitted, fit_s = _fit(run, scenario, epsilon, fit_provisioners)
    result = simulate(
        scenario,
        run.provisioner,
        run.params,
        seed=run.seed,
        provisioners=fitted,
        **run.simulation,
    )
    summary = result.summary() | {"fit_s": fit_s}
    return RunResult(
        summary,
        {"timeline": result.timeline},
        time.perf_counter() - started,
        {"provisioner": run.provisioner, "params": run.params, "placement": result.placement},
    )


def _fit(run: CorpRun, scenario, epsilon, fit_provisioners) -> tuple[list[Any], float]:
    """The run's provisioners, fitted, and the seconds fitting took (0 when reused).

    Settings a provisioner only reads when predicting (its ``PREDICT_SETTINGS``) do not change
    what ``fit`` learns: a provisioner fitted alike but for those is copied and given them."""
    import copy

    factory = registry.factory("provisioner", run.provisioner)
    signature = inspect.signature(factory).parameters
    late = {k: signature[k].default for k in getattr(factory, "PREDICT_SETTINGS", ())}
    params = dict(run.params)
    if epsilon is not None and "epsilon" in late:
        params.setdefault("epsilon", float(epsilon))
    learned = {k: v for k, v in params.items() if k not in late}
    key = json.dumps([run.provisioner, learned, run.seed, run.scenario], sort_keys=True)
    fit_s = 0.0
    if key not in _fitted:
        tic = time.perf_counter()
        if len(_fitted) >= FIT_CACHE:
            _fitted.pop(next(iter(_fitted)))
        _fitted[key] = fit_provisioners(scenario.train, run.provisioner, run.params, epsilon)
        fit_s = time.perf_counter() - tic
    out = []
    for prov in _fitted[key]:
        mine = copy.copy(prov)
        mine.set_params(**{k: params.get(k, default) for k, default in late.items()})
        out.append(mine)
    return out, fit_s
