"""Alibaba cluster-trace-gpu-v2023 ("openb"): pod list -> workloads, node list -> hosts.

A lifetime table: one row per pod with its requests, QoS, final phase and creation, scheduled
and deletion times (seconds from the trace start). The pod list is read whole (a few thousand
rows) because right-censoring needs the file's last deletion time: pods still ``Running`` at that
time were alive when the trace ended. Both files have a header.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from reclaim.errors import TraceError
from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find
from reclaim.traces.sources import CsvLayout, csv_batches
from reclaim.traces.validate import RowError, UniqueIds, nonempty, physical, require, within
from reclaim.traces.writer import StoreWriter

POD_LAYOUT = CsvLayout(
    columns=(
        "name",
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "gpu_spec",
        "qos",
        "pod_phase",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ),
    header=True,
)
POD_TYPES = {
    "name": pl.String(),
    "cpu_milli": pl.Float64(),
    "memory_mib": pl.Float64(),
    "num_gpu": pl.Float64(),
    "gpu_milli": pl.Float64(),  # share of one GPU for GPU-sharing pods, 1000 = whole
    "qos": pl.String(),
    "pod_phase": pl.String(),
    "creation_time": pl.Float64(),
    "deletion_time": pl.Float64(),
    "scheduled_time": pl.Float64(),  # empty for pods never scheduled
}
NODE_LAYOUT = CsvLayout(columns=("sn", "cpu_milli", "memory_mib", "gpu", "model"), header=True)
NODE_TYPES = {
    "sn": pl.String(),
    "cpu_milli": pl.Float64(),
    "memory_mib": pl.Float64(),
    "gpu": pl.Float64(),
    "model": pl.String(),  # empty for CPU-only nodes
}
#: Physical bounds in the lists' units (schema.PHYSICAL_MAX): milli-cores, MiB, GPUs, and
#: thousandths of one GPU for gpu_milli.
MILLI_CORES, MIB = physical("cores", 1000), physical("GiB", 1024)
POD_BOUNDS = {
    "cpu_milli": MILLI_CORES,
    "memory_mib": MIB,
    "num_gpu": physical("GPUs"),
    "gpu_milli": physical("GPUs", 1000),
    **dict.fromkeys(("creation_time", "deletion_time", "scheduled_time"), physical("s")),
}
NODE_BOUNDS = {"cpu_milli": MILLI_CORES, "memory_mib": MIB, "gpu": physical("GPUs")}
POD_FILE = r"openb_pod_list.*\.csv(\.gz)?"
NODE_FILE = r"openb_node_list.*\.csv(\.gz)?"

NEVER_SCHEDULED = "never scheduled (no scheduled_time: Pending pods deleted before placement)"


def no_nan(df: pl.DataFrame, path: str | Path, columns: Iterable[str]) -> None:
    """Columns where empty means unknown (censored, never scheduled) must not hold NaN:
    RowError at the first NaN."""
    for c in columns:
        i = df.select(pl.col(c).is_nan().fill_null(False).arg_true().first()).item()
        if i is not None:
            raise RowError(path, f"{c} is NaN (leave it empty where unknown)", df["_line"][i])


def ends_before(df: pl.DataFrame, path: str | Path, pairs: Iterable[tuple[str, str]]) -> None:
    """Each (earlier, later) pair of time columns must be in order where both are present:
    RowError at the first line where ``later`` < ``earlier``."""
    hits = []
    for earlier, later in pairs:
        i = df.select((pl.col(later) < pl.col(earlier)).fill_null(False).arg_true().first()).item()
        if i is not None:
            hits.append((i, earlier, later))
    if hits:
        i, earlier, later = min(hits)
        problem = f"{later} {df[later][i]:.10g} is before {earlier} {df[earlier][i]:.10g}"
        raise RowError(path, problem, df["_line"][i])


@register("trace_format", "alibaba-gpu2023")
class AlibabaGpu2023(TraceReader):
    """SRC: a folder holding one ``openb_pod_list*.csv[.gz]`` and at most one
    ``openb_node_list*.csv[.gz]`` beside it, or the pod list itself (with the node list beside
    it, if there is one). The source's re-sampled pod lists share pod names: one per store."""

    units = {"time": "s", "cpu": "cores", "mem": "GiB", "gpu": "GPUs"}
    time_origin = "trace-relative"
    period_s = None
    attribution = (
        "Alibaba cluster-trace-gpu-v2023 (github.com/alibaba/clusterdata), openb pod and node "
        "lists; Alibaba allows use for research or study purposes: cite Q. Weng et al., 'Beware "
        "of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient "
        "Descent', USENIX ATC 2023, and tell Alibaba about publications that use it."
    )
    notes = (
        "cpu_request = cpu_milli / 1000 cores; mem_request = memory_mib / 1024 GiB; gpu_request "
        "= gpu_milli / 1000 for GPU-sharing pods (num_gpu 1, gpu_milli > 0), else num_gpu.",
        "submit_time = creation_time, start_time = scheduled_time, end_time = deletion_time; "
        "category = qos, status = pod_phase (the final observed phase); job_id is null.",
        "Right-censoring: pods in phase Running whose deletion_time is the file's largest "
        "deletion_time were still alive when the trace ended; their end_time is null.",
        "Pods never scheduled (Pending, deleted before placement) never held a host and are "
        "filtered, counted in meta.json.",
        "window_s = [0, the largest deletion_time]: the observation window.",
        "gpu_spec (allowed GPU models) is not kept.",
        "hosts: one row per node at time 0: cpu cores, mem GiB, gpu count, model (the GPU type, "
        "null for CPU-only nodes; G1-G3 are undisclosed types).",
    )

    def files(self, src: Path) -> list[Path]:
        pods = find(src, POD_FILE, "openb_pod_list*.csv or .csv.gz")
        if len(pods) > 1:
            names = ", ".join(p.name for p in pods)
            raise TraceError(src, f"several pod lists ({names}); import one at a time")
        if src.is_dir():
            nodes = [p for p in pods[0].parent.iterdir() if re.fullmatch(NODE_FILE, p.name)]
        else:
            nodes = [p for p in src.parent.iterdir() if re.fullmatch(NODE_FILE, p.name)]
        if len(nodes) > 1:
            names = ", ".join(sorted(p.name for p in nodes))
            raise TraceError(src, f"several node lists ({names}); keep one beside the pods")
        return nodes + pods

    def read(self, files: list[Path], out: StoreWriter) -> None:
        end = 0.0
        for path in files:
            if path.name.startswith("openb_node_list"):
                self._read_nodes(path, out)
            else:
                end = max(end, self._read_pods(path, out))
        out.meta["window_s"] = [0.0, end]

    @staticmethod
    def _read_pods(path: Path, out: StoreWriter) -> float:
        """Write the pods of one pod list; return its largest deletion_time."""
        batches = []
        for batch in csv_batches(path, POD_LAYOUT, POD_TYPES):
            require(batch, path, [c for c in POD_TYPES if c != "scheduled_time"])
            no_nan(batch, path, ["scheduled_time"])  # empty: never scheduled
            within(batch, path, POD_BOUNDS)
            ends_before(
                batch,
                path,
                [
                    ("creation_time", "deletion_time"),
                    ("creation_time", "scheduled_time"),
                    ("scheduled_time", "deletion_time"),
                ],
            )
            batches.append(batch)
        if not batches:
            raise TraceError(path, "the pod list has no rows")
        pods = pl.concat(batches)
        UniqueIds().check(pods.rename({"name": "id"}), path)
        last = pods["deletion_time"].max()
        pods = out.filtered.drop(
            pods, pl.col("scheduled_time").is_null(), "workloads", NEVER_SCHEDULED
        )
        alive = (pl.col("pod_phase") == "Running") & (pl.col("deletion_time") == last)
        sharing = (pl.col("num_gpu") == 1) & (pl.col("gpu_milli") > 0)
        out.write(
            "workloads",
            pods.select(
                id="name",
                submit_time="creation_time",
                start_time="scheduled_time",
                end_time=pl.when(~alive).then("deletion_time"),
                instances=pl.lit(1),
                cpu_request=pl.col("cpu_milli") / 1000,
                mem_request=pl.col("memory_mib") / 1024,
                category="qos",
                status="pod_phase",
                gpu_request=pl.when(sharing).then(pl.col("gpu_milli") / 1000).otherwise("num_gpu"),
            ),
        )
        return float(last)

    @staticmethod
    def _read_nodes(path: Path, out: StoreWriter) -> None:
        ids = UniqueIds()
        for batch in nonempty(csv_batches(path, NODE_LAYOUT, NODE_TYPES), path, "the node list"):
            require(batch, path, ["sn", "cpu_milli", "memory_mib", "gpu"])
            within(batch, path, NODE_BOUNDS)
            df = batch.rename({"sn": "id"})
            ids.check(df, path)
            out.write(
                "hosts",
                df.select(
                    "id",
                    time=pl.lit(0.0),
                    cpu=pl.col("cpu_milli") / 1000,
                    mem=pl.col("memory_mib") / 1024,
                    gpu="gpu",
                    model="model",
                ),
            )
