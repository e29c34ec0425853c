"""The progress bar of long, countable work (forecast cells, experiment runs, placement runs)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def count_progress(unit: str, console: Console | None = None) -> Progress:
    """Description, bar, done/total ``unit`` (a rich format: it may read task fields) and elapsed
    time; gone once finished, so that the results printed next stand alone."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
