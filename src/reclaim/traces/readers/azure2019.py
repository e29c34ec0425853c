"""Azure Public Dataset V2 (2019): vmtable -> workloads, vm_cpu_readings -> usage (CPU only).

Sizes are buckets, not exact sizes: a VM's request is its vCPU-count bucket and memory bucket,
and its CPU readings (percent of its vCPUs) become cores through the vCPU bucket. The readings
are not sorted (the official files are split by time, extracts by batch); the store writer sorts
them by (VM, time), so order is not checked here. The official files have no header.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find, natural_key
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import UniqueIds, cast_columns, nonempty, physical, require, within
from reclaim.traces.writer import StoreWriter

VMTABLE_LAYOUT = CsvLayout(
    columns=(
        "vm_id",
        "subscription_id",
        "deployment_id",
        "timestamp_vm_created",
        "timestamp_vm_deleted",
        "max_cpu",
        "avg_cpu",
        "p95_max_cpu",
        "vm_category",
        "vm_virtual_core_count_bucket",
        "vm_memory_gb_bucket",
    ),
    aliases={  # the spellings of the dataset's schema page
        "vmid": "vm_id",
        "deploymentid": "deployment_id",
        "vmcreated": "timestamp_vm_created",
        "vmdeleted": "timestamp_vm_deleted",
        "vmcategory": "vm_category",
        "vmcorecountbucket": "vm_virtual_core_count_bucket",
        "vmmemorybucket": "vm_memory_gb_bucket",
    },
)
CORES, MEMORY = "vm_virtual_core_count_bucket", "vm_memory_gb_bucket"
VMTABLE_TYPES = {
    "vm_id": pl.String(),
    "deployment_id": pl.String(),
    "timestamp_vm_created": pl.Float64(),
    "timestamp_vm_deleted": pl.Float64(),
    "vm_category": pl.String(),
    CORES: pl.String(),  # text: the top bucket may be written ">24"
    MEMORY: pl.String(),
}
READINGS_LAYOUT = CsvLayout(
    columns=("timestamp", "vm_id", "min_cpu", "max_cpu", "avg_cpu"),
    aliases={"vmid": "vm_id", "avgcpu": "avg_cpu", "mincpu": "min_cpu", "maxcpu": "max_cpu"},
)
READINGS_TYPES = {"timestamp": pl.Float64(), "vm_id": pl.String(), "avg_cpu": pl.Float64()}
#: Physical bounds in the tables' units (schema.PHYSICAL_MAX); avg_cpu is percent of the VM.
VMTABLE_BOUNDS = {
    "timestamp_vm_created": physical("s"),
    "timestamp_vm_deleted": physical("s"),
    CORES: physical("cores"),
    MEMORY: physical("GiB"),
}
READINGS_BOUNDS = {"timestamp": physical("s"), "avg_cpu": physical("percent")}
VMTABLE_FILE = r"vmtable.*\.csv(\.gz)?"
READINGS_FILE = r"vm_cpu_readings.*\.csv(\.gz)?"

NO_VM = "VM missing from the vmtable files"


@register("trace_format", "azure2019")
class Azure2019(TraceReader):
    """SRC: the folder holding ``vmtable*.csv[.gz]`` and ``vm_cpu_readings*.csv[.gz]``."""

    units = {"time": "s", "cpu": "cores", "mem": "GiB"}
    time_origin = "trace-relative"
    period_s = 300.0
    attribution = (
        "Azure Public Dataset V2 (AzurePublicDatasetV2), Microsoft, licensed CC-BY 4.0; cite "
        "E. Cortez et al., 'Resource Central: Understanding and Predicting Workloads for "
        "Improved Resource Management in Large Cloud Platforms', SOSP 2017."
    )
    notes = (
        "cpu_request is the vCPU-count bucket and mem_request the memory bucket in GiB; the top "
        "buckets (e.g. 24 cores, 64 GiB, or '>24' in the official files) are lower bounds.",
        "cpu = avg_cpu / 100 * the vCPU bucket: cores, exact where the bucket is the VM's size.",
        "mem usage is null: the trace measures CPU only.",
        "job_id is the deployment id; submit_time = start_time = timestamp_vm_created, "
        "end_time = timestamp_vm_deleted (the trace end for VMs still alive then).",
    )

    def files(self, src: Path) -> list[Path]:
        found = find(src, f"{VMTABLE_FILE}|{READINGS_FILE}", "vmtable and vm_cpu_readings CSVs")
        return sorted(found, key=lambda p: (_is_readings(p), natural_key(p)))

    def read(self, files: list[Path], out: StoreWriter) -> None:
        vcpus = self._read_vmtables([p for p in files if not _is_readings(p)], out)
        for path in filter(_is_readings, files):
            batches = csv_batches(path, READINGS_LAYOUT, READINGS_TYPES)
            for batch in nonempty(batches, path, "the vm_cpu_readings file"):
                require(batch, path, READINGS_TYPES)
                within(batch, path, READINGS_BOUNDS)
                df = batch.rename({"vm_id": "id", "timestamp": "time"})
                df = df.join(vcpus, on="id", how="left", maintain_order="left")
                df = out.filtered.drop(df, pl.col("vcpus").is_null(), "usage", NO_VM)
                cpu = pl.col("avg_cpu") / 100 * pl.col("vcpus")
                out.write("usage", df.select("id", "time", cpu=cpu))

    @staticmethod
    def _read_vmtables(paths: list[Path], out: StoreWriter) -> pl.DataFrame:
        """Write one workload per VM; return (id, vcpus) for converting the readings."""
        ids = UniqueIds()
        parts = [pl.DataFrame(schema={"id": pl.String(), "vcpus": pl.Float64()})]
        for path in paths:
            batches = csv_batches(path, VMTABLE_LAYOUT, VMTABLE_TYPES)
            for batch in nonempty(batches, path, "the vmtable file"):
                require(batch, path, VMTABLE_TYPES)
                buckets = batch.with_columns(pl.col(CORES, MEMORY).str.strip_prefix(">"))
                df = cast_columns(buckets, path, dict.fromkeys((CORES, MEMORY), pl.Float64()))
                require(df, path, [CORES, MEMORY])  # "NaN" parses as a number
                within(df, path, VMTABLE_BOUNDS)
                df = df.rename({"vm_id": "id"})
                ids.check(df, path)
                out.write(
                    "workloads",
                    df.select(
                        "id",
                        job_id="deployment_id",
                        submit_time="timestamp_vm_created",
                        start_time="timestamp_vm_created",
                        end_time="timestamp_vm_deleted",
                        instances=pl.lit(1),
                        cpu_request=CORES,
                        mem_request=MEMORY,
                        category="vm_category",
                    ),
                )
                parts.append(df.select("id", vcpus=CORES))
        return pl.concat(parts)


def _is_readings(path: Path) -> bool:
    return path.name.startswith("vm_cpu_readings")
