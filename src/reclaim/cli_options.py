"""Pieces every command line shares (the main app and its sub-apps import them from here, so
that a sub-app never imports the main one)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


def output_dir(value: Path | None) -> Path | None:
    """An -o/--output names a directory: a file there is refused before any work starts."""
    if value is not None and value.exists() and not value.is_dir():
        raise typer.BadParameter(f"{value} is a file, not a directory; choose another path")
    return value


def output_option(help: str):
    """The -o/--output option of a command: a directory, checked before any work starts."""
    return typer.Option("-o", "--output", callback=output_dir, help=help)


def chart_file(value: Path) -> Path:
    """A chart's path: a .png, .pdf or .svg file, not a directory."""
    if value.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise typer.BadParameter(f"{value}: a chart is written as .png, .pdf or .svg")
    if value.is_dir():
        raise typer.BadParameter(f"{value} is a directory; name the chart's file")
    return value


def report_console() -> Console:
    """The terminal as it is (report tables stack their rows where columns do not fit); 160
    columns for pipes and files, where nothing wraps."""
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=160)
