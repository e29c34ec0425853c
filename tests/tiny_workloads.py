"""Tiny hand-made workloads whose outcomes can be computed by hand (a module, not conftest, so
that test files import it by a name no other directory's conftest shadows)."""

from __future__ import annotations

import numpy as np

from reclaim.core.grouped import GroupedArray
from reclaim.workload.model import Workload


def tiny_workload(apps, shapes=None, period=300.0) -> Workload:
    """``apps``: list of (arrival, [(cpu, mem, work, core, shape, offset), ...]).

    ``shapes``: list of (n, 2) arrays of usage as a fraction of request (default: one constant
    shape at half the request).
    """
    shapes = shapes if shapes is not None else [np.array([[0.5, 0.5]])]
    comps = [c for _, cs in apps for c in cs]
    sizes = [len(cs) for _, cs in apps]
    col = list(zip(*comps, strict=True))
    return Workload(
        arrival=np.array([a for a, _ in apps], np.float64),
        comp_indptr=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        request=np.array([col[0], col[1]], np.float32).T.copy(),
        work=np.array(col[2], np.float32),
        core=np.array(col[3], bool),
        shape=np.array(col[4], np.int32),
        shape_offset=np.array(col[5], np.int32),
        shapes=GroupedArray.from_series([np.asarray(s, np.float32) for s in shapes]),
        period=period,
    ).validate()


def tiny_paper_world(label: str, days: float = 2.0):
    """The paper's world at its tiny scale (600 applications, one host) and the settings of the
    run ``label`` of ``pace-paper``, stopped after ``days``."""
    from dataclasses import replace

    from reclaim.experiments.spec import load_spec
    from reclaim.workload.paper_world import PaperInputs, PaperWorldSpec, build_paper_world

    run = next(r for r in load_spec("pace-paper").runs("tiny") if r.label == label and not r.world)
    workload = build_paper_world(PaperWorldSpec(n_apps=600, seed=0), PaperInputs.load())
    return workload, replace(run.settings, horizon_s=days * 86400.0)
