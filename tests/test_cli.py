"""The command line as a user meets it: exit codes, one-line errors, outputs on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest


def reclaim(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from reclaim.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_simulate_on_the_shipped_sample_writes_results(tmp_path):
    out = tmp_path / "run"
    done = reclaim("simulate", "--apps", "60", "--hosts", "20x32c128g", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "turnaround" in done.stdout and "CPU slack" in done.stdout
    apps = pl.read_parquet(out / "apps.parquet")
    assert len(apps) == 60
    assert set(apps["state"]) <= {"done", "rejected"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["apps"] == 60
    assert (out / "timeline.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--hosts", "12x"], "expected COUNTxCORESgMEMg"),
        (["simulate", "--apps", "5", "--controller", "nope"], "unknown controller 'nope'"),
        (["simulate", "--apps", "5", "--placement", "worst-fit"], "unknown placement 'worst-fit'"),
        (["simulate", "--jobs", "/nonexistent/store"], "not a trace store"),
    ],
)
def test_user_errors_are_one_line_without_traceback(tmp_path, args, message):
    done = reclaim(*args, "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1


def test_bad_option_is_a_usage_error():
    done = reclaim("simulate", "--bogus")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
