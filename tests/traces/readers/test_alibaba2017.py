from __future__ import annotations

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace
from reclaim.traces.readers.alibaba2017 import ENDS_BEFORE_CREATED, NO_PLAN


def test_tasks_become_workloads_with_cores_and_normalised_memory(fixtures, imported):
    store = imported("alibaba2017", fixtures / "alibaba2017" / "batch_task.csv.gz")
    tasks = {row["id"]: row for row in store.workloads().collect().iter_rows(named=True)}
    assert list(tasks) == ["j3/t4", "j3/t5", "j698/t3528", "j28/t153", "j6168/t37200"]
    # 6459,6524,3,4,15740,Terminated,50,0.007956928
    assert tasks["j3/t4"] == {
        "id": "j3/t4",
        "job_id": "3",
        "submit_time": 6459.0,
        "start_time": None,  # the table has no start time
        "end_time": 6524.0,
        "instances": 15740,
        "cpu_request": 0.5,  # 50 hundredths of a core
        "mem_request": 0.007956928,  # kept normalised
        "priority": None,
        "category": None,
        "status": "Terminated",
    }
    # a running task's modify_timestamp (0 here) is not its end
    assert tasks["j698/t3528"]["end_time"] is None
    assert tasks["j698/t3528"]["cpu_request"] == 1.0
    assert tasks["j28/t153"]["end_time"] == 16391.0  # Failed is a terminal state
    assert tasks["j6168/t37200"]["submit_time"] == -60.0  # created before the window: kept
    assert store.units["mem"] == "fraction of largest machine"
    assert store.meta["time_origin"] == "trace-relative"
    assert any("modify_timestamp" in note for note in store.meta["notes"])


def test_tasks_without_a_plan_are_counted_not_dropped_silently(fixtures, imported):
    store = imported("alibaba2017", fixtures / "alibaba2017" / "batch_task.csv.gz")
    # two Waiting tasks and one Running task have empty plan_cpu and plan_mem
    assert store.meta["filtered"] == {"workloads": {NO_PLAN: 3, ENDS_BEFORE_CREATED: 0}}
    assert store.meta["rows"] == {"workloads": 5, "usage": 0}
    assert store.usage().collect().is_empty()


def test_a_task_ending_before_its_creation_is_counted(fixtures, tmp_path, ungz, gz, imported):
    text = ungz(fixtures / "alibaba2017" / "batch_task.csv.gz")
    src = gz(tmp_path / "batch_task.csv.gz", text.replace("6459,6524,", "6459,6400,"))
    store = imported("alibaba2017", src)
    assert store.meta["filtered"]["workloads"][ENDS_BEFORE_CREATED] == 1
    assert store.meta["rows"]["workloads"] == 4


def test_a_task_listed_twice_is_an_error(fixtures, tmp_path, ungz, gz):
    lines = ungz(fixtures / "alibaba2017" / "batch_task.csv.gz").splitlines(keepends=True)
    src = gz(tmp_path / "batch_task.csv.gz", "".join([*lines, lines[1]]))
    with pytest.raises(TraceError, match=r"line 10: id 'j3/t4' appears a second time"):
        import_trace("alibaba2017", src, tmp_path / "store")


def test_dev_extract_filter_counts_match_its_provenance(shared_traces, imported):
    src = shared_traces / "alibaba-cluster-trace-v2017" / "batch_task.csv.gz"
    store = imported("alibaba2017", src)
    # PROVENANCE: 46,587 task rows, 3,191 with empty requests (3,103 Waiting + 88 Running)
    assert store.meta["filtered"] == {"workloads": {NO_PLAN: 3191, ENDS_BEFORE_CREATED: 0}}
    assert store.meta["rows"] == {"workloads": 46_587 - 3191, "usage": 0}
    tasks = store.workloads().collect()
    assert tasks["job_id"].n_unique() == 7555  # of 7,933 jobs, 378 had only plan-less tasks
    assert tasks.filter(pl.col("status") == "Waiting").is_empty()
    assert store.meta["sources"][0]["sha256"].startswith("f91ef52a376a1dbb")
