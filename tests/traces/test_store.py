from __future__ import annotations

import json

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import load_store, sample_path
from reclaim.traces.schema import USAGE_SCHEMA, WORKLOADS_SCHEMA
from reclaim.traces.writer import StoreWriter


def make_store(path, **meta):
    path.mkdir()
    StoreWriter(path).close()
    (path / "meta.json").write_text(json.dumps({"store_version": 1, **meta}))
    return path


def test_a_folder_that_is_not_a_store_is_a_clear_error(tmp_path):
    with pytest.raises(TraceError, match="not a trace store .*: meta.json is missing"):
        load_store(tmp_path)
    with pytest.raises(TraceError, match="no such folder"):
        load_store(tmp_path / "nope")


def test_a_store_of_another_version_is_refused(tmp_path):
    with pytest.raises(TraceError, match="store version 99"):
        load_store(make_store(tmp_path / "s", store_version=99))


def test_store_gives_lazy_tables_and_meta(tmp_path):
    store = load_store(make_store(tmp_path / "s", units={"cpu": "cores"}))
    assert isinstance(store.usage(), pl.LazyFrame)
    assert store.workloads().collect_schema() == pl.Schema(WORKLOADS_SCHEMA)
    assert store.hosts() is None
    assert store.units == {"cpu": "cores"}


@pytest.mark.parametrize(
    ("name", "workloads", "usage", "units"),
    [
        ("bitbrains", 40, 962_821, {"time": "s", "cpu": "cores", "mem": "GiB"}),
        (
            "alibaba2017",
            43_396,
            0,
            {"time": "s", "cpu": "cores", "mem": "fraction of largest machine"},
        ),
        ("google2011-derived", 300, 86_400, {"time": "s", "cpu": "percent", "mem": "percent"}),
    ],
)
def test_shipped_samples_load_with_the_canonical_schema(name, workloads, usage, units):
    store = load_store(sample_path(name))
    assert store.meta["format"] == name and store.units == units
    assert store.meta["rows"] == {"workloads": workloads, "usage": usage}
    assert store.workloads().select(pl.len()).collect().item() == workloads
    samples = store.usage().collect()
    assert samples.schema == pl.Schema(USAGE_SCHEMA) and samples.height == usage
    assert samples.select(pl.col("id").is_sorted()).item()
    assert samples.select((pl.col("time").diff().over("id") > 0).all()).item()


def test_unknown_sample_lists_the_shipped_ones():
    with pytest.raises(
        TraceError,
        match="samples: alibaba-gpu2023, alibaba-gpu2025, alibaba2017, bitbrains, google2011-derived",
    ):
        sample_path("azure")


def test_a_truncated_table_is_named_when_the_store_is_opened(tmp_path):
    path = make_store(tmp_path / "s")
    whole = (path / "usage.parquet").read_bytes()
    (path / "usage.parquet").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(TraceError, match=r"usage\.parquet: not a readable Parquet file"):
        load_store(path)


def test_a_table_without_a_canonical_column_is_named_when_the_store_is_opened(tmp_path):
    path = make_store(tmp_path / "s")
    table = pl.read_parquet(path / "workloads.parquet")
    table.drop("submit_time").write_parquet(path / "workloads.parquet")
    with pytest.raises(TraceError, match=r"workloads\.parquet: missing column\(s\) submit_time"):
        load_store(path)
