"""Reading a result store: the per-seed ratio over the baseline, 95 % intervals over seeds,
older runners' columns, partial stores."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from reclaim.errors import ReclaimError
from reclaim.report.experiment_data import (
    aggregate,
    cell_name,
    derive,
    load_results,
)


def runs_frame(rows: list[tuple]) -> pl.DataFrame:
    """(label, controller, seed, turnaround_mean_s) rows with neutral other columns."""
    label, controller, seed, turnaround = zip(*rows, strict=True)
    n = len(rows)
    return pl.DataFrame(
        {
            "run_id": [str(i) for i in range(n)],
            "experiment": ["e"] * n,
            "scale": ["s"] * n,
            "label": label,
            "controller": controller,
            "forecaster": [None] * n,
            "k1": [None] * n,
            "k2": [None] * n,
            "coverage": [None] * n,
            "seed": seed,
            "turnaround_mean_s": turnaround,
            "apps": [10.0] * n,
            "apps_failed_at_least_once": [1.0] * n,
            "slack_cpu_weighted": [0.5] * n,
            "slack_mem_weighted": [0.6] * n,
        },
        schema_overrides={c: pl.Float64 for c in ("k1", "k2", "coverage")}
        | {"forecaster": pl.String},
    )


def test_ratio_is_against_the_baseline_of_the_same_seed_then_averaged():
    # rows shuffled: matching must go by seed, not by position
    runs = derive(
        runs_frame(
            [
                ("p", "pessimistic", 2, 1000.0),
                ("reservation", "reservation", 1, 100.0),
                ("p", "pessimistic", 1, 50.0),
                ("reservation", "reservation", 2, 1000.0),
            ]
        )
    )
    by_seed = dict(runs.filter(pl.col("label") == "p").select("seed", "turnaround_ratio").rows())
    assert by_seed == {1: pytest.approx(2.0), 2: pytest.approx(1.0)}
    cells = aggregate(runs)
    assert cells["label"].to_list() == ["reservation", "p"]  # baseline first
    shaped = cells.row(1, named=True)
    # mean of per-seed ratios (1.5), not the ratio of mean turnarounds (1100 / 1050)
    assert shaped["turnaround_ratio"] == pytest.approx(1.5)
    assert shaped["turnaround_ratio_std"] == pytest.approx(0.7071, abs=1e-4)
    assert shaped["seeds"] == 2 and sorted(shaped["run_ids"]) == ["0", "2"]


def test_a_run_without_a_same_seed_baseline_has_no_ratio():
    runs = derive(
        runs_frame([("reservation", "reservation", 1, 100.0), ("p", "pessimistic", 7, 50.0)])
    )
    assert runs.filter(pl.col("seed") == 7)["turnaround_ratio"].to_list() == [None]


def test_without_per_application_columns_slack_and_failure_rate_fall_back():
    runs = derive(runs_frame([("reservation", "reservation", 1, 100.0)]))
    row = runs.row(0, named=True)
    assert row["slack_cpu"] == 0.5 and row["slack_mem"] == 0.6
    assert row["failure_rate"] == pytest.approx(0.1)
    assert row["slack_source"] == "cluster"
    assert row["failure_source"] == "core OOM only (older runner)"
    # columns an older runner never wrote are nulls, not errors
    assert row["shapeable_apps"] is None and row["work_lost_gib_h"] is None


def test_per_application_columns_win_where_present_row_by_row():
    frame = runs_frame(
        [("reservation", "reservation", 1, 100.0), ("reservation", "reservation", 2, 100.0)]
    ).with_columns(
        app_slack_cpu_mean=pl.Series([0.1, None]),
        app_slack_mem_mean=pl.Series([0.2, None]),
        app_idle_cpu_mean=pl.Series([0.4, None]),
        app_idle_mem_mean=pl.Series([0.5, None]),
        failure_rate=pl.Series([0.3, None]),
        apps_failed=pl.Series([3.0, None]),
    )
    first, second = derive(frame).iter_rows(named=True)
    assert (first["slack_cpu"], first["slack_mem"], first["failure_rate"]) == (0.1, 0.2, 0.3)
    assert first["slack_source"] == "per-application"
    assert first["failure_source"] == "any component stopped"
    assert (second["slack_mem"], second["failure_rate"]) == (0.6, pytest.approx(0.1))


def test_an_older_runners_columns_keep_what_they_measured():
    # before the paper's measures: app_slack was the idle share of the allocation, failure_rate
    # counted core OOM only and work_lost_core_h held component-hours
    frame = runs_frame([("reservation", "reservation", 1, 100.0)]).with_columns(
        app_slack_cpu_mean=pl.lit(0.3),
        app_slack_mem_mean=pl.lit(0.4),
        failure_rate=pl.lit(0.2),
        work_lost_core_h=pl.lit(7.0),
    )
    row = derive(frame).row(0, named=True)
    assert (row["app_idle_cpu_mean"], row["app_idle_mem_mean"]) == (0.3, 0.4)
    assert row["app_slack_mem_mean"] is None
    assert row["slack_mem"] == 0.4
    assert row["slack_source"] == "per-application idle share (older runner)"
    assert (row["core_oom_rate"], row["failure_rate"]) == (0.2, 0.2)
    assert row["failure_source"] == "core OOM only (older runner)"
    assert (row["work_lost_component_h"], row["work_lost_core_h"]) == (7.0, None)


def test_turnaround_ratio_interval_is_over_the_per_seed_ratios():
    runs = derive(
        runs_frame(
            [
                ("reservation", "reservation", 1, 100.0),
                ("reservation", "reservation", 2, 200.0),
                ("reservation", "reservation", 3, 300.0),
                ("p", "pessimistic", 1, 50.0),
                ("p", "pessimistic", 2, 100.0),
                ("p", "pessimistic", 3, 100.0),
            ]
        )
    )
    shaped = aggregate(runs).row(1, named=True)
    # per-seed ratios 2, 2, 3: mean 2.333, std 0.5774, t(0.975, 2 dof) = 4.3027
    assert shaped["turnaround_ratio"] == pytest.approx(7 / 3)
    assert shaped["turnaround_ratio_n"] == 3
    assert shaped["turnaround_ratio_lo"] == pytest.approx(0.899115, abs=1e-5)
    assert shaped["turnaround_ratio_hi"] == pytest.approx(3.767551, abs=1e-5)
    baseline = aggregate(runs).row(0, named=True)
    assert baseline["turnaround_ratio_lo"] == pytest.approx(1.0)  # every seed exactly 1


def test_a_slack_interval_ends_at_one_and_may_go_below_zero():
    runs = derive(
        runs_frame([("reservation", "reservation", s, 100.0) for s in (1, 2)])
    ).with_columns(slack_cpu=pl.Series([0.95, -0.5]))
    cell = aggregate(runs).row(0, named=True)
    # mean 0.225, std 1.0253, t(0.975, 1 dof) = 12.706: [-8.99, 9.44] before the cut at one
    assert cell["slack_cpu"] == pytest.approx(0.225)
    assert cell["slack_cpu_hi"] == 1.0
    assert cell["slack_cpu_lo"] == pytest.approx(0.225 - 12.7062 * 1.02530 / 2**0.5, abs=1e-3)


def test_an_interval_of_applications_done_ends_at_the_applications_run():
    runs = derive(
        runs_frame([("reservation", "reservation", s, 100.0) for s in (1, 2)])
    ).with_columns(apps=pl.lit(150_000.0), apps_done=pl.Series([99_885.0, 140_798.0]))
    cell = aggregate(runs).row(0, named=True)
    assert cell["apps_done_hi"] == 150_000.0  # the t-interval alone reaches 380,000
    assert cell["apps_done_lo"] == 0.0
    one_seed = aggregate(runs.filter(pl.col("seed") == 1)).row(0, named=True)
    assert one_seed["apps_done_lo"] is None and one_seed["apps_done_hi"] is None
    unknown = aggregate(runs.with_columns(apps=None)).row(0, named=True)
    assert unknown["apps_done_hi"] > 150_000.0


def test_one_seed_has_no_interval_and_a_repeated_seed_counts_once():
    runs = derive(
        runs_frame(
            [
                ("reservation", "reservation", 1, 100.0),
                ("p", "pessimistic", 1, 50.0),
                ("p", "pessimistic", 1, 100.0),
            ]
        )
    )
    shaped = aggregate(runs).row(1, named=True)
    assert (shaped["runs"], shaped["seeds"], shaped["turnaround_mean_s_n"]) == (2, 1, 1)
    assert shaped["turnaround_mean_s"] == pytest.approx(75.0)
    assert shaped["turnaround_mean_s_lo"] is None and shaped["turnaround_mean_s_hi"] is None


def test_cell_name_shows_the_parameters_that_set_a_cell_apart():
    cell = {"label": "pessimistic/gp-exp", "k1": 0.05, "k2": 3.0, "coverage": None}
    assert cell_name(cell) == "pessimistic/gp-exp K1=5% K2=3"
    assert cell_name({"label": "x", "coverage": 0.99}) == "x cov=0.99"


def test_real_store_ratio_matches_the_written_summaries(fig3_store):
    store = load_results(fig3_store)
    assert (store.name, store.scale, store.pending) == ("pace-fig3", "tiny", 0)

    def turnaround(run_id):
        doc = json.loads((fig3_store / "runs" / run_id / "summary.json").read_text())
        return doc["summary"]["turnaround_mean_s"]

    baseline = {
        r["seed"]: turnaround(r["run_id"])
        for r in store.runs.filter(pl.col("controller") == "reservation").iter_rows(named=True)
    }
    for r in store.runs.iter_rows(named=True):
        assert r["turnaround_ratio"] == pytest.approx(baseline[r["seed"]] / turnaround(r["run_id"]))
    # the summaries carry per-application slack, so it is what the report uses
    assert set(store.runs["slack_source"]) == {"per-application"}


def test_missing_runs_parquet_is_a_one_line_error(tmp_path):
    with pytest.raises(ReclaimError, match="no runs.parquet") as err:
        load_results(tmp_path)
    assert "\n" not in str(err.value)


def test_unreadable_runs_parquet_is_an_error(tmp_path):
    (tmp_path / "runs.parquet").write_bytes(b"not parquet")
    with pytest.raises(ReclaimError, match="unreadable"):
        load_results(tmp_path)


def test_interrupted_sweep_reports_what_finished(fig3_store, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(fig3_store, partial)
    runs = pl.read_parquet(partial / "runs.parquet")
    runs.head(4).write_parquet(partial / "runs.parquet")  # two runs started, never finished
    shutil.rmtree(partial / "runs" / "000")  # and a finished run whose files were lost
    store = load_results(partial)
    assert len(store.runs) == 4 and store.pending == 2
    assert store.run_table(["000"], "apps") is None
    assert len(store.run_table(["000", "001"], "apps")) == 40


# ---- corrupt and foreign files in a store (issue 33) ----------------------------------------
def _copy(store, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    return copy


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "expected a JSON object, got a list"),
        (b"{not json", "not valid JSON"),
        (bytes(range(256)), "binary data, not a text file"),
    ],
)
def test_an_experiment_json_that_is_no_object_is_one_line(fig3_store, tmp_path, content, message):
    copy = _copy(fig3_store, tmp_path)
    (copy / "experiment.json").write_bytes(content)
    with pytest.raises(ReclaimError, match=message) as err:
        load_results(copy)
    assert str(err.value).startswith(str(copy / "experiment.json")) and "\n" not in str(err.value)


def test_text_where_numbers_are_due_is_refused(fig3_store, tmp_path):
    copy = _copy(fig3_store, tmp_path)
    runs = pl.read_parquet(copy / "runs.parquet")
    metric = next(c for c, t in runs.schema.items() if t == pl.Float64 and c not in ("k1", "k2"))
    runs.with_columns(pl.col(metric).cast(pl.String)).write_parquet(copy / "runs.parquet")
    with pytest.raises(ReclaimError, match=f"column '{metric}' holds String where numbers"):
        load_results(copy)


def test_a_truncated_run_table_is_named_in_one_line(fig3_store, tmp_path):
    copy = _copy(fig3_store, tmp_path)
    apps = copy / "runs" / "000" / "apps.parquet"
    apps.write_bytes(apps.read_bytes()[:100])
    store = load_results(copy)
    with pytest.raises(ReclaimError, match="apps.parquet: unreadable") as err:
        store.run_table(["000"], "apps")
    assert "\n" not in str(err.value)
