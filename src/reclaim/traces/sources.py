"""Reading trace files: plain or gzip bytes, and CSV streamed into typed polars batches.

Every batch carries ``_line``, the 1-based line of each row in its file (the header is line 1
where there is one), so that validation can name the line of a bad value. Memory stays flat on
traces of any size: pyarrow parses one block at a time from a decompressing stream.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import tarfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv

from reclaim.errors import TraceError
from reclaim.traces.validate import RowError, cast_columns

#: Bytes of CSV text parsed per batch.
BLOCK_BYTES = 1 << 22
#: The longest first line (a header) a CSV file may have: a "line" this long is binary data.
MAX_HEADER_BYTES = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
#: The UTF-8 byte-order mark some tools write first; every reader drops it.
UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
#: What a damaged compressed stream raises while being read (gzip, zlib, tar).
STREAM_ERRORS = (EOFError, OSError, zlib.error, tarfile.TarError)


@dataclass(frozen=True)
class CsvLayout:
    """How one kind of trace file lays out its columns.

    columns: canonical names in the order of the official file, used when a file has no header.
    header: True, False, or None to detect it from the first line (third-party extracts add a
        header that the official files lack).
    aliases: header spellings found in extracts -> canonical name.
    delimiter: one character; ``delete`` bytes are removed before parsing (Bitbrains pads every
        ``;`` with a tab).
    """

    columns: tuple[str, ...]
    header: bool | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)
    delimiter: str = ","
    delete: bytes = b""


def open_binary(path: Path) -> BinaryIO:
    """The decompressed bytes of ``path``; gzip is recognised by its magic number, not its name."""
    try:
        with open(path, "rb") as probe:
            compressed = probe.read(2) == _GZIP_MAGIC
        return gzip.open(path, "rb") if compressed else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise TraceError(path, f"cannot open: {err.strerror or err}") from None


def sha256(path: Path) -> str:
    """Hex digest of the file's bytes, recorded in meta.json so a store names its exact inputs."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def csv_batches(
    name: str | Path,
    layout: CsvLayout,
    types: Mapping[str, pl.DataType],
    stream: BinaryIO | None = None,
) -> Iterator[pl.DataFrame]:
    """Stream the ``types`` columns of a CSV file as typed batches with a ``_line`` column.

    ``name`` is the file (opened with :func:`open_binary` unless ``stream`` is given) and the
    name errors carry. Raises TraceError naming the line for a missing column, a row with the
    wrong number of fields, a value that is not a number, or compressed data that ends early.
    """
    raw = stream if stream is not None else open_binary(Path(name))
    with closing(raw):
        first = text_line(_read_line(raw, name, 1), name)
        if not first:
            return  # an empty file: no header, no rows (readers refuse or count it)
        names, header_lines = _column_names(first, layout, types, name)
        prefix = _read_line(raw, name, 2) if header_lines else first
        if not prefix:
            return  # no data rows
        yield from _parse(
            name,
            _Stream(raw, prefix, layout.delete, header_lines + 1),
            layout,
            names,
            header_lines,
            types,
        )


_ARROW_ROW = re.compile(r"Row #(\d+)")


def _parse(name, source, layout, names, header_lines, types) -> Iterator[pl.DataFrame]:
    invalid: list[pacsv.InvalidRow] = []

    def on_invalid(row: pacsv.InvalidRow) -> str:
        invalid.append(row)
        return "error"

    line = header_lines  # last line delivered so far
    try:
        reader = pacsv.open_csv(
            source,
            # one thread, so that pyarrow numbers invalid rows by their line
            read_options=pacsv.ReadOptions(
                column_names=names, block_size=BLOCK_BYTES, use_threads=False
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=layout.delimiter,
                invalid_row_handler=on_invalid,
                ignore_empty_lines=False,  # a blank line keeps its number and fails validation
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(types),
                column_types=dict.fromkeys(types, pa.string()),
                strings_can_be_null=True,
                null_values=[""],  # only an empty field is missing; "NaN" stays visible as NaN
            ),
        )
        # closed however the loop ends: a reader left open when a bad value stops the import
        # keeps pyarrow's read-ahead thread alive into interpreter shutdown, which then aborts
        # ("terminate called without an active exception", about once in 150 imports)
        with reader:
            for batch in reader:
                lines = np.arange(line + 1, line + 1 + batch.num_rows, dtype=np.int64)
                df = pl.from_arrow(batch).hstack([pl.Series("_line", lines)])
                line += batch.num_rows
                yield cast_columns(df, name, types)
        if source.bad_line is not None:
            raise RowError(name, source.bad_text(), source.bad_line)
    except STREAM_ERRORS as err:
        raise RowError(name, f"compressed data is truncated or corrupt ({err})", line + 1) from None
    except pa.ArrowInvalid as err:
        if invalid:
            row = invalid[0]
            problem = f"expected {row.expected_columns} fields, found {row.actual_columns}"
            at = header_lines + row.number if row.number else line + 1
            raise RowError(name, problem, at) from None
        # pyarrow quotes the row after "got N" or "...:": never echo a file's bytes
        problem = re.sub(r"(got \d+|Row #\d+):.*", r"\1", str(err).splitlines()[0])
        # pyarrow numbers the rows of the stream it was given (the lines after the header)
        at = _ARROW_ROW.search(problem)
        raise RowError(name, problem, header_lines + int(at[1]) if at else line + 1) from None


def text_line(first: bytes, name: str | Path) -> bytes:
    """The first line of a text file without its byte-order mark; TraceError naming the file
    for binary data or another encoding (the bytes themselves are never echoed)."""
    if first.startswith(_UTF16_BOMS):
        raise TraceError(name, "UTF-16 text; save the file as UTF-8 (or ASCII)")
    first = first.removeprefix(UTF8_BOM)
    if b"\x00" in first or len(first) >= MAX_HEADER_BYTES:
        raise TraceError(name, "binary data, not a text file (a NUL byte or no line break)")
    try:
        first.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TraceError(
            name, f"binary data, not UTF-8 text (byte {first[err.start]:#04x} in line 1)"
        ) from None
    return first


def _read_line(raw: BinaryIO, name: str | Path, line: int) -> bytes:
    try:
        return raw.readline(MAX_HEADER_BYTES)
    except STREAM_ERRORS as err:
        raise RowError(name, f"compressed data is truncated or corrupt ({err})", line) from None


def _column_names(
    first: bytes, layout: CsvLayout, types: Mapping[str, pl.DataType], name: str | Path
) -> tuple[list[str], int]:
    """Names of the file's columns in order, and how many header lines precede the data."""
    text = first.translate(None, layout.delete).decode("utf-8", "replace").rstrip("\r\n")
    fields = [f.strip() for f in text.split(layout.delimiter)]
    known = set(layout.columns) | set(layout.aliases)
    header = layout.header if layout.header is not None else any(f in known for f in fields)
    if not header:
        return list(layout.columns), 0
    names = [layout.aliases.get(f, f) or f"_unnamed{i}" for i, f in enumerate(fields)]
    for column in types:
        if column not in names:
            spellings = [column, *(k for k, v in layout.aliases.items() if v == column)]
            wanted = " or ".join(repr(s) for s in spellings)
            raise RowError(name, f"missing column {wanted} in the header", 1)
    return names, 1


class _Stream:
    """``prefix`` (line ``line`` of the file) then the rest of ``raw``, with ``delete`` bytes
    removed; what pyarrow reads.

    It passes on UTF-8 text only: at the first byte that is no UTF-8 character the stream ends
    before that byte's line and ``bad_line`` names it (pyarrow would otherwise echo the bytes,
    or fail inside its invalid-row callback)."""

    def __init__(self, raw: BinaryIO, prefix: bytes, delete: bytes, line: int) -> None:
        self._raw, self._prefix, self._delete = raw, prefix.translate(None, delete), delete
        self._line = line  # line of the next byte passed on
        self._split = b""  # the start of a character the last read cut in two
        self.bad_line: int | None = None
        self._bad_byte = 0
        self.closed = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.bad_line is not None:
            return b""
        if self._prefix:
            out, self._prefix = self._prefix, b""
            return self._text(out, final=False)
        while True:
            data = self._raw.read(size)
            kept = data.translate(None, self._delete) if self._delete else data
            if kept or not data:  # b"" only at the end, never because every byte was deleted
                return self._text(kept, final=not data)

    def _text(self, data: bytes, final: bool) -> bytes:
        """``data`` up to its first byte that is no UTF-8 character (where it stops)."""
        data, self._split = self._split + data, b""
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            if err.reason == "unexpected end of data" and not final:
                data, self._split = data[: err.start], data[err.start :]
            else:
                self.bad_line = self._line + data.count(b"\n", 0, err.start)
                self._bad_byte = data[err.start]
                data = data[: data.rfind(b"\n", 0, err.start) + 1]
        self._line += data.count(b"\n")
        return data

    def bad_text(self) -> str:
        return f"not UTF-8 text (byte {self._bad_byte:#04x}): binary data, or another encoding"

    def close(self) -> None:
        self.closed = True
