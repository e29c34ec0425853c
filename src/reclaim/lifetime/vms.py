"""The VM table: one row per VM of a lifetime trace, columnar, ordered by arrival.

Times are seconds on the trace's clock. A VM that existed before the trace window opened is
*left-censored*: its true start is unknown, ``arrival`` is the window start. A VM still alive
when the window closed is *right-censored*: its lifetime is only known to exceed what was
observed, and ``exit`` is ``inf`` (in a replay it never leaves).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.schema import WORKLOADS_FILE
from reclaim.traces.store import Store, load_store


@dataclass(frozen=True)
class VmTable:
    """id, family: (N,) str (family = the host pool a VM belongs to, e.g. CN/HN); arrival, exit:
    (N,) float64 s; left_censored, right_censored: (N,) bool; request: (N, 3) float32 in
    :data:`~reclaim.core.types.RESOURCES_GPU` units (cores, GiB, GPUs; fractions allowed);
    features: N rows of model inputs; window: (start, end) s; imputed: (N,) bool rows whose
    lifetime was imputed, not observed (None: none)."""

    id: NDArray[np.str_]
    family: NDArray[np.str_]
    arrival: NDArray[np.float64]
    exit: NDArray[np.float64]
    left_censored: NDArray[np.bool_]
    right_censored: NDArray[np.bool_]
    request: NDArray[np.float32]
    features: pl.DataFrame
    window: tuple[float, float]
    imputed: NDArray[np.bool_] | None = None

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
            imputed=None if self.imputed is None else self.imputed[idx],
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


#: Azure 2017 (``azure2017-lifetimes``): one provider's VM stream split into this many pools by a
#: stable hash (CRC-32) of the tenant batch, so a batch's VMs share a pool as one tenant's
#: deployment would; pool names are ``p00`` .. ``p15``.
AZURE = "azure2017-lifetimes"
AZURE_POOLS = 16


def azure_pool(job_id: NDArray[np.str_] | list[str]) -> NDArray[np.str_]:
    """(N,) pool name ``pNN`` of each tenant batch id: CRC-32 of the id modulo
    :data:`AZURE_POOLS` (stable across runs, platforms and library versions)."""
    ids = list(job_id)
    unique = {b: f"p{zlib.crc32(b.encode()) % AZURE_POOLS:02d}" for b in set(ids)}
    return np.array([unique[b] for b in ids], dtype=str)


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


def _check_values(store: Store, lf: pl.LazyFrame) -> None:
    """The values a VM table is built from, as read from the store's workloads table: a NaN time
    or request, or a negative one, is an error naming the file and row (a null time is no error:
    it marks a VM alive before or after the observation window)."""
    columns = ("submit_time", "end_time", "cpu_request", "mem_request")
    bad = {}
    for c in columns:
        value = pl.col(c).cast(pl.Float64())
        bad[c] = value.is_nan() | (value < 0)
        if c.endswith("_request"):
            bad[c] = bad[c] | value.is_null()
    hits = lf.select(**{c: m.fill_null(False).arg_true().first() for c, m in bad.items()})
    found = [(row, c) for c, row in hits.collect().row(0, named=True).items() if row is not None]
    if found:
        row, column = min(found)
        value = lf.select(pl.col(column)).slice(row, 1).collect().item()
        problem = "missing" if value is None else "NaN" if value != value else f"negative ({value})"
        raise TraceError(store.path / WORKLOADS_FILE, f"{column} is {problem}", row + 1)


def load_vms(
    store: Store | str | Path,
    family: str | None = None,
    lifetime_seed: int | None = None,
    history_days: float = 0.0,
) -> VmTable:
    """The VM table of the lifetime trace ``store`` (a :class:`Store` or its folder).

    Rows are sorted by (arrival, id). arrival = submit_time, or the window start for VMs that
    existed before the window (left-censored); exit = end_time, or inf for VMs alive at the
    window end (right-censored). request: cores, GiB, GPUs (no GPU column: 0). ``family`` keeps
    the VMs of one pool (see :data:`FAMILY`).

    Binned lifetimes (stores with ``lifetime_min``/``lifetime_max``, e.g. Azure 2017): with
    ``lifetime_seed`` an ended VM's lifetime is drawn uniformly in [lifetime_min, min(lifetime_max,
    window end - arrival)) by ``np.random.default_rng(lifetime_seed)`` (one draw per VM in table
    order, so every pool of a seed sees the same draws); without it the store's end_time (the
    middle of that interval) is kept. Azure 2017 rows of status ``unknown`` (arrivals before the
    lifetime window, no lifetime) are left out; its pools come from :func:`azure_pool` and its
    features add ``batch_size`` (VMs in the VM's tenant batch, known at arrival).

    ``history_days`` > 0 (Azure 2017, needs ``lifetime_seed``): the ``unknown`` arrivals of the
    last ``history_days`` before the window get *imputed* lifetimes (:func:`impute_history`);
    those alive at the window start are kept, marked ``left_censored`` (so no model trains on
    them and no training cut counts them) and ``imputed``, with their real arrival: the replay
    places them at the window start, their uptime counting from that arrival.

    features (N rows, for a GBDT): category, job_id (String, null allowed); cpu, mem, gpu, disk
    (Float64 requests, null where the trace lacks them); priority (Int64, nullable);
    hour_of_day, day_of_week (Int64) of arrival on the *trace's* clock (seconds from the trace
    start, not a wall-clock date; left-censored rows get those of the window start).

    Raises ReclaimError for a store that is not a lifetime trace (no ``window_s`` in meta.json)
    or has no VM of ``family``, and a TraceError naming the row of a NaN or negative time or
    request, or a missing request.
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
    _check_values(store, lf)
    columns = lf.collect_schema().names()

    def optional(name: str) -> pl.Expr:
        return pl.col(name) if name in columns else pl.lit(None, pl.Float64())

    azure = fmt == AZURE
    if history_days > 0 and (not azure or lifetime_seed is None):
        raise ReclaimError("history_days needs an azure2017-lifetimes store and a lifetime_seed")
    status = pl.col("status") if azure else pl.lit(None, pl.String())
    binned = "lifetime_min" in columns
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
        lifetime_min=optional("lifetime_min"),
        lifetime_max=optional("lifetime_max"),
        batch_size=pl.len().over("job_id").cast(pl.Float64()),
        status=status,
    ).collect()
    history = df.filter(pl.col("status") == "unknown")
    df = df.filter(pl.col("status").ne_missing("unknown")).with_columns(imputed=pl.lit(False))
    if azure:
        df = df.with_columns(family=pl.Series(azure_pool(df["job_id"].to_list())))
    if binned and lifetime_seed is not None:
        df = df.sort("arrival", "id")  # draws in table order, whatever the family
        df = df.with_columns(exit=pl.Series(_draw_exits(df, end, lifetime_seed)))
    if history_days > 0:
        history = history.filter(pl.col("arrival") >= start - 86400.0 * history_days)
        history = history.with_columns(family=pl.Series(azure_pool(history["job_id"].to_list())))
        df = pl.concat(
            [df, impute_history(df, history, (start, end), lifetime_seed)], how="vertical_relaxed"
        )
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
        *([pl.col("batch_size")] if azure else []),
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
        imputed=df["imputed"].to_numpy().astype(bool),
    )


#: Strata of the imputed history: flavour x tenant batch size (1, 2-4, 5-19, >= 20 VMs); a
#: stratum with fewer VMs than this falls back to the flavour, then to all VMs.
HISTORY_MIN_STRATUM = 200
_BATCH_EDGES = np.array([2.0, 5.0, 20.0])


def impute_history(
    window: pl.DataFrame, history: pl.DataFrame, span: tuple[float, float], seed: int
) -> pl.DataFrame:
    """Rows of ``history`` (arrivals before the window, no lifetime) alive at the window start
    under lifetimes drawn from the window's own lifetime distribution, with exit, censoring and
    ``imputed`` set.

    The distribution is the Kaplan-Meier curve S of the window VMs' lifetimes (ended: drawn or
    middle of the bin; running at the end: right-censored) per stratum (flavour x batch size,
    :data:`HISTORY_MIN_STRATUM`). A history VM that arrived ``d`` s before the window start is
    alive then with probability S(d); one uniform u per VM (``default_rng([seed, 1])``) decides:
    alive iff u < S(d), lifetime = S^-1(u), and past the longest time the window shows (S never
    reaches u) it outlives the window (exit inf, right-censored). So every kept VM's lifetime is
    drawn from S conditioned on surviving to the window start. A history VM known to have run
    ``a`` s already (``lifetime_min``: one still running at an earlier split's cut) draws from S
    conditioned on that too (u scaled by S(a)), so it is alive at the window start whenever
    ``a >= d``. ``span``: the window (start,
    end) s; ``window`` and ``history`` are load_vms frames (arrival, exit, category,
    batch_size)."""
    from reclaim.lifetime.censoring import kaplan_meier

    start, end = span
    life = window["exit"].to_numpy() - window["arrival"].to_numpy()
    ended = np.isfinite(life)
    observed = np.where(ended, life, np.maximum(end - window["arrival"].to_numpy(), 0.0))
    w_flavour = window["category"].to_numpy().astype(str)
    w_batch = np.searchsorted(_BATCH_EDGES, window["batch_size"].to_numpy(), side="right")
    h_flavour = history["category"].to_numpy().astype(str)
    h_batch = np.searchsorted(_BATCH_EDGES, history["batch_size"].to_numpy(), side="right")
    d = start - history["arrival"].to_numpy()
    u = np.random.default_rng([seed, 1]).random(history.height)
    known = np.nan_to_num(history["lifetime_min"].to_numpy().astype(np.float64), nan=0.0)
    lifetime = np.full(history.height, np.nan)
    pooled = kaplan_meier(observed, ended)
    for flavour in np.unique(h_flavour):
        for b in np.unique(h_batch[h_flavour == flavour]):
            rows = (h_flavour == flavour) & (h_batch == b)
            member = (w_flavour == flavour) & (w_batch == b)
            if member.sum() < HISTORY_MIN_STRATUM or not ended[member].any():
                member = w_flavour == flavour
            km = pooled
            if member.sum() >= HISTORY_MIN_STRATUM and ended[member].any():
                km = kaplan_meier(observed[member], ended[member])
            lifetime[rows] = _inverse_survival(km, u[rows] * km(known[rows]), d[rows])
    keep = ~np.isnan(lifetime)
    kept = history.filter(pl.Series(keep))
    exit = kept["arrival"].to_numpy() + lifetime[keep]
    return kept.with_columns(
        exit=pl.Series(exit, dtype=pl.Float64),
        left_censored=pl.lit(True),
        right_censored=pl.Series(~np.isfinite(exit)),
        imputed=pl.lit(True),
    )


def _inverse_survival(km, u: NDArray[np.float64], d: NDArray[np.float64]) -> NDArray:
    """(n,) lifetime S^-1(u) (the first event time where S <= u; inf past the curve), NaN where
    the VM died before ``d`` (u >= S(d))."""
    alive = u < km(d)
    # survival is non-increasing: the first index with S <= u
    i = np.searchsorted(-km.survival, -u, side="left")
    out = np.where(i < len(km.times), km.times[np.minimum(i, len(km.times) - 1)], np.inf)
    out = np.maximum(out, d)  # S^-1(u) > d whenever u < S(d); guards ties at the knot
    return np.where(alive, out, np.nan)


def _draw_exits(df: pl.DataFrame, end: float, seed: int) -> NDArray[np.float64]:
    """(N,) exits with each ended binned lifetime drawn uniformly in its interval, capped at
    ``end`` (it ended before the window closed); other rows keep theirs."""
    arrival = df["arrival"].to_numpy()
    exit = df["exit"].to_numpy().astype(np.float64).copy()
    lo = df["lifetime_min"].fill_null(np.nan).to_numpy()
    hi = np.minimum(df["lifetime_max"].fill_null(np.nan).to_numpy(), end - arrival)
    u = np.random.default_rng(seed).random(len(df))
    ended = np.isfinite(exit) & np.isfinite(lo) & np.isfinite(hi)
    hi = np.maximum(hi, lo)  # an interval past the window end (flagged at import): its start
    exit[ended] = arrival[ended] + lo[ended] + u[ended] * (hi[ended] - lo[ended])
    return exit


def load_hosts(store: Store | str | Path) -> tuple[NDArray[np.str_], NDArray[np.float64]]:
    """Host ids (H,) and capacities (H, 3) in :data:`~reclaim.core.types.RESOURCES_GPU` units (no
    GPU column: 0) from the store's hosts table, in table order; a host listed at several times
    gets its latest row. ReclaimError if the store has no hosts table."""
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
