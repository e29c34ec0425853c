"""Command line: parse, build by name, run. No logic lives here."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from reclaim.agent.cli import agent_app
from reclaim.cli_options import (
    csv_list,
    number_list,
    number_option,
    output_option,
    placer_option,
    report_console,
    usage_stores,
)
from reclaim.errors import ReclaimError
from reclaim.lifetime.cli import lifetime_app
from reclaim.live.cli import live_app
from reclaim.rl.cli import place_app, rl_app
from reclaim.validation import (
    APPS,
    CONFIRM_RUNS,
    DAYS,
    HISTORY,
    REPEATS,
    SEED,
    SHARE,
    WORKERS,
    Quantity,
    count,
)

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Simulate and compare cluster resource-shaping and placement policies on real traces.",
)


def _print_version(asked: bool) -> None:
    if asked:
        from reclaim import __version__

        typer.echo(f"reclaim {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    """Simulate and compare cluster resource-shaping and placement policies on real traces."""


traces_app = typer.Typer(no_args_is_help=True, help="Read real traces into the canonical store.")
app.add_typer(traces_app, name="traces")
forecast_app = typer.Typer(no_args_is_help=True, help="Evaluate forecasters on real usage series.")
app.add_typer(forecast_app, name="forecast")
experiment_app = typer.Typer(
    no_args_is_help=True, help="Run the experiments behind the papers' figures (grids x seeds)."
)
app.add_typer(experiment_app, name="experiment")
app.add_typer(agent_app, name="agent")
app.add_typer(live_app, name="live")
app.add_typer(place_app, name="place")
app.add_typer(rl_app, name="rl")
app.add_typer(lifetime_app, name="lifetime")
console = Console(stderr=True)


@traces_app.command("import")
def traces_import(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT",
            help="Trace format, e.g. bitbrains or google2019-usage (an unknown name lists them all;"
            " docs/traces.md describes each).",
        ),
    ],
    src: Annotated[Path, typer.Argument(metavar="SOURCE", help="Trace folder or file.")],
    out: Annotated[Path, output_option("Store directory to write.")],
    force: Annotated[
        bool, typer.Option(help="Replace a store of another format at the output.")
    ] = False,
) -> None:
    """Import a trace into a canonical Parquet store and print what was kept and filtered."""
    from reclaim.traces.importer import import_trace, print_report

    print_report(import_trace(fmt, src, out, force), Console())


@forecast_app.command("eval")
def forecast_eval(
    store: Annotated[
        list[Path] | None,
        typer.Option(
            help="Trace store to evaluate on, repeatable (default: shipped bitbrains and google2011-derived samples)."
        ),
    ] = None,
    models: Annotated[
        str, typer.Option(help="Forecasters by name, comma-separated.")
    ] = "naive,arima,gp-exp,gp-rbf,conformal",
    history: Annotated[str, typer.Option(help="History sizes h, comma-separated.")] = "10,20,40",
    resources: Annotated[str, typer.Option(help="cpu, mem or both.")] = "mem,cpu",
    series: Annotated[
        int | None,
        number_option(
            count("series", 10_000_000), help="At most this many series per store (default: all)."
        ),
    ] = None,
    origins: Annotated[
        int, number_option(REPEATS, help="Consecutive one-step forecasts per series.")
    ] = 200,
    coverage: Annotated[
        float,
        number_option(
            Quantity("coverage", ge=0.5, le=0.9999), help="Coverage the conformal wrapper targets."
        ),
    ] = 0.99,
    conformal_base: Annotated[
        str, typer.Option(help="Forecaster the conformal wrapper calibrates.")
    ] = "gp-exp",
    output: Annotated[
        Path,
        output_option("Directory for parts, summary and plots."),
    ] = Path("results/forecast"),
) -> None:
    """One-step rolling forecasts on real series: error, calibration, sharpness and speed.

    Finished cells are kept in OUTPUT/parts; rerunning the same command resumes.
    """
    from reclaim import registry
    from reclaim.errors import ReclaimError as UserError
    from reclaim.forecast.eval_run import load_errors, run_evaluation
    from reclaim.forecast.evaluate import EvalTask, model_label
    from reclaim.forecast.report import forecast_tables, plot_calibration, plot_error_boxplots
    from reclaim.traces.store import load_store

    paths = usage_stores(store)
    stores = {p.name: load_store(p) for p in paths}
    known = registry.names("forecaster")
    chosen = []
    for name in csv_list(models):
        if name not in known:
            raise UserError(f"unknown forecaster {name!r} (known: {', '.join(known)})")
        params = {"base": conformal_base, "coverage": coverage} if name == "conformal" else {}
        chosen.append((name, params))
    if not chosen:
        raise UserError(f"--models: expected forecaster names like naive,arima, got {models!r}")
    histories = number_list(history, HISTORY, "--history", example="10,20,40")
    res = csv_list(resources)
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
    ctx: typer.Context,
    controller: Annotated[
        str | None,
        typer.Option(
            help="Shaping controller: reservation, optimistic, pessimistic or vpa (default: "
            "reservation; with no option at all, the headline comparison runs)."
        ),
    ] = None,
    forecaster: Annotated[
        str | None,
        typer.Option(help="Forecaster for controllers that need one (e.g. oracle, gp-exp)."),
    ] = None,
    jobs: Annotated[
        Path | None,
        typer.Option(help="Store whose jobs become applications (default: shipped alibaba2017)."),
    ] = None,
    shapes: Annotated[
        list[Path] | None,
        typer.Option(
            help="Stores whose usage series become usage shapes, repeatable (default: shipped samples)."
        ),
    ] = None,
    pairing: Annotated[
        str | None,
        typer.Option(
            help="Store of real tasks beside their limits whose usage/request ratios calibrate "
            "the shapes (default: shipped google2019-usage; 'none': the shapes' own levels)."
        ),
    ] = None,
    hosts: Annotated[str, typer.Option(help="Cluster as COUNTxCORESgMEMg, pools joined by +.")] = (
        "250x32c128g"
    ),
    apps: Annotated[int, number_option(APPS, help="Applications to sample.")] = 3000,
    arrival_days: Annotated[
        float | None,
        number_option(
            DAYS,
            help="Spread arrivals over this many days (default: the paper's rate per core, "
            "90 d per 150k apps on 250 hosts of 32 cores).",
        ),
    ] = None,
    stop_days: Annotated[
        float | None, number_option(DAYS, help="Stop the simulation at this day.")
    ] = None,
    seed: Annotated[int, number_option(SEED, help="Seed of the workload sampler.")] = 0,
    elastic_share: Annotated[
        float, number_option(SHARE, help="Share of applications that are elastic.")
    ] = 0.6,
    placement: Annotated[
        str,
        placer_option("Placement plugins: a name, 'a:w,b:w' (weighted) or 'a>b' (lexicographic)."),
    ] = "best-fit",
    output: Annotated[
        Path | None,
        output_option("Results directory (default: results/simulate, or results/headline)."),
    ] = None,
) -> None:
    """Simulate a workload sampled from real traces on a cluster and print the summary.

    With no option but --output: the headline comparison (reservation, VPA, pessimistic shaping
    with GP and with conformal GP) on the shipped sample, with its table, plots and HTML report.
    """
    given = [
        n for n in ctx.params if n != "output" and ctx.get_parameter_source(n).name != "DEFAULT"
    ]
    if not given:
        _headline(output or Path("results/headline"))
        return
    from reclaim.api import Sample
    from reclaim.api import simulate as run_simulation
    from reclaim.core.tables import HostTable
    from reclaim.report.plots import plot_timeline
    from reclaim.sim.console import (
        SimProgress,
        overload_warnings,
        summary_table,
        workload_table,
    )

    controller = controller or "reservation"
    output = output or Path("results/simulate")
    sample = Sample(
        apps=apps,
        seed=seed,
        elastic_share=elastic_share,
        arrival_days=arrival_days,
        jobs=jobs,
        shapes=tuple(shapes) if shapes else None,
        pairing=pairing,
    )
    out = Console()

    def show(workload, report) -> None:
        capacity = HostTable.parse(hosts).capacity
        out.print(workload_table(report, capacity, workload))
        for warning in overload_warnings(report, capacity):
            out.print(f"[yellow]warning:[/] {warning}")

    with SimProgress(console) as progress:
        result = run_simulation(
            controller,
            forecaster,
            hosts=hosts,
            placement=placement,
            sample=sample,
            stop_days=stop_days,
            on_tick=progress,
            on_sample=show,
        )
    result.write(output)
    title = f"{controller} / {placement} on {hosts}: {apps:,} applications, seed {seed}"
    plot_timeline(result.timeline, HostTable.parse(hosts).capacity, output / "timeline.png", title)
    out.print(summary_table(result, title))
    out.print(f"results: {output}/apps.parquet, timeline.parquet, summary.json, timeline.png")


def _headline(output: Path) -> None:
    """The main job: the shipped ``headline`` experiment at its demo scale, then its report."""
    from reclaim.experiments import load_spec, run_experiment
    from reclaim.report.experiment_report import console_output, write_report

    spec = load_spec("headline")
    console.print(f"[bold]{spec.description}[/]", highlight=False)
    outcome = run_experiment(spec, "demo", output, console=console)
    done = write_report(outcome.out, outcome.out / "report")
    out = report_console()
    for item in console_output(done):
        out.print(item)
    out.print(f"results: {outcome.out}/runs.parquet; report: {done.html}")


@app.command()
def report(
    results: Annotated[
        Path, typer.Argument(metavar="RESULTS", help="Result store written by an experiment.")
    ],
    output: Annotated[
        Path | None,
        output_option("Directory for plots and index.html (default: RESULTS/report)."),
    ] = None,
) -> None:
    """Tables, plots and an HTML page of a result store, with the paper's headline numbers;
    for a ``reclaim live run`` directory, Figure 5 and the live-vs-simulated tables."""
    from reclaim.report.experiment_report import console_output, write_report

    if (results / "live.json").is_file():
        from reclaim.live.report import live_tables, plot_figure5

        out = report_console()
        for table in live_tables(results):
            out.print(table)
        folder = output or results
        folder.mkdir(parents=True, exist_ok=True)
        out.print(f"figure 5: {plot_figure5(results, folder / 'figure5.png')}")
        return

    done = write_report(results, output or results / "report")
    out = report_console()
    for item in console_output(done):
        out.print(item)
    out.print(f"report: {done.html}")


@experiment_app.command("run")
def experiment_run(
    spec: Annotated[
        str, typer.Argument(metavar="SPEC", help="Spec file, or the name of a shipped spec.")
    ],
    scale: Annotated[
        str | None,
        typer.Option(help="Scale of the spec to run (default: small, if the spec has it)."),
    ] = None,
    output: Annotated[
        Path | None,
        output_option("Results directory (default: results/SPEC-SCALE)."),
    ] = None,
    backend: Annotated[str, typer.Option(help="local (process pool) or ray.")] = "local",
    jobs: Annotated[
        int | None, number_option(WORKERS, help="Local worker processes (default: one per CPU).")
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to join (default: start Ray on this machine).")
    ] = None,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", "-y", help=f"Start without asking, even above {CONFIRM_RUNS:,} runs."
        ),
    ] = False,
) -> None:
    """Run every run of SPEC at one scale; rerunning the same command resumes."""
    from reclaim.experiments import load_spec, run_experiment

    loaded = load_spec(spec)
    outcome = run_experiment(
        loaded,
        scale,
        output,
        backend,
        jobs,
        ray_address,
        console=console,
        confirm=None if yes else _confirm_big,
    )
    ran = outcome.runs - outcome.resumed
    out = Console()
    out.print(
        f"{outcome.runs} runs at scale {outcome.scale!r}: {ran} ran, {outcome.resumed} resumed"
    )
    for line in loaded.headline(outcome.table):
        out.print(line, highlight=False)
    out.print(f"results: {outcome.out}/runs.parquet, runs/<run_id>/")
    out.print(f"next: reclaim report {outcome.out}")


def _confirm_big(runs: int, estimate: str) -> None:
    """Ask before more than CONFIRM_RUNS runs start; without a terminal to ask, refuse."""
    if runs <= CONFIRM_RUNS:
        return
    if not sys.stdin.isatty():
        raise ReclaimError(
            f"{runs:,} runs to start ({estimate}), more than {CONFIRM_RUNS:,}: pass --yes"
        )
    if not typer.confirm(f"start {runs:,} runs ({estimate})?", err=True):
        raise ReclaimError("not started")


@experiment_app.command("list")
def experiment_list() -> None:
    """The shipped experiment specs, with their runs per scale."""
    from rich.table import Table

    from reclaim.experiments import shipped_specs

    table = Table(title="shipped experiments", title_justify="left")
    for column in ("spec", "description", "runs per scale"):
        table.add_column(column)
    for spec in shipped_specs():
        counts = ", ".join(f"{name} {len(spec.runs(name))}" for name in spec.scales)
        table.add_row(spec.name, spec.description, counts)
    Console().print(table)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)


def main() -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, no traceback.

    Typer handles bad options itself (usage message, exit 2); our own errors are ReclaimError.
    SIGTERM unwinds like Ctrl-C does, so that worker pools and temporary folders are cleaned up
    (exit 143, as a process killed by SIGTERM); SIGINT interrupts even where the shell that
    started us in the background set it to be ignored.
    """
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        app(prog_name="reclaim")
    except ReclaimError as err:
        console.print(f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)
