"""The TVW-RL end-to-end evaluation: policies x loads x sequences on each store's workloads.

Every policy sees the same sequences (same workloads, same arrivals) at a given load and seed, so
their differences are the policies' own. A policy is a placer spec (``reclaim.placement``) and the
view it places with (``tvw.replay``): by default the one the paper gives it, ``current`` for
Best-Fit (and First-Fit), ``peak`` for Tetris and CORP; ``best-fit@peak`` overrides.

One queue discipline for every placer (these heuristics and the learned ones, ``rl.env``): at
each step the waiting workloads are taken in arrival order, and one that fits no machine is passed
by later ones that fit (it keeps its place in the queue). Placers whose definition includes the
choice of workload choose among all that wait: Tetris (``tvw.tetris``: the best-aligned pending
workload) and DeepRM (its learned job-slot choice, ``rl.deeprm``).

Utilisation counts each machine's usage up to its capacity (the units it can actually serve);
what a machine is asked beyond that is the overshoot, reported on its own (``overshoot_*``), so an
over-committing placer gains no utilisation from its overshoot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl
from rich.console import Console

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.control import control_step
from reclaim.core.types import RESOURCES, Decisions
from reclaim.errors import ReclaimError
from reclaim.metrics.intervals import t_half_width
from reclaim.metrics.placement import operational_summary, utilisation
from reclaim.placement import Placer, build_placer
from reclaim.progress import count_progress
from reclaim.tvw.pool import Pool
from reclaim.tvw.replay import VIEWS, Replay, ReplayResult
from reclaim.tvw.scenario import ScenarioSpec, Sequence, load_pools, sample_sequence
from reclaim.tvw.tetris import run_tetris

#: The view each baseline has in the paper; anything else places on current usage.
PAPER_VIEW = {"tetris": "peak", "corp-packing": "peak"}

METRICS = (
    "util_cpu",
    "util_mem",
    "frag_cpu",
    "frag_mem",
    "overshoot_pct",
    "machines_used",
    "wait_mean_h",
)


@dataclass(frozen=True)
class Policy:
    """A placer spec and the view it places with."""

    spec: str
    view: str

    @classmethod
    def parse(cls, text: str) -> Policy:
        """``"tetris"`` (the paper's view) or ``"tetris@current"``."""
        spec, _, view = text.strip().partition("@")
        view = view or PAPER_VIEW.get(spec, "current")
        if view not in VIEWS:
            raise ReclaimError(f"policy {text!r}: view must be {' or '.join(VIEWS)}")
        build_placer(spec)  # an unknown plugin fails here, before any work
        return cls(spec, view)

    @property
    def label(self) -> str:
        return f"{self.spec}@{self.view}"

    def run(self, sequence: Sequence, spec: ScenarioSpec) -> ReplayResult:
        """The replay of ``sequence`` under this policy (learned placers, ``reclaim.rl``, bring
        their own ``run``)."""
        return run_policy(sequence, self, spec)


def run_policy(sequence: Sequence, policy: Policy, spec: ScenarioSpec) -> ReplayResult:
    """Replay ``sequence`` with ``policy`` placing the queue, in arrival order, at every step
    (a workload that fits nowhere is passed by later ones: the module's queue discipline).
    ``tetris`` chooses the workload as well as the machine (``tvw.tetris``)."""
    if policy.spec == "tetris":
        return run_tetris(sequence, spec, policy.view)
    placing = PlaceQueue(build_placer(policy.spec))
    replay = Replay.of(sequence, spec, policy.view)
    while True:
        if replay.queue:
            control_step(replay, placing, None, replay, rows=np.array(replay.queue, np.int64))
        if not replay.advance():
            return replay.result()


@dataclass(frozen=True)
class PlaceQueue:
    """A heuristic TVW policy on the control step: the waiting workloads, in arrival order, are
    bound where ``placer`` puts them (those that fit nowhere wait)."""

    placer: Placer
    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def decide(self, view: Replay, forecast: object = None) -> Decisions:
        jobs = np.array(view.queue, np.int64)
        hosts = self.placer.place(view.capacity_, view.free(), view.up_, view.demand(jobs))
        placed = hosts >= 0
        return Decisions(bind_rows=jobs[placed], bind_hosts=hosts[placed])


def evaluate(
    pools: list[Pool],
    spec: ScenarioSpec,
    loads: list[float],
    policies: list[Policy],
    sequences: int,
    seed: int,
    on_run: Callable[[], None] | None = None,
) -> pl.DataFrame:
    """One row per (store, load, sequence, policy) with the metrics of ``operational_summary``,
    the offered load and the observed steps. ``on_run`` is called after each run (progress)."""
    spec.check()
    rows = []
    for pool in pools:
        for load in loads:
            for k in range(sequences):
                seq = draw_sequence(pool, spec, load, seed, k)
                for policy in policies:
                    rows.append(
                        {
                            "store": pool.name,
                            "load": load,
                            "sequence": k,
                            "policy": policy.label,
                            **measure(seq, policy, spec, pool.period_s),
                        }
                    )
                    if on_run is not None:
                        on_run()
    return pl.DataFrame(rows)


def draw_sequence(pool: Pool, spec: ScenarioSpec, load: float, seed: int, k: int) -> Sequence:
    """Sequence ``k`` of ``seed`` at ``load``: its workloads depend on (seed, k) only, so every
    load replays the same workloads."""
    return sample_sequence(
        pool,
        spec,
        load,
        np.random.default_rng([seed, k]),
        np.random.default_rng([seed, k, round(load * 1000)]),
    )


def measure(seq: Sequence, policy: Policy, spec: ScenarioSpec, period_s: float) -> dict:
    """The offered load, the observed steps and ``placement_metrics`` of ``policy`` on ``seq``."""
    offered = seq.rate * seq.work.mean(axis=0) / (spec.machines * spec.units)
    result = policy.run(seq, spec)
    capacity = np.full(result.usage.shape[-1], spec.units)
    return (
        {f"offered_{r}": float(o) for r, o in zip(RESOURCES, offered, strict=True)}
        | {"steps": len(result.usage)}
        | placement_metrics(result, capacity, period_s)
    )


def placement_metrics(result: ReplayResult, capacity, period_s: float) -> dict[str, float]:
    """``operational_summary`` of a replay, utilisation counted up to capacity (usage clipped at
    each machine's capacity; the overshoot metrics keep the excess)."""
    metrics = operational_summary(
        result.usage, result.active, capacity, result.arrival, result.start, period_s
    )
    served = np.minimum(result.usage, np.asarray(capacity, result.usage.dtype))
    for r, u in zip(RESOURCES, utilisation(served, result.active, capacity), strict=True):
        metrics[f"util_{r}"] = float(u)
    return metrics


def summarize(runs: pl.DataFrame) -> pl.DataFrame:
    """Mean, standard deviation and 95 % t-interval half-width (``_half``) over sequences of
    every metric, per store, load and policy, in the order the runs came."""
    cols = [*METRICS, "overshoot_cpu", "overshoot_mem", "offered_cpu", "offered_mem", "unplaced"]
    summary = runs.group_by("store", "load", "policy", maintain_order=True).agg(
        pl.len().alias("sequences"),
        *(pl.col(c).mean() for c in cols),
        *(pl.col(c).std().alias(f"{c}_std") for c in METRICS),
    )
    n = summary["sequences"].to_numpy()
    return summary.with_columns(
        pl.Series(f"{c}_half", t_half_width(summary[f"{c}_std"].to_numpy(), n)) for c in METRICS
    )


def run_evaluation(
    stores: list[Path],
    spec: ScenarioSpec,
    loads: list[float],
    policies: list[Policy],
    sequences: int,
    seed: int,
    out: Path,
    console: Console | None = None,
) -> tuple[list[Pool], pl.DataFrame]:
    """Pools from ``stores``, every run with a progress bar, and runs.parquet, summary.parquet and
    scenario.json under ``out``; returns the pools and the summary."""
    pools = load_pools(stores, spec)
    with count_progress("runs", console) as progress:
        bar = progress.add_task(
            "placing", total=len(pools) * len(loads) * sequences * len(policies)
        )
        runs = evaluate(
            pools, spec, loads, policies, sequences, seed, lambda: progress.advance(bar)
        )
    summary = summarize(runs)
    out.mkdir(parents=True, exist_ok=True)
    runs.write_parquet(out / "runs.parquet")
    summary.write_parquet(out / "summary.parquet")
    meta = asdict(spec) | {"loads": loads, "policies": [p.label for p in policies], "seed": seed}
    (out / "scenario.json").write_text(json.dumps(meta | {"sequences": sequences}, indent=2) + "\n")
    return pools, summary
