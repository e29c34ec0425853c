"""Progress of long work: rich's bar on a terminal, a plain line every few seconds elsewhere.

Without a terminal (CI logs, ``nohup``, a pipe) rich draws nothing, so a long run would look
hung; :class:`LoggedProgress` then prints what the bar would show as one line, at most every
``every_s`` seconds and once more when it stops.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class LoggedProgress(Progress):
    """rich's Progress that also logs plain lines when its console is not a terminal."""

    def __init__(self, *columns: str | ProgressColumn, every_s: float = 5.0, **kwargs) -> None:
        super().__init__(*columns, **kwargs)
        self.every_s = every_s
        self._logged = time.monotonic()

    def update(self, task_id: TaskID, **kwargs) -> None:
        super().update(task_id, **kwargs)
        self._log(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._log(task_id)

    def stop(self) -> None:
        for task_id in self.task_ids:
            self._log(task_id, final=True)
        super().stop()

    def _log(self, task_id: TaskID, final: bool = False) -> None:
        if self.console.is_terminal:
            return
        now = time.monotonic()
        if not final and now - self._logged < self.every_s:
            return
        self._logged = now
        task = self._tasks[task_id]
        parts = [c.render(task) for c in self.columns if not isinstance(c, BarColumn | str)]
        line = "  ".join(p.plain for p in parts if isinstance(p, Text) and p.plain.strip())
        self.console.print(line, highlight=False, markup=False)


def count_progress(unit: str, console: Console | None = None) -> Progress:
    """Description, bar, done/total ``unit`` (a rich format: it may read task fields), elapsed
    time and the estimate of what is left; gone once finished, so that the results printed next
    stand alone."""
    return LoggedProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
