"""Tables of an experiment as rows of text, rendered by rich for the console and by ``html`` for
the page, so both always show the same numbers. A number over seeds prints as its mean with the
95 % interval below it (``mean`` newline ``[lo, hi]``): a narrow column wraps there, not inside a
number, and the page shows both on one line."""

from __future__ import annotations

import math

import polars as pl
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from reclaim.metrics.intervals import Interval
from reclaim.report.experiment_data import RATES, SLACKS, cell_interval, cell_name
from reclaim.report.paper import Comparison, Context, Headline

Rows = tuple[list[str], list[list[str]]]

#: (header, metric) of the main table: one line per cell that fits a 160-column console.
MAIN_COLUMNS = [
    ("apps done", "apps_done"),
    ("turnaround mean", "turnaround_mean_s"),
    ("turnaround p50", "turnaround_p50_s"),
    ("ratio over baseline", "turnaround_ratio"),
    ("CPU slack", "slack_cpu"),
    ("memory slack", "slack_mem"),
    ("failure rate", "failure_rate"),
]
#: Failures as the paper counts them (any component stopped), split by cause, and the work lost.
FAILURE_COLUMNS = [
    ("failure rate", "failure_rate"),
    ("core OOM", "core_oom_rate"),
    ("preempted", "preempted_rate"),
    ("elastic lost", "elastic_loss_rate"),
    ("resubmissions", "resubmissions"),
    ("lost core-h", "work_lost_core_h"),
    ("lost GiB-h", "work_lost_gib_h"),
]
#: Slack of the cluster as a whole, and what the forecaster and controller did; columns no cell
#: has are left out.
CLUSTER_COLUMNS = [
    ("cluster CPU slack", "cluster_slack_cpu_mean"),
    ("cluster memory slack", "cluster_slack_mem_mean"),
    ("forecasts by fallback", "forecast_fallback_share"),
    ("realised coverage", "realised_coverage"),
    ("failure target", "failure_target"),
    ("adapted K2", "adapted_k2"),
]
_KIND = {
    "turnaround_mean_s": "time",
    "turnaround_p50_s": "time",
    "turnaround_ratio": "ratio",
    "apps_done": "count",
    "apps_failed": "count",
    "resubmissions": "count",
    "preemptions": "count",
    "adapted_k2": "float2",
    **dict.fromkeys((*SLACKS, *RATES), "share"),
}
_METRIC_NAMES = {
    "turnaround_ratio": "turnaround ratio over baseline",
    "turnaround_mean_s": "turnaround ratio",
    "slack_mem": "memory slack",
    "failure_rate": "failure rate (any component stopped)",
    "core_oom_rate": "failure rate (core OOM, the paper's code)",
}


def _unit(kind: str, value: float) -> tuple[float, str, str]:
    """(scale, number format, suffix) that print ``value`` of this kind."""
    if kind == "time":
        for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
            if abs(value) >= size:
                return size, ".1f", f" {unit}"
        return 1.0, ".0f", " s"
    if kind == "float" and abs(value) >= 100:
        return 1.0, ",.0f", ""  # hours of lost work: a decimal on thousands is noise
    return {
        "ratio": (1.0, ".2f", "x"),
        "share": (0.01, ".1f", "%"),
        "count": (1.0, ",.0f", ""),
        "float2": (1.0, ".2f", ""),
    }.get(kind, (1.0, ",.1f", ""))


def _absent(value: float | None) -> bool:
    return value is None or math.isnan(value)


def fmt(
    metric: str,
    value: float | None,
    lo: float | None = None,
    hi: float | None = None,
    kind: str | None = None,
) -> str:
    """A metric's value as the tables print it, with its 95 % interval ``[lo, hi]`` in the
    value's unit on a second line when given (``12.3 h`` over ``[9.1, 15.5] h``); ``-`` for no value. ``kind`` overrides the
    metric's own (time, ratio, share, count, float2, float)."""
    if _absent(value):
        return "-"
    scale, number, suffix = _unit(kind or _KIND.get(metric, "float"), value)
    text = f"{value / scale:{number}}{suffix}"
    if not _absent(lo) and not _absent(hi):
        text += f"\n[{lo / scale:{number}}, {hi / scale:{number}}]{suffix}"
    return text


def fmt_interval(metric: str, interval: Interval | None, kind: str | None = None) -> str:
    """An Interval as ``fmt`` prints it."""
    if interval is None:
        return "-"
    return fmt(metric, interval.mean, interval.lo, interval.hi, kind)


def _rows(cells: pl.DataFrame, columns: list[tuple[str, str]]) -> Rows:
    header = ["cell", "seeds"] + [h for h, _ in columns]
    rows = [
        [cell_name(c), str(c["seeds"])] + [fmt_interval(m, cell_interval(c, m)) for _, m in columns]
        for c in cells.iter_rows(named=True)
    ]
    return header, rows


def _present(cells: pl.DataFrame, columns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(h, m) for h, m in columns if m in cells.columns and cells[m].drop_nulls().len()]


def cell_rows(cells: pl.DataFrame) -> Rows:
    """One row per cell: the mean over seeds and, with several seeds, its 95 % interval."""
    return _rows(cells, MAIN_COLUMNS)


def failure_rows(cells: pl.DataFrame) -> Rows:
    """Failures split by cause and the work lost, per cell; an older store that recorded work
    lost only in component-hours shows that instead of core- and GiB-hours."""
    columns = _present(cells, FAILURE_COLUMNS)
    if not any(m.startswith("work_lost") for _, m in columns):
        columns += _present(cells, [("lost component-h", "work_lost_component_h")])
    return _rows(cells, columns)


def cluster_rows(cells: pl.DataFrame) -> Rows | None:
    """Cluster slack and the forecaster's and controller's own numbers, per cell; None when no
    cell records any."""
    columns = _present(cells, CLUSTER_COLUMNS)
    return _rows(cells, columns) if columns else None


def _paper_kind(h: Headline) -> str:
    return "ratio" if h.over is not None else _KIND.get(h.metric, "float")


def _metric_name(h: Headline) -> str:
    name = _METRIC_NAMES.get(h.metric, h.metric)
    if h.over is not None:
        return f"{name}, {h.over.controller} over {h.cell.controller}"
    return name


def paper_value(h: Headline) -> str:
    """The paper's number as it states it (its wording where the number is not exact)."""
    if h.stated or h.value is None:
        return h.stated or "-"
    if _paper_kind(h) == "ratio":
        return f"{h.value:g}x"
    return f"{h.value * 100:g}%" if _paper_kind(h) == "share" else f"{h.value:g}"


def _verdict(c: Comparison) -> str:
    """The verdict, with the paired difference it was read from where that is not ``ours``."""
    h = c.headline
    if h.direction is None:
        return "-"
    if h.direction.versus is None or c.test is None or c.test.mean is None:
        return c.verdict
    diff = fmt_interval(h.metric, c.test, _paper_kind(h)).replace("\n", " ")
    return f"{c.verdict}\nΔ {diff}"


def paper_rows(comparisons: list[Comparison]) -> Rows:
    """The paper's number beside ours (mean and 95 % interval over seeds), a row per (headline,
    matching cell), with the direction the paper claims and whether ours reproduces it. The first
    column names the paper's setting and, below it, our cell."""
    header = [
        "paper setting / our cell",
        "metric",
        "paper value",
        "ours [95% CI]",
        "seeds",
        "claimed direction",
        "direction reproduced?",
        "why",
    ]
    rows = []
    for c in comparisons:
        h = c.headline
        claim = h.direction.claim if h.direction is not None else "-"
        setting = f"{h.where}: {h.setting}"
        if c.cell is None:
            ours, seeds, verdict = "not in this result store", "", ""
        else:
            setting += f"\nours: {cell_name(c.cell)}"
            ours = fmt_interval(h.metric, c.ours, _paper_kind(h))
            seeds, verdict = (str(c.ours.n) if c.ours is not None else "0"), _verdict(c)
        rows.append([setting, _metric_name(h), paper_value(h), ours, seeds, claim, verdict, c.why])
    return header, rows


def context_rows(contexts: list[Context]) -> Rows:
    """Per experiment the numbers that explain gaps to the paper: what shaping could act on,
    the baseline's slack, and how often forecasts fell back to the naive model."""
    header = [
        "experiment",
        "seeds",
        "shapeable apps",
        "shapeable memory-time",
        "baseline memory slack (1 - usage/request)",
        "forecasts by fallback",
    ]
    rows = [
        [
            c.experiment,
            str(c.seeds),
            fmt_interval("shapeable_apps", c.shapeable_apps),
            fmt_interval("shapeable_mem", c.shapeable_mem),
            fmt_interval("app_slack_mem_mean", c.baseline_slack_mem),
            "\n".join(
                f"{label} {fmt_interval('forecast_fallback_share', i).replace(chr(10), ' ')}"
                for label, i in c.fallback
            )
            or "-",
        ]
        for c in contexts
    ]
    return header, rows


class FittedTable:
    """:func:`rich_table` where it fits the console's width without wrapping; elsewhere (an
    80-column terminal) one block per row, a line per column, so that no number is folded."""

    def __init__(self, title: str, rows: Rows) -> None:
        self.title, self.rows = title, rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        wide = rich_table(self.title, self.rows)
        natural = Measurement.get(console, options.update_width(1 << 16), wide).maximum
        if natural <= options.max_width:
            yield wide
        else:
            yield stacked_table(self.title, self.rows)


def stacked_table(title: str, rows: Rows) -> Table:
    """Each row as a block: its first cell as a heading, then ``column  value`` lines."""
    header, body = rows
    table = Table(title=title, title_justify="left", show_header=False, box=box.SIMPLE)
    table.add_column("column", style="dim", no_wrap=True)
    table.add_column("value", overflow="fold")
    for row in body:
        table.add_row(Text(row[0], style="bold"), "")
        for name, value in zip(header[1:], row[1:], strict=True):
            table.add_row(Text(f"  {name}"), Text(value))
        table.add_section()
    return table


def rich_table(title: str, rows: Rows) -> Table:
    """A rich table; text columns left, numbers right."""
    header, body = rows
    table = Table(title=title, title_justify="left")
    for i, name in enumerate(header):
        numeric = i > 0 and body and any(r[i][:1].isdigit() for r in body)
        # the cell is what a row is read by: rich shrinks the widest columns first, so pin it
        table.add_column(
            name, justify="right" if numeric else "left", no_wrap=i == 0, overflow="fold"
        )
    for row in body:
        table.add_row(*row)
    return table
