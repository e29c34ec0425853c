"""The canonical trace store: what every reader writes and every consumer reads.

A store is a directory:

- ``workloads.parquet``: one row per workload (a VM, a task, a pod, a machine's tenant...).
- ``usage.parquet``: measured usage, one row per (id, time), sorted by id then time.
- ``hosts.parquet`` (optional): machine capacities, where the trace has them.
- ``meta.json``: format, source files, units, sampling period, and the rows filtered by reason;
  lifetime traces add ``window_s``, the observation window [start, end] in seconds.

Tables have required columns (the ``*_SCHEMA`` dicts, present in every store) and optional ones
(the ``OPTIONAL_*`` dicts), written only by readers whose trace has them; a store without them is
still complete.

Units are fixed where the trace allows (cores, GiB, seconds). A trace that only has normalised or
percentage values keeps them and says so in ``meta.json["units"]``; nothing is converted by guesswork.
"""

from __future__ import annotations

import polars as pl

WORKLOADS_FILE = "workloads.parquet"
USAGE_FILE = "usage.parquet"
HOSTS_FILE = "hosts.parquet"
META_FILE = "meta.json"

#: Workload table. Times in seconds (trace-relative or Unix epoch, see meta ``time_origin``);
#: requests per instance. Nullable where the trace does not know.
WORKLOADS_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),  # unique within the store
    "job_id": pl.String(),  # application / job / service the workload belongs to
    "submit_time": pl.Float64(),
    "start_time": pl.Float64(),
    "end_time": pl.Float64(),
    "instances": pl.Int64(),  # identical instances behind this row (Alibaba tasks), else 1
    "cpu_request": pl.Float64(),  # per instance, unit in meta["units"]["cpu"]
    "mem_request": pl.Float64(),  # per instance, unit in meta["units"]["mem"]
    "priority": pl.Int64(),
    "category": pl.String(),  # class / QoS / VM category where known
    "status": pl.String(),  # final state in the trace where known
}
#: Optional workload columns, per instance like the requests.
OPTIONAL_WORKLOADS: dict[str, pl.DataType] = {
    "gpu_request": pl.Float64(),  # GPUs; fractions for GPU-sharing pods
    "disk_request": pl.Float64(),  # GiB
    "mem_assigned": pl.Float64(),  # memory the scheduler set aside (Google 2019), largest over life
    # binned lifetimes (Azure 2017): the interval [min, max) s the lifetime lies in; for a VM
    # still running at the window end, the interval of the time it had run by then
    "lifetime_min": pl.Float64(),
    "lifetime_max": pl.Float64(),
}

#: Usage table: one sample per (id, time) at the trace's own period.
USAGE_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "time": pl.Float64(),
    "cpu": pl.Float64(),  # unit in meta["units"]["cpu"]
    "mem": pl.Float64(),  # unit in meta["units"]["mem"]; null for CPU-only traces
}
#: Optional usage columns, in the units of cpu and mem: the window's peak, and the percentiles
#: of 1-second CPU samples within it (Google 2019), for drawing fluctuation below the period.
CPU_PERCENTILES: tuple[int, ...] = (*range(0, 100, 10), *range(91, 100))
OPTIONAL_USAGE: dict[str, pl.DataType] = {
    "cpu_max": pl.Float64(),
    "mem_max": pl.Float64(),
    **{f"cpu_p{q}": pl.Float64() for q in CPU_PERCENTILES},
}

#: Host table (optional).
HOSTS_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "time": pl.Float64(),
    "cpu": pl.Float64(),
    "mem": pl.Float64(),
    "status": pl.String(),
}
#: Optional host columns.
OPTIONAL_HOSTS: dict[str, pl.DataType] = {
    "gpu": pl.Float64(),  # GPU count
    "model": pl.String(),  # GPU model; null for CPU-only machines
}
