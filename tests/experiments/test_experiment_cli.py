"""``reclaim experiment`` as a user meets it: listing, running, resuming, one-line errors."""

from __future__ import annotations

import polars as pl

from cli_runner import reclaim
from tiny_spec import TINY, write_spec


def test_list_shows_the_shipped_specs_with_runs_per_scale():
    done = reclaim("experiment", "list")
    assert done.returncode == 0, done.stderr
    for name in ("pace-fig3", "pace-fig4", "conformal"):
        assert name in done.stdout
    assert "paper 490" in done.stdout


def test_run_into_the_default_folder_then_rerun_resumes_everything(tmp_path):
    spec = write_spec(
        tmp_path, TINY.split('[[runs]]\ncontroller = "pessimistic"')[0]
    )  # reservation only
    args = ("experiment", "run", str(spec), "--scale", "other", "--jobs", "1")
    done = reclaim(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "results" / "tiny-other"  # results/<spec name>-<scale>
    assert "1 ran, 0 resumed" in done.stdout
    assert f"reclaim report {out.relative_to(tmp_path)}" in done.stdout
    assert pl.read_parquet(out / "runs.parquet").height == 1
    again = reclaim(*args, cwd=tmp_path)
    assert "0 ran, 1 resumed" in again.stdout


def test_user_errors_are_one_line(tmp_path):
    cases = [
        (["experiment", "run", "pace-fig9"], "no experiment spec 'pace-fig9'"),
        (["experiment", "run", str(write_spec(tmp_path)), "--scale", "huge"], "no scale 'huge'"),
        (
            ["experiment", "run", str(write_spec(tmp_path)), "--backend", "dask"],
            "unknown backend 'dask'",
        ),
    ]
    for args, message in cases:
        done = reclaim(*args, "-o", str(tmp_path / "out"))
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert "Traceback" not in done.stderr + done.stdout
        assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1
