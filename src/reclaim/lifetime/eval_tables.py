"""The lifetime model's evaluation as console tables: what ``reclaim lifetime eval`` prints."""

from __future__ import annotations

import math

import polars as pl
from rich.table import Table

from reclaim.lifetime.evaluate import LifetimeEval

_METRICS = ("precision", "recall", "f1", "accuracy")


def _num(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def _metric_table(title: str, frame: pl.DataFrame, key: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    columns = ["predictor", *([key, "n"] if key else []), *_METRICS]
    for column in columns:
        table.add_column(column, justify="left" if column == "predictor" else "right")
    for row in frame.iter_rows(named=True):
        head = [row["predictor"], *([str(row[key]), str(row["n"])] if key else [])]
        table.add_row(*head, *[_num(row[m]) for m in _METRICS])
    return table


def lifetime_tables(result: LifetimeEval) -> list[Table]:
    """Counts, creation-time metrics, F1 by uptime quantile and metrics by week after the cut."""
    days = result.threshold_s / 86400
    counts = Table(title="lifetime model: honest split in time", title_justify="left")
    counts.add_column("")
    counts.add_column("value", justify="right")
    reached = result.recall_at_precision
    for name, value in (
        ("cut (trace day)", f"{result.cut / 86400:.1f}"),
        ("training VMs", f"{result.n_train:,}"),
        ("  of them right-censored (imputed)", f"{result.n_train_censored:,}"),
        ("left-censored VMs (start unknown, left out)", f"{result.n_left_censored:,}"),
        ("test VMs with a known class", f"{result.n_test:,}"),
        (f"  of them living > {days:g} days", f"{result.n_positive:,}"),
        ("censored before the threshold (excluded)", f"{result.n_unknown:,}"),
        (
            f"recall at {result.target_precision:.0%} precision (paper: 70 % at 99 %)",
            "not reached" if reached is None else f"{reached:.1%}",
        ),
        ("training time", f"{result.train_seconds:.1f} s"),
    ):
        counts.add_row(name, value)
    return [
        counts,
        _metric_table(f"at creation: lives > {days:g} days", result.at_threshold, None),
        _quantile_table(result.by_quantile),
        _metric_table("by week of arrival after the cut (paper's Fig. 10)", result.by_week, "week"),
    ]


def _quantile_table(by_quantile: pl.DataFrame) -> Table:
    """One row per uptime quantile: the model's metrics beside the feature-blind baseline's F1."""
    table = Table(
        title="repredicted at uptime q/n of the lifetime (paper's Fig. 9)", title_justify="left"
    )
    for column in ("q", "n", "precision", "recall", "F1", "F1 Kaplan-Meier"):
        table.add_column(column, justify="right")
    km = by_quantile.filter(pl.col("predictor") == "km")
    km_f1 = dict(zip(km["q"].to_list(), km["f1"].to_list(), strict=True))
    for row in by_quantile.filter(pl.col("predictor") == "model").iter_rows(named=True):
        table.add_row(
            str(row["q"]),
            str(row["n"]),
            *[_num(row[m]) for m in ("precision", "recall", "f1")],
            _num(km_f1.get(row["q"])),
        )
    return table
