"""Cluster metrics over time, per resource: allocated, used, slack and utilisation of capacity."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.types import RESOURCES


def timeline_table(rows: NDArray[np.float64], capacity: NDArray[np.float64]) -> pl.DataFrame:
    """From the simulator's per-tick rows (time, running, queued, allocated[R], used[R]).

    slack_<r> = (allocated - used) / allocated: the share of what was handed out that sat idle;
    util_<r> = used / cluster capacity. Units: cores and GiB.
    """
    n = len(RESOURCES)
    alloc, used = rows[:, 3 : 3 + n], rows[:, 3 + n : 3 + 2 * n]
    total = capacity.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        slack = np.where(alloc > 0, (alloc - used) / alloc, np.nan)
    cols: dict[str, NDArray] = {
        "time": rows[:, 0],
        "running_components": rows[:, 1].astype(np.int64),
        "queued_apps": rows[:, 2].astype(np.int64),
    }
    for r, name in enumerate(RESOURCES):
        cols[f"allocated_{name}"] = alloc[:, r]
        cols[f"used_{name}"] = used[:, r]
        cols[f"slack_{name}"] = slack[:, r]
        cols[f"util_{name}"] = used[:, r] / total[r]
        cols[f"alloc_share_{name}"] = alloc[:, r] / total[r]
    return pl.DataFrame(cols, nan_to_null=True)


def summarize_timeline(timeline: pl.DataFrame) -> dict[str, float]:
    """Time-averaged slack (mean over ticks with something allocated, and allocation-weighted),
    utilisation, allocated share of capacity and cluster slack (allocated minus used, as a share of
    capacity), per resource."""
    out: dict[str, float] = {}
    for name in RESOURCES:
        alloc, used = timeline[f"allocated_{name}"], timeline[f"used_{name}"]
        busy = alloc.sum()
        out[f"slack_{name}_mean"] = float(timeline[f"slack_{name}"].mean() or 0.0)
        out[f"slack_{name}_weighted"] = float((busy - used.sum()) / busy) if busy else 0.0
        out[f"util_{name}_mean"] = float(timeline[f"util_{name}"].mean() or 0.0)
        out[f"alloc_share_{name}_mean"] = float(timeline[f"alloc_share_{name}"].mean() or 0.0)
        # allocated but unused, as a share of the cluster's capacity
        out[f"cluster_slack_{name}_mean"] = (
            out[f"alloc_share_{name}_mean"] - out[f"util_{name}_mean"]
        )
    return out
