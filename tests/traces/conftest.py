"""Helpers for trace tests: the real-line fixtures and small gzip files written on the fly."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from reclaim.traces import import_trace, load_store

FIXTURES = Path(__file__).parent / "fixtures"
#: The shared real trace extracts, when this checkout sits beside them.
SHARED_TRACES = Path(__file__).parents[3] / "shared" / "traces"


@pytest.fixture
def fixtures() -> Path:
    """Folder of gzip files holding real trace lines (see fixtures/make_fixtures.py)."""
    return FIXTURES


@pytest.fixture
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip("the shared trace extracts are not beside this checkout")
    return SHARED_TRACES


def read_gz(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def write_gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return path


@pytest.fixture
def gz():
    """``gz(path, text)`` writes ``text`` gzip-compressed to ``path`` and returns the path."""
    return write_gz


@pytest.fixture
def ungz():
    """``ungz(path)``: the text of a gzip file."""
    return read_gz


@pytest.fixture
def imported(tmp_path):
    """``imported(fmt, src)``: import ``src`` into a fresh store under tmp_path and open it."""

    def run(fmt: str, src: Path):
        out = tmp_path / "stores" / f"{fmt}-{len(list(tmp_path.glob('stores/*')))}"
        import_trace(fmt, src, out)
        return load_store(out)

    return run
