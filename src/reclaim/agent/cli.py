"""``reclaim agent run | status | explain``: the live agent's command line (a typer sub-app)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reclaim.cli_options import number_option
from reclaim.validation import REPEATS

agent_app = typer.Typer(
    no_args_is_help=True,
    help="Shape live cgroups (or Docker containers) with the simulator's controllers.",
)

Config = Annotated[Path, typer.Option("--config", "-c", help="Agent config (TOML).")]


def _database(config: Path) -> Path:
    from reclaim.agent.config import load_settings

    return load_settings(config).database


@agent_app.command("run")
def run(
    config: Config,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Record and print recommendations; change nothing.")
    ] = False,
    periods: Annotated[
        int | None,
        number_option(REPEATS, help="Stop after this many periods (default: run until killed)."),
    ] = None,
) -> None:
    """Every period: read usage, forecast, decide, apply (or only record, with --dry-run)."""
    from reclaim.agent.config import load_settings
    from reclaim.agent.loop import Agent
    from reclaim.agent.metrics_http import AgentMetrics

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    settings = load_settings(config)
    settings.dry_run = settings.dry_run or dry_run
    metrics = AgentMetrics() if settings.metrics_port else None
    if metrics is not None:
        metrics.serve(settings.metrics_port)
    agent = Agent(settings, metrics=metrics)
    # SIGTERM finishes the period and closes the database
    previous = signal.signal(signal.SIGTERM, lambda *_: agent.stop())
    try:
        agent.run(periods)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        agent.close()
        if metrics is not None:
            metrics.close()


@agent_app.command("status")
def status(config: Config) -> None:
    """Components with their reservation, usage, forecast, limit and slack."""
    from reclaim.agent.explain import status_table
    from reclaim.agent.store import Store

    store = Store.open_existing(_database(config))
    try:
        Console(width=160).print(status_table(store))
    finally:
        store.close()


@agent_app.command("explain")
def explain(
    component: Annotated[
        str, typer.Argument(metavar="COMPONENT", help="Component name, as in the config.")
    ],
    config: Config,
) -> None:
    """Why COMPONENT has its limit: usage, forecast and interval, buffer terms, decision."""
    from reclaim.agent.explain import explain as explain_lines
    from reclaim.agent.store import Store

    store = Store.open_existing(_database(config))
    try:
        for line in explain_lines(store, component):
            typer.echo(line)
    finally:
        store.close()
