"""What experiment kinds other than shaping share: a run's result as written to the result store,
and the run id that lets a rerun find it.

A kind (``reclaim.lifetime.experiment``, ``reclaim.corp.experiment``) parses its own spec and
builds runs offering ``run_id``, ``execute()`` and ``columns()`` (see ``spec.Run``); the backends
and the result store treat every kind alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reclaim.experiments.spec import canonical

#: The columns of runs.parquet every kind starts with; a kind adds its own and ``wall_s``.
IDENTITY_COLUMNS = {
    "run_id": pl.String,
    "experiment": pl.String,
    "scale": pl.String,
    "label": pl.String,
    "seed": pl.Int64,
}


@dataclass(frozen=True)
class KindRun:
    """The fields every kind's run has; a kind's run adds its settings, ``COLUMNS``,
    ``columns()`` (``identity() | its own``) and ``execute()``."""

    run_id: str
    experiment: str
    scale: str
    label: str
    seed: int

    def identity(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in IDENTITY_COLUMNS}


@dataclass
class RunResult:
    """summary: floats for runs.parquet; tables: name -> frame, written as ``<name>.parquet``;
    wall_s: the run's wall time; settings: what was run, for the record."""

    summary: dict[str, float]
    tables: dict[str, pl.DataFrame]
    wall_s: float
    settings: dict[str, Any] = field(default_factory=dict)

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for name, table in self.tables.items():
            table.write_parquet(out / f"{name}.parquet")
        doc = {"summary": self.summary, "stats": {"wall_s": self.wall_s}, "settings": self.settings}
        (out / "summary.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")


def run_id(slug: str, seed: int, ident: dict[str, Any]) -> str:
    """``<slug>_seed<seed>-<hash of ident>``: readable, and unique to what the run asks for."""
    digest = hashlib.sha256(json.dumps(canonical(ident), sort_keys=True).encode()).hexdigest()
    return f"{re.sub(r'[^A-Za-z0-9.=-]+', '_', slug)[:100]}_seed{seed}-{digest[:10]}"
