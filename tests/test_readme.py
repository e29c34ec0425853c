"""The README's library example runs as written, and says what it claims."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def library_example() -> str:
    section = README.read_text().split("## In a notebook", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_library_example_runs(capsys):
    scope: dict = {}
    exec(compile(library_example(), str(README), "exec"), scope)
    base, shaped, halved = scope["base"], scope["shaped"], scope["halved"]
    assert shaped.summary["slack_cpu_mean"] < base.summary["slack_cpu_mean"]
    assert halved.summary["slack_cpu_mean"] < base.summary["slack_cpu_mean"]
    assert halved.summary["failure_rate"] <= base.summary["failure_rate"]  # memory untouched
    assert scope["wider"].k2 == 4.0
    assert "pessimistic + GP" in capsys.readouterr().out
