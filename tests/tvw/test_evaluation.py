"""Policies on sequences: parsing, the replay loop, whole evaluations and the CLI command."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from hand_sequences import SEQ

from reclaim.errors import ReclaimError
from reclaim.traces.store import sample_path
from reclaim.tvw.evaluate import Policy, evaluate, run_policy, summarize
from reclaim.tvw.pool import load_pool
from reclaim.tvw.scenario import ScenarioSpec


def test_policies_take_the_papers_view_unless_told():
    assert Policy.parse("best-fit") == Policy("best-fit", "current")
    assert Policy.parse("tetris") == Policy("tetris", "peak")
    assert Policy.parse("corp-packing").view == "peak"
    assert Policy.parse("tetris@current").label == "tetris@current"
    assert Policy.parse("best-fit>first-fit@peak") == Policy("best-fit>first-fit", "peak")
    with pytest.raises(ReclaimError, match="unknown placement 'bestfit'"):
        Policy.parse("bestfit")
    with pytest.raises(ReclaimError, match="view must be"):
        Policy.parse("best-fit@tomorrow")


def test_best_fit_packs_on_current_usage_and_tetris_spreads_on_peaks():
    spec = ScenarioSpec(machines=2, units=4, max_units=4)
    packed = run_policy(SEQ, Policy.parse("best-fit"), spec)
    # 0 and 1 share machine 0 (best-fit: least free); 2 (4, 4) then needs machine 1.
    assert packed.host.tolist() == [0, 0, 1]
    # Tetris, on peaks, over both waiting workloads: alignment 1 for 0 (3/4 + 1/4), 1/2 for 1;
    # remaining work 2 and 1/2, eps = 0.75 / 1.25: 1 scores 0.2, 0 -0.2, so 1 goes first
    # (machine 0), then 0 to the emptier machine 1; 2 (4, 4) takes machine 0 once 1 has left.
    spread = run_policy(SEQ, Policy.parse("tetris"), spec)
    assert spread.host.tolist() == [1, 0, 0] and spread.start.tolist() == [0, 0, 1]


@pytest.fixture(scope="module")
def runs():
    pools = [load_pool(sample_path("google2011-derived"))]
    policies = [Policy.parse(p) for p in ("best-fit", "tetris", "corp-packing")]
    return evaluate(pools, ScenarioSpec(jobs=30), [0.5, 0.8], policies, 2, seed=4)


def test_every_workload_is_placed_and_peak_views_never_overshoot(runs):
    assert len(runs) == 2 * 2 * 3
    assert runs["unplaced"].sum() == 0
    peak = runs.filter(pl.col("policy").str.ends_with("@peak"))
    assert peak["overshoot_pct"].max() == 0.0
    assert runs["machines_used"].max() <= 10
    assert runs.filter(pl.col("load") == 0.8)["offered_cpu"].mean() > 0.5


def test_same_seed_same_runs(runs):
    pools = [load_pool(sample_path("google2011-derived"))]
    policies = [Policy.parse(p) for p in ("best-fit", "tetris", "corp-packing")]
    again = evaluate(pools, ScenarioSpec(jobs=30), [0.5, 0.8], policies, 2, seed=4)
    assert again.equals(runs)


def test_summary_averages_sequences(runs):
    summary = summarize(runs)
    assert len(summary) == 6 and summary["sequences"].to_list() == [2] * 6
    first = runs.filter((pl.col("load") == 0.5) & (pl.col("policy") == "best-fit@current"))
    assert summary["util_cpu"][0] == pytest.approx(first["util_cpu"].mean())
    assert np.isfinite(summary["util_cpu_std"][0])


def test_place_eval_prints_the_table_and_draws_the_charts(tmp_path):
    out = tmp_path / "place"
    args = ["place", "eval", "--store", str(sample_path("google2011-derived")), "--load", "50"]
    args += ["--policies", "best-fit,tetris", "--sequences", "1", "--jobs", "12", "-o", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", "from reclaim.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "tetris@peak" in done.stdout and "% overshoot" in done.stdout
    assert len(pl.read_parquet(out / "runs.parquet")) == 2
    assert (out / "google2011-derived.png").stat().st_size > 10_000
    bad = subprocess.run(
        [
            sys.executable,
            "-c",
            "from reclaim.cli import main; main()",
            "place",
            "eval",
            "--load",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "--load" in bad.stderr and "Traceback" not in bad.stderr


def test_place_eval_reads_google2019_by_name_in_units_of_its_limits(tmp_path):
    from cli_runner import reclaim

    out = tmp_path / "g19"
    args = ["--load", "50", "--policies", "best-fit", "--sequences", "1", "--jobs", "12"]
    done = reclaim("place", "eval", "--store", "google2019-usage", *args, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "google2019-usage" in done.stdout and "own limit" in done.stdout
    assert set(pl.read_parquet(out / "runs.parquet")["store"]) == {"google2019-usage"}
    scenario = (out / "scenario.json").read_text()
    assert '"scale": "auto"' in scenario
    for bad, message in (
        (["--store", "google2019-usage", "--scale", "own"], "scale must be auto, limit, peak"),
        (["--store", "no-such-sample"], "not a trace store"),
    ):
        done = reclaim("place", "eval", *bad, *args, "-o", str(tmp_path / "bad"))
        assert done.returncode == 2 and message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
