"""The live report: the paired change of medians with its interval, the section-5 table and
Figure 5, from run folders as ``reclaim live run`` writes them."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from cli_runner import reclaim
from reclaim.live.compare import SEEDS_FILE
from reclaim.live.report import live_tables, paper_table, plot_figure5, run_dir


def _apps(slack, turnaround, preemptions=None):
    n = len(slack)
    return pl.DataFrame(
        {
            "app": np.arange(n, dtype=np.int32),
            "state": ["done"] * n,
            "slack_mem": np.asarray(slack, float),
            "turnaround": np.asarray(turnaround, float),
            "failures": np.zeros(n, np.int32),
            "preemptions": np.asarray(preemptions if preemptions else [0] * n, np.int32),
            "component_losses": np.zeros(n, np.int32),
        }
    )


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(1)
    base_slack = rng.uniform(0.2, 0.4, 50)
    base_turn = rng.uniform(1000, 5000, 50)
    runs = {
        ("live", "reservation"): _apps(base_slack, base_turn),
        ("live", "shaped"): _apps(base_slack * 0.5, base_turn * 0.8, [1] + [0] * 49),
        ("simulated", "reservation"): _apps(base_slack, base_turn),
        ("simulated", "shaped"): _apps(base_slack, base_turn),
    }
    for (source, mode), apps in runs.items():
        d = run_dir(tmp_path, source, mode)
        d.mkdir(parents=True)
        apps.write_parquet(d / "apps.parquet")
        summary = {"apps_done": 50.0, "app_slack_mem_mean": float(apps["slack_mem"].mean())}
        (d / "summary.json").write_text(json.dumps({"summary": summary}))
    (tmp_path / "live.json").write_text("{}")
    seeds = {"seed": [0, 1, 2], "slack_mem": [-0.1, -0.2, -0.3], "turnaround": [0.0] * 3}
    pl.DataFrame(seeds | {"failed_apps": [0.0, 1.0, 2.0]}).write_parquet(tmp_path / SEEDS_FILE)
    return tmp_path


def test_paper_table_rows(folder):
    table = paper_table(folder)
    slack = table.row(0, named=True)
    assert slack["paper"] == -0.40
    assert slack["live"] == pytest.approx(-0.5)
    assert slack["simulated"] == pytest.approx(0.0)
    turnaround = table.row(1, named=True)
    assert turnaround["live"] == pytest.approx(-0.2)
    assert turnaround["live_low"] < -0.2 + 1e-9 < turnaround["live_high"] + 1e-9
    failed = table.row(2, named=True)
    assert (failed["live"], failed["simulated"]) == (1.0, 0.0)
    # over seeds: a t-interval around the mean of the per-seed changes
    assert slack["seeds"] == pytest.approx(-0.2) and slack["seeds_n"] == 3
    assert slack["seeds_low"] < -0.3 and slack["seeds_high"] > -0.1


def test_figure5_and_tables(folder):
    path = plot_figure5(folder, folder / "figure5.png")
    assert path.stat().st_size > 10_000
    titles = [t.title for t in live_tables(folder)]
    assert titles[0].startswith("Section 5") and "Runs" in titles


def test_report_command_on_a_live_folder(folder, tmp_path):
    done = reclaim("report", str(folder), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "Section 5" in done.stdout
    assert (tmp_path / "out" / "figure5.png").is_file()
