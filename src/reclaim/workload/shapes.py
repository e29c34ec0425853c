"""Usage shapes: real usage series read as a fraction of their request.

A shape is one series of a canonical store (a Bitbrains VM, a Google 2011 job-day, ...), one row per
``period`` seconds, columns (cpu, mem). The simulator multiplies it by a component's request, so a
shape says *how* a workload uses what it reserved, and the trace it comes from need not be the trace
the requests come from (the paper mixes traces the same way).

How a store's values become fractions depends only on its ``meta.json`` units:

- ``percent``: the value divided by 100. The Google 2011 series derived by HiPro-IT are percentages
  whose scaling the authors do not document; we read them as a fraction of the job's request.
- any other unit: the value divided by the workload's request of the same resource (the two share
  the unit by the store contract). Bitbrains: usage cores / provisioned cores, usage GiB /
  provisioned GiB. Series whose request is missing or not positive cannot be scaled and are
  skipped and counted.

Rules, none of them silent:

- Fractions above 1 (a VM using more than it was provisioned) are clipped to 1 and counted per
  resource; the request is the most a component may hold in the simulator.
- A null, NaN or negative fraction is an error in the store and raises ``TraceError``.
- Samples stay in their real time order, one per row. Gaps in a series (Bitbrains has ~24 h
  between its monthly files) are not filled: the rows on either side are simply adjacent.
- No resampling: a store whose sampling step differs from ``period`` is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import RESOURCES
from reclaim.errors import TraceError
from reclaim.traces.schema import META_FILE, USAGE_FILE
from reclaim.traces.store import Store, load_store

PERCENT_UNITS = frozenset({"percent", "%"})
#: Relative tolerance between a store's median sampling step and the requested period; Bitbrains
#: steps jitter by 1-2 s around 300 s.
PERIOD_TOLERANCE = 0.01


@dataclass(frozen=True)
class ShapeSource:
    """What one store contributed to the shapes.

    clipped: samples per resource (cpu, mem) whose fraction was above 1 and set to 1.
    skipped_no_request: series dropped because their request was missing or not positive.
    """

    store: str
    series: int
    samples: int
    clipped: tuple[int, ...]
    skipped_no_request: int

    @property
    def clipped_share(self) -> tuple[float, ...]:
        """Per resource, the share of samples that were clipped."""
        return tuple(c / self.samples if self.samples else 0.0 for c in self.clipped)


def store_unit(store: Store, resource: str) -> str:
    """The unit of ``resource`` declared in the store's ``meta.json``, lower-cased."""
    unit = (store.meta.get("units") or {}).get(resource)
    if not unit:
        raise TraceError(store.path / META_FILE, f"no unit declared for {resource!r}")
    return str(unit).lower()


def load_shapes(stores: Sequence[Path], period: float) -> tuple[GroupedArray, list[ShapeSource]]:
    """Every usage series of ``stores`` as a shape, in store order then id order.

    Returns the shapes, a GroupedArray with data (N, R) float32 fractions in [0, 1], and one
    ShapeSource per store.
    """
    if not stores:
        raise TraceError("shape stores", "at least one store with usage series is needed")
    parts, lengths, sources = [], [], []
    for path in stores:
        data, series_lengths, source = _store_shapes(load_store(path), period)
        parts.append(data)
        lengths.append(series_lengths)
        sources.append(source)
    all_lengths = np.concatenate(lengths)
    if not len(all_lengths):
        raise TraceError(", ".join(map(str, stores)), "no usage series left to make shapes of")
    indptr = np.concatenate([[0], np.cumsum(all_lengths)]).astype(np.int64)
    return GroupedArray(np.concatenate(parts), indptr), sources


def _store_shapes(store: Store, period: float) -> tuple[np.ndarray, np.ndarray, ShapeSource]:
    """(n, R) float32 fractions, (series,) int64 lengths and the store's ShapeSource."""
    units = {r: store_unit(store, r) for r in RESOURCES}
    usage = store.usage().select("id", "time", *RESOURCES)
    by_request = [r for r in RESOURCES if units[r] not in PERCENT_UNITS]
    skipped = 0
    if by_request:
        requests = store.workloads().select("id", *(f"{r}_request" for r in by_request))
        usage = usage.join(requests, on="id", how="left", maintain_order="left")
        positive = pl.all_horizontal(
            (pl.col(f"{r}_request") > 0) & pl.col(f"{r}_request").is_finite() for r in by_request
        ).fill_null(False)
        skipped = usage.filter(~positive).select(pl.col("id").n_unique()).collect().item()
        usage = usage.filter(positive)
    fractions = [
        pl.col(r) / 100.0 if units[r] in PERCENT_UNITS else pl.col(r) / pl.col(f"{r}_request")
        for r in RESOURCES
    ]
    frame = (
        usage.select("id", "time", *(f.alias(r) for f, r in zip(fractions, RESOURCES, strict=True)))
        .sort("id", "time")
        .collect()
    )
    _check_fractions(store, frame)
    if len(frame):
        _check_period(store, frame, period)
    values = frame.select(RESOURCES).to_numpy().astype(np.float32)
    over = values > 1.0
    clipped = tuple(int(n) for n in over.sum(axis=0))
    np.minimum(values, 1.0, out=values)
    lengths = frame.group_by("id", maintain_order=True).len()["len"].to_numpy().astype(np.int64)
    source = ShapeSource(str(store.path), len(lengths), len(values), clipped, int(skipped))
    return values, lengths, source


def _check_fractions(store: Store, frame: pl.DataFrame) -> None:
    """Raise on the first null, NaN or negative fraction, naming the series and time."""
    for r in RESOURCES:
        bad = frame.filter(pl.col(r).is_null() | pl.col(r).is_nan() | (pl.col(r) < 0))
        if len(bad):
            row = bad.row(0, named=True)
            raise TraceError(
                store.path / USAGE_FILE,
                f"{r} usage of {row['id']!r} at time {row['time']} gives fraction {row[r]} "
                f"({len(bad)} such rows); shapes need known, non-negative usage",
            )


def _check_period(store: Store, frame: pl.DataFrame, period: float) -> None:
    """Refuse a store whose median step within series is not ``period`` seconds."""
    steps = frame.select(
        pl.col("time").diff().filter(pl.col("id") == pl.col("id").shift(1)).alias("step")
    )["step"]
    steps = steps.filter(steps > 0)
    if not len(steps):
        raise TraceError(
            store.path / USAGE_FILE, "no series has two samples; cannot tell its period"
        )
    step = float(steps.median())
    if abs(step - period) > PERIOD_TOLERANCE * period:
        raise TraceError(
            store.path / USAGE_FILE,
            f"samples are {step:g} s apart but shapes need {period:g} s; "
            "resample the store or ask for that period",
        )
