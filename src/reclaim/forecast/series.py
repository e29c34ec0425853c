"""Usage series of a trace store as one :class:`GroupedArray` per resource, ready to forecast."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import ForecastError
from reclaim.traces.store import Store


def store_series(
    store: Store, resource: str, max_series: int | None = None, max_length: int | None = None
) -> tuple[NDArray[np.str_], GroupedArray]:
    """The ``resource`` ("cpu" or "mem") series of ``store``, one per workload id, time-ordered.

    Samples where the resource is missing (CPU-only traces have no memory) are left out of that
    series; ``max_series`` keeps the first ids in store order, ``max_length`` the first samples of
    each series. Returns (ids (S,), series).
    """
    if resource not in ("cpu", "mem"):
        raise ForecastError(f"resource must be cpu or mem, got {resource!r}")
    frame = store.usage().select("id", "time", resource).drop_nulls(resource)
    if max_series is not None:
        ids = frame.select(pl.col("id").unique(maintain_order=True)).head(max_series)
        frame = frame.join(ids, on="id", how="semi", maintain_order="left")
    if max_length is not None:
        frame = frame.filter(pl.int_range(pl.len()).over("id") < max_length)
    frame = frame.collect()
    if frame.height == 0:
        raise ForecastError(f"{store.path}: no {resource} samples to forecast")
    ids, starts = np.unique(frame["id"].to_numpy(), return_index=True)
    order = np.argsort(starts)
    ids, starts = ids[order], starts[order]
    indptr = np.append(starts, frame.height).astype(np.int64)
    return ids, GroupedArray(frame[resource].to_numpy().astype(np.float64), indptr)
