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
from reclaim.report.html import page


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
    # the GP row: paper 10.6x, ours from the K1 = 5 %, K2 = 3 cell (one seed: no interval)
    assert re.search(rf"10\.6x</td><td>{re.escape(ours)}</td><td>1</td>", html)
    assert "ours: pessimistic/gp-exp K1=5% K2=3" in html
    assert "inconclusive (one seed)" in html
    assert "7.5x" in html and "37.67%" in html and "section 4.2" in html
    assert html.count("not in this result store") == 8  # ARIMA x 3, oracle x 5
    assert "What explains the gaps" in html and "shapeable memory-time" in html
    assert "failures and lost work" in html
    images = re.findall(r'<img src="([^"]+)"', html)
    assert images == ["pace-fig4-boxplots.png", "pace-fig4-heatmaps.png"]
    assert all((tmp_path / name).stat().st_size > 10_000 for name in images)


def test_intervals_over_seeds_reach_the_tables(fig3_store, tmp_path):
    report = write_report(fig3_store, tmp_path)
    header, rows = report.sections[0].table
    pessimistic = next(r for r in rows if r[0].startswith("pessimistic/oracle"))
    cell = (
        aggregate(load_results(fig3_store).runs)
        .filter(pl.col("label") == "pessimistic/oracle")
        .row(0, named=True)
    )
    m = "failure_rate"
    assert pessimistic[header.index("failure rate")] == fmt(
        m, cell[m], cell[f"{m}_lo"], cell[f"{m}_hi"]
    )
    assert "[" in pessimistic[header.index("ratio over baseline")]  # two seeds: an interval
    paper_header, paper = report.paper
    verdicts = {r[paper_header.index("direction reproduced?")].split("\n")[0] for r in paper}
    assert verdicts <= {"yes", "no", "inconclusive", "-", ""}
    assert any(n.startswith("What shaping could act on:") for n in report.sections[0].notes)


def test_an_older_store_without_the_new_columns_still_renders(fig3_store, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(fig3_store, old, ignore=shutil.ignore_patterns("report"))
    runs = pl.read_parquet(old / "runs.parquet")
    new = [
        "apps_failed",
        "core_oom_rate",
        "preempted_rate",
        "elastic_loss_rate",
        "resubmissions",
        "work_lost_core_h",
        "work_lost_gib_h",
        "app_idle_cpu_mean",
        "app_idle_mem_mean",
        "cluster_slack_cpu_mean",
        "cluster_slack_mem_mean",
        "shapeable_apps",
        "shapeable_cpu",
        "shapeable_mem",
        "forecast_fallback_share",
        "realised_coverage",
    ]
    # what the older runner wrote: component-hours under work_lost_core_h, core OOM share as
    # failure_rate
    runs = (
        runs.drop([c for c in new if c in runs.columns])
        .rename({"work_lost_component_h": "work_lost_core_h"})
        .with_columns(failure_rate=pl.col("apps_failed_at_least_once") / pl.col("apps"))
    )
    runs.write_parquet(old / "runs.parquet")
    report = write_report(old, old / "report")
    header, rows = report.sections[0].tables[0][1]
    assert "lost component-h" in header and "lost core-h" not in header
    assert any("older runner" in n for n in report.sections[0].notes)
    assert not any(n.startswith("What shaping") for n in report.sections[0].notes)
    gaps_header, (gaps,) = report.context
    assert gaps[gaps_header.index("shapeable apps")] == "-"
    assert len(report.sections[0].tables) == 1  # no cluster or forecast numbers to show
    assert "pace-fig3-boxplots.png" in report.html.read_text()


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
    assert "direction reproduced?" in done.stdout and "failures and lost work" in done.stdout
    assert "what explains the gaps" in done.stdout
    assert (tmp_path / "out" / "index.html").exists()
    assert (tmp_path / "out" / "pace-fig3-boxplots.png").exists()


def test_cli_without_a_store_is_one_line(tmp_path):
    done = reclaim("report", str(tmp_path))
    assert done.returncode == 2
    assert "no runs.parquet" in done.stderr and "Traceback" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1


def test_page_keeps_a_settings_lines_and_shows_the_gaps_table():
    paper = (["setting", "ours"], [["Fig. 3: oracle\nours: p/oracle", "1.0%\n[0.0, 4.0]%"]])
    context = (["experiment", "shapeable apps"], [["e", "25.0%"]])
    html = page("t", [], [], paper, "s", context)
    assert "<td>Fig. 3: oracle<br>ours: p/oracle</td><td>1.0% [0.0, 4.0]%</td>" in html
    assert "What explains the gaps" in html and "<td>25.0%</td>" in html
    assert "What explains the gaps" not in page("t", [], [], paper, "s")
