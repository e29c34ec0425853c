"""The pool: contiguous records, bridged and split gaps, units by hand, classes, bad values."""

from __future__ import annotations

import json

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces.schema import META_FILE, USAGE_FILE, USAGE_SCHEMA, WORKLOADS_FILE
from reclaim.traces.schema import WORKLOADS_SCHEMA as WL
from reclaim.traces.store import STORE_VERSION, sample_path
from reclaim.tvw.pool import load_pool


def store(path, usage, jobs=None, period=300.0):
    """A store of ``usage`` rows (id, time, cpu, mem) in percent; ``jobs``: {id: job_id}."""
    path.mkdir()
    ids = sorted({row[0] for row in usage})
    workloads = [{"id": i, "job_id": (jobs or {}).get(i)} for i in ids]
    pl.DataFrame(workloads, schema=WL).write_parquet(path / WORKLOADS_FILE)
    frame = pl.DataFrame(usage, schema=USAGE_SCHEMA, orient="row").sort("id", "time")
    frame.write_parquet(path / USAGE_FILE)
    units = {"cpu": "percent", "mem": "percent", "time": "s"}
    meta = {"store_version": STORE_VERSION, "units": units, "period_s": period}
    (path / META_FILE).write_text(json.dumps(meta))
    return path


def test_days_of_one_job_join_and_long_gaps_split(tmp_path):
    rows = [
        # job 7, day 1 then day 2 (contiguous: 300 s apart) -> one record of 4 steps
        ("7_1", 0.0, 10.0, 40.0),
        ("7_1", 300.0, 20.0, 40.0),
        ("7_2", 600.0, 30.0, 40.0),
        ("7_2", 900.0, 40.0, 40.0),
        # vm a: a missing sample (600 s) is bridged; a 2 h gap splits
        ("a", 0.0, 50.0, 10.0),
        ("a", 600.0, 50.0, 10.0),
        ("a", 7800.0, 50.0, 10.0),
    ]
    pool = load_pool(store(tmp_path / "s", rows, {"7_1": "7", "7_2": "7"}), scale_quantile=1.0)
    assert pool.lengths.tolist() == [4, 2, 1]  # sorted by job key: "7" before "a"
    assert pool.report.bridged_gaps == 1 and pool.report.split_gaps == 1
    assert pool.report.records == 3 and pool.report.samples == 7
    # Peaks: cpu 40, 50, 50 -> scale 50; mem 40, 10, 10 -> scale 40 (quantile 1.0 = the max).
    assert pool.report.scale == (50.0, 40.0)
    # ceil(6 x v / scale), at least 1: cpu 10 -> ceil(1.2) = 2, 20 -> 3, 30 -> 4, 40 -> 5, 50 -> 6;
    # mem 40 -> 6, 10 -> ceil(1.5) = 2.
    assert pool.units[0].tolist() == [[2, 6], [3, 6], [4, 6], [5, 6]]
    assert pool.units[1].tolist() == [[6, 2], [6, 2]]
    # Record 0 uses 0.5 of its CPU scale and all its memory scale on average: memory-intensive.
    assert pool.cpu_intensive.tolist() == [False, True, True]


def test_samples_above_the_scale_are_clipped_and_counted(tmp_path):
    rows = [("a", 0.0, 1.0, 1.0), ("b", 0.0, 2.0, 1.0), ("c", 0.0, 100.0, 1.0)]
    pool = load_pool(store(tmp_path / "s", rows), scale_quantile=0.5)
    assert pool.report.scale == (2.0, 1.0)
    assert pool.report.clipped == (1, 0)
    assert pool.units.data[:, 0].tolist() == [3, 6, 6]


def test_repeated_times_within_a_job_are_dropped_and_counted(tmp_path):
    rows = [("j_1", 0.0, 1.0, 1.0), ("j_1", 300.0, 1.0, 1.0), ("j_2", 300.0, 2.0, 2.0)]
    pool = load_pool(store(tmp_path / "s", rows, {"j_1": "j", "j_2": "j"}))
    assert pool.report.repeated == 1 and pool.report.samples == 2


def test_a_negative_or_missing_value_names_the_file_series_and_time(tmp_path):
    rows = [("a", 0.0, 1.0, 1.0), ("a", 300.0, -1.0, 1.0)]
    with pytest.raises(TraceError, match=r"usage.parquet: cpu usage of 'a' at time 300.0"):
        load_pool(store(tmp_path / "s", rows))
    rows = [("a", 0.0, 1.0, None)]
    with pytest.raises(TraceError, match="mem usage of 'a'"):
        load_pool(store(tmp_path / "t", rows))


def test_a_store_without_a_period_is_refused(tmp_path):
    path = store(tmp_path / "s", [("a", 0.0, 1.0, 1.0)], period=None)
    with pytest.raises(TraceError, match="no sampling period"):
        load_pool(path)


def test_the_shipped_samples_give_long_records_of_both_classes():
    for name in ("bitbrains", "google2011-derived"):
        pool = load_pool(sample_path(name))
        units = pool.units.data
        assert units.min() >= 1 and units.max() <= 6
        long = pool.lengths > 30 * 12
        assert (long & pool.cpu_intensive).any() and (long & ~pool.cpu_intensive).any()
    assert pool.report.records == 50  # google: 41 jobs, split where days are missing
