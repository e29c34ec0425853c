"""The report of a live run: the shaping paper's Figure 5 (memory slack and turnaround, baseline
against shaped) from real processes beside the simulator's replay of the same workload, and the
paper's section-5 numbers against both.

One live run per mode gives one sample of applications, so intervals here are over applications:
a paired bootstrap (the same applications resampled in both modes, fixed seed) of the change in
the median.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from rich.table import Table  # noqa: E402

from reclaim.live.compare import SEEDS_FILE, median_change, summary_rows  # noqa: E402
from reclaim.metrics.intervals import t_interval  # noqa: E402

#: Section 5's results: slack "roughly 40 % lower", median turnaround "~50 % shorter", no failure.
PAPER = {"slack_mem": -0.40, "turnaround": -0.50, "failed_apps": 0.0}
MODES = ("reservation", "shaped")
SOURCES = {"live": "{mode}", "simulated": "sim-{mode}"}
_MEAN = {"marker": "^", "markerfacecolor": "red", "markeredgecolor": "red"}


def run_dir(out: Path, source: str, mode: str) -> Path:
    return out / SOURCES[source].format(mode=mode)


def load_apps(out: Path) -> dict[tuple[str, str], pl.DataFrame]:
    """(source, mode) -> its per-application table, for every run present under ``out``."""
    found = {}
    for source in SOURCES:
        for mode in MODES:
            path = run_dir(out, source, mode) / "apps.parquet"
            if path.is_file():
                found[source, mode] = pl.read_parquet(path)
    return found


def paper_table(out: Path) -> pl.DataFrame:
    """Section 5's claims, the live runs, the simulator's replay of the same workload, and the
    simulator over several seeds: the change of the median memory slack and turnaround from
    reservations to shaping (with 95 % intervals: paired bootstrap over applications for one
    workload, t over seeds), and the applications that failed under shaping."""
    apps = load_apps(out)
    seeds_path = out / SEEDS_FILE
    seeds = pl.read_parquet(seeds_path) if seeds_path.is_file() else None
    rows = []
    for metric, label in (
        ("slack_mem", "median memory slack, shaped vs reservations"),
        ("turnaround", "median turnaround, shaped vs reservations"),
        ("failed_apps", "applications failed under shaping"),
    ):
        row = {"metric": label, "paper": PAPER[metric]}
        for source in SOURCES:
            pair = apps.get((source, "reservation")), apps.get((source, "shaped"))
            row[source], row[f"{source}_low"], row[f"{source}_high"] = _change(pair, metric)
        if seeds is not None:
            spread = t_interval(seeds[metric].to_list())
            row["seeds"], row["seeds_low"], row["seeds_high"] = (
                np.nan if v is None else v for v in (spread.mean, spread.lo, spread.hi)
            )
            row["seeds_n"] = spread.n
        rows.append(row)
    return pl.DataFrame(rows)


def _change(pair, metric: str) -> tuple[float, float, float]:
    if any(p is None for p in pair):
        return np.nan, np.nan, np.nan
    if metric != "failed_apps":
        return median_change(*pair, metric)
    shaped = pair[1]
    killed = shaped["failures"] + shaped["preemptions"] + shaped["component_losses"]
    return float((killed > 0).sum()), np.nan, np.nan


def plot_figure5(out: Path, path: Path) -> Path | None:
    """Boxplots of per-application memory slack and turnaround (hours), reservations against
    shaping, live and simulated side by side; the red triangle is the mean (as the paper's)."""
    apps = load_apps(out)
    if not apps:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, (column, label, scale) in zip(
        axes,
        (("slack_mem", "memory slack", 1.0), ("turnaround", "turnaround (h)", 3600.0)),
        strict=True,
    ):
        data, names = [], []
        for (source, mode), frame in sorted(apps.items()):
            values = frame.filter(pl.col("state") == "done")[column].to_numpy() / scale
            data.append(values[np.isfinite(values)])
            names.append(f"{source}\n{mode}")
        ax.boxplot(data, showmeans=True, showfliers=False, meanprops=_MEAN)
        ax.set_xticks(range(1, len(names) + 1), names, fontsize=8)
        ax.set_title(label)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Figure 5: reservations vs pessimistic GP shaping, live and simulated")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summaries(out: Path) -> dict[tuple[str, str], dict]:
    """(source, mode) -> its summary.json's summary."""
    found = {}
    for source in SOURCES:
        for mode in MODES:
            path = run_dir(out, source, mode) / "summary.json"
            if path.is_file():
                found[source, mode] = json.loads(path.read_text())["summary"]
    return found


def _pct(value: float) -> str:
    return "-" if not np.isfinite(value) else f"{value:+.0%}"


def _count(value: float) -> str:
    return "-" if not np.isfinite(value) else f"{value:.0f}"


def live_tables(out: Path) -> list[Table]:
    """The paper's section-5 numbers against live and simulated, each run's summary, and the
    per-application agreement of live and simulated runs."""
    table = paper_table(out)
    n_seeds = int(table["seeds_n"][0]) if "seeds_n" in table.columns else 0
    claims = Table(title="Section 5: paper, live, simulated (95 % intervals)")
    columns = ["", "paper", "live", "simulated"] + (
        [f"simulated, {n_seeds} seeds"] if n_seeds else []
    )
    for col in columns:
        claims.add_column(col, justify="left" if not col else "right")
    for row in table.iter_rows(named=True):
        counted = row["metric"].startswith("applications")
        show = _count if counted else _pct
        cells = [row["metric"], show(row["paper"])]
        for source in list(SOURCES) + (["seeds"] if n_seeds else []):
            value, low, high = row[source], row[f"{source}_low"], row[f"{source}_high"]
            interval = "" if not np.isfinite(low) else f" [{show(low)}, {show(high)}]"
            cells.append(show(value) + interval)
        claims.add_row(*cells)

    runs = Table(title="Runs")
    columns = [
        ("done", "apps_done", "{:.0f}"),
        ("turnaround p50 h", "turnaround_p50_s", "h"),
        ("turnaround mean h", "turnaround_mean_s", "h"),
        ("mem slack", "app_slack_mem_mean", "{:.1%}"),
        ("CPU slack", "app_slack_cpu_mean", "{:.1%}"),
        ("failed apps", "apps_failed", "{:.0f}"),
        ("kernel OOM kills", "kernel_oom_kills", "{:.0f}"),
        ("preemptions", "agent_preemptions", "{:.0f}"),
    ]
    runs.add_column("run")
    for name, *_ in columns:
        runs.add_column(name, justify="right")
    for (source, mode), summary in sorted(summaries(out).items()):
        cells = [f"{source} {mode}"]
        for _, key, form in columns:
            value = summary.get(key)
            if value is None:
                cells.append("-")
            else:
                cells.append(f"{value / 3600:.2f}" if form == "h" else form.format(value))
        runs.add_row(*cells)

    tables = [claims, runs]
    path = out / "comparison.parquet"
    if path.is_file():
        agree = Table(title="Live vs simulated, per application (medians over apps done both ways)")
        for col in ("mode", "metric", "live", "simulated", "live - simulated", "apps"):
            agree.add_column(col, justify="right" if col not in ("mode", "metric") else "left")
        for row in summary_rows(pl.read_parquet(path)).iter_rows(named=True):
            agree.add_row(
                row["mode"],
                row["metric"],
                f"{row['live_median']:.3g}",
                f"{row['sim_median']:.3g}",
                f"{row['diff_median']:+.3g}",
                str(row["apps"]),
            )
        tables.append(agree)
    return tables
