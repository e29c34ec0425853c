"""Paper-scale run of the reservation baseline: wall time, component-ticks/s, peak memory.

The setting of the shaping paper's section 4.1: 250 hosts of 32 cores and 128 GiB, 150,000
applications sampled from the real traces, arrivals over about three months. Targets: the whole
run under 2 minutes on a 2-core machine and at least 2e7 component-ticks per second.

    python benchmarks/bench_simulate.py [--apps 150000] [--jobs STORE] [--shapes STORE ...]
        [--reference]

``--reference`` runs arrivals and completions through the engine and the Python handlers instead
of the compiled event loop (the same results, bit for bit; tests/sim/test_event_loop.py).
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from reclaim.sim.run import RunSettings, replay
from reclaim.sim.simulator import Simulator
from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux reports KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=150_000)
    parser.add_argument("--days", type=float, default=90.0, help="arrival span at 150k apps")
    parser.add_argument("--hosts", default="250x32c128g")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=Path)
    parser.add_argument("--shapes", type=Path, nargs="*")
    parser.add_argument("--reference", action="store_true", help="Python event handlers")
    args = parser.parse_args()
    Simulator.compiled = not args.reference

    default_jobs, default_shapes = default_stores()
    spec = WorkloadSpec(
        n_apps=args.apps, seed=args.seed, horizon=args.days * 86400.0 * args.apps / 150_000
    )
    started = time.perf_counter()
    workload, _ = build_workload(spec, args.jobs or default_jobs, args.shapes or default_shapes)
    build_s = time.perf_counter() - started
    result = replay(workload, RunSettings(hosts=args.hosts, controller="reservation"))
    st = result.stats
    print(f"applications            {workload.n_apps:,}")
    print(f"components              {workload.n_components:,}")
    print(f"simulated days          {result.summary['simulated_days']:.1f}")
    print(f"workload build          {build_s:.1f} s")
    print(f"simulation wall time    {st.wall_s:.1f} s")
    print(f"whole run               {build_s + st.wall_s:.1f} s   (target < 120 s)")
    print(f"events                  {st.events:,}")
    print(f"monitor ticks           {st.ticks:,}")
    print(f"component-ticks         {st.component_ticks:,}")
    print(f"component-ticks / s     {st.component_ticks / st.wall_s:,.0f}   (target >= 2e7)")
    print(f"  within monitor ticks  {st.component_ticks / st.tick_s:,.0f}   ({st.tick_s:.1f} s)")
    print(f"events and admission    {st.wall_s - st.tick_s:.1f} s   (set-up included)")
    print(f"peak memory             {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
