"""Pieces every command line shares (the main app and its sub-apps import them from here, so
that a sub-app never imports the main one)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reclaim.errors import ReclaimError, TraceError
from reclaim.validation import LOAD_PERCENT, Quantity


def output_dir(value: Path | None) -> Path | None:
    """An -o/--output names a directory we can write: a file there, or a folder that cannot be
    created or written into, is refused before any work starts (one line, no traceback)."""
    if value is None:
        return value
    if value.exists() and not value.is_dir():
        raise ReclaimError(f"-o/--output: {value} is a file, not a directory; choose another path")
    try:
        _probe_writable(value)
    except OSError as err:
        raise ReclaimError(
            f"-o/--output: cannot write to {value} ({err.strerror or err}); choose another path"
        ) from None
    return value


def _probe_writable(folder: Path) -> None:
    """Create ``folder`` and a file in it, then remove what was created: the one sure test
    (permission bits say nothing for root, nor for read-only or pseudo file systems)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd, probe = tempfile.mkstemp(prefix=".reclaim-write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    finally:
        for created in missing:  # deepest first
            with contextlib.suppress(OSError):
                created.rmdir()


def output_option(help: str):
    """The -o/--output option of a command: a directory, checked before any work starts."""
    return typer.Option("-o", "--output", callback=output_dir, help=help)


def number_option(quantity: Quantity, *decls: str, help: str, **kwargs):
    """A numeric option checked against ``quantity`` (:mod:`reclaim.validation`) as it is
    parsed: NaN, infinity or a value out of range is one line naming the option, before any
    work. Every int or float option of the CLI is declared through this (a test checks)."""

    def check(ctx, param, value):
        if value is None or ctx.resilient_parsing:
            return value
        return quantity.check(value, max(param.opts, key=len))

    check.quantity = quantity
    return typer.Option(*decls, callback=check, help=help, **kwargs)


def placer_option(help: str):
    """A placer spec option (``reclaim.placement.build_placer``'s syntax), refused as it is
    parsed when it names an unknown plugin or a bad weight: one line naming the option."""

    def check(ctx, param, value):
        if value is None or ctx.resilient_parsing:
            return value
        from reclaim.placement import build_placer

        try:
            build_placer(value)
        except (ReclaimError, ValueError) as err:
            raise ReclaimError(f"{max(param.opts, key=len)}: {err}") from None
        return value

    return typer.Option(callback=check, help=help)


def chart_file(value: Path) -> Path:
    """A chart's path: a .png, .pdf or .svg file, not a directory."""
    if value.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise typer.BadParameter(f"{value}: a chart is written as .png, .pdf or .svg")
    if value.is_dir():
        raise typer.BadParameter(f"{value} is a directory; name the chart's file")
    output_dir(value.parent)
    return value


def report_console() -> Console:
    """The terminal as it is (report tables stack their rows where columns do not fit); 160
    columns for pipes and files, where nothing wraps."""
    terminal = Console()
    return terminal if terminal.is_terminal else Console(width=160)


def csv_list(text: str) -> list[str]:
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


def usage_stores(given: list[Path] | None) -> list[Path]:
    """The stores given (a path that is no folder but a shipped sample's name is that sample),
    or the shipped real samples."""
    from reclaim.traces.store import sample_path

    if not given:
        return [sample_path("bitbrains"), sample_path("google2011-derived")]
    return [p if p.is_dir() or len(p.parts) != 1 else sample_or(p) for p in given]


def sample_or(path: Path) -> Path:
    """The shipped sample named ``path``, or ``path`` itself (which then fails as no store)."""
    from reclaim.traces.store import sample_path

    try:
        return sample_path(path.name)
    except TraceError:
        return path


def number_list(text: str, quantity: Quantity, option: str, example: str) -> list:
    """A comma-separated option of numbers, each checked against ``quantity``; an empty item
    (``10,,20``), a word or a value out of range is one line naming the option."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or "" in parts:
        raise ReclaimError(f"{option}: expected a list like {example}, got {text!r}")
    values = []
    for part in parts:
        try:
            value = int(part) if quantity.integer else float(part)
        except ValueError:
            value = part
        values.append(quantity.check(value, option))
    return values


def parse_loads(text: str) -> list[float]:
    """``--load`` percentages as fractions, or a one-line error."""
    return [p / 100 for p in number_list(text, LOAD_PERCENT, "--load", example="30,50,80")]
