from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys

import pytest
from rich.console import Console

from reclaim import cli
from reclaim.errors import ReclaimError, TraceError
from reclaim.traces import import_trace, print_report
from reclaim.traces.readers.alibaba2017 import ENDS_BEFORE_CREATED, NO_PLAN

ALI17 = "alibaba2017/batch_task.csv.gz"


def test_meta_records_sources_units_rows_and_filters(fixtures, tmp_path):
    report = import_trace("bitbrains", fixtures / "bitbrains", tmp_path / "bb")
    meta = json.loads((tmp_path / "bb" / "meta.json").read_text())
    assert meta["format"] == "bitbrains" and meta["store_version"] == 1
    assert [s["name"] for s in meta["sources"]] == [
        "2013-7/1.csv.gz",
        "2013-8/1.csv.gz",
        "2013-9/1.csv.gz",
        "2013-7/20.csv.gz",
    ]
    first = fixtures / "bitbrains" / "2013-7" / "1.csv.gz"
    assert meta["sources"][0]["sha256"] == hashlib.sha256(first.read_bytes()).hexdigest()
    assert meta["sources"][0]["size"] == first.stat().st_size
    assert meta["units"] == {"time": "s", "cpu": "cores", "mem": "GiB"}
    assert (meta["time_origin"], meta["period_s"]) == ("unix", 300.0)
    assert meta["rows"] == report.rows == {"workloads": 2, "usage": 9}
    assert meta["filtered"] == report.filtered
    assert "Shen" in meta["attribution"] and "CCGrid 2015" in meta["attribution"]


def test_report_lists_kept_and_filtered_rows_by_reason(fixtures, tmp_path):
    report = import_trace("alibaba2017", fixtures / ALI17, tmp_path / "s")
    console = Console(record=True, width=200)
    print_report(report, console)
    text = console.export_text()
    assert "workloads" in text and "usage" in text
    assert f"3 │ {NO_PLAN}" in text
    assert f"0 │ {ENDS_BEFORE_CREATED}" in text


def test_an_existing_store_is_replaced_but_other_folders_are_refused(fixtures, tmp_path):
    out = tmp_path / "s"
    import_trace("alibaba2017", fixtures / ALI17, out)
    import_trace("alibaba2017", fixtures / ALI17, out)  # the same format again: replaced
    with pytest.raises(TraceError, match="holds a alibaba2017 store, not google2011-derived; pass"):
        import_trace("google2011-derived", fixtures / "google2011", out)
    assert json.loads((out / "meta.json").read_text())["format"] == "alibaba2017"
    import_trace("google2011-derived", fixtures / "google2011", out, force=True)
    assert json.loads((out / "meta.json").read_text())["format"] == "google2011-derived"
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(TraceError, match="not a trace store; refusing to overwrite"):
        import_trace("alibaba2017", fixtures / ALI17, other)
    assert (other / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    ("fmt", "files"),
    [
        ("alibaba2017", ["batch_task.csv.gz"]),
        ("alibaba2018", ["machine_meta.csv.gz", "machine_usage_head_subset.csv.gz"]),
        ("azure2019", ["vmtable_deep_study_vms.csv.gz", "vm_cpu_readings_deep_study_vms.csv.gz"]),
    ],
)
def test_empty_input_is_refused_not_stored(tmp_path, fmt, files, gz):
    src = tmp_path / "src"
    src.mkdir()
    for name in files:
        gz(src / name, "")
    with pytest.raises(TraceError, match="has no rows|holds no rows: nothing imported"):
        import_trace(fmt, src if len(files) > 1 else src / files[0], tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_a_failed_import_leaves_nothing_behind(fixtures, tmp_path, ungz, gz):
    text = ungz(fixtures / ALI17).replace("Terminated,50,", "Terminated,-50,", 1)
    with pytest.raises(TraceError, match="negative plan_cpu"):
        import_trace("alibaba2017", gz(tmp_path / "batch_task.csv.gz", text), tmp_path / "s")
    assert [p.name for p in tmp_path.iterdir()] == ["batch_task.csv.gz"]


def test_unknown_format_and_missing_source(tmp_path):
    with pytest.raises(ReclaimError, match="unknown trace_format 'google2019'.*bitbrains"):
        import_trace("google2019", tmp_path, tmp_path / "s")
    with pytest.raises(TraceError, match="no such file or folder"):
        import_trace("bitbrains", tmp_path / "nope", tmp_path / "s")
    with pytest.raises(TraceError, match=r"no trace files found here \(expected <N>\.csv\.gz"):
        import_trace("bitbrains", tmp_path, tmp_path / "s")


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["reclaim", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_cli_bad_input_is_one_error_line_and_exit_2(
    fixtures, tmp_path, ungz, gz, monkeypatch, capsys
):
    src = gz(tmp_path / "batch_task.csv.gz", ungz(fixtures / ALI17).replace("6459", "NaN", 1))
    code, out, err = run_cli(
        monkeypatch, capsys, "traces", "import", "alibaba2017", str(src), "-o", str(tmp_path / "s")
    )
    assert code == 2
    assert err == f"error: {src}, line 2: create_timestamp is NaN but the format requires a value\n"
    assert out == ""


def test_cli_usage_errors_have_no_traceback(monkeypatch, capsys):
    code, _, err = run_cli(monkeypatch, capsys, "traces", "import", "bitbrains", "x")
    assert code == 2
    assert "Missing option" in err and "Traceback" not in err


def test_cli_console_script_end_to_end(fixtures, tmp_path):
    """The real entry point in a fresh process: success prints the report, a truncated gzip
    exits 2 with one line on stderr."""
    command = [sys.executable, "-c", "from reclaim.cli import main; main()", "traces", "import"]
    ok = subprocess.run(
        [*command, "alibaba2017", str(fixtures / ALI17), "-o", str(tmp_path / "s")],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "workloads" in ok.stdout and "Traceback" not in ok.stderr
    cut = tmp_path / "batch_task.csv.gz"
    cut.write_bytes((fixtures / ALI17).read_bytes()[:150])
    bad = subprocess.run(
        [*command, "alibaba2017", str(cut), "-o", str(tmp_path / "t")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stdout + bad.stderr
    assert bad.stderr.count("\n") == 1
    assert bad.stderr.startswith(f"error: {cut}, line ")
    assert "compressed data is truncated or corrupt" in bad.stderr


def test_a_byte_that_is_no_utf8_is_named_at_its_line(fixtures, tmp_path, monkeypatch, capsys):
    src = tmp_path / "2013-7"
    src.mkdir()
    with gzip.open(fixtures / "bitbrains" / "2013-7" / "1.csv.gz", "rb") as f:
        lines = f.read().split(b"\n")
    lines[3] = lines[3].replace(b";", b"\xff;", 1)  # file line 4 (the header is line 1)
    with gzip.open(src / "1.csv.gz", "wb") as f:
        f.write(b"\n".join(lines))
    code, out, err = run_cli(
        monkeypatch, capsys, "traces", "import", "bitbrains", str(src), "-o", str(tmp_path / "s")
    )
    assert code == 2 and out == ""
    # the byte is named, never echoed
    assert err == (
        f"error: {src / '1.csv.gz'}, line 4: not UTF-8 text (byte 0xff): binary data, "
        "or another encoding\n"
    )
