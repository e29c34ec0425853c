"""Bitbrains GWA-T-12 (Grid Workloads Archive): per-VM CPU and memory every ~300 s.

One file per VM and month (``<month>/<N>.csv.gz``, fields separated by ``;`` and a tab); file
number N is the same VM in every month. A VM becomes one workload ``bitbrains/<N>`` whose usage
joins its monthly files in time order (the ~24 h gap between months is in the source and kept).
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import polars as pl

from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find, natural_key
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import SeriesOrder, physical, require, within
from reclaim.traces.writer import StoreWriter

COLUMNS = (
    "Timestamp [ms]",  # labelled ms, holds Unix epoch seconds
    "CPU cores",
    "CPU capacity provisioned [MHZ]",
    "CPU usage [MHZ]",
    "CPU usage [%]",
    "Memory capacity provisioned [KB]",
    "Memory usage [KB]",
    "Disk read throughput [KB/s]",
    "Disk write throughput [KB/s]",
    "Network received throughput [KB/s]",
    "Network transmitted throughput [KB/s]",
)
TIME, CORES, CPU_CAP, CPU_USED, _, MEM_CAP, MEM_USED = COLUMNS[:7]
LAYOUT = CsvLayout(COLUMNS, header=True, delimiter=";", delete=b"\t")
TYPES = dict.fromkeys((TIME, CORES, CPU_CAP, CPU_USED, MEM_CAP, MEM_USED), pl.Float64())
KIB_PER_GIB = 1 << 20  # the trace's KB are KiB: 8388608 KB is an 8 GiB VM
CPU_CORES = "cpu usage in cores (CPU usage [MHZ] / MHz per core)"
#: Physical bounds in the trace's units (schema.PHYSICAL_MAX): MHz are cores at a clock rate.
CORES_MAX, CORES_MEANING = physical("cores")
MHZ = (CORES_MAX * physical("MHz per core")[0], f"{CORES_MAX:g} cores at 10 GHz: {CORES_MEANING}")
BOUNDS = {
    TIME: physical("s"),
    CORES: (CORES_MAX, CORES_MEANING),
    CPU_CAP: MHZ,
    CPU_USED: MHZ,
    MEM_CAP: physical("GiB", KIB_PER_GIB),
    MEM_USED: physical("GiB", KIB_PER_GIB),
    CPU_CORES: (CORES_MAX, CORES_MEANING),
}

NO_CPU = "VM has no provisioned CPU (CPU cores or MHz capacity is 0)"
NO_ROWS = "monthly files with a header but no sample (files, not rows)"
NO_SAMPLES = "VM without a sample left after filtering"


def _workload_id(path: Path) -> str:
    return "bitbrains/" + path.name.split(".")[0]


@register("trace_format", "bitbrains")
class Bitbrains(TraceReader):
    """SRC: the folder of month folders (or a single ``<N>.csv.gz``)."""

    units = {"time": "s", "cpu": "cores", "mem": "GiB"}
    time_origin = "unix"
    period_s = 300.0
    attribution = (
        "Bitbrains GWA-T-12 trace (sub-trace Rnd), Grid Workloads Archive, TU Delft; research use "
        "with attribution: cite S. Shen, V. van Beek, A. Iosup, 'Statistical Characterization of "
        "Business-Critical Workloads Hosted in Cloud Datacenters', CCGrid 2015."
    )
    notes = (
        "time: the column labelled 'Timestamp [ms]' holds Unix epoch seconds and is kept as such.",
        "cpu = CPU usage [MHZ] / (CPU capacity provisioned [MHZ] / CPU cores), in cores of the "
        "VM's own clock rate; mem = Memory usage [KB] / 2^20, in GiB.",
        "cpu_request and mem_request: the largest provisioned cores and memory seen for the VM "
        "(provisioned memory changes over time for many VMs).",
        "start_time and end_time: the first and last sample kept, not the VM's lifetime.",
        "A VM's monthly files are joined in time order; the ~24 h gap between months is real.",
    )

    def files(self, src: Path) -> list[Path]:
        found = find(src, r"\d+\.csv(\.gz)?", "<N>.csv.gz per VM, in month folders")
        return sorted(found, key=lambda p: (_workload_id(p), natural_key(p.parent)))

    def read(self, files: list[Path], out: StoreWriter) -> None:
        for wid, paths in groupby(files, key=_workload_id):
            self._read_vm(wid, list(paths), out)

    @staticmethod
    def _read_vm(wid: str, paths: list[Path], out: StoreWriter) -> None:
        """One VM's months, in order: validated, converted, then one workload row."""
        order = SeriesOrder(out.filtered)
        parts = []
        for path in paths:
            before = len(parts)
            for batch in csv_batches(path, LAYOUT, TYPES):
                require(batch, path, TYPES)
                # usage above its capacity is real (up to 1.5x), but not beyond any machine
                clock = pl.when((pl.col(CORES) > 0) & (pl.col(CPU_CAP) > 0)).then(
                    pl.col(CPU_CAP) / pl.col(CORES)
                )
                within(
                    batch.with_columns((pl.col(CPU_USED) / clock).alias(CPU_CORES)), path, BOUNDS
                )
                df = batch.select(
                    pl.lit(wid).alias("id"), pl.col(TIME).alias("time"), *TYPES, "_line"
                )
                parts.append(order.check(df, path))
            out.filtered.add("usage", NO_ROWS, int(len(parts) == before))
        samples = pl.concat(parts) if parts else pl.DataFrame()
        if not samples.is_empty():
            samples = out.filtered.drop(
                samples, (pl.col(CORES) <= 0) | (pl.col(CPU_CAP) <= 0), "usage", NO_CPU
            )
        out.filtered.add("workloads", NO_SAMPLES, int(samples.is_empty()))
        if samples.is_empty():
            return
        out.write(
            "usage",
            samples.select(
                "id",
                "time",
                cpu=pl.col(CPU_USED) / (pl.col(CPU_CAP) / pl.col(CORES)),
                mem=pl.col(MEM_USED) / KIB_PER_GIB,
            ),
        )
        out.write(
            "workloads",
            samples.select(
                pl.col("id").first(),
                start_time=pl.col("time").min(),
                end_time=pl.col("time").max(),
                instances=pl.lit(1),
                cpu_request=pl.col(CORES).max(),
                mem_request=pl.col(MEM_CAP).max() / KIB_PER_GIB,
            ),
        )
