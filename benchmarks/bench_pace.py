"""The shaping paper's own world at its scale: build time of its workload and wall time of the
oracle trio (reservation, optimistic, pessimistic), one seed, as ``pace-paper`` runs them.

Target (issue: the paper's world, fast enough to use): the trio at paper scale (150,000
applications, 250 hosts of 32 cores and 64 GiB, 90 simulated days of 60 s ticks) under 15
minutes on this 2-core machine (the runs on two workers). The default ``--days 90`` measures
whole runs. A shorter ``--days`` stops each run early and extrapolates its rate to 90 days, which
overstates: the flood fills the cluster in the first hours and drains over the following days
(CPU per tick, reservation / optimistic / pessimistic: 4.9 / 11.9 / 11.9 ms over the first
half day, 1.93 / 3.94 / 3.66 ms over the 90 days). ``--from-days`` measures the rate only from
that day on (the set-up and the filling first hours left out). Each run's line splits a tick
into the compiled event loop between ticks (arrivals, completions, admission), the control
step's forecast, decide and apply phases, and the rest (demand and the interval's accounting),
and gives the process's CPU time beside the wall time: on a machine other jobs share, wall time
counts their turns too.

``--cells`` times other cells of the spec instead, e.g. the GP cell of Figure 4 (of several cells
with one label, the last: K2 = 3), where the forecaster's share of a tick shows.

    python benchmarks/bench_pace.py [--scale paper] [--days 90] [--from-days 0] [--seed 0]
        [--cells reservation,optimistic/oracle,pessimistic/oracle]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from reclaim.experiments.spec import load_spec
from reclaim.sim.experiment import STORE_KEYS, workload_for
from reclaim.sim.run import build_policies, build_simulator
from reclaim.sim.simulator import RunStats
from reclaim.workload.paper_world import PaperWorldSpec

TRIO = ("reservation", "optimistic/oracle", "pessimistic/oracle")
HORIZON_DAYS = 90.0
PARTS = ("events", "forecast", "decide", "apply")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--days", type=float, default=HORIZON_DAYS)
    parser.add_argument("--from-days", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", default=",".join(TRIO))
    args = parser.parse_args()
    cells = tuple(args.cells.split(","))
    runs = {
        r.label: r
        for r in load_spec("pace-paper").runs(args.scale)
        if r.seed == args.seed and r.world == "" and r.label in cells
    }
    first = runs[cells[0]]
    began = time.perf_counter()
    settings = {k: v for k, v in first.workload.items() if k not in STORE_KEYS}
    workload = workload_for(PaperWorldSpec(seed=args.seed, **settings), first.stores)
    build_s = time.perf_counter() - began
    print(
        f"pace-paper {args.scale}: {workload.n_apps:,} applications, {workload.n_components:,} "
        f"components, {len(workload.shapes.data):,} usage peaks; built in {build_s:.1f} s"
    )
    total = build_s
    for label in cells:
        settings = replace(runs[label].settings, horizon_s=args.days * 86400.0)
        controller, forecaster = build_policies(settings)
        mark = Mark(args.from_days * 86400.0)
        sim = build_simulator(workload, settings, controller, forecaster, on_tick=mark).run()
        stats = mark.since(sim.stats)
        ticks = max(stats.ticks, 1)
        cpu = time.process_time() - mark.cpu
        full = stats.wall_s / ticks * HORIZON_DAYS * 86400.0 / sim.state.period
        total += full
        parts = {p: 1e3 * getattr(stats, f"seconds_{p}") / ticks for p in PARTS}
        parts["rest"] = 1e3 * stats.tick_s / ticks - sum(parts[p] for p in PARTS[1:])
        print(
            f"  {label:20} {stats.wall_s:7.1f} s, {stats.ticks:,} ticks from day "
            f"{args.from_days:g} to {args.days:g} ({stats.component_ticks / ticks:,.0f} rows/tick): "
            f"{1e3 * stats.wall_s / ticks:.2f} ms/tick = "
            + " + ".join(f"{name} {ms:.2f}" for name, ms in parts.items())
            + f" (CPU {1e3 * cpu / ticks:.2f}); {full / 60:.1f} min for {HORIZON_DAYS:g} days"
        )
    target = " (target: 15)" if cells == TRIO else ""
    print(f"  build + cells over {HORIZON_DAYS:g} days: {total / 60:.1f} min{target}")


class Mark:
    """An ``on_tick`` that copies the run's stats (and the process's CPU time) at the first tick
    at or past ``at`` seconds, so that rates can be measured from there (until then the copy is
    empty: from the start)."""

    def __init__(self, at: float) -> None:
        self.at, self.stats = at, RunStats()
        self.started, self.cpu = time.perf_counter(), time.process_time()

    def __call__(self, sim) -> None:
        if self.stats.ticks == 0 and sim.state.now >= self.at > 0:
            self.stats = replace(sim.stats, wall_s=time.perf_counter() - self.started)
            self.cpu = time.process_time()

    def since(self, end: RunStats) -> RunStats:
        """``end`` minus the stats copied at the mark (wall time from the mark)."""
        fields = vars(end)
        return RunStats(**{k: v - getattr(self.stats, k) for k, v in fields.items()})


if __name__ == "__main__":
    main()
