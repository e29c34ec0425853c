"""One run of an experiment, as a worker process executes it: build the workload, simulate.

The last workload built is kept in the process: runs are handed out seed by seed, so a worker
moving through a grid builds each workload once. Only one is kept because at the paper's scale
a workload holds ~3 GB of arrays.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from reclaim.experiments.spec import PAPER_SOURCE, Run
from reclaim.sim.results import SimResult
from reclaim.sim.run import simulate
from reclaim.workload.builder import WorkloadSpec, build_workload
from reclaim.workload.model import Workload
from reclaim.workload.paper_world import (
    PaperInputs,
    PaperWorldSpec,
    build_paper_world,
    trace_shapes,
)

#: Workload keys that name stores or the source, not settings of the workload's spec.
STORE_KEYS = ("jobs", "shapes", "pairing", "source")

_cached: tuple[str, Workload] | None = None


def execute(run: Run) -> SimResult:
    """Simulate ``run``; the same run gives bit-identical results in any process."""
    settings = {k: v for k, v in run.workload.items() if k not in STORE_KEYS}
    if run.workload.get("source") == PAPER_SOURCE:
        spec = PaperWorldSpec(seed=run.seed, **settings)
    else:
        spec = WorkloadSpec(seed=run.seed, **settings)
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


def workload_for(
    spec: WorkloadSpec | PaperWorldSpec, stores: tuple[str, tuple[str, ...], str | None]
) -> Workload:
    """The workload of ``spec`` from ``stores``, reusing the last one built in this process."""
    global _cached
    key = json.dumps([type(spec).__name__, asdict(spec), stores], sort_keys=True)
    if _cached is None or _cached[0] != key:
        _cached = None  # let the old arrays go before the new ones are built
        jobs, shapes, pairing = stores
        if isinstance(spec, PaperWorldSpec):
            traces = None
            if spec.usage == "traces":
                traces = trace_shapes([Path(s) for s in shapes], Path(pairing), spec.period,
                                      spec.seed)  # fmt: skip
            workload = build_paper_world(spec, PaperInputs.load(Path(jobs)), traces)
        else:
            paired = None if pairing is None else Path(pairing)
            workload = build_workload(spec, Path(jobs), [Path(s) for s in shapes], paired)[0]
        _cached = key, workload
    return _cached[1]
