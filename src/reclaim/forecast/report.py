"""The report of a forecast evaluation: its tables (scores per store, resource, model and history)
and plots of error distributions (as the shaping paper's Figure 2) and calibration (how often the
68/95/99.7 % intervals held the truth, against what they promised)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from rich.table import Table  # noqa: E402

_UNITS = {"cpu": "cores", "mem": "GiB"}
_NOMINAL = {"68": 0.6827, "95": 0.9545, "99.7": 0.9973}


def _panels(frame: pl.DataFrame) -> list[tuple[str, str]]:
    return frame.select("store", "resource").unique(maintain_order=True).rows()


def plot_error_boxplots(errors: pl.DataFrame, path: Path) -> Path:
    """Absolute one-step error per model and history, one panel per store and resource; the red
    triangle is the mean. Log scale: errors on real usage span orders of magnitude."""
    panels = _panels(errors)
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 3.6 * len(panels)), squeeze=False)
    for ax, (store, resource) in zip(axes[:, 0], panels, strict=True):
        sub = errors.filter((pl.col("store") == store) & (pl.col("resource") == resource))
        groups = sub.group_by("model", "history", maintain_order=True).agg("abs_error")
        labels = [f"{m}\nh={h}" for m, h in zip(groups["model"], groups["history"], strict=True)]
        data = [np.maximum(np.asarray(e), 1e-6) for e in groups["abs_error"].to_list()]
        ax.boxplot(
            data,
            showmeans=True,
            showfliers=False,
            meanprops={"marker": "^", "markerfacecolor": "red", "markeredgecolor": "red"},
        )
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel(f"|error| ({_UNITS.get(resource, '')}; 0 drawn at 1e-6)")
        ax.set_title(f"{store}: {resource}, one step ahead", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_calibration(summary: pl.DataFrame, path: Path) -> Path:
    """Realised against nominal coverage of the central intervals, per model (history pooled by
    its mean); the diagonal is perfect calibration, below it is over-confidence."""
    panels = _panels(summary)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4.2), squeeze=False)
    nominal = np.array(list(_NOMINAL.values()))
    for ax, (store, resource) in zip(axes[0], panels, strict=True):
        sub = summary.filter((pl.col("store") == store) & (pl.col("resource") == resource))
        cols = [f"coverage_{k}" for k in _NOMINAL]
        for (model,), g in sub.group_by("model", maintain_order=True):
            realised = g.select(cols).mean().row(0)
            ax.plot(nominal, realised, marker="o", label=model)
        ax.plot([0.6, 1], [0.6, 1], color="black", lw=0.8, ls="--")
        ax.set_xlabel("nominal coverage")
        ax.set_ylabel("realised coverage")
        ax.set_title(f"{store}: {resource}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


_FORECAST_COLUMNS = [
    ("MAE", "mae", "{:.3g}"),
    ("CRPS", "crps", "{:.3g}"),
    ("in 1σ", "coverage_68", "{:.1%}"),
    ("in 2σ", "coverage_95", "{:.1%}"),
    ("in 3σ", "coverage_99.7", "{:.1%}"),
    (">q99", "upper_99_miss", "{:.2%}"),
    ("w95", "width_95", "{:.3g}"),
    ("fallb.", "fallback_share", "{:.0%}"),
    ("series/s", "series_per_s", "{:,.0f}"),
]


def forecast_tables(summary) -> list[Table]:
    """One table per store: a row per (resource, model, history) with its scores.

    in kσ: share of actual values inside mean ± k std (nominal 68.3/95.4/99.7 %); >q99: share
    above the one-sided 99 % bound (the shaper's failure risk); w95: mean width of the 2σ interval.
    """
    tables = []
    for (store,), rows in summary.group_by("store", maintain_order=True):
        table = Table(title=f"{store}: one-step forecasts", title_justify="left")
        for name in ("res", "model", "h"):
            table.add_column(name)
        for label, _, _ in _FORECAST_COLUMNS:
            table.add_column(label, justify="right")
        for row in rows.iter_rows(named=True):
            cells = [row["resource"], row["model"], str(row["history"])]
            cells += [fmt.format(row[key]) for _, key, fmt in _FORECAST_COLUMNS]
            table.add_row(*cells)
        tables.append(table)
    return tables
