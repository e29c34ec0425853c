"""A live comparison end to end: each mode run live, then replayed in the simulator, then the
per-application comparison and Figure 5. Finished modes are kept, so an interrupted session
resumes with the mode it was in (which restarts: a live run cannot be resumed half way)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import polars as pl
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from reclaim.errors import ReclaimError
from reclaim.live.compare import SEEDS_FILE, replay, seed_changes, side_by_side
from reclaim.live.launcher import MODES, LiveRun
from reclaim.live.report import plot_figure5, run_dir
from reclaim.live.scenario import LiveScenario, build
from reclaim.progress import LoggedProgress
from reclaim.sim.state import DONE, REJECTED

SCENARIO_FILE = "live.json"


def check_scenario(out: Path, scenario: LiveScenario) -> None:
    """Refuse to mix runs of different scenarios in one directory; record the scenario."""
    path = out / SCENARIO_FILE
    wanted = json.loads(json.dumps(scenario.params()))
    if path.is_file():
        held = json.loads(path.read_text())
        if held != wanted:
            changed = sorted(k for k in wanted if held.get(k) != wanted[k])
            raise ReclaimError(
                f"{out} holds a live run of another scenario (differs in {', '.join(changed)}); "
                "choose another --output"
            )
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(wanted, indent=2) + "\n")


def run_session(
    out: Path,
    scenario: LiveScenario,
    modes: list[str],
    root: Path,
    parent: str,
    console: Console,
    sim_seeds: int = 10,
) -> Path | None:
    """Run what is missing under ``out``, and the simulator's replay over ``sim_seeds``
    workloads of the scenario; returns Figure 5's path."""
    check_scenario(out, scenario)
    workload, _ = build(scenario)
    for mode in modes:
        live_dir, sim_dir = run_dir(out, "live", mode), run_dir(out, "simulated", mode)
        if (live_dir / "summary.json").is_file():
            console.print(f"{mode}: live run already in {live_dir}, kept")
        else:
            shutil.rmtree(live_dir, ignore_errors=True)  # a half run is started afresh
            result = _run_live(workload, scenario, mode, live_dir, root, parent, console)
            result.write(live_dir)
        if not (sim_dir / "summary.json").is_file():
            replay(workload, scenario, mode).write(sim_dir)
    done = [m for m in MODES if (run_dir(out, "live", m) / "apps.parquet").is_file()]
    tables = [
        side_by_side(
            pl.read_parquet(run_dir(out, "live", m) / "apps.parquet"),
            pl.read_parquet(run_dir(out, "simulated", m) / "apps.parquet"),
            m,
        )
        for m in done
    ]
    pl.concat(tables).write_parquet(out / "comparison.parquet")
    seeds_path = out / SEEDS_FILE
    if sim_seeds and not seeds_path.is_file():
        with console.status(f"simulating {sim_seeds} seeds of the scenario"):
            seed_changes(scenario, sim_seeds).write_parquet(seeds_path)
    return plot_figure5(out, out / "figure5.png")


def _run_live(workload, scenario, mode, out, root, parent, console):
    n = workload.n_apps
    progress = LoggedProgress(
        TextColumn(f"live {mode}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("apps  {task.fields[hours]:.1f} h of trace time"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task("", total=n, hours=0.0)

    def on_period(now, state) -> None:
        ended = int(((state.app_state == DONE) | (state.app_state == REJECTED)).sum())
        progress.update(task, completed=ended, hours=now / 3600.0)

    began = time.monotonic()
    with progress:
        result = LiveRun(workload, scenario, mode, out, root, parent, on_period).run()
    console.print(f"{mode}: {n} applications live in {time.monotonic() - began:.0f} s")
    return result
