from __future__ import annotations

import polars as pl
import pyarrow.parquet as pq
import pytest

from reclaim.traces import writer as writer_module
from reclaim.traces.schema import USAGE_SCHEMA, WORKLOADS_SCHEMA
from reclaim.traces.validate import REPEATED_TIME
from reclaim.traces.writer import StoreWriter


def usage(ids, times) -> pl.DataFrame:
    return pl.DataFrame({"id": ids, "time": times, "cpu": [1.0] * len(ids)})


def test_an_empty_store_still_has_both_tables_with_the_schema(tmp_path):
    rows = StoreWriter(tmp_path).close()
    assert rows == {"workloads": 0, "usage": 0}
    assert pl.read_parquet(tmp_path / "workloads.parquet").schema == WORKLOADS_SCHEMA
    assert pl.read_parquet(tmp_path / "usage.parquet").schema == USAGE_SCHEMA
    assert not (tmp_path / "hosts.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["usage.parquet", "workloads.parquet"]


def test_columns_are_cast_and_unknown_ones_left_null(tmp_path):
    out = StoreWriter(tmp_path)
    out.write("workloads", pl.DataFrame({"id": ["a"], "instances": [3], "extra": ["x"]}))
    out.close()
    row = pl.read_parquet(tmp_path / "workloads.parquet").row(0, named=True)
    assert row["id"] == "a" and row["instances"] == 3
    assert row["cpu_request"] is None and "extra" not in row


def test_usage_written_in_order_is_kept_as_is(tmp_path):
    out = StoreWriter(tmp_path)
    out.write("usage", usage(["a", "a"], [1.0, 2.0]))
    out.write("usage", usage(["b"], [0.0]))
    assert out.close()["usage"] == 3
    assert out.filtered.counts == {}


def test_unordered_usage_is_sorted_and_repeats_counted(tmp_path):
    out = StoreWriter(tmp_path)
    out.write("usage", usage(["b", "a", "b"], [300.0, 300.0, 0.0]))
    out.write("usage", pl.DataFrame({"id": ["a", "a"], "time": [0.0, 300.0], "cpu": [5.0, 9.0]}))
    assert out.close()["usage"] == 4
    stored = pl.read_parquet(tmp_path / "usage.parquet")
    assert stored.select("id", "time").rows() == [
        ("a", 0.0),
        ("a", 300.0),
        ("b", 0.0),
        ("b", 300.0),
    ]
    assert stored["cpu"][1] == 1.0  # the first of the repeated (a, 300) samples is kept
    assert out.filtered.counts == {"usage": {REPEATED_TIME: 1}}
    assert not (tmp_path / "usage.parquet.part").exists()


def test_small_batches_are_buffered_into_row_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "ROWS_PER_GROUP", 100)
    out = StoreWriter(tmp_path)
    for i in range(30):
        out.write("usage", usage([f"s{i:02d}"] * 10, [float(t) for t in range(10)]))
    out.close()
    meta = pq.ParquetFile(tmp_path / "usage.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [100, 100, 100]


def test_optional_columns_are_written_only_when_the_first_frame_has_them(tmp_path):
    out = StoreWriter(tmp_path / "with")
    (tmp_path / "with").mkdir()
    out.write("workloads", pl.DataFrame({"id": ["a"], "gpu_request": [0.5]}))
    out.write("workloads", pl.DataFrame({"id": ["b"]}))  # later frames: null where missing
    out.close()
    stored = pl.read_parquet(tmp_path / "with" / "workloads.parquet")
    assert stored.columns == [*WORKLOADS_SCHEMA, "gpu_request"]
    assert stored["gpu_request"].to_list() == [0.5, None]

    (tmp_path / "without").mkdir()
    out = StoreWriter(tmp_path / "without")
    out.write("workloads", pl.DataFrame({"id": ["a"]}))
    with pytest.raises(ValueError, match="gpu_request"):  # too late: the schema is fixed
        out.write("workloads", pl.DataFrame({"id": ["b"], "gpu_request": [1.0]}))
    out.close()
    assert pl.read_parquet(tmp_path / "without" / "workloads.parquet").schema == WORKLOADS_SCHEMA
