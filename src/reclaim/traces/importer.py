"""import_trace: a trace format's files -> one canonical store, with a report of what was kept.

The store is built in a hidden sibling folder and moved into place only once complete, so an
import that fails on a bad row leaves no half-written store behind.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from reclaim import registry
from reclaim.errors import TraceError
from reclaim.traces.plausible import check_units
from reclaim.traces.readers.base import TraceReader
from reclaim.traces.schema import META_FILE
from reclaim.traces.sources import sha256
from reclaim.traces.store import STORE_VERSION
from reclaim.traces.writer import StoreWriter


@dataclass(frozen=True)
class ImportReport:
    """rows: rows kept per table; filtered: {table: {reason: rows left out}}."""

    format: str
    store: Path
    rows: dict[str, int]
    filtered: dict[str, dict[str, int]]


def import_trace(fmt: str, src: str | Path, out: str | Path, force: bool = False) -> ImportReport:
    """Read the trace of format ``fmt`` at ``src`` into a store at ``out``.

    A store of the same format already at ``out`` is replaced; a store of another format only
    with ``force``; any other non-empty folder there is refused. Input with no rows is refused
    (an empty store would pass for a real one later). Raises ReclaimError for an unknown format
    and TraceError for unreadable input.
    """
    reader: TraceReader = registry.build("trace_format", fmt)
    src, out = Path(src), Path(out)
    if not src.exists():
        raise TraceError(src, "no such file or folder")
    _check_target(out, fmt, force)
    files = reader.files(src)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.{uuid.uuid4().hex[:12]}.importing"
    staging.mkdir()  # unlike mkdtemp, keeps the user's umask for the finished store
    try:
        writer = StoreWriter(staging)
        reader.read(files, writer)
        rows = writer.close()
        if not any(rows.values()):
            dropped = sum(
                n for reasons in writer.filtered.counts.values() for n in reasons.values()
            )
            problem = f"no row kept ({dropped:,} filtered)" if dropped else "holds no rows"
            raise TraceError(files[0] if len(files) == 1 else src, f"{problem}: nothing imported")
        where = files[0] if len(files) == 1 else src
        check_units(staging, where, fmt, reader.units, reader.period_s, reader.time_origin)
        meta = _meta(fmt, reader, src, files, rows, writer.filtered.counts) | writer.meta
        (staging / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ImportReport(fmt, out, rows, writer.filtered.counts)


def _check_target(out: Path, fmt: str, force: bool) -> None:
    if out.is_file():
        raise TraceError(out, "is a file; the store needs a folder")
    meta = out / META_FILE
    if out.is_dir() and any(out.iterdir()) and not meta.is_file():
        raise TraceError(out, "folder is not empty and not a trace store; refusing to overwrite")
    if meta.is_file() and not force:
        try:
            held = json.loads(meta.read_text()).get("format")
        except (OSError, ValueError, AttributeError):
            held = None
        if held != fmt:
            raise TraceError(
                out,
                f"holds a {held or 'unreadable'} store, not {fmt}; "
                "pass --force to replace it, or choose another -o",
            )


def _meta(
    fmt: str,
    reader: TraceReader,
    src: Path,
    files: list[Path],
    rows: dict[str, int],
    filtered: dict[str, dict[str, int]],
) -> dict[str, Any]:
    return {
        "store_version": STORE_VERSION,
        "format": fmt,
        "created_by": f"reclaim {version('reclaim')}",
        "sources": [
            {
                "name": p.relative_to(src).as_posix() if src.is_dir() else p.name,
                "size": p.stat().st_size,
                "sha256": sha256(p),
            }
            for p in files
        ],
        "units": reader.units,
        "time_origin": reader.time_origin,
        "period_s": reader.period_s,
        "rows": rows,
        "filtered": filtered,
        "attribution": reader.attribution,
        "notes": list(reader.notes),
    }


def print_report(report: ImportReport, console: Console) -> None:
    """A table of rows kept and rows filtered by reason, per store table."""
    table = Table(title=f"{report.format} -> {report.store}", title_justify="left")
    table.add_column("table")
    table.add_column("kept", justify="right")
    table.add_column("filtered", justify="right")
    table.add_column("reason")
    for name in dict.fromkeys([*report.rows, *report.filtered]):
        reasons = report.filtered.get(name, {})
        kept = report.rows.get(name)
        table.add_row(name, "-" if kept is None else f"{kept:,}", f"{sum(reasons.values()):,}", "")
        for reason, n in reasons.items():
            table.add_row("", "", f"{n:,}", reason)
    console.print(table)
