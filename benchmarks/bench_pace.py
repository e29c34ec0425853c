"""The shaping paper's own world at its scale: build time of its workload and wall time of the
oracle trio (reservation, optimistic, pessimistic), one seed, as ``pace-paper`` runs them.

Target (issue: the paper's world, fast enough to use): the trio at paper scale (150,000
applications, 250 hosts of 32 cores and 64 GiB, 90 simulated days of 60 s ticks) under 15
minutes on this 2-core machine. ``--days`` stops each run early and reports the rate, from which
the full 90 days are extrapolated (ticks cost about the same through a flooded run: the cluster
is full from the first day).

    python benchmarks/bench_pace.py [--scale paper] [--days 90] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from reclaim.experiments.spec import load_spec
from reclaim.sim.experiment import STORE_KEYS, workload_for
from reclaim.sim.run import build_policies, build_simulator
from reclaim.workload.paper_world import PaperWorldSpec

TRIO = ("reservation", "optimistic/oracle", "pessimistic/oracle")
HORIZON_DAYS = 90.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--days", type=float, default=HORIZON_DAYS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runs = {
        r.label: r
        for r in load_spec("pace-paper").runs(args.scale)
        if r.seed == args.seed and r.world == "" and r.label in TRIO
    }
    first = runs[TRIO[0]]
    began = time.perf_counter()
    settings = {k: v for k, v in first.workload.items() if k not in STORE_KEYS}
    workload = workload_for(PaperWorldSpec(seed=args.seed, **settings), first.stores)
    build_s = time.perf_counter() - began
    print(
        f"pace-paper {args.scale}: {workload.n_apps:,} applications, {workload.n_components:,} "
        f"components, {len(workload.shapes.data):,} usage peaks; built in {build_s:.1f} s"
    )
    total = build_s
    for label in TRIO:
        settings = replace(runs[label].settings, horizon_s=args.days * 86400.0)
        controller, forecaster = build_policies(settings)
        sim = build_simulator(workload, settings, controller, forecaster).run()
        wall = sim.stats.wall_s
        full = wall * HORIZON_DAYS / args.days
        total += full
        print(
            f"  {label:20} {wall:8.1f} s for {args.days:g} days ({sim.stats.ticks:,} ticks, "
            f"{1e3 * wall / max(sim.stats.ticks, 1):.2f} ms/tick, "
            f"{sim.stats.component_ticks / max(sim.stats.ticks, 1):,.0f} rows/tick): "
            f"{full / 60:.1f} min for {HORIZON_DAYS:g} days"
        )
    print(f"  build + trio over {HORIZON_DAYS:g} days: {total / 60:.1f} min (target: 15)")


if __name__ == "__main__":
    main()
