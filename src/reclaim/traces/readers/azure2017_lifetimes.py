"""Azure Public Dataset V1 (2017) VM arrivals, flavours and binned lifetimes (Bergsma et al.).

The text files of ``huaweicloud/trace_generation_rnn`` (SOSP 2021), processed from Azure's 2017
vmtable: ``v1.<split>.txt[.gz]`` has one line per 5-minute bin, ``<t> <tok>,<tok>,...``, a token
per VM (its flavour letter, in order of arrival) and ``|`` closing each batch (the VMs one tenant
started in that bin); the partner ``v1.<split>.c<T>.txt[.gz]`` has, token for token, ``U<bin>``
(ended before the cut ``T``, lifetime in duration bin ``bin``) or ``C<bin>`` (still running at
``T``, having run for a time in ``bin``), with the same separators. ``flav_map.txt`` maps letters to
``vcpu,memory_gb``; ``v1.interval_map.txt`` maps every multiple of 300 s to its bin.

A split without a partner file (the source's ``train``) gives arrivals without lifetimes
(status ``unknown``); splits with one are the lifetime window. Lifetimes are intervals:
``lifetime_min``/``lifetime_max`` keep both edges (see :data:`NOTES`).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from reclaim.errors import TraceError
from reclaim.registry import register
from reclaim.traces.readers.base import TraceReader
from reclaim.traces.sources import open_binary, text_line
from reclaim.traces.validate import RowError, physical
from reclaim.traces.writer import StoreWriter

FLAVOURS = "flav_map.txt"
INTERVALS = "v1.interval_map.txt"
_ARRIVALS = re.compile(r"v1\.(?P<split>[A-Za-z0-9_-]+)\.txt(\.gz)?")
_DURATIONS = re.compile(r"v1\.(?P<split>[A-Za-z0-9_-]+)\.c(?P<cut>\d+)\.txt(\.gz)?")
_DURATION_TOKEN = re.compile(r"([UC])(\d+)")
BIN_S = 300  # the source's arrival bins and lifetime quantum
SEP = "|"

ENDED, RUNNING, UNKNOWN = "ended", "running", "unknown"
ENDED_LATE = "ended VM whose lifetime bin starts after the cut (kept)"
CENSORED_OFF = "running VM whose run-time bin disagrees with its arrival and the cut (kept)"

NOTES = (
    "One row per VM; id = '<t>-<k>' (t the arrival bin in s, 7 digits; k its place in the bin, "
    "5 digits), so ids sort in arrival order; job_id = '<t>-b<j>', the tenant batch it arrived "
    "in; category = the flavour letter of flav_map.txt; cpu_request = vCPUs, mem_request = GiB.",
    "submit_time = start_time = t, the start of the 5-minute arrival bin (the true arrival lies "
    "in [t, t + 300 s)).",
    "Lifetimes are duration bins (v1.interval_map.txt): bin b covers the recorded lifetimes "
    "[min_b, max_b] (multiples of 300 s); as the source records 5-minute ticks, the lifetime is "
    "kept as the interval lifetime_min = min_b, lifetime_max = max_b + 300 s (bins 0-12: one "
    "5-minute step each; 13: 65-120 min; 14-35: hourly to 24 h; 36-44: daily to 10 days; 45: "
    "10-20 days).",
    "status 'ended' (U<bin>): end_time = submit_time + the middle of [lifetime_min, "
    "min(lifetime_max, cut - t)), a point value; reclaim.lifetime.vms.load_vms(lifetime_seed=) "
    "draws the lifetime uniformly in that interval instead.",
    "status 'running' (C<bin>, right-censored at the cut): end_time null; lifetime_min/max are "
    "the bin of the time it had run by the cut (the lifetime is above it).",
    "status 'unknown': arrivals of a split without a duration file (the source's train span); "
    "end_time and lifetime_min/max null. They are not in the lifetime window.",
    "window_s = [first bin, cut] of the latest split with a duration file. In an earlier split "
    "with durations (e.g. dev beside a held-out test split), ended VMs keep their lifetimes and "
    "those running at its cut become status 'unknown' (history before the window, imputed) "
    "with lifetime_min/max still the time they had run by that cut.",
)


def read_flavours(path: Path) -> dict[str, tuple[float, float]]:
    """letter -> (vCPU, GiB) from ``flav_map.txt`` (``vcpu,memory letter`` lines)."""
    out: dict[str, tuple[float, float]] = {}
    for line, text in enumerate(_lines(path), 1):
        parts = text.split()
        if not parts:
            continue
        try:
            size, letter = parts
            vcpu, mem = (float(x) for x in size.split(","))
        except ValueError:
            raise RowError(path, f"expected 'vcpu,memory_gb letter', got {text!r}", line) from None
        if not (vcpu > 0 and mem > 0 and np.isfinite(vcpu + mem)):
            raise RowError(path, f"flavour {letter!r}: size {size!r} must be positive", line)
        for value, (bound, meaning) in ((vcpu, physical("cores")), (mem, physical("GiB"))):
            if value > bound:
                raise RowError(
                    path, f"flavour {letter!r}: size {size!r} above {bound:g} ({meaning})", line
                )
        if letter in out or letter == SEP or len(letter) != 1:
            raise RowError(path, f"flavour letter {letter!r} is not a new single letter", line)
        out[letter] = (vcpu, mem)
    if not out:
        raise TraceError(path, "no flavours")
    return out


def read_bins(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(B,) lifetime_min and lifetime_max s of duration bins 0..B-1 from ``v1.interval_map.txt``
    (``seconds bin`` lines): [smallest seconds, largest seconds + 300)."""
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    for line, text in enumerate(_lines(path), 1):
        parts = text.split()
        if not parts:
            continue
        try:
            seconds, b = (int(x) for x in parts)
        except ValueError:
            raise RowError(path, f"expected 'seconds bin', got {text!r}", line) from None
        if seconds < 0 or b < 0 or seconds % BIN_S:
            raise RowError(path, f"{text!r}: seconds must be a multiple of 300, bin >= 0", line)
        lo[b] = min(lo.get(b, seconds), seconds)
        hi[b] = max(hi.get(b, seconds), seconds)
    if not lo or sorted(lo) != list(range(len(lo))):
        raise TraceError(path, "bins must be numbered 0, 1, 2, ... without gaps")
    n = len(lo)
    return (
        np.array([lo[b] for b in range(n)], np.float64),
        np.array([hi[b] + BIN_S for b in range(n)], np.float64),
    )


def _lines(path: Path) -> Iterator[str]:
    """Text lines of ``path`` (gzip or plain) without their newline; a truncated or corrupt gzip
    is a one-line error naming the line it stopped at."""
    line = 0
    with open_binary(path) as raw:
        try:
            for line, b in enumerate(raw, 1):  # noqa: B007  (line is read after the loop)
                if line == 1:
                    b = text_line(b, path)  # noqa: PLW2901  (its byte-order mark dropped)
                try:
                    yield b.decode("ascii").rstrip("\r\n")
                except UnicodeDecodeError:
                    raise RowError(path, "not ASCII text", line) from None
        except (EOFError, gzip.BadGzipFile, zlib.error) as err:
            raise RowError(
                path, f"truncated or corrupt gzip after this line ({err})", line
            ) from None


def _split(path: Path, line: int, text: str) -> tuple[int, list[str]]:
    """``<t> tok,tok,...`` -> (t, tokens); the line must close its last batch."""
    head, _, rest = text.partition(" ")
    if not head.isdigit() or int(head) % BIN_S:
        raise RowError(path, f"bin time {head!r} is not a multiple of 300 s", line)
    tokens = rest.split(",") if rest else []
    if tokens and tokens[-1] != SEP:
        raise RowError(
            path, f"token {len(tokens)} {tokens[-1]!r}: the line must end with '|'", line
        )
    return int(head), tokens


@register("trace_format", "azure2017-lifetimes")
class Azure2017Lifetimes(TraceReader):
    """SRC: the folder with flav_map.txt, v1.interval_map.txt and v1.<split>.txt[.gz] files,
    each optionally with its v1.<split>.c<T>.txt[.gz] duration partner."""

    units = {"time": "s", "cpu": "cores", "mem": "GiB"}
    time_origin = "trace-relative"
    period_s = None
    attribution = (
        "Microsoft Azure Public Dataset V1 (2017 vmtable), licensed CC-BY 4.0; cite E. Cortez et "
        "al., 'Resource Central', SOSP 2017. Processed (arrival bins, flavours, batches, lifetime "
        "bins) by S. Bergsma et al., 'Generating Complex, Realistic Cloud Workloads using "
        "Recurrent Neural Networks', SOSP 2021 (huaweicloud/trace_generation_rnn, MIT)."
    )
    notes = NOTES

    def files(self, src: Path) -> list[Path]:
        if not src.is_dir():
            raise TraceError(src, "expected the folder holding flav_map.txt and v1.*.txt[.gz]")
        for name in (FLAVOURS, INTERVALS):
            if not (src / name).is_file():
                raise TraceError(src, f"no {name} here")
        arrivals = {}
        durations: dict[str, Path] = {}
        for p in sorted(src.iterdir()):
            if m := _DURATIONS.fullmatch(p.name):
                if m["split"] in durations:
                    raise TraceError(p, f"second duration file of split {m['split']!r}")
                durations[m["split"]] = p
            elif (m := _ARRIVALS.fullmatch(p.name)) and p.name != INTERVALS:
                if m["split"] in arrivals:
                    raise TraceError(p, f"second arrival file of split {m['split']!r}")
                arrivals[m["split"]] = p
        if not arrivals:
            raise TraceError(src, "no v1.<split>.txt[.gz] arrival files here")
        for split, p in durations.items():
            if split not in arrivals:
                raise TraceError(p, f"duration file without its arrival file v1.{split}.txt")
        out = [src / FLAVOURS, src / INTERVALS]
        for split in sorted(arrivals, key=lambda s: _first_time(arrivals[s])):
            out.append(arrivals[split])
            if split in durations:
                out.append(durations[split])
        return out

    def read(self, files: list[Path], out: StoreWriter) -> None:
        flavours = read_flavours(files[0])
        lo, hi = read_bins(files[1])
        flagged = {ENDED_LATE: 0, CENSORED_OFF: 0}
        spans: list[tuple[float, float]] = []
        last_t = -1
        rest = files[2:]
        windows = sum(1 for p in rest if _DURATIONS.fullmatch(p.name))  # duration splits left
        i = 0
        while i < len(rest):
            arrivals = rest[i]
            partner = (
                rest[i + 1]
                if i + 1 < len(rest) and _DURATIONS.fullmatch(rest[i + 1].name)
                else None
            )
            i += 2 if partner is not None else 1
            cut = int(_DURATIONS.fullmatch(partner.name)["cut"]) if partner is not None else None
            df, first, last = _read_split(arrivals, partner, cut, flavours, lo, hi, last_t, flagged)
            if first is None:
                continue
            last_t = last
            if cut is not None:
                if cut <= last:
                    raise TraceError(partner, f"cut {cut} s is not after the last bin {last} s")
                windows -= 1
                if windows:  # an earlier lifetime split: history of the latest one
                    df = df.with_columns(
                        status=pl.when(pl.col("status") == RUNNING)
                        .then(pl.lit(UNKNOWN))
                        .otherwise(pl.col("status"))
                    )
                else:
                    spans.append((float(first), float(cut)))
            out.write("workloads", df)
        if not spans:
            raise TraceError(files[0].parent, "no v1.<split>.c<T>.txt duration file: no lifetimes")
        out.meta["window_s"] = list(spans[0])
        out.meta["flagged"] = {"workloads": flagged}


def _first_time(path: Path) -> int:
    for line, text in enumerate(_lines(path), 1):
        if text.strip():
            return _split(path, line, text)[0]
    return -1


def _read_split(
    arrivals: Path,
    partner: Path | None,
    cut: int | None,
    flavours: dict[str, tuple[float, float]],
    lo: np.ndarray,
    hi: np.ndarray,
    after: int,
    flagged: dict[str, int],
) -> tuple[pl.DataFrame, int | None, int]:
    """One split's VMs as workload rows; (rows, first bin, last bin)."""
    ts: list[int] = []  # per VM
    ks: list[int] = []
    batch: list[int] = []
    letters: list[str] = []
    kinds: list[str] = []
    bins: list[int] = []
    first, prev = None, after
    other = _lines(partner) if partner is not None else None
    n_bins = len(lo)
    line = 0
    for line, text in enumerate(_lines(arrivals), 1):  # noqa: B007
        twin = next(other, None) if other is not None else None
        if not text.strip():
            if twin is not None and twin.strip():
                raise RowError(partner, f"line has tokens where {arrivals.name} has none", line)
            continue
        t, tokens = _split(arrivals, line, text)
        if t <= prev:
            raise RowError(arrivals, f"bin time {t} s is not after the previous bin {prev} s", line)
        prev = t
        first = t if first is None else first
        if other is not None:
            if twin is None:
                raise RowError(partner, f"file ends before {arrivals.name} (bin {t} s)", line)
            t2, twins = _split(partner, line, twin)
            if t2 != t:
                raise RowError(partner, f"bin time {t2} s where {arrivals.name} has {t} s", line)
            if len(twins) != len(tokens):
                raise RowError(
                    partner,
                    f"{len(twins)} tokens where {arrivals.name} has {len(tokens)} "
                    "(batch separators must match)",
                    line,
                )
        j = k = 0
        for pos, tok in enumerate(tokens):
            if tok == SEP:
                if other is not None and twins[pos] != SEP:
                    raise RowError(
                        partner,
                        f"token {pos + 1} {twins[pos]!r} where {arrivals.name} closes a batch "
                        "with '|' (batch separators must match)",
                        line,
                    )
                if pos == 0 or tokens[pos - 1] == SEP:
                    raise RowError(arrivals, f"token {pos + 1} '|' closes an empty batch", line)
                j += 1
                continue
            if tok not in flavours:
                raise RowError(
                    arrivals,
                    f"token {pos + 1} {tok!r} is not a flavour of {FLAVOURS} "
                    f"({''.join(sorted(flavours))})",
                    line,
                )
            if other is not None:
                d = twins[pos]
                m = _DURATION_TOKEN.fullmatch(d)
                if d == SEP:
                    raise RowError(
                        partner,
                        f"token {pos + 1} '|' where {arrivals.name} has VM {tok!r} "
                        "(batch separators must match)",
                        line,
                    )
                if m is None:
                    raise RowError(partner, f"token {pos + 1} {d!r} is not U<bin> or C<bin>", line)
                b = int(m[2])
                if b >= n_bins:
                    raise RowError(
                        partner,
                        f"token {pos + 1} {d!r}: bin {b} out of range 0..{n_bins - 1} "
                        f"of {INTERVALS}",
                        line,
                    )
                kinds.append(m[1])
                bins.append(b)
            ts.append(t)
            ks.append(k)
            batch.append(j)
            letters.append(tok)
            k += 1
    if other is not None and (extra := next(other, None)) is not None and extra.strip():
        raise RowError(partner, f"more lines than {arrivals.name}", line + 1)
    t = np.array(ts, np.int64)
    vcpu = np.array([flavours[c][0] for c in letters])
    mem = np.array([flavours[c][1] for c in letters])
    df = pl.DataFrame(
        {
            "t": t,
            "k": np.array(ks, np.int64),
            "j": np.array(batch, np.int64),
            "category": letters,
            "cpu_request": vcpu,
            "mem_request": mem,
        },
        schema_overrides={"category": pl.String},
    )
    if other is None:
        df = df.with_columns(
            status=pl.lit(UNKNOWN),
            end_time=pl.lit(None, pl.Float64),
            lifetime_min=pl.lit(None, pl.Float64),
            lifetime_max=pl.lit(None, pl.Float64),
        )
    else:
        b = np.array(bins, np.int64)
        ended = np.array(kinds) == "U"
        life_lo, life_hi = lo[b], hi[b]
        room = cut - t.astype(np.float64)  # an ended VM ended before the cut
        late = ended & (life_lo >= room)
        # a running VM has run between cut - t - 300 (arrival at the bin's end) and cut - t
        off = ~ended & ((room < life_lo) | (room - BIN_S >= life_hi))
        flagged[ENDED_LATE] += int(late.sum())
        flagged[CENSORED_OFF] += int(off.sum())
        top = np.where(late, life_hi, np.minimum(life_hi, room))
        mid = 0.5 * (life_lo + top)
        df = df.with_columns(
            status=pl.Series(np.where(ended, ENDED, RUNNING)),
            end_time=pl.Series(np.where(ended, t + mid, np.nan)).fill_nan(None),
            lifetime_min=pl.Series(life_lo),
            lifetime_max=pl.Series(life_hi),
        )
    df = df.select(
        id=pl.format(
            "{}-{}",
            pl.col("t").cast(pl.String).str.zfill(7),
            pl.col("k").cast(pl.String).str.zfill(5),
        ),
        job_id=pl.format("{}-b{}", pl.col("t").cast(pl.String).str.zfill(7), pl.col("j")),
        submit_time=pl.col("t").cast(pl.Float64),
        start_time=pl.col("t").cast(pl.Float64),
        end_time="end_time",
        instances=pl.lit(1, pl.Int64),
        cpu_request="cpu_request",
        mem_request="mem_request",
        priority=pl.lit(None, pl.Int64),
        category="category",
        status="status",
        lifetime_min="lifetime_min",
        lifetime_max="lifetime_max",
    )
    return df, first, prev
