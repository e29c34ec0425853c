"""Result stores built from real tiny simulations, laid out as the experiment runner writes them."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import polars as pl
import pytest

from reclaim.sim.results import SimResult
from reclaim.sim.run import RunSettings, replay
from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores

HOSTS = "4x32c128g"


@functools.cache
def _workload(seed: int):
    jobs, shapes = default_stores()
    return build_workload(WorkloadSpec(n_apps=40, seed=seed, horizon=40 * 60.0), jobs, shapes)[0]


@functools.cache
def run(seed, controller, forecaster=None, k1=None, k2=None, coverage=None) -> SimResult:
    """One real simulation, cached across the session (stores share runs)."""
    params = {k: v for k, v in (("k1", k1), ("k2", k2)) if v is not None}
    f_params = {"base": "naive", "coverage": coverage} if coverage is not None else {}
    settings = RunSettings(
        hosts=HOSTS,
        controller=controller,
        controller_params=params,
        forecaster=forecaster,
        forecaster_params=f_params,
        horizon_s=3 * 86400.0,
    )
    return replay(_workload(seed), settings)


def write_store(root: Path, name: str, specs: list[dict], scale: str = "tiny") -> Path:
    """``specs``: dicts of run() arguments; writes experiment.json, runs/<id>/ and runs.parquet."""
    root.mkdir(parents=True)
    (root / "experiment.json").write_text(
        json.dumps({"name": name, "scale": scale, "description": f"{name} on {HOSTS}"})
    )
    rows = []
    for i, spec in enumerate(specs):
        spec = {"forecaster": None, "k1": None, "k2": None, "coverage": None} | spec
        result = run(**spec)
        run_id = f"{i:03d}"
        result.write(root / "runs" / run_id)
        label = spec["controller"] + (f"/{spec['forecaster']}" if spec["forecaster"] else "")
        rows.append(
            {"run_id": run_id, "experiment": name, "scale": scale, "label": label}
            | spec
            | {"wall_s": result.stats.wall_s}
            | result.summary
        )
    schema = {"k1": pl.Float64, "k2": pl.Float64, "coverage": pl.Float64, "forecaster": pl.String}
    pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None).write_parquet(
        root / "runs.parquet"
    )
    return root


FIG3 = [
    {"seed": seed, "controller": c, "forecaster": f}
    for seed in (1, 2)
    for c, f in (("reservation", None), ("optimistic", "oracle"), ("pessimistic", "oracle"))
]
FIG4 = [{"seed": 1, "controller": "reservation"}] + [
    {"seed": 1, "controller": "pessimistic", "forecaster": "gp-exp", "k1": k1, "k2": k2}
    for k1 in (0.0, 0.05)
    for k2 in (0.0, 3.0)
]
CONFORMAL = [{"seed": 1, "controller": "reservation"}] + [
    {"seed": 1, "controller": "pessimistic", "forecaster": "conformal", "coverage": c}
    for c in (0.9, 0.99)
]


@pytest.fixture(scope="session")
def fig3_store(tmp_path_factory) -> Path:
    return write_store(tmp_path_factory.mktemp("stores") / "fig3", "pace-fig3", FIG3)


@pytest.fixture(scope="session")
def fig4_store(tmp_path_factory) -> Path:
    return write_store(tmp_path_factory.mktemp("stores") / "fig4", "pace-fig4", FIG4)


@pytest.fixture(scope="session")
def conformal_store(tmp_path_factory) -> Path:
    return write_store(tmp_path_factory.mktemp("stores") / "conformal", "conformal", CONFORMAL)
