from __future__ import annotations

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace

FILE = "disaggregated_DLRM_trace_subset.csv.gz"


@pytest.fixture
def dlrm(fixtures):
    return fixtures / "alibaba_gpu2025" / FILE


def test_instances_become_workloads_with_gpu_and_disk(dlrm, imported):
    store = imported("alibaba-gpu2025", dlrm)
    rows = {row["id"]: row for row in store.workloads().collect().iter_rows(named=True)}
    assert len(rows) == 6
    # instance_7281,CN,app_88,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,610.0,683.0,91730.0
    assert rows["instance_7281"] == {
        "id": "instance_7281",
        "job_id": "app_88",
        "submit_time": 610.0,
        "start_time": 683.0,
        "end_time": 91730.0,
        "instances": 1,
        "cpu_request": 64.0,
        "mem_request": 320.0,
        "priority": None,
        "category": "CN",
        "status": None,
        "gpu_request": 0.0,
        "disk_request": 255.0,
    }
    assert rows["instance_0"]["gpu_request"] == 1.0
    assert rows["instance_0"]["category"] == "HN"
    assert rows["instance_7280"]["submit_time"] == 475.00000000000006  # kept as written
    assert store.units["mem"] == "GiB" and store.units["disk"] == "GiB"
    assert store.hosts() is None
    assert store.meta["filtered"] == {}


def test_empty_times_are_censoring(dlrm, imported):
    wl = imported("alibaba-gpu2025", dlrm).workloads().collect()
    flags = wl.select(
        "id", left=pl.col("submit_time").is_null(), right=pl.col("end_time").is_null()
    )
    assert flags.rows() == [
        ("instance_0", True, True),  # spans the whole window
        ("instance_89", True, True),
        ("instance_2456", True, False),  # existed before the window, deleted at 554 s
        ("instance_7280", False, True),  # alive at the window end
        ("instance_7281", False, False),
        ("instance_7300", False, False),
    ]
    assert wl.filter(pl.col("submit_time").is_null())["start_time"].null_count() == 3


def test_window_is_the_span_of_the_times(dlrm, imported):
    store = imported("alibaba-gpu2025", dlrm)
    assert store.meta["window_s"] == [0.0, 91730.0]
    assert any("window_s" in note for note in store.meta["notes"])


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ("610.0,683.0,91730.0", "610.0,683.0,NaN", r"line 6: deletion_time is NaN"),
        ("610.0,683.0,91730.0", "610.0,683.0,-5", r"line 6: negative deletion_time"),
        (
            "610.0,683.0,91730.0",
            "610.0,683.0,600.0",
            r"line 6: deletion_time 600 is before creation_time 610",
        ),
        ("app_88,64,64", "app_88,,64", r"line 6: cpu_request is empty"),
        ("255.0,300.0", "NaN,300.0", r"line 6: disk_request is NaN"),
        ("320.0,320.0,255.0", "-320.0,320.0,255.0", r"line 6: negative memory_request"),
    ],
)
def test_bad_rows_name_file_and_line(dlrm, tmp_path, ungz, gz, old, new, error):
    text = ungz(dlrm)
    assert old in text
    src = gz(tmp_path / FILE, text.replace(old, new))
    with pytest.raises(TraceError, match=f"{FILE}, {error}"):
        import_trace("alibaba-gpu2025", src, tmp_path / "store")


def test_a_missing_column_is_named(dlrm, tmp_path, ungz, gz):
    src = gz(tmp_path / FILE, ungz(dlrm).replace(",deletion_time", ",deleted"))
    with pytest.raises(TraceError, match=r"line 1: missing column 'deletion_time'"):
        import_trace("alibaba-gpu2025", src, tmp_path / "store")


def test_a_truncated_gzip_is_an_error(dlrm, tmp_path):
    data = dlrm.read_bytes()
    (tmp_path / FILE).write_bytes(data[: len(data) - 20])
    with pytest.raises(TraceError, match=f"{FILE}, line .*: compressed data is truncated"):
        import_trace("alibaba-gpu2025", tmp_path / FILE, tmp_path / "store")


def test_an_instance_listed_twice_is_an_error(dlrm, tmp_path, ungz, gz):
    lines = ungz(dlrm).splitlines(keepends=True)
    src = gz(tmp_path / FILE, "".join([*lines, lines[1]]))
    with pytest.raises(TraceError, match=r"line 8: id 'instance_0' appears a second time"):
        import_trace("alibaba-gpu2025", src, tmp_path / "store")


def test_dev_extract_counts_match_its_provenance(shared_traces, imported):
    src = shared_traces / "alibaba-cluster-trace-gpu-v2025"
    store = imported("alibaba-gpu2025", src)
    wl = store.workloads().collect()
    # PROVENANCE: 14,369 instances of 100 apps (CN 9,933 / HN 4,436); both times 6,985,
    # right-censored only 2,613, left-censored only 1,678, spanning the window 3,093
    assert store.meta["rows"] == {"workloads": 14_369, "usage": 0}
    assert wl["job_id"].n_unique() == 100
    assert wl["category"].value_counts().sort("category").rows() == [("CN", 9933), ("HN", 4436)]
    left, right = pl.col("submit_time").is_null(), pl.col("end_time").is_null()
    counts = wl.select(
        both=(~left & ~right).sum(),
        right=(~left & right).sum(),
        left=(left & ~right).sum(),
        span=(left & right).sum(),
    )
    assert counts.row(0) == (6985, 2613, 1678, 3093)
    assert store.meta["window_s"] == [0.0, 2_677_541.0]
