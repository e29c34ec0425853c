"""Plots of an experiment in the shaping paper's style: boxplots per cell (Figure 3), K1 x K2
heatmaps per forecaster (Figure 4), and target coverage against outcome for conformal runs. Where
a plot shows a mean over seeds it shows its 95 % interval too: error bars, or ``[lo, hi]`` under
the number in a heatmap cell."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from reclaim.report.experiment_data import ResultStore, cell_name  # noqa: E402
from reclaim.report.experiment_tables import fmt  # noqa: E402

_MEAN = {"marker": "^", "markerfacecolor": "red", "markeredgecolor": "red"}
_MEAN_BAR = {"fmt": "^", "color": "red", "ms": 7, "capsize": 4, "elinewidth": 1.2, "zorder": 3}
#: Figure 4's panels: (metric, title, colour map oriented so that bright is better).
_HEATMAPS = [
    ("turnaround_ratio", "turnaround ratio over baseline", "viridis"),
    ("slack_mem", "memory slack", "viridis_r"),
    ("failure_rate", "failure rate", "viridis_r"),
]
_RESOURCE = {"cpu": "CPU", "mem": "memory"}
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


def _boxes(
    ax, data: list[NDArray[np.float64]], names: list[str], ylabel: str, pooled_mean: bool
) -> None:
    ax.boxplot(data, showmeans=pooled_mean, showfliers=False, meanprops=_MEAN)
    ax.set_xticks(range(1, len(names) + 1), names, fontsize=7)
    ax.set_ylabel(ylabel)


def interval_errors(cells: pl.DataFrame, metric: str) -> tuple[NDArray, NDArray]:
    """Means over seeds of ``metric`` per cell and (2, C) error-bar lengths down to ``_lo`` and up
    to ``_hi`` (0 where a cell has one seed: no interval to draw)."""
    mean = cells[metric].cast(pl.Float64).fill_null(np.nan).to_numpy()
    lo = cells[f"{metric}_lo"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    hi = cells[f"{metric}_hi"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    return mean, np.nan_to_num(np.vstack([mean - lo, hi - mean]), nan=0.0)


def _mean_marks(ax, cells: pl.DataFrame, metric: str, floor: float | None = None) -> None:
    """Red triangle at each cell's mean over seeds, bars its 95 % interval (kept above ``floor``
    on a log axis); beside its box, not on the whiskers."""
    mean, err = interval_errors(cells, metric)
    if floor is not None:
        err[0] = np.minimum(err[0], np.maximum(mean - floor, 0.0))
    ax.errorbar(np.arange(1, len(mean) + 1) + 0.32, mean, yerr=err, **_MEAN_BAR)


def plot_figure3(store: ResultStore, cells: pl.DataFrame, path: Path) -> tuple[Path, str] | None:
    """Boxplots per cell of CPU and memory slack and per-application turnaround (log scale),
    pooled over seeds, and the failure rate. The red triangle is the mean over seeds of the runs'
    means (as in the tables) with bars its 95 % interval; the failure bar carries its interval
    too. Slack is per application where the runs record it, else per monitor tick of the cluster
    (the triangle then the pooled mean of the ticks, without an interval). Returns the path and
    the slack source, or None with fewer than two cells."""
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
        unit = "of request" if per_app else "of allocation"
        _boxes(
            ax,
            data,
            names,
            f"{_RESOURCE[r]} slack ({source}, share {unit})",
            pooled_mean=not per_app,
        )
        if per_app:
            _mean_marks(ax, chosen, f"slack_{r}")
    turnaround = [np.maximum(_column(frame, "turnaround"), 1.0) for frame in apps]
    _boxes(axes[2], turnaround, names, "turnaround (s)", pooled_mean=False)
    axes[2].set_yscale("log")
    _mean_marks(axes[2], chosen, "turnaround_mean_s", floor=1.0)
    rate, err = interval_errors(chosen, "failure_rate")
    x = np.arange(1, len(names) + 1)
    axes[3].bar(x, rate, color="tab:red", alpha=0.7)
    axes[3].errorbar(x, rate, yerr=err, fmt="none", ecolor="black", capsize=4)
    axes[3].set_xticks(x, names, fontsize=7)
    axes[3].set_ylabel("failure rate (apps with a component stopped)")
    axes[3].set_ylim(0, max(0.05, float(np.nan_to_num(rate + err[1]).max()) * 1.15))
    low, high = chosen["seeds"].min(), chosen["seeds"].max()
    seeds = f"{low}" if low == high else f"{low}-{high}"
    fig.suptitle(
        f"{store.name}: red triangle the mean over seeds ({seeds} per cell), bars its 95 % "
        "interval; boxes pool the applications of all seeds",
        fontsize=9,
    )
    return _save(fig, path), source


def plot_figure4(cells: pl.DataFrame, path: Path) -> Path | None:
    """Per swept label a row of K1 x K2 heatmaps (turnaround ratio, memory slack, failure rate),
    bright cells better, each cell annotated with its mean over seeds and, below, its 95 %
    interval; None without a sweep."""
    labels = grid_labels(cells)
    if not labels:
        return None
    # a cell holds a mean and its interval on two lines: give each K1 column room for them
    k1_max = max(len(grid(cells, label, "turnaround_ratio")[0]) for label in labels)
    k2_max = max(len(grid(cells, label, "turnaround_ratio")[1]) for label in labels)
    width = len(_HEATMAPS) * max(4.7, 0.9 * k1_max + 1.8)
    height = max(3.6, 0.45 * k2_max + 1.6)
    fig, axes = plt.subplots(
        len(labels), len(_HEATMAPS), figsize=(width, height * len(labels)), squeeze=False
    )
    for row, label in zip(axes, labels, strict=True):
        for ax, (metric, title, cmap) in zip(row, _HEATMAPS, strict=True):
            k1s, k2s, values = grid(cells, label, metric)
            colours = plt.get_cmap(cmap).with_extremes(bad="lightgrey")
            image = ax.imshow(
                np.ma.masked_invalid(values), cmap=colours, origin="lower", aspect="auto"
            )
            bar = fig.colorbar(image, ax=ax, shrink=0.85)
            if metric != "turnaround_ratio":
                bar.ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
            _, _, lows = grid(cells, label, f"{metric}_lo")
            _, _, highs = grid(cells, label, f"{metric}_hi")
            for (i, j), value in np.ndenumerate(values):
                ax.text(
                    j,
                    i,
                    fmt(metric, float(value), float(lows[i, j]), float(highs[i, j])),
                    ha="center",
                    va="center",
                    fontsize=7,
                    linespacing=1.1,
                    color="black",
                    bbox={"facecolor": "white", "alpha": 0.6, "lw": 0, "pad": 1},
                )
            ax.set_xticks(range(len(k1s)), [f"{k * 100:g}" for k in k1s])
            ax.set_yticks(range(len(k2s)), [f"{k:g}" for k in k2s])
            ax.set_xlabel("K1 (% of request)")
            ax.set_ylabel("K2 (predictive std)")
            ax.set_title(f"{label}: {title}", fontsize=9)
    fig.suptitle(
        "mean over seeds, below it its 95 % interval [lo, hi]; bright cells are better",
        fontsize=9,
    )
    return _save(fig, path)


def plot_conformal(cells: pl.DataFrame, path: Path) -> Path | None:
    """Per label, target coverage against the failure rate and the turnaround ratio reached
    (mean over seeds, bars its 95 % interval); None without coverage runs."""
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
            mean, err = interval_errors(g, metric)
            ax.errorbar(
                g["coverage"].to_numpy(), mean, yerr=err, marker="o", capsize=3, label=label
            )
        ax.set_xlabel("target coverage")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return _save(fig, path)
