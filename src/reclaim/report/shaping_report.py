"""The report of a shaping result store (``kind = "shaping"``): per experiment its tables, notes
and plots, the paper's headline numbers and claims beside ours with the numbers that explain the
gaps, written as PNGs and ``index.html``."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from reclaim.report import experiment_plots as plots
from reclaim.report.experiment_data import (
    BASELINE,
    ResultStore,
    aggregate,
    load_results,
)
from reclaim.report.experiment_report import Report
from reclaim.report.experiment_tables import (
    cell_rows,
    cluster_rows,
    context_rows,
    failure_rows,
    fmt_interval,
    paper_rows,
)
from reclaim.report.html import Section, page
from reclaim.report.ladder import is_ladder, ladder_rows, plot_ladder
from reclaim.report.paper import (
    PAPER_WORLDS,
    SOURCE,
    Context,
    compare,
    context,
    rigid_admission_note,
)


def _notes(runs: pl.DataFrame, cells: pl.DataFrame, ctx: Context) -> list[str]:
    seeds = sorted(runs["seed"].unique().to_list())
    notes = [
        f"{len(runs)} finished run(s) in {len(cells)} cell(s), seeds {', '.join(map(str, seeds))}; "
        "numbers are means over seeds with, where a cell has several, their 95 % confidence "
        "interval [lo, hi] (Student t over seeds; the turnaround ratio's from per-seed ratios)."
    ]
    apps = fmt_interval("shapeable_apps", ctx.shapeable_apps).replace("\n", " ")
    mem = fmt_interval("shapeable_mem", ctx.shapeable_mem).replace("\n", " ")
    if ctx.shapeable_apps.mean is not None:
        notes.append(
            f"What shaping could act on: {apps} of applications run a component past the grace "
            f"period, and {mem} of requested memory-time lies past it; shorter work keeps its "
            "request and is never shaped."
        )
    shaped = runs.filter(pl.col("controller") != BASELINE)
    unmatched = shaped["turnaround_ratio"].null_count()
    if unmatched:
        notes.append(
            f"{unmatched} run(s) have no turnaround ratio: no finished {BASELINE} run with the "
            "same seed, or no finished application."
        )
    sources = set(runs["slack_source"])
    if sources != {"per-application"}:
        notes.append(
            "Slack: where runs lack the paper's per-application slack (allocated - used, over the "
            "request), an older runner's per-application idle share of the allocation, else the "
            f"cluster's allocation-weighted slack ({', '.join(sorted(sources))})."
        )
    old = runs.filter(pl.col("failure_source") != "any component stopped")
    if len(old):
        notes.append(
            f"{len(old)} run(s) from an older runner: their failure rate counts core out-of-memory "
            "failures only, not every application with a component stopped; their work lost is in "
            "component-hours."
        )
    return notes


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _figures(
    store: ResultStore, name: str, cells: pl.DataFrame, out: Path
) -> list[tuple[str, str]]:
    figures = []
    slug = _slug(name)
    if cells["controller"].n_unique() > 1:
        drawn = plots.plot_figure3(store, cells, out / f"{slug}-boxplots.png")
        if drawn is not None:
            path, source = drawn
            caption = f"Figure-3 style: slack ({source}), turnaround per application, failure rate"
            figures.append((caption, path.name))
    heat = plots.plot_figure4(cells, out / f"{slug}-heatmaps.png")
    if heat is not None:
        figures.append(("Figure-4 style: K1 x K2 heatmaps, bright cells are better", heat.name))
    conformal = plots.plot_conformal(cells, out / f"{slug}-coverage.png")
    if conformal is not None:
        figures.append(("Conformal: target coverage against outcome", conformal.name))
    return figures


def write(root: Path, out: Path) -> Report:
    """Read the shaping store at ``root`` and write plots and ``index.html`` into ``out``."""
    store = load_results(root)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    contexts = {c.experiment: c for c in context(store.runs)}
    for (name,), runs in store.runs.group_by("experiment", maintain_order=True):
        cells = aggregate(runs)
        scale = ", ".join(sorted(set(runs["scale"].drop_nulls()) - {""}))
        heading = f"{name} ({scale})" if scale else str(name)
        notes = _notes(runs, cells, contexts[str(name)])
        if name == store.name and store.description:
            notes.insert(0, store.description)
        tables = [(f"{heading}: failures and lost work", failure_rows(cells))]
        cluster = cluster_rows(cells)
        if cluster is not None:
            tables.append((f"{heading}: cluster slack and forecasts", cluster))
        figures = _figures(store, name, cells, out)
        if is_ladder(cells):
            tables.insert(0, (f"{heading}: the ladder, world by world", ladder_rows(cells)))
            drawn = plot_ladder(cells, out / f"{_slug(name)}-ladder.png")
            figures.insert(0, ("The ladder: one panel per metric, worlds in order", drawn.name))
        admission = rigid_admission_note(runs)
        if admission:
            notes.append(admission)
        sections.append(Section(heading, notes, cell_rows(cells), figures, tables))
    notes = [f"{root}: {len(store.runs)} finished run(s)."]
    if store.pending:
        notes.append(
            f"{store.pending} run directory(ies) have no finished row (sweep interrupted or still "
            "running): this report covers the runs that finished."
        )
    # the paper's numbers are compared with its own world, or with the one world of a store
    paper = paper_rows(compare(store.runs.filter(pl.col("world").is_in(PAPER_WORLDS))))
    gaps = context_rows(list(contexts.values()))
    html = out / "index.html"
    html.write_text(page(f"reclaim report: {store.name}", notes, sections, paper, SOURCE, gaps))
    return Report(store, notes, sections, paper, html, SOURCE, gaps)
