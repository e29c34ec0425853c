"""Tiny canonical stores written from literal trace rows, for tests whose answers are hand-checked."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from reclaim.traces.schema import (
    META_FILE,
    USAGE_FILE,
    USAGE_SCHEMA,
    WORKLOADS_FILE,
    WORKLOADS_SCHEMA,
)
from reclaim.traces.store import STORE_VERSION

ALIBABA_UNITS = {"cpu": "cores", "mem": "fraction of largest machine", "time": "s"}
BITBRAINS_UNITS = {"cpu": "cores", "mem": "GiB", "time": "s"}
GOOGLE_UNITS = {"cpu": "percent", "mem": "percent", "time": "s"}


def write_store(path: Path, units: dict, workloads: list[dict], usage=()) -> Path:
    """A store at ``path``; ``usage`` rows are (id, time, cpu, mem) in the store's units."""
    path.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(workloads, schema=WORKLOADS_SCHEMA).write_parquet(path / WORKLOADS_FILE)
    usage_frame = pl.DataFrame(list(usage), schema=USAGE_SCHEMA, orient="row")
    usage_frame.sort("id", "time").write_parquet(path / USAGE_FILE)
    meta = {"store_version": STORE_VERSION, "format": path.name, "units": units}
    (path / META_FILE).write_text(json.dumps(meta))
    return path


def alibaba_tasks(csv_rows: str) -> list[dict]:
    """Workload rows from batch_task.csv lines; plan_cpu is in 1/100 core in the trace."""
    rows = []
    for line in filter(None, map(str.strip, csv_rows.splitlines())):
        create, end, job, task, inst, status, cpu, mem = line.split(",")
        rows.append(
            {
                "id": f"j{job}/t{task}",
                "job_id": job,
                "submit_time": float(create) if create else None,
                "end_time": float(end) if end else None,
                "instances": int(inst),
                "cpu_request": float(cpu) / 100 if cpu else None,
                "mem_request": float(mem) if mem else None,
                "status": status,
            }
        )
    return rows


def bitbrains_vm(vm: str, rows: str) -> tuple[dict, list[tuple]]:
    """The workload row and usage rows (cores, GiB) of one VM from its CSV lines.

    Each line: timestamp, cores, capacity MHz, usage MHz, usage %, memory KB, memory usage KB.
    """
    usage, cores, mem_kb = [], 0.0, 0.0
    for line in rows.strip().splitlines():
        t, cores, cap, mhz, _, mem_kb, used_kb = (float(v) for v in line.split(";")[:7])
        usage.append((vm, t, mhz / cap * cores, used_kb / 2**20))
    workload = {"id": vm, "job_id": vm, "instances": 1, "cpu_request": cores}
    return workload | {"mem_request": mem_kb / 2**20}, usage
