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

#: Physical maxima per canonical quantity, per workload and per host (a workload never exceeds
#: the machine it runs on): {quantity: (maximum, what the maximum is, as error messages say it)}.
#: A value above its bound is corrupt or in another unit, never a measurement, so readers refuse
#: it, converted to their source units (MHz, KiB, MiB, milli-cores, percent...), as they refuse
#: non-finite and negative values. The bounds are generous on purpose: a real trace must never
#: be refused. "Largest real" is the largest value in the shared trace extracts and the shipped
#: sample stores (bitbrains, alibaba 2017/2018, azure 2017/2019, google 2011/2019, alibaba GPU
#: 2023/2025), checked when these bounds were set.
PHYSICAL_MAX: dict[str, tuple[float, str]] = {
    # cpu, cpu_request, hosts.cpu in cores. The largest single-system-image machines ever built
    # (SGI UV 3000, HPE Superdome Flex) hold 4,096 cores. Largest real: 192 (an alibaba-gpu2025
    # request), 128 (an alibaba-gpu2023 host), 96 (alibaba2018 hosts), 32 (a bitbrains VM).
    "cores": (65_536.0, "16x the cores of the largest machine ever built"),
    # A core's clock in MHz, to bound MHz columns (cores x MHz): no CPU runs a core at 10 GHz
    # (the overclocking record is about 9 GHz). Largest real: 2,926 MHz per core (bitbrains).
    "MHz per core": (10_000.0, "10 GHz per core"),
    # mem, mem_request, hosts.mem in GiB: 1 PiB, 16x the 64 TiB of the largest single-system-
    # image machine. Largest real: 1,024 GiB (an alibaba-gpu2023 host), 1,000 GiB (an
    # alibaba-gpu2025 request), 511 GiB (a bitbrains VM), 112 GiB (azure2017).
    "GiB": (float(1 << 20), "1 PiB, 16x the memory of the largest machine ever built"),
    # gpu_request, hosts.gpu in GPUs: the largest GPU servers hold 16 and the largest NVLink
    # domain 72 (GB200 NVL72). Largest real: 8 (alibaba-gpu2023 pods and hosts).
    "GPUs": (1_024.0, "14x the GPUs of the largest NVLink domain"),
    # disk_request in GiB: 16 PiB of local disk for one instance. Largest real: 996 GiB
    # (alibaba-gpu2025).
    "disk GiB": (float(1 << 24), "16 PiB of local disk"),
    # time, submit_time, start_time, end_time, lifetimes in seconds: 1e11 s is the year 5138 as
    # Unix time and 3,170 years from a trace start, yet below Unix time in milliseconds (1.7e12
    # today), a unit mix-up. Largest real: 1.38e9 (bitbrains, Unix time), 1.29e7
    # (alibaba-gpu2023, from the trace start).
    "s": (1e11, "the year 5138 as Unix time, 3,170 years from a trace start"),
    # "normalised" units: a fraction of the largest machine in the cluster (1.0 = all of it); no
    # workload or host holds twice the largest machine. Largest real: 1.0 (alibaba2018 hosts'
    # mem_size, 100 percent), 0.80 (google2019 cpu_max), 0.09 (alibaba2017 plan_mem).
    "normalised": (2.0, "twice the largest machine"),
    # utilisation in percent of the machine's or VM's own capacity: counters stop at 100, a
    # little above with turbo or rounding. Largest real: 98 (alibaba2018 mem_util_percent),
    # 97.2 (azure2019 avg_cpu), 154 (bitbrains CPU usage [MHZ] over its provisioned MHz).
    "percent": (1_000.0, "ten times the whole machine"),
    # instances: identical instances behind one row, more than the machines of any cluster
    # could hold. Largest real: 64,486 (alibaba2017).
    "instances": (1e7, "ten million instances of one task"),
}
