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

A provisioner is fitted once per (settings, seed) in a worker process and reused across numbers
of jobs: the training jobs of a scenario depend on its seed, not on how many test jobs it has.
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

from reclaim.errors import ReclaimError
from reclaim.experiments.kind import IDENTITY_COLUMNS, KindRun, RunResult, run_id
from reclaim.experiments.spec import ScaledSpec, SpecErrors

COLUMNS = IDENTITY_COLUMNS | {
    "provisioner": pl.String,
    "params": pl.String,
    "n_jobs": pl.Int64,
    "wall_s": pl.Float64,
}
SIMULATION_KEYS = ("window", "epsilon", "borrowing")


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

    COLUMNS = COLUMNS

    def columns(self) -> dict[str, Any]:
        return self.identity() | {
            "provisioner": self.provisioner,
            "params": json.dumps(self.params, sort_keys=True),
            "n_jobs": self.n_jobs,
        }

    def execute(self) -> RunResult:
        return execute(self)


@dataclass(frozen=True)
class CorpSpec(ScaledSpec):
    scenario: dict[str, Any]
    simulation: dict[str, Any]
    cells: tuple[tuple[str, str, dict[str, Any], bool], ...]  # label, provisioner, params, max only
    kind = "corp"

    def runs(self, scale: str | None = None) -> list[CorpRun]:
        """Cell by cell, number of jobs by number of jobs, seed by seed."""
        sc = self.scale(scale)
        runs = []
        for label, provisioner, params, max_only in self.cells:
            for n_jobs, seed in itertools.product(
                (max(sc.jobs),) if max_only else sc.jobs, sc.seeds
            ):
                ident = {
                    "provisioner": provisioner,
                    "params": params,
                    "n_jobs": n_jobs,
                    "seed": seed,
                    "scenario": self.scenario,
                    "simulation": self.simulation,
                }
                runs.append(
                    CorpRun(
                        run_id=run_id(f"{label}_jobs{n_jobs}", seed, ident),
                        experiment=self.name,
                        scale=sc.name,
                        label=label,
                        seed=seed,
                        provisioner=provisioner,
                        params=params,
                        n_jobs=n_jobs,
                        scenario=self.scenario,
                        simulation=self.simulation,
                    )
                )
        ids = [r.run_id for r in runs]
        if len(set(ids)) != len(ids):
            raise ReclaimError(f"{self.path}: [[runs]] ask for the same run twice")
        return runs


def parse_corp_spec(doc: dict[str, Any], path: Path, text: str) -> CorpSpec:
    """Validate a ``kind = "corp"`` spec; every problem is one line naming the file and key."""
    from reclaim.corp.scenario import build_scenario
    from reclaim.corp.simulator import BORROWING, simulate

    err = SpecErrors(path)
    err.keys(
        doc,
        ("name", "kind", "description", "scenario", "simulation", "scale", "runs"),
        "top level",
    )
    head = err.head(doc, text)

    scenario = dict(err.typed(doc.get("scenario", {}), dict, "[scenario]"))
    allowed = set(inspect.signature(build_scenario).parameters) - {"n_jobs", "seed"}
    for key, value in scenario.items():
        if key not in allowed:
            err.fail(f"scenario.{key}", f"no such setting (settings: {', '.join(sorted(allowed))})")
        if not isinstance(value, str | list):
            err.number(value, f"scenario.{key}", integer=key in ("n_vms", "n_pms", "n_train"))
    simulation = dict(err.typed(doc.get("simulation", {}), dict, "[simulation]"))
    err.keys(simulation, SIMULATION_KEYS, "[simulation]")
    for key, value in simulation.items():
        if key == "borrowing":
            if value not in BORROWING:
                err.fail("simulation.borrowing", f"expected one of {', '.join(BORROWING)}")
        else:
            err.number(value, f"simulation.{key}", integer=key == "window")
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
        err.keys(group, ("provisioner", "params", "jobs", "label"), f"[[runs]] #{i}")
        if "provisioner" not in group:
            err.fail(f"{where}.provisioner", "missing")
        jobs = group.get("jobs", "all")
        if jobs not in ("all", "max"):
            err.fail(f"{where}.jobs", f"expected 'all' or 'max', got {jobs!r}")
        params = err.typed(group.get("params", {}), dict, f"{where}.params")
        keys = list(params)
        axes = [err.axis(group["provisioner"], f"{where}.provisioner")]
        axes += [err.axis(params[k], f"{where}.params.{k}") for k in keys]
        for provisioner, *values in itertools.product(*axes):
            provisioner = err.name("provisioner", provisioner, f"{where}.provisioner")
            chosen = dict(zip(keys, values, strict=True))
            err.build("provisioner", provisioner, chosen, f"{where}.params")
            label = group.get("label") or provisioner
            if chosen:
                label += " " + " ".join(
                    f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in chosen.items()
                )
            cells.append((label, provisioner, chosen, jobs == "max"))
    if not cells:
        err.fail("[[runs]]", "at least one group of runs is needed")
    return CorpSpec(
        **head,
        scales=scales,
        scenario=scenario,
        simulation=simulation,
        cells=tuple(cells),
    )


# ---------------------------------------------------------------------------------- execution
_fitted: tuple[str, list[Any]] | None = None


def execute(run: CorpRun) -> RunResult:
    """Build the scenario, fit the provisioner (or reuse this process's last fit), simulate."""
    from reclaim.corp.scenario import build_scenario
    from reclaim.corp.simulator import fit_provisioners, simulate

    global _fitted
    started = time.perf_counter()
    scenario = build_scenario(n_jobs=run.n_jobs, seed=run.seed, **run.scenario)
    epsilon = run.simulation.get("epsilon")
    key = json.dumps([run.provisioner, run.params, run.seed, run.scenario, epsilon], sort_keys=True)
    fit_s = 0.0
    if _fitted is None or _fitted[0] != key:
        tic = time.perf_counter()
        _fitted = key, fit_provisioners(scenario.train, run.provisioner, run.params, epsilon)
        fit_s = time.perf_counter() - tic
    result = simulate(
        scenario,
        run.provisioner,
        run.params,
        seed=run.seed,
        provisioners=_fitted[1],
        **run.simulation,
    )
    summary = result.summary() | {"fit_s": fit_s}
    return RunResult(
        summary,
        {"timeline": result.timeline},
        time.perf_counter() - started,
        {"provisioner": run.provisioner, "params": run.params, "placement": result.placement},
    )
