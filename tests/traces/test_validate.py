from __future__ import annotations

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces.validate import (
    REPEATED_TIME,
    Filtered,
    RowError,
    SeriesOrder,
    UniqueIds,
    cast_columns,
    non_negative,
    nonempty,
    require,
    within,
)


def batch(first_line: int = 2, **columns) -> pl.DataFrame:
    n = len(next(iter(columns.values())))
    return pl.DataFrame(columns).with_columns(
        _line=pl.int_range(first_line, first_line + n, dtype=pl.Int64)
    )


def test_row_error_is_one_line_naming_file_line_and_problem():
    err = RowError("trace.csv.gz", "negative cpu: -1.0", 7)
    assert isinstance(err, TraceError)
    assert str(err) == "trace.csv.gz, line 7: negative cpu: -1.0"
    assert (err.path, err.row, err.problem) == ("trace.csv.gz", 7, "negative cpu: -1.0")


def test_require_reports_the_earliest_missing_value():
    df = batch(cpu=[1.0, 2.0, float("nan")], mem=[1.0, None, 3.0])
    with pytest.raises(TraceError, match=r"^f, line 3: mem is empty but the format requires"):
        require(df, "f", ["cpu", "mem"])
    with pytest.raises(TraceError, match=r"^f, line 4: cpu is NaN but the format requires"):
        require(df, "f", ["cpu"])
    require(df.head(1), "f", ["cpu", "mem"])


def test_non_negative_names_the_value():
    df = batch(cpu=[0.0, -0.5])
    with pytest.raises(TraceError, match=r"^f, line 3: negative cpu: -0\.5$"):
        non_negative(df, "f", ["cpu"])


def test_cast_columns_names_an_integer_that_is_not_one():
    df = batch(n=["3", "1.5"])
    with pytest.raises(TraceError, match=r"^f, line 3: n is not an integer: '1\.5'$"):
        cast_columns(df, "f", {"n": pl.Int64()})


def test_filtered_counts_every_reason_checked_even_when_none_matched():
    filtered = Filtered()
    df = batch(cpu=[1.0, None, 3.0])
    kept = filtered.drop(df, pl.col("cpu") > 2, "usage", "too big")
    kept = filtered.drop(kept, pl.col("cpu") < 0, "usage", "negative")
    assert kept["cpu"].to_list() == [1.0, None]  # null compares as not matching
    assert filtered.counts == {"usage": {"too big": 1, "negative": 0}}


def test_series_order_drops_repeats_and_rejects_steps_back_across_files():
    filtered = Filtered()
    order = SeriesOrder(filtered)
    first = batch(id=["a", "a", "a", "b"], time=[10.0, 20.0, 20.0, 5.0])
    assert order.check(first, "m1.csv")["time"].to_list() == [10.0, 20.0, 5.0]
    assert filtered.counts == {"usage": {REPEATED_TIME: 1}}
    # the next file continues series "b": its first row may not go back before 5
    with pytest.raises(TraceError) as err:
        order.check(batch(id=["b", "b"], time=[1.0, 6.0]), "m2.csv")
    assert str(err.value) == "m2.csv, line 2: time goes backwards in series 'b': 1 after 5"


def test_series_order_allows_any_time_when_a_new_series_starts():
    order = SeriesOrder(Filtered())
    order.check(batch(id=["a", "a"], time=[10.0, 20.0]), "f")
    assert order.check(batch(id=["b", "b"], time=[1.0, 2.0]), "f").height == 2


def test_unique_ids_across_batches():
    ids = UniqueIds()
    ids.check(batch(id=["j1/t1", "j1/t2"]), "t.csv")
    with pytest.raises(TraceError, match=r"^t\.csv, line 3: id 'j1/t1' appears a second time$"):
        ids.check(batch(id=["j2/t1", "j1/t1"]), "t.csv")


def test_errors_name_the_file_of_the_row_when_a_batch_joins_files():
    df = batch(cpu=[1.0, -2.0]).with_columns(_file=pl.Series(["vm_1_1", "vm_1_2"]))
    with pytest.raises(TraceError, match=r"^vm_1_2, line 3: negative cpu"):
        non_negative(df, "unused", ["cpu"])


def test_within_reports_the_earliest_non_finite_negative_or_absurd_value():
    bounds = {"cpu": (64.0, "a big machine"), "n": (10.0, "ten")}
    df = batch(cpu=[1.0, float("nan"), 1e300, float("inf")], n=[1, 2, 3, -4])
    with pytest.raises(
        TraceError, match=r"^f, line 4: cpu is 1e\+300, above 64 \(a big machine\)$"
    ):
        within(df, "f", bounds)  # NaN is left to require
    with pytest.raises(TraceError, match=r"^f, line 5: cpu is not finite: inf$"):
        within(df.slice(3), "f", bounds)
    with pytest.raises(TraceError, match=r"^f, line 5: negative n: -4$"):
        within(df.slice(3), "f", {"n": bounds["n"]})
    within(df.head(2), "f", bounds)


def test_within_takes_a_negative_lower_bound_for_signed_columns():
    df = batch(t=[-5.0, -1e12])
    within(df.head(1), "f", {"t": (1e11, "far")}, lower=-1e11)
    with pytest.raises(TraceError, match=r"^f, line 3: t is -1e\+12, below -1e\+11$"):
        within(df, "f", {"t": (1e11, "far")}, lower=-1e11)
    within(df, "f", {"t": (1e11, "far")}, lower=None)
    with pytest.raises(TraceError, match=r"^f, line 2: t is not finite: -inf$"):
        within(batch(t=[float("-inf")]), "f", {"t": (1e11, "far")}, lower=None)


def test_nonempty_passes_batches_through_and_refuses_a_file_without_rows():
    df = batch(cpu=[1.0])
    assert list(nonempty([df], "f", "the usage file")) == [df]
    with pytest.raises(TraceError, match=r"^f: the usage file has no rows$"):
        list(nonempty([], "f", "the usage file"))
