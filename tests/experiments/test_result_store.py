"""The result store: its layout, the run table's schema, and what it refuses."""

from __future__ import annotations

import json

import polars as pl
import pytest

from reclaim.errors import ReclaimError
from reclaim.experiments.result_store import ResultStore
from reclaim.experiments.spec import load_spec
from reclaim.sim.experiment import SHAPING_COLUMNS, execute
from tiny_spec import write_spec


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_spec(tmp_path))


def test_layout_and_one_row_per_finished_run_in_run_order(spec, tmp_path):
    runs = spec.runs("tiny")
    store = ResultStore(tmp_path / "res", spec, "tiny")
    for run in (runs[2], runs[0]):  # finishing out of order
        store.save(run, execute(run))
    table = store.write_table(runs)
    root = tmp_path / "res"
    assert (root / "spec.toml").read_text() == spec.text
    assert json.loads((root / "experiment.json").read_text()) == {
        "name": "tiny",
        "kind": "shaping",
        "scale": "tiny",
        "description": "three cheap runs",
    }
    for run in (runs[0], runs[2]):
        files = {p.name for p in (root / "runs" / run.run_id).iterdir()}
        assert files == {"apps.parquet", "timeline.parquet", "summary.json"}
    assert table.equals(pl.read_parquet(root / "runs.parquet"))
    assert table["run_id"].to_list() == [runs[0].run_id, runs[2].run_id]
    assert dict(list(table.schema.items())[: len(SHAPING_COLUMNS)]) == SHAPING_COLUMNS
    metrics = table.columns[len(SHAPING_COLUMNS) :]
    assert metrics == sorted(metrics) and "turnaround_mean_s" in metrics
    assert all(table.schema[m] == pl.Float64 for m in metrics)
    row = table.row(0, named=True)
    assert (row["label"], row["controller"], row["forecaster"], row["k1"]) == (
        "reservation",
        "reservation",
        None,
        None,
    )
    row = table.row(1, named=True)
    assert (row["forecaster"], row["k1"], row["seed"], row["coverage"]) == ("naive", 0.5, 2, None)
    summary = json.loads((root / "runs" / runs[2].run_id / "summary.json").read_text())
    assert summary["settings"]["experiment"]["run_id"] == runs[2].run_id
    assert row["wall_s"] == summary["stats"]["wall_s"]


def test_a_half_written_run_does_not_count(spec, tmp_path):
    run = spec.runs("tiny")[0]
    store = ResultStore(tmp_path, spec, "tiny")
    (tmp_path / "runs" / f".partial-{run.run_id}").mkdir()
    assert not store.is_done(run)
    assert store.write_table(spec.runs("tiny")).height == 0
    store.save(run, execute(run))  # replaces the leftover
    assert store.is_done(run)
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [run.run_id]


def test_refuses_results_of_another_experiment_or_scale(spec, tmp_path):
    ResultStore(tmp_path, spec, "tiny")
    ResultStore(tmp_path, spec, "tiny")  # the same again is fine
    with pytest.raises(
        ReclaimError, match="holds experiment 'tiny' at scale 'tiny', not 'tiny' at"
    ):
        ResultStore(tmp_path, spec, "other")
    other = load_spec("pace-fig3")
    with pytest.raises(ReclaimError, match="not 'pace-fig3'"):
        ResultStore(tmp_path, other, "tiny")


@pytest.mark.parametrize(
    "foreign", ["meta.json", "usage.parquet", "notes.txt"], ids=["trace-store", "usage", "other"]
)
def test_refuses_a_folder_holding_something_else(spec, tmp_path, foreign):
    """Issue 33: ``experiment run -o`` into a trace store (or any other folder) wrote beside it."""
    (tmp_path / foreign).write_text("{}")
    with pytest.raises(ReclaimError, match=f"holds '{foreign}', which no result store holds"):
        ResultStore(tmp_path, spec, "tiny")
    assert not (tmp_path / "runs").exists()


def test_an_experiment_json_that_is_no_object_is_refused(spec, tmp_path):
    (tmp_path / "experiment.json").write_text("[]")
    with pytest.raises(ReclaimError, match="expected a JSON object, got a list"):
        ResultStore(tmp_path, spec, "tiny")
