"""The LAVA commands: ``reclaim lifetime eval`` (the remaining-lifetime model on a trace)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reclaim.cli_options import number_option, output_option
from reclaim.validation import SEED, Quantity

lifetime_app = typer.Typer(
    no_args_is_help=True, help="VM lifetimes: the GBDT model of remaining lifetime (LAVA)."
)


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
        float,
        number_option(
            Quantity("share", ge=0.05, le=0.95), help="Share of arrivals that train the model."
        ),
    ] = 0.6,
    threshold_days: Annotated[
        float,
        number_option(
            Quantity("days", ge=0.01, le=36_500), help="Long-lived above this many days (paper: 7)."
        ),
    ] = 7.0,
    seed: Annotated[int, number_option(SEED, help="Model seed.")] = 0,
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
