"""A result store read back for reporting: its runs, the per-seed turnaround ratio over the
reservation baseline, and runs aggregated over seeds into cells (a label and its parameters), each
metric as a mean over seeds with a 95 % confidence interval.

The store is what the experiment runner writes: ``experiment.json``, ``runs.parquet`` (one row per
finished run) and ``runs/<run_id>/{apps,timeline}.parquet``. A sweep that was interrupted is
still a store: everything here works on the runs that finished.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from reclaim.errors import ReclaimError
from reclaim.experiments.kind import DEFAULT_KIND, experiment_kind
from reclaim.metrics.intervals import Interval, t_half_width
from reclaim.validation import read_json_object

BASELINE = "reservation"
#: What identifies a cell: runs that differ only in their seed.
CELL = ["experiment", "world", "label", "controller", "forecaster", "k1", "k2", "coverage"]
#: Metrics that are shares of applications, resource-time or forecasts: within [0, 1].
RATES = (
    "failure_rate",
    "core_oom_rate",
    "preempted_rate",
    "elastic_loss_rate",
    "shapeable_apps",
    "shapeable_cpu",
    "shapeable_mem",
    "forecast_fallback_share",
    "realised_coverage",
    "failure_target",
)
#: Slack metrics: shares too, at most one but unbounded below (usage may pass a soft
#: allocation, or CPU its allocation where CPU does not throttle).
SLACKS = (
    "slack_cpu",
    "slack_mem",
    "slack_mem_weighted",
    "app_slack_mem_mean",
    "cluster_slack_cpu_mean",
    "cluster_slack_mem_mean",
)
#: Times, counts, ratios and lost work: never below 0.
NON_NEGATIVE = (
    "apps_done",
    "turnaround_mean_s",
    "turnaround_p50_s",
    "turnaround_ratio",
    "apps_failed",
    "resubmissions",
    "preemptions",
    "work_lost_component_h",
    "work_lost_core_h",
    "work_lost_gib_h",
    "adapted_k2",
)
#: Counts of applications: an interval ends at the number of applications run (``apps``).
APP_COUNTS = ("apps_done", "apps_failed")
#: Per-run metrics aggregated over seeds. ``slack_*``, ``failure_rate`` and ``turnaround_ratio``
#: are as ``derive`` leaves them; the rest are the runs' summary keys (null where a run lacks one:
#: an older runner, a controller without that knob).
METRICS = [*NON_NEGATIVE, *SLACKS, *RATES]
#: Values a metric cannot leave: its interval is cut there (a t-interval is symmetric and, with
#: few seeds, would otherwise reach a negative time or a share above one).
BOUNDS: dict[str, tuple[float, float]] = {
    **dict.fromkeys(SLACKS, (-math.inf, 1.0)),
    **dict.fromkeys(RATES, (0.0, 1.0)),
    **dict.fromkeys(NON_NEGATIVE, (0.0, math.inf)),
}
_REQUIRED = ["run_id", "label", "controller", "seed"]
_OPTIONAL_TEXT = ["experiment", "scale", "forecaster", "world"]
_OPTIONAL_FLOAT = [
    "k1",
    "k2",
    "coverage",
    "apps",
    "apps_failed_at_least_once",
    "slack_cpu_weighted",
    "app_slack_cpu_mean",
    "app_idle_cpu_mean",
    "app_idle_mem_mean",
    *[m for m in METRICS if m not in ("turnaround_ratio", "slack_cpu", "slack_mem")],
]


@dataclass
class ResultStore:
    """``runs``: one row per finished run, with the derived columns of ``derive``.
    ``pending``: run directories without a finished row (a sweep still running or interrupted)."""

    root: Path
    name: str
    scale: str
    description: str
    runs: pl.DataFrame
    pending: int

    def run_table(self, run_ids: list[str], table: str) -> pl.DataFrame | None:
        """``apps`` or ``timeline`` of these runs stacked, with ``run_id``; None if none is on disk
        (a store copied without its per-run files still reports its summary)."""
        frames = []
        for run_id in run_ids:
            path = self.root / "runs" / run_id / f"{table}.parquet"
            if path.exists():
                frames.append(_read_table(path).with_columns(run_id=pl.lit(run_id)))
        return pl.concat(frames, how="diagonal_relaxed") if frames else None


def read_store(root: Path, required: list[str]) -> tuple[pl.DataFrame, dict, int]:
    """``runs.parquet`` (checked for ``required`` columns, with experiment and scale filled in),
    ``experiment.json`` and the number of run folders without a row, for any kind of experiment;
    anything missing or unreadable is a ReclaimError."""
    path = root / "runs.parquet"
    if not path.exists():
        raise ReclaimError(f"{root}: no runs.parquet (not a result store, or no run finished yet)")
    runs = _read_table(path)
    missing = [c for c in required if c not in runs.columns]
    if missing:
        raise ReclaimError(f"{path}: missing column(s) {', '.join(missing)}")
    if runs.is_empty():
        raise ReclaimError(f"{path}: no finished run yet")
    meta = experiment_meta(root)
    names = _name_columns(str(meta.get("kind", DEFAULT_KIND)))
    for column, dtype in runs.schema.items():
        if column not in names and not (dtype.is_numeric() or dtype == pl.Null):
            raise ReclaimError(f"{path}: column {column!r} holds {dtype} where numbers are due")
    runs = runs.with_columns(
        [pl.lit(None, pl.String).alias(c) for c in ("experiment", "scale") if c not in runs.columns]
    ).with_columns(
        pl.col("experiment").fill_null(str(meta.get("name", root.name))),
        pl.col("scale").fill_null(str(meta.get("scale", ""))),
        pl.col("run_id").cast(pl.String),
    )
    run_dirs = {p.name for p in (root / "runs").glob("*") if p.is_dir()}
    return runs, meta, len(run_dirs - set(runs["run_id"]))


def experiment_meta(root: Path) -> dict:
    """``experiment.json`` of a result store ({} if absent)."""
    meta_path = root / "experiment.json"
    return read_json_object(meta_path) if meta_path.exists() else {}


def _read_table(path: Path) -> pl.DataFrame:
    """A Parquet table of a result store; a truncated or foreign file is one line naming it."""
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as err:
        problem = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ReclaimError(f"{path}: unreadable ({problem}); rerun the experiment") from None


def _name_columns(kind: str) -> set[str]:
    """Columns of runs.parquet that hold names for an experiment of ``kind``: the string
    columns the kind writes (every other column holds numbers)."""
    columns = experiment_kind(kind).columns
    return {c for c, dtype in columns.items() if dtype == pl.String}


def load_results(root: Path) -> ResultStore:
    """Read the shaping experiment store at ``root``."""
    runs, meta, pending = read_store(root, _REQUIRED)
    runs = runs.with_columns(
        [pl.lit(None, pl.String).alias(c) for c in _OPTIONAL_TEXT if c not in runs.columns]
    )
    name, scale = str(meta.get("name", root.name)), str(meta.get("scale", ""))
    return ResultStore(root, name, scale, str(meta.get("description", "")), derive(runs), pending)


def derive(runs: pl.DataFrame) -> pl.DataFrame:
    """Add ``slack_cpu``/``slack_mem`` with ``slack_source``, ``failure_rate`` with
    ``failure_source``, and ``turnaround_ratio``: the mean turnaround of the reservation run with
    the same experiment, scale and seed over this run's, so bigger is better and seeds never mix.
    Metrics a store lacks (an older runner, no finished application) become nulls.

    Rows from an older runner keep their numbers under the names of what they measured: its
    ``app_slack_*_mean`` was the idle share of the allocation (now ``app_idle_*_mean``), its
    ``work_lost_core_h`` held component-hours (now ``work_lost_component_h``) and its
    ``failure_rate`` counted core out-of-memory failures only (now ``core_oom_rate``). Turnaround
    ratios pair runs of the same ``world`` too (a ladder's rungs each have their baseline). The
    report's
    ``slack_*`` is the paper's per-application slack (of the request), else that idle share, else
    the cluster's allocation-weighted slack; its ``failure_rate`` the paper's (any component
    stopped), else the core-OOM share; the ``*_source`` columns say which.
    """
    if "world" not in runs.columns:  # stores from before worlds hold one world
        runs = runs.with_columns(world=pl.lit(""))
    runs = runs.with_columns(
        [pl.lit(None, pl.Float64).alias(c) for c in _OPTIONAL_FLOAT if c not in runs.columns]
    ).with_columns(
        *[pl.col(c).cast(pl.Float64) for c in _OPTIONAL_FLOAT], pl.col("world").fill_null("")
    )
    old_slack = pl.col("app_idle_mem_mean").is_null() & pl.col("app_slack_mem_mean").is_not_null()
    old_work = pl.col("work_lost_component_h").is_null()
    old_fail = pl.col("apps_failed").is_null()
    core_oom = pl.coalesce(
        pl.col("failure_rate"), pl.col("apps_failed_at_least_once") / pl.col("apps")
    )
    null = pl.lit(None, pl.Float64)
    runs = runs.with_columns(
        *[
            pl.when(old_slack)
            .then(pl.col(f"app_slack_{r}_mean"))
            .otherwise(pl.col(f"app_idle_{r}_mean"))
            .alias(f"app_idle_{r}_mean")
            for r in ("cpu", "mem")
        ],
        *[
            pl.when(old_slack)
            .then(null)
            .otherwise(pl.col(f"app_slack_{r}_mean"))
            .alias(f"app_slack_{r}_mean")
            for r in ("cpu", "mem")
        ],
        work_lost_component_h=pl.when(old_work)
        .then(pl.col("work_lost_core_h"))
        .otherwise(pl.col("work_lost_component_h")),
        work_lost_core_h=pl.when(old_work).then(null).otherwise(pl.col("work_lost_core_h")),
        core_oom_rate=pl.when(old_fail).then(core_oom).otherwise(pl.col("core_oom_rate")),
        failure_rate=pl.when(old_fail).then(core_oom).otherwise(pl.col("failure_rate")),
        failure_source=pl.when(old_fail)
        .then(pl.lit("core OOM only (older runner)"))
        .otherwise(pl.lit("any component stopped")),
    )
    runs = runs.with_columns(
        [
            pl.coalesce(
                pl.col(f"app_slack_{r}_mean"),
                pl.col(f"app_idle_{r}_mean"),
                pl.col(f"slack_{r}_weighted"),
            ).alias(f"slack_{r}")
            for r in ("cpu", "mem")
        ],
        slack_source=pl.when(pl.col("app_slack_mem_mean").is_not_null())
        .then(pl.lit("per-application"))
        .when(pl.col("app_idle_mem_mean").is_not_null())
        .then(pl.lit("per-application idle share (older runner)"))
        .otherwise(pl.lit("cluster")),
    )
    key = ["experiment", "scale", "world", "seed"]
    baseline = (
        runs.filter(pl.col("controller") == BASELINE)
        .group_by(key)
        .agg(baseline_turnaround_s=pl.col("turnaround_mean_s").mean())
    )
    return runs.join(
        baseline, on=key, how="left", nulls_equal=True, maintain_order="left"
    ).with_columns(turnaround_ratio=pl.col("baseline_turnaround_s") / pl.col("turnaround_mean_s"))


def aggregate(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per cell: ``runs``, ``seeds``, ``run_ids``, and for each of METRICS ``<metric>``
    (mean over seeds), ``<metric>_std``, ``<metric>_n`` (seeds with a value) and
    ``<metric>_lo``/``<metric>_hi``: the 95 % Student-t interval of the mean over seeds (n - 1
    degrees of freedom; null below two seeds; cut at BOUNDS). A seed run more than once counts
    once, at its mean. ``runs`` as :func:`derive` leaves them (with an ``apps`` column).
    The turnaround ratio's interval is thus that of the per-seed ratios. Baseline cells first, then
    labels in the order their first run appears, then by K1, K2 and coverage."""
    order = runs.select("label").unique(maintain_order=True).with_row_index("_label_order")
    per_seed = runs.group_by([*CELL, "seed"], maintain_order=True).agg(
        pl.len().alias("runs"),
        pl.col("run_id").alias("run_ids"),
        pl.col("apps").max(),
        *[pl.col(m).mean() for m in METRICS],
    )
    cells = per_seed.group_by(CELL, maintain_order=True).agg(
        pl.col("runs").sum(),
        pl.len().alias("seeds"),
        pl.col("run_ids").explode(),
        pl.col("apps").max(),
        *[pl.col(m).mean() for m in METRICS],
        *[pl.col(m).std().alias(f"{m}_std") for m in METRICS],
        *[pl.col(m).count().cast(pl.Int64).alias(f"{m}_n") for m in METRICS],
    )
    half = {
        m: pl.Series(
            t_half_width(cells[f"{m}_std"].to_numpy(), cells[f"{m}_n"].to_numpy()),
            dtype=pl.Float64,
        ).fill_nan(None)
        for m in METRICS
    }
    lower = {m: BOUNDS.get(m, (-math.inf, math.inf))[0] for m in METRICS}
    upper = {m: BOUNDS.get(m, (-math.inf, math.inf))[1] for m in METRICS}
    cells = cells.with_columns(
        *[(pl.col(m) - half[m]).clip(lower_bound=lower[m]).alias(f"{m}_lo") for m in METRICS],
        *[
            (pl.col(m) + half[m]).clip(upper_bound=_upper(m, upper[m])).alias(f"{m}_hi")
            for m in METRICS
        ],
    )
    return (
        cells.join(order, on="label", maintain_order="left")
        .with_columns(_baseline_first=pl.col("controller") != BASELINE)
        .sort(
            ["_baseline_first", "_label_order", "k1", "k2", "coverage"],
            nulls_last=False,
            maintain_order=True,
        )
        .drop("_baseline_first", "_label_order")
    )


def per_seed(runs: pl.DataFrame, run_ids: Iterable[str], metric: str) -> dict[int, float]:
    """``metric`` of these runs by seed (a seed run twice: its mean); seeds without a value left
    out."""
    sub = runs.filter(pl.col("run_id").is_in(list(run_ids)) & pl.col(metric).is_not_null())
    frame = sub.group_by("seed").agg(pl.col(metric).cast(pl.Float64).mean())
    return {seed: value for seed, value in frame.iter_rows() if not math.isnan(value)}


def _upper(metric: str, bound: float) -> pl.Expr | float:
    """Where ``metric``'s interval ends above: the applications run for a count of them (a cell
    that does not know how many leaves it uncut), else ``bound``."""
    return pl.col("apps") if metric in APP_COUNTS else bound


def cell_interval(cell: dict, metric: str) -> Interval:
    """A cell's ``metric`` as an Interval (from ``aggregate``'s columns; absent metric: empty)."""
    return Interval(
        cell.get(metric),
        cell.get(f"{metric}_lo"),
        cell.get(f"{metric}_hi"),
        int(cell.get(f"{metric}_n") or 0),
    )


def cell_name(cell: dict) -> str:
    """``label`` followed by the parameters that set this cell apart, e.g. ``gp K1=5% K2=3``,
    after its world where it has one (``[+03 memory] gp K1=5% K2=3``)."""
    parts = [f"[{cell['world']}]"] if cell.get("world") else []
    parts.append(cell["label"])
    if cell.get("k1") is not None:
        parts.append(f"K1={cell['k1'] * 100:g}%")
    if cell.get("k2") is not None:
        parts.append(f"K2={cell['k2']:g}")
    if cell.get("coverage") is not None:
        parts.append(f"cov={cell['coverage']:g}")
    return " ".join(parts)
