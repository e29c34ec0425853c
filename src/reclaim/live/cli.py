"""``reclaim live run``: the shaping paper's section 5 on this machine's cgroups (a typer sub-app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reclaim.cli_options import number_option, output_option, report_console
from reclaim.validation import SEED, Quantity, count

live_app = typer.Typer(
    no_args_is_help=True,
    help="Run a workload as real processes under the agent, and compare with the simulator.",
)


@live_app.command("run")
def run(
    output: Annotated[
        Path,
        output_option("Results directory (resumes what is missing)."),
    ] = Path("results/live"),
    apps: Annotated[
        int, number_option(count("applications", 100_000), help="Applications (the paper: 100).")
    ] = 100,
    seed: Annotated[int, number_option(SEED, help="Seed of the workload sampler.")] = 0,
    modes: Annotated[
        str, typer.Option(help="Modes to run, comma-separated: reservation, shaped.")
    ] = "reservation,shaped",
    time_factor: Annotated[
        float,
        number_option(
            Quantity("trace seconds per wall second", ge=1, le=1e6),
            help="Trace seconds per wall second.",
        ),
    ] = 20.0,
    cores: Annotated[
        float,
        number_option(
            Quantity("cores", ge=0.05, le=65_536), help="Cores the 8-core host becomes here."
        ),
    ] = 1.6,
    mem_gib: Annotated[
        float,
        number_option(
            Quantity("GiB", ge=0.25, le=float(1 << 20)), help="GiB the 64 GB host becomes here."
        ),
    ] = 8.0,
    sim_seeds: Annotated[
        int,
        number_option(
            count("workloads", 1_000_000, least=0),
            help="Workloads the simulator replays beside the live one.",
        ),
    ] = 10,
    parent: Annotated[
        str, typer.Option(help="Parent cgroup of the run (created, and removed after).")
    ] = "reclaim-live",
    cgroup_root: Annotated[Path, typer.Option(help="Where cgroups are mounted.")] = Path(
        "/sys/fs/cgroup"
    ),
) -> None:
    """Each mode live (reservations, then pessimistic GP shaping), each replayed in the
    simulator, then Figure 5 and the paper's numbers beside both. Needs root and writable
    cgroups; about 20 minutes per mode with the defaults."""
    from reclaim.errors import ReclaimError
    from reclaim.live.launcher import MODES, Interrupted
    from reclaim.live.report import live_tables
    from reclaim.live.scenario import LiveScenario
    from reclaim.live.session import run_session

    chosen = [m.strip() for m in modes.split(",") if m.strip()]
    unknown = sorted(set(chosen) - set(MODES))
    if unknown or not chosen:
        raise typer.BadParameter(
            f"expected modes from {', '.join(MODES)}, got {modes!r}", param_hint="--modes"
        )
    scenario = LiveScenario(
        n_apps=apps, seed=seed, time_factor=time_factor, live_cores=cores, live_mem_gib=mem_gib
    )
    console = Console(stderr=True)
    try:
        figure = run_session(output, scenario, chosen, cgroup_root, parent, console, sim_seeds)
    except Interrupted:
        raise ReclaimError(
            "interrupted: every launched process was killed and the parent's limits restored; "
            "run again to resume"
        ) from None
    except PermissionError as err:
        raise ReclaimError(f"cgroups are not writable here ({err}): run as root") from None
    out = report_console()
    for table in live_tables(output):
        out.print(table)
    out.print(f"results: {output}/<mode>, sim-<mode>, comparison.parquet, {figure}")
