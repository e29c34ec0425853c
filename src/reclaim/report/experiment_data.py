"""A result store read back for reporting: its runs, the per-seed turnaround ratio over the
reservation baseline, and runs aggregated over seeds into cells (a label and its parameters).

The store is what the experiment runner writes: ``experiment.json``, ``runs.parquet`` (one row per
finished run) and ``runs/<run_id>/{apps,timeline}.parquet``. A sweep that was interrupted is
still a store: everything here works on the runs that finished.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from reclaim.errors import ReclaimError

BASELINE = "reservation"
#: What identifies a cell: runs that differ only in their seed.
CELL = ["experiment", "label", "controller", "forecaster", "k1", "k2", "coverage"]
#: Per-run metrics averaged over seeds; ``slack_*`` and ``failure_rate`` are derived by ``derive``.
METRICS = [
    "apps_done",
    "turnaround_mean_s",
    "turnaround_p50_s",
    "turnaround_ratio",
    "slack_cpu",
    "slack_mem",
    "slack_mem_weighted",
    "failure_rate",
    "preemptions",
    "work_lost_core_h",
]
_REQUIRED = ["run_id", "label", "controller", "seed"]
_OPTIONAL_TEXT = ["experiment", "scale", "forecaster"]
_OPTIONAL_FLOAT = [
    "k1",
    "k2",
    "coverage",
    "apps",
    "apps_done",
    "apps_failed_at_least_once",
    "turnaround_mean_s",
    "turnaround_p50_s",
    "preemptions",
    "work_lost_core_h",
    "slack_cpu_weighted",
    "slack_mem_weighted",
]


@dataclass
class ResultStore:
    """``runs``: one row per finished run, with the derived columns of ``derive``.
    ``pending``: run directories without a finished row (a sweep still running or interrupted)."""

    root: Path
    name: str
    scale: str
    description: str
    runs: pl.DataFrame
    pending: int

    def run_table(self, run_ids: list[str], table: str) -> pl.DataFrame | None:
        """``apps`` or ``timeline`` of these runs stacked, with ``run_id``; None if none is on disk
        (a store copied without its per-run files still reports its summary)."""
        frames = []
        for run_id in run_ids:
            path = self.root / "runs" / run_id / f"{table}.parquet"
            if path.exists():
                frames.append(pl.read_parquet(path).with_columns(run_id=pl.lit(run_id)))
        return pl.concat(frames, how="diagonal_relaxed") if frames else None


def read_store(root: Path, required: list[str]) -> tuple[pl.DataFrame, dict, int]:
    """``runs.parquet`` (checked for ``required`` columns, with experiment and scale filled in),
    ``experiment.json`` and the number of run folders without a row, for any kind of experiment;
    anything missing or unreadable is a ReclaimError."""
    path = root / "runs.parquet"
    if not path.exists():
        raise ReclaimError(f"{root}: no runs.parquet (not a result store, or no run finished yet)")
    try:
        runs = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise ReclaimError(f"{path}: unreadable ({str(err).splitlines()[0]})") from None
    missing = [c for c in required if c not in runs.columns]
    if missing:
        raise ReclaimError(f"{path}: missing column(s) {', '.join(missing)}")
    if runs.is_empty():
        raise ReclaimError(f"{path}: no finished run yet")
    meta = experiment_meta(root)
    runs = runs.with_columns(
        [pl.lit(None, pl.String).alias(c) for c in ("experiment", "scale") if c not in runs.columns]
    ).with_columns(
        pl.col("experiment").fill_null(str(meta.get("name", root.name))),
        pl.col("scale").fill_null(str(meta.get("scale", ""))),
        pl.col("run_id").cast(pl.String),
    )
    run_dirs = {p.name for p in (root / "runs").glob("*") if p.is_dir()}
    return runs, meta, len(run_dirs - set(runs["run_id"]))


def experiment_meta(root: Path) -> dict:
    """``experiment.json`` of a result store ({} if absent)."""
    meta_path = root / "experiment.json"
    try:
        return json.loads(meta_path.read_text()) if meta_path.exists() else {}
    except json.JSONDecodeError as err:
        raise ReclaimError(f"{meta_path}: not JSON ({err})") from None


def load_results(root: Path) -> ResultStore:
    """Read the shaping experiment store at ``root``."""
    runs, meta, pending = read_store(root, _REQUIRED)
    runs = runs.with_columns(
        [pl.lit(None, pl.String).alias(c) for c in _OPTIONAL_TEXT if c not in runs.columns]
    )
    name, scale = str(meta.get("name", root.name)), str(meta.get("scale", ""))
    return ResultStore(root, name, scale, str(meta.get("description", "")), derive(runs), pending)


def derive(runs: pl.DataFrame) -> pl.DataFrame:
    """Add ``slack_cpu``/``slack_mem`` (per-application mean slack, else the cluster's
    allocation-weighted slack), ``slack_source``, ``failure_rate`` (else failed-at-least-once over
    apps) and ``turnaround_ratio``: the mean turnaround of the reservation run with the same
    experiment, scale and seed over this run's, so bigger is better and seeds never mix. Metrics a
    store lacks (an older runner, no finished application) become nulls."""
    runs = runs.with_columns(
        [pl.lit(None, pl.Float64).alias(c) for c in _OPTIONAL_FLOAT if c not in runs.columns]
    )
    per_app = [c for c in ("app_slack_cpu_mean", "app_slack_mem_mean") if c in runs.columns]
    runs = runs.with_columns(
        [
            pl.coalesce(
                *([pl.col(f"app_slack_{r}_mean")] if per_app else []),
                pl.col(f"slack_{r}_weighted"),
            ).alias(f"slack_{r}")
            for r in ("cpu", "mem")
        ],
        slack_source=(
            pl.when(pl.col("app_slack_mem_mean").is_not_null())
            .then(pl.lit("per-application"))
            .otherwise(pl.lit("cluster"))
            if per_app
            else pl.lit("cluster")
        ),
        failure_rate=pl.coalesce(
            *([pl.col("failure_rate")] if "failure_rate" in runs.columns else []),
            pl.col("apps_failed_at_least_once") / pl.col("apps"),
        ),
    )
    key = ["experiment", "scale", "seed"]
    baseline = (
        runs.filter(pl.col("controller") == BASELINE)
        .group_by(key)
        .agg(baseline_turnaround_s=pl.col("turnaround_mean_s").mean())
    )
    return runs.join(baseline, on=key, how="left", nulls_equal=True).with_columns(
        turnaround_ratio=pl.col("baseline_turnaround_s") / pl.col("turnaround_mean_s")
    )


def aggregate(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per cell: ``runs``, ``seeds``, ``run_ids``, and ``<metric>`` (mean over seeds) and
    ``<metric>_std`` (null with one seed) for each of METRICS. Baseline cells first, then labels in
    the order their first run appears, then by K1, K2 and coverage."""
    order = runs.select("label").unique(maintain_order=True).with_row_index("_label_order")
    cells = runs.group_by(CELL, maintain_order=True).agg(
        pl.len().alias("runs"),
        pl.col("seed").n_unique().alias("seeds"),
        pl.col("run_id").alias("run_ids"),
        *[pl.col(m).mean() for m in METRICS],
        *[pl.col(m).std().alias(f"{m}_std") for m in METRICS],
    )
    return (
        cells.join(order, on="label")
        .with_columns(_baseline_first=pl.col("controller") != BASELINE)
        .sort(["_baseline_first", "_label_order", "k1", "k2", "coverage"], nulls_last=False)
        .drop("_baseline_first", "_label_order")
    )


def cell_name(cell: dict) -> str:
    """``label`` followed by the parameters that set this cell apart, e.g. ``gp K1=5% K2=3``."""
    parts = [cell["label"]]
    if cell.get("k1") is not None:
        parts.append(f"K1={cell['k1'] * 100:g}%")
    if cell.get("k2") is not None:
        parts.append(f"K2={cell['k2']:g}")
    if cell.get("coverage") is not None:
        parts.append(f"cov={cell['coverage']:g}")
    return " ".join(parts)
