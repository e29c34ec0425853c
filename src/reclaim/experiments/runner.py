"""``reclaim experiment run``: every run of a spec at one scale, resumable, with a progress bar.

Runs already in the result store are skipped; the others execute on the chosen backend and are
saved as each finishes, runs.parquet being rewritten after every one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.console import Console

from reclaim.experiments.backends import check, run_all
from reclaim.experiments.result_store import ResultStore
from reclaim.experiments.spec import ExperimentSpec
from reclaim.progress import count_progress


@dataclass(frozen=True)
class Outcome:
    """runs: all runs of the spec at the scale; resumed: found done; table: runs.parquet."""

    out: Path
    scale: str
    runs: int
    resumed: int
    table: pl.DataFrame


def run_experiment(
    spec: ExperimentSpec,
    scale: str | None = None,
    out: Path | None = None,
    backend: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    console: Console | None = None,
) -> Outcome:
    """Execute the runs of ``spec`` at ``scale`` missing from ``out`` (default
    results/<name>-<scale>) and return the table of all of them."""
    check(backend, jobs)
    scale = spec.scale(scale).name
    runs = spec.runs(scale)
    out = Path(out) if out is not None else Path("results") / f"{spec.name}-{scale}"
    store = ResultStore(out, spec, scale)
    unreadable = store.set_aside_unreadable(runs)
    todo = [run for run in runs if not store.is_done(run)]
    resumed = len(runs) - len(todo)
    table = store.write_table(runs)
    with count_progress("runs  {task.fields[last]}", console) as progress:
        bar = progress.add_task(spec.name, total=len(runs), completed=resumed, last="")
        for line in unreadable:
            progress.console.print(f"[yellow]warning:[/] {line}", highlight=False)
        if stale := store.others(runs):
            progress.console.print(
                f"{len(stale)} run folder(s) in {out} come from other settings or another reclaim "
                "version: kept, not used",
                highlight=False,
            )
        if resumed:
            progress.console.print(f"resuming: {resumed} of {len(runs)} runs already in {out}")
        # seed-major, so a worker reuses its cached workload from run to run
        for run, result in run_all(sorted(todo, key=lambda r: r.seed), backend, jobs, address):
            store.save(run, result)
            table = store.write_table(runs)
            progress.update(bar, advance=1, last=f"done: {run.label} seed {run.seed}")
    return Outcome(out, scale, len(runs), resumed, table)
