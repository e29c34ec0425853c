"""Plots of an experiment in the shaping paper's style: boxplots per cell (Figure 3), K1 x K2
heatmaps per forecaster (Figure 4), and target coverage against outcome for conformal runs."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from reclaim.report.experiment_data import ResultStore, cell_name  # noqa: E402
from reclaim.report.experiment_tables import fmt  # noqa: E402

_MEAN = {"marker": "^", "markerfacecolor": "red", "markeredgecolor": "red"}
#: Figure 4's panels: (metric, title, colour map oriented so that bright is better).
_HEATMAPS = [
    ("turnaround_ratio", "turnaround ratio over baseline", "viridis"),
    ("slack_mem", "memory slack", "viridis_r"),
    ("failure_rate", "failure rate", "viridis_r"),
]
#: The parameters the paper deployed (section 5); a grid's cell drawn in the Figure-3 boxplots.
DEPLOYED = (0.05, 3.0)


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def grid_labels(cells: pl.DataFrame) -> list[str]:
    """Labels whose cells span several (K1, K2) pairs: each is one row of Figure-4 heatmaps."""
    swept = (
        cells.filter(pl.col("k1").is_not_null() & pl.col("k2").is_not_null())
        .group_by("label", maintain_order=True)
        .agg(pl.struct("k1", "k2").n_unique().alias("n"))
    )
    return swept.filter(pl.col("n") > 1)["label"].to_list()


def grid(
    cells: pl.DataFrame, label: str, metric: str
) -> tuple[list[float], list[float], NDArray[np.float64]]:
    """K1 values, K2 values and a (K2, K1) matrix of ``metric`` for ``label``; NaN where the
    sweep has no run yet."""
    sub = cells.filter((pl.col("label") == label) & pl.col("k1").is_not_null())
    k1s = sorted(set(sub["k1"].drop_nulls()))
    k2s = sorted(set(sub["k2"].drop_nulls()))
    values = np.full((len(k2s), len(k1s)), np.nan)
    for k1, k2, value in sub.select("k1", "k2", metric).iter_rows():
        if value is not None:
            values[k2s.index(k2), k1s.index(k1)] = value
    return k1s, k2s, values


def figure3_cells(cells: pl.DataFrame) -> pl.DataFrame:
    """Cells for the Figure-3 boxplots: all of them, except that a swept label contributes only
    its cell at the deployed parameters (a box per grid point would be unreadable)."""
    swept = pl.col("label").is_in(grid_labels(cells))
    deployed = ((pl.col("k1") - DEPLOYED[0]).abs() < 1e-9) & (
        (pl.col("k2") - DEPLOYED[1]).abs() < 1e-9
    )
    return cells.filter(~swept | deployed.fill_null(False))


def _column(frame: pl.DataFrame | None, column: str) -> NDArray[np.float64]:
    if frame is None or column not in frame.columns:
        return np.empty(0)
    return frame[column].drop_nulls().to_numpy().astype(np.float64)


def _boxes(ax, data: list[NDArray[np.float64]], names: list[str], ylabel: str) -> None:
    ax.boxplot(data, showmeans=True, showfliers=False, meanprops=_MEAN)
    ax.set_xticks(range(1, len(names) + 1), names, fontsize=7)
    ax.set_ylabel(ylabel)


def plot_figure3(store: ResultStore, cells: pl.DataFrame, path: Path) -> tuple[Path, str] | None:
    """Boxplots per cell of CPU and memory slack and per-application turnaround (log scale), red
    triangle the mean, and the failure rate; pooled over seeds. Slack is per application where the
    runs record it, else per monitor tick of the cluster. Returns the path and the slack source,
    or None with fewer than two cells."""
    chosen = figure3_cells(cells)
    if len(chosen) < 2:
        return None
    names = [cell_name(c).replace(" ", "\n") for c in chosen.iter_rows(named=True)]
    run_ids = [list(ids) for ids in chosen["run_ids"]]
    apps = []
    for ids in run_ids:
        frame = store.run_table(ids, "apps")
        apps.append(None if frame is None else frame.filter(pl.col("state") == "done"))
    per_app = all(len(_column(frame, "slack_mem")) for frame in apps)
    source = "per application" if per_app else "per tick, cluster"
    slack = apps if per_app else [store.run_table(ids, "timeline") for ids in run_ids]
    fig, grid_axes = plt.subplots(2, 2, figsize=(max(9.0, 3.0 * len(chosen)), 8))
    axes = grid_axes.ravel()
    for ax, r in zip(axes[:2], ("cpu", "mem"), strict=True):
        data = [_column(frame, f"slack_{r}") for frame in slack]
        _boxes(ax, data, names, f"{r} slack ({source})")
    turnaround = [np.maximum(_column(frame, "turnaround"), 1.0) for frame in apps]
    _boxes(axes[2], turnaround, names, "turnaround (s)")
    axes[2].set_yscale("log")
    rate = chosen["failure_rate"].fill_null(np.nan).to_numpy()
    spread = chosen["failure_rate_std"].fill_null(0.0).to_numpy()
    axes[3].bar(range(1, len(names) + 1), rate, yerr=spread, color="tab:red", alpha=0.7)
    axes[3].set_xticks(range(1, len(names) + 1), names, fontsize=7)
    axes[3].set_ylabel("failure rate (apps failed at least once)")
    axes[3].set_ylim(0, max(0.05, float(np.nan_to_num(rate + spread).max()) * 1.15))
    fig.suptitle(f"{store.name}: the red triangle is the mean", fontsize=9)
    return _save(fig, path), source


def plot_figure4(cells: pl.DataFrame, path: Path) -> Path | None:
    """Per swept label a row of K1 x K2 heatmaps (turnaround ratio, memory slack, failure rate),
    bright cells better, each cell annotated; None without a sweep."""
    labels = grid_labels(cells)
    if not labels:
        return None
    fig, axes = plt.subplots(
        len(labels), len(_HEATMAPS), figsize=(14, 3.6 * len(labels)), squeeze=False
    )
    for row, label in zip(axes, labels, strict=True):
        for ax, (metric, title, cmap) in zip(row, _HEATMAPS, strict=True):
            k1s, k2s, values = grid(cells, label, metric)
            colours = plt.get_cmap(cmap).with_extremes(bad="lightgrey")
            image = ax.imshow(
                np.ma.masked_invalid(values), cmap=colours, origin="lower", aspect="auto"
            )
            fig.colorbar(image, ax=ax, shrink=0.85)
            for (i, j), value in np.ndenumerate(values):
                ax.text(
                    j,
                    i,
                    fmt(metric, float(value)),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black",
                    bbox={"facecolor": "white", "alpha": 0.6, "lw": 0, "pad": 1},
                )
            ax.set_xticks(range(len(k1s)), [f"{k * 100:g}" for k in k1s])
            ax.set_yticks(range(len(k2s)), [f"{k:g}" for k in k2s])
            ax.set_xlabel("K1 (% of request)")
            ax.set_ylabel("K2 (predictive std)")
            ax.set_title(f"{label}: {title}", fontsize=9)
    return _save(fig, path)


def plot_conformal(cells: pl.DataFrame, path: Path) -> Path | None:
    """Per label, target coverage against the failure rate and the turnaround ratio reached
    (mean over seeds, bars one std); None without coverage runs."""
    sub = cells.filter(pl.col("coverage").is_not_null()).sort("coverage")
    if sub.is_empty():
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = [
        ("failure_rate", "failure rate"),
        ("turnaround_ratio", "turnaround ratio over baseline"),
    ]
    axes[1].axhline(1.0, color="black", lw=0.8, ls="--", label="baseline")
    for ax, (metric, ylabel) in zip(axes, panels, strict=True):
        for (label,), g in sub.group_by("label", maintain_order=True):
            ax.errorbar(
                g["coverage"].to_numpy(),
                g[metric].fill_null(np.nan).to_numpy(),
                yerr=g[f"{metric}_std"].fill_null(0.0).to_numpy(),
                marker="o",
                capsize=3,
                label=label,
            )
        ax.set_xlabel("target coverage")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return _save(fig, path)
