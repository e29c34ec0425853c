"""A self-contained HTML page: inline style, images by relative path, no script and no network,
so the report directory can be copied, archived or opened from disk as it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from reclaim.report.experiment_tables import Rows

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
td.absent { color: #999; font-style: italic; }
figure { margin: 1em 0; } img { max-width: 100%; }
p.note { color: #555; margin: 0.2em 0; }
"""


@dataclass
class Section:
    """One experiment: notes (counts, what is missing), its table, figures as (caption, file
    name relative to the page), and further tables as (title, rows) after the main one."""

    heading: str
    notes: list[str]
    table: Rows
    figures: list[tuple[str, str]] = field(default_factory=list)
    tables: list[tuple[str, Rows]] = field(default_factory=list)


def _table(rows: Rows) -> str:
    """A table. A row's first cell keeps its line breaks (a setting above our cell); elsewhere a
    second line (an interval under its mean) joins the first with a space."""
    header, body = rows
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = []
    for row in body:
        cells = []
        for i, c in enumerate(row):
            text = escape(c).replace("\n", "<br>" if i == 0 else " ")
            absent = ' class="absent"' if c.startswith("not in") else ""
            cells.append(f"<td{absent}>{text}</td>")
        lines.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def page(
    title: str,
    notes: list[str],
    sections: list[Section],
    paper: Rows,
    source: str,
    context: Rows | None = None,
) -> str:
    """The report page: notes, a section per experiment, then the paper's numbers beside ours and
    (``context``) the numbers of each experiment that explain the gaps."""
    parts = [f"<h1>{escape(title)}</h1>"] + [f'<p class="note">{escape(n)}</p>' for n in notes]
    for s in sections:
        parts.append(f"<h2>{escape(s.heading)}</h2>")
        parts += [f'<p class="note">{escape(n)}</p>' for n in s.notes]
        parts.append(_table(s.table))
        for heading, rows in s.tables:
            parts += [f"<h3>{escape(heading)}</h3>", _table(rows)]
        parts += [
            f'<figure><img src="{escape(src)}" alt="{escape(caption)}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>"
            for caption, src in s.figures
        ]
    parts.append("<h2>Paper vs ours</h2>")
    parts.append(
        f'<p class="note">Headline numbers from {escape(source)}, at the paper\'s scale (250 hosts, '
        "150,000 applications, 10 runs); ours are means over this store's seeds at its scale.</p>"
    )
    if context is not None:
        parts.append(
            '<p class="note">Ours: mean [95 % Student-t interval] over seeds. A claimed direction '
            "is reproduced when the interval (of the difference paired by seed, Δ, where the claim "
            "compares two cells) lies wholly on its side, and contradicted when wholly on the "
            "other.</p>"
        )
    parts.append(_table(paper))
    if context is not None:
        parts.append("<h3>What explains the gaps</h3>")
        parts.append(
            '<p class="note">Per experiment: the share of applications (and of requested '
            "memory-time) that runs past the grace period, so that shaping can act on it at all; "
            "the baseline's memory slack (1 - the share of its request an application uses); and "
            "the share of forecasts the naive fallback answered.</p>"
        )
        parts.append(_table(context))
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
