"""Command line: parse, build by name, run. No logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reclaim.errors import ReclaimError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Simulate and compare cluster resource-shaping and placement policies on real traces.",
)
traces_app = typer.Typer(no_args_is_help=True, help="Read real traces into the canonical store.")
app.add_typer(traces_app, name="traces")
console = Console(stderr=True)


@traces_app.command("import")
def traces_import(
    fmt: Annotated[
        str,
        typer.Argument(
            help="Trace format: bitbrains, alibaba2017, alibaba2018, azure2019, google2011-derived."
        ),
    ],
    src: Annotated[Path, typer.Argument(help="Trace folder or file.")],
    out: Annotated[Path, typer.Option("-o", "--output", help="Store directory to write.")],
) -> None:
    """Import a trace into a canonical Parquet store and print what was kept and filtered."""
    from reclaim.traces.importer import import_trace, print_report

    print_report(import_trace(fmt, src, out), Console())


@app.command()
def simulate(
    jobs: Annotated[
        Path | None,
        typer.Option(help="Store whose jobs become applications [shipped alibaba2017]."),
    ] = None,
    shapes: Annotated[
        list[Path] | None,
        typer.Option(
            help="Stores whose usage series become usage shapes (repeat) [shipped samples]."
        ),
    ] = None,
    hosts: Annotated[str, typer.Option(help="Cluster as COUNTxCORESgMEMg, pools joined by +.")] = (
        "250x32c128g"
    ),
    apps: Annotated[int, typer.Option(min=1, help="Applications to sample.")] = 3000,
    arrival_days: Annotated[
        float | None,
        typer.Option(
            help="Spread arrivals over this many days [the paper's rate: 90 d per 150k apps]."
        ),
    ] = None,
    stop_days: Annotated[
        float | None, typer.Option(help="Stop the simulation at this day.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the workload sampler.")] = 0,
    elastic_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of applications that are elastic.")
    ] = 0.6,
    controller: Annotated[str, typer.Option(help="Shaping controller by name.")] = "reservation",
    placement: Annotated[
        str,
        typer.Option(
            help="Placement plugins: a name, 'a:w,b:w' (weighted) or 'a>b' (lexicographic)."
        ),
    ] = "best-fit",
    output: Annotated[
        Path,
        typer.Option("-o", "--output", help="Directory for apps/timeline Parquet and summary."),
    ] = Path("results/simulate"),
) -> None:
    """Simulate a workload sampled from real traces on a cluster and print the summary."""
    from reclaim.report.console import SimProgress, summary_table, workload_table
    from reclaim.report.plots import plot_timeline
    from reclaim.sim.run import RunSettings
    from reclaim.sim.run import simulate as run_simulation
    from reclaim.state.tables import HostTable
    from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores

    capacity = HostTable.parse(hosts).capacity  # a bad spec fails before any work
    default_jobs, default_shapes = default_stores()
    days = arrival_days if arrival_days is not None else 90.0 * apps / 150_000
    spec = WorkloadSpec(n_apps=apps, seed=seed, horizon=days * 86400.0, elastic_share=elastic_share)
    workload, report = build_workload(spec, jobs or default_jobs, shapes or default_shapes)
    out = Console()
    out.print(workload_table(report, capacity))
    settings = RunSettings(
        hosts=hosts,
        controller=controller,
        placement=placement,
        horizon_s=None if stop_days is None else stop_days * 86400.0,
    )
    with SimProgress(console) as progress:
        result = run_simulation(
            workload, settings, on_tick=progress, extra={"workload": vars(spec)}
        )
    result.write(output)
    title = f"{controller} / {placement} on {hosts}: {apps:,} applications, seed {seed}"
    plot_timeline(result.timeline, capacity, output / "timeline.png", title)
    out.print(summary_table(result, title))
    out.print(f"results: {output}/apps.parquet, timeline.parquet, summary.json, timeline.png")


def main() -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, no traceback.

    Typer handles bad options itself (usage message, exit 2); our own errors are ReclaimError.
    """
    try:
        app()
    except ReclaimError as err:
        console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)
