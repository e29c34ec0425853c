"""Per-application metrics: queue time, run time, turnaround, failures, work lost, slack."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.types import RESOURCES


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
    requested: NDArray[np.float64], allocated: NDArray[np.float64], used: NDArray[np.float64]
) -> dict[str, NDArray[np.float64]]:
    """Per application and resource, from (A, R) resource-seconds over its life:

    ``slack_<r>`` = (allocated - used) / requested: the share of its request it was allocated
    minus the share it used, time-weighted (the shaping paper's slack, section 4.1; 1 - usage
    share under reservations). ``idle_<r>`` = (allocated - used) / allocated: the share of what
    it held that sat idle. NaN for an application that never ran.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        slack = np.where(requested > 0, (allocated - used) / requested, np.nan)
        idle = np.where(allocated > 0, (allocated - used) / allocated, np.nan)
    out = {f"slack_{name}": slack[:, r] for r, name in enumerate(RESOURCES)}
    return out | {f"idle_{name}": idle[:, r] for r, name in enumerate(RESOURCES)}


def summarize_applications(apps: pl.DataFrame) -> dict[str, float]:
    """Counts by state, the distribution of turnaround and queue time over finished apps, failures
    and lost work.

    ``failure_rate`` is the paper's: the share of applications any of whose components was ever
    stopped (a core component out of memory, an elastic one out of memory or by the host's OOM
    killer, or any component preempted by the controller). The narrower rates beside it split it
    by cause; ``resubmissions`` counts whole applications sent back to the queue.
    """
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
    n = max(len(apps), 1)
    killed = (apps["failures"] + apps["preemptions"] + apps["component_losses"]) > 0
    out["apps_failed"] = float(killed.sum())
    out["failure_rate"] = out["apps_failed"] / n
    out["apps_failed_at_least_once"] = float((apps["failures"] > 0).sum())
    out["core_oom_rate"] = out["apps_failed_at_least_once"] / n
    out["preempted_rate"] = float((apps["preemptions"] > 0).sum()) / n
    out["elastic_loss_rate"] = float((apps["component_losses"] > 0).sum()) / n
    out["failures"] = float(apps["failures"].sum())
    out["preemptions"] = float(apps["preemptions"].sum())
    out["component_losses"] = float(apps["component_losses"].sum())
    out["component_ooms"] = float(apps["component_ooms"].sum())
    out["resubmissions"] = out["failures"] + out["preemptions"]
    out["work_lost_component_h"] = float(apps["work_lost"].sum()) / 3600.0
    for name, unit in (("cpu", "core"), ("mem", "gib")):
        column = f"work_lost_{name}"
        if column in apps.columns:
            out[f"work_lost_{unit}_h"] = float(apps[column].sum()) / 3600.0
    for name in RESOURCES:
        for kind in ("slack", "idle"):
            column = f"{kind}_{name}"
            if column in done.columns and done[column].drop_nulls().len():
                out[f"app_{column}_mean"] = float(done[column].drop_nulls().mean())
    return out


def shapeable_share(
    comp_indptr: NDArray[np.int64],
    work: NDArray[np.float32],
    request: NDArray[np.float32],
    grace_s: float,
) -> dict[str, float]:
    """What shaping could act on at all: a controller leaves a component at its request for
    ``grace_s`` after it starts, so work shorter than that is never shaped.

    ``shapeable_apps``: share of applications with a component whose work outlasts the grace;
    ``shapeable_<r>``: share of requested resource-time (request x work, at full speed) that
    lies past the grace period.
    """
    beyond = np.maximum(work.astype(np.float64) - grace_s, 0.0)
    long_app = np.maximum.reduceat(beyond, comp_indptr[:-1]) > 0
    out = {"shapeable_apps": float(long_app.mean()) if len(long_app) else 0.0}
    for r, name in enumerate(RESOURCES):
        total = float(work.astype(np.float64) @ request[:, r])
        out[f"shapeable_{name}"] = float(beyond @ request[:, r]) / total if total else 0.0
    return out
