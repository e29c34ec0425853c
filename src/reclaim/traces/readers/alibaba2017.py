"""Alibaba cluster-trace-v2017, batch_task table: one workload per task (``j<job>/t<task>``).

A task is ``instance_num`` identical instances with a per-instance CPU and memory plan. The
official file has no header; extracts add one with their own names (and stray spaces), so the
header is detected and mapped to the official names. There is no usage table in this reader.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import UniqueIds, physical, require, within
from reclaim.traces.writer import StoreWriter

LAYOUT = CsvLayout(
    columns=(
        "create_timestamp",
        "modify_timestamp",
        "job_id",
        "task_id",
        "instance_num",
        "status",
        "plan_cpu",
        "plan_mem",
    ),
    aliases={
        "task_create_time": "create_timestamp",
        "task_end_time": "modify_timestamp",
        "number_of_instances": "instance_num",
        "number_of_cpus_requested_per_instance_in_the_task": "plan_cpu",
        "normalized_memory_requested_per_instance_in_the_task": "plan_mem",
    },
)
TYPES = {
    "create_timestamp": pl.Float64(),
    "modify_timestamp": pl.Float64(),
    "job_id": pl.String(),
    "task_id": pl.String(),
    "instance_num": pl.Int64(),
    "status": pl.String(),
    "plan_cpu": pl.Float64(),  # hundredths of a core
    "plan_mem": pl.Float64(),  # fraction of the largest machine's memory
}
#: Physical bounds in the table's units (schema.PHYSICAL_MAX); times may be negative (tasks
#: created before the window).
TIME_BOUNDS = dict.fromkeys(("create_timestamp", "modify_timestamp"), physical("s"))
BOUNDS = {
    "instance_num": physical("instances"),
    "plan_cpu": physical("cores", 100),  # hundredths of a core
    "plan_mem": physical("normalised"),
}
#: States after which modify_timestamp is the end of the task.
TERMINAL = ("Terminated", "Failed", "Cancelled")

NO_PLAN = "no resource plan (empty plan_cpu or plan_mem, e.g. waiting tasks)"
ENDS_BEFORE_CREATED = "terminal state reached before creation (modify < create)"


def _missing(column: str) -> pl.Expr:
    return pl.col(column).is_null() | pl.col(column).is_nan()


@register("trace_format", "alibaba2017")
class Alibaba2017(TraceReader):
    """SRC: ``batch_task.csv[.gz]`` or a folder holding it."""

    units = {"time": "s", "cpu": "cores", "mem": "fraction of largest machine"}
    time_origin = "trace-relative"
    period_s = None
    attribution = (
        "Alibaba cluster-trace-v2017 (github.com/alibaba/clusterdata), batch_task table; Alibaba "
        "allows use for research or study purposes: cite the trace and tell Alibaba about "
        "publications that use it."
    )
    notes = (
        "end_time is the official modify_timestamp (a task's latest state change; extracts call "
        "it task_end_time): it is the end only for tasks in a terminal state "
        f"({', '.join(TERMINAL)}) and is null for the others.",
        "submit_time = create_timestamp; the table has no start time, so start_time is null and "
        "end_time - submit_time includes time spent waiting.",
        "Times are seconds from the trace start; negative times are tasks created before the "
        "window and are kept.",
        "cpu_request = plan_cpu / 100 cores per instance; mem_request = plan_mem per instance, "
        "normalised to the largest machine's memory (0-1), not converted.",
    )

    def files(self, src: Path) -> list[Path]:
        return find(src, r"batch_task.*\.csv(\.gz)?", "batch_task.csv or batch_task.csv.gz")

    def read(self, files: list[Path], out: StoreWriter) -> None:
        ids = UniqueIds()
        required = [c for c in TYPES if c not in ("plan_cpu", "plan_mem")]
        for path in files:
            for batch in csv_batches(path, LAYOUT, TYPES):
                require(batch, path, required)
                within(batch, path, TIME_BOUNDS, lower=-physical("s")[0])
                within(batch, path, BOUNDS)
                df = batch.with_columns(id=pl.format("j{}/t{}", "job_id", "task_id"))
                ids.check(df, path)
                df = out.filtered.drop(
                    df, _missing("plan_cpu") | _missing("plan_mem"), "workloads", NO_PLAN
                )
                terminal = pl.col("status").is_in(TERMINAL)
                early = terminal & (pl.col("modify_timestamp") < pl.col("create_timestamp"))
                df = out.filtered.drop(df, early, "workloads", ENDS_BEFORE_CREATED)
                out.write(
                    "workloads",
                    df.select(
                        "id",
                        "job_id",
                        "status",
                        submit_time="create_timestamp",
                        end_time=pl.when(terminal).then("modify_timestamp"),
                        instances="instance_num",
                        cpu_request=pl.col("plan_cpu") / 100,
                        mem_request="plan_mem",
                    ),
                )
