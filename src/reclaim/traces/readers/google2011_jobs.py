"""Google clusterdata-2011-2 job and task events -> one row per job, and the job distributions.

SRC is a folder holding Google's ``job_events/part-NNNNN-of-00500.csv.gz`` files and, optionally,
``task_events/part-*.csv.gz`` (any contiguous or gapped set of parts). The store gets:

- ``workloads.parquet``: one row per job of the job events. ``submit_time`` = its first SUBMIT,
  ``start_time`` = its first SCHEDULE, ``end_time``/``status`` = its last lifecycle event if that
  ends it (EVICT, FAIL, FINISH, KILL, LOST -> "evict", ... ; null while it still runs at the end
  of the files). Times are seconds from the trace start: Google's microseconds minus its 600 s
  offset, except Google's 0 (before the trace), kept as 0. ``category`` = scheduling class.
  Where the task events cover the job (see below), ``instances`` = its tasks and ``cpu_request``/
  ``mem_request`` = the mean request per task, in Google's normalised units.
- ``distributions.parquet``: 1001-point quantile tables (the paper's simulator samples from such
  tables, ``core/Workload.scala`` ``buildDist``: entry i = the sorted sample at index
  floor((n - 1) i / 1000)), one column per quantity, and their counts, means and medians in
  meta.json["distributions"].

The quantities follow the paper's notebook (``script/Google Traces Parser - clusterdata-2011-2
.ipynb`` of fraPace/cluster-scheduler-simulator, the cells writing ``*_cmb.log``):

- population: jobs whose rows with time > 0 among SUBMIT and FINISH are exactly one SUBMIT and one
  FINISH (the notebook's 385,502 jobs over 29 days). Pre-trace jobs (time 0), resubmitted jobs and
  jobs that did not finish are out; each is counted in meta.json["filtered"].
- ``gap_s``: gaps between consecutive SUBMIT times of the population, in submission order (the
  notebook's first gap runs from the trace clock's origin; it is left out here).
- ``runtime_s``: FINISH minus SCHEDULE of the population.
- ``tasks``: distinct task indices among the task SUBMIT rows of population jobs that the task
  events cover: submitted after t = 0 and finished inside one run of consecutive task parts.
- ``task_cpu``, ``task_mem``: per task of those jobs, the mean request over its SUBMIT rows
  (SUBMIT rows without a request, Google's "missing info", are left out and counted).

The notebook also dropped jobs without a task (20 of 385,502) and labelled "service" the jobs
with a priority >= 9 task and scheduling class 2 or 3 (the simulator's Batch tables skip them).
Both need the task events, which cover hours, not the whole span: neither filter is applied;
meta.json["population"] reports how many covered jobs each would remove.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from reclaim.errors import TraceError
from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import RowError, non_negative, nonempty, physical, require, within
from reclaim.traces.writer import COMPRESSION, COMPRESSION_LEVEL, StoreWriter

DISTRIBUTIONS_FILE = "distributions.parquet"
#: Points of each quantile table (the paper's simulator: ``new Array[Double](1001)``).
QUANTILE_POINTS = 1001
#: Quantity -> unit, in the column order of distributions.parquet.
QUANTITIES = {
    "gap_s": "s",
    "runtime_s": "s",
    "tasks": "tasks",
    "task_cpu": "normalised",
    "task_mem": "normalised",
}

JOB_COLUMNS = (
    "time",
    "missing_info",
    "job_id",
    "event_type",
    "user",
    "scheduling_class",
    "job_name",
    "logical_job_name",
)
TASK_COLUMNS = (
    "time",
    "missing_info",
    "job_id",
    "task_index",
    "machine_id",
    "event_type",
    "user",
    "scheduling_class",
    "priority",
    "cpu_request",
    "memory_request",
    "disk_request",
    "different_machine",
)
JOB_TYPES = {
    "time": pl.Int64(),
    "missing_info": pl.Int64(),
    "job_id": pl.Int64(),
    "event_type": pl.Int64(),
    "scheduling_class": pl.Int64(),
}
TASK_TYPES = {
    "time": pl.Int64(),
    "missing_info": pl.Int64(),
    "job_id": pl.Int64(),
    "task_index": pl.Int64(),
    "machine_id": pl.Int64(),
    "event_type": pl.Int64(),
    "priority": pl.Int64(),
    "cpu_request": pl.Float64(),
    "memory_request": pl.Float64(),
}
PART = re.compile(r"part-(\d+)-of-\d+\.csv(\.gz)?")
US_PER_S = 1_000_000
#: Google's times start 600 s after the clock's origin; 0 means "before the trace".
OFFSET_US = 600 * US_PER_S
TIME_BOUND = physical("s", US_PER_S)
#: The trace covers 29 days from its 600 s offset; a day's margin for the last events.
TRACE_END_US = (600 + 30 * 86_400) * US_PER_S
NORMALISED = physical("normalised")
SUBMIT, SCHEDULE, FINISH = 0, 1, 4
#: Event types that end a job or task, by Google's code.
ENDS = {2: "evict", 3: "fail", 4: "finish", 5: "kill", 6: "lost"}
EVENT_TYPES = range(9)  # 0 SUBMIT .. 8 UPDATE_RUNNING
SCHEDULING_CLASSES = range(4)
PRIORITIES = range(12)

NOT_POPULATION = {
    "pre": "submitted before the trace (time 0)",
    "no_submit": "no SUBMIT in these files (submitted before the first file)",
    "resubmitted": "more than one SUBMIT in the trace (resubmitted)",
    "unfinished": "no FINISH (killed, failed, evicted, lost or still running)",
    "refinished": "more than one FINISH in the trace",
}
#: The table name under which meta.json["filtered"] counts the jobs left out of every quantity.
POPULATION = "finished population"
NO_SCHEDULE = "finished job without a SCHEDULE"
FIRST_GAP = "first job of the population (no previous submission)"
NOT_COVERED = "job not covered by the task events (submitted or finished outside their span)"
NO_TASKS = "covered job without a task SUBMIT row"
NO_REQUEST = "task whose SUBMIT rows carry no request (missing info)"
#: Kept rows worth knowing about: meta["flagged"][table][reason].
MISSING_INFO = "job events with a missing-info code (kept)"
CLASS_CHANGES = "jobs whose scheduling class changes (the first is kept)"
RUNNING = "jobs still running at the end of the files (end_time and status null)"
UNKNOWN_JOB = "task SUBMIT rows of jobs absent from the job events (not used)"


@register("trace_format", "google2011-jobs")
class Google2011Jobs(TraceReader):
    """SRC: a folder with ``job_events/part-*.csv.gz`` and optionally ``task_events/``."""

    units = {"time": "s", "cpu": "normalised", "mem": "normalised"}
    time_origin = "trace-relative"
    period_s = None
    attribution = (
        "Google cluster-usage trace clusterdata-2011-2, licensed CC-BY 4.0; cite C. Reiss, "
        "J. Wilkes, J. L. Hellerstein, 'Google cluster-usage traces: format + schema', "
        "Google Inc., 2011."
    )
    notes = (
        "One row per job; id = job_id = Google's job ID; category = scheduling class (0-3, 3 the "
        "most latency-sensitive, of the job's first event).",
        "Times in seconds from the trace start (Google's microseconds minus its 600 s offset). "
        "0 is Google's 0: the event happened before the trace (jobs already running at its "
        "start); null submit/start: no SUBMIT or SCHEDULE in the files read.",
        "status = the job's last lifecycle event if it ends it (evict, fail, finish, kill, lost) "
        "with end_time its time; null while it still runs at the end of the files.",
        "instances, cpu_request, mem_request only for jobs the task events cover (submitted after "
        "t = 0 and ended inside one run of consecutive task_events parts), else null: instances "
        "= distinct task indices among task SUBMIT rows, requests = the mean per task of each "
        "task's mean request over its SUBMIT rows, in Google's normalised units (1.0 = the "
        "largest machine's CPU or memory in the cell); priority = the first task's.",
        "distributions.parquet: 1001-point quantile tables of gap_s, runtime_s, tasks, task_cpu, "
        "task_mem as the paper's notebook derived them; meta 'distributions' gives each one's "
        "definition, count, mean and median, 'filtered' what each left out and why.",
    )

    def files(self, src: Path) -> list[Path]:
        found = find(src, PART.pattern, "job_events/part-NNNNN-of-NNNNN.csv.gz")
        jobs = [p for p in found if p.parent.name == "job_events"]
        if not jobs:
            raise TraceError(src, "no job_events/part-NNNNN-of-NNNNN.csv.gz files here")
        tasks = [p for p in found if p.parent.name == "task_events"]
        return [*jobs, *tasks]

    def read(self, files: list[Path], out: StoreWriter) -> None:
        job_files = [p for p in files if p.parent.name == "job_events"]
        task_files = [p for p in files if p.parent.name == "task_events"]
        events = _job_events(job_files)
        submits, spans = _task_submits(task_files)
        jobs, flagged = _jobs(events)
        tasks, unknown = _tasks(submits, jobs, spans)
        flagged[UNKNOWN_JOB] = unknown
        jobs = jobs.join(tasks, on="job_id", how="left")
        out.write("workloads", _workload_rows(jobs))
        samples, population = _samples(jobs, submits, out)
        tables = {q: quantile_table(samples[q]) for q in QUANTITIES}
        _write_tables(tables, out.root / DISTRIBUTIONS_FILE)
        out.meta["distributions"] = _summaries(samples, tables)
        out.meta["population"] = population
        out.meta["task_spans_s"] = [[_seconds(a), _seconds(b)] for a, b in spans]
        out.meta["flagged"] = {"workloads": flagged}


# ---- reading and checking the event files ---------------------------------------------------


def _job_events(files: list[Path]) -> pl.DataFrame:
    """Every job event row, checked, in file order: time, job_id, event_type,
    scheduling_class, missing_info."""
    order = _TimeOrder()
    layout = CsvLayout(JOB_COLUMNS)
    parts = []
    for number, path in enumerate(files):
        for df in nonempty(csv_batches(path, layout, JOB_TYPES), path, "job event file"):
            require(df, path, ["time", "job_id", "event_type"])
            non_negative(df, path, ["job_id"])
            order.check(df, path)
            _in_range(df, path, "event_type", EVENT_TYPES)
            _in_range(df, path, "scheduling_class", SCHEDULING_CLASSES)
            parts.append(df.with_columns(_file=pl.lit(number, pl.Int32)))
    events = pl.concat(parts)
    _unique_events(events, files)
    return events.drop("_line", "_file")


def _task_submits(files: list[Path]) -> tuple[pl.DataFrame, list[tuple[int, int]]]:
    """Task SUBMIT rows, checked, and the time spans the task parts cover: [first, last]
    microseconds of each run of consecutive part numbers."""
    order = _TimeOrder()
    layout = CsvLayout(TASK_COLUMNS)
    parts: list[pl.DataFrame] = []
    spans: list[tuple[int, int]] = []
    last_part = None
    for path in sorted(files, key=_part):
        first, repeated = None, _RepeatedRows()
        for df in nonempty(csv_batches(path, layout, TASK_TYPES), path, "task event file"):
            require(df, path, ["time", "job_id", "task_index", "event_type", "priority"])
            non_negative(df, path, ["job_id", "task_index"])
            order.check(df, path)
            _in_range(df, path, "event_type", EVENT_TYPES)
            _in_range(df, path, "priority", PRIORITIES)
            _not_nan(df, path, ["cpu_request", "memory_request"])
            _unknown_only_if_marked(df, path)
            within(df, path, dict.fromkeys(["cpu_request", "memory_request"], NORMALISED))
            repeated.check(df, path)
            first = df["time"][0] if first is None else first
            parts.append(
                df.filter(pl.col("event_type") == SUBMIT).select(
                    "time", "job_id", "task_index", "priority", "cpu_request", "memory_request"
                )
            )
        if last_part is not None and _part(path) == last_part + 1:
            spans[-1] = (spans[-1][0], order.last)
        else:
            spans.append((first, order.last))
        last_part = _part(path)
    schema = {c: TASK_TYPES[c] for c in ("time", "job_id", "task_index", "priority")}
    empty = pl.DataFrame(schema={**schema, "cpu_request": pl.Float64, "memory_request": pl.Float64})
    return pl.concat([empty, *parts]), spans


def _part(path: Path) -> int:
    return int(PART.fullmatch(path.name)[1])


class _TimeOrder:
    """Google's event files are in time order, file after file: a step back is a shuffled or
    foreign copy. Also refuses times Google never writes (inside its 600 s offset)."""

    def __init__(self) -> None:
        self.last: int | None = None

    def check(self, df: pl.DataFrame, path: Path) -> None:
        within(df, path, {"time": TIME_BOUND})
        late = pl.col("time") > TRACE_END_US
        if (i := _first_true(df, late)) is not None:
            days = df["time"][i] / US_PER_S / 86_400
            problem = (
                f"time {df['time'][i]} is {days:,.0f} days into a 29-day trace "
                "(times are microseconds from the trace start)"
            )
            raise RowError(path, problem, df["_line"][i])
        early = (pl.col("time") > 0) & (pl.col("time") < OFFSET_US)
        if (i := _first_true(df, early)) is not None:
            problem = (
                f"time {df['time'][i]} is inside Google's 600 s offset, where no event lies "
                "(times are microseconds; 0 means before the trace)"
            )
            raise RowError(path, problem, df["_line"][i])
        back = pl.col("time") < pl.col("time").shift(1, fill_value=self.last)
        if (i := _first_true(df, back)) is not None:
            before = df["time"][i - 1] if i else self.last
            problem = (
                f"time goes backwards: {df['time'][i]} after {before} (files are in time order)"
            )
            raise RowError(path, problem, df["_line"][i])
        self.last = df["time"][-1]


def _first_true(df: pl.DataFrame, mask: pl.Expr) -> int | None:
    return df.select(mask.fill_null(False).arg_true().first()).item()


def _in_range(df: pl.DataFrame, path: Path, column: str, allowed: range) -> None:
    bad = (pl.col(column) < allowed.start) | (pl.col(column) >= allowed.stop)
    if (i := _first_true(df, bad)) is not None:
        problem = f"{column} {df[column][i]} is not one of Google's codes {allowed.start}-{allowed.stop - 1}"
        raise RowError(path, problem, df["_line"][i])


def _not_nan(df: pl.DataFrame, path: Path, columns: list[str]) -> None:
    """An empty request is Google's "missing info"; NaN is no value Google writes."""
    for c in columns:
        if (i := _first_true(df, pl.col(c).is_nan())) is not None:
            raise RowError(
                path, f"{c} is NaN (Google writes an empty field when unknown)", df["_line"][i]
            )


def _unknown_only_if_marked(df: pl.DataFrame, path: Path) -> None:
    """Google leaves a request empty only on rows whose missing-info field says why; an empty
    request without it is a damaged row."""
    for c in ("cpu_request", "memory_request"):
        unmarked = pl.col(c).is_null() & pl.col("missing_info").is_null()
        if (i := _first_true(df, unmarked)) is not None:
            problem = f"{c} is empty but missing_info is not set (Google marks unknown requests)"
            raise RowError(path, problem, df["_line"][i])


def _unique_events(events: pl.DataFrame, files: list[Path]) -> None:
    """A job has one event of a type at a time: a second one is a copied row (the real files
    hold none)."""
    key = pl.struct("job_id", "event_type", "time")
    if (i := _first_true(events, ~key.is_first_distinct())) is not None:
        row = events.row(i, named=True)
        same = (pl.col(c) == row[c] for c in ("job_id", "event_type", "time"))
        first = events.filter(*same).row(0, named=True)
        problem = (
            f"job {row['job_id']} has event type {row['event_type']} at time {row['time']} "
            f"twice (first at {files[first['_file']]}, line {first['_line']})"
        )
        raise RowError(files[row["_file"]], problem, row["_line"])


class _RepeatedRows:
    """A task event equal to the one before it in its file (time, task, machine, type, values)
    is a copied row: the real files hold none. One per file, as batches split a file."""

    def __init__(self) -> None:
        self._last: pl.DataFrame | None = None

    def check(self, df: pl.DataFrame, path: Path) -> None:
        rows = df if self._last is None else pl.concat([self._last, df])
        values = [c for c in df.columns if c != "_line"]
        same = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(1)) for c in values)
        if (i := _first_true(rows, same)) is not None:
            raise RowError(path, f"repeats line {rows['_line'][i - 1]}", rows["_line"][i])
        self._last = df.tail(1)


# ---- jobs, tasks and the distributions -------------------------------------------------------


def _seconds(us: pl.Expr | int) -> pl.Expr | float:
    """Google's microseconds -> seconds from the trace start; 0 (before the trace) stays 0."""
    if isinstance(us, int):
        return 0.0 if us == 0 else (us - OFFSET_US) / US_PER_S
    return pl.when(us == 0).then(0.0).otherwise((us - OFFSET_US) / US_PER_S)


def _jobs(events: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """One row per job, times in microseconds, with what the population test needs."""
    kind, time = pl.col("event_type"), pl.col("time")
    lifecycle = kind <= max(ENDS)
    jobs = (
        events.group_by("job_id")
        .agg(
            submit_us=time.filter(kind == SUBMIT).first(),
            schedule_us=time.filter(kind == SCHEDULE).first(),
            last_kind=kind.filter(lifecycle).last(),
            last_us=time.filter(lifecycle).last(),
            finish_us=time.filter(kind == FINISH).last(),
            n_submit=((kind == SUBMIT) & (time > 0)).sum(),
            n_finish=((kind == FINISH) & (time > 0)).sum(),
            any_submit=(kind == SUBMIT).any(),
            scheduling_class=pl.col("scheduling_class").first(),
            classes=pl.col("scheduling_class").drop_nulls().n_unique(),
        )
        .with_columns(
            end_us=pl.when(pl.col("last_kind").is_in(list(ENDS))).then("last_us"),
            status=pl.col("last_kind").replace_strict(ENDS, default=None, return_dtype=pl.String),
        )
        .sort("submit_us", "job_id", nulls_last=True)
    )
    flagged = {
        MISSING_INFO: int(events["missing_info"].is_not_null().sum()),
        CLASS_CHANGES: int((jobs["classes"] > 1).sum()),
        RUNNING: int(jobs["status"].is_null().sum()),
    }
    return jobs, flagged


def _tasks(
    submits: pl.DataFrame, jobs: pl.DataFrame, spans: list[tuple[int, int]]
) -> tuple[pl.DataFrame, int]:
    """Per job the task events cover: tasks, mean request per task and first priority; and the
    task SUBMIT rows of jobs the job events do not hold."""
    covered = pl.lit(False)
    for start, end in spans:
        inside = (pl.col("submit_us") >= start) & (pl.col("end_us") <= end)
        covered = covered | inside
    covered_jobs = jobs.filter((pl.col("submit_us") > 0) & covered).select("job_id")
    per_task = _per_task(submits)
    per_job = per_task.group_by("job_id").agg(
        instances=pl.len(),
        cpu_request=pl.col("cpu").mean(),
        mem_request=pl.col("mem").mean(),
        priority=pl.col("priority").sort_by("first_us").first(),
    )
    tasks = covered_jobs.join(per_job, on="job_id", how="left").with_columns(covered=pl.lit(True))
    unknown = submits.join(jobs.select("job_id"), on="job_id", how="anti").height
    return tasks, unknown


def _per_task(submits: pl.DataFrame) -> pl.DataFrame:
    """One row per (job, task index), in that order: its first SUBMIT time, mean requests over
    its SUBMIT rows (null if none carries one) and first priority."""
    per_task = submits.group_by("job_id", "task_index").agg(
        first_us=pl.col("time").min(),
        cpu=pl.col("cpu_request").mean(),
        mem=pl.col("memory_request").mean(),
        priority=pl.col("priority").first(),
    )
    # group_by's order varies from run to run; means summed in it would vary in the last bit
    return per_task.sort("job_id", "task_index")


def _workload_rows(jobs: pl.DataFrame) -> pl.DataFrame:
    job = pl.col("job_id").cast(pl.String)
    return jobs.select(
        id=job,
        job_id=job,
        submit_time=_seconds(pl.col("submit_us")),
        start_time=_seconds(pl.col("schedule_us")),
        end_time=_seconds(pl.col("end_us")),
        instances="instances",
        cpu_request="cpu_request",
        mem_request="mem_request",
        priority="priority",
        category=pl.col("scheduling_class").cast(pl.String),
        status="status",
    )


def _samples(
    jobs: pl.DataFrame, submits: pl.DataFrame, out: StoreWriter
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The samples of each quantity, counting in ``out.filtered`` what each leaves out."""
    reasons = {
        NOT_POPULATION["pre"]: pl.col("submit_us") == 0,
        NOT_POPULATION["no_submit"]: ~pl.col("any_submit"),
        NOT_POPULATION["resubmitted"]: pl.col("n_submit") > 1,
        NOT_POPULATION["unfinished"]: pl.col("n_finish") == 0,
    }
    left = jobs
    excluded: dict[str, int] = {}
    for reason, mask in reasons.items():
        excluded[reason] = int(left.select(mask.fill_null(False).sum()).item())
        left = left.filter(~mask.fill_null(False))
    # what is left holds one in-trace SUBMIT; the notebook's test also wants one FINISH
    excluded[NOT_POPULATION["refinished"]] = int((left["n_finish"] != 1).sum())
    population = left.filter(pl.col("n_finish") == 1).sort("submit_us", "job_id")
    for reason, n in excluded.items():
        out.filtered.add(POPULATION, reason, n)

    gaps = np.diff(population["submit_us"].to_numpy()) / US_PER_S
    out.filtered.add("gap_s", FIRST_GAP, min(population.height, 1))

    scheduled = population.filter(pl.col("schedule_us").is_not_null())
    runtimes = (scheduled["finish_us"] - scheduled["schedule_us"]).to_numpy() / US_PER_S
    out.filtered.add("runtime_s", NO_SCHEDULE, population.height - scheduled.height)

    covered = population.filter(pl.col("covered").fill_null(False))
    with_tasks = covered.filter(pl.col("instances").is_not_null())
    for quantity in ("tasks", "task_cpu", "task_mem"):
        out.filtered.add(quantity, NOT_COVERED, population.height - covered.height)
        out.filtered.add(quantity, NO_TASKS, covered.height - with_tasks.height)
    tasks = _per_task(submits.join(with_tasks.select("job_id"), on="job_id", how="semi"))
    cpu, mem = tasks["cpu"].drop_nulls().to_numpy(), tasks["mem"].drop_nulls().to_numpy()
    out.filtered.add("task_cpu", NO_REQUEST, tasks.height - cpu.size)
    out.filtered.add("task_mem", NO_REQUEST, tasks.height - mem.size)

    samples = {
        "gap_s": gaps,
        "runtime_s": runtimes,
        "tasks": with_tasks["instances"].to_numpy().astype(np.float64),
        "task_cpu": cpu,
        "task_mem": mem,
    }
    service = (pl.col("priority") >= 9) & pl.col("scheduling_class").is_in([2, 3])
    summary = {
        "jobs": jobs.height,
        "finished_population": population.height,
        "covered_by_task_events": covered.height,
        # the notebook's two filters that need task events, on the jobs they cover
        "covered_without_tasks": covered.height - with_tasks.height,
        "covered_service": int(with_tasks.select(service.sum()).item()),
    }
    return samples, summary


def quantile_table(values: np.ndarray) -> np.ndarray:
    """(1001,) float64: entry i is the sorted sample at index floor((n - 1) i / 1000), as the
    paper's simulator builds its tables (integer arithmetic: no rounding at exact multiples).
    All NaN for an empty sample."""
    if values.size == 0:
        return np.full(QUANTILE_POINTS, np.nan)
    steps = QUANTILE_POINTS - 1
    index = (values.size - 1) * np.arange(QUANTILE_POINTS, dtype=np.int64) // steps
    return np.sort(values)[index]


def _write_tables(tables: dict[str, np.ndarray], path: Path) -> None:
    grid = np.arange(QUANTILE_POINTS) / (QUANTILE_POINTS - 1)
    df = pl.DataFrame({"q": grid, **tables}).fill_nan(None)
    df.write_parquet(path, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL)


def _summaries(
    samples: dict[str, np.ndarray], tables: dict[str, np.ndarray]
) -> dict[str, dict[str, object]]:
    """Count, mean, median, min and max of each sample, and ``table_mean``: the mean of what
    the table draws (linear between entries), which the last 0.1 % can pull far above the
    sample's mean when the tail is long."""
    definitions = {
        "gap_s": "gap between consecutive SUBMIT times of the finished population",
        "runtime_s": "FINISH minus SCHEDULE of the finished population",
        "tasks": "distinct task indices among task SUBMIT rows, covered population jobs",
        "task_cpu": "mean CPU request over a task's SUBMIT rows, tasks of covered population jobs",
        "task_mem": "mean memory request over a task's SUBMIT rows, tasks of covered population jobs",
    }
    out = {}
    for q, unit in QUANTITIES.items():
        v, t = samples[q], tables[q]
        stats = dict.fromkeys(("mean", "median", "min", "max", "table_mean"))
        if v.size:
            stats = {
                "mean": float(v.mean()),
                "median": float(np.median(v)),
                "min": float(v.min()),
                "max": float(v.max()),
                "table_mean": float(((t[1:] + t[:-1]) / 2).mean()),
            }
        out[q] = {"unit": unit, "definition": definitions[q], "count": int(v.size), **stats}
    return out
