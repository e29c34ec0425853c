from __future__ import annotations

import re
import shutil
import subprocess
import sys

import polars as pl
import pytest

from reclaim import cli
from reclaim.errors import TraceError
from reclaim.traces import import_trace, load_store, sample_path
from reclaim.traces.readers.google2019_usage import (
    CLASS_CHANGES,
    CPU_CHANGES,
    CPU_OVER,
    CPU_ZERO,
    MEM_CHANGES,
    MEM_OVER,
    MEM_ZERO,
    NO_PERCENTILES,
    NO_ROWS,
)
from reclaim.traces.schema import OPTIONAL_USAGE, USAGE_SCHEMA
from reclaim.traces.validate import REPEATED_TIME

FORMAT = "google2019-usage"
TASK0 = "input-sim/380263806889/0-461643000000-631583000000.csv.gz"
TASK61 = "input-dis/113812204462/61-138885000000-2468400000000.csv.gz"
PERCENTILE_COLUMNS = [f"cpu_p{q}" for q in (*range(0, 100, 10), *range(91, 100))]


@pytest.fixture
def store(fixtures, imported):
    return imported(FORMAT, fixtures / "google2019_usage")


def test_units_period_and_attribution(store):
    assert store.units == {"time": "s", "cpu": "normalised", "mem": "normalised"}
    assert (store.meta["time_origin"], store.meta["period_s"]) == ("trace-relative", 300.0)
    assert "Tirmazi" in store.meta["attribution"] and "CC-BY 4.0" in store.meta["attribution"]
    assert any("largest machine" in note for note in store.meta["notes"])


def test_requests_are_the_limits_the_largest_over_life(store):
    tasks = store.workloads().collect()
    assert tasks["id"].to_list() == ["113812204462-61", "380263806889-0"]
    t61, t0 = tasks.rows(named=True)
    # task 0's three real windows: limits constant, assigned_memory 0 in the source
    assert (t0["cpu_request"], t0["mem_request"]) == (0.012344360351562, 0.00390625)
    assert t0["mem_assigned"] == 0.0
    assert (t0["job_id"], t0["instances"], t0["priority"], t0["category"]) == (
        "380263806889",
        1,
        200,
        "3",
    )
    assert (t0["submit_time"], t0["start_time"], t0["end_time"]) == (461643.0, 461643.0, 462300.0)
    assert t0["status"] is None
    # task 61: memory_limit 0.00804 -> 0.00639 -> 0.00754; the request is the largest
    assert t61["mem_request"] == 0.008041381835937
    assert t61["cpu_request"] == 0.03643798828125
    assert t61["mem_assigned"] == 0.008041381835937
    assert (t61["start_time"], t61["end_time"]) == (138885.0, 2149707.0 + 300.0)


def test_usage_is_the_window_average_with_max_and_percentiles(store):
    usage = store.usage().collect()
    assert usage.columns == [*USAGE_SCHEMA, *OPTIONAL_USAGE]
    assert [c for c in OPTIONAL_USAGE if c.startswith("cpu_p")] == PERCENTILE_COLUMNS
    first = usage.filter(pl.col("id") == "380263806889-0").row(0, named=True)
    assert first["time"] == 461643.0  # microseconds -> seconds
    assert first["cpu"] == 0.00042819976806600005
    assert first["mem"] == 0.000288963317871
    assert (first["cpu_max"], first["mem_max"]) == (0.007308959960937, 0.000342369079589)
    assert (first["cpu_p0"], first["cpu_p50"], first["cpu_p99"]) == (
        1.71661376953125e-05,
        0.000102996826171,
        0.004135131835937,
    )
    times = usage.filter(pl.col("id") == "380263806889-0")["time"].to_list()
    assert times == [461643.0, 461700.0, 462000.0]  # the first window ends early: task start


def test_restart_rows_percentile_sentinel_and_flags_are_counted(store):
    t61 = store.usage().filter(pl.col("id") == "113812204462-61").collect()
    # source lines 1676-1678: 1-s windows as the task restarts, two rows at 639539 s
    assert t61["time"].to_list() == [
        138885.0, 138900.0, 636000.0, 639538.0, 639539.0, 639600.0, 639900.0, 2149707.0
    ]  # fmt: skip
    assert t61.row(4, named=True)["cpu"] == 0.029449462890625003  # the first of the two is kept
    sentinel = t61.row(3, named=True)  # every percentile -1 in the source
    assert all(sentinel[c] is None for c in PERCENTILE_COLUMNS)
    assert sentinel["cpu"] == 0.0
    assert store.meta["rows"] == {"workloads": 2, "usage": 11}
    assert store.meta["filtered"] == {
        "workloads": {NO_ROWS: 0},
        "usage": {REPEATED_TIME: 1},
    }
    assert store.meta["flagged"] == {
        "usage": {NO_PERCENTILES: 1, CPU_OVER: 0, MEM_OVER: 1, CPU_ZERO: 0, MEM_ZERO: 0},
        "workloads": {CPU_CHANGES: 0, MEM_CHANGES: 1, CLASS_CHANGES: 0},
    }


def test_a_zero_limit_is_kept_and_counted(fixtures, tmp_path, ungz, gz, imported):
    src = _copy(fixtures, tmp_path)
    path = src / TASK0
    gz(path, _set(ungz(path), 3, "cpu_limit", "0"))
    store = imported(FORMAT, src)
    assert store.meta["flagged"]["usage"][CPU_ZERO] == 1
    assert store.meta["flagged"]["usage"][CPU_OVER] == 1  # any use is above a zero limit
    assert store.meta["flagged"]["workloads"][CPU_CHANGES] == 1
    task = store.workloads().filter(pl.col("id") == "380263806889-0").collect()
    assert task["cpu_request"].item() == 0.012344360351562


def test_a_single_task_file(fixtures, imported):
    store = imported(FORMAT, fixtures / "google2019_usage" / TASK0)
    assert store.meta["rows"] == {"workloads": 1, "usage": 3}


def _copy(fixtures, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(fixtures / "google2019_usage", src)
    return src


def _set(text: str, line: int, column: str, value: str) -> str:
    """``text`` with the field ``column`` of ``line`` (1-based, header included) set to ``value``."""
    lines = text.splitlines(keepends=True)
    i = lines[0].rstrip("\n").split(",").index(column)
    fields = lines[line - 1].rstrip("\n").split(",")
    fields[i] = value
    lines[line - 1] = ",".join(fields) + "\n"
    return "".join(lines)


def _drop(column: str):
    def edit(text):
        i = text.splitlines()[0].split(",").index(column)
        return "".join(
            ",".join(f for j, f in enumerate(x.split(",")) if j != i) + "\n"
            for x in text.splitlines()
        )

    return edit


def _set_at(line, column, value):
    return lambda text: _set(text, line, column, value)


def _repeat_line(line):
    def edit(text):
        lines = text.splitlines(keepends=True)
        return "".join([*lines[:line], lines[line - 1], *lines[line:]])

    return edit


BOUND = r"above 2 \(twice the largest machine in the cell\)"
# edit of task 0's real lines -> (line named in the error, problem)
BAD_INPUTS = {
    "missing column": (_drop("memory_limit"), 1, r"missing column 'memory_limit' in the header"),
    "NaN usage": (_set_at(3, "avg_cpu_usage", "NaN"), 3, r"avg_cpu_usage is NaN"),
    "empty limit": (_set_at(2, "cpu_limit", ""), 2, r"cpu_limit is empty"),
    "not a number": (
        _set_at(4, "memory_limit", "0.0039x"),
        4,
        r"memory_limit is not a number: '0\.0039x'",
    ),
    "not an integer": (_set_at(2, "priority", "high"), 2, r"priority is not an integer: 'high'"),
    "negative usage": (
        _set_at(3, "avg_memory_usage", "-0.001"),
        3,
        r"negative avg_memory_usage: -0\.001",
    ),
    "negative limit": (_set_at(4, "memory_limit", "-0.5"), 4, r"negative memory_limit: -0\.5"),
    "one percentile -1": (_set_at(2, "p50_cpu_usage", "-1"), 2, r"negative p50_cpu_usage: -1"),
    "infinite usage": (_set_at(3, "max_cpu_usage", "inf"), 3, r"max_cpu_usage is not finite: inf"),
    "infinite limit": (_set_at(2, "cpu_limit", "inf"), 2, r"cpu_limit is not finite: inf"),
    "usage above bound": (
        _set_at(4, "avg_cpu_usage", "3.5"),
        4,
        rf"avg_cpu_usage is 3\.5, {BOUND}",
    ),
    "limit above bound": (
        _set_at(2, "memory_limit", "2.01"),
        2,
        rf"memory_limit is 2\.01, {BOUND}",
    ),
    "time backwards": (
        _set_at(4, "time", "461600000000"),
        4,
        r"time goes backwards in series '380263806889-0': 461600 after 461700",
    ),
    "same line twice": (_repeat_line(3), 4, r"repeats line 3 \(same task, time and values\)"),
    "unique_id not collection-instance": (
        _set_at(3, "unique_id", "380263806889-1"),
        3,
        r"unique_id '380263806889-1' is not <collection_id>-<instance_index> \(380263806889-0\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_names_file_line_and_problem(case, fixtures, tmp_path, ungz, gz):
    edit, line, problem = BAD_INPUTS[case]
    src = _copy(fixtures, tmp_path)
    path = src / TASK0
    gz(path, edit(ungz(path)))
    with pytest.raises(TraceError) as err:
        import_trace(FORMAT, src, tmp_path / "store")
    message = str(err.value)
    assert message.startswith(f"{path}, line {line}: ")
    assert re.search(problem, message), message
    assert "\n" not in message
    assert not (tmp_path / "store").exists()


def test_rows_of_another_task_in_a_file_are_an_error(fixtures, tmp_path, ungz, gz):
    src = _copy(fixtures, tmp_path)
    path = src / TASK0
    text = _set(ungz(path), 4, "unique_id", "380263806889-7")
    gz(path, _set(text, 4, "instance_index", "7"))
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}, line 4: second task"):
        import_trace(FORMAT, src, tmp_path / "store")


def test_a_task_in_two_files_is_an_error(fixtures, tmp_path):
    src = _copy(fixtures, tmp_path)
    again = src / "input-dis" / "380263806889" / "0-461643000000-631583000000.csv.gz"
    again.parent.mkdir(parents=True)
    shutil.copy(src / TASK0, again)
    with pytest.raises(TraceError) as err:
        import_trace(FORMAT, src, tmp_path / "store")
    assert str(err.value) == (
        f"{src / TASK0}, line 2: task '380263806889-0' is also in {again} (one file per task)"
    )


def test_truncated_gzip_names_file_and_line(fixtures, tmp_path):
    src = _copy(fixtures, tmp_path)
    path = src / TASK61
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}, line \d+: compressed data"):
        import_trace(FORMAT, src, tmp_path / "store")


def test_cli_imports_and_a_broken_copy_is_one_error_line(fixtures, tmp_path):
    """The real entry point in a fresh process, as a user runs it."""
    command = [sys.executable, "-c", "from reclaim.cli import main; main()", "traces", "import"]
    src = fixtures / "google2019_usage"
    ok = subprocess.run(
        [*command, FORMAT, str(src), "-o", str(tmp_path / "s")], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    assert "usage" in ok.stdout and "Traceback" not in ok.stderr
    assert load_store(tmp_path / "s").meta["rows"] == {"workloads": 2, "usage": 11}

    broken = _copy(fixtures, tmp_path)
    path = broken / TASK0
    path.write_bytes(path.read_bytes()[:200])
    bad = subprocess.run(
        [*command, FORMAT, str(broken), "-o", str(tmp_path / "t")], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stdout + bad.stderr
    assert bad.stderr.count("\n") == 1
    assert bad.stderr.startswith(f"error: {path}, line ")
    assert "compressed data is truncated or corrupt" in bad.stderr
    assert not (tmp_path / "t").exists()


def test_cli_bad_value_is_one_error_line(fixtures, tmp_path, ungz, gz, monkeypatch, capsys):
    src = _copy(fixtures, tmp_path)
    path = src / TASK0
    gz(path, _set(ungz(path), 3, "memory_limit", "NaN"))
    out = str(tmp_path / "s")
    monkeypatch.setattr(sys, "argv", ["reclaim", "traces", "import", FORMAT, str(src), "-o", out])
    with pytest.raises(SystemExit) as done:
        cli.main()
    stdout, stderr = capsys.readouterr()
    assert done.value.code == 2
    assert stderr == (
        f"error: {path}, line 3: memory_limit is NaN but the format requires a value\n"
    )
    assert stdout == ""


def test_shipped_sample_is_the_whole_dev_extract():
    store = load_store(sample_path(FORMAT))
    assert store.meta["format"] == FORMAT
    assert store.meta["rows"] == {"workloads": 34, "usage": 70_573}
    usage = store.usage().collect()
    assert usage.columns == [*USAGE_SCHEMA, *OPTIONAL_USAGE]
    assert usage.select(pl.col("id").is_sorted()).item()
    assert usage.select((pl.col("time").diff().over("id") > 0).all()).item()
    assert "mem_assigned" in store.workloads().collect_schema()


def test_dev_extract_imports_every_task(shared_traces, imported):
    store = imported(FORMAT, shared_traces / "google-clusterdata-2019-instance-usage-sample")
    assert store.meta["rows"] == {"workloads": 34, "usage": 70_573}
    assert store.meta["filtered"]["usage"] == {REPEATED_TIME: 2}
    assert store.meta["flagged"]["usage"][NO_PERCENTILES] == 37
    assert store.meta["flagged"]["workloads"][MEM_CHANGES] == 13
