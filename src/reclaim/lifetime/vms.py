"""The VM table: one row per VM of a lifetime trace, columnar, ordered by arrival.

Times are seconds on the trace's clock. A VM that existed before the trace window opened is
*left-censored*: its true start is unknown, ``arrival`` is the window start. A VM still alive
when the window closed is *right-censored*: its lifetime is only known to exceed what was
observed, and ``exit`` is ``inf`` (in a replay it never leaves).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.store import Store, load_store

#: Resource axes of a VM request and a host capacity: cores, GiB, GPUs (fractions allowed).
RESOURCES = ("cpu", "mem", "gpu")


@dataclass(frozen=True)
class VmTable:
    """id, family: (N,) str (family = the host pool a VM belongs to, e.g. CN/HN); arrival, exit:
    (N,) float64 s; left_censored, right_censored: (N,) bool; request: (N, 3) float32 in
    :data:`RESOURCES` units; features: N rows of model inputs; window: (start, end) s."""

    id: NDArray[np.str_]
    family: NDArray[np.str_]
    arrival: NDArray[np.float64]
    exit: NDArray[np.float64]
    left_censored: NDArray[np.bool_]
    right_censored: NDArray[np.bool_]
    request: NDArray[np.float32]
    features: pl.DataFrame
    window: tuple[float, float]

    def __len__(self) -> int:
        return len(self.arrival)

    def subset(self, rows: NDArray[np.bool_] | NDArray[np.integer] | slice) -> VmTable:
        """The VMs selected by a (N,) bool mask, an index array or a slice, in that order;
        features and window follow."""
        idx = np.arange(len(self))[rows]
        if idx.ndim != 1:
            raise TypeError("subset() takes a (N,) mask, an index array or a slice")
        return VmTable(
            id=self.id[idx],
            family=self.family[idx],
            arrival=self.arrival[idx],
            exit=self.exit[idx],
            left_censored=self.left_censored[idx],
            right_censored=self.right_censored[idx],
            request=self.request[idx],
            features=self.features.select(pl.all().gather(idx)),
            window=self.window,
        )

    @property
    def observed(self) -> NDArray[np.float64]:
        """(N,) seconds seen alive inside the window: the lifetime, or a lower bound of it when
        censored."""
        return np.minimum(self.exit, self.window[1]) - self.arrival


class LifetimePredictor(Protocol):
    """Expected remaining lifetime E[T_r | T_u] of VMs of one :class:`VmTable`."""

    def remaining(self, vms: NDArray[np.int64], uptime: NDArray[np.float64]) -> NDArray[np.float64]:
        """(n,) seconds still to live for the table rows ``vms`` (n,) that have been up
        ``uptime`` (n,) seconds."""
        ...


#: How each lifetime format's VMs map to host pools: a column of the workload table, or one
#: pool for the whole trace. A format not listed is one pool named after the format.
FAMILY: dict[str, pl.Expr] = {
    "alibaba-gpu2023": pl.lit("openb"),  # every openb pod competes for the same 1,523 nodes
    "alibaba-gpu2025": pl.col("category"),  # role: CN (CPU nodes) or HN (GPU nodes)
}


def _check_units(store: Store) -> None:
    units = store.units
    if units.get("cpu") != "cores" or units.get("mem") != "GiB":
        raise ReclaimError(
            f"{store.path}: requests are in {units.get('cpu')!r} and {units.get('mem')!r}; "
            "lifetimes and pools need cores and GiB"
        )


def load_vms(store: Store | str | Path, family: str | None = None) -> VmTable:
    """The VM table of the lifetime trace ``store`` (a :class:`Store` or its folder).

    Rows are sorted by (arrival, id). arrival = submit_time, or the window start for VMs that
    existed before the window (left-censored); exit = end_time, or inf for VMs alive at the
    window end (right-censored). request: cores, GiB, GPUs (no GPU column: 0). ``family`` keeps
    the VMs of one pool (see :data:`FAMILY`).

    features (N rows, for a GBDT): category, job_id (String, null allowed); cpu, mem, gpu, disk
    (Float64 requests, null where the trace lacks them); priority (Int64, nullable);
    hour_of_day, day_of_week (Int64) of arrival on the *trace's* clock (seconds from the trace
    start, not a wall-clock date; left-censored rows get those of the window start).

    Raises ReclaimError for a store that is not a lifetime trace (no ``window_s`` in meta.json)
    or has no VM of ``family``.
    """
    store = store if isinstance(store, Store) else load_store(store)
    window = store.meta.get("window_s")
    if window is None:
        raise TraceError(
            store.path,
            f"not a lifetime trace ({store.meta.get('format')} store has no observation window "
            "window_s in meta.json); import alibaba-gpu2023 or alibaba-gpu2025",
        )
    _check_units(store)
    start, end = float(window[0]), float(window[1])
    fmt = store.meta.get("format")
    lf = store.workloads()
    columns = lf.collect_schema().names()

    def optional(name: str) -> pl.Expr:
        return pl.col(name) if name in columns else pl.lit(None, pl.Float64())

    df = lf.select(
        "id",
        "job_id",
        "category",
        "priority",
        family=FAMILY.get(fmt, pl.lit(fmt)).cast(pl.String()),
        arrival=pl.col("submit_time").fill_null(start),
        exit=pl.col("end_time").fill_null(np.inf),
        left_censored=pl.col("submit_time").is_null(),
        right_censored=pl.col("end_time").is_null(),
        cpu="cpu_request",
        mem="mem_request",
        gpu=optional("gpu_request"),
        disk=optional("disk_request"),
    ).collect()
    if family is not None:
        known = sorted(df["family"].drop_nulls().unique().to_list())
        df = df.filter(pl.col("family") == family)
        if df.is_empty():
            raise ReclaimError(
                f"{store.path}: no VMs of family {family!r} (families: {', '.join(known)})"
            )
    df = df.sort("arrival", "id")
    request = df.select("cpu", "mem", pl.col("gpu").fill_null(0.0)).to_numpy()
    clock = pl.col("arrival")
    features = df.select(
        pl.col("category").cast(pl.String()),
        pl.col("job_id").cast(pl.String()),
        pl.col("cpu", "mem", "gpu", "disk").cast(pl.Float64()),
        pl.col("priority").cast(pl.Int64()),
        hour_of_day=(clock // 3600 % 24).cast(pl.Int64()),
        day_of_week=(clock // 86400 % 7).cast(pl.Int64()),
    )
    return VmTable(
        id=df["id"].to_numpy().astype(str),
        family=df["family"].to_numpy().astype(str),
        arrival=df["arrival"].to_numpy().astype(np.float64),
        exit=df["exit"].to_numpy().astype(np.float64),
        left_censored=df["left_censored"].to_numpy().astype(bool),
        right_censored=df["right_censored"].to_numpy().astype(bool),
        request=np.ascontiguousarray(request, dtype=np.float32),
        features=features,
        window=(start, end),
    )


def load_hosts(store: Store | str | Path) -> tuple[NDArray[np.str_], NDArray[np.float64]]:
    """Host ids (H,) and capacities (H, 3) in :data:`RESOURCES` units (no GPU column: 0) from
    the store's hosts table, in table order; a host listed at several times gets its latest
    row. ReclaimError if the store has no hosts table."""
    store = store if isinstance(store, Store) else load_store(store)
    _check_units(store)
    hosts = store.hosts()
    if hosts is None:
        raise TraceError(store.path, "no hosts table: the trace lists no machines to pack into")
    gpu = pl.col("gpu") if "gpu" in hosts.collect_schema().names() else pl.lit(0.0)
    df = (
        hosts.select("id", "time", "cpu", "mem", gpu=gpu.fill_null(0.0))
        .sort("time", maintain_order=True)
        .unique("id", keep="last", maintain_order=True)
        .collect()
    )
    capacity = df.select("cpu", "mem", "gpu").to_numpy().astype(np.float64)
    return df["id"].to_numpy().astype(str), capacity
