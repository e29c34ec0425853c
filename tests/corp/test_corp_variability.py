"""The within-window correlation of ~10-second samples: on made-up series whose answer is known,
and on the shared Alibaba 2018 extract, machine-disjoint halves agreeing."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from reclaim.corp.fluctuation import SLOT_CORRELATION
from reclaim.corp.variability import measure_variability
from reclaim.errors import ReclaimError, TraceError

#: The shared real trace extracts, when this checkout sits beside them.
ALIBABA_2018 = Path(__file__).parents[3] / "shared" / "traces" / "alibaba-cluster-trace-v2018"


def _write(folder: Path, usage: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    """Raw machine_meta / machine_usage files: per machine (times s, cpu percent), memory 50 %."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = "".join(f"{m},0,1,1,96,100,USING\n" for m in usage)
    rows = "".join(
        f"{m},{t:g},{c:g},50,,,1,1,1\n"
        for m, (ts, cs) in usage.items()
        for t, c in zip(ts, cs, strict=True)
    )
    (folder / "machine_meta.csv.gz").write_bytes(gzip.compress(meta.encode(), mtime=0))
    (folder / "machine_usage.csv.gz").write_bytes(gzip.compress(rows.encode(), mtime=0))
    return folder


def test_a_ramp_within_each_window_is_alike_and_alternation_is_opposite(tmp_path):
    t = np.arange(0, 3000, 10.0)
    ramp = 20 + 2 * ((t % 300) // 10)  # climbs 2 % every 10 s, back down at each window
    flip = 40 + 10 * ((t // 10) % 2)  # 40, 50, 40, ...: each sample unlike the one before
    v = measure_variability(_write(tmp_path / "raw", {"m_1": (t, ramp), "m_2": (t, flip)}))
    assert v.ids == ["m_1", "m_2"]
    cpu = v.per_series[:, 0, :]  # (machine, lag 10/20/30 s)
    # the ramp: r(h) = 1 - (2 h / 10)^2 / 2 / var, var of 30 steps of 2 = 4 * 77.5 (less rounding)
    var = 4 * 77.5 - 1 / 12
    expected = [1 - (0.5 * (0.2 * h) ** 2 - 1 / 12) / var for h in (10, 20, 30)]
    np.testing.assert_allclose(cpu[0], expected, rtol=1e-9)
    assert cpu[1, 0] < -0.9 and cpu[1, 1] > 0.9  # the alternation: opposite at 10 s, alike at 20
    # pooled: each machine weighs by its variance and pairs
    np.testing.assert_allclose(v.pooled(np.array([0])), v.per_series[0])
    assert v.pooled(np.array([0]))[0, 0] > v.correlation[0, 0] > cpu[1, 0]


def test_samples_never_10_s_apart_are_refused(tmp_path):
    t = np.arange(0, 3000, 60.0)
    with pytest.raises(ReclaimError, match="no two samples 10 s apart"):
        measure_variability(_write(tmp_path / "raw", {"m_1": (t, 30 + (t % 7))}))


def test_a_broken_usage_row_names_the_file_and_line(tmp_path):
    raw = _write(tmp_path / "raw", {"m_1": (np.arange(0, 100, 10.0), np.full(10, 30.0))})
    bad = gzip.decompress((raw / "machine_usage.csv.gz").read_bytes()).decode().splitlines()
    bad[2] = "m_1,20,-5,50,,,1,1,1"
    (raw / "machine_usage.csv.gz").write_bytes(gzip.compress("\n".join(bad).encode(), mtime=0))
    with pytest.raises(TraceError) as err:
        measure_variability(raw)
    assert "machine_usage.csv.gz" in str(err.value) and "\n" not in str(err.value)


def test_shared_alibaba_2018_extract_halves_agree_with_the_slot_calibration():
    if not ALIBABA_2018.is_dir():
        pytest.skip("the shared trace extracts are not beside this checkout")
    v = measure_variability(ALIBABA_2018)
    # the calibration constant is the pooled measurement (rounded to two decimals)
    np.testing.assert_allclose(v.correlation[:, 0], SLOT_CORRELATION, atol=0.005)
    # geometric-like decay at 20 and 30 s
    assert np.all(np.diff(v.correlation, axis=1) < 0)
    # machine-disjoint halves (as the held-out subset is) give the same answer within 0.05
    assert v.pairs[0, 0] > 1000 and len(v.ids) >= 6
    halves = [v.pooled(np.arange(len(v.ids))[k::2])[:, 0] for k in (0, 1)]
    np.testing.assert_allclose(halves[0], halves[1], atol=0.05)
