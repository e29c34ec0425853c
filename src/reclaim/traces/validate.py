"""Checks every reader shares: types, required values, signs, finiteness and physical bounds,
order within a series, unique ids, and the count of rows left out on purpose.

A check that fails raises :class:`RowError` naming the file and line; a row filtered on purpose
goes through :meth:`Filtered.drop`, which counts it by reason, so no row disappears silently.
Batches carry ``_line`` (1-based line in the file) from :func:`reclaim.traces.sources.csv_batches`;
a batch that joins rows of several small files also carries ``_file``, which errors then name
instead of ``path``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import polars as pl

from reclaim.errors import TraceError
from reclaim.traces.schema import PHYSICAL_MAX

#: Filter reason for a sample whose time repeats the previous one of its series.
REPEATED_TIME = "repeated time within a series (first sample kept)"


class RowError(TraceError):
    """A TraceError at one line of a file: ``path, line N: problem`` (lines count from 1 and
    include the header). ``row`` holds the line number."""

    def __init__(self, path: object, problem: str, line: int) -> None:
        super().__init__(path, problem, line)
        self.args = (f"{path}, line {line}: {problem}",)


def _first(df: pl.DataFrame, masks: Mapping[str, pl.Expr]) -> tuple[str, int] | None:
    """(key, row index) of the earliest row where one of ``masks`` is true (null is false).

    One query per batch whatever the number of masks: small batches stay cheap."""
    hits = df.select(**{k: m.fill_null(False).arg_true().first() for k, m in masks.items()})
    found = [(i, k) for k, i in hits.row(0, named=True).items() if i is not None]
    return None if not found else min(found)[::-1]


def _raise_at(df: pl.DataFrame, path: str | Path, hit: tuple[str, int], problem: str) -> None:
    where = df["_file"][hit[1]] if "_file" in df.columns else path
    raise RowError(where, problem, df["_line"][hit[1]])


def cast_columns(
    df: pl.DataFrame, path: str | Path, types: Mapping[str, pl.DataType]
) -> pl.DataFrame:
    """Cast text columns to ``types``; a value that does not parse is an error at its line."""
    numeric = {c: t for c, t in types.items() if t != pl.String}
    out = df.with_columns(pl.col(c).cast(t, strict=False) for c, t in numeric.items())
    failed = [c for c in numeric if out[c].null_count() != df[c].null_count()]
    if not failed:
        return out
    # tolerate padding around numbers before calling a value bad
    out = out.with_columns(df[c].str.strip_chars().cast(numeric[c], strict=False) for c in failed)
    text = df.select(pl.col(failed).name.prefix("text_"), "_line")
    bad = {c: out[c].is_null() & text[f"text_{c}"].is_not_null() for c in failed}
    hit = _first(text.with_columns(**bad), {c: pl.col(c) for c in failed})
    if hit is not None:
        kind = "an integer" if numeric[hit[0]].is_integer() else "a number"
        value = text[f"text_{hit[0]}"][hit[1]]
        _raise_at(df, path, hit, f"{hit[0]} is not {kind}: {value!r}")
    return out


def require(df: pl.DataFrame, path: str | Path, columns: Iterable[str]) -> None:
    """Every value of ``columns`` must be present: empty or NaN is an error at the first line."""
    masks = {}
    for c in columns:
        masks[c] = pl.col(c).is_null()
        if df[c].dtype.is_float():
            masks[c] = masks[c] | pl.col(c).is_nan()
    if (hit := _first(df, masks)) is not None:
        what = "empty" if df[hit[0]][hit[1]] is None else "NaN"
        _raise_at(df, path, hit, f"{hit[0]} is {what} but the format requires a value")


def non_negative(df: pl.DataFrame, path: str | Path, columns: Iterable[str]) -> None:
    """Usage, capacities and requests cannot be negative: error at the first negative value."""
    if (hit := _first(df, {c: pl.col(c) < 0 for c in columns})) is not None:
        _raise_at(df, path, hit, f"negative {hit[0]}: {df[hit[0]][hit[1]]}")


def finite(df: pl.DataFrame, path: str | Path, columns: Iterable[str]) -> None:
    """An infinite value is no measurement: error at the first one."""
    if (hit := _first(df, {c: pl.col(c).is_infinite() for c in columns})) is not None:
        _raise_at(df, path, hit, f"{hit[0]} is not finite: {df[hit[0]][hit[1]]}")


def at_most(
    df: pl.DataFrame, path: str | Path, columns: Iterable[str], bound: float, meaning: str
) -> None:
    """Values above a physical ``bound`` are corrupt or in another unit, not usage: error at the
    first one; ``meaning`` says what the bound is (e.g. "twice the largest machine")."""
    if (hit := _first(df, {c: pl.col(c) > bound for c in columns})) is not None:
        value = df[hit[0]][hit[1]]
        _raise_at(df, path, hit, f"{hit[0]} is {value:.6g}, above {bound:g} ({meaning})")


class Filtered:
    """Rows left out on purpose, counted per table and reason (reported and kept in meta.json).

    A reason that was checked appears even with a count of zero, so the report shows what was
    looked for as well as what was found.
    """

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}

    def add(self, table: str, reason: str, n: int) -> None:
        reasons = self.counts.setdefault(table, {})
        reasons[reason] = reasons.get(reason, 0) + n

    def drop(self, df: pl.DataFrame, mask: pl.Expr, table: str, reason: str) -> pl.DataFrame:
        """``df`` without the rows where ``mask`` is true (null counts as false), counted."""
        hit = df.select(mask.fill_null(False)).to_series()
        n = int(hit.sum())
        self.add(table, reason, n)
        return df.filter(~hit) if n else df


class SeriesOrder:
    """Time must increase within each series of a format that promises order, across batches
    and files read one after another: a step back is an error, a repeated time is filtered as a
    duplicate (the first sample is kept). Columns ``id`` and ``time``."""

    def __init__(self, filtered: Filtered, table: str = "usage") -> None:
        self.filtered, self.table = filtered, table
        self._last: tuple[str | None, float | None] = (None, None)

    def check(self, df: pl.DataFrame, path: str | Path) -> pl.DataFrame:
        if df.is_empty():
            return df
        last_id, last_time = self._last
        prev_time = pl.col("time").shift(1, fill_value=last_time)
        same = pl.col("id") == pl.col("id").shift(1, fill_value=last_id)
        back = same & (pl.col("time") < prev_time)
        if (hit := _first(df, {"back": back})) is not None:
            i = hit[1]
            before = df["time"][i - 1] if i else last_time
            problem = (
                f"time goes backwards in series {df['id'][i]!r}: "
                f"{df['time'][i]:.10g} after {before:.10g}"
            )
            _raise_at(df, path, hit, problem)
        self._last = (df["id"][-1], df["time"][-1])
        return self.filtered.drop(
            df, same & (pl.col("time") == prev_time), self.table, REPEATED_TIME
        )


class UniqueIds:
    """Workload ids must be unique within a store, across batches and files."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def check(self, df: pl.DataFrame, path: str | Path) -> None:
        for i, wid in enumerate(df["id"].to_list()):
            if wid in self._seen:
                raise RowError(path, f"id {wid!r} appears a second time", df["_line"][i])
            self._seen.add(wid)


def within(
    df: pl.DataFrame,
    path: str | Path,
    bounds: Mapping[str, tuple[float, str]],
    lower: float | None = 0.0,
) -> None:
    """:func:`finite`, :func:`non_negative` (or at least ``lower``, None for no lower bound)
    and :func:`at_most` in one query: error at the first line that fails one of them.

    ``bounds`` maps a column to its physical maximum in the column's own unit and what that
    maximum is (see :func:`physical`); a negative ``lower`` is for signed columns such as times
    before the window. Empty and NaN values are left to :func:`require` (or to a filter)."""
    masks = {}
    for c, (bound, _) in bounds.items():
        # one mask per column (inf is above the bound); which check failed is told after
        value = pl.col(c)
        bad = (value > bound) | ((value < lower) if lower is not None else (value == -math.inf))
        # NaN compares above every number in polars: leave it out
        masks[c] = bad & ~value.is_nan() if df[c].dtype.is_float() else bad
    if (hit := _first(df, masks)) is None:
        return
    c = hit[0]
    value, (bound, meaning) = df[c][hit[1]], bounds[c]
    if math.isinf(value):
        problem = f"{c} is not finite: {value}"
    elif lower == 0 and value < 0:
        problem = f"negative {c}: {value}"
    elif value < bound:
        problem = f"{c} is {value:.6g}, below {lower:g}"
    else:
        problem = f"{c} is {value:.6g}, above {bound:g} ({meaning})"
    _raise_at(df, path, hit, problem)


def physical(quantity: str, scale: float = 1.0) -> tuple[float, str]:
    """(bound, meaning) of ``quantity`` from ``schema.PHYSICAL_MAX`` for :func:`within`, in a
    source unit ``scale`` times smaller than the canonical one (1024 for MiB of GiB)."""
    bound, meaning = PHYSICAL_MAX[quantity]
    if scale != 1.0:
        meaning = f"{bound:g} {quantity}: {meaning}"
    return bound * scale, meaning


def nonempty(
    batches: Iterable[pl.DataFrame], path: str | Path, what: str
) -> Iterator[pl.DataFrame]:
    """``batches`` of one file, passed through; TraceError if the file holds no data row (an
    empty or header-only file of a format whose files all hold rows is a broken copy)."""
    empty = True
    for batch in batches:
        empty = empty and batch.is_empty()
        yield batch
    if empty:
        raise TraceError(path, f"{what} has no rows")
