from __future__ import annotations

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import sources
from reclaim.traces.readers.alibaba2017 import LAYOUT as ALI17
from reclaim.traces.readers.alibaba2017 import TYPES as ALI17_TYPES
from reclaim.traces.sources import CsvLayout, csv_batches

# two real batch_task rows (Alibaba v2017), in the official column order
ROWS = "6459,6524,3,4,15740,Terminated,50,0.007956928\n6036,6046,4,7,393,Waiting,,\n"
EXTRACT_HEADER = (
    "task_create_time, task_end_time, job_id, task_id,number_of_instances, status, "
    "number_of_cpus_requested_per_instance_in_the_task,"
    "normalized_memory_requested_per_instance_in_the_task\n"
)
PAIR = CsvLayout(("a", "b"))
PAIR_TYPES = {"a": pl.Float64(), "b": pl.Float64()}


def read(path, layout=ALI17, types=ALI17_TYPES) -> pl.DataFrame:
    return pl.concat(list(csv_batches(path, layout, types)))


def test_header_is_detected_and_extract_spellings_map_to_official_names(tmp_path, gz):
    with_header = read(gz(tmp_path / "a.csv.gz", EXTRACT_HEADER + ROWS))
    without = read(gz(tmp_path / "b.csv.gz", ROWS))
    assert with_header.drop("_line").equals(without.drop("_line"))
    assert with_header["_line"].to_list() == [2, 3]  # the header is line 1
    assert without["_line"].to_list() == [1, 2]
    assert with_header.row(0, named=True) | {"_line": 0} == {
        "create_timestamp": 6459.0,
        "modify_timestamp": 6524.0,
        "job_id": "3",
        "task_id": "4",
        "instance_num": 15740,
        "status": "Terminated",
        "plan_cpu": 50.0,
        "plan_mem": 0.007956928,
        "_line": 0,
    }
    assert with_header["plan_cpu"][1] is None  # an empty field is null, not 0


def test_gzip_is_recognised_by_content_not_name(tmp_path, gz):
    plain = tmp_path / "plain.csv.gz"
    plain.write_text(ROWS)
    packed = gz(tmp_path / "packed.csv", ROWS)
    assert read(plain).equals(read(packed))


def test_deleted_bytes_let_a_padded_separator_parse(tmp_path, gz):
    layout = CsvLayout(("a", "b"), header=True, delimiter=";", delete=b"\t")
    df = read(gz(tmp_path / "x.csv.gz", "a;\tb\n1;\t2.5\n"), layout, PAIR_TYPES)
    assert df.select("a", "b").rows() == [(1.0, 2.5)]


def test_batches_number_lines_continuously(tmp_path, gz, monkeypatch):
    monkeypatch.setattr(sources, "BLOCK_BYTES", 64)
    text = "a,b\n" + "".join(f"{i},{i}\n" for i in range(100))
    batches = list(csv_batches(gz(tmp_path / "x.csv.gz", text), CsvLayout(("a", "b")), PAIR_TYPES))
    assert len(batches) > 1
    assert pl.concat(batches)["_line"].to_list() == list(range(2, 102))


def test_a_file_without_data_rows_gives_no_batch(tmp_path, gz):
    assert list(csv_batches(gz(tmp_path / "x.csv.gz", "a,b\n"), PAIR, PAIR_TYPES)) == []
    assert list(csv_batches(gz(tmp_path / "y.csv.gz", ""), PAIR, PAIR_TYPES)) == []


def test_missing_column_names_the_column_and_the_header_line(tmp_path, gz):
    header = EXTRACT_HEADER.replace("number_of_cpus_requested_per_instance_in_the_task,", "")
    path = gz(tmp_path / "batch_task.csv.gz", header + "6459,6524,3,4,15740,Terminated,0.0079\n")
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value).startswith(f"{path}, line 1: missing column 'plan_cpu' or ")


def test_row_with_missing_fields_names_its_line(tmp_path, gz):
    path = gz(tmp_path / "x.csv.gz", "1,2\n3,4\n5\n")
    with pytest.raises(TraceError, match=r"x\.csv\.gz, line 3: expected 2 fields, found 1$"):
        read(path, PAIR, PAIR_TYPES)


def test_text_in_a_number_column_names_line_and_value(tmp_path, gz):
    path = gz(tmp_path / "x.csv.gz", "a,b\n1,2\n3,abc\n")
    with pytest.raises(TraceError, match=r"x\.csv\.gz, line 3: b is not a number: 'abc'$"):
        read(path, PAIR, PAIR_TYPES)


def test_padded_numbers_are_accepted(tmp_path, gz):
    df = read(gz(tmp_path / "x.csv.gz", "a,b\n 1 ,2\n"), PAIR, PAIR_TYPES)
    assert df.select("a", "b").rows() == [(1.0, 2.0)]


def test_truncated_gzip_names_file_and_line(tmp_path, fixtures):
    real = (fixtures / "alibaba2017" / "batch_task.csv.gz").read_bytes()
    path = tmp_path / "batch_task.csv.gz"
    path.write_bytes(real[: len(real) * 2 // 3])
    with pytest.raises(TraceError) as err:
        read(path)
    message = str(err.value)
    assert message.startswith(f"{path}, line ")
    assert "compressed data is truncated or corrupt" in message
    assert "\n" not in message


def test_corrupt_gzip_checksum_is_an_error(tmp_path, fixtures):
    real = bytearray((fixtures / "alibaba2017" / "batch_task.csv.gz").read_bytes())
    real[-6] ^= 0xFF  # inside the CRC32 trailer
    path = tmp_path / "batch_task.csv.gz"
    path.write_bytes(bytes(real))
    with pytest.raises(TraceError, match="truncated or corrupt.*CRC check failed"):
        read(path)


def test_missing_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot open"):
        read(tmp_path / "nope.csv.gz")
