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
forecast_app = typer.Typer(no_args_is_help=True, help="Evaluate forecasters on real usage series.")
app.add_typer(forecast_app, name="forecast")
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


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@forecast_app.command("eval")
def forecast_eval(
    store: Annotated[
        list[Path] | None,
        typer.Option(
            help="Trace store to evaluate on (repeat) [shipped bitbrains and google2011-derived samples]."
        ),
    ] = None,
    models: Annotated[
        str, typer.Option(help="Forecasters by name, comma-separated.")
    ] = "naive,arima,gp-exp,gp-rbf,conformal",
    history: Annotated[str, typer.Option(help="History sizes h, comma-separated.")] = "10,20,40",
    resources: Annotated[str, typer.Option(help="cpu, mem or both.")] = "mem,cpu",
    series: Annotated[
        int | None, typer.Option(min=1, help="At most this many series per store [all].")
    ] = None,
    origins: Annotated[
        int, typer.Option(min=1, help="Consecutive one-step forecasts per series.")
    ] = 200,
    coverage: Annotated[
        float, typer.Option(min=0.5, max=0.9999, help="Coverage the conformal wrapper targets.")
    ] = 0.99,
    conformal_base: Annotated[
        str, typer.Option(help="Forecaster the conformal wrapper calibrates.")
    ] = "gp-exp",
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory for parts, summary and plots.")
    ] = Path("results/forecast"),
) -> None:
    """One-step rolling forecasts on real series: error, calibration, sharpness and speed.

    Finished cells are kept in OUTPUT/parts; rerunning the same command resumes.
    """
    import reclaim.forecast  # noqa: F401  (registers the built-in forecasters)
    from reclaim import registry
    from reclaim.errors import ReclaimError as UserError
    from reclaim.forecast.eval_run import load_errors, run_evaluation
    from reclaim.forecast.evaluate import EvalTask, model_label
    from reclaim.report.console import forecast_tables
    from reclaim.report.forecast_plots import plot_calibration, plot_error_boxplots
    from reclaim.traces.store import load_store, sample_path

    paths = store or [sample_path("bitbrains"), sample_path("google2011-derived")]
    stores = {p.name: load_store(p) for p in paths}
    known = registry.names("forecaster")
    chosen = []
    for name in _csv(models):
        if name not in known:
            raise UserError(f"unknown forecaster {name!r} (known: {', '.join(known)})")
        params = {"base": conformal_base, "coverage": coverage} if name == "conformal" else {}
        chosen.append((name, params))
    try:
        histories = [int(h) for h in _csv(history)]
    except ValueError:
        raise UserError(
            f"--history: expected whole numbers like 10,20,40, got {history!r}"
        ) from None
    res = _csv(resources)
    if not set(res) <= {"cpu", "mem"} or not res:
        raise UserError(f"--resources: expected cpu, mem or both, got {resources!r}")
    summary = run_evaluation(stores, chosen, histories, res, output, series, origins, console)
    out = Console(width=max(Console().width, 130))  # a dozen numeric columns; pipes get 80
    for table in forecast_tables(summary):
        out.print(table)
    tasks = [
        EvalTask(s, r, model_label(n, p), h)
        for s, r in summary.select("store", "resource").unique(maintain_order=True).rows()
        for n, p in chosen
        for h in histories
    ]
    plot_error_boxplots(load_errors(output / "parts", tasks), output / "errors.png")
    plot_calibration(summary, output / "calibration.png")
    out.print(f"results: {output}/summary.parquet, parts/, errors.png, calibration.png")


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
    controller: Annotated[
        str,
        typer.Option(help="Shaping controller: reservation, optimistic, pessimistic or vpa."),
    ] = "reservation",
    forecaster: Annotated[
        str | None,
        typer.Option(help="Forecaster for controllers that need one (e.g. oracle, gp-exp)."),
    ] = None,
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
        forecaster=forecaster,
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


@app.command()
def report(
    results: Annotated[Path, typer.Argument(help="Result store written by an experiment.")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Directory for plots and index.html [RESULTS/report]."),
    ] = None,
) -> None:
    """Tables, plots and an HTML page of a result store, with the paper's headline numbers."""
    from reclaim.report.experiment_report import console_output, write_report

    done = write_report(results, output or results / "report")
    out = Console(width=max(Console().width, 160))  # eleven columns; pipes get 80
    for item in console_output(done):
        out.print(item)
    out.print(f"report: {done.html}")


def main() -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, no traceback.

    Typer handles bad options itself (usage message, exit 2); our own errors are ReclaimError.
    """
    try:
        app()
    except ReclaimError as err:
        console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)
