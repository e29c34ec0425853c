"""Per-application metrics: queue time, run time, turnaround, failures, work lost."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray


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


def summarize_applications(apps: pl.DataFrame) -> dict[str, float]:
    """Counts by state and the distribution of turnaround and queue time over finished apps."""
    done = apps.filter(pl.col("state") == "done")
    out: dict[str, float] = {f"apps_{s}": float(n) for s, n in apps["state"].value_counts().rows()}
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
    out["work_lost_core_h"] = float(apps["work_lost"].sum()) / 3600.0
    return out
