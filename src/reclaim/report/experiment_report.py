"""The report of a result store, whatever its experiment kind: the kind's report module writes
it (``ExperimentKind.report``), as PNGs and ``index.html``; what ``reclaim report`` runs. Kinds
whose report is a list of sections and the paper's rows share :func:`sectioned_report`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from reclaim.experiments.kind import DEFAULT_KIND, experiment_kind
from reclaim.report.experiment_data import ResultStore, experiment_meta
from reclaim.report.experiment_tables import FittedTable, Rows
from reclaim.report.html import Section, page


@dataclass
class Report:
    """``notes``: about the store as a whole (runs still missing); sections: one per experiment;
    ``context``: per experiment the numbers that explain gaps to the paper (shaping stores)."""

    store: ResultStore
    notes: list[str]
    sections: list[Section]
    paper: Rows
    html: Path
    source: str
    context: Rows | None = None


def write_report(root: Path, out: Path) -> Report:
    """Read the store at ``root`` and write its kind's report into ``out``."""
    kind = experiment_meta(root).get("kind", DEFAULT_KIND)
    return experiment_kind(str(kind)).report(root, out)


def sectioned_report(
    root: Path,
    out: Path,
    store: ResultStore,
    sections: Callable[[Any, Path], tuple[list[Section], Rows]],
    source: str,
) -> Report:
    """The report of a kind whose module gives ``sections(store, out)``: its sections (tables
    and figures) and the paper-vs-ours rows from ``source``."""
    out.mkdir(parents=True, exist_ok=True)
    parts, paper = sections(store, out)
    notes = [f"{root}: {len(store.runs)} finished run(s)."]
    html = out / "index.html"
    html.write_text(page(f"reclaim report: {store.name}", notes, parts, paper, source))
    return Report(store, notes, parts, paper, html, source)


def console_output(report: Report) -> list[RenderableType]:
    """What the CLI prints: per experiment its notes and tables, then the paper's numbers and
    what explains the gaps."""
    items: list[RenderableType] = [Text(note) for note in report.notes]
    for s in report.sections:
        items += [Text(note, style="dim") for note in s.notes]
        items.append(FittedTable(s.heading, s.table))
        items += [FittedTable(title, rows) for title, rows in s.tables]
    items.append(FittedTable(f"paper vs ours ({report.source})", report.paper))
    if report.context is not None:
        items.append(FittedTable("what explains the gaps, per experiment", report.context))
    return items
