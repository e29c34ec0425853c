"""StoreWriter: appends reader batches to the store's Parquet tables, batch by batch.

Readers hand over polars frames with whatever schema columns they know; the writer selects and
casts them to :mod:`reclaim.traces.schema` (unknown columns become null), buffers them into
row groups, and keeps the usage table's promise: sorted by id then time, one row per (id, time).
A table gets the optional schema columns that the first frame written to it has, so stores of
traces without them keep exactly the required columns.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from reclaim.traces.schema import (
    HOSTS_FILE,
    HOSTS_SCHEMA,
    OPTIONAL_HOSTS,
    OPTIONAL_USAGE,
    OPTIONAL_WORKLOADS,
    USAGE_FILE,
    USAGE_SCHEMA,
    WORKLOADS_FILE,
    WORKLOADS_SCHEMA,
)
from reclaim.traces.validate import REPEATED_TIME, Filtered

#: Rows per Parquet row group; small batches (one 288-sample file each) are buffered up to it.
ROWS_PER_GROUP = 1 << 18
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 9  # pyarrow's default level 1 leaves a quarter more bytes on trace data


class _Table:
    """One Parquet file written in row groups; opened on the first row group.

    ``schema`` gains the ``optional`` columns present in the first frame (:meth:`fix_schema`)."""

    def __init__(
        self, path: Path, schema: dict[str, pl.DataType], optional: dict[str, pl.DataType]
    ) -> None:
        self.path, self.schema, self._optional = path, schema, optional
        self._fixed: list[str] | None = None
        self.rows = 0
        self._buffer: list[pl.DataFrame] = []
        self._buffered = 0
        self._writer: pq.ParquetWriter | None = None

    def fix_schema(self, columns: list[str]) -> dict[str, pl.DataType]:
        """The table's columns, fixed by the first call; later frames are cast to them."""
        if self._fixed is None:
            self._fixed = [c for c in self._optional if c in columns]
            self.schema = {**self.schema, **{c: self._optional[c] for c in self._fixed}}
        elif late := [c for c in self._optional if c in columns and c not in self._fixed]:
            # a reader bug, not bad input: its first frame must carry every optional column
            raise ValueError(f"{self.path.name}: optional column(s) {late} after the first frame")
        return self.schema

    def append(self, df: pl.DataFrame) -> None:
        self._buffer.append(df)
        self._buffered += df.height
        self.rows += df.height
        if self._buffered >= ROWS_PER_GROUP:
            self._flush()

    def _flush(self) -> None:
        table = pl.concat(self._buffer).to_arrow() if self._buffer else self._empty()
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self.path,
                table.schema,
                compression=COMPRESSION,
                compression_level=COMPRESSION_LEVEL,
            )
        self._writer.write_table(table)
        self._buffer, self._buffered = [], 0

    def _empty(self):
        return pl.DataFrame(schema=self.schema).to_arrow()

    def close(self) -> None:
        if self._buffer or self._writer is None:  # an unwritten table is still a valid file
            self._flush()
        self._writer.close()


class StoreWriter:
    """Writes the tables of one store under ``root``; :meth:`close` finishes them.

    ``filtered`` counts the rows readers (and the writer) leave out, by table and reason;
    ``meta`` holds what a reader adds to meta.json (e.g. ``window_s``).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filtered = Filtered()
        self.meta: dict[str, object] = {}
        self._tables = {
            "workloads": _Table(root / WORKLOADS_FILE, WORKLOADS_SCHEMA, OPTIONAL_WORKLOADS),
            # usage goes to a part file until close() knows whether it must be sorted
            "usage": _Table(root / f"{USAGE_FILE}.part", USAGE_SCHEMA, OPTIONAL_USAGE),
            "hosts": _Table(root / HOSTS_FILE, HOSTS_SCHEMA, OPTIONAL_HOSTS),
        }
        self._hosts_written = False
        self._usage_in_order = True
        self._last_key: tuple[str | None, float | None] = (None, None)

    def write(self, table: str, df: pl.DataFrame) -> None:
        """Append ``df`` to ``table`` ("workloads", "usage" or "hosts")."""
        target = self._tables[table]
        df = df.select(
            pl.col(c).cast(t) if c in df.columns else pl.lit(None, t).alias(c)
            for c, t in target.fix_schema(df.columns).items()
        )
        if df.is_empty():
            return
        if table == "usage" and self._usage_in_order:
            self._usage_in_order = self._follows(df)
        self._hosts_written |= table == "hosts"
        target.append(df)

    def _follows(self, df: pl.DataFrame) -> bool:
        """True if ``df`` continues the usage written so far in strict (id, time) order."""
        last_id, last_time = self._last_key
        prev_id = pl.col("id").shift(1, fill_value=last_id)
        prev_time = pl.col("time").shift(1, fill_value=last_time)
        after = (pl.col("id") > prev_id) | (
            (pl.col("id") == prev_id) & (pl.col("time") > prev_time)
        )
        self._last_key = (df["id"][-1], df["time"][-1])
        return bool(df.select(after.fill_null(True).all()).item())

    def close(self) -> dict[str, int]:
        """Finish every table; returns the rows kept per table (hosts only if written)."""
        for name, table in self._tables.items():
            if name != "hosts" or self._hosts_written:
                table.close()
        usage = self._tables["usage"]
        final = self.root / USAGE_FILE
        if self._usage_in_order:
            usage.path.rename(final)
            kept = usage.rows
        else:
            kept = self._sort_usage(usage.path, final)
            self.filtered.add("usage", REPEATED_TIME, usage.rows - kept)
            usage.path.unlink()
        rows = {"workloads": self._tables["workloads"].rows, "usage": kept}
        if self._hosts_written:
            rows["hosts"] = self._tables["hosts"].rows
        return rows

    @staticmethod
    def _sort_usage(part: Path, final: Path) -> int:
        """Sort by (id, time) keeping the first of repeated samples; returns the rows kept.

        Runs in polars' streaming engine from file to file. It is the one step of an import
        whose memory grows with the table (only formats with unsorted usage, e.g. Azure)."""
        (
            pl.scan_parquet(part)
            .sort("id", "time", maintain_order=True)
            .unique(subset=["id", "time"], keep="first", maintain_order=True)
            .sink_parquet(final, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL)
        )
        return pl.scan_parquet(final).select(pl.len()).collect().item()
