from __future__ import annotations

import io
import tarfile

import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace

ARCHIVE = "google2011/GCD_VMs_fixture.tar.gz"


def test_each_file_is_a_day_long_series_in_percent(fixtures, imported):
    store = imported("google2011-derived", fixtures / ARCHIVE)
    series = store.workloads().collect().select("id", "job_id", "start_time", "end_time")
    assert series.rows() == [
        ("1329653148_1", "1329653148", 0.0, 287 * 300.0),
        ("1329653148_2", "1329653148", 86400.0, 86400.0 + 287 * 300.0),
    ]
    usage = store.usage().collect()
    assert usage.height == 2 * 288
    assert usage.row(0) == ("1329653148_1", 0.0, 9.538700000000002, 8.397900000000002)
    assert usage.row(1) == ("1329653148_1", 300.0, 10.433599999999998, 8.782399999999999)
    assert usage.row(288)[:2] == ("1329653148_2", 86400.0)
    assert store.units == {"time": "s", "cpu": "percent", "mem": "percent"}
    assert store.meta["period_s"] == 300.0


def test_an_extracted_folder_gives_the_same_store(fixtures, tmp_path, imported):
    with tarfile.open(fixtures / ARCHIVE) as tar:
        tar.extractall(tmp_path / "src", filter="data")
    from_tar = imported("google2011-derived", fixtures / ARCHIVE)
    from_dir = imported("google2011-derived", tmp_path / "src")
    assert from_dir.usage().collect().equals(from_tar.usage().collect())
    assert [s["name"] for s in from_dir.meta["sources"]] == [
        "GCD_VMs/vm_1329653148_1",
        "GCD_VMs/vm_1329653148_2",
    ]


def _archive(tmp_path, fixtures, edit):
    """The fixture archive with ``edit(text)`` applied to its second file."""
    out = io.BytesIO()
    with tarfile.open(fixtures / ARCHIVE) as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name.endswith("_2"):
                data = edit(data.decode()).encode()
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    path = tmp_path / "GCD_VMs.tar.gz"
    path.write_bytes(out.getvalue())
    return path


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda t: "".join(t.splitlines(keepends=True)[:287]),
            r"line 288: 287 lines, the format has 288",
        ),
        (lambda t: "-" + t, r"line 1: negative cpu"),
        (lambda t: "nan" + t[t.index(" ") :], r"line 1: cpu is NaN"),
    ],
    ids=["short file", "negative usage", "NaN"],
)
def test_bad_series_names_archive_member_and_line(edit, problem, fixtures, tmp_path):
    path = _archive(tmp_path, fixtures, edit)
    with pytest.raises(TraceError, match=rf"{path}:GCD_VMs/vm_1329653148_2, {problem}"):
        import_trace("google2011-derived", path, tmp_path / "store")


def test_truncated_archive_is_an_error(fixtures, tmp_path):
    path = tmp_path / "GCD_VMs.tar.gz"
    path.write_bytes((fixtures / ARCHIVE).read_bytes()[:2000])
    with pytest.raises(TraceError, match="truncated or corrupt"):
        import_trace("google2011-derived", path, tmp_path / "store")
