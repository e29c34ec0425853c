"""The pool of time-varying workloads: a store's continuous usage records, quantised into units.

TVW-RL maps each workload's CPU and memory usage onto a machine of C integer units per resource
(its state is an image of units), the workloads ranging over 1-6 units. Here:

- A record is one workload's (a Bitbrains VM's, a Google task's or job's) samples in time order,
  cut where two samples are more than ``max_gap_s`` apart. The workloads of one job (``job_id``)
  join into one record where they follow one another (a Google 2011 derived job is one series per
  day); where they overlap in time they are concurrent instances (the tasks of a Google 2019
  collection) and each stays a record of its own (counted: ``apart``). Shorter gaps (a missing
  sample or two) are bridged: the samples on either side become adjacent steps (counted). A
  sample less than half a period after the one before it (Google 2019 ends a window early when a
  task restarts) is merged into that step, the step's value the mean of the two weighted by how
  long each held (counted: ``merged``).
- Units: a sample is ``ceil(max_units x value / scale)`` units, at least 1 (a running workload
  holds a unit) and at most ``max_units`` (samples above the scale are clipped and counted). The
  scale (``SCALES``) is

  * ``limit``: the workload's own limit (its ``cpu_request`` / ``mem_request``): Bitbrains' VM
    provisioned cores and GiB, a Google 2019 task's CPU and memory limits, so usage / limit is a
    real ratio and a workload at its limit holds ``max_units``. Every pooled workload needs a
    positive limit of each resource; a missing, NaN, zero or negative one is an error naming it.
  * ``peak``: per store and resource, the ``scale_quantile`` quantile of the records' peaks, so
    the workloads' sizes stay relative to one another whatever the store's unit.
  * ``auto`` (the default): ``limit`` where the store gives every pooled workload its limits,
    ``peak`` where it gives none (Google 2011 derived); some but not all is an error.

  docs/rl.md ("Quantisation and sources") gives the measurements behind the default.
- A record is CPU-intensive when its mean CPU exceeds its mean memory, both in one unit: Google's
  normalised units already are one (a fraction of the largest machine's CPU or memory), so they
  are compared as they are; other stores' resources (cores and GiB, percent) only become
  comparable through the scale, so their scaled means are compared.

Nothing is dropped silently: repeated timestamps within a record are dropped and counted; a null,
NaN or negative usage value is an error naming the file, series and time, and so is a null, NaN,
infinite or negative sample time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import RESOURCES
from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.schema import META_FILE, USAGE_FILE, WORKLOADS_FILE
from reclaim.traces.store import Store, load_store

#: How usage becomes units (module docstring).
SCALES = ("auto", "limit", "peak")
#: The scale of policies trained before their settings recorded one.
LEGACY_SCALE = "peak"
#: Units in which a store's CPU and memory are one unit (a share of the same machine).
MACHINE_UNITS = frozenset({"normalised"})
LIMITS = tuple(f"{r}_request" for r in RESOURCES)


@dataclass(frozen=True)
class PoolReport:
    """What building a pool kept and changed.

    records: continuous records kept; samples: their samples (steps); bridged_gaps: gaps of more
    than one period but at most max_gap_s inside records; split_gaps: longer gaps that ended a
    record; repeated: samples dropped for repeating a time of their record; clipped: samples per
    resource above the scale, set to max_units; scale: per resource, the store value worth
    max_units (the ``peak`` rule), None under ``limit`` (each workload's own limit is);
    cpu_intensive: records of that class; rule: ``peak`` or ``limit``, the scale used; merged:
    samples merged into the step before them (less than half a period after it); apart:
    workloads kept as records of their own because their job's workloads overlap in time;
    constant: records whose units never change.
    """

    store: str
    records: int
    samples: int
    bridged_gaps: int
    split_gaps: int
    repeated: int
    clipped: tuple[int, ...]
    scale: tuple[float, ...] | None
    cpu_intensive: int
    rule: str = LEGACY_SCALE
    merged: int = 0
    apart: int = 0
    constant: int = 0


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

    def digest(self) -> str:
        """A fingerprint of what a policy learns from (units, classes of record, period): a
        retraining checks it to know it reads the same data, wherever the store now lies."""
        h = hashlib.sha256()
        for array in (self.units.data, self.units.indptr, self.cpu_intensive):
            h.update(np.ascontiguousarray(array).tobytes())
        h.update(repr(float(self.period_s)).encode())
        return h.hexdigest()[:16]


def constant_records(units: GroupedArray) -> NDArray[np.bool_]:
    """(S,) whether each (non-empty) series of ``units`` holds its first step's units throughout,
    in every resource: nothing in it varies at this quantisation."""
    starts = units.indptr[:-1]
    first = np.repeat(units.data[starts], units.lengths, axis=0)
    same = np.all(units.data == first, axis=1)
    return np.logical_and.reduceat(same, starts)


def load_pool(
    path: str | Path,
    max_units: int = 6,
    scale_quantile: float = 0.9,
    max_gap_s: float = 3600.0,
    scale: str = "auto",
) -> Pool:
    """Every continuous record of the store at ``path`` in units (module docstring)."""
    if scale not in SCALES:
        raise ReclaimError(f"scale must be {', '.join(SCALES)}, not {scale!r}")
    store = load_store(path)
    period = store.meta.get("period_s")
    if not period:
        raise TraceError(store.path / META_FILE, "no sampling period (period_s): not usage series")
    period = float(period)
    frame, apart = _samples(store)
    _check_values(store.path / USAGE_FILE, frame)
    rule = _rule(store, frame, scale)
    same_key = frame["key"] == frame["key"].shift(1)
    step = frame["time"].diff()
    repeated = (same_key & (step == 0)).fill_null(False)
    frame = frame.filter(~repeated)
    frame, merged = _merge_short(frame, period)
    same_key = frame["key"] == frame["key"].shift(1)
    step = frame["time"].diff()
    split = (same_key & (step > max_gap_s)).fill_null(False)
    bridged = (same_key & (step > 1.5 * period) & (step <= max_gap_s)).fill_null(False)
    starts = np.flatnonzero((~same_key.fill_null(False) | split).to_numpy())
    indptr = np.append(starts, frame.height).astype(np.int64)

    values = frame.select(RESOURCES).to_numpy().astype(np.float64)
    if rule == "limit":
        scales = None
        scaled = values / frame.select(LIMITS).to_numpy().astype(np.float64)
    else:
        peaks = np.maximum.reduceat(values, starts, axis=0)  # (S, R)
        scales = np.quantile(peaks, scale_quantile, axis=0)
        if np.any(scales <= 0):
            bad = RESOURCES[int(np.argmax(scales <= 0))]
            raise TraceError(store.path / USAGE_FILE, f"{bad} usage is zero in most records")
        scaled = values / scales
    units = np.clip(np.ceil(max_units * scaled), 1, max_units).astype(np.int16)
    common = values if _machine_units(store) else scaled  # a unit both resources share
    means = np.add.reduceat(common, starts, axis=0) / np.diff(indptr)[:, None]
    cpu_intensive = means[:, RESOURCES.index("cpu")] > means[:, RESOURCES.index("mem")]
    records = GroupedArray(units, indptr)
    report = PoolReport(
        store=str(store.path),
        records=len(starts),
        samples=frame.height,
        bridged_gaps=int(bridged.sum()),
        split_gaps=int(split.sum()),
        repeated=int(repeated.sum()),
        clipped=tuple(int(c) for c in (scaled > 1.0).sum(axis=0)),
        scale=None if scales is None else tuple(float(s) for s in scales),
        cpu_intensive=int(cpu_intensive.sum()),
        rule=rule,
        merged=merged,
        apart=apart,
        constant=int(constant_records(records).sum()),
    )
    return Pool(store.path.name, records, cpu_intensive, period, report)


def _samples(store: Store) -> tuple[pl.DataFrame, int]:
    """Usage samples with their workload's limits and record key, sorted by key and time, and how
    many workloads stay apart from their job: the key is the job where its workloads follow one
    another in time, else the workload."""
    workloads = store.workloads().select("id", "job_id", *LIMITS)
    usage = store.usage().select("id", "time", *RESOURCES)
    spans = (
        usage.group_by("id")
        .agg(first=pl.col("time").min(), last=pl.col("time").max())
        .join(workloads.select("id", "job_id"), on="id", how="left", maintain_order="left")
        .sort("job_id", "first", "id", nulls_last=True)
        .collect()
    )
    overlap = (
        spans["job_id"].is_not_null()
        & (spans["job_id"] == spans["job_id"].shift(1))
        & (spans["first"] < spans["last"].shift(1))  # sharing an end time is following
    ).fill_null(False)
    concurrent = spans.filter(overlap)["job_id"].unique()
    apart = int(spans["job_id"].is_in(concurrent.implode()).sum())
    joined = pl.col("job_id").is_not_null() & ~pl.col("job_id").is_in(concurrent.implode())
    frame = (
        usage.join(workloads, on="id", how="left", maintain_order="left")
        .with_columns(key=pl.when(joined).then(pl.col("job_id")).otherwise(pl.col("id")))
        .sort("key", "time", maintain_order=True)
        .collect()
    )
    if frame.height == 0:
        raise TraceError(store.path / USAGE_FILE, "no usage samples")
    return frame, apart


def _rule(store: Store, frame: pl.DataFrame, scale: str) -> str:
    """``limit`` or ``peak``: ``scale``, or for ``auto`` what the store's limits allow. Under
    ``limit`` every pooled workload must have a positive, finite limit of each resource."""
    if scale == "peak":
        return "peak"
    limits = frame.select("id", *LIMITS).unique("id", keep="first", maintain_order=True)
    if scale == "auto" and limits.select(LIMITS).null_count().sum_horizontal().item() == (
        len(LIMITS) * limits.height
    ):
        return "peak"  # the store gives no limits
    for column in LIMITS:
        value = pl.col(column)
        bad = limits.filter(value.is_null() | value.is_nan() | (value <= 0))
        if len(bad):
            row = bad.row(0, named=True)
            what = "missing" if row[column] is None else row[column]
            raise TraceError(
                store.path / WORKLOADS_FILE,
                f"{column} (the limit) of workload {row['id']!r} is {what} ({len(bad)} of "
                f"{limits.height} workloads); units by limit need every workload's positive "
                f"limit{' (scale auto: the store gives some)' if scale == 'auto' else ''}; "
                "scale peak needs none",
            )
    return "limit"


def _merge_short(frame: pl.DataFrame, period: float) -> tuple[pl.DataFrame, int]:
    """Samples less than half a period after the one before them in their record, merged into
    its step: values weighted by the seconds each held (until the next sample, at most a
    period), limits the larger, the step's time the first. Returns the frame and the count."""
    same_key = frame["key"] == frame["key"].shift(1)
    short = (same_key & (frame["time"].diff() < period / 2)).fill_null(False)
    merged = int(short.sum())
    if not merged:
        return frame, 0
    next_time = pl.col("time").shift(-1).over("key")
    held = (next_time - pl.col("time")).clip(0, period).fill_null(period)
    steps = frame.with_columns(step=(~short).cum_sum(), held=held)
    many = pl.len() > 1  # a lone sample keeps its value exactly
    weighted = [
        pl.when(many)
        .then((pl.col(r) * pl.col("held")).sum() / pl.col("held").sum())
        .otherwise(pl.col(r).first())
        .alias(r)
        for r in RESOURCES
    ]
    out = steps.group_by("step", maintain_order=True).agg(
        *(pl.col(c).first() for c in ("key", "id", "job_id", "time")),
        *weighted,
        *(pl.col(c).max() for c in LIMITS),
    )
    return out.select(frame.columns), merged


def _machine_units(store: Store) -> bool:
    """Whether the store's CPU and memory are in one unit, a share of the same machine."""
    units = store.meta.get("units") or {}
    return all(str(units.get(r, "")).lower() in MACHINE_UNITS for r in RESOURCES)


def _check_values(path: Path, frame: pl.DataFrame) -> None:
    """Raise on the first null, NaN, infinite or negative sample time, and on the first null,
    NaN or negative usage value, naming the series and time."""
    time = pl.col("time").cast(pl.Float64())
    bad = frame.filter(time.is_null() | ~time.is_finite() | (time < 0))
    if len(bad):
        row = bad.row(0, named=True)
        raise TraceError(
            path,
            f"sample time of {row['id']!r} is {row['time']} ({len(bad)} such rows); "
            "usage series need known, non-negative times",
        )
    for r in RESOURCES:
        bad = frame.filter(pl.col(r).is_null() | pl.col(r).is_nan() | (pl.col(r) < 0))
        if len(bad):
            row = bad.row(0, named=True)
            raise TraceError(
                path,
                f"{r} usage of {row['id']!r} at time {row['time']} is {row[r]} "
                f"({len(bad)} such rows); TVW placement needs known CPU and memory usage",
            )
