"""Experiment kinds: what every kind offers (parse, run, report, columns), the fields every run
has, its result as written to the result store, and the run id that lets a rerun find it.

A kind is a registry kind like controllers and placers: each is listed under
``[project.entry-points."reclaim.experiment"]`` and found by the name a spec's ``kind`` gives
(shaping, the default, in ``reclaim.sim.experiment``; ``corp``, ``lava`` and ``tvw`` in their
systems' folders). Adding one is a kind module, a report module and a spec
(docs/experiments.md). The backends and the result store treat every kind alike.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from reclaim import registry
from reclaim.core.component import Component
from reclaim.errors import ReclaimError

#: The registry kind experiment kinds are registered under.
EXPERIMENT = "experiment"
#: The kind of a spec that names none.
DEFAULT_KIND = "shaping"
#: The columns of runs.parquet most kinds start with; a kind adds its own and ``wall_s``.
IDENTITY_COLUMNS = {
    "run_id": pl.String,
    "experiment": pl.String,
    "scale": pl.String,
    "label": pl.String,
    "seed": pl.Int64,
}


class ExperimentKind(Component):
    """One kind of experiment. ``columns``: the schema of its runs.parquet before the summary's
    metrics (its runs' ``columns()`` fill it); ``report_module``: the module whose
    ``write(root, out)`` reports a result store of this kind, imported only when a report is
    asked for (running an experiment never loads the plotting stack). A kind has no settings."""

    columns: ClassVar[dict[str, Any]]
    report_module: ClassVar[str]

    def parse(self, doc: dict[str, Any], path: Path, text: str) -> Any:
        """The spec (a ``ScaledSpec``) of the TOML ``doc`` read from ``path`` as ``text``; every
        problem a ReclaimError naming the file and key."""
        raise NotImplementedError

    def run(self, run: Any) -> Any:
        """Execute one of this kind's runs: a result with ``write(folder)`` (``RunResult``)."""
        raise NotImplementedError

    def run_with_checkpoints(self, run: Any, checkpoints: Path) -> Any:
        """``run(run)``, saving it part-way in the folder ``checkpoints`` and resuming from there
        when started again, for a kind whose runs take hours (shaping); by default a stopped run
        starts over."""
        return self.run(run)

    def report(self, root: Path, out: Path) -> Any:
        """Write the report of the result store at ``root`` into ``out`` (a ``Report``)."""
        return importlib.import_module(self.report_module).write(root, out)


def experiment_kind(name: str) -> ExperimentKind:
    """The experiment kind registered as ``name`` (ReclaimError naming the known ones)."""
    return registry.build(EXPERIMENT, name)


@dataclass(frozen=True)
class KindRun:
    """The fields every kind's run has; a kind's run adds its settings and ``columns()`` (its
    row of runs.parquet but ``wall_s``). ``kind`` names the kind that executes it."""

    run_id: str
    experiment: str
    scale: str
    label: str
    seed: int

    kind: ClassVar[str]

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


def identity(spec: Any, scale: str, label: str, seed: int, slug: str, ident: dict) -> dict:
    """The identity fields of a run of ``spec`` (a ``ScaledSpec``): its run id from ``slug``,
    ``seed`` and ``ident`` (everything the run asks for), the experiment, scale, label and seed.
    Every kind builds its runs from these."""
    return {
        "run_id": run_id(slug, seed, ident),
        "experiment": spec.name,
        "scale": scale,
        "label": label,
        "seed": seed,
    }


#: Characters of a run id's readable part (the shaping grids' slugs run to 120).
SLUG_CHARS = 120


def run_id(slug: str, seed: int, ident: dict[str, Any]) -> str:
    """``<slug>_seed<seed>-<hash of ident>``: readable, and unique to what the run asks for."""
    digest = hashlib.sha256(json.dumps(canonical(ident), sort_keys=True).encode()).hexdigest()
    return f"{clean_slug(slug)[:SLUG_CHARS]}_seed{seed}-{digest[:10]}"


def clean_slug(text: str) -> str:
    """``text`` with every run of characters a folder name should not hold made one ``_``."""
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text)


def unique(runs: list[KindRun], path: Path) -> list[KindRun]:
    """``runs``, or a ReclaimError naming the spec file and a run asked for twice."""
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise ReclaimError(f"{path}: [[runs]] ask for the same run twice ({twice})")
    return runs


def canonical(obj: Any) -> Any:
    """Whole numbers as floats, so ``k2 = 3`` and ``k2 = 3.0`` name the same run."""
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [canonical(v) for v in obj]
    if isinstance(obj, int) and not isinstance(obj, bool):
        return float(obj)
    return obj
