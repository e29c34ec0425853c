from __future__ import annotations

import re
import shutil

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace
from reclaim.traces.readers.bitbrains import NO_CPU, NO_ROWS, NO_SAMPLES
from reclaim.traces.validate import REPEATED_TIME


def test_first_real_row_converts_to_cores_and_gib(fixtures, imported):
    store = imported("bitbrains", fixtures / "bitbrains")
    vm1 = store.usage().filter(pl.col("id") == "bitbrains/1").collect()
    first = vm1.row(0, named=True)
    assert first["time"] == 1372629804.0  # labelled ms, really epoch seconds
    # 87.7799835 MHz used of 5851.9989 MHz over 2 cores
    assert first["cpu"] == pytest.approx(87.7799835 / (5851.9989 / 2))
    assert first["cpu"] == pytest.approx(0.0300, abs=1e-6)
    assert first["mem"] == pytest.approx(1034592.8 / 2**20)  # KB are KiB
    assert first["mem"] == pytest.approx(0.98666, abs=1e-5)


def test_the_months_of_a_vm_join_in_time_order_keeping_the_gap(fixtures, imported):
    store = imported("bitbrains", fixtures / "bitbrains")
    times = store.usage().filter(pl.col("id") == "bitbrains/1").collect()["time"].to_list()
    assert times == [
        1372629804.0, 1372630104.0, 1372630404.0,  # 2013-7
        1375308176.0, 1375308476.0,  # 2013-8
        1377986608.0, 1377986908.0,  # 2013-9
    ]  # fmt: skip
    vm = store.workloads().filter(pl.col("id") == "bitbrains/1").collect().row(0, named=True)
    assert (vm["start_time"], vm["end_time"]) == (1372629804.0, 1377986908.0)
    assert vm["cpu_request"] == 2.0
    assert vm["mem_request"] == 8.0  # provisioned 8218624 KB in July, 8388608 KB later: the largest
    assert vm["instances"] == 1


def test_repeated_times_and_vms_without_cpu_are_filtered_and_counted(fixtures, imported):
    # VM 20, real lines 4476-4484 of 2013-7/20.csv: two good samples, then the VM reports
    # 0 cores with each timestamp written two or three times
    store = imported("bitbrains", fixtures / "bitbrains")
    vm20 = store.usage().filter(pl.col("id") == "bitbrains/20").collect()
    assert vm20["time"].to_list() == [1373974837.0, 1373975137.0]
    assert vm20["cpu"][0] == pytest.approx(20.799994471999998 / 2599.999309)
    assert store.meta["filtered"] == {
        "usage": {REPEATED_TIME: 4, NO_CPU: 3, NO_ROWS: 0},
        "workloads": {NO_SAMPLES: 0},
    }
    assert store.meta["rows"] == {"workloads": 2, "usage": 9}
    assert store.workloads().collect()["id"].to_list() == ["bitbrains/1", "bitbrains/20"]


def test_a_single_file_is_one_vm(fixtures, imported):
    store = imported("bitbrains", fixtures / "bitbrains" / "2013-8" / "1.csv.gz")
    assert store.meta["rows"] == {"workloads": 1, "usage": 2}
    assert [s["name"] for s in store.meta["sources"]] == ["1.csv.gz"]


def _edit(fixtures, tmp_path, ungz, gz, month, edit):
    """A copy of VM 1's real files with ``edit(lines)`` applied to one month; returns
    (source folder, edited file)."""
    src = tmp_path / "src"
    shutil.copytree(fixtures / "bitbrains", src, ignore=shutil.ignore_patterns("20.csv.gz"))
    path = src / month / "1.csv.gz"
    gz(path, "".join(edit(ungz(path).splitlines(keepends=True))))
    return src, path


def _set(line: int, field: int, value: str):
    def edit(lines):
        fields = lines[line - 1].split(";\t")
        fields[field] = value
        lines[line - 1] = ";\t".join(fields)
        return lines

    return edit


def _drop_field(field: int):
    def edit(lines):
        return [";\t".join(np for i, np in enumerate(x.split(";\t")) if i != field) for x in lines]

    return edit


# (month, edit of VM 1's real lines, line named in the error, problem)
BAD_INPUTS = {
    "missing column": ("2013-7", _drop_field(3), 1, r"missing column 'CPU usage \[MHZ\]'"),
    "NaN": ("2013-7", _set(2, 3, "NaN"), 2, r"CPU usage \[MHZ\] is NaN"),
    "negative usage": ("2013-7", _set(3, 6, "-458575.4"), 3, r"negative Memory usage \[KB\]"),
    "time backwards": (
        "2013-7",
        _set(4, 0, "1372630000"),
        4,
        r"time goes backwards in series 'bitbrains/1': 1372630000 after 1372630104",
    ),
    "time backwards across months": (
        "2013-8",
        _set(2, 0, "1372630000"),
        2,
        r"time goes backwards in series 'bitbrains/1': 1372630000 after 1372630404",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_names_file_line_and_problem(case, fixtures, tmp_path, ungz, gz):
    month, edit, line, problem = BAD_INPUTS[case]
    src, path = _edit(fixtures, tmp_path, ungz, gz, month, edit)
    with pytest.raises(TraceError) as err:
        import_trace("bitbrains", src, tmp_path / "store")
    message = str(err.value)
    assert message.startswith(f"{path}, line {line}: ")
    assert re.search(problem, message)
    assert "\n" not in message
    assert not (tmp_path / "store").exists()


def test_truncated_gzip_names_file_and_line(fixtures, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(fixtures / "bitbrains", src)
    path = src / "2013-9" / "1.csv.gz"
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}, line \d+: compressed data"):
        import_trace("bitbrains", src, tmp_path / "store")
