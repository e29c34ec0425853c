"""The TVW-RL placement experiment (``kind = "tvw"``): a spec -> runs of the TVW replay -> results.

What ``reclaim place eval`` measures, as an experiment: placers on sequences of real usage
series arriving at a target load, one run per (store, load, policy, sequence). A run's ``seed``
is its sequence's index k; sequences are drawn from (the spec's ``seed``, k), so every policy
and every load replays the same workloads (``tvw.evaluate``)::

    name = "tvw"
    kind = "tvw"
    stores = ["sample:bitbrains"]     # usage stores ("sample:NAME" or a path); default: the
                                      # shipped bitbrains and google2011-derived samples
    seed = 0                          # the sequences' seed (place eval's --seed)
    [scenario]                        # ScenarioSpec settings but jobs (tvw.scenario)
    machines = 10
    [scale.small]
    jobs = 200                        # workloads per sequence
    loads = [30, 50, 80]              # average cluster load, %
    sequences = 5                     # sequences per load: the runs' seeds 0..4
    [[runs]]
    policy = ["best-fit", "tetris@current"]   # placer specs; '@current'/'@peak' sets the view

The learned placers (``reclaim rl eval``) are not a policy here: they live in ``reclaim.rl``,
which builds on this package.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import polars as pl

from reclaim import registry
from reclaim.errors import ReclaimError
from reclaim.experiments.kind import (
    IDENTITY_COLUMNS,
    ExperimentKind,
    KindRun,
    RunResult,
    identity,
    unique,
)
from reclaim.experiments.spec import SAMPLE_PREFIX, ScaledSpec, SpecErrors
from reclaim.tvw.evaluate import Policy, draw_sequence, measure
from reclaim.tvw.pool import Pool
from reclaim.tvw.scenario import ScenarioSpec, load_pools

COLUMNS = IDENTITY_COLUMNS | {
    "store": pl.String,
    "load": pl.Float64,
    "policy": pl.String,
    "wall_s": pl.Float64,
}
DEFAULT_STORES = ("sample:bitbrains", "sample:google2011-derived")
#: ScenarioSpec settings a spec may set; the scale gives ``jobs``.
SCENARIO_KEYS = tuple(f.name for f in fields(ScenarioSpec) if f.name != "jobs")


@dataclass(frozen=True)
class TvwScale:
    name: str
    jobs: int
    loads: tuple[float, ...]  # fractions of the cluster
    sequences: int


@dataclass(frozen=True)
class TvwRun(KindRun):
    """One sequence (``seed``: its index) at one load, placed by one policy."""

    store: str  # the store's folder
    store_name: str
    load: float
    policy: str  # a Policy's label, "best-fit@current"
    scenario: dict[str, Any]
    sequence_seed: int

    kind = "tvw"

    def columns(self) -> dict[str, Any]:
        return self.identity() | {
            "store": self.store_name,
            "load": self.load,
            "policy": self.policy,
        }


@dataclass(frozen=True)
class TvwSpec(ScaledSpec):
    stores: dict[str, str]  # name -> folder
    seed: int
    scenario: dict[str, Any]
    policies: tuple[str, ...]
    kind = "tvw"

    def runs(self, scale: str | None = None) -> list[TvwRun]:
        """Store by store, load by load, policy by policy, sequence by sequence."""
        sc = self.scale(scale)
        scenario = self.scenario | {"jobs": sc.jobs}
        runs = []
        for name, folder in self.stores.items():
            for load in sc.loads:
                for policy in self.policies:
                    for k in range(sc.sequences):
                        ident = {
                            "store": name,
                            "load": load,
                            "policy": policy,
                            "scenario": scenario,
                            "seed": self.seed,
                            "sequence": k,
                        }
                        slug = f"{name}_load{load:g}_{policy}"
                        runs.append(
                            TvwRun(
                                **identity(self, sc.name, policy, k, slug, ident),
                                store=folder,
                                store_name=name,
                                load=load,
                                policy=policy,
                                scenario=scenario,
                                sequence_seed=self.seed,
                            )
                        )
        return unique(runs, self.path)


def parse_tvw_spec(doc: dict[str, Any], path: Path, text: str) -> TvwSpec:
    """Validate a ``kind = "tvw"`` spec; every problem is one line naming the file and key."""
    err = SpecErrors(path)
    err.keys(
        doc,
        ("name", "kind", "description", "stores", "seed", "scenario", "scale", "runs"),
        "top level",
    )
    head = err.head(doc, text)
    refs = err.typed(doc.get("stores", list(DEFAULT_STORES)), list, "stores")
    if not refs:
        err.fail("stores", "expected a non-empty list of stores")
    stores = {}
    for ref in refs:
        folder = err.store(err.typed(ref, str, "stores"), "stores")
        stores[Path(folder).name if ref.startswith(SAMPLE_PREFIX) else ref] = folder
    seed = err.seeds([doc.get("seed", 0)], "seed")[0]
    scenario = dict(err.typed(doc.get("scenario", {}), dict, "[scenario]"))
    err.keys(scenario, SCENARIO_KEYS, "[scenario]")
    for key, value in scenario.items():
        if key != "scale":
            err.number(
                value,
                f"scenario.{key}",
                integer=key in ("machines", "units", "max_units", "background", "jitter"),
            )
    try:
        ScenarioSpec(**scenario).check()
    except ReclaimError as problem:  # "scenario: ..." already
        raise ReclaimError(f"{path}: {problem}") from None

    scales = {}
    for name, table in err.typed(doc.get("scale"), dict, "[scale.NAME]").items():
        where = f"scale.{name}"
        table = err.typed(table, dict, f"[{where}]")
        err.keys(table, ("jobs", "loads", "sequences"), f"[{where}]")
        jobs = err.number(table.get("jobs", 200), f"{where}.jobs", integer=True)
        loads = [
            err.number(v, f"{where}.loads")
            for v in err.axis(table.get("loads", [50]), f"{where}.loads")
        ]
        if jobs < 1 or not all(0 < v <= 100 for v in loads):
            err.fail(f"[{where}]", "jobs must be at least 1 and loads in (0, 100] %")
        sequences = err.number(table.get("sequences", 3), f"{where}.sequences", integer=True)
        if sequences < 1:
            err.fail(f"{where}.sequences", "must be at least 1")
        scales[name] = TvwScale(name, jobs, tuple(v / 100 for v in loads), sequences)
    if not scales:
        err.fail("[scale.NAME]", "at least one scale is needed")

    policies: list[str] = []
    for i, group in enumerate(err.typed(doc.get("runs"), list, "[[runs]]"), 1):
        where = f"runs[{i}]"
        group = err.typed(group, dict, f"[[runs]] #{i}")
        err.keys(group, ("policy",), f"[[runs]] #{i}")
        if "policy" not in group:
            err.fail(f"{where}.policy", "missing")
        for text_ in err.axis(group["policy"], f"{where}.policy"):
            try:
                label = Policy.parse(err.typed(text_, str, f"{where}.policy")).label
            except (ReclaimError, ValueError) as problem:
                err.fail(f"{where}.policy", str(problem))
            if label not in policies:
                policies.append(label)
    if not policies:
        err.fail("[[runs]]", "at least one group of runs is needed")
    return TvwSpec(
        **head, scales=scales, stores=stores, seed=seed, scenario=scenario, policies=tuple(policies)
    )


@registry.register("experiment", "tvw")
class TvwKind(ExperimentKind):
    """TVW-RL placement experiments: placers x loads x sequences on real usage series."""

    columns = COLUMNS
    report_module = "reclaim.tvw.report"

    def parse(self, doc: dict[str, Any], path: Path, text: str) -> TvwSpec:
        return parse_tvw_spec(doc, path, text)

    def run(self, run: TvwRun) -> RunResult:
        return execute(run)


# ---------------------------------------------------------------------------------- execution
#: The last pool loaded in this process: runs come store by store, and a pool takes seconds.
_pool: tuple[str, Pool] | None = None


def execute(run: TvwRun) -> RunResult:
    """Draw the run's sequence, place it with the run's policy, measure."""
    global _pool
    started = time.perf_counter()
    spec = ScenarioSpec(**run.scenario)
    key = f"{run.store}|{sorted(spec.quantisation.items())}"
    if _pool is None or _pool[0] != key:
        _pool = None
        _pool = key, load_pools([Path(run.store)], spec)[0]
    pool = _pool[1]
    seq = draw_sequence(pool, spec, run.load, run.sequence_seed, run.seed)
    metrics = measure(seq, Policy.parse(run.policy), spec, pool.period_s)
    return RunResult(
        {k: float(v) for k, v in metrics.items()},
        {},
        time.perf_counter() - started,
        {"store": run.store, "policy": run.policy, "scenario": run.scenario},
    )
