"""google2011-jobs: import time of the shared development extract and JobTables draw speed.

The extract is 345 job-event files (1.41 M rows) and 14 task-event files (2.61 M rows); the
paper-world workload draws 150,000 applications' gaps, runtimes and task counts from the tables.

    python benchmarks/bench_google2011_jobs.py [--traces /work/shared/traces] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from reclaim.traces.importer import import_trace
from reclaim.workload.job_tables import JobTables

SOURCE = "google-clusterdata-2011-2-jobs"
DRAWS = 1_000_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=Path(__file__).parents[2] / "shared" / "traces")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        seconds = []
        for k in range(args.repeat):
            t0 = time.perf_counter()
            report = import_trace("google2011-jobs", args.traces / SOURCE, Path(tmp) / f"s{k}")
            seconds.append(time.perf_counter() - t0)
        print(
            f"import: median {np.median(seconds):.1f} s over {args.repeat} "
            f"(min {min(seconds):.1f} s), {report.rows['workloads']:,} jobs"
        )
        tables = JobTables.from_store(report.store)
    rng = np.random.default_rng(0)
    for quantity in tables.tables:
        t0 = time.perf_counter()
        tables.draw(quantity, DRAWS, rng)
        elapsed = time.perf_counter() - t0
        print(f"draw {quantity}: {DRAWS / elapsed / 1e6:.0f} M values/s")


if __name__ == "__main__":
    main()
