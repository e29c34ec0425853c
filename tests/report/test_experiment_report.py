"""The whole report of a store, through the API and the command line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import polars as pl

from reclaim.report.experiment_data import aggregate, load_results
from reclaim.report.experiment_report import write_report
from reclaim.report.experiment_tables import fmt


def reclaim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from reclaim.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )


def test_page_puts_the_papers_numbers_beside_ours(fig4_store, tmp_path):
    report = write_report(fig4_store, tmp_path)
    html = report.html.read_text()
    cells = aggregate(load_results(fig4_store).runs)
    gp = cells.filter((pl.col("k1") == 0.05) & (pl.col("k2") == 3.0)).row(0, named=True)
    ours = fmt("turnaround_ratio", gp["turnaround_ratio"])
    # the GP row: paper 10.6x, ours from the K1 = 5 %, K2 = 3 cell
    assert re.search(rf"10\.6x</td><td>{re.escape(ours)}</td>", html)
    assert "7.5x" in html and "37.67%" in html and "section 4.2" in html
    assert html.count("not in this result store") == 5  # ARIMA x 3, oracle x 2
    images = re.findall(r'<img src="([^"]+)"', html)
    assert images == ["pace-fig4-boxplots.png", "pace-fig4-heatmaps.png"]
    assert all((tmp_path / name).stat().st_size > 10_000 for name in images)


def test_partial_store_says_how_many_runs_it_has(fig3_store, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(fig3_store, partial, ignore=shutil.ignore_patterns("report"))
    pl.read_parquet(partial / "runs.parquet").head(4).write_parquet(partial / "runs.parquet")
    report = write_report(partial, partial / "report")
    assert report.notes[1].startswith("2 run directory(ies) have no finished row")
    assert report.sections[0].notes[1].startswith("4 finished run(s) in 3 cell(s), seeds 1, 2")
    assert "4 finished run(s)" in report.html.read_text()


def test_cli_prints_tables_and_writes_the_report(fig3_store, tmp_path):
    done = reclaim("report", str(fig3_store), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "pessimistic/oracle" in done.stdout and "ratio over baseline" in done.stdout
    assert "37.67%" in done.stdout and "not in this result store" in done.stdout
    assert (tmp_path / "out" / "index.html").exists()
    assert (tmp_path / "out" / "pace-fig3-boxplots.png").exists()


def test_cli_without_a_store_is_one_line(tmp_path):
    done = reclaim("report", str(tmp_path))
    assert done.returncode == 2
    assert "no runs.parquet" in done.stderr and "Traceback" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1
