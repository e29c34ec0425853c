"""Per-application metrics: queue time, run time, turnaround, failures, work lost, slack."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.types import RESOURCES


def application_table(
    arrival: NDArray[np.float64],
    first_start: NDArray[np.float64],
    last_start: NDArray[np.float64],
    end: NDArray[np.float64],
    state: NDArray[np.int8],
    state_names: dict[int, str],
    **counts: NDArray,
) -> pl.DataFrame:
    """One row per application; times in seconds, NaN where the event did not happen.

    queue_time = first start - arrival (waiting before it first ran); run_time = end - start of the
    attempt that finished; turnaround = end - arrival. ``counts`` (failures, work lost, ...) pass
    through as columns.
    """
    names = np.array([state_names[int(k)] for k in range(max(state_names) + 1)])
    return pl.DataFrame(
        {
            "app": np.arange(len(arrival), dtype=np.int32),
            "state": names[state],
            "arrival": arrival,
            "first_start": first_start,
            "end": end,
            "queue_time": first_start - arrival,
            "run_time": end - last_start,
            "turnaround": end - arrival,
            **counts,
        },
        nan_to_null=True,
    )


def application_slack(
    allocated: NDArray[np.float64], used: NDArray[np.float64]
) -> dict[str, NDArray[np.float64]]:
    """``slack_<r>`` per application: (allocated - used) / allocated over its life, from (A, R)
    resource-seconds; NaN for an application that was never allocated anything."""
    with np.errstate(invalid="ignore", divide="ignore"):
        slack = np.where(allocated > 0, (allocated - used) / allocated, np.nan)
    return {f"slack_{name}": slack[:, r] for r, name in enumerate(RESOURCES)}


def summarize_applications(apps: pl.DataFrame) -> dict[str, float]:
    """Counts by state and the distribution of turnaround and queue time over finished apps."""
    done = apps.filter(pl.col("state") == "done")
    counts = apps["state"].value_counts().sort("state")  # a fixed key order, run to run
    out: dict[str, float] = {f"apps_{s}": float(n) for s, n in counts.rows()}
    out["apps"] = float(len(apps))
    for col in ("turnaround", "queue_time", "run_time"):
        series = done[col].drop_nulls()
        if len(series):
            out[f"{col}_mean_s"] = float(series.mean())
            out[f"{col}_p50_s"] = float(series.quantile(0.5, "nearest"))
            out[f"{col}_p95_s"] = float(series.quantile(0.95, "nearest"))
    out["apps_failed_at_least_once"] = float((apps["failures"] > 0).sum())
    out["failures"] = float(apps["failures"].sum())
    out["preemptions"] = float(apps["preemptions"].sum())
    out["component_losses"] = float(apps["component_losses"].sum())
    out["component_ooms"] = float(apps["component_ooms"].sum())
    out["work_lost_core_h"] = float(apps["work_lost"].sum()) / 3600.0
    out["failure_rate"] = out["apps_failed_at_least_once"] / max(len(apps), 1)
    for name in RESOURCES:
        column = f"slack_{name}"
        if column in done.columns and done[column].drop_nulls().len():
            out[f"app_{column}_mean"] = float(done[column].drop_nulls().mean())
    return out
