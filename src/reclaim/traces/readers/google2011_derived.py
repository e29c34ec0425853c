"""Google clusterdata-2011-2 per-job series derived by HiPro-IT (not the raw Google tables).

Each file ``vm_<jobid>_<day>`` holds 288 lines "cpu% mem%": one job's usage summed over its
tasks every 300 s for one day. A file becomes one workload ``<jobid>_<day>``; a sample's time is
its day offset plus its line's offset. Values stay percent, as published.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import numpy as np
import polars as pl

from reclaim.errors import TraceError
from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader, find
from reclaim.traces.sources import STREAM_ERRORS, CsvLayout, csv_batches
from reclaim.traces.validate import RowError, physical, require, within
from reclaim.traces.writer import StoreWriter

LAYOUT = CsvLayout(columns=("cpu", "mem"), header=False, delimiter=" ")
TYPES = {"cpu": pl.Float64(), "mem": pl.Float64()}
SERIES_FILE = r"vm_(\d+)_(\d+)"
PERIOD_S = 300.0
SAMPLES = 288  # 24 h at 300 s
DAY_S = 86400.0
#: Percent of the largest machine (x 100 of schema.PHYSICAL_MAX "normalised"), summed over a
#: job's tasks: no job uses more than twice the whole cell of 12,583 machines. Largest real:
#: 215 (mem; cpu 89).
CELL_MACHINES = 12_583
BOUNDS = dict.fromkeys(
    TYPES, (physical("normalised", 100)[0] * CELL_MACHINES, "twice the whole 12,583-machine cell")
)
#: Files validated and written together: per-query overhead would dominate 288-row files.
FILES_PER_BATCH = 512


@register("trace_format", "google2011-derived")
class Google2011Derived(TraceReader):
    """SRC: ``GCD_VMs*.tar.gz`` or a folder of extracted ``vm_<jobid>_<day>`` files."""

    units = {"time": "s", "cpu": "percent", "mem": "percent"}
    time_origin = "trace-relative"
    period_s = PERIOD_S
    attribution = (
        "Google cluster-usage trace clusterdata-2011-2 (C. Reiss, J. Wilkes, J. L. Hellerstein), "
        "licensed CC-BY 4.0; per-job series derived by HiPro-IT (github.com/HiPro-IT/"
        "CPU-and-Memory-resource-usage-from-Google-Cluster-Data) for 'Virtual Machine "
        "Consolidation with Multiple Usage Prediction for Energy-Efficient Cloud Data Centers' "
        "(IEEE Transactions on Services Computing): cite both."
    )
    notes = (
        "cpu and mem are the authors' percentages of Google's normalised usage (their scaling "
        "is not documented): not cores or GiB.",
        "Each series sums one job's tasks; the authors kept series between 5 and 90 percent.",
        "time = (day - 1) * 86400 + 300 * (line - 1) s; how the authors' day windows align "
        "with the trace clock is not documented.",
        "No requests, priorities or lifetimes: cpu_request and mem_request are null, "
        "start/end are the first and last sample.",
    )

    def files(self, src: Path) -> list[Path]:
        series = []
        if src.is_dir():
            series = [p for p in src.rglob("vm_*") if re.fullmatch(SERIES_FILE, p.name)]
        if series:
            return sorted(series)  # plain order: ids come out sorted, no re-sort needed
        return find(src, r".*\.(tar\.gz|tgz|tar)", "vm_<jobid>_<day> files or a .tar.gz of them")

    def read(self, files: list[Path], out: StoreWriter) -> None:
        seen: set[str] = set()
        pending: list[pl.DataFrame] = []
        for where, name, stream in _series_files(files):
            pending.append(_load(where, name, stream, seen))
            if len(pending) == FILES_PER_BATCH:
                _write(pending, out)
                pending = []
        if pending:
            _write(pending, out)


def _series_files(files: list[Path]) -> Iterator[tuple[str, str, BinaryIO | None]]:
    """(name for errors, file name, open stream or None) of every series file, archives opened."""
    for path in files:
        if re.fullmatch(SERIES_FILE, path.name):
            yield str(path), path.name, None
            continue
        try:
            with tarfile.open(path, "r|*") as archive:  # streamed, member after member
                for member in archive:
                    if member.isfile():
                        name = PurePosixPath(member.name).name
                        yield f"{path}:{member.name}", name, archive.extractfile(member)
        except STREAM_ERRORS as err:
            raise TraceError(path, f"archive is truncated or corrupt ({err})") from None


def _load(where: str, name: str, stream: BinaryIO | None, seen: set[str]) -> pl.DataFrame:
    """One file's 288 samples with id, job_id, time and ``_file`` (for errors) attached."""
    match = re.fullmatch(SERIES_FILE, name)
    if match is None or int(match.group(2)) < 1:
        raise TraceError(where, "not a series file (expected the name vm_<jobid>_<day>, day >= 1)")
    job, day = match.group(1), int(match.group(2))
    wid = f"{job}_{day}"
    if wid in seen:
        raise TraceError(where, f"series {wid!r} appears a second time")
    seen.add(wid)
    parts = list(csv_batches(where, LAYOUT, TYPES, stream))
    df = pl.concat(parts) if parts else pl.DataFrame(schema={**TYPES, "_line": pl.Int64()})
    n = df.height
    if n != SAMPLES:
        problem = f"{n} lines, the format has {SAMPLES} (24 h every {PERIOD_S:.0f} s)"
        raise RowError(where, problem, min(n, SAMPLES) + 1)
    return df.hstack(  # plain Series, not expressions: this runs once per small file
        [
            pl.Series("id", [wid] * n, dtype=pl.String),
            pl.Series("job_id", [job] * n, dtype=pl.String),
            pl.Series("time", (day - 1) * DAY_S + PERIOD_S * np.arange(n)),
            pl.Series("_file", [where] * n, dtype=pl.String),
        ]
    )


def _write(pending: list[pl.DataFrame], out: StoreWriter) -> None:
    """Validate a group of files at once, then write their samples and one workload each."""
    df = pl.concat(pending)
    require(df, df["_file"][0], TYPES)
    within(df, df["_file"][0], BOUNDS)
    out.write("usage", df)
    workloads = df.group_by("id", maintain_order=True).agg(
        pl.first("job_id"), start_time=pl.min("time"), end_time=pl.max("time")
    )
    out.write("workloads", workloads.with_columns(instances=pl.lit(1)))
