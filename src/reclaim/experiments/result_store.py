"""The result store of an experiment: one folder per run, and a table of all finished runs.

Layout (the report reads it; keep it)::

    RESULTS/spec.toml           the spec text as run
    RESULTS/experiment.json     {"name", "scale", "description"}
    RESULTS/runs/<run_id>/      the result's ``write``: summary.json ({"summary", "stats"}) and
                                the kind's tables (SimResult: apps.parquet, timeline.parquet)
    RESULTS/runs.parquet        one row per finished run, in run order: the kind's ``columns``,
                                then every summary key (sorted) as Float64, null where a run lacks
                                it

A run's folder is written under a temporary name and renamed when complete, and runs.parquet is
replaced atomically, so an interrupted sweep leaves only whole runs; a rerun skips them. A run
folder whose summary cannot be read (a disk filled up, a hand edit) is moved aside to
``runs/.unreadable-<run_id>`` (kept for inspection) and the run counts as not done.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl

from reclaim.errors import ReclaimError
from reclaim.experiments.kind import KindRun, experiment_kind
from reclaim.experiments.spec import ScaledSpec
from reclaim.validation import read_json_object

SUMMARY_FILE = "summary.json"


class ResultStore:
    """``root`` holding the results of one experiment at one scale."""

    def __init__(self, root: Path, spec: ScaledSpec, scale: str) -> None:
        """Open ``root``, creating it; refuse one holding another experiment or scale."""
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        meta = {
            "name": spec.name,
            "kind": spec.kind,
            "scale": scale,
            "description": spec.description,
        }
        meta_file = self.root / "experiment.json"
        if meta_file.is_file():
            held = read_json_object(meta_file)
            if (held.get("name"), held.get("scale")) != (spec.name, scale):
                raise ReclaimError(
                    f"{self.root} holds experiment {held.get('name')!r} at scale "
                    f"{held.get('scale')!r}, not {spec.name!r} at {scale!r}; choose another -o"
                )
        elif self.root.is_dir() and (foreign := _foreign(self.root)):
            raise ReclaimError(
                f"{self.root} holds {foreign!r}, which no result store holds (a trace store? "
                "another tool's output?); choose another -o"
            )
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        _replace_text(meta_file, json.dumps(meta, indent=2) + "\n")
        _replace_text(self.root / "spec.toml", spec.text)
        self.columns = experiment_kind(spec.kind).columns
        self._rows: dict[str, dict] = {}

    def is_done(self, run: KindRun) -> bool:
        return (self.runs_dir / run.run_id).is_dir()

    def others(self, runs: list[KindRun]) -> list[str]:
        """Run folders here that are none of ``runs``: made with other settings or by another
        reclaim version (run ids hash both). They are kept, and left out of the table."""
        wanted = {run.run_id for run in runs}
        if not self.runs_dir.is_dir():
            return []
        return sorted(
            p.name
            for p in self.runs_dir.iterdir()
            if p.is_dir() and not p.name.startswith(".") and p.name not in wanted
        )

    def set_aside_unreadable(self, runs: list[KindRun]) -> list[str]:
        """Move the folders of done ``runs`` whose summary cannot be read out of the way, so they
        run again; returns one line per run moved, saying why."""
        moved = []
        for run in runs:
            if not self.is_done(run):
                continue
            try:
                self._row(run)
            except (OSError, ValueError, KeyError, TypeError) as err:
                aside = self.runs_dir / f".unreadable-{run.run_id}"
                shutil.rmtree(aside, ignore_errors=True)
                (self.runs_dir / run.run_id).rename(aside)
                problem = f"{type(err).__name__}: {err}".splitlines()[0]
                moved.append(
                    f"{run.run_id}/{SUMMARY_FILE} unreadable ({problem}): kept as {aside.name}, rerun"
                )
        return moved

    def save(self, run: KindRun, result) -> None:
        """Write ``run``'s folder under a temporary name, then rename it into place."""
        partial = self.runs_dir / f".partial-{run.run_id}"
        shutil.rmtree(partial, ignore_errors=True)  # left by an interrupted write
        result.write(partial)
        partial.rename(self.runs_dir / run.run_id)

    def write_table(self, runs: list[KindRun]) -> pl.DataFrame:
        """Rewrite runs.parquet with a row for each of ``runs`` that is done, in that order."""
        rows = [self._row(run) for run in runs if self.is_done(run)]
        # sorted: a summary's key order can vary from run to run (it comes from group-bys)
        columns = self.columns
        metrics = sorted({k for row in rows for k in row if k not in columns})
        schema = columns | dict.fromkeys(metrics, pl.Float64)
        table = pl.DataFrame(
            {name: [row.get(name) for row in rows] for name in schema}, schema=schema
        )
        tmp = self.root / ".runs.parquet.tmp"
        table.write_parquet(tmp)
        os.replace(tmp, self.root / "runs.parquet")
        return table

    def _row(self, run: KindRun) -> dict:
        if run.run_id not in self._rows:
            doc = json.loads((self.runs_dir / run.run_id / SUMMARY_FILE).read_text())
            summary = {k: None if v is None else float(v) for k, v in doc["summary"].items()}
            self._rows[run.run_id] = (
                summary
                | run.columns()
                # simulation wall time, kept in summary.json so a resumed run keeps its own
                | {"wall_s": doc["stats"]["wall_s"]}
            )
        return self._rows[run.run_id]


#: What a result store's folder holds (and ``reclaim report`` adds); dot-files are its own.
STORE_ENTRIES = ("spec.toml", "experiment.json", "runs", "runs.parquet", "report")


def _foreign(root: Path) -> str | None:
    """The first entry of ``root`` that no result store holds (None: it may become one)."""
    return next(
        (
            p.name
            for p in sorted(root.iterdir())
            if not p.name.startswith(".") and p.name not in STORE_ENTRIES
        ),
        None,
    )


def _replace_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
