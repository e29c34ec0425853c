"""Google ClusterData 2019 ``instance_usage`` rows of whole tasks, joined with their limits.

The layout of the muse-research-lab extract: ``<collection_id>/<instance_index>-<first>-<last>
.csv[.gz]``, one file per task and one row per 5-minute window, with the task's limits on every
row. A file becomes one workload (requests = limits, the largest over its life) and its rows the
usage, with the window's max and the percentiles of its 1-second CPU samples as optional columns.
Values stay in Google's normalised units, so usage / request is a real ratio.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find, natural_key
from reclaim.traces.schema import CPU_PERCENTILES
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import (
    Filtered,
    RowError,
    SeriesOrder,
    at_most,
    finite,
    non_negative,
    require,
)
from reclaim.traces.writer import StoreWriter

PERCENTILES = {f"p{q}_cpu_usage": f"cpu_p{q}" for q in CPU_PERCENTILES}
COLUMNS = (
    "time",
    "unique_id",
    "collection_id",
    "instance_index",
    "priority",
    "scheduling_class",
    "machine_id",
    "alloc_collection_id",
    "alloc_instance_index",
    "collection_type",
    "avg_cpu_usage",
    "avg_memory_usage",
    "max_cpu_usage",
    "max_memory_usage",
    "random_sample_cpu_usage",
    "assigned_memory",
    "sample_rate",
    *PERCENTILES,
    "memory_limit",
    "cpu_limit",
    "abstract_usage",
    "abstract_limit",
)
LAYOUT = CsvLayout(COLUMNS, header=True)
LIMITS = ("cpu_limit", "memory_limit", "assigned_memory")
USAGE = ("avg_cpu_usage", "avg_memory_usage", "max_cpu_usage", "max_memory_usage", *PERCENTILES)
TYPES = {
    "time": pl.Float64(),  # microseconds
    "unique_id": pl.String(),
    "collection_id": pl.String(),
    "instance_index": pl.String(),
    "priority": pl.Int64(),
    "scheduling_class": pl.Int64(),
    **dict.fromkeys((*USAGE, *LIMITS), pl.Float64()),
}
TASK_FILE = r"\d+-\d+-\d+\.csv(\.gz)?"
PERIOD_S = 300.0
US_PER_S = 1e6
#: Normalised values above this are corrupt or in another unit: no task uses or is promised
#: twice the largest machine of its cell (1.0 is the whole largest machine).
NORMALISED_MAX = 2.0
BOUND = "twice the largest machine in the cell"

NO_ROWS = "task file without rows"
NO_PERCENTILES = "cpu percentiles all -1 in the source (no 1 s samples): stored as null"
CPU_OVER = "avg_cpu_usage above cpu_limit (kept)"
MEM_OVER = "avg_memory_usage above memory_limit (kept)"
CPU_ZERO = "cpu_limit of 0 (kept; usage / limit undefined)"
MEM_ZERO = "memory_limit of 0 (kept; usage / limit undefined)"
CPU_CHANGES = "cpu_limit changes within the task (cpu_request = the largest)"
MEM_CHANGES = "memory_limit changes within the task (mem_request = the largest)"
CLASS_CHANGES = "priority or scheduling_class changes within the task (the first is kept)"
#: Rows and tasks kept as they are but worth knowing about: meta["flagged"][table][reason].
FLAGS = {
    "usage": {
        NO_PERCENTILES: pl.col("p0_cpu_usage").is_null().sum(),  # nulled from -1 before
        CPU_OVER: (pl.col("avg_cpu_usage") > pl.col("cpu_limit")).sum(),
        MEM_OVER: (pl.col("avg_memory_usage") > pl.col("memory_limit")).sum(),
        CPU_ZERO: (pl.col("cpu_limit") == 0).sum(),
        MEM_ZERO: (pl.col("memory_limit") == 0).sum(),
    },
    "workloads": {
        CPU_CHANGES: pl.col("cpu_limit").n_unique() > 1,
        MEM_CHANGES: pl.col("memory_limit").n_unique() > 1,
        CLASS_CHANGES: pl.struct("priority", "scheduling_class").n_unique() > 1,
    },
}


@register("trace_format", "google2019-usage")
class Google2019Usage(TraceReader):
    """SRC: the folder of ``<collection_id>/<instance_index>-<first>-<last>.csv.gz`` task files
    (e.g. ``input-sim/`` and ``input-dis/`` under one root), or one such file."""

    units = {"time": "s", "cpu": "normalised", "mem": "normalised"}
    time_origin = "trace-relative"
    period_s = PERIOD_S
    attribution = (
        "Google cluster-usage trace ClusterData 2019 (google/cluster-data), licensed CC-BY 4.0; "
        "cite C. Tirmazi et al., 'Borg: the Next Generation', EuroSys 2020. Per-task extract with "
        "limits joined by muse-research-lab/cloud-traces-comparison (MIT)."
    )
    notes = (
        "cpu and mem (usage, requests, mem_assigned) are Google's normalised units: a fraction of "
        "the largest machine's CPU or memory in the cell, so usage / request is a real ratio; "
        f"values above {NORMALISED_MAX:g} ({BOUND}) are refused as corrupt.",
        "time = the window's start in seconds since 600 s before the trace start "
        "(2019-05-01 00:00 PDT is 600 s); windows are 300 s but end early when a task starts, "
        "stops or moves, so samples can be seconds apart.",
        "cpu and mem are the window's average usage; cpu_max and mem_max its max; cpu_p0 .. "
        "cpu_p99 the percentiles of its 1-second CPU samples (null where the source has -1).",
        "cpu_request = cpu_limit and mem_request = memory_limit (requests are the limits), the "
        "largest over the task's life; mem_assigned = the largest assigned_memory (0 for tasks "
        "running inside an alloc set, whose memory the alloc holds).",
        "id = unique_id (<collection_id>-<instance_index>), job_id = collection_id, category = "
        "scheduling_class (0-3, 3 the most latency-sensitive); submit_time = start_time = the "
        "first window's start, end_time = the last window's start + 300 s.",
        "Two different rows with the same start time (a restart within a second) keep the first; "
        "the same line twice is an error. Kept rows worth knowing about are counted in 'flagged'.",
    )

    def files(self, src: Path) -> list[Path]:
        found = find(src, TASK_FILE, "<instance_index>-<first>-<last>.csv.gz per task")
        return sorted(found, key=lambda p: (_task_id(p), natural_key(p)))

    def read(self, files: list[Path], out: StoreWriter) -> None:
        flagged = Filtered()
        for table, checks in FLAGS.items():
            for reason in checks:
                flagged.add(table, reason, 0)  # checked, so reported even when none is found
        seen: dict[str, Path] = {}
        for path in files:
            _read_task(path, out, flagged, seen)
        out.meta["flagged"] = flagged.counts


def _task_id(path: Path) -> str:
    """``<collection_id>-<instance_index>`` from the path: the id the file should hold."""
    return f"{path.parent.name}-{path.name.split('-')[0]}"


def _read_task(path: Path, out: StoreWriter, flagged: Filtered, seen: dict[str, Path]) -> None:
    """One task file: validated whole (a task is at most ~9,000 rows), then written."""
    parts = list(csv_batches(path, LAYOUT, TYPES))
    out.filtered.add("workloads", NO_ROWS, int(not parts))
    if not parts:
        return
    df = pl.concat(parts)
    require(df, path, TYPES)
    _one_task(df, path, seen)
    df = _percentile_sentinel(df)
    finite(df, path, ["time", *USAGE, *LIMITS])
    non_negative(df, path, ["time", *USAGE, *LIMITS])
    at_most(df, path, [*USAGE, *LIMITS], NORMALISED_MAX, BOUND)
    df = df.rename({"unique_id": "id"}).with_columns(pl.col("time") / US_PER_S)
    _same_line_twice(df, path)
    df = SeriesOrder(out.filtered).check(df, path)

    for table, checks in FLAGS.items():
        counts = df.select(**{reason: check for reason, check in checks.items()}).row(0)
        for reason, n in zip(checks, counts, strict=True):
            flagged.add(table, reason, int(n))

    out.write(
        "usage",
        df.select(
            "id",
            "time",
            cpu="avg_cpu_usage",
            mem="avg_memory_usage",
            cpu_max="max_cpu_usage",
            mem_max="max_memory_usage",
            **{name: pl.col(c) for c, name in PERCENTILES.items()},
        ),
    )
    out.write(
        "workloads",
        df.select(
            pl.first("id"),
            job_id=pl.first("collection_id"),
            submit_time=pl.min("time"),
            start_time=pl.min("time"),
            end_time=pl.max("time") + PERIOD_S,
            instances=pl.lit(1),
            cpu_request=pl.max("cpu_limit"),
            mem_request=pl.max("memory_limit"),
            mem_assigned=pl.max("assigned_memory"),
            priority=pl.first("priority"),
            category=pl.first("scheduling_class").cast(pl.String),
        ),
    )


def _one_task(df: pl.DataFrame, path: Path, seen: dict[str, Path]) -> None:
    """A file holds one task, whose unique_id is <collection_id>-<instance_index>, in no other
    file: rows of one task in two files could not be ordered or deduplicated safely."""
    wid = df["unique_id"][0]
    expected = pl.col("collection_id") + "-" + pl.col("instance_index")
    checks = {
        "id": pl.col("unique_id") != expected,
        "task": pl.col("unique_id") != wid,
    }
    bad = df.select(**{k: m.arg_true().first() for k, m in checks.items()}).row(0, named=True)
    if bad["id"] is not None:
        row = df.row(bad["id"], named=True)
        problem = (
            f"unique_id {row['unique_id']!r} is not <collection_id>-<instance_index> "
            f"({row['collection_id']}-{row['instance_index']})"
        )
        raise RowError(path, problem, row["_line"])
    if bad["task"] is not None:
        other = df["unique_id"][bad["task"]]
        problem = f"second task {other!r} in the file of {wid!r} (one task per file)"
        raise RowError(path, problem, df["_line"][bad["task"]])
    if wid in seen:
        raise RowError(path, f"task {wid!r} is also in {seen[wid]} (one file per task)", 2)
    seen[wid] = path


def _percentile_sentinel(df: pl.DataFrame) -> pl.DataFrame:
    """The source writes -1 in every percentile of a window without 1-second samples: null
    (counted with the flags). A -1 among real percentiles is not this and fails as negative."""
    missing = pl.all_horizontal(pl.col(c) == -1 for c in PERCENTILES)
    return df.with_columns(pl.when(~missing).then(pl.col(c)).alias(c) for c in PERCENTILES)


def _same_line_twice(df: pl.DataFrame, path: Path) -> None:
    """Borg writes two different rows for one window start when a task restarts within a
    second; a row equal to the one before it is a copy error, not a measurement."""
    values = [c for c in df.columns if c != "_line"]
    same = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(1)) for c in values)
    hit = df.select(same.fill_null(False).arg_true().first()).item()
    if hit is not None:
        line = df["_line"][hit]
        raise RowError(
            path, f"repeats line {df['_line'][hit - 1]} (same task, time and values)", line
        )
