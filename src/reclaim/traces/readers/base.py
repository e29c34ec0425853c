"""TraceReader: what one trace format provides to the importer, and file discovery they share."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from reclaim.core.component import Component
from reclaim.errors import TraceError
from reclaim.traces.writer import StoreWriter


class TraceReader(Component, ABC):
    """One trace format: which files it reads under SRC and how they become store tables.

    The class attributes go into meta.json: ``units`` ({"time", "cpu", "mem"} -> unit),
    ``time_origin`` ("unix" or "trace-relative"), ``period_s`` (nominal sampling period of the
    usage table, None without usage), ``attribution`` (source and terms of use) and ``notes``
    (what a user of the store must know about the values).
    """

    units: ClassVar[dict[str, str]]
    time_origin: ClassVar[str]
    period_s: ClassVar[float | None]
    attribution: ClassVar[str]
    notes: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def files(self, src: Path) -> list[Path]:
        """The files of ``src`` this format reads, in reading order; TraceError if there are none."""

    @abstractmethod
    def read(self, files: list[Path], out: StoreWriter) -> None:
        """Validate ``files`` and append their rows to ``out``, counting what is filtered."""


def natural_key(path: Path) -> list[int | str]:
    """Sort key that puts 2013-9 before 2013-10 and 9.csv before 10.csv."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def find(src: Path, pattern: str, what: str) -> list[Path]:
    """Files under ``src`` (or ``src`` itself) whose name matches the regex ``pattern``,
    in natural order; TraceError saying ``what`` was expected if there is none."""
    if src.is_file():
        found = [src] if re.fullmatch(pattern, src.name) else []
    else:
        found = [p for p in src.rglob("*") if p.is_file() and re.fullmatch(pattern, p.name)]
    if not found:
        raise TraceError(src, f"no trace files found here (expected {what})")
    return sorted(found, key=natural_key)
