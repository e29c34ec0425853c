from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reclaim.errors import ReclaimError, TraceError
from reclaim.traces import import_trace, sample_path
from reclaim.traces.readers.google2011_jobs import DISTRIBUTIONS_FILE, QUANTITIES
from reclaim.workload.job_tables import JobTables

FIXTURE = Path(__file__).parents[1] / "traces" / "fixtures" / "google2011_jobs"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("jobs") / "store"
    import_trace("google2011-jobs", FIXTURE, out)
    return out


def test_from_store_reads_every_quantity_with_units_and_counts(store):
    tables = JobTables.from_store(store)
    assert list(tables.tables) == list(QUANTITIES)
    assert tables.units == {
        "gap_s": "s",
        "runtime_s": "s",
        "tasks": "tasks",
        "task_cpu": "normalised",
        "task_mem": "normalised",
    }
    assert tables.counts["runtime_s"] == 3
    assert all(t.shape == (1001,) and t.dtype == np.float64 for t in tables.tables.values())


def test_quantile_interpolates_linearly_between_entries(store):
    tables = JobTables.from_store(store)
    table = tables.tables["runtime_s"]  # 100 up to i = 500, 300 to 999, then 4849
    u = np.array([0.0, 0.5, 0.999, 0.9995, 1.0, 0.25])
    assert tables.quantile("runtime_s", u).tolist() == [100.0, 300.0, 300.0, 2574.5, 4849.0, 100.0]
    assert table[500] == 300.0 and table[499] == 100.0
    assert tables.quantile("runtime_s", np.array([0.4995]))[0] == pytest.approx(200.0)


def test_draw_is_deterministic_and_within_the_table(store):
    tables = JobTables.from_store(store)
    a = tables.draw("gap_s", 10_000, np.random.default_rng(7))
    b = tables.draw("gap_s", 10_000, np.random.default_rng(7))
    assert a.shape == (10_000,) and np.array_equal(a, b)
    assert a.min() >= 20.0 and a.max() <= 120.0
    # gaps 20 and 120: entries 0-999 are 20, entry 1000 is 120, so only the last 0.1 % of
    # draws lie above 20
    assert np.median(a) == 20.0 and 0 < (a > 20.0).sum() < 40


def test_unknown_or_empty_quantity_is_an_error(store, tmp_path):
    tables = JobTables.from_store(store)
    with pytest.raises(ValueError, match="unknown quantity 'cpu'"):
        tables.draw("cpu", 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        tables.quantile("gap_s", np.array([1.5]))
    jobs_only = tmp_path / "src"
    shutil.copytree(FIXTURE, jobs_only)
    shutil.rmtree(jobs_only / "task_events")
    import_trace("google2011-jobs", jobs_only, tmp_path / "s")
    with pytest.raises(ReclaimError, match="tasks: the store holds no sample"):
        JobTables.from_store(tmp_path / "s").draw("tasks", 1, np.random.default_rng(0))


def test_a_store_of_another_format_or_a_broken_table_is_refused(store, tmp_path):
    with pytest.raises(TraceError, match="holds a bitbrains store, not google2011-jobs"):
        JobTables.from_store(sample_path("bitbrains"))
    broken = tmp_path / "broken"
    shutil.copytree(store, broken)
    df = pl.read_parquet(broken / DISTRIBUTIONS_FILE)
    df.with_columns(pl.col("gap_s").reverse()).write_parquet(broken / DISTRIBUTIONS_FILE)
    with pytest.raises(TraceError, match="gap_s quantiles are not ascending"):
        JobTables.from_store(broken)
    df.head(10).write_parquet(broken / DISTRIBUTIONS_FILE)
    with pytest.raises(TraceError, match="needs 1001 rows"):
        JobTables.from_store(broken)


def test_the_shipped_sample_draws_like_its_tables():
    tables = JobTables.from_sample()
    meta = json.loads((sample_path("google2011-jobs") / "meta.json").read_text())
    rng = np.random.default_rng(0)
    for q in QUANTITIES:
        draws = tables.draw(q, 400_000, rng)
        summary = meta["distributions"][q]
        assert tables.counts[q] == summary["count"] > 0
        # the median of the draws is the sample's; their mean the table's, within noise
        assert np.median(draws) == pytest.approx(summary["median"], rel=0.02)
        assert draws.mean() == pytest.approx(summary["table_mean"], rel=0.1)
