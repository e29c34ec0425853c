"""Plots of a simulation: what was allocated against what was used, and the queue, over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from reclaim.core.types import RESOURCES  # noqa: E402

_UNITS = {"cpu": "cores", "mem": "GiB"}


def plot_timeline(
    timeline: pl.DataFrame, capacity: NDArray[np.float64], path: Path, title: str = ""
) -> Path:
    """One panel per resource (capacity, allocated, used) and one for the queue; PNG at ``path``."""
    days = timeline["time"].to_numpy() / 86400.0
    fig, axes = plt.subplots(len(RESOURCES) + 1, 1, figsize=(10, 8), sharex=True)
    total = capacity.sum(axis=0)
    for ax, (r, name) in zip(axes, enumerate(RESOURCES), strict=False):
        allocated = timeline[f"allocated_{name}"].to_numpy()
        used = timeline[f"used_{name}"].to_numpy()
        ax.axhline(total[r], color="black", lw=1, ls="--", label="capacity")
        ax.fill_between(days, used, allocated, color="tab:orange", alpha=0.35, label="slack")
        ax.plot(days, allocated, color="tab:orange", lw=0.8, label="allocated")
        ax.plot(days, used, color="tab:blue", lw=0.8, label="used")
        ax.set_ylabel(f"{name} ({_UNITS.get(name, '')})")
        ax.set_ylim(0, total[r] * 1.08)
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, ncol=4, frameon=False)
    queue = axes[-1]
    queue.plot(days, timeline["queued_apps"].to_numpy(), color="tab:red", lw=0.8)
    queue.set_ylabel("queued applications")
    queue.set_xlabel("simulated time (days)")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
