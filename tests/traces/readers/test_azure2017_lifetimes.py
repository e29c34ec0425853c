"""azure2017-lifetimes: arrivals, flavours, batches and binned lifetimes with censoring.

The fixture follows the source's format with the first tokens of the real dev lines (flavours
m, a, g, k, b) and lifetimes chosen consistent with a cut at 1,804,000 s.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace, load_store

FLAVOURS = "1,0.75 a\n1,1.75 b\n16,112 d\n2,3.5 g\n4,7 k\n8,14 m\n"
# the real map's first 37 rows: bins 0-12 one 5-minute step each, 13 = 65-120 min, 14 = 2-3 h
INTERVALS = "".join(
    f"{s} {s // 300 if s <= 3600 else (13 if s <= 7200 else 14)}\n" for s in range(0, 10801, 300)
)
TRAIN = "300 g,|,g,|,b,m,|\n600 g,|,a,|\n"
DEV = "1800000 m,|,a,|,g,g,k,|\n1800300 b,|,m,m,|\n"
DURATIONS = "1800000 U1,|,U4,|,U3,U0,C13,|\n1800300 U12,|,C12,U2,|\n"
CUT_FILE = "v1.dev.c1804000.txt.gz"


def _gz(path: Path, text: str) -> None:
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


def make(folder: Path, **override: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flav_map.txt").write_text(override.get("flavours", FLAVOURS))
    (folder / "v1.interval_map.txt").write_text(override.get("intervals", INTERVALS))
    _gz(folder / "v1.train.txt.gz", override.get("train", TRAIN))
    _gz(folder / "v1.dev.txt.gz", override.get("dev", DEV))
    _gz(folder / CUT_FILE, override.get("durations", DURATIONS))
    return folder


def imported(tmp_path: Path, **override: str):
    src = make(tmp_path / "src", **override)
    import_trace("azure2017-lifetimes", src, tmp_path / "store")
    return load_store(tmp_path / "store")


def test_vms_batches_flavours_and_lifetime_intervals(tmp_path):
    store = imported(tmp_path)
    wl = store.workloads().collect()
    assert len(wl) == 6 + 8
    assert store.meta["window_s"] == [1800000.0, 1804000.0]
    assert store.units == {"time": "s", "cpu": "cores", "mem": "GiB"}
    assert wl["id"].to_list() == sorted(wl["id"].to_list())  # ids sort in arrival order
    train = wl.filter(pl.col("status") == "unknown")
    assert train["submit_time"].to_list() == [300.0] * 4 + [600.0] * 2
    assert train["job_id"].to_list() == [f"0000300-b{j}" for j in (0, 1, 2, 2)] + [
        "0000600-b0",
        "0000600-b1",
    ]
    assert train["end_time"].null_count() == 6 and train["lifetime_min"].null_count() == 6
    dev = {r["id"]: r for r in wl.filter(pl.col("status") != "unknown").iter_rows(named=True)}
    first = dev["1800000-00000"]  # m = 8 vCPU / 14 GiB, U1: 300 s recorded, [300, 600)
    assert (first["category"], first["cpu_request"], first["mem_request"]) == ("m", 8.0, 14.0)
    assert (first["lifetime_min"], first["lifetime_max"]) == (300.0, 600.0)
    assert first["end_time"] == 1800000 + 450.0 and first["status"] == "ended"
    # C13: running at the cut after 65-120 min: right-censored, interval of the run time
    censored = dev["1800000-00004"]
    assert censored["status"] == "running" and censored["end_time"] is None
    assert (censored["lifetime_min"], censored["lifetime_max"]) == (3900.0, 7500.0)
    # U12 arriving 3,700 s before the cut: [3600, 3900) capped at the cut, middle 3650
    assert dev["1800300-00000"]["end_time"] == 1800300 + 3650.0
    assert dev["1800300-00001"]["job_id"] == "1800300-b1"
    assert dev["1800300-00002"]["job_id"] == "1800300-b1"
    assert all(n == 0 for n in store.meta["flagged"]["workloads"].values())


def test_inconsistent_bins_are_kept_and_counted(tmp_path):
    # U14 (2-3 h) cannot have ended 4,000 s after arrival; C0 cannot have run only 0-5 min
    store = imported(tmp_path, durations=DURATIONS.replace("U4,", "U14,").replace("C12", "C0"))
    flagged = store.meta["flagged"]["workloads"]
    assert sorted(flagged.values()) == [1, 1]
    assert store.workloads().collect().height == 14


def _error(tmp_path: Path, **override: str) -> str:
    src = make(tmp_path / "src", **override)
    with pytest.raises(TraceError) as info:
        import_trace("azure2017-lifetimes", src, tmp_path / "store")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_flavour_token(tmp_path):
    message = _error(tmp_path, dev=DEV.replace("g,g,k", "g,x,k"))
    assert "v1.dev.txt.gz, line 1: token 6 'x' is not a flavour" in message


def test_bad_duration_token(tmp_path):
    message = _error(tmp_path, durations=DURATIONS.replace("U12", "Z12"))
    assert f"{CUT_FILE}, line 2: token 1 'Z12' is not U<bin> or C<bin>" in message


def test_bin_out_of_range(tmp_path):
    message = _error(tmp_path, durations=DURATIONS.replace("U0,", "U15,"))
    assert f"{CUT_FILE}, line 1: token 6 'U15': bin 15 out of range 0..14" in message


def test_mismatched_batch_separators(tmp_path):
    # the duration file closes the first batch one VM late: same token count, separators differ
    message = _error(tmp_path, durations=DURATIONS.replace("U1,|,U4,", "U1,U4,|,"))
    assert f"{CUT_FILE}, line 1: token 2 'U4' where v1.dev.txt.gz closes a batch" in message
    message = _error(tmp_path / "b", durations=DURATIONS.replace("U2,|", "U2,U2,|"))
    assert f"{CUT_FILE}, line 2: 6 tokens where v1.dev.txt.gz has 5" in message


def test_truncated_gzip(tmp_path):
    src = make(tmp_path / "src")
    full = (src / CUT_FILE).read_bytes()
    (src / CUT_FILE).write_bytes(full[: len(full) - 12])
    with pytest.raises(TraceError) as info:
        import_trace("azure2017-lifetimes", src, tmp_path / "store")
    message = str(info.value)
    assert CUT_FILE in message and "truncated or corrupt gzip" in message and "line" in message
    assert "\n" not in message


def test_bin_times_must_increase_and_match(tmp_path):
    message = _error(tmp_path, dev=DEV.replace("1800300", "1800000"))
    assert "v1.dev.txt.gz, line 2: bin time 1800000 s is not after" in message
    message = _error(tmp_path / "b", durations=DURATIONS.replace("1800300", "1800600"))
    assert f"{CUT_FILE}, line 2: bin time 1800600 s where v1.dev.txt.gz has 1800300 s" in message


def test_the_shared_folder_imports(shared_traces, tmp_path):
    src = shared_traces / "azure-public-dataset-v1-2017-vm-lifetimes"
    if not src.is_dir():
        pytest.skip("no Azure 2017 lifetimes folder")
    report = import_trace("azure2017-lifetimes", src, tmp_path / "store")
    assert report.rows["workloads"] == 1_200_998 + 259_159
    counts = dict(
        load_store(tmp_path / "store").workloads().group_by("status").len().collect().rows()
    )
    assert counts == {"unknown": 1_200_998, "ended": 244_842, "running": 14_317}


def test_a_held_out_split_beside_dev_is_the_window_and_dev_its_history(shared_traces, tmp_path):
    # A held-out split as the source ships it, made here from the dev split moved 300,000 s on:
    # the window is the latest split, and the dev VMs still running at the dev cut become
    # history (status unknown) that keeps the time they had run by that cut.
    dev_cut = "v1.dev.c2100000.txt.gz"
    src = shared_traces / "azure-public-dataset-v1-2017-vm-lifetimes"
    if not src.is_dir():
        pytest.skip("no Azure 2017 lifetimes folder")
    folder = tmp_path / "with-test"
    folder.mkdir()
    for name in ("flav_map.txt", "v1.interval_map.txt", "v1.dev.txt.gz", dev_cut):
        (folder / name).write_bytes((src / name).read_bytes())

    def moved(name: str) -> bytes:
        lines = gzip.decompress((src / name).read_bytes()).decode().splitlines()
        out = [f"{int(t) + 300_000} {rest}" for t, rest in (line.split(" ", 1) for line in lines)]
        return gzip.compress(("\n".join(out) + "\n").encode())

    (folder / "v1.test.txt.gz").write_bytes(moved("v1.dev.txt.gz"))
    (folder / "v1.test.c2400000.txt.gz").write_bytes(moved(dev_cut))
    import_trace("azure2017-lifetimes", folder, tmp_path / "store")
    store = load_store(tmp_path / "store")
    assert store.meta["window_s"] == [2_100_000.0, 2_400_000.0]
    rows = store.workloads().collect()
    counts = dict(rows.group_by("status").len().rows())
    assert counts == {"ended": 2 * 244_842, "running": 14_317, "unknown": 14_317}
    history = rows.filter(pl.col("status") == "unknown")
    assert history["lifetime_min"].null_count() == 0
    assert (history["submit_time"] < 2_100_000).all()
