"""Reports of the TVW placement evaluation: the pools, the metrics table, and the paper's bar charts
(TVW-RL Figures 4 and 5: utilisation, fragmentation, machines used and overshoot per cluster load),
for ``reclaim place eval`` and for result stores of the tvw experiment kind."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from rich.table import Table  # noqa: E402

from reclaim.report.experiment_data import ResultStore, read_store  # noqa: E402
from reclaim.report.experiment_report import Report, sectioned_report  # noqa: E402
from reclaim.report.experiment_tables import Rows  # noqa: E402
from reclaim.report.html import Section  # noqa: E402
from reclaim.tvw.evaluate import summarize  # noqa: E402
from reclaim.tvw.pool import PoolReport  # noqa: E402

#: (column, heading, format) of the table and, in this order, the panels of the charts.
PANELS = [
    ("util_cpu", "CPU util", "{:.3f}"),
    ("util_mem", "MEM util", "{:.3f}"),
    ("frag_cpu", "CPU frag", "{:.3f}"),
    ("frag_mem", "MEM frag", "{:.3f}"),
    ("machines_used", "machines used", "{:.1f}"),
    ("overshoot_pct", "% overshoot", "{:.2f}"),
    ("wait_mean_h", "wait (h)", "{:.2f}"),
]


def pool_table(reports: list[PoolReport]) -> Table:
    """What each store gave: records, their classes, the scale that made units, the records
    whose units never change, gaps bridged and split, samples merged and clipped."""
    table = Table(title="Workload pools (continuous usage records in units)")
    heads = (
        "store", "records", "CPU-int.", "scale", "constant", "samples", "bridged gaps", "split",
        "merged", "clipped",
    )  # fmt: skip
    for head in heads:
        table.add_column(head, justify="left" if head in ("store", "scale") else "right")
    for r in reports:
        clipped = " / ".join(f"{c / r.samples:.2%}" for c in r.clipped)
        table.add_row(
            Path(r.store).name,
            f"{r.records:,}",
            f"{r.cpu_intensive:,}",
            "own limit" if r.rule == "limit" else "peak quantile",
            f"{r.constant / r.records:.0%}",
            f"{r.samples:,}",
            f"{r.bridged_gaps:,}",
            f"{r.split_gaps:,}",
            f"{r.merged:,}",
            f"{clipped} (cpu / mem)",
        )
    return table


def metrics_table(summary: pl.DataFrame, store: str) -> Table:
    """Mean over sequences of each metric, one row per load and policy, for ``store``."""
    sub = summary.filter(pl.col("store") == store)
    n = int(sub["sequences"].max()) if len(sub) else 0
    table = Table(title=f"{store}: operational excellence, mean of {n} sequences ± 95 % interval")
    table.add_column("load", justify="right")
    table.add_column("policy")
    for _, head, _ in PANELS:
        table.add_column(head, justify="right")
    for row in sub.iter_rows(named=True):
        cells = [
            fmt.format(row[col])
            + (
                f" ±{fmt.format(half)}"
                if math.isfinite(half := row.get(f"{col}_half") or math.nan)
                else ""
            )
            for col, _, fmt in PANELS
        ]
        table.add_row(f"{row['load']:.0%}", row["policy"], *cells)
    return table


def plot_operational(summary: pl.DataFrame, store: str, path: Path) -> Path:
    """Bars per policy at each load, one panel per metric; whiskers are one standard deviation
    over sequences."""
    sub = summary.filter(pl.col("store") == store)
    loads = sub["load"].unique(maintain_order=True).to_list()
    policies = sub["policy"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    width = 0.8 / max(len(policies), 1)
    x = np.arange(len(loads))
    for ax, (col, head, _) in zip(axes.flat, PANELS, strict=False):
        for k, policy in enumerate(policies):
            rows = sub.filter(pl.col("policy") == policy).sort("load")
            ax.bar(
                x + (k - (len(policies) - 1) / 2) * width,
                rows[col].to_numpy(),
                width,
                yerr=rows[f"{col}_std"].fill_null(0).to_numpy(),
                capsize=2,
                label=policy,
            )
        ax.set_xticks(x, [f"{load:.0%}" for load in loads])
        ax.set_xlabel("cluster load")
        ax.set_title(head, fontsize=10)
    axes.flat[-1].axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    axes.flat[-1].legend(handles, labels, loc="center", fontsize=9)
    fig.suptitle(f"{store}: time-varying workloads placed on the cluster", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ the tvw experiment's report
SOURCE = "TVW-RL paper, Figures 4 and 5 (the heuristic baselines)"
_REQUIRED = ["run_id", "label", "store", "load", "policy", "seed"]


def load(root: Path) -> ResultStore:
    """The tvw result store at ``root``."""
    runs, meta, pending = read_store(root, _REQUIRED)
    name, scale = str(meta.get("name", root.name)), str(meta.get("scale", ""))
    return ResultStore(root, name, scale, str(meta.get("description", "")), runs, pending)


def sections(store: ResultStore, out: Path) -> tuple[list[Section], Rows]:
    """A section per usage store: the metrics per load and policy (mean over sequences ± 95 %
    interval) and the bar charts. The paper compares TVW-RL with these placers (``rl eval``);
    the heuristics alone have no paper row."""
    summary = summarize(store.runs.rename({"seed": "sequence"}))
    heads = ["load", "policy", *(head for _, head, _ in PANELS)]
    parts = []
    for (name,), sub in summary.group_by("store", maintain_order=True):
        rows = []
        for row in sub.iter_rows(named=True):
            cells = []
            for col, _, fmt in PANELS:
                half = row.get(f"{col}_half")
                ci = f" ±{fmt.format(half)}" if half is not None and math.isfinite(half) else ""
                cells.append(fmt.format(row[col]) + ci)
            rows.append([f"{row['load']:.0%}", row["policy"], *cells])
        chart = plot_operational(summary, str(name), out / f"tvw_{name}.png")
        notes = [f"{int(sub['sequences'].max())} sequence(s) per load and policy."]
        if store.description:
            notes.insert(0, store.description)
        figures = [(f"{name}: the paper's Figures 4-5 panels", chart.name)]
        parts.append(Section(f"{store.name}: {name}", notes, (heads, rows), figures))
    return parts, (["metric", "paper", "ours"], [])


def write(root: Path, out: Path) -> Report:
    """The report of the tvw store at ``root``: tables, charts and ``index.html`` in ``out``."""
    return sectioned_report(root, out, load(root), sections, SOURCE)
