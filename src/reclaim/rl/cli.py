"""The TVW-RL commands: ``reclaim place`` (heuristic placers on the TVW replay) and ``reclaim rl``
(train, retrain, evaluate and ablate the learned placer, and compare equivalence classes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reclaim.cli_options import (
    Loads,
    Scale,
    UsageStores,
    chart_file,
    csv_list,
    number_option,
    output_option,
    parse_loads,
    usage_stores,
)
from reclaim.errors import ReclaimError
from reclaim.validation import (
    ITERATIONS,
    LEARNING_RATE,
    LOAD_PERCENT,
    MACHINES,
    REPEATS,
    SEED,
    UNITS,
    UNITS_OR_NONE,
    WEIGHT,
    WORKERS,
    WORKLOADS,
    count,
)

console = Console(stderr=True)


ResultsDir = Annotated[Path, output_option("Directory for Parquet results and charts.")]
PolicyDir = Annotated[Path, output_option("Directory for checkpoint.pt and policy.npz.")]
Background = Annotated[
    int,
    number_option(
        UNITS_OR_NONE,
        help="Noise: every machine runs an unknown background process of 0..N units per "
        "resource, uniform per step (the paper's Table 2).",
    ),
]
Jitter = Annotated[
    int,
    number_option(
        UNITS_OR_NONE,
        help="Noise: every workload's usage moved by up to N units per step (Table 2).",
    ),
]


place_app = typer.Typer(no_args_is_help=True, help="Place time-varying workloads (TVW-RL).")


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
    sequences: Annotated[int, number_option(REPEATS, help="Workload sequences per load.")] = 5,
    jobs: Annotated[int, number_option(WORKLOADS, help="Workloads per sequence.")] = 200,
    machines: Annotated[int, number_option(MACHINES, help="Machines in the cluster.")] = 10,
    units: Annotated[int, number_option(UNITS, help="Units of each resource per machine.")] = 8,
    max_units: Annotated[
        int, number_option(UNITS, help="Units a workload's usage is scaled to at most.")
    ] = 6,
    scale: Scale = "auto",
    seed: Annotated[int, number_option(SEED, help="Seed of the sequences.")] = 0,
    background: Background = 0,
    jitter: Jitter = 0,
    output: ResultsDir = Path("results/place"),
) -> None:
    """TVW-RL's evaluation: utilisation, fragmentation, overshoot, machines used and wait of each
    placer at each load, on real usage series; prints the table and draws the bar charts."""
    from reclaim.tvw.evaluate import Policy, run_evaluation
    from reclaim.tvw.report import metrics_table, plot_operational, pool_table
    from reclaim.tvw.scenario import ScenarioSpec

    loads = parse_loads(load)
    chosen = [Policy.parse(p) for p in csv_list(policies)]
    spec = ScenarioSpec(
        machines=machines, units=units, jobs=jobs, max_units=max_units, scale=scale,
        background=background, jitter=jitter,
    )  # fmt: skip
    paths = usage_stores(store)
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
Classes = Annotated[
    str,
    typer.Option(
        help="TVW-RL's equivalence classes: none (one class), temporal or dtw (re-predicted as "
        "workloads run)."
    ),
]


TrainingLoad = Annotated[float, number_option(LOAD_PERCENT, help="Average cluster load in %.")]


@rl_app.command("train")
def rl_train(
    store: UsageStores = None,
    load: TrainingLoad = 50,
    jobs: Annotated[int, number_option(WORKLOADS, help="Workloads per episode.")] = 200,
    iterations: Annotated[int, number_option(ITERATIONS, help="Policy updates.")] = 2000,
    trajectories: Annotated[int, number_option(REPEATS, help="Episodes per update.")] = 20,
    sequences: Annotated[int, number_option(REPEATS, help="Training sequences.")] = 100,
    lr: Annotated[float, number_option(LEARNING_RATE, help="Adam's learning rate.")] = 1e-3,
    seed: Annotated[
        int, number_option(SEED, help="Seed of the network, sequences and sampling.")
    ] = 0,
    checkpoint_every: Annotated[
        int, number_option(ITERATIONS, help="Iterations per checkpoint.")
    ] = 10,
    resume: Annotated[bool, typer.Option(help="Continue from the output's checkpoint.")] = False,
    agent: Annotated[
        str, typer.Option(help="tvw-rl (placement) or deeprm (DeepRM's job selection).")
    ] = "tvw-rl",
    k_c: Annotated[float, number_option(WEIGHT, help="TVW-RL contention weight K_c.")] = 0.1,
    k_u: Annotated[
        float, number_option(WEIGHT, help="TVW-RL under-utilisation exponent K_u.")
    ] = 3.0,
    k_o: Annotated[float, number_option(WEIGHT, help="TVW-RL overshoot penalty K_o.")] = 30000.0,
    k_w: Annotated[float, number_option(WEIGHT, help="TVW-RL wait weight K_w.")] = 50.0,
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
    output: PolicyDir = Path("results/rl"),
) -> None:
    """Train TVW-RL's policy (or DeepRM's selector) with REINFORCE; checkpoints, resumes, writes
    policy.npz. Vary --k-u/--k-o/--k-c for the paper's ablations."""
    from reclaim.rl.reinforce import POLICY, TrainConfig
    from reclaim.rl.rewards import Weights
    from reclaim.rl.running_classes import check_classes
    from reclaim.rl.training import run_training

    check_classes(classes)
    config = TrainConfig(iterations, trajectories, sequences, lr, seed, checkpoint_every)
    paths = usage_stores(store)
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
        number_option(ITERATIONS, help="Iterations to run (default: as many as the policy ran)."),
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue from the output's checkpoint.")] = False,
    output: PolicyDir = Path("results/rl-retrain"),
) -> None:
    """Train a policy again from its recorded settings, data and seed; say whether the curve
    (and, at full length, the weights) are the recorded ones bit for bit. Exits 1 if not."""
    from reclaim.rl.retrain import NotReproduced, retrain

    found = retrain(
        policy, output, usage_stores(store) if store else None, iterations, resume, console
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
    sequences: Annotated[int, number_option(REPEATS, help="Workload sequences per load.")] = 3,
    jobs: Annotated[int, number_option(WORKLOADS, help="Workloads per sequence.")] = 200,
    seed: Annotated[int, number_option(SEED, help="Seed of the test sequences.")] = 1000,
    classes: Classes = "none",
    background: Background = 0,
    jitter: Jitter = 0,
    output: ResultsDir = Path("results/rl-eval"),
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

    loads = parse_loads(load)
    tvw_rl = _tvw_rl_policies(policy, classes)
    chosen = [*tvw_rl, Learned("deeprm", str(deeprm) if deeprm else None)]
    chosen += [Policy.parse(p) for p in csv_list(baselines)]
    # the units the learned policies were trained on (the shipped ones: the legacy peak scale)
    spec = ScenarioSpec(jobs=jobs, background=background, jitter=jitter)
    spec = trained_scenario(chosen, spec)
    paths = usage_stores(store)
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
    jobs: Annotated[
        int, number_option(WORKLOADS, help="Workloads per episode and sequence.")
    ] = 200,
    iterations: Annotated[
        int, number_option(ITERATIONS, help="Policy updates per setting.")
    ] = 2000,
    seed: Annotated[
        int,
        number_option(SEED, help="Seed of the training (the test sequences' is rl eval's, 1000)."),
    ] = 0,
    sequences: Annotated[int, number_option(REPEATS, help="Test sequences per setting.")] = 3,
    workers: Annotated[
        int, number_option(WORKERS, help="Settings trained at once, one process each.")
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

    points = grid(csv_list(only) if only is not None else None)
    config = TrainConfig(iterations=iterations, seed=seed)
    paths = usage_stores(store)
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
    records: Annotated[
        int, number_option(count("records", 10_000_000, least=4), help="Records per store.")
    ] = 120,
    steps: Annotated[
        int, number_option(count("steps", 10_000_000, least=8), help="Steps of each record used.")
    ] = 288,
    seed: Annotated[int, number_option(SEED, help="Seed of the sample and the clusterings.")] = 0,
    initialisations: Annotated[
        int, number_option(REPEATS, help="Clusterings per k; the best is kept (paper: 50).")
    ] = 50,
    scale: Scale = "auto",
) -> None:
    """Equivalence classes by aggregate, temporal and DTW distances: k by silhouette, and the
    paper's effective prediction gain (its Table 1)."""
    import numpy as np
    from rich.table import Table

    from reclaim.rl.classes import compare_distances, sample_records
    from reclaim.tvw.pool import load_pool

    paths = usage_stores(store)
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
