"""Reading a canonical store, and finding the real-trace samples shipped inside the package.

Consumers (workload builder, simulator) open a store with :func:`load_store` and get lazy polars
frames, so they read only the columns and rows they need.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from reclaim.errors import TraceError
from reclaim.traces.schema import (
    HOSTS_FILE,
    HOSTS_SCHEMA,
    META_FILE,
    USAGE_FILE,
    USAGE_SCHEMA,
    WORKLOADS_FILE,
    WORKLOADS_SCHEMA,
)

#: Written into meta.json; bumped when the store layout changes incompatibly.
STORE_VERSION = 1


@dataclass(frozen=True)
class Store:
    """A canonical trace store on disk. ``meta`` is meta.json (units, period_s, filtered, ...)."""

    path: Path
    meta: dict[str, Any]

    def workloads(self) -> pl.LazyFrame:
        """One row per workload, :data:`reclaim.traces.schema.WORKLOADS_SCHEMA` plus the
        optional columns the trace has (:data:`~reclaim.traces.schema.OPTIONAL_WORKLOADS`)."""
        return pl.scan_parquet(self.path / WORKLOADS_FILE)

    def usage(self) -> pl.LazyFrame:
        """Samples sorted by id then time, :data:`reclaim.traces.schema.USAGE_SCHEMA` plus the
        optional columns the trace has (:data:`~reclaim.traces.schema.OPTIONAL_USAGE`)."""
        return pl.scan_parquet(self.path / USAGE_FILE)

    def hosts(self) -> pl.LazyFrame | None:
        """Machine capacities over time (:data:`~reclaim.traces.schema.HOSTS_SCHEMA` plus
        optional columns), or None if the trace has no machine table."""
        path = self.path / HOSTS_FILE
        return pl.scan_parquet(path) if path.exists() else None

    @property
    def units(self) -> dict[str, str]:
        """{"time": "s", "cpu": ..., "mem": ...}: the unit of each value column."""
        return self.meta["units"]


def load_store(path: str | Path) -> Store:
    """Open the store at ``path``; TraceError if it is not one (only the required columns of
    each table are checked: optional ones may be absent)."""
    path = Path(path)
    hint = "not a trace store (create one with `reclaim traces import`)"
    if not path.is_dir():
        raise TraceError(path, f"{hint}: no such folder")
    for name in (META_FILE, WORKLOADS_FILE, USAGE_FILE):
        if not (path / name).is_file():
            raise TraceError(path, f"{hint}: {name} is missing")
    tables = (
        (WORKLOADS_FILE, WORKLOADS_SCHEMA),
        (USAGE_FILE, USAGE_SCHEMA),
        (HOSTS_FILE, HOSTS_SCHEMA),
    )
    for name, schema in tables:
        if (path / name).is_file():
            _check_parquet(path / name, schema)
    try:
        meta = json.loads((path / META_FILE).read_text())
    except (OSError, ValueError) as err:
        raise TraceError(path / META_FILE, f"unreadable: {err}") from None
    if meta.get("store_version") != STORE_VERSION:
        found = meta.get("store_version")
        raise TraceError(path, f"store version {found!r}, this reclaim reads {STORE_VERSION}")
    return Store(path, meta)


def _check_parquet(path: Path, schema: dict) -> None:
    """Read the footer only: a truncated or foreign file, or one without the canonical columns,
    fails here, with its name, rather than deep inside a lazy query later."""
    try:
        columns = set(pq.read_schema(path).names)
    except (OSError, pa.ArrowException) as err:
        raise TraceError(path, f"not a readable Parquet file ({err})") from None
    missing = [c for c in schema if c not in columns]
    if missing:
        raise TraceError(path, f"missing column(s) {', '.join(missing)}")


def sample_path(name: str) -> Path:
    """Folder of the shipped sample store ``name`` (e.g. "bitbrains"), found inside the package."""
    root = Path(str(files("reclaim").joinpath("data", "sample")))
    path = root / name
    if not (path / META_FILE).is_file():
        known = sorted(p.parent.name for p in root.glob(f"*/{META_FILE}"))
        raise TraceError(name, f"no shipped sample of that name (samples: {', '.join(known)})")
    return path
