"""JobTables: the job distributions of a ``google2011-jobs`` store, drawn as the paper drew them.

The paper's simulator keeps each empirical distribution as a 1001-point quantile table and draws
a value by taking a uniform number u in [0, 1) and interpolating linearly between the table
entries around u x 1000 (``core/Workload.scala`` ``DistCache.getQuantile``). The tables are built
by the reader (:mod:`reclaim.traces.readers.google2011_jobs`, which says how each quantity is
derived); this module only loads and samples them.

Quantities and units: ``gap_s`` (s between submissions), ``runtime_s`` (s from first SCHEDULE to
FINISH), ``tasks`` (tasks per job, a float: the paper takes its ceiling), ``task_cpu`` and
``task_mem`` (per-task requests, Google's normalised units: 1.0 = the largest machine's CPU or
memory in the cell).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.readers.google2011_jobs import DISTRIBUTIONS_FILE, QUANTILE_POINTS, QUANTITIES
from reclaim.traces.schema import META_FILE
from reclaim.traces.store import sample_path

FORMAT = "google2011-jobs"


@dataclass(frozen=True)
class JobTables:
    """tables: quantity -> (1001,) float64, non-decreasing (all NaN for a quantity the store has
    no sample of); units: quantity -> unit; counts: quantity -> samples behind its table."""

    tables: Mapping[str, np.ndarray]
    units: Mapping[str, str]
    counts: Mapping[str, int]

    @classmethod
    def from_store(cls, path: str | Path) -> JobTables:
        """The tables of the google2011-jobs store at ``path``; TraceError if it is not one."""
        path = Path(path)
        try:
            meta = json.loads((path / META_FILE).read_text())
            if meta.get("format") != FORMAT:
                raise TraceError(path, f"holds a {meta.get('format')} store, not {FORMAT}")
            df = pl.read_parquet(path / DISTRIBUTIONS_FILE)
        except (OSError, ValueError, pl.exceptions.PolarsError) as err:
            raise TraceError(path, f"not a readable {FORMAT} store ({err})") from None
        missing = [q for q in QUANTITIES if q not in df.columns]
        if missing or df.height != QUANTILE_POINTS:
            problem = f"needs {QUANTILE_POINTS} rows of {', '.join(QUANTITIES)}"
            raise TraceError(path / DISTRIBUTIONS_FILE, problem)
        tables = {q: df[q].fill_null(np.nan).to_numpy().astype(np.float64) for q in QUANTITIES}
        for q, table in tables.items():
            if not np.isnan(table).all() and not (np.diff(table) >= 0).all():
                raise TraceError(path / DISTRIBUTIONS_FILE, f"{q} quantiles are not ascending")
        summaries = meta.get("distributions", {})
        counts = {q: int(summaries.get(q, {}).get("count", 0)) for q in QUANTITIES}
        return cls(tables, dict(QUANTITIES), counts)

    @classmethod
    def from_sample(cls) -> JobTables:
        """The tables shipped in the package (``sample:google2011-jobs``), derived from the
        development subset of clusterdata-2011-2 (see data/sample/PROVENANCE.md)."""
        return cls.from_store(sample_path(FORMAT))

    def quantile(self, quantity: str, u: np.ndarray) -> np.ndarray:
        """Values at the probabilities ``u`` (in [0, 1]), interpolated linearly between the
        table's entries: (n,) float64 in the quantity's unit."""
        return interpolate(self._table(quantity), u)

    def draw(self, quantity: str, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` values of ``quantity`` from ``rng`` (one uniform each): (n,) float64."""
        return self.quantile(quantity, rng.random(n))

    def _table(self, quantity: str) -> np.ndarray:
        if quantity not in self.tables:
            known = ", ".join(self.tables)
            raise ValueError(f"unknown quantity {quantity!r} (known: {known})")
        if self.counts[quantity] == 0:
            raise ReclaimError(
                f"{quantity}: the store holds no sample of it (see its meta.json 'filtered')"
            )
        return self.tables[quantity]


def interpolate(table: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Values of a quantile ``table`` at the probabilities ``u`` (in [0, 1]): linear between
    its entries, as the paper's ``DistCache.getQuantile``. (n,) float64."""
    u = np.asarray(u, dtype=np.float64)
    if u.size and (u.min() < 0 or u.max() > 1):
        raise ValueError("probabilities must lie in [0, 1]")
    steps = np.arange(len(table), dtype=np.float64)
    return np.interp(u * (len(table) - 1), steps, table)
