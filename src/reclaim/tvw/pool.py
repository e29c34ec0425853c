"""The pool of time-varying workloads: a store's continuous usage records, quantised into units.

TVW-RL maps each workload's CPU and memory usage onto a machine of C integer units per resource
(its state is an image of units), the workloads ranging over 1-6 units. Here:

- A record is one workload's (a Bitbrains VM's, a Google job's) samples in time order, cut where
  two samples are more than ``max_gap_s`` apart. A Google 2011 derived job is one series per day;
  the days of one job (``job_id``) join into one record where they are contiguous. Shorter gaps
  (a missing sample or two) are bridged: the samples on either side become adjacent steps, and the
  bridged gaps are counted.
- Units: per store and resource, the ``scale_quantile`` quantile of the records' peaks maps to
  ``max_units``; a sample is ``ceil(max_units x value / scale)`` units, at least 1 (a running
  workload holds a unit) and at most ``max_units`` (samples above the scale are clipped and
  counted). One scale per store keeps the workloads' sizes relative to one another, whatever the
  store's unit (cores, GiB, percent).
- A record is CPU-intensive when its mean scaled CPU exceeds its mean scaled memory.

Nothing is dropped silently: repeated timestamps within a record are dropped and counted; a null,
NaN or negative usage value is an error naming the file, series and time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.errors import TraceError
from reclaim.state.grouped import GroupedArray
from reclaim.traces.schema import META_FILE, USAGE_FILE
from reclaim.traces.store import load_store
from reclaim.types import RESOURCES


@dataclass(frozen=True)
class PoolReport:
    """What building a pool kept and changed.

    records: continuous records kept; samples: their samples; bridged_gaps: gaps of more than one
    period but at most max_gap_s inside records; split_gaps: longer gaps that ended a record;
    repeated: samples dropped for repeating a time of their record; clipped: samples per resource
    above the scale, set to max_units; scale: per resource, the store value worth max_units.
    """

    store: str
    records: int
    samples: int
    bridged_gaps: int
    split_gaps: int
    repeated: int
    clipped: tuple[int, ...]
    scale: tuple[float, ...]
    cpu_intensive: int


@dataclass(frozen=True)
class Pool:
    """The records of one store. units: GroupedArray of (N, R) int16 usage units per record;
    cpu_intensive: (S,) bool; period_s: seconds per step (the store's sampling period)."""

    name: str
    units: GroupedArray
    cpu_intensive: NDArray[np.bool_]
    period_s: float
    report: PoolReport

    @property
    def lengths(self) -> NDArray[np.int64]:
        return self.units.lengths


def load_pool(
    path: str | Path, max_units: int = 6, scale_quantile: float = 0.9, max_gap_s: float = 3600.0
) -> Pool:
    """Every continuous record of the store at ``path`` in units (module docstring)."""
    store = load_store(path)
    period = store.meta.get("period_s")
    if not period:
        raise TraceError(store.path / META_FILE, "no sampling period (period_s): not usage series")
    period = float(period)
    jobs = store.workloads().select("id", "job_id")
    frame = (
        store.usage()
        .select("id", "time", *RESOURCES)
        .join(jobs, on="id", how="left")
        .with_columns(key=pl.coalesce("job_id", "id"))
        .sort("key", "time")
        .collect()
    )
    if frame.height == 0:
        raise TraceError(store.path / USAGE_FILE, "no usage samples")
    _check_values(store.path / USAGE_FILE, frame)
    same_key = frame["key"] == frame["key"].shift(1)
    step = frame["time"].diff()
    repeated = (same_key & (step == 0)).fill_null(False)
    frame = frame.filter(~repeated)
    same_key = frame["key"] == frame["key"].shift(1)
    step = frame["time"].diff()
    split = (same_key & (step > max_gap_s)).fill_null(False)
    bridged = (same_key & (step > 1.5 * period) & (step <= max_gap_s)).fill_null(False)
    starts = np.flatnonzero((~same_key.fill_null(False) | split).to_numpy())
    indptr = np.append(starts, frame.height).astype(np.int64)

    values = frame.select(RESOURCES).to_numpy().astype(np.float64)
    peaks = np.maximum.reduceat(values, starts, axis=0)  # (S, R)
    scale = np.quantile(peaks, scale_quantile, axis=0)
    if np.any(scale <= 0):
        bad = RESOURCES[int(np.argmax(scale <= 0))]
        raise TraceError(store.path / USAGE_FILE, f"{bad} usage is zero in most records")
    scaled = values / scale
    units = np.clip(np.ceil(max_units * scaled), 1, max_units).astype(np.int16)
    means = np.add.reduceat(scaled, starts, axis=0) / np.diff(indptr)[:, None]
    cpu_intensive = means[:, RESOURCES.index("cpu")] > means[:, RESOURCES.index("mem")]
    report = PoolReport(
        store=str(store.path),
        records=len(starts),
        samples=frame.height,
        bridged_gaps=int(bridged.sum()),
        split_gaps=int(split.sum()),
        repeated=int(repeated.sum()),
        clipped=tuple(int(c) for c in (scaled > 1.0).sum(axis=0)),
        scale=tuple(float(s) for s in scale),
        cpu_intensive=int(cpu_intensive.sum()),
    )
    return Pool(store.path.name, GroupedArray(units, indptr), cpu_intensive, period, report)


def _check_values(path: Path, frame: pl.DataFrame) -> None:
    """Raise on the first null, NaN or negative usage value, naming the series and time."""
    for r in RESOURCES:
        bad = frame.filter(pl.col(r).is_null() | pl.col(r).is_nan() | (pl.col(r) < 0))
        if len(bad):
            row = bad.row(0, named=True)
            raise TraceError(
                path,
                f"{r} usage of {row['id']!r} at time {row['time']} is {row[r]} "
                f"({len(bad)} such rows); TVW placement needs known CPU and memory usage",
            )
