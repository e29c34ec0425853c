"""One run of an experiment, as a worker process executes it: build the workload, simulate.

The last workload built is kept in the process: runs are handed out seed by seed, so a worker
moving through a grid builds each workload once. Only one is kept because at the paper's scale
a workload holds ~3 GB of arrays.
"""

from __future__ import annotations

import json
from pathlib import Path

from reclaim.experiments.spec import Run
from reclaim.sim.results import SimResult
from reclaim.sim.run import simulate
from reclaim.workload.builder import WorkloadSpec, build_workload
from reclaim.workload.model import Workload

_cached: tuple[str, Workload] | None = None


def execute(run: Run) -> SimResult:
    """Simulate ``run``; the same run gives bit-identical results in any process."""
    spec = WorkloadSpec(
        seed=run.seed,
        **{k: v for k, v in run.workload.items() if k not in ("jobs", "shapes", "pairing")},
    )
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
    return simulate(workload_for(spec, run.stores), run.settings, extra=extra)


def workload_for(spec: WorkloadSpec, stores: tuple[str, tuple[str, ...], str | None]) -> Workload:
    """``build_workload(spec, *stores)``, reusing the last one built in this process."""
    global _cached
    key = json.dumps([vars(spec), stores], sort_keys=True)
    if _cached is None or _cached[0] != key:
        _cached = None  # let the old arrays go before the new ones are built
        jobs, shapes, pairing = stores
        paired = None if pairing is None else Path(pairing)
        _cached = key, build_workload(spec, Path(jobs), [Path(s) for s in shapes], paired)[0]
    return _cached[1]
