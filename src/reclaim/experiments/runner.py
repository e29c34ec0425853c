"""``reclaim experiment run``: every run of a spec at one scale, resumable, with a progress bar.

Runs already in the result store are skipped; the others execute on the chosen backend and are
saved as each finishes, runs.parquet being rewritten after every one. A long shaping run also
saves its state every ten minutes under ``checkpoints/`` in the store (local backend), so that
rerunning the command after a stop continues it from there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from rich.console import Console

from reclaim.experiments.backends import check, run_all
from reclaim.experiments.kind import KindRun
from reclaim.experiments.result_store import ResultStore
from reclaim.experiments.spec import ScaledSpec
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
    spec: ScaledSpec,
    scale: str | None = None,
    out: Path | None = None,
    backend: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    console: Console | None = None,
    confirm: Callable[[int, str], None] | None = None,
) -> Outcome:
    """Execute the runs of ``spec`` at ``scale`` missing from ``out`` (default
    results/<name>-<scale>) and return the table of all of them.

    Before the first run, the count and an estimated time are printed, and ``confirm(runs to
    do, estimate)`` may stop a big ask by raising."""
    check(backend, jobs)
    scale = spec.scale(scale).name
    runs = spec.runs(scale)
    out = Path(out) if out is not None else Path("results") / f"{spec.name}-{scale}"
    store = ResultStore(out, spec, scale)
    unreadable = store.set_aside_unreadable(runs)
    todo = [run for run in runs if not store.is_done(run)]
    resumed = len(runs) - len(todo)
    table = store.write_table(runs)
    estimate = _estimate(table, spec.scale(scale), len(todo), jobs)
    if console is not None:
        console.print(
            f"{spec.name}: {len(runs):,} runs at scale {scale!r}, {len(todo):,} to run: {estimate}",
            highlight=False,
        )
    if confirm is not None and todo:
        confirm(len(todo), estimate)
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
        if backend == "local" and (part := [r for r in todo if _checkpoints(out, r, False)]):
            progress.console.print(
                f"{len(part)} run(s) continue from their checkpoints in {out / CHECKPOINTS}"
            )
        # seed-major, so a worker reuses its cached workload from run to run
        ordered = sorted(todo, key=lambda r: r.seed)
        for run, result in run_all(ordered, backend, jobs, address, out / CHECKPOINTS):
            store.save(run, result)
            for path in _checkpoints(out, run, True):  # only once its results are safe
                path.unlink(missing_ok=True)
            table = store.write_table(runs)
            progress.update(bar, advance=1, last=f"done: {run.label} seed {run.seed}")
    return Outcome(out, scale, len(runs), resumed, table)


#: The store's folder of the checkpoints of runs under way (a run's go once its results are stored).
CHECKPOINTS = "checkpoints"


def _checkpoints(out: Path, run: KindRun, partial: bool) -> list[Path]:
    """The files a run left in the store's checkpoints folder (``<run_id>.<ext>``); a save cut
    short (``.partial``) only with ``partial``."""
    return [
        p
        for p in (out / CHECKPOINTS).glob("*")
        if p.name.startswith(f"{run.run_id}.") and (partial or not p.name.endswith(".partial"))
    ]


#: Applications a shaping run simulates per second on one core, for the estimate before a
#: sweep has timed a run of its own (measured: 40 to 400 applications, 10 to 30 per second).
APPS_PER_S = 20.0


def _estimate(table: pl.DataFrame, scale, todo: int, jobs: int | None) -> str:
    """The time ``todo`` runs should take: the mean wall time of the runs already done, else
    one run's applications at APPS_PER_S; spread over the worker processes."""
    workers = max(1, min(jobs or os.cpu_count() or 1, todo or 1))
    if "wall_s" in table.columns and table["wall_s"].drop_nulls().len():
        per_run, basis = float(table["wall_s"].drop_nulls().mean()), "runs done"
    elif isinstance(getattr(scale, "apps", None), int):
        per_run, basis = scale.apps / APPS_PER_S, f"{APPS_PER_S:g} applications/s"
    else:
        return "time unknown until a run has finished"
    return f"about {_duration(per_run * todo / workers)} on {workers} worker(s) (from {basis})"


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"
