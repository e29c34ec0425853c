"""Alibaba cluster-trace-gpu-v2025 (GPU-disaggregated DLRM serving): instances -> workloads.

A lifetime table with censoring on both sides: an empty creation_time (and scheduled_time) is an
instance that existed before the trace window opened, an empty deletion_time one still alive
when it closed. Values are already in vCPUs, GPUs and GiB. The file has a header.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reclaim.registry import register
from reclaim.traces.readers.alibaba_gpu2023 import ends_before, no_nan
from reclaim.traces.readers.base import TraceReader, find
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import UniqueIds, physical, require, within
from reclaim.traces.writer import StoreWriter

LAYOUT = CsvLayout(
    columns=(
        "instance_sn",
        "role",
        "app_name",
        "cpu_request",
        "cpu_limit",
        "gpu_request",
        "gpu_limit",
        "rdma_request",
        "rdma_limit",
        "memory_request",
        "memory_limit",
        "disk_request",
        "disk_limit",
        "max_instance_per_node",
        "creation_time",
        "scheduled_time",
        "deletion_time",
    ),
    header=True,
)
TYPES = {
    "instance_sn": pl.String(),
    "role": pl.String(),  # CN: CPU-node instance, HN: GPU-node instance
    "app_name": pl.String(),
    "cpu_request": pl.Float64(),
    "gpu_request": pl.Float64(),
    "memory_request": pl.Float64(),
    "disk_request": pl.Float64(),
    "creation_time": pl.Float64(),
    "scheduled_time": pl.Float64(),
    "deletion_time": pl.Float64(),
}
TIMES = ("creation_time", "scheduled_time", "deletion_time")
REQUESTS = ("cpu_request", "gpu_request", "memory_request", "disk_request")
#: Physical bounds (schema.PHYSICAL_MAX): the trace is already in vCPUs, GPUs and GiB.
BOUNDS = {
    "cpu_request": physical("cores"),
    "gpu_request": physical("GPUs"),
    "memory_request": physical("GiB"),
    "disk_request": physical("disk GiB"),
    **dict.fromkeys(TIMES, physical("s")),
}


@register("trace_format", "alibaba-gpu2025")
class AlibabaGpu2025(TraceReader):
    """SRC: ``disaggregated_DLRM_trace*.csv[.gz]`` or a folder holding such files."""

    units = {"time": "s", "cpu": "cores", "mem": "GiB", "gpu": "GPUs", "disk": "GiB"}
    time_origin = "trace-relative"
    period_s = None
    attribution = (
        "Alibaba cluster-trace-gpu-v2025 (github.com/alibaba/clusterdata), disaggregated DLRM "
        "serving trace; Alibaba allows use for research or study purposes: cite L. Yang et al., "
        "'GPU-Disaggregated Serving for Deep Learning Recommendation Models at Scale', USENIX "
        "NSDI 2025, and tell Alibaba about publications that use it."
    )
    notes = (
        "submit_time = creation_time, start_time = scheduled_time, end_time = deletion_time. "
        "Null submit_time/start_time: the instance existed before the window (left-censored); "
        "null end_time: it was alive at the window end (right-censored).",
        "job_id = app_name (the service); category = role (CN: CPU-node instance, HN: GPU-node "
        "instance); status and priority are null (every instance is latency-sensitive serving).",
        "cpu_request vCPUs, mem_request = memory_request GiB, gpu_request GPUs, disk_request "
        "GiB, as in the trace (limits equal requests for cpu and gpu).",
        "Not kept: the limits, rdma_request/rdma_limit (percent of one RDMA NIC) and "
        "max_instance_per_node (-1 = no limit), though they could serve as model features.",
        "window_s = [0, the largest time in the files]: the trace publishes no window, and its "
        "times count from the trace start (2,677,541 s, about 31 days, in the full file).",
    )

    def files(self, src: Path) -> list[Path]:
        return find(
            src, r"disaggregated_DLRM_trace.*\.csv(\.gz)?", "disaggregated_DLRM_trace*.csv[.gz]"
        )

    def read(self, files: list[Path], out: StoreWriter) -> None:
        ids = UniqueIds()
        end = 0.0
        for path in files:
            for batch in csv_batches(path, LAYOUT, TYPES):
                require(batch, path, ["instance_sn", "role", "app_name", *REQUESTS])
                no_nan(batch, path, TIMES)  # empty: censored
                within(batch, path, BOUNDS)
                ends_before(
                    batch,
                    path,
                    [("creation_time", "deletion_time"), ("scheduled_time", "deletion_time")],
                )
                df = batch.rename({"instance_sn": "id"})
                ids.check(df, path)
                latest = df.select(pl.max_horizontal(TIMES).max()).item()
                end = max(end, latest if latest is not None else 0.0)
                out.write(
                    "workloads",
                    df.select(
                        "id",
                        "cpu_request",
                        "gpu_request",
                        "disk_request",
                        job_id="app_name",
                        submit_time="creation_time",
                        start_time="scheduled_time",
                        end_time="deletion_time",
                        instances=pl.lit(1),
                        mem_request="memory_request",
                        category="role",
                    ),
                )
        out.meta["window_s"] = [0.0, end]
