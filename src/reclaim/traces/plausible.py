"""Are a new store's numbers in the units its format documents? Checked once, for every format.

A file in the wrong unit passes every row check: seconds where microseconds are due are still
finite, positive, ordered numbers, and memory in MiB where GiB are due stays below any physical
bound. What gives it away is the whole: the median sampling period, the span of the times, the
typical size of a workload. The importer runs these checks on every store before it is moved
into place, so a new reader gets them without asking; each refusal says what was measured and
what the format documents.

The thresholds are one order of magnitude (or more) away from every real trace in
/work/shared/traces and the shipped samples, so they refuse only a unit slip, never real data.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from reclaim.errors import TraceError
from reclaim.traces.schema import HOSTS_FILE, USAGE_FILE, WORKLOADS_FILE

#: The measured median sampling period may differ from the format's by this factor either way
#: (real traces: within 1.5x; a unit slip: 1,000x or more).
PERIOD_FACTOR = 10.0
#: Longest span of trace-relative times (real: 30 days; milliseconds as seconds: 80 years).
MAX_SPAN_S = 10 * 365 * 86_400.0
#: Unix times of a real trace lie between 1990 and 2100.
UNIX_RANGE_S = (631_152_000.0, 4_102_444_800.0)
_TIME_COLUMNS = {
    WORKLOADS_FILE: ("submit_time", "start_time", "end_time"),
    USAGE_FILE: ("time",),
    HOSTS_FILE: ("time",),
}
#: Medians of requests and capacities no real trace comes near, per table, column and unit:
#: (quantity, unit, bound). Real medians: workloads 0.5-48 cores and 8-240 GiB (alibaba-gpu2025
#: the largest), hosts 32-128 cores and 64-384 GiB; milli-cores as cores or MiB as GiB: 1,000x.
_SIZE_COLUMNS = {
    WORKLOADS_FILE: {"cpu_request": ("cpu", "cores", 512.0), "mem_request": ("mem", "GiB", 2048.0)},
    HOSTS_FILE: {"cpu": ("cpu", "cores", 4096.0), "mem": ("mem", "GiB", 16384.0)},
}


def check_units(
    store: Path, where: Path, fmt: str, units: dict[str, str], period_s: float | None, origin: str
) -> None:
    """Refuse the store at ``store`` (read from ``where``, of format ``fmt``) whose numbers do not
    fit its documented ``units``, ``period_s`` and time ``origin``; TraceError naming
    ``where``, the measured value and the expected one."""
    tables = {name: store / name for name in _TIME_COLUMNS if (store / name).is_file()}
    if period_s is not None and USAGE_FILE in tables:
        _check_period(tables[USAGE_FILE], where, fmt, period_s)
    for name, path in tables.items():
        columns = pl.read_parquet_schema(path)
        times = [c for c in _TIME_COLUMNS[name] if c in columns]
        _check_times(path, times, where, name, origin)
        for column, (quantity, unit, bound) in _SIZE_COLUMNS.get(name, {}).items():
            if column in columns and units.get(quantity) == unit:
                _check_size(path, column, unit, bound, where, name)


def _check_period(usage: Path, where: Path, fmt: str, period_s: float) -> None:
    step = (
        pl.scan_parquet(usage)
        .select(step=pl.col("time").diff().over("id"))
        .filter(pl.col("step") > 0)
        .select(pl.col("step").median())
        .collect()
        .item()
    )
    if step is None:
        return  # no series with two samples: nothing to measure
    if not period_s / PERIOD_FACTOR <= step <= period_s * PERIOD_FACTOR:
        raise TraceError(
            where,
            f"usage samples are {step:.4g} s apart (median), but {fmt} samples every "
            f"{period_s:g} s: times in another unit?",
        )


def _check_times(path: Path, columns: list[str], where: Path, table: str, origin: str) -> None:
    if not columns:
        return
    span = (
        pl.scan_parquet(path)
        .select(pl.concat_list(columns).explode().drop_nulls().drop_nans().alias("t"))
        .select(low=pl.col("t").min(), high=pl.col("t").max())
        .collect()
        .row(0)
    )
    low, high = span
    if low is None:
        return
    if origin == "unix" and not (UNIX_RANGE_S[0] <= low and high <= UNIX_RANGE_S[1]):
        raise TraceError(
            where,
            f"{table} times run from {low:.6g} to {high:.6g}, not Unix seconds of 1990-2100: "
            "times in another unit?",
        )
    if origin != "unix" and high - low > MAX_SPAN_S:
        years = (high - low) / (365 * 86_400.0)
        raise TraceError(
            where,
            f"{table} times span {years:,.0f} years ({low:.6g} to {high:.6g} s): times in "
            "another unit (milli- or microseconds as seconds)?",
        )


def _check_size(path: Path, column: str, unit: str, bound: float, where: Path, table: str) -> None:
    median = (
        pl.scan_parquet(path)
        .select(pl.col(column).filter(pl.col(column) > 0).median())
        .collect()
        .item()
    )
    if median is not None and median > bound:
        raise TraceError(
            where,
            f"{table} {column}: the median is {median:,.4g} {unit}, above the {bound:,g} {unit} "
            "no real trace comes near: values in another unit?",
        )
