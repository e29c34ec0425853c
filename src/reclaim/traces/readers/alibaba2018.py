"""Alibaba cluster-trace-v2018, machine tables: machine_meta -> hosts, machine_usage -> usage.

Each machine with usage becomes one workload (its id is the machine id), so machine-level
utilisation can serve as usage shapes. The official files have no header. Only CPU and memory
are read; the disk, network and cache columns (with their -1/101 markers) are not needed.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reclaim.errors import TraceError
from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import (
    RowError,
    SeriesOrder,
    nonempty,
    physical,
    require,
    within,
)
from reclaim.traces.writer import StoreWriter

META_LAYOUT = CsvLayout(
    columns=(
        "machine_id",
        "time_stamp",
        "failure_domain_1",
        "failure_domain_2",
        "cpu_num",
        "mem_size",  # normalised, 100 = the largest machine
        "status",
    ),
    header=False,
)
META_TYPES = {
    "machine_id": pl.String(),
    "time_stamp": pl.Float64(),
    "cpu_num": pl.Float64(),
    "mem_size": pl.Float64(),
    "status": pl.String(),
}
USAGE_LAYOUT = CsvLayout(
    columns=(
        "machine_id",
        "time_stamp",
        "cpu_util_percent",
        "mem_util_percent",
        "mem_gps",
        "mkpi",
        "net_in",
        "net_out",
        "disk_io_percent",
    ),
    header=False,
)
USAGE_TYPES = {
    "machine_id": pl.String(),
    "time_stamp": pl.Float64(),
    "cpu_util_percent": pl.Float64(),
    "mem_util_percent": pl.Float64(),
}
#: Physical bounds in the tables' units (schema.PHYSICAL_MAX): mem_size is normalised in
#: percent (100 = the largest machine), utilisation in percent of the machine.
USAGE_BOUNDS = {
    "time_stamp": physical("s"),
    "cpu_util_percent": physical("percent"),
    "mem_util_percent": physical("percent"),
}
META_BOUNDS = {
    "time_stamp": physical("s"),
    "cpu_num": physical("cores"),
    "mem_size": physical("normalised", 100),
}
META_FILE = r"machine_meta.*\.csv(\.gz)?"
USAGE_FILE = r"machine_usage.*\.csv(\.gz)?"

NO_META = "machine missing from machine_meta"


@register("trace_format", "alibaba2018")
class Alibaba2018(TraceReader):
    """SRC: the folder holding ``machine_meta*.csv[.gz]`` and ``machine_usage*.csv[.gz]``."""

    units = {"time": "s", "cpu": "cores", "mem": "percent of largest machine"}
    time_origin = "trace-relative"
    period_s = 10.0
    attribution = (
        "Alibaba cluster-trace-v2018 (github.com/alibaba/clusterdata), machine_meta and "
        "machine_usage tables; Alibaba allows use for research or study purposes: cite the "
        "trace and tell Alibaba about publications that use it."
    )
    notes = (
        "Usage: cpu = cpu_util_percent / 100 * cpu_num cores; mem = mem_util_percent / 100 * "
        "mem_size, where mem_size is normalised so that 100 is the largest machine's memory.",
        "Sampling is nominally every 10 s with irregular gaps; samples are kept as recorded.",
        "Workloads are machines: cpu_request/mem_request are the machine's cpu_num and "
        "mem_size (the largest value in machine_meta), start/end the first and last sample.",
        "hosts: one row per machine_meta event (time_stamp, cpu_num, mem_size, status).",
    )

    def files(self, src: Path) -> list[Path]:
        return find(src, f"{META_FILE}|{USAGE_FILE}", "machine_meta and machine_usage CSV files")

    def read(self, files: list[Path], out: StoreWriter) -> None:
        meta = [p for p in files if p.name.startswith("machine_meta")]
        if not meta:
            raise TraceError(files[0].parent, "no machine_meta file next to machine_usage")
        capacity = self._read_meta(meta, out)
        order = SeriesOrder(out.filtered)
        spans = []
        for path in files:
            if path in meta:
                continue
            batches = csv_batches(path, USAGE_LAYOUT, USAGE_TYPES)
            for batch in nonempty(batches, path, "the machine_usage file"):
                require(batch, path, USAGE_TYPES)
                within(batch, path, USAGE_BOUNDS)
                df = batch.rename({"machine_id": "id", "time_stamp": "time"})
                df = order.check(df, path).join(
                    capacity, on="id", how="left", maintain_order="left"
                )
                df = out.filtered.drop(df, pl.col("cpu_request").is_null(), "usage", NO_META)
                out.write(
                    "usage",
                    df.select(
                        "id",
                        "time",
                        cpu=pl.col("cpu_util_percent") / 100 * pl.col("cpu_request"),
                        mem=pl.col("mem_util_percent") / 100 * pl.col("mem_request"),
                    ),
                )
                spans.append(
                    df.group_by("id").agg(start_time=pl.min("time"), end_time=pl.max("time"))
                )
        if spans:
            workloads = (
                pl.concat(spans)
                .group_by("id")
                .agg(pl.min("start_time"), pl.max("end_time"))
                .join(capacity, on="id", maintain_order="left")
                .sort("id")
            )
            out.write("workloads", workloads.with_columns(instances=pl.lit(1)))

    @staticmethod
    def _read_meta(paths: list[Path], out: StoreWriter) -> pl.DataFrame:
        """Write the hosts table; return each machine's capacity (id, cpu_request, mem_request).

        machine_meta is one row per machine event, small enough to hold in memory."""
        parts = []
        for path in paths:
            for batch in csv_batches(path, META_LAYOUT, META_TYPES):
                require(batch, path, META_TYPES)
                within(batch, path, META_BOUNDS)
                parts.append(batch.with_columns(_file=pl.lit(str(path))))
        if not parts:
            raise TraceError(paths[0], "machine_meta has no rows")
        events = pl.concat(parts)
        _one_event_per_time(events)
        hosts = events.select(
            id="machine_id", time="time_stamp", cpu="cpu_num", mem="mem_size", status="status"
        )
        out.write("hosts", hosts.sort("id", "time", maintain_order=True))
        return hosts.group_by("id").agg(cpu_request=pl.max("cpu"), mem_request=pl.max("mem"))


def _one_event_per_time(events: pl.DataFrame) -> None:
    """A machine has one machine_meta event per time_stamp (the official file repeats none): a
    second is a copy error, and would make two hosts rows for one machine at one time."""
    again = ~pl.struct("machine_id", "time_stamp").is_first_distinct()
    i = events.select(again.arg_true().first()).item()
    if i is not None:
        row = events.row(i, named=True)
        problem = (
            f"second event of machine {row['machine_id']!r} at time_stamp {row['time_stamp']:.10g}"
        )
        raise RowError(row["_file"], problem, row["_line"])
