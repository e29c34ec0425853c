"""Console output: a progress bar that appears only on long runs, and the summary table."""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from reclaim.progress import LoggedProgress
from reclaim.sim.results import SimResult
from reclaim.sim.simulator import Simulator
from reclaim.workload.builder import BuildReport
from reclaim.workload.model import Workload


class SimProgress:
    """``on_tick`` callback: shows finished applications and simulated days once a run has taken
    more than ``after_s`` seconds, so short runs print nothing."""

    def __init__(self, console: Console, after_s: float = 2.0) -> None:
        self.console = console
        self.after_s = after_s
        self._started = time.perf_counter()
        self._progress: LoggedProgress | None = None
        self._task = None

    def __enter__(self) -> SimProgress:
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, sim: Simulator) -> None:
        if self._progress is None:
            if time.perf_counter() - self._started < self.after_s:
                return
            self._progress = LoggedProgress(
                TextColumn("simulating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("apps  day {task.fields[day]:.1f}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._task = self._progress.add_task("", total=sim.state.workload.n_apps, day=0.0)
            self._progress.start()
        state = sim.state
        self._progress.update(self._task, completed=state.finished, day=state.now / 86400.0)


_ROWS = [
    ("applications", "apps", "{:,.0f}"),
    ("  done", "apps_done", "{:,.0f}"),
    ("  rejected (never fit)", "apps_rejected", "{:,.0f}"),
    ("  still running / queued", "_unfinished", "{:,.0f}"),
    (
        "turnaround mean / p50 / p95",
        ("turnaround_mean_s", "turnaround_p50_s", "turnaround_p95_s"),
        "time",
    ),
    (
        "queue time mean / p50 / p95",
        ("queue_time_mean_s", "queue_time_p50_s", "queue_time_p95_s"),
        "time",
    ),
    ("applications failed (any component stopped)", "failure_rate", "{:.1%}"),
    ("  core out of memory", "core_oom_rate", "{:.1%}"),
    ("  preempted by the controller", "preempted_rate", "{:.1%}"),
    ("  elastic component lost", "elastic_loss_rate", "{:.1%}"),
    ("resubmissions / elastic components lost", ("resubmissions", "component_losses"), "count"),
    ("work lost", ("work_lost_core_h", "work_lost_gib_h"), "{:,.1f} core-h / {:,.1f} GiB-h"),
    ("slack per app CPU / memory", ("app_slack_cpu_mean", "app_slack_mem_mean"), "share"),
    ("cluster slack CPU / memory", ("cluster_slack_cpu_mean", "cluster_slack_mem_mean"), "share"),
    ("shapeable: apps / memory-time", ("shapeable_apps", "shapeable_mem"), "share"),
    ("forecasts answered by fallback", "forecast_fallback_share", "{:.1%}"),
    ("realised coverage", "realised_coverage", "{:.2%}"),
    ("CPU used / capacity", "util_cpu_mean", "{:.1%}"),
    ("CPU allocated / capacity", "alloc_share_cpu_mean", "{:.1%}"),
    ("memory used / capacity", "util_mem_mean", "{:.1%}"),
    ("memory allocated / capacity", "alloc_share_mem_mean", "{:.1%}"),
    ("simulated", "simulated_days", "{:.2f} days"),
]


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def summary_table(result: SimResult, title: str) -> Table:
    """One run's summary: failures as the shaping paper counts them (any component stopped) and
    split by cause, lost work by resource, the paper's slack per application and the cluster's,
    and the share of the workload that shaping could act on at all."""
    s = dict(result.summary)
    s["_unfinished"] = s.get("apps_running", 0) + s.get("apps_queued", 0)
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    for label, key, fmt in _ROWS:
        if isinstance(key, tuple):
            if all(k in s for k in key):
                values = [s[k] for k in key]
                if fmt == "time":
                    text = " / ".join(_duration(v) for v in values)
                elif fmt == "share":
                    text = " / ".join(f"{v:.1%}" for v in values)
                elif fmt == "count":
                    text = " / ".join(f"{v:,.0f}" for v in values)
                else:
                    text = fmt.format(*values)
                table.add_row(label, text)
        elif key in s:
            table.add_row(label, fmt.format(s[key]))
    st = result.stats
    rate = st.component_ticks / st.wall_s if st.wall_s else 0.0
    table.add_row("wall time", f"{st.wall_s:.1f} s ({rate:,.0f} component-ticks/s)")
    return table


def workload_table(
    report: BuildReport, capacity: NDArray[np.float64], workload: Workload | None = None
) -> Table:
    """What the sampled workload holds and what building it dropped or changed, with the
    offered load (requested resource-time over capacity-time across the arrival span) and, given
    the workload, the share of it that can never run on this cluster."""
    table = Table(title="workload", show_header=False, title_justify="left")
    table.add_column("item", style="bold")
    table.add_column("value", justify="right")
    table.add_row("applications / components", f"{report.n_apps:,} / {report.n_components:,}")
    table.add_row("elastic applications", f"{report.elastic_apps:,}")
    excluded = ", ".join(f"{k} {v:,}" for k, v in report.jobs_excluded.items() if v) or "none"
    table.add_row("trace jobs used", f"{report.jobs_used:,} of {report.jobs_total:,}")
    table.add_row("jobs excluded", excluded)
    table.add_row("arrival span", _duration(report.arrival_span))
    if report.arrival_span > 0:
        requested, used = offered_load(report, capacity)
        table.add_row(
            "offered load CPU / memory (requests)", f"{requested[0]:.0%} / {requested[1]:.0%}"
        )
        table.add_row("offered load CPU / memory (usage)", f"{used[0]:.0%} / {used[1]:.0%}")
    if workload is not None:
        never = workload.never_fits(capacity)
        if never.any():
            cp = workload.comp_indptr
            asked = workload.request * workload.work[:, None].astype(np.float64)
            per_app = np.add.reduceat(asked, cp[:-1], axis=0)
            share = per_app[never].sum(axis=0) / per_app.sum(axis=0)
            table.add_row(
                "never fit this cluster: apps / CPU / memory-time",
                f"{never.sum():,} / {share[0]:.0%} / {share[1]:.0%}",
            )
    clipped = " / ".join(f"{share:.2%}" for share in report.clipped_share)
    table.add_row("usage samples clipped to request (CPU / mem)", clipped)
    if report.calibration is not None:
        share = " / ".join(f"{v:.0%}" for v in report.calibration.mean_share)
        table.add_row("usage / request after pairing (CPU / mem)", share)
    if report.components_truncated:
        table.add_row("components truncated", f"{report.components_truncated:,}")
    return table


def offered_load(
    report: BuildReport, capacity: NDArray[np.float64]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(CPU, memory) offered load as a share of the cluster over the arrival span: by requests,
    and by the usage the work brings (both at full speed, before any queueing)."""
    total = capacity.sum(axis=0) * max(report.arrival_span, 1e-9)
    requested = (report.offered_core_seconds / total[0], report.offered_gib_seconds / total[1])
    used = (report.used_core_seconds / total[0], report.used_gib_seconds / total[1])
    return requested, used


def overload_warnings(report: BuildReport, capacity: NDArray[np.float64]) -> list[str]:
    """One line per resource whose requests alone offer more than the cluster holds."""
    if report.arrival_span <= 0:
        return []
    requested, used = offered_load(report, capacity)
    return [
        f"{name} requests offer {req:.0%} of the cluster ({use:.0%} by usage): under "
        "reservations the queue grows for as long as arrivals last"
        for name, req, use in zip(("CPU", "memory"), requested, used, strict=True)
        if req > 1.0
    ]
