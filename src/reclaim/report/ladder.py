"""The ladder of a shaping experiment with several worlds (``pace-ladder``): per world, the
numbers that carry the shaping paper's claims, as a table and as one panel per metric with the
worlds along the x-axis, so that the step that moves a number can be read off.

A world's cells are found by what they run: optimistic and pessimistic with the oracle
(Figure 3) and pessimistic with a GP (Figure 4). Each number is a mean over seeds with its 95 %
interval; turnaround ratios are over the world's own reservation baseline.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from reclaim.report.experiment_data import cell_interval  # noqa: E402
from reclaim.report.experiment_tables import Rows, fmt_interval  # noqa: E402

_OPT = (pl.col("controller") == "optimistic") & (pl.col("forecaster") == "oracle")
_PES = (pl.col("controller") == "pessimistic") & (pl.col("forecaster") == "oracle")
_GP = (pl.col("controller") == "pessimistic") & pl.col("forecaster").str.starts_with("gp")
#: (header, cells, metric) of the ladder, in the order the paper states its claims.
COLUMNS = [
    ("optimistic: failed (paper: core OOM)", _OPT, "core_oom_rate"),
    ("pessimistic: failed (paper: core OOM)", _PES, "core_oom_rate"),
    ("optimistic: any component stopped", _OPT, "failure_rate"),
    ("pessimistic: any component stopped", _PES, "failure_rate"),
    ("optimistic: turnaround ratio", _OPT, "turnaround_ratio"),
    ("pessimistic: turnaround ratio", _PES, "turnaround_ratio"),
    ("GP K1=5% K2=3: turnaround ratio", _GP, "turnaround_ratio"),
    ("GP K1=5% K2=3: memory slack", _GP, "slack_mem"),
    ("GP K1=5% K2=3: failed (paper: core OOM)", _GP, "core_oom_rate"),
]


def worlds(cells: pl.DataFrame) -> list[str]:
    """The worlds of ``cells`` in the order their cells appear (run order)."""
    return cells["world"].unique(maintain_order=True).to_list()


def is_ladder(cells: pl.DataFrame) -> bool:
    """Whether the cells span several worlds that each hold the Figure 3 oracle pair."""
    having = cells.filter(_OPT | _PES)["world"].n_unique()
    return having > 1


def ladder_rows(cells: pl.DataFrame) -> Rows:
    """One row per world, one column per ``COLUMNS`` entry (blank where the world lacks it)."""
    rows = []
    for world in worlds(cells):
        row = [world or "(default)"]
        for _, which, metric in COLUMNS:
            found = cells.filter((pl.col("world") == world) & which)
            row.append(
                fmt_interval(metric, cell_interval(found.row(0, named=True), metric))
                if len(found)
                else ""
            )
        rows.append(row)
    return ["world", *[c[0] for c in COLUMNS]], rows


def plot_ladder(cells: pl.DataFrame, path: Path) -> Path:
    """One panel per ``COLUMNS`` metric the cells hold, worlds along the x-axis, means with
    95 % intervals."""
    names = worlds(cells)
    x = np.arange(len(names))
    panels = []
    for title, which, metric in COLUMNS:
        mean, lo, hi = (np.full(len(names), np.nan) for _ in range(3))
        for i, world in enumerate(names):
            found = cells.filter((pl.col("world") == world) & which)
            if len(found):
                iv = cell_interval(found.row(0, named=True), metric)
                mean[i] = np.nan if iv.mean is None else iv.mean
                lo[i] = mean[i] if iv.lo is None else iv.lo
                hi[i] = mean[i] if iv.hi is None else iv.hi
        if np.isfinite(mean).any():
            panels.append((title, metric, mean, lo, hi))
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(max(8, 0.45 * len(names)), 2.1 * len(panels)), squeeze=False
    )
    axes = axes[:, 0]
    for ax, (title, metric, mean, lo, hi) in zip(axes, panels, strict=True):
        ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], fmt="o", capsize=3, ms=4)
        if metric == "turnaround_ratio":
            ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xticks(x, [""] * len(names))
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(x, names, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
