"""Paper-scale workload build: wall time and peak memory of ``build_workload``.

Section 4.1 of the shaping paper samples 150,000 applications (~1.4e8 components from Alibaba 2017
jobs). Target: well under 30 s and ~5 GB on a 2-core machine.

    python benchmarks/bench_workload.py [--apps 150000] [--jobs STORE] [--shapes STORE ...]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=150_000)
    parser.add_argument("--days", type=float, default=90.0, help="arrival span")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=Path)
    parser.add_argument("--shapes", type=Path, nargs="*")
    args = parser.parse_args()

    default_jobs, default_shapes = default_stores()
    spec = WorkloadSpec(n_apps=args.apps, seed=args.seed, horizon=args.days * 86400.0)
    started = time.perf_counter()
    workload, report = build_workload(
        spec, args.jobs or default_jobs, args.shapes or default_shapes
    )
    build_s = time.perf_counter() - started
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB
    print(f"applications        {workload.n_apps:,}")
    print(f"components          {workload.n_components:,}")
    print(f"shapes              {len(workload.shapes):,} ({report.shape_samples:,} samples)")
    print(f"jobs used/excluded  {report.jobs_used:,} / {report.jobs_excluded}")
    print(f"arrival scale       {report.arrival_scale:.3f}")
    print(
        f"clipped share       cpu {report.clipped_share[0]:.4%}, mem {report.clipped_share[1]:.4%}"
    )
    print(f"offered cores       {report.offered_core_seconds / report.arrival_span:,.0f} (mean)")
    print(f"build time          {build_s:.1f} s   (target well under 30 s)")
    print(f"peak memory         {peak_gib:.2f} GiB (target ~5 GB)")


if __name__ == "__main__":
    main()
