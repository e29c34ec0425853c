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
    """One experiment: notes (counts, what is missing), its table, and figures as (caption,
    file name relative to the page)."""

    heading: str
    notes: list[str]
    table: Rows
    figures: list[tuple[str, str]] = field(default_factory=list)


def _table(rows: Rows) -> str:
    header, body = rows
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = []
    for row in body:
        cells = "".join(
            f'<td class="absent">{escape(c)}</td>'
            if c.startswith("not in")
            else f"<td>{escape(c)}</td>"
            for c in row
        )
        lines.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def page(title: str, notes: list[str], sections: list[Section], paper: Rows, source: str) -> str:
    """The report page: notes, a section per experiment, then the paper's numbers beside ours."""
    parts = [f"<h1>{escape(title)}</h1>"] + [f'<p class="note">{escape(n)}</p>' for n in notes]
    for s in sections:
        parts.append(f"<h2>{escape(s.heading)}</h2>")
        parts += [f'<p class="note">{escape(n)}</p>' for n in s.notes]
        parts.append(_table(s.table))
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
    parts.append(_table(paper))
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
