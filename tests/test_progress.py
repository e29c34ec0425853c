"""Progress without a terminal: plain lines at most every few seconds, and one when done."""

from __future__ import annotations

import io

from rich.console import Console

from reclaim.progress import count_progress


def logged(console: Console, every_s: float, steps: int) -> None:
    with count_progress("runs  {task.fields[last]}", console) as progress:
        progress.every_s = every_s
        task = progress.add_task("pace-fig3", total=steps, last="")
        for i in range(steps):
            progress.update(task, advance=1, last=f"done: run {i}")


def lines(out: io.StringIO) -> list[str]:
    return [line for line in out.getvalue().splitlines() if line.strip()]


def test_without_a_terminal_progress_is_logged_as_plain_lines():
    out = io.StringIO()
    logged(Console(file=out, force_terminal=False, width=120), every_s=0.0, steps=3)
    said = lines(out)
    assert said[0].startswith("pace-fig3  1/3  runs  done: run 0")
    assert said[-1].startswith("pace-fig3  3/3  runs  done: run 2")  # once more at stop
    assert len(said) == 4


def test_lines_are_spaced_and_a_terminal_gets_none():
    out = io.StringIO()
    logged(Console(file=out, force_terminal=False, width=120), every_s=60.0, steps=100)
    said = lines(out)
    assert len(said) == 1 and said[0].startswith("pace-fig3  100/100  runs")  # only the final
    shown = io.StringIO()
    logged(Console(file=shown, force_terminal=True, width=120), every_s=0.0, steps=3)
    assert "pace-fig3  1/3  runs" not in shown.getvalue()
