"""Command line: parse, build by name, run. No logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from reclaim.agent.cli import agent_app
from reclaim.cli_options import chart_file, output_option, report_console
from reclaim.errors import ReclaimError
from reclaim.live.cli import live_app

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


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


UsageStores = Annotated[
    list[Path] | None,
    typer.Option(
        help="Store of usage series (a folder, or a shipped sample's name: bitbrains, "
        "google2011-derived, google2019-usage), repeatable (default: shipped bitbrains and "
        "google2011-derived samples)."
    ),
]
Scale = Annotated[
    str,
    typer.Option(
        help="How usage becomes units: auto (each workload's own limit where the store has "
        "limits, else the peak quantile), limit or peak (docs/rl.md)."
    ),
]
Loads = Annotated[str, typer.Option(help="Average cluster loads in %, comma-separated.")]


def _usage_stores(given: list[Path] | None) -> list[Path]:
    """The stores given (a path that is no folder but a shipped sample's name is that sample),
    or the shipped real samples."""
    from reclaim.traces.store import sample_path

    if not given:
        return [sample_path("bitbrains"), sample_path("google2011-derived")]
    return [p if p.is_dir() or len(p.parts) != 1 else _sample_or(p) for p in given]


def _sample_or(path: Path) -> Path:
    """The shipped sample named ``path``, or ``path`` itself (which then fails as no store)."""
    from reclaim.errors import TraceError
    from reclaim.traces.store import sample_path

    try:
        return sample_path(path.name)
    except TraceError:
        return path


def _loads(text: str) -> list[float]:
    """``--load`` percentages as fractions, or a one-line error."""
    try:
        loads = [float(x) / 100 for x in _csv(text)]
    except ValueError:
        raise ReclaimError(f"--load: expected percentages like 30,50,80, got {text!r}") from None
    if not loads or min(loads) <= 0:
        raise ReclaimError(f"--load: expected positive percentages, got {text!r}")
    return loads


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
        int | None, typer.Option(min=1, help="At most this many series per store (default: all).")
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
    from reclaim.forecast.plots import plot_calibration, plot_error_boxplots
    from reclaim.sim.console import forecast_tables
    from reclaim.traces.store import load_store

    paths = _usage_stores(store)
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
        histories = []
    if not histories or min(histories) < 1:
        raise UserError(
            f"--history: expected whole numbers of at least 1 like 10,20,40, got {history!r}"
        )
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
    apps: Annotated[int, typer.Option(min=1, help="Applications to sample.")] = 3000,
    arrival_days: Annotated[
        float | None,
        typer.Option(
            help="Spread arrivals over this many days (default: the paper's rate per core, "
            "90 d per 150k apps on 250 hosts of 32 cores)."
        ),
    ] = None,
    stop_days: Annotated[
        float | None, typer.Option(help="Stop the simulation at this day.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the workload sampler.")] = 0,
    elastic_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of applications that are elastic.")
    ] = 0.6,
    placement: Annotated[
        str,
        typer.Option(
            help="Placement plugins: a name, 'a:w,b:w' (weighted) or 'a>b' (lexicographic)."
        ),
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
    controller = controller or "reservation"
    from reclaim.api import Sample
    from reclaim.core.tables import HostTable
    from reclaim.report.plots import plot_timeline
    from reclaim.sim.console import (
        SimProgress,
        overload_warnings,
        summary_table,
        workload_table,
    )
    from reclaim.sim.run import RunSettings, build_policies
    from reclaim.sim.run import simulate as run_simulation

    for name, value in (("--arrival-days", arrival_days), ("--stop-days", stop_days)):
        if value is not None and not value > 0:
            raise typer.BadParameter(
                f"must be a positive number of days, got {value:g}", param_hint=name
            )
    settings = RunSettings(
        hosts=hosts,
        controller=controller,
        forecaster=forecaster,
        placement=placement,
        horizon_s=None if stop_days is None else stop_days * 86400.0,
    )
    # an unknown name, or a controller without the forecaster it needs, fails before any work
    _, built_forecaster = build_policies(settings)
    if forecaster is not None and built_forecaster is None:
        raise typer.BadParameter(
            f"controller {controller!r} uses no forecaster; drop --forecaster {forecaster}",
            param_hint="--forecaster",
        )
    output = output or Path("results/simulate")
    capacity = HostTable.parse(hosts).capacity  # a bad spec fails before any work
    sample = Sample(
        apps=apps,
        seed=seed,
        elastic_share=elastic_share,
        arrival_days=arrival_days,
        jobs=jobs,
        shapes=tuple(shapes) if shapes else None,
        pairing=pairing,
    )
    workload, report, spec, paired = sample.build(hosts)
    out = Console()
    out.print(workload_table(report, capacity, workload))
    for warning in overload_warnings(report, capacity):
        out.print(f"[yellow]warning:[/] {warning}")
    with SimProgress(console) as progress:
        result = run_simulation(
            workload,
            settings,
            on_tick=progress,
            extra={"workload": vars(spec) | {"pairing": None if paired is None else str(paired)}},
        )
    result.write(output)
    title = f"{controller} / {placement} on {hosts}: {apps:,} applications, seed {seed}"
    plot_timeline(result.timeline, capacity, output / "timeline.png", title)
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
        int | None, typer.Option(min=1, help="Local worker processes (default: one per CPU).")
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to join (default: start Ray on this machine).")
    ] = None,
) -> None:
    """Run every run of SPEC at one scale; rerunning the same command resumes."""
    from reclaim.experiments import load_spec, run_experiment

    outcome = run_experiment(
        load_spec(spec), scale, output, backend, jobs, ray_address, console=console
    )
    ran = outcome.runs - outcome.resumed
    out = Console()
    out.print(
        f"{outcome.runs} runs at scale {outcome.scale!r}: {ran} ran, {outcome.resumed} resumed"
    )
    out.print(f"results: {outcome.out}/runs.parquet, runs/<run_id>/")
    out.print(f"next: reclaim report {outcome.out}")


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


Background = Annotated[
    int,
    typer.Option(
        min=0,
        help="Noise: every machine runs an unknown background process of 0..N units per "
        "resource, uniform per step (the paper's Table 2).",
    ),
]
Jitter = Annotated[
    int,
    typer.Option(
        min=0, help="Noise: every workload's usage moved by up to N units per step (Table 2)."
    ),
]


place_app = typer.Typer(no_args_is_help=True, help="Place time-varying workloads (TVW-RL).")
app.add_typer(place_app, name="place")


@place_app.command("eval")
def place_eval(
    store: UsageStores = None,
    load: Loads = "30,50,80",
    policies: Annotated[
        str,
        typer.Option(
            help="Placers, comma-separated; 'name@current' or 'name@peak' sets what it sees."
        ),
    ] = "best-fit,first-fit,tetris,corp-packing",
    sequences: Annotated[int, typer.Option(min=1, help="Workload sequences per load.")] = 5,
    jobs: Annotated[int, typer.Option(min=1, help="Workloads per sequence.")] = 200,
    machines: Annotated[int, typer.Option(min=1, help="Machines in the cluster.")] = 10,
    units: Annotated[int, typer.Option(min=1, help="Units of each resource per machine.")] = 8,
    max_units: Annotated[
        int, typer.Option(min=1, help="Units a workload's usage is scaled to at most.")
    ] = 6,
    scale: Scale = "auto",
    seed: Annotated[int, typer.Option(help="Seed of the sequences.")] = 0,
    background: Background = 0,
    jitter: Jitter = 0,
    output: Annotated[
        Path,
        output_option("Directory for Parquet results and charts."),
    ] = Path("results/place"),
) -> None:
    """TVW-RL's evaluation: utilisation, fragmentation, overshoot, machines used and wait of each
    placer at each load, on real usage series; prints the table and draws the bar charts."""
    from reclaim.tvw.evaluate import Policy, run_evaluation
    from reclaim.tvw.report import metrics_table, plot_operational, pool_table
    from reclaim.tvw.scenario import ScenarioSpec

    loads = _loads(load)
    chosen = [Policy.parse(p) for p in _csv(policies)]
    spec = ScenarioSpec(
        machines=machines, units=units, jobs=jobs, max_units=max_units, scale=scale,
        background=background, jitter=jitter,
    )  # fmt: skip
    paths = _usage_stores(store)
    pools, summary = run_evaluation(paths, spec, loads, chosen, sequences, seed, output, console)
    out = Console(width=max(Console().width, 120))  # nine columns; pipes get 80
    out.print(pool_table([p.report for p in pools]))
    charts = [plot_operational(summary, p.name, output / f"{p.name}.png") for p in pools]
    for pool in pools:
        out.print(metrics_table(summary, pool.name))
    out.print(
        f"results: {output}/runs.parquet, summary.parquet, " + ", ".join(c.name for c in charts)
    )


rl_app = typer.Typer(
    no_args_is_help=True,
    help="Learned placement of time-varying workloads (needs the rl extra: pip install 'reclaim\\[rl]').",
)
app.add_typer(rl_app, name="rl")
Classes = Annotated[
    str,
    typer.Option(
        help="TVW-RL's equivalence classes: none (one class), temporal or dtw (re-predicted as "
        "workloads run)."
    ),
]


TrainingLoad = Annotated[float, typer.Option(min=1, max=100, help="Average cluster load in %.")]


@rl_app.command("train")
def rl_train(
    store: UsageStores = None,
    load: TrainingLoad = 50,
    jobs: Annotated[int, typer.Option(min=1, help="Workloads per episode.")] = 200,
    iterations: Annotated[int, typer.Option(min=1, help="Policy updates.")] = 2000,
    trajectories: Annotated[int, typer.Option(min=1, help="Episodes per update.")] = 20,
    sequences: Annotated[int, typer.Option(min=1, help="Training sequences.")] = 100,
    lr: Annotated[float, typer.Option(help="Adam's learning rate.")] = 1e-3,
    seed: Annotated[int, typer.Option(help="Seed of the network, sequences and sampling.")] = 0,
    checkpoint_every: Annotated[int, typer.Option(min=1, help="Iterations per checkpoint.")] = 10,
    resume: Annotated[bool, typer.Option(help="Continue from the output's checkpoint.")] = False,
    agent: Annotated[
        str, typer.Option(help="tvw-rl (placement) or deeprm (DeepRM's job selection).")
    ] = "tvw-rl",
    k_c: Annotated[float, typer.Option(help="TVW-RL contention weight K_c.")] = 0.1,
    k_u: Annotated[float, typer.Option(help="TVW-RL under-utilisation exponent K_u.")] = 3.0,
    k_o: Annotated[float, typer.Option(help="TVW-RL overshoot penalty K_o.")] = 30000.0,
    k_w: Annotated[float, typer.Option(help="TVW-RL wait weight K_w.")] = 50.0,
    classes: Classes = "none",
    scale: Scale = "auto",
    background: Background = 0,
    jitter: Jitter = 0,
    vectorised: Annotated[
        bool,
        typer.Option(
            help="TVW-RL at the paper's volume: every training sequence in every iteration, "
            "episodes stepped together in compiled code (docs/rl.md)."
        ),
    ] = False,
    output: Annotated[
        Path,
        output_option("Directory for checkpoint.pt and policy.npz."),
    ] = Path("results/rl"),
) -> None:
    """Train TVW-RL's policy (or DeepRM's selector) with REINFORCE; checkpoints, resumes, writes
    policy.npz. Vary --k-u/--k-o/--k-c for the paper's ablations."""
    from reclaim.rl.reinforce import POLICY, TrainConfig, run_training
    from reclaim.rl.rewards import Weights
    from reclaim.rl.running_classes import check_classes

    check_classes(classes)
    config = TrainConfig(iterations, trajectories, sequences, lr, seed, checkpoint_every)
    paths = _usage_stores(store)
    weights = Weights(k_c, k_u, k_o, k_w) if agent == "tvw-rl" else None
    run_training(
        paths,
        load / 100,
        jobs,
        config,
        output,
        resume,
        console,
        agent,
        weights,
        classes,
        vectorised,
        scale,
        background,
        jitter,
    )
    from reclaim.rl.report import plot_curves

    chart = plot_curves([output / POLICY], output / "curve.png")
    Console().print(f"policy: {output / POLICY}, training curve: {chart}")


@rl_app.command("retrain")
def rl_retrain(
    policy: Annotated[Path, typer.Argument(help="A trained policy.npz (a shipped one: its path).")],
    store: Annotated[
        list[Path] | None,
        typer.Option(help="Its stores' folders, if they are not the shipped samples it names."),
    ] = None,
    iterations: Annotated[
        int | None,
        typer.Option(min=1, help="Iterations to run (default: as many as the policy ran)."),
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue from the output's checkpoint.")] = False,
    output: Annotated[
        Path,
        output_option("Directory for checkpoint.pt and policy.npz."),
    ] = Path("results/rl-retrain"),
) -> None:
    """Train a policy again from its recorded settings, data and seed; say whether the curve
    (and, at full length, the weights) are the recorded ones bit for bit. Exits 1 if not."""
    from reclaim.rl.retrain import NotReproduced, retrain

    found = retrain(
        policy, output, _usage_stores(store) if store else None, iterations, resume, console
    )
    curve = "the same" if found.same_curve else "NOT the same"
    Console().print(
        f"{found.iterations} of {found.recorded} iterations: mean returns {curve} as recorded"
    )
    if found.same_weights is not None:
        weights = "identical bit for bit" if found.same_weights else "NOT identical"
        Console().print(f"weights {weights} to {policy}")
    if not found.reproduced:
        raise NotReproduced(f"{output}: did not reproduce {policy}")


@rl_app.command("curve")
def rl_curve(
    policies: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="POLICY...", help="Trained policy.npz files (default: the shipped ones)."
        ),
    ] = None,
    output: Annotated[
        Path,
        typer.Option(
            "-o", "--output", callback=chart_file, help="Chart to write (.png/.pdf/.svg)."
        ),
    ] = Path("results/rl-curve.png"),
) -> None:
    """The training curve each policy records: its mean episode return at every iteration."""
    from reclaim.rl.evaluate import Learned
    from reclaim.rl.report import plot_curves

    paths = policies or [Path(Learned(name).policy_path) for name in ("tvw-rl", "deeprm")]
    Console().print(f"training curves: {plot_curves(paths, output)}")


def _tvw_rl_policies(paths: list[Path] | None, classes: str) -> list:
    """The TVW-RL placers of ``rl eval``: the shipped policy, or each path given, tagged by its
    folder's name when there are several (names must then differ)."""
    from reclaim.rl.evaluate import Learned

    if not paths:
        return [Learned("tvw-rl", None, classes)]
    tags = [p.resolve().parent.name for p in paths] if len(paths) > 1 else [""]
    if len(set(tags)) < len(tags):
        raise ReclaimError(f"--policy: give each policy its own folder (folders: {tags})")
    return [Learned("tvw-rl", str(p), classes, t) for p, t in zip(paths, tags, strict=True)]


def _paired_table(paired, baseline: str):
    """``rl eval``'s table of paired differences against ``baseline``."""
    from rich.table import Table

    title = "minus Best-Fit" if baseline == "best-fit" else f"minus {baseline}"
    table = Table(
        title=f"TVW-RL {title} on the same sequences: mean [95 % interval], paired t-test p",
        title_justify="left",
    )
    for head in ("store", "load", "policy", "overshoot (pp)", "p", "machines used", "p"):
        table.add_column(head, justify="left" if head in ("store", "policy") else "right")
    for r in paired.iter_rows(named=True):
        cells = [
            f"{r[f'{m}_diff']:+.2f} [{r[f'{m}_diff_lo']:+.2f}, {r[f'{m}_diff_hi']:+.2f}]"
            for m in ("overshoot_pct", "machines_used")
        ]
        table.add_row(
            r["store"], f"{r['load']:.0%}", r["tvw_rl"],
            cells[0], f"{r['overshoot_pct_p']:.2g}", cells[1], f"{r['machines_used_p']:.2g}",
        )  # fmt: skip
    return table


@rl_app.command("eval")
def rl_eval(
    store: UsageStores = None,
    load: Loads = "30,50,80",
    baselines: Annotated[str, typer.Option(help="Heuristic placers, comma-separated.")] = (
        "tetris,best-fit"
    ),
    policy: Annotated[
        list[Path] | None,
        typer.Option(
            help="TVW-RL policy.npz (default: the shipped one); repeatable: each is labelled "
            "by its folder's name and paired against the first."
        ),
    ] = None,
    deeprm: Annotated[
        Path | None, typer.Option(help="DeepRM policy.npz (default: the shipped one).")
    ] = None,
    sequences: Annotated[int, typer.Option(min=1, help="Workload sequences per load.")] = 3,
    jobs: Annotated[int, typer.Option(min=1, help="Workloads per sequence.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the test sequences.")] = 1000,
    classes: Classes = "none",
    background: Background = 0,
    jitter: Jitter = 0,
    output: Annotated[
        Path,
        output_option("Directory for Parquet results and charts."),
    ] = Path("results/rl-eval"),
) -> None:
    """TVW-RL vs DeepRM+Best-Fit and the heuristics (the paper's Figs. 4-5), and our figures
    against the paper's claims."""
    import polars as pl
    from rich.table import Table

    from reclaim.rl.evaluate import (
        CLAIMS,
        Learned,
        paired_against,
        paper_comparison,
        trained_scenario,
    )
    from reclaim.tvw.evaluate import Policy, run_evaluation
    from reclaim.tvw.report import metrics_table, plot_operational, pool_table
    from reclaim.tvw.scenario import ScenarioSpec

    loads = _loads(load)
    tvw_rl = _tvw_rl_policies(policy, classes)
    chosen = [*tvw_rl, Learned("deeprm", str(deeprm) if deeprm else None)]
    chosen += [Policy.parse(p) for p in _csv(baselines)]
    # the units the learned policies were trained on (the shipped ones: the legacy peak scale)
    spec = ScenarioSpec(jobs=jobs, background=background, jitter=jitter)
    spec = trained_scenario(chosen, spec)
    paths = _usage_stores(store)
    pools, summary = run_evaluation(paths, spec, loads, chosen, sequences, seed, output, console)
    out = Console(width=max(Console().width, 120))
    out.print(pool_table([p.report for p in pools]))
    for pool in pools:
        plot_operational(summary, pool.name, output / f"{pool.name}.png")
        out.print(metrics_table(summary, pool.name))
    comparison = paper_comparison(summary)
    comparison.write_parquet(output / "comparison.parquet")
    table = Table(
        title="TVW-RL change vs baselines, % (paper's claimed range)", title_justify="left"
    )
    for column in comparison.columns:
        claim = CLAIMS.get(column)
        table.add_column(f"{column}\n{claim[0]:+.0f}..{claim[1]:+.0f}" if claim else column)
    for row in comparison.iter_rows():
        table.add_row(*(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row))
    out.print(table)
    runs = pl.read_parquet(output / "runs.parquet")
    baselines = ["best-fit"] + ([tvw_rl[0].label] if len(tvw_rl) > 1 else [])
    paired = pl.concat([paired_against(runs, b) for b in baselines], how="diagonal_relaxed")
    paired.write_parquet(output / "paired.parquet")
    for baseline, rows in paired.group_by("against", maintain_order=True):
        out.print(_paired_table(rows, baseline[0]))
    out.print(
        f"results: {output}/runs.parquet, summary.parquet, comparison.parquet, paired.parquet"
    )


@rl_app.command("ablate")
def rl_ablate(
    store: UsageStores = None,
    load: TrainingLoad = 50,
    jobs: Annotated[int, typer.Option(min=1, help="Workloads per episode and sequence.")] = 200,
    iterations: Annotated[int, typer.Option(min=1, help="Policy updates per setting.")] = 2000,
    seed: Annotated[
        int, typer.Option(help="Seed of the training (the test sequences' is rl eval's, 1000).")
    ] = 0,
    sequences: Annotated[int, typer.Option(min=1, help="Test sequences per setting.")] = 3,
    workers: Annotated[
        int, typer.Option(min=1, help="Settings trained at once, one process each.")
    ] = 1,
    only: Annotated[
        str | None, typer.Option(help="Axes to vary, comma-separated: k_u, k_o, k_c (default all).")
    ] = None,
    output: Annotated[
        Path,
        output_option("Directory for the policies and results."),
    ] = Path("results/rl-ablation"),
) -> None:
    """The paper's penalty ablation (its Table 3): a policy per K_u, K_o, K_c setting, the others
    at the defaults, evaluated at one load beside the paper's figures. Resumes; keeps trained
    settings."""
    from reclaim.rl.ablation import RESULT, grid, run_ablation, trends
    from reclaim.rl.ablation_report import axis_table, plot_ablation, trend_lines
    from reclaim.rl.reinforce import TrainConfig

    points = grid(_csv(only) if only is not None else None)
    config = TrainConfig(iterations=iterations, seed=seed)
    paths = _usage_stores(store)
    frame = run_ablation(
        paths, load / 100, jobs, config, points, sequences, workers, output, console
    )
    out = Console(width=max(Console().width, 150))  # ours / paper cells; pipes get 80
    for axis in frame["axis"].unique(maintain_order=True):
        out.print(axis_table(frame, axis))
    for line in trend_lines(trends(frame)):
        out.print(line)
    chart = plot_ablation(frame, output / "ablation.png")
    out.print(f"results: {output / RESULT}, {chart}, runs.parquet, summary.parquet")


@rl_app.command("classes")
def rl_classes(
    store: UsageStores = None,
    records: Annotated[int, typer.Option(min=4, help="Records per store.")] = 120,
    steps: Annotated[int, typer.Option(min=8, help="Steps of each record used.")] = 288,
    seed: Annotated[int, typer.Option(help="Seed of the sample and the clusterings.")] = 0,
    initialisations: Annotated[
        int, typer.Option(min=1, help="Clusterings per k; the best is kept (paper: 50).")
    ] = 50,
    scale: Scale = "auto",
) -> None:
    """Equivalence classes by aggregate, temporal and DTW distances: k by silhouette, and the
    paper's effective prediction gain (its Table 1)."""
    import numpy as np
    from rich.table import Table

    from reclaim.rl.classes import compare_distances, sample_records
    from reclaim.tvw.pool import load_pool

    paths = _usage_stores(store)
    table = Table(title="equivalence classes (paper's Table 1)", title_justify="left")
    for column in ("store", "distance", "k", "silhouette", "f", "EG %"):
        table.add_column(column)
    for path in paths:
        pool = load_pool(path, scale=scale)
        series = sample_records(pool.units, records, steps, np.random.default_rng(seed))
        for row in compare_distances(series, seed, n_init=initialisations):
            table.add_row(
                pool.name,
                str(row["distance"]),
                str(row["k"]),
                f"{row['silhouette']:.3f}",
                f"{row['f']:.2f}",
                f"{row['eg_pct']:.2f}",
            )
    Console().print(table)


lifetime_app = typer.Typer(
    no_args_is_help=True, help="VM lifetimes: the GBDT model of remaining lifetime (LAVA)."
)
app.add_typer(lifetime_app, name="lifetime")


@lifetime_app.command("eval")
def lifetime_eval(
    store: Annotated[
        str,
        typer.Argument(
            metavar="STORE", help="Lifetime trace store, or sample:NAME of a shipped one."
        ),
    ] = "sample:alibaba-gpu2025",
    family: Annotated[
        str | None, typer.Option(help="Only this VM family (pool), e.g. CN or HN.")
    ] = None,
    train_fraction: Annotated[
        float, typer.Option(min=0.05, max=0.95, help="Share of arrivals that train the model.")
    ] = 0.6,
    threshold_days: Annotated[
        float, typer.Option(min=0.01, help="Long-lived above this many days (paper: 7).")
    ] = 7.0,
    seed: Annotated[int, typer.Option(help="Model seed.")] = 0,
    output: Annotated[Path, output_option("Directory for the plots.")] = Path("results/lifetime"),
) -> None:
    """Train on the first arrivals, test on the later ones: precision and recall of "lives beyond
    the threshold" at creation, F1 by uptime quantile (reprediction) and by week after training."""
    from reclaim.lifetime.eval_plots import plot_lifetime_eval
    from reclaim.lifetime.eval_tables import lifetime_tables
    from reclaim.lifetime.evaluate import evaluate_lifetime
    from reclaim.lifetime.model import LifetimeModel
    from reclaim.lifetime.vms import load_vms
    from reclaim.traces.store import sample_path

    path = sample_path(store.removeprefix("sample:")) if store.startswith("sample:") else store
    vms = load_vms(path, family=family)
    result = evaluate_lifetime(
        vms, LifetimeModel(seed=seed), train_fraction, threshold_s=threshold_days * 86400.0
    )
    out = Console(width=max(Console().width, 120))
    for table in lifetime_tables(result):
        out.print(table)
    figures = plot_lifetime_eval(result, output)
    out.print(f"plots: {', '.join(str(f) for f in figures)}")


def main() -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit, no traceback.

    Typer handles bad options itself (usage message, exit 2); our own errors are ReclaimError.
    """
    try:
        app(prog_name="reclaim")
    except ReclaimError as err:
        console.print(f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True)
        sys.exit(err.exit_code)
