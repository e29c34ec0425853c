"""Feed every registered trace reader broken copies of its fixtures through the real CLI.

Each reader's fixture is copied, one file of it is broken one way (a missing column, NaN, inf,
1e300, a negative value, time out of order, a truncated gzip, an empty file, a non-UTF-8 byte,
a repeated row, random bytes, times or memory in another unit...), and ``reclaim traces import``
runs on it in a fresh process. An outcome is:

- ``clean``: exit 2, one line on stderr starting ``error:``, no store left behind;
- ``same``: exit 0 with nothing more filtered, for a change that must not matter (a byte-order
  mark, HARMLESS);
- ``counted``: exit 0, and the broken row is counted in meta.json["filtered"] (a duplicate
  sample the format filters on purpose);
- ``traceback``: a Python traceback, or any other exit code;
- ``silent``: exit 0 with nothing counted: the broken input was stored as if it were sound;
- ``messy``: exit 2 but more than one line, or a store (or a staging folder) left behind.

Run ``python tests/traces/bad_input_corpus.py [-v] [FORMAT ...]`` for the tally per reader;
``tests/traces/test_bad_input_corpus.py`` runs a part of it so the tally cannot regress.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
OUTCOMES = ("clean", "same", "counted", "traceback", "silent", "messy")
#: The four values no real trace holds (issue 20), written where a number belongs.
ABSURD = {"inf": "inf", "1e300": "1e300", "1e400": "1e400", "negative": "-1"}


@dataclass(frozen=True)
class Spec:
    """Where to break one reader's input.

    ``fixture``: the fixture folder copied as SRC (None: ``build`` writes it); ``target``: the
    file broken, relative to SRC (``archive:member`` for a member of a tar.gz); ``src``: what is
    passed as SRC, relative to the copy ("" for the folder). Columns are 0-based field indices
    of ``target``: ``value`` a numeric column the reader keeps, ``text`` a string column (None:
    ``value``), ``time`` the column of a series' time (None: the format has no order to break).
    ``value_format`` wraps a value written into ``value`` (for fields holding two numbers).
    ``gz``: a gzip file of SRC for the compression cases when ``target`` is not one.
    ``clock``: a column of times the unit cases scale (None: ``time``); ``mem``: a memory
    column the trace documents in (Ki/Mi/Gi)B; ``period``: the format has a sampling period.
    """

    fixture: str | None
    target: str
    header: bool
    delimiter: str
    value: int
    text: int | None = None
    time: int | None = None
    src: str = ""
    value_format: str = "{}"
    gz: str | None = None
    build: Callable[[Path], None] | None = None
    clock: int | None = None
    mem: int | None = None
    period: bool = False


def _azure2017(folder: Path) -> None:
    """A small azure2017-lifetimes source in the format of the real files (see
    tests/traces/readers/test_azure2017_lifetimes.py)."""
    (folder / "flav_map.txt").write_text("1,0.75 a\n1,1.75 b\n2,3.5 g\n4,7 k\n8,14 m\n")
    bins = "".join(f"{s} {s // 300}\n" for s in range(0, 3901, 300))
    (folder / "v1.interval_map.txt").write_text(bins)
    (folder / "v1.dev.txt.gz").write_bytes(_gzip("1800000 m,|,a,|,g,g,k,|\n1800300 b,|,m,m,|\n"))
    durations = "1800000 U1,|,U4,|,U3,U0,C13,|\n1800300 U12,|,C12,U2,|\n"
    (folder / "v1.dev.c1804000.txt.gz").write_bytes(_gzip(durations))


GOOGLE2019_FILE = "input-sim/380263806889/0-461643000000-631583000000.csv.gz"
SPECS: dict[str, Spec] = {
    "bitbrains": Spec(
        "bitbrains", "2013-7/1.csv.gz", True, ";", value=3, time=0, mem=5, period=True
    ),
    "alibaba2017": Spec(
        "alibaba2017",
        "batch_task.csv.gz",
        True,
        ",",
        value=6,
        text=5,
        src="batch_task.csv.gz",
        clock=0,
    ),
    "alibaba2018": Spec(
        "alibaba2018",
        "machine_usage_head_subset.csv.gz",
        False,
        ",",
        value=2,
        text=0,
        time=1,
        period=True,
    ),
    "azure2019": Spec(
        "azure2019",
        "vm_cpu_readings_deep_study_vms.csv.gz",
        True,
        ",",
        value=4,
        clock=0,
        period=True,
    ),
    "google2011-derived": Spec(
        "google2011", "GCD_VMs_fixture.tar.gz:GCD_VMs/vm_1329653148_1", False, " ", value=0
    ),
    "alibaba-gpu2023": Spec(
        "alibaba_gpu2023",
        "openb_pod_list_default_subset.csv.gz",
        True,
        ",",
        value=1,
        text=0,
        clock=8,
        mem=2,
    ),
    "alibaba-gpu2025": Spec(
        "alibaba_gpu2025",
        "disaggregated_DLRM_trace_subset.csv.gz",
        True,
        ",",
        value=3,
        text=2,
        clock=14,
        mem=9,
    ),
    # period left False: the fixture's few, irregular samples lie in several files, so one
    # file's times in another unit barely move the median step (x1e6 still shows)
    "google2019-usage": Spec("google2019_usage", GOOGLE2019_FILE, True, ",", value=10, time=0),
    "google2011-jobs": Spec(
        "google2011_jobs", "task_events/part-00000-of-00500.csv.gz", False, ",", value=9, time=0
    ),
    "azure2017-lifetimes": Spec(
        None,
        "flav_map.txt",
        False,
        " ",
        value=0,
        value_format="1,{}",
        gz="v1.dev.txt.gz",
        build=_azure2017,
    ),
}
#: The other files of multi-file formats (fixture and SRC as in SPECS), broken by OTHER_CASES.
OTHER_FILES: dict[str, tuple[Spec, ...]] = {
    "alibaba2018": (Spec("alibaba2018", "machine_meta.csv.gz", False, ",", value=4, text=0),),
    "azure2019": (Spec("azure2019", "vmtable_deep_study_vms.csv.gz", True, ",", value=9, text=0),),
    "alibaba-gpu2023": (
        Spec("alibaba_gpu2023", "openb_node_list_all_node.csv.gz", True, ",", value=3, text=0),
    ),
    "google2011-jobs": (
        Spec("google2011_jobs", "job_events/part-00000-of-00500.csv.gz", False, ",", value=0),
    ),
}


# ---- breaking a file ------------------------------------------------------------------------


def _gzip(text: str | bytes) -> bytes:
    return gzip.compress(text.encode() if isinstance(text, str) else text, mtime=0)


def _split(line: str, spec: Spec) -> list[str]:
    return line.split(spec.delimiter)


def _set(line: str, spec: Spec, col: int, value: str) -> str:
    """``line`` with field ``col`` replaced by ``value``, keeping the field's leading padding
    (Bitbrains writes a tab after each ``;``)."""
    fields = _split(line, spec)
    old = fields[col]
    fields[col] = old[: len(old) - len(old.lstrip())] + value
    return spec.delimiter.join(fields)


def _rows(lines: list[str], spec: Spec) -> tuple[list[str], list[str]]:
    """(header lines, data lines)."""
    n = int(spec.header)
    return lines[:n], lines[n:]


def _with_value(value: str) -> Callable[[list[str], Spec], list[str]]:
    def edit(lines: list[str], spec: Spec) -> list[str]:
        head, rows = _rows(lines, spec)
        return [*head, _set(rows[0], spec, spec.value, spec.value_format.format(value)), *rows[1:]]

    return edit


def _missing_column(lines: list[str], spec: Spec) -> list[str]:
    out = []
    for line in lines:
        fields = _split(line, spec)
        out.append(spec.delimiter.join(fields[: spec.value] + fields[spec.value + 1 :]))
    return out


def _short_row(lines: list[str], spec: Spec) -> list[str]:
    head, rows = _rows(lines, spec)
    return [*head, spec.delimiter.join(_split(rows[0], spec)[:-1]), *rows[1:]]


def _unsorted(lines: list[str], spec: Spec) -> list[str]:
    head, rows = _rows(lines, spec)
    return [*head, rows[1], rows[0], *rows[2:]]


def _duplicate(lines: list[str], spec: Spec) -> list[str]:
    head, rows = _rows(lines, spec)
    return [*head, rows[0], rows[0], *rows[1:]]


def _header_only(lines: list[str], spec: Spec) -> list[str]:
    return _rows(lines, spec)[0]


def _clock(spec: Spec) -> int | None:
    return spec.time if spec.clock is None else spec.clock


def _scaled(column: Callable[[Spec], int | None], factor: float):
    """Every value of a column times ``factor``: the column written in another unit."""

    def edit(lines: list[str], spec: Spec) -> list[str]:
        head, rows = _rows(lines, spec)
        col = column(spec)
        out = []
        for row in rows:
            text = _split(row, spec)[col].strip()
            if text:
                exact = text.lstrip("-").isdigit() and float(factor).is_integer()
                text = str(int(text) * int(factor)) if exact else repr(float(text) * factor)
                row = _set(row, spec, col, text)
            out.append(row)
        return [*head, *out]

    return edit


#: Text edits: (lines, spec) -> lines. None where the case does not apply to a spec.
TEXT_CASES: dict[str, Callable[[list[str], Spec], list[str]]] = {
    "missing column": _missing_column,
    "short row": _short_row,
    "empty value": _with_value(""),
    "NaN": _with_value("NaN"),
    **{name: _with_value(v) for name, v in ABSURD.items()},
    "-inf": _with_value("-inf"),
    "not a number": _with_value("12abc"),
    "unsorted time": _unsorted,
    "duplicate row": _duplicate,
    "header only": _header_only,
    # a unit slip (issue 33): every value plausible alone, the whole implausible
    "times x1e6": _scaled(_clock, 1e6),
    "times /1000": _scaled(_clock, 1e-3),
    "memory x1024": _scaled(lambda spec: spec.mem, 1024),
}


def _non_utf8(data: bytes, spec: Spec) -> bytes:
    """A 0xff byte inside the text (or value) field of the second data row."""
    lines = data.split(b"\n")
    i = int(spec.header) + 1
    col = spec.value if spec.text is None else spec.text
    fields = lines[i].split(spec.delimiter.encode())
    fields[col] = fields[col] + b"\xff"
    lines[i] = spec.delimiter.encode().join(fields)
    return b"\n".join(lines)


def applies(case: str, spec: Spec) -> bool:
    if case == "unsorted time":
        return spec.time is not None
    if case == "header only":
        return spec.header
    if case == "times x1e6":
        return _clock(spec) is not None
    if case == "times /1000":
        return _clock(spec) is not None and spec.period
    if case == "memory x1024":
        return spec.mem is not None
    return True


def _read_target(root: Path, spec: Spec) -> bytes:
    if ":" in spec.target:
        archive, member = spec.target.split(":", 1)
        with tarfile.open(root / archive) as tar:
            return tar.extractfile(member).read()
    raw = (root / spec.target).read_bytes()
    return gzip.decompress(raw) if spec.target.endswith(".gz") else raw


def _write_target(root: Path, spec: Spec, data: bytes) -> None:
    """Write ``data`` (uncompressed) back into the target, compressing or re-archiving it."""
    if ":" in spec.target:
        archive, member = spec.target.split(":", 1)
        with tarfile.open(root / archive) as tar:
            members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for info, content in members:
                if info.name == member:
                    content = data
                    info.size = len(data)
                tar.addfile(info, None if content is None else io.BytesIO(content))
        (root / archive).write_bytes(buf.getvalue())
        return
    path = root / spec.target
    path.write_bytes(_gzip(data) if spec.target.endswith(".gz") else data)


def _compressed(root: Path, spec: Spec) -> Path:
    """The compressed file of SRC the compression cases break."""
    return root / (spec.gz or spec.target.split(":", 1)[0])


def _truncate(root: Path, spec: Spec) -> None:
    path = _compressed(root, spec)
    raw = path.read_bytes()
    path.write_bytes(raw[: max(len(raw) // 2, 20)])


def _empty_file(root: Path, spec: Spec) -> None:
    (root / spec.target.split(":", 1)[0]).write_bytes(b"")


def _empty_gzip(root: Path, spec: Spec) -> None:
    _compressed(root, spec).write_bytes(_gzip(b""))


def _garbage(root: Path, spec: Spec) -> None:
    (root / spec.target.split(":", 1)[0]).write_bytes(bytes(range(256)) * 4)


def _random_bytes(root: Path, spec: Spec) -> None:
    """Bytes as /dev/urandom gives them (seeded): mostly no UTF-8, a line break now and then."""
    (root / spec.target.split(":", 1)[0]).write_bytes(random.Random(33).randbytes(5000))


def _random_text(root: Path, spec: Spec) -> None:
    """The target's text replaced by random bytes, compressed as the target is."""
    _write_target(root, spec, random.Random(34).randbytes(5000))


def _text_after_rows(root: Path, spec: Spec) -> None:
    """Random bytes after the third data row: a file whose start is sound."""
    data = _read_target(root, spec)
    lines = data.split(b"\n")
    keep = int(spec.header) + 3
    _write_target(root, spec, b"\n".join(lines[:keep]) + b"\n" + random.Random(35).randbytes(3000))


def _utf16(root: Path, spec: Spec) -> None:
    _write_target(root, spec, _read_target(root, spec).decode().encode("utf-16"))


def _bom(root: Path, spec: Spec) -> None:
    _write_target(root, spec, b"\xef\xbb\xbf" + _read_target(root, spec))


#: Cases that break the files themselves: (SRC copy, spec) -> None.
FILE_CASES: dict[str, Callable[[Path, Spec], None]] = {
    "truncated gzip": _truncate,
    "empty file": _empty_file,
    "empty gzip": _empty_gzip,
    "binary garbage": _garbage,
    "random bytes": _random_bytes,
    "random bytes inside": _random_text,
    "random bytes after rows": _text_after_rows,
    "UTF-16": _utf16,
    "byte-order mark": _bom,
}
#: Cases that must not change what is imported.
HARMLESS = ("byte-order mark",)
CASES = (*TEXT_CASES, "non-UTF-8 byte", *FILE_CASES)
OTHER_CASES = (
    "missing column",
    "empty value",
    "NaN",
    *ABSURD,
    "duplicate row",
    "header only",
    "non-UTF-8 byte",
    "truncated gzip",
    "empty file",
)


def _copy(spec: Spec, root: Path) -> None:
    if spec.build is not None:
        root.mkdir(parents=True)
        spec.build(root)
    else:
        shutil.copytree(FIXTURES / spec.fixture, root)


def prepare(fmt: str, case: str, root: Path, spec: Spec | None = None) -> Path:
    """A copy of ``fmt``'s fixture under ``root`` with ``spec``'s file (by default SPECS[fmt])
    broken by ``case``; returns the SRC to pass."""
    spec = spec or SPECS[fmt]
    _copy(spec, root)
    if case in FILE_CASES:
        FILE_CASES[case](root, spec)
    elif case == "non-UTF-8 byte":
        _write_target(root, spec, _non_utf8(_read_target(root, spec), spec))
    else:
        text = _read_target(root, spec).decode()
        end = "\n" if text.endswith("\n") else ""
        lines = TEXT_CASES[case](text.removesuffix("\n").split("\n"), spec)
        _write_target(root, spec, ("\n".join(lines) + end).encode())
    return root / spec.src


# ---- running the CLI ------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    fmt: str
    case: str
    spec: Spec  # which file of the format is broken


@dataclass(frozen=True)
class Result:
    fmt: str
    case: str
    target: str
    outcome: str
    detail: str  # the error line, or why the outcome is not clean


def _filtered(store: Path) -> int:
    try:
        meta = json.loads((store / "meta.json").read_text())
    except (OSError, ValueError):
        return 0
    return sum(n for reasons in meta.get("filtered", {}).values() for n in reasons.values())


def import_cli(fmt: str, src: Path, out: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "from reclaim.cli import main; main()", "traces", "import"]
    return subprocess.run(
        [*command, fmt, str(src), "-o", str(out)], capture_output=True, text=True, timeout=120
    )


def baseline(fmt: str, work: Path) -> int:
    """Rows the unbroken fixture filters: a case is ``counted`` only above this."""
    spec = SPECS[fmt]
    _copy(spec, work / "src")
    done = import_cli(fmt, work / "src" / spec.src, work / "store")
    if done.returncode != 0:
        raise RuntimeError(f"{fmt}: the unbroken fixture does not import: {done.stderr}")
    return _filtered(work / "store")


def run_case(job: Job, work: Path, base: Callable[[], int]) -> Result:
    """Break ``job``'s file by its case under ``work``, import it and classify the outcome;
    ``base()`` is what the unbroken fixture filters (see :func:`baseline`)."""
    fmt, case = job.fmt, job.case
    src = prepare(fmt, case, work / "src", job.spec)
    out = work / "out" / "store"
    done = import_cli(fmt, src, out)
    err = done.stderr
    leftovers = list(out.parent.iterdir()) if out.parent.exists() else []
    if "Traceback" in err or done.returncode not in (0, 2):
        tail = err.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return Result(fmt, case, job.spec.target, "traceback", tail[0])
    if done.returncode == 0:
        shown = _filtered(out)
        if case in HARMLESS:
            same = shown == base()
            outcome, detail = ("same", "imported as without it") if same else ("silent", "")
            return Result(fmt, case, job.spec.target, outcome, detail or f"{shown} filtered")
        if shown > (unbroken := base()):
            return Result(
                fmt, case, job.spec.target, "counted", f"{shown - unbroken} more row(s) filtered"
            )
        return Result(fmt, case, job.spec.target, "silent", "exit 0, nothing counted")
    line = err.rstrip("\n")
    if "\n" in line or not line.startswith("error: "):
        return Result(fmt, case, job.spec.target, "messy", f"not one 'error:' line: {err!r}")
    if leftovers:
        return Result(
            fmt, case, job.spec.target, "messy", f"left behind: {[p.name for p in leftovers]}"
        )
    return Result(fmt, case, job.spec.target, "clean", line)


def corpus(formats: Iterable[str]) -> list[Job]:
    """Every applicable case for the main file of each format, OTHER_CASES for its others."""
    jobs = []
    for fmt in formats:
        jobs += [Job(fmt, c, SPECS[fmt]) for c in CASES if applies(c, SPECS[fmt])]
        for spec in OTHER_FILES.get(fmt, ()):
            jobs += [Job(fmt, c, spec) for c in OTHER_CASES if applies(c, spec)]
    return jobs


def run_jobs(jobs: list[Job], workers: int = 2) -> list[Result]:
    """``jobs``, ``workers`` imports at a time, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="bad-input-") as tmp:
        root = Path(tmp)
        bases: dict[str, int] = {}
        lock = threading.Lock()

        def base(fmt: str) -> int:
            with lock:  # one baseline import per format, only when a case exits 0
                if fmt not in bases:
                    bases[fmt] = baseline(fmt, root / "base" / fmt)
                return bases[fmt]

        def one(i: int) -> Result:
            return run_case(jobs[i], root / str(i), lambda: base(jobs[i].fmt))

        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, range(len(jobs))))


def tally(results: Iterable[Result]) -> dict[str, Counter]:
    table: dict[str, Counter] = {}
    for r in results:
        table.setdefault(r.fmt, Counter())[r.outcome] += 1
    return table


def main() -> None:
    from reclaim import registry

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("formats", nargs="*", help="trace formats (default: every registered)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    registered = registry.names("trace_format")
    missing = [f for f in registered if f not in SPECS]
    if missing:
        sys.exit(f"no corpus spec for the registered format(s) {', '.join(missing)}")
    results = run_jobs(corpus(args.formats or registered))
    if args.verbose:
        for r in results:
            print(f"{r.fmt:20} {Path(r.target).name[:24]:24} {r.case:16} {r.outcome:10} {r.detail}")
        print()
    header = f"{'reader':20} {'tried':>5} " + " ".join(f"{o:>9}" for o in OUTCOMES)
    print(header)
    total: Counter = Counter()
    for fmt, counts in tally(results).items():
        total.update(counts)
        n = sum(counts.values())
        print(f"{fmt:20} {n:5} " + " ".join(f"{counts[o]:9}" for o in OUTCOMES))
    print(f"{'all':20} {sum(total.values()):5} " + " ".join(f"{total[o]:9}" for o in OUTCOMES))
    bad = [r for r in results if r.outcome in ("traceback", "silent", "messy")]
    for r in bad:
        print(f"  {r.outcome}: {r.fmt} / {Path(r.target).name} / {r.case}: {r.detail}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
