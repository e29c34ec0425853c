from __future__ import annotations

import shutil

import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace
from reclaim.traces.readers.alibaba_gpu2023 import NEVER_SCHEDULED

POD = "openb_pod_list_default_subset.csv.gz"
NODE = "openb_node_list_all_node.csv.gz"


@pytest.fixture
def openb(fixtures):
    return fixtures / "alibaba_gpu2023"


def test_pods_become_workloads_in_cores_gib_and_gpus(openb, imported):
    store = imported("alibaba-gpu2023", openb)
    pods = {row["id"]: row for row in store.workloads().collect().iter_rows(named=True)}
    assert list(pods) == [f"openb-pod-{n}" for n in ("0000", "0003", "0005", "0017", "0041")]
    # openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
    assert pods["openb-pod-0000"] == {
        "id": "openb-pod-0000",
        "job_id": None,
        "submit_time": 0.0,
        "start_time": 0.0,
        "end_time": 12537496.0,  # Running, but deleted before the trace end: not censored
        "instances": 1,
        "cpu_request": 12.0,
        "mem_request": 16.0,
        "priority": None,
        "category": "LS",
        "status": "Running",
        "gpu_request": 1.0,
    }
    assert pods["openb-pod-0003"]["gpu_request"] == 0.46  # GPU sharing: gpu_milli 460
    assert pods["openb-pod-0005"]["gpu_request"] == 0.0  # CPU-only pod
    assert pods["openb-pod-0005"]["start_time"] == 2759676.0  # scheduled 2 s after creation
    assert pods["openb-pod-0017"]["gpu_request"] == 8.0  # num_gpu 8, gpu_milli 1000
    assert pods["openb-pod-0017"]["cpu_request"] == 88.0
    assert pods["openb-pod-0017"]["mem_request"] == 320.0
    assert pods["openb-pod-0041"]["status"] == "Failed"
    assert store.units == {"time": "s", "cpu": "cores", "mem": "GiB", "gpu": "GPUs"}
    assert "disk_request" not in store.workloads().collect_schema().names()


def test_running_pods_at_the_last_deletion_time_are_right_censored(openb, imported):
    store = imported("alibaba-gpu2023", openb)
    ends = dict(store.workloads().select("id", "end_time").collect().iter_rows())
    assert ends["openb-pod-0003"] is None and ends["openb-pod-0005"] is None
    assert ends["openb-pod-0017"] == 10769854.0
    assert store.meta["window_s"] == [0.0, 12902960.0]
    assert any("right-censor" in note.lower() for note in store.meta["notes"])


def test_never_scheduled_pods_are_filtered_and_counted(openb, imported):
    store = imported("alibaba-gpu2023", openb)
    # two Pending pods without scheduled_time (one of them lived 0 s)
    assert store.meta["filtered"] == {"workloads": {NEVER_SCHEDULED: 2}}
    assert store.meta["rows"] == {"workloads": 5, "usage": 0, "hosts": 4}


def test_nodes_become_hosts(openb, imported):
    hosts = imported("alibaba-gpu2023", openb).hosts().collect()
    assert hosts.rows() == [
        ("openb-node-0000", 0.0, 32.0, 256.0, None, 0.0, None),  # CPU-only: no model
        ("openb-node-0123", 0.0, 64.0, 256.0, None, 2.0, "P100"),
        ("openb-node-0234", 0.0, 96.0, 384.0, None, 8.0, "G2"),
        ("openb-node-1328", 0.0, 128.0, 1024.0, None, 1.0, "A10"),
    ]
    assert hosts.columns == ["id", "time", "cpu", "mem", "status", "gpu", "model"]


def test_the_pod_list_alone_reads_the_node_list_beside_it(openb, imported):
    store = imported("alibaba-gpu2023", openb / POD)
    assert store.meta["rows"]["hosts"] == 4


def test_a_pod_list_without_node_list_has_no_hosts(openb, tmp_path, imported):
    shutil.copy(openb / POD, tmp_path / POD)
    store = imported("alibaba-gpu2023", tmp_path / POD)
    assert store.hosts() is None
    assert store.meta["rows"]["workloads"] == 5


def test_several_pod_lists_are_refused(openb, tmp_path):
    shutil.copytree(openb, tmp_path / "src")
    shutil.copy(openb / POD, tmp_path / "src" / "openb_pod_list_cpu050.csv.gz")
    with pytest.raises(TraceError, match="several pod lists"):
        import_trace("alibaba-gpu2023", tmp_path / "src", tmp_path / "store")


def _broken(openb, tmp_path, ungz, gz, old: str, new: str):
    src = tmp_path / "src"
    shutil.copytree(openb, src)
    text = ungz(openb / POD)
    assert old in text
    gz(src / POD, text.replace(old, new))
    return src


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ("0,12537496,0", "0,NaN,0", r"line 2: deletion_time is NaN"),
        ("LS,Running,0,", ",Running,0,", r"line 2: qos is empty"),
        ("12000,16384,1,1000", "-12000,16384,1,1000", r"line 2: negative cpu_milli"),
        ("10001278,10001403,", "10001278,10001403,NaN", r"line 7: scheduled_time is NaN"),
        (
            "9437497,10769854,",
            "9437497,9437000,",
            r"line 5: deletion_time 9437000 is before creation_time 9437497",
        ),
        ("Failed,9976185,", "Failed,abc,", r"line 6: creation_time is not a number: 'abc'"),
    ],
)
def test_bad_rows_name_file_and_line(openb, tmp_path, ungz, gz, old, new, error):
    src = _broken(openb, tmp_path, ungz, gz, old, new)
    with pytest.raises(TraceError, match=f"{POD}, {error}"):
        import_trace("alibaba-gpu2023", src, tmp_path / "store")


def test_a_missing_column_is_named(openb, tmp_path, ungz, gz):
    src = _broken(openb, tmp_path, ungz, gz, ",pod_phase,", ",phase,")
    with pytest.raises(TraceError, match=r"line 1: missing column 'pod_phase' in the header"):
        import_trace("alibaba-gpu2023", src, tmp_path / "store")


def test_a_truncated_gzip_is_an_error(openb, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(openb, src)
    data = (openb / POD).read_bytes()
    (src / POD).write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=f"{POD}, line .*: compressed data is truncated"):
        import_trace("alibaba-gpu2023", src, tmp_path / "store")
    assert not (tmp_path / "store").exists()


def test_a_negative_node_capacity_is_an_error(openb, tmp_path, ungz, gz):
    src = tmp_path / "src"
    shutil.copytree(openb, src)
    gz(src / NODE, ungz(openb / NODE).replace(",2,P100", ",-2,P100"))
    with pytest.raises(TraceError, match=f"{NODE}, line 3: negative gpu"):
        import_trace("alibaba-gpu2023", src, tmp_path / "store")


def test_dev_extract_counts_match_its_provenance(shared_traces, imported):
    store = imported("alibaba-gpu2023", shared_traces / "alibaba-cluster-trace-gpu-v2023")
    # PROVENANCE: 4,939 pods, 542 Pending (never scheduled); 26 end at the trace end; 1,523 nodes
    assert store.meta["filtered"] == {"workloads": {NEVER_SCHEDULED: 542}}
    assert store.meta["rows"] == {"workloads": 4939 - 542, "usage": 0, "hosts": 1523}
    pods = store.workloads().collect()
    assert pods["end_time"].null_count() == 26
    assert pods["status"].value_counts().sort("status").rows() == [
        ("Failed", 1142),
        ("Running", 3141),
        ("Succeeded", 114),
    ]
    assert store.hosts().collect()["gpu"].sum() == 6212  # "~6,200 GPUs"
