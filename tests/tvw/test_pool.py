"""The pool: contiguous records, bridged and split gaps, units by hand, classes, bad values."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.schema import META_FILE, USAGE_FILE, USAGE_SCHEMA, WORKLOADS_FILE
from reclaim.traces.schema import WORKLOADS_SCHEMA as WL
from reclaim.traces.store import STORE_VERSION, sample_path
from reclaim.tvw.pool import LIMITS, load_pool


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


@pytest.mark.parametrize("time", [float("nan"), -300.0, float("inf")])
def test_a_bad_sample_time_names_the_file_and_series(tmp_path, time):
    rows = [("a", 0.0, 1.0, 1.0), ("b", time, 1.0, 1.0)]
    with pytest.raises(TraceError, match=r"usage.parquet: sample time of 'b' is"):
        load_pool(store(tmp_path / "s", rows))


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


def limited(path, usage, limits, jobs=None, units=("cores", "GiB")):
    """A store like :func:`store` whose workloads have limits: ``limits`` {id: (cpu, mem)}."""
    store(path, usage, jobs)
    rows = [
        {"id": i, "job_id": (jobs or {}).get(i), "cpu_request": c, "mem_request": m}
        for i, (c, m) in sorted(limits.items())
    ]
    pl.DataFrame(rows, schema=WL).write_parquet(path / WORKLOADS_FILE)
    meta = json.loads((path / META_FILE).read_text())
    meta["units"] |= dict(zip(("cpu", "mem"), units, strict=True))
    (path / META_FILE).write_text(json.dumps(meta))
    return path


def test_units_by_a_workloads_own_limit(tmp_path):
    # vm a: 2 cores, 8 GiB; vm b: 8 cores, 8 GiB (usage in cores and GiB)
    rows = [
        ("a", 0.0, 1.0, 4.0),
        ("a", 300.0, 2.0, 8.0),
        ("a", 600.0, 3.0, 1.0),
        ("b", 0.0, 1.0, 2.0),
        ("b", 300.0, 8.0, 2.0),
    ]
    path = limited(tmp_path / "s", rows, {"a": (2.0, 8.0), "b": (8.0, 8.0)})
    pool = load_pool(path)  # auto: every workload has its limits
    assert pool.report.rule == "limit" and pool.report.scale is None
    # ceil(6 x usage / limit), in [1, 6]: a cpu 1/2 -> 3, 2/2 -> 6, 3/2 -> 9 clipped to 6;
    # a mem 4/8 -> 3, 8/8 -> 6, 1/8 -> ceil(0.75) = 1; b cpu 1/8 -> 1, 8/8 -> 6; b mem 2/8 -> 2.
    assert pool.units[0].tolist() == [[3, 3], [6, 6], [6, 1]]
    assert pool.units[1].tolist() == [[1, 2], [6, 2]]
    assert pool.report.clipped == (1, 0)
    # a uses 1.0 of its CPU limit on average and 0.54 of its memory: CPU-intensive; b 0.56/0.25.
    assert pool.cpu_intensive.tolist() == [True, True]
    peak = load_pool(path, scale="peak", scale_quantile=1.0)
    assert peak.report.rule == "peak" and peak.report.scale == (8.0, 8.0)
    assert peak.units[1].tolist() == [[1, 2], [6, 2]]
    assert peak.units[0].tolist() == [[1, 3], [2, 6], [3, 1]]  # a is small beside b


def test_a_store_without_limits_falls_back_to_the_peak_scale_unless_limits_are_asked(tmp_path):
    path = store(tmp_path / "s", [("a", 0.0, 1.0, 1.0), ("a", 300.0, 2.0, 1.0)])
    assert load_pool(path).report.rule == "peak"
    with pytest.raises(TraceError, match=r"workloads.parquet: cpu_request \(the limit\) of "):
        load_pool(path, scale="limit")
    with pytest.raises(ReclaimError, match="scale must be auto, limit, peak"):
        load_pool(path, scale="share")


@pytest.mark.parametrize(
    ("limit", "shown"), [(None, "missing"), (0.0, "0.0"), (float("nan"), "nan"), (-1.0, "-1.0")]
)
def test_a_bad_limit_is_a_one_line_error_naming_the_workload(tmp_path, limit, shown):
    rows = [("a", 0.0, 1.0, 1.0), ("b", 0.0, 1.0, 1.0)]
    path = limited(tmp_path / "s", rows, {"a": (2.0, 2.0), "b": (2.0, limit)})
    with pytest.raises(TraceError) as err:
        load_pool(path)
    message = str(err.value)
    assert "workloads.parquet: mem_request (the limit) of workload 'b'" in message
    assert f"is {shown} (1 of 2 workloads)" in message and "\n" not in message


def test_concurrent_tasks_of_one_job_stay_records_of_their_own(tmp_path):
    rows = [
        # job c: tasks c-0 and c-1 run at the same time (Google 2019 collections)
        ("c-0", 0.0, 1.0, 1.0),
        ("c-0", 300.0, 1.0, 1.0),
        ("c-1", 0.0, 2.0, 2.0),
        ("c-1", 300.0, 2.0, 2.0),
        ("c-1", 600.0, 2.0, 2.0),
        # job d: one day after the other (Google 2011 derived) -> one record
        ("d_1", 0.0, 1.0, 1.0),
        ("d_2", 300.0, 1.0, 1.0),
    ]
    jobs = {"c-0": "c", "c-1": "c", "d_1": "d", "d_2": "d"}
    pool = load_pool(store(tmp_path / "s", rows, jobs))
    assert pool.lengths.tolist() == [2, 3, 2]  # keys c-0, c-1, d
    assert pool.report.apart == 2 and pool.report.repeated == 0 and pool.report.samples == 7


def test_a_sample_less_than_half_a_period_after_the_last_merges_into_its_step(tmp_path):
    # a task restarts 4 s into the window at 300: the windows at 300 (4 s) and 304 (296 s) are one
    # step; 600 is 296 s after 304, more than half a period: a step of its own
    rows = [
        ("a", 0.0, 1.0, 1.0),
        ("a", 300.0, 10.0, 1.0),
        ("a", 304.0, 4.0, 3.0),
        ("a", 600.0, 1.0, 1.0),
        ("a", 900.0, 1.0, 1.0),
    ]
    pool = load_pool(store(tmp_path / "s", rows), max_units=100, scale_quantile=1.0)
    assert pool.report.merged == 1 and pool.report.samples == 4
    assert pool.report.bridged_gaps == 0 and pool.lengths.tolist() == [4]
    cpu = (10.0 * 4 + 4.0 * 296) / 300  # 4.08: weighted by the seconds each held
    mem = (1.0 * 4 + 3.0 * 296) / 300
    assert pool.report.scale == pytest.approx((cpu, mem))  # the merged step is the peak
    assert pool.units[0][:, 0].tolist() == [25, 100, 25, 25]  # ceil(100 x 1 / 4.08) = 25


def test_machine_shares_decide_cpu_or_memory_intensive_in_normalised_stores(tmp_path):
    # Google 2019-like: a uses 0.02 of a machine's CPU and 0.005 of its memory, both at 40 % and
    # 60 % of their own limits: CPU-intensive as a share of the machine, not of its limits
    rows = [("a", 0.0, 0.02, 0.005), ("a", 300.0, 0.02, 0.005)]
    units = ("normalised", "normalised")
    path = limited(tmp_path / "s", rows, {"a": (0.05, 0.00833)}, units=units)
    assert load_pool(path).cpu_intensive.tolist() == [True]
    path = limited(tmp_path / "t", rows, {"a": (0.05, 0.00833)})  # cores and GiB: by limits
    assert load_pool(path).cpu_intensive.tolist() == [False]


def test_constant_records_are_flat_in_every_resource():
    from reclaim.core.grouped import GroupedArray
    from reclaim.tvw.pool import constant_records

    data = np.array([[1, 1], [1, 1], [2, 1], [3, 3], [1, 1], [1, 2]], np.int16)
    units = GroupedArray(data, np.array([0, 2, 3, 4, 6]))
    assert constant_records(units).tolist() == [True, True, True, False]


#: sha256 of the units, record bounds and classes the shipped policies were trained on (the
#: peak scale before ``scale`` existed); the peak scale must keep giving them.
LEGACY_UNITS = {
    "bitbrains": "bbda814f4ad99dbadd9ab51870272efed8e624727f9bed559fd7c6e4f388ca78",
    "google2011-derived": "d3ee14347aeb4902ad34db1b9b70fcc25cbc480836872354c4924e223d3fb32f",
}


@pytest.mark.parametrize("name", sorted(LEGACY_UNITS))
def test_the_peak_scale_gives_the_legacy_units_bit_for_bit(name):
    import hashlib

    pool = load_pool(sample_path(name), scale="peak")
    parts = (pool.units.data, pool.units.indptr, pool.cpu_intensive)
    digest = hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest()
    assert digest == LEGACY_UNITS[name]


def test_google2019_tasks_are_long_running_records_in_units_of_their_own_limits():
    path = sample_path("google2019-usage")
    pool = load_pool(path)
    r = pool.report
    assert r.rule == "limit" and r.apart == 34  # 34 tasks of 3 collections, each its own record
    assert r.records == 52 and r.split_gaps == 18  # input-dis tasks stop and start again
    assert r.merged == 410 and r.repeated == 0
    assert (pool.lengths * pool.period_s / 3600 > 38).all()  # every record is long-running
    assert 0 < r.cpu_intensive < r.records  # both classes: 42 CPU-, 10 memory-intensive
    # A step's units are ceil(6 x usage / its task's limit), in [1, 6]: every step of one task
    # that no merge touched, against the store's rows.
    from reclaim.traces.store import load_store

    s = load_store(path)
    task = "380263806889-0"  # one record: no gap of more than an hour
    rows = (
        s.usage()
        .filter(pl.col("id") == task)
        .sort("time")
        .join(s.workloads().select("id", *LIMITS), on="id", maintain_order="left")
        .with_columns(short=pl.col("time").diff().fill_null(300.0) < 150)
        .collect()
    )
    steps = rows.filter(~pl.col("short"))
    alone = ~steps["short"] & ~rows["short"].shift(-1).fill_null(False).filter(~rows["short"])
    ratio = steps.select(
        pl.col("cpu") / pl.col("cpu_request"), pl.col("mem") / pl.col("mem_request")
    )
    expect = np.clip(np.ceil(6 * ratio.to_numpy()), 1, 6)[alone.to_numpy()]
    alone = alone.to_numpy()
    found = [
        i
        for i in range(r.records)
        if len(pool.units[i]) == len(steps) and (pool.units[i][alone] == expect).all()
    ]
    assert alone.sum() > 500 and len(found) == 1
