"""Sub-5-minute slots drawn from Google 2019 windows, and the contended CORP scenario built on them."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.corp.fluctuation import (
    LEVELS,
    MAX_PHI,
    SLOT_CORRELATION,
    PercentileSlots,
    WindowTable,
    load_windows,
    second_correlation,
    within_window_correlation,
)
from reclaim.corp.scenario import build_scenario
from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.store import sample_path

FIXTURE = Path(__file__).parents[1] / "traces" / "fixtures" / "google2019_usage"
TASK0 = "input-sim/380263806889/0-461643000000-631583000000.csv.gz"
G19 = ["sample:google2019-usage"]


def _table(mean, q, mem_max, lengths):
    mean = np.asarray(mean, np.float64)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return WindowTable(
        GroupedArray(mean, indptr),
        np.asarray(q, np.float64),
        np.asarray(mem_max, np.float64),
        [str(i) for i in range(len(lengths))],
        "test",
    )


def _quantiles(lo, hi):
    """A uniform 1-second distribution on [lo, hi] as the store's percentile columns + max."""
    return lo + (hi - lo) * LEVELS


def test_slots_keep_each_window_mean_and_its_distribution():
    q = np.stack([_quantiles(0.1, 0.5), _quantiles(0.0, 0.9), _quantiles(0.2, 0.2)])
    table = _table([[0.3, 0.5], [0.45, 0.2], [0.2, 0.4]], q, [0.7, 0.2, np.nan], [3])
    slots = PercentileSlots(table, np.random.default_rng(0), mode="percentiles")
    out = slots.draw(np.arange(3), 30)
    assert out.shape == (3, 30, 2)
    # every window's mean is kept exactly (nothing clipped here)
    np.testing.assert_allclose(out.mean(axis=1), table.mean.data, atol=1e-12)
    # CPU spans the window's 1-second distribution: stratified, one slot per 1/30 of levels
    assert out[0, :, 0].min() < 0.12 and out[0, :, 0].max() > 0.48
    assert np.all(out[0, :, 0] >= 0.1 - 1e-9) and np.all(out[0, :, 0] <= 0.5 + 1e-9)
    np.testing.assert_allclose(out[2, :, 0], 0.2)  # all samples equal: the window stays flat
    # memory moves up to the window max and no higher; unknown max or max == mean: held
    assert out[0, :, 1].max() <= 0.7 + 1e-12 and out[0, :, 1].max() > 0.6
    np.testing.assert_allclose(out[1, :, 1], 0.2)
    np.testing.assert_allclose(out[2, :, 1], 0.4)
    # same generator state, same slots; window-hold holds the means
    again = PercentileSlots(table, np.random.default_rng(0), mode="percentiles")
    assert np.array_equal(out, again.draw(np.arange(3), 30))
    held = PercentileSlots(table, np.random.default_rng(0), mode="window-hold")
    held = held.draw(np.arange(3), 30)
    assert np.all(held == table.mean.data[:, None, :])


def test_calibrated_slots_keep_the_mean_and_move_as_alike_as_the_measured_data():
    n = 200
    q = np.tile(_quantiles(0.0, 1.0), (n, 1))
    table = _table([[0.5, 0.5]] * n, q, [0.9] * n, [n])
    out = PercentileSlots(table, np.random.default_rng(4)).draw(np.arange(n), 30)
    np.testing.assert_allclose(out[:, :, 0].mean(axis=1), 0.5, atol=1e-12)
    # neighbouring slots as alike as Alibaba 2018's 10-second samples (0.70 CPU, within windows)
    assert within_window_correlation(out[:, :, 0]) == pytest.approx(SLOT_CORRELATION[0], abs=0.03)
    # a 10-second mean of alike seconds keeps most of the 1-second spread, not 1/sqrt(10) of it
    one_second = PercentileSlots(table, np.random.default_rng(4), mode="percentiles")
    spread = (
        out[:, :, 0].std(axis=1).mean()
        / one_second.draw(np.arange(n), 30)[:, :, 0].std(axis=1).mean()
    )
    assert 0.8 < spread < 1.0
    # memory: up to the window max, in order too
    assert out[:, :, 1].max() <= 0.9 + 1e-12
    assert within_window_correlation(out[:, :, 1]) > 0.8


def test_the_per_second_correlation_grows_with_the_slot_correlation_and_is_capped():
    phis = [second_correlation(r) for r in (0.0, 0.7)]
    assert phis == sorted(phis) and phis[0] < 0.2 and 0.9 < phis[1] < 1.0
    assert second_correlation(0.95) == MAX_PHI  # beyond a random-walk order: the cap
    with pytest.raises(ReclaimError, match="slot correlation"):
        second_correlation(1.0)


def test_unknown_percentiles_are_held_and_overflow_is_clipped_and_counted():
    q = np.stack([np.full(len(LEVELS), np.nan), _quantiles(0.5, 2.0)])
    table = _table([[0.4, 0.1], [1.2, 0.1]], q, [0.1, 0.1], [2])
    slots = PercentileSlots(table, np.random.default_rng(1))
    out = slots.draw(np.arange(2), 30)
    assert np.all(out[0, :, 0] == 0.4)
    assert out[1, :, 0].max() == 1.0 and slots.clipped[0] > 0  # above the request: clipped
    assert slots.clipped[1] == 0


def test_resampler_cuts_job_windows_out_of_the_slot_grid():
    q = np.stack([_quantiles(0.0, 1.0)] * 4)
    table = _table([[0.5, 0.5]] * 4, q, [0.5] * 4, [4])
    slots = PercentileSlots(table, np.random.default_rng(2))
    out = slots(table.mean, np.array([0, 0]), np.array([250.0, 0.0]), np.array([40, 120]), 300, 10)
    assert out.lengths.tolist() == [40, 120]
    with pytest.raises(ReclaimError, match="outside series 0"):
        slots(table.mean, np.array([0]), np.array([0.0]), np.array([121]), 300, 10)
    with pytest.raises(ReclaimError, match="divide"):
        slots(table.mean, np.array([0]), np.array([0.0]), np.array([1]), 300, 7)


def test_shipped_sample_windows_are_fractions_of_each_task_limit():
    table = load_windows(sample_path("google2019-usage"))
    assert len(table.ids) == 34 and table.mean.data.shape[1] == 2
    share = table.mean.data.mean(axis=0)
    assert 0.3 < share[0] < 0.5 and 0.6 < share[1] < 0.85  # real usage/limit levels
    ok = ~np.isnan(table.cpu_q).any(axis=1)
    assert np.all(np.diff(table.cpu_q[ok], axis=1) >= -1e-12)


def test_a_broken_store_row_is_one_line_naming_file_and_row(tmp_path):
    store = tmp_path / "g19"
    shutil.copytree(sample_path("google2019-usage"), store)
    usage = pl.read_parquet(store / "usage.parquet")
    broken = usage.with_columns(
        pl.when(pl.int_range(pl.len()) == 7).then(0.0).otherwise(pl.col("cpu_p99")).alias("cpu_p99")
    )
    broken.write_parquet(store / "usage.parquet")
    with pytest.raises(TraceError) as err:
        build_scenario(n_jobs=5, n_train=5, seed=0, usage_stores=[store], resample="percentiles")
    message = str(err.value)
    assert "\n" not in message
    assert "usage.parquet, row 7" in message and "decrease" in message


def test_a_broken_raw_google2019_file_is_one_line_naming_file_and_line(tmp_path):
    src = tmp_path / "raw"
    target = src / TASK0
    target.parent.mkdir(parents=True)
    lines = gzip.decompress((FIXTURE / TASK0).read_bytes()).decode().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    fields = lines[2].rstrip("\n").split(",")
    fields[header.index("avg_cpu_usage")] = "-0.5"
    lines[2] = ",".join(fields) + "\n"
    target.write_bytes(gzip.compress("".join(lines).encode()))
    with pytest.raises(TraceError) as err:
        build_scenario(n_jobs=5, n_train=5, seed=0, usage_stores=[src], resample="percentiles")
    message = str(err.value)
    assert "\n" not in message
    assert f"{target}, line 3:" in message


def test_contended_scenario_states_its_load_and_real_usage_share():
    kw = dict(n_jobs=120, n_train=40, n_vms=12, n_pms=3, usage_stores=G19, resample="percentiles")
    sc = build_scenario(seed=3, horizon_s=450, **kw)
    rep = sc.report
    assert len(rep.offered_load) == 2 and rep.offered_load[0] > 0.1
    assert 0.2 < rep.usage_share[0] < 0.6 and 0.5 < rep.usage_share[1] < 0.95
    demand = sc.jobs.demand.data
    assert np.all(demand <= np.repeat(sc.jobs.request, sc.jobs.duration, axis=0) + 1e-12)
    again = build_scenario(seed=3, horizon_s=450, **kw)
    assert np.array_equal(again.jobs.demand.data, demand)
    # offered_load sets the arrival span: requests x durations over capacity x span
    loaded = build_scenario(seed=3, offered_load=1.5, **kw)
    assert max(loaded.report.offered_load) == pytest.approx(1.5, rel=0.02)
    # sub-5-minute slots move within a window; window-hold does not
    held = build_scenario(seed=3, horizon_s=450, **(kw | {"resample": "window-hold"}))
    long = int(np.argmax(sc.jobs.duration))
    assert np.count_nonzero(np.diff(sc.jobs.demand[long][:, 0])) > 3 * np.count_nonzero(
        np.diff(held.jobs.demand[long][:, 0])
    )


def test_raw_task_files_are_imported_on_the_fly():
    table = load_windows(FIXTURE)
    assert table.ids == ["113812204462-61", "380263806889-0"]
    assert table.store == str(FIXTURE)  # the temporary store is gone; the source is named
    assert table.cpu_q.shape == (len(table.mean.data), len(LEVELS))
