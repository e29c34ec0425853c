"""google2011-jobs on a small synthetic source in Google's exact file format.

fixtures/google2011_jobs holds made-up rows (times in microseconds, 600 s offset) with known
answers: job 1 was submitted before the trace and finishes at 95 s; job 2 (10 s, 4 task indices,
one without a request) and job 5 (130 s) finish inside the task span [0, 1000 s]; job 6 finishes
at 5000 s, outside it; job 3 is killed, job 4 fails and is resubmitted, job 7 is evicted, job 10
still runs at the end and job 9 has only a LOST row (missing info 1). The reader's own fixtures are synthetic because
the questions (coverage, pre-trace jobs, resubmission) need all cases in a dozen lines.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace, load_store, sample_path
from reclaim.traces.readers.google2011_jobs import (
    DISTRIBUTIONS_FILE,
    FIRST_GAP,
    NO_REQUEST,
    NO_SCHEDULE,
    NO_TASKS,
    NOT_COVERED,
    NOT_POPULATION,
    POPULATION,
    QUANTITIES,
    quantile_table,
)

FORMAT = "google2011-jobs"
JOBS0 = "job_events/part-00000-of-00500.csv.gz"
JOBS1 = "job_events/part-00001-of-00500.csv.gz"
TASKS0 = "task_events/part-00000-of-00500.csv.gz"


def T(s: float) -> int:
    """Google's microseconds of a time ``s`` seconds into the trace."""
    return 600_000_000 + int(s * 1_000_000)


@pytest.fixture
def src(fixtures, tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(fixtures / "google2011_jobs", copy)
    return copy


@pytest.fixture
def store(fixtures, imported):
    return imported(FORMAT, fixtures / "google2011_jobs")


def lines(path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)


def write(path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("".join(rows).encode(), mtime=0))


def test_units_notes_and_attribution(store):
    assert store.units == {"time": "s", "cpu": "normalised", "mem": "normalised"}
    assert (store.meta["time_origin"], store.meta["period_s"]) == ("trace-relative", None)
    assert "Reiss" in store.meta["attribution"] and "CC-BY 4.0" in store.meta["attribution"]
    assert any("largest machine" in note for note in store.meta["notes"])
    assert store.meta["task_spans_s"] == [[0.0, 1000.0]]


def test_one_row_per_job_with_its_lifecycle(store):
    jobs = store.workloads().collect()
    # sorted by submission, pre-trace jobs (0) first, jobs without a SUBMIT last
    assert jobs["id"].to_list() == ["1", "2", "3", "4", "5", "6", "7", "10", "9"]
    by_id = {row["id"]: row for row in jobs.iter_rows(named=True)}
    times = {
        k: (r["submit_time"], r["start_time"], r["end_time"], r["status"]) for k, r in by_id.items()
    }
    assert times == {
        "1": (0.0, 5.0, 95.0, "finish"),  # submitted before the trace
        "2": (10.0, 12.0, 112.0, "finish"),
        "3": (20.0, 21.0, 50.0, "kill"),
        "4": (30.0, 35.0, 90.0, "finish"),  # FAIL at 40, resubmitted at 60: the last event ends it
        "5": (130.0, 130.0, 430.0, "finish"),
        "6": (150.0, 151.0, 5000.0, "finish"),
        "7": (200.0, 250.0, 300.0, "evict"),
        "10": (400.0, 401.0, None, None),  # still running
        "9": (None, None, 5100.0, "lost"),
    }
    assert [by_id[k]["category"] for k in ("1", "2", "5", "6")] == ["3", "0", "1", "2"]


def test_tasks_and_requests_only_where_the_task_events_cover_the_job(store):
    jobs = {r["id"]: r for r in store.workloads().collect().iter_rows(named=True)}
    two = jobs["2"]
    assert two["instances"] == 4  # task indices 0-3; task 0 submitted twice
    # per task the mean over its SUBMIT rows, then the mean over tasks with a request
    assert two["cpu_request"] == pytest.approx(((0.0625 + 0.0937) / 2 + 0.0625 + 0.125) / 3)
    assert two["mem_request"] == pytest.approx(((0.0311 + 0.0466) / 2 + 0.0311 + 0.0622) / 3)
    assert (two["priority"], jobs["5"]["priority"]) == (0, 9)
    assert (jobs["5"]["instances"], jobs["5"]["cpu_request"]) == (1, 0.25)
    assert (jobs["7"]["instances"], jobs["7"]["mem_request"]) == (1, 0.02)
    for uncovered in ("1", "6", "9", "10"):  # pre-trace, ends after the span or not at all
        assert jobs[uncovered]["instances"] is None and jobs[uncovered]["cpu_request"] is None
    # covered but without task rows: null, not 0
    assert jobs["3"]["instances"] is None and jobs["4"]["instances"] is None


def test_distributions_follow_the_notebook(store):
    d = store.meta["distributions"]
    counts = {q: d[q]["count"] for q in QUANTITIES}
    assert counts == {"gap_s": 2, "runtime_s": 3, "tasks": 2, "task_cpu": 4, "task_mem": 4}
    tables = pl.read_parquet(store.path / DISTRIBUTIONS_FILE)
    assert tables.columns == ["q", *QUANTITIES] and tables.height == 1001
    # population: jobs 2, 5, 6 (one in-trace SUBMIT and one FINISH)
    assert (tables["gap_s"][0], tables["gap_s"][-1]) == (20.0, 120.0)  # 130 - 10, 150 - 130
    assert sorted(set(tables["runtime_s"])) == [100.0, 300.0, 4849.0]
    assert sorted(set(tables["tasks"])) == [1.0, 4.0]
    assert sorted(set(tables["task_cpu"])) == pytest.approx([0.0625, 0.0781, 0.125, 0.25])
    assert d["runtime_s"]["median"] == 300.0 and d["gap_s"]["mean"] == 70.0
    assert d["tasks"]["unit"] == "tasks" and d["task_mem"]["unit"] == "normalised"
    assert store.meta["filtered"] == {
        POPULATION: {
            NOT_POPULATION["pre"]: 1,
            NOT_POPULATION["no_submit"]: 1,
            NOT_POPULATION["resubmitted"]: 1,
            NOT_POPULATION["unfinished"]: 3,
            NOT_POPULATION["refinished"]: 0,
        },
        "gap_s": {FIRST_GAP: 1},
        "runtime_s": {NO_SCHEDULE: 0},
        "tasks": {NOT_COVERED: 1, NO_TASKS: 0},
        "task_cpu": {NOT_COVERED: 1, NO_TASKS: 0, NO_REQUEST: 1},
        "task_mem": {NOT_COVERED: 1, NO_TASKS: 0, NO_REQUEST: 1},
    }
    assert store.meta["population"]["finished_population"] == 3


def test_quantile_table_takes_the_floor_index_like_the_simulator():
    values = np.arange(2001.0)[::-1]  # unsorted input, n - 1 = 2000: index 2 i
    table = quantile_table(values)
    assert table.shape == (1001,) and np.array_equal(table, 2.0 * np.arange(1001))
    # n - 1 = 4: floor(4 i / 1000) steps at i = 250, 500, 750, 1000 exactly
    table = quantile_table(np.array([5.0, 1.0, 4.0, 2.0, 3.0]))
    assert (table[249], table[250], table[999], table[1000]) == (1.0, 2.0, 4.0, 5.0)
    assert np.isnan(quantile_table(np.array([]))).all()


def test_a_gap_between_task_parts_splits_the_span(src, imported):
    """Part 1 missing: a job whose events straddle the gap is not covered."""
    rows = lines(src / TASKS0)
    split = next(i for i, r in enumerate(rows) if int(r.split(",")[0]) >= T(20))
    write(src / TASKS0, rows[:split])
    (src / TASKS0).rename(src / "task_events/part-00000-of-00500.csv.gz")
    write(src / "task_events/part-00002-of-00500.csv.gz", rows[split:])
    store = imported(FORMAT, src)
    assert store.meta["task_spans_s"] == [[0.0, 13.0], [20.0, 1000.0]]
    jobs = {r["id"]: r["instances"] for r in store.workloads().collect().iter_rows(named=True)}
    assert (jobs["2"], jobs["5"], jobs["7"]) == (None, 1, 1)
    assert store.meta["distributions"]["tasks"]["count"] == 1


def test_job_events_alone_give_gaps_and_runtimes(src, imported):
    shutil.rmtree(src / "task_events")
    store = imported(FORMAT, src)
    d = store.meta["distributions"]
    assert (d["gap_s"]["count"], d["runtime_s"]["count"], d["tasks"]["count"]) == (2, 3, 0)
    assert d["tasks"]["mean"] is None
    assert pl.read_parquet(store.path / DISTRIBUTIONS_FILE)["tasks"].null_count() == 1001


@pytest.mark.parametrize(
    ("target", "line", "edit", "problem"),
    [
        (JOBS0, 6, lambda f: f.__setitem__(0, "-5"), "negative time: -5"),
        (JOBS0, 6, lambda f: f.__setitem__(0, "5611"), "inside Google's 600 s offset"),
        (
            JOBS0,
            6,
            lambda f: f.__setitem__(0, str(T(5))),
            f"time goes backwards: {T(5)} after {T(20)}",
        ),
        (
            JOBS0,
            6,
            lambda f: f.__setitem__(3, "9"),
            "event_type 9 is not one of Google's codes 0-8",
        ),
        (JOBS0, 6, lambda f: f.__setitem__(5, "4"), "scheduling_class 4 is not one of"),
        (JOBS0, 6, lambda f: f.__setitem__(2, ""), "job_id is empty but the format requires"),
        (TASKS0, 3, lambda f: f.__setitem__(9, "NaN"), "cpu_request is NaN"),
        (TASKS0, 3, lambda f: f.__setitem__(10, "3"), "memory_request is 3, above 2"),
        (
            TASKS0,
            3,
            lambda f: f.__setitem__(8, "12"),
            "priority 12 is not one of Google's codes 0-11",
        ),
        (TASKS0, 3, lambda f: f.__setitem__(9, "abc"), "cpu_request is not a number: 'abc'"),
    ],
)
def test_a_bad_value_is_an_error_at_its_line(src, tmp_path, target, line, edit, problem):
    rows = lines(src / target)
    fields = rows[line - 1].rstrip("\n").split(",")
    edit(fields)
    rows[line - 1] = ",".join(fields) + "\n"
    write(src / target, rows)
    with pytest.raises(TraceError) as err:
        import_trace(FORMAT, src, tmp_path / "store")
    assert str(err.value).startswith(f"{src / target}, line {line}: ")
    assert problem in str(err.value)


def test_time_must_not_go_back_from_one_file_to_the_next(src, tmp_path):
    rows = lines(src / JOBS1)
    rows[0] = rows[0].replace(str(T(130)), str(T(100)), 1)
    write(src / JOBS1, rows)
    with pytest.raises(
        TraceError, match=rf"{JOBS1}, line 1: time goes backwards: {T(100)} after {T(112)}"
    ):
        import_trace(FORMAT, src, tmp_path / "store")


def test_a_copied_row_is_an_error(src, tmp_path):
    rows = lines(src / JOBS1)
    write(src / JOBS1, [*rows[:3], rows[2], *rows[3:]])
    with pytest.raises(
        TraceError,
        match=rf"{JOBS1}, line 4: job 6 has event type 0 .* twice \(first at .*{JOBS1}, line 3\)",
    ):
        import_trace(FORMAT, src, tmp_path / "store")
    write(src / JOBS1, rows)
    rows = lines(src / TASKS0)
    write(src / TASKS0, [*rows[:5], rows[4], *rows[5:]])
    with pytest.raises(TraceError, match=rf"{TASKS0}, line 6: repeats line 5"):
        import_trace(FORMAT, src, tmp_path / "store")


def test_no_job_events_is_an_error(src, tmp_path):
    shutil.rmtree(src / "job_events")
    with pytest.raises(TraceError, match="no job_events/part-NNNNN-of-NNNNN.csv.gz files here"):
        import_trace(FORMAT, src, tmp_path / "store")


def _cli(src, out) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "from reclaim.cli import main; main()", "traces", "import"]
    return subprocess.run(
        [*command, FORMAT, str(src), "-o", str(out)], capture_output=True, text=True
    )


def _one_error_line(done: subprocess.CompletedProcess, start: str) -> None:
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {start}")


def test_cli_imports_and_a_truncated_or_column_short_copy_is_one_error_line(
    src, fixtures, tmp_path
):
    """The issue's done-when, through the real entry point in a fresh process."""
    ok = _cli(fixtures / "google2011_jobs", tmp_path / "s")
    assert ok.returncode == 0, ok.stderr
    assert "finished population" in ok.stdout
    assert load_store(tmp_path / "s").meta["rows"] == {"workloads": 9, "usage": 0}

    path = src / TASKS0
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    done = _cli(src, tmp_path / "t")
    _one_error_line(done, f"{path}, line ")
    assert "compressed data is truncated or corrupt" in done.stderr
    assert not (tmp_path / "t").exists()

    path.write_bytes(whole)
    short = [",".join(r.split(",")[:-1]) + "\n" for r in lines(src / JOBS1)]  # no logical name
    write(src / JOBS1, short)
    done = _cli(src, tmp_path / "t")
    _one_error_line(done, f"{src / JOBS1}, line 1: ")
    assert "expected 8 fields, found 7" in done.stderr


def test_the_shipped_sample_is_what_the_builder_makes(shared_traces, tmp_path):
    """The quantile tables and summaries shipped in the package are those of the shared
    development extract, as scripts/build_sample.py imports it."""
    store = load_store(sample_path(FORMAT))
    fresh = tmp_path / "store"
    import_trace(FORMAT, shared_traces / "google-clusterdata-2011-2-jobs", fresh)
    shipped = pl.read_parquet(store.path / DISTRIBUTIONS_FILE)
    assert shipped.equals(pl.read_parquet(fresh / DISTRIBUTIONS_FILE))
    meta = json.loads((fresh / "meta.json").read_text())
    for key in ("distributions", "population", "filtered", "flagged", "sources"):
        assert store.meta[key] == meta[key], key
    first_hour = pl.scan_parquet(fresh / "workloads.parquet").filter(
        (pl.col("submit_time") > 0) & (pl.col("submit_time") <= 3600)
    )
    assert store.workloads().collect().equals(first_hour.collect())


def test_the_shipped_sample_holds_the_papers_population():
    meta = load_store(sample_path(FORMAT)).meta
    d = meta["distributions"]
    # 20 of the trace's 29 days: the notebook found 385,502 finished jobs in all 29
    assert meta["population"]["finished_population"] == 269_273
    assert d["runtime_s"]["count"] == 269_273 and d["gap_s"]["count"] == 269_272
    assert d["tasks"]["count"] == 9_570 and d["task_cpu"]["count"] == 17_603
    assert 100 < d["runtime_s"]["median"] < d["runtime_s"]["mean"] < d["runtime_s"]["table_mean"]
