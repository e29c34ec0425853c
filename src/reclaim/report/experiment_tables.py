"""Tables of an experiment as rows of text, rendered by rich for the console and by ``html`` for
the page, so both always show the same numbers."""

from __future__ import annotations

import math

import polars as pl
from rich.table import Table

from reclaim.report.experiment_data import cell_name
from reclaim.report.paper import Comparison

Rows = tuple[list[str], list[list[str]]]

# (header, metric, kind): kind picks the format in ``fmt``
_CELL_COLUMNS = [
    ("apps done", "apps_done", "count"),
    ("turnaround mean", "turnaround_mean_s", "time"),
    ("turnaround p50", "turnaround_p50_s", "time"),
    ("ratio over baseline", "turnaround_ratio", "ratio"),
    ("CPU slack", "slack_cpu", "share"),
    ("memory slack", "slack_mem", "share"),
    ("cluster memory slack", "slack_mem_weighted", "share"),
    ("failure rate", "failure_rate", "share"),
    ("preemptions", "preemptions", "count"),
    ("work lost (comp-h)", "work_lost_core_h", "float"),
]
_KIND = {metric: kind for _, metric, kind in _CELL_COLUMNS}
_METRIC_NAMES = {
    "turnaround_ratio": "turnaround ratio over baseline",
    "slack_mem": "memory slack",
    "failure_rate": "failure rate",
}


def _unit(metric: str, value: float) -> tuple[float, str, str]:
    """(scale, number format, suffix) that print ``value`` of ``metric``."""
    kind = _KIND.get(metric, "float")
    if kind == "time":
        for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
            if value >= size:
                return size, ".1f", f" {unit}"
        return 1.0, ".0f", " s"
    return {
        "ratio": (1.0, ".2f", "x"),
        "share": (0.01, ".1f", "%"),
        "count": (1.0, ",.0f", ""),
    }.get(kind, (1.0, ",.1f", ""))


def fmt(metric: str, value: float | None, spread: float | None = None) -> str:
    """A metric's value as the tables print it, with ``± spread`` in the value's unit on a second
    line when given (a narrow column wraps there, not inside a number); ``-`` for no value."""
    if value is None or math.isnan(value):
        return "-"
    scale, number, suffix = _unit(metric, value)
    text = f"{value / scale:{number}}{suffix}"
    if spread is not None and not math.isnan(spread):
        text += f"\n± {spread / scale:{number}}{suffix}"
    return text


def _with_spread(cell: dict, metric: str) -> str:
    spread = cell.get(f"{metric}_std") if cell["seeds"] > 1 else None
    return fmt(metric, cell.get(metric), spread)


def cell_rows(cells: pl.DataFrame) -> Rows:
    """One row per cell: mean over seeds, ``± std`` where a cell has several seeds."""
    header = ["cell", "runs"] + [h for h, _, _ in _CELL_COLUMNS]
    rows = [
        [cell_name(c), str(c["runs"])] + [_with_spread(c, m) for _, m, _ in _CELL_COLUMNS]
        for c in cells.iter_rows(named=True)
    ]
    return header, rows


def paper_rows(comparisons: list[Comparison]) -> Rows:
    """The paper's number beside ours, a row per (headline, matching cell)."""
    header = ["paper", "setting", "metric", "paper value", "ours", "our cell", "runs"]
    rows = []
    for c in comparisons:
        h = c.headline
        paper = f"{h.value:g}x" if h.metric == "turnaround_ratio" else f"{h.value * 100:g}%"
        head = [h.where, h.setting, _METRIC_NAMES[h.metric], paper]
        if c.cell is None:
            rows.append([*head, "not in this result store", "", ""])
        else:
            ours = _with_spread(c.cell, h.metric)
            rows.append([*head, ours, cell_name(c.cell), str(c.cell["runs"])])
    return header, rows


def rich_table(title: str, rows: Rows) -> Table:
    """A rich table; text columns left, numbers right."""
    header, body = rows
    table = Table(title=title, title_justify="left")
    for i, name in enumerate(header):
        numeric = i > 0 and body and any(r[i][:1].isdigit() for r in body)
        # the cell is what a row is read by: rich shrinks the widest columns first, so pin it
        table.add_column(name, justify="right" if numeric else "left", no_wrap=i == 0)
    for row in body:
        table.add_row(*row)
    return table
