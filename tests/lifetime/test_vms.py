from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

from reclaim.errors import ReclaimError, TraceError
from reclaim.lifetime.vms import load_hosts, load_vms
from reclaim.traces import load_store, sample_path


@pytest.fixture(scope="module")
def dlrm():
    return load_vms(sample_path("alibaba-gpu2025"))


@pytest.fixture(scope="module")
def openb():
    return load_vms(load_store(sample_path("alibaba-gpu2023")))


def test_dlrm_sample_counts_and_censoring_match_its_provenance(dlrm):
    # 14,369 instances; creation missing for 1,678 + 3,093, deletion for 2,613 + 3,093
    assert len(dlrm) == 14_369
    assert dlrm.left_censored.sum() == 1678 + 3093
    assert dlrm.right_censored.sum() == 2613 + 3093
    assert (dlrm.left_censored & dlrm.right_censored).sum() == 3093
    assert dlrm.window == (0.0, 2_677_541.0)
    assert np.all(dlrm.arrival[dlrm.left_censored] == 0.0)  # the window start
    assert np.all(np.isinf(dlrm.exit[dlrm.right_censored]))
    assert np.all(np.isfinite(dlrm.exit[~dlrm.right_censored]))
    assert np.all(dlrm.observed >= 0)
    families, counts = np.unique(dlrm.family, return_counts=True)
    assert dict(zip(families.tolist(), counts.tolist(), strict=True)) == {"CN": 9933, "HN": 4436}


def test_rows_are_sorted_by_arrival_then_id(dlrm):
    order = np.lexsort((dlrm.id, dlrm.arrival))
    assert np.array_equal(order, np.arange(len(dlrm)))


def test_requests_are_cores_gib_gpus(dlrm, openb):
    assert dlrm.request.dtype == np.float32 and dlrm.request.shape == (14_369, 3)
    hn = dlrm.family == "HN"
    assert np.all(dlrm.request[hn, 2] == 1) and np.all(dlrm.request[~hn, 2] == 0)
    # openb-pod-0003,6000,12288,1,460,... shares a GPU: 0.46 GPU, 6 cores, 12 GiB
    row = np.flatnonzero(openb.id == "openb-pod-0003")[0]
    assert openb.request[row].tolist() == pytest.approx([6.0, 12.0, 0.46])


def test_features_follow_the_rows(dlrm):
    f = dlrm.features
    assert f.height == len(dlrm)
    assert f.schema == pl.Schema(
        {
            "category": pl.String(),
            "job_id": pl.String(),
            "cpu": pl.Float64(),
            "mem": pl.Float64(),
            "gpu": pl.Float64(),
            "disk": pl.Float64(),
            "priority": pl.Int64(),
            "hour_of_day": pl.Int64(),
            "day_of_week": pl.Int64(),
        }
    )
    assert np.array_equal(f["cpu"].to_numpy(), dlrm.request[:, 0])
    assert np.array_equal(f["category"].to_numpy().astype(str), dlrm.family)
    assert f["hour_of_day"].to_list() == (dlrm.arrival // 3600 % 24).astype(int).tolist()
    assert f["day_of_week"].max() <= 6
    assert f["disk"].null_count() == 0


def test_openb_is_one_pool_with_right_censoring_only(openb):
    # 4,939 pods less 542 never scheduled; 26 Running at the last deletion time
    assert len(openb) == 4397
    assert set(openb.family.tolist()) == {"openb"}
    assert openb.left_censored.sum() == 0
    assert openb.right_censored.sum() == 26
    assert openb.window == (0.0, 12_902_960.0)
    assert openb.features["disk"].null_count() == len(openb)  # openb has no disk request
    assert set(openb.features["category"].unique()) == {"LS", "BE", "Burstable", "Guaranteed"}


def test_family_filter(dlrm):
    hn = load_vms(sample_path("alibaba-gpu2025"), family="HN")
    assert len(hn) == 4436 and set(hn.family.tolist()) == {"HN"}
    assert np.array_equal(hn.id, dlrm.id[dlrm.family == "HN"])
    with pytest.raises(ReclaimError, match=r"no VMs of family 'GPU' \(families: CN, HN\)"):
        load_vms(sample_path("alibaba-gpu2025"), family="GPU")


def test_subset_by_mask_index_and_slice(dlrm):
    mask = dlrm.right_censored
    sub = dlrm.subset(mask)
    assert len(sub) == mask.sum() == sub.features.height
    assert np.array_equal(sub.id, dlrm.id[mask])
    assert sub.features.equals(dlrm.features.filter(pl.Series(mask)))
    assert sub.window == dlrm.window
    picked = dlrm.subset(np.array([5, 0, 5]))
    assert picked.id.tolist() == [dlrm.id[5], dlrm.id[0], dlrm.id[5]]
    assert picked.features.row(0) == dlrm.features.row(5)
    assert len(dlrm.subset(slice(10, 20))) == 10
    empty = dlrm.subset(np.zeros(len(dlrm), dtype=bool))
    assert len(empty) == 0 and empty.features.schema == dlrm.features.schema


def test_load_hosts_reads_the_openb_nodes():
    ids, capacity = load_hosts(sample_path("alibaba-gpu2023"))
    assert ids.shape == (1523,) and capacity.shape == (1523, 3)
    assert capacity.dtype == np.float64
    assert ids[0] == "openb-node-0000"
    assert capacity[0].tolist() == [32.0, 256.0, 0.0]  # CPU-only node
    assert capacity[:, 2].sum() == 6212


def test_a_store_without_hosts_has_no_pool():
    with pytest.raises(TraceError, match="no hosts table"):
        load_hosts(sample_path("alibaba-gpu2025"))


def test_a_store_that_is_not_a_lifetime_trace_is_refused():
    with pytest.raises(TraceError, match="not a lifetime trace"):
        load_vms(sample_path("bitbrains"))
    with pytest.raises(TraceError, match="not a lifetime trace"):
        load_vms(sample_path("alibaba2017"))


@pytest.mark.parametrize(
    ("column", "value", "shown"),
    [
        ("submit_time", float("nan"), "submit_time is NaN"),
        ("end_time", -5.0, r"end_time is negative \(-5.0\)"),
        ("mem_request", None, "mem_request is missing"),
    ],
)
def test_a_bad_value_names_the_file_and_row(tmp_path, column, value, shown):
    shutil.copytree(sample_path("alibaba-gpu2025"), tmp_path / "s")
    table = tmp_path / "s" / "workloads.parquet"
    frame = pl.read_parquet(table)
    dtype = frame.schema[column]
    bad = pl.when(pl.int_range(pl.len()) == 6).then(pl.lit(value, dtype)).otherwise(pl.col(column))
    frame.with_columns(bad.alias(column)).write_parquet(table)
    with pytest.raises(TraceError, match=rf"workloads.parquet, row 7: {shown}"):
        load_vms(tmp_path / "s")
