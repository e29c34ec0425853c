"""User-facing errors: one line naming the file, row and problem; the CLI prints it and exits non-zero."""

from __future__ import annotations


class ReclaimError(Exception):
    """An expected failure caused by the user's input or configuration (never a bug)."""

    exit_code = 2


class TraceError(ReclaimError):
    """A trace file that cannot be read as its format promises."""

    def __init__(self, path: object, problem: str, row: int | None = None) -> None:
        where = f"{path}" if row is None else f"{path}, row {row}"
        super().__init__(f"{where}: {problem}")
        self.path, self.row, self.problem = path, row, problem
