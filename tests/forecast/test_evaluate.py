"""Rolling-origin evaluation: what the scores mean, on hand-made and real series."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import integrate, stats

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.evaluate import Origins, _gaussian_crps, build_model, rolling_forecasts, score
from reclaim.forecast.series import store_series
from reclaim.traces import load_store, sample_path


def test_origins_are_consecutive_and_windows_are_the_latest_observations():
    y = GroupedArray.from_series([np.arange(10.0), np.arange(100.0, 104.0)])
    frame, _ = rolling_forecasts(build_model("naive", 2), y, Origins.plan(y, 3, 5))
    # series 0 has 7 origins (capped at 5), series 1 has 1
    assert frame.group_by("series").len().sort("series")["len"].to_list() == [5, 1]
    first = frame.filter(pl.col("series") == 0).sort("step")
    assert first["actual"].to_list() == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert first["mean"].to_list() == [2.0, 3.0, 4.0, 5.0, 6.0]  # naive: the window's last value


def test_scores_of_a_hand_made_frame():
    frame = pl.DataFrame(
        {
            "actual": [1.0, 2.0, 3.0, 10.0],
            "mean": [1.0, 1.0, 1.0, 1.0],
            "std": [1.0, 1.0, 1.0, 1.0],
            "fallback": [False, False, False, True],
        }
    )
    s = score(frame)
    assert s["mae"] == pytest.approx((0 + 1 + 2 + 9) / 4)
    assert s["coverage_68"] == 0.5  # errors 0 and 1 lie within one sigma
    assert s["coverage_95"] == 0.75
    assert s["upper_99_miss"] == 0.25
    assert s["fallback_share"] == 0.25


def test_gaussian_crps_matches_its_definition():
    """CRPS = integral of (F(x) - 1{x >= y})^2 dx, checked numerically."""
    mean, std, y = 0.3, 1.7, 2.2
    F = stats.norm(mean, std).cdf
    below, _ = integrate.quad(lambda x: F(x) ** 2, -40, y)
    above, _ = integrate.quad(lambda x: (1 - F(x)) ** 2, y, 40)
    got = _gaussian_crps(np.array([y - mean]), np.array([std]))[0]
    assert got == pytest.approx(below + above, rel=1e-6)
    assert _gaussian_crps(np.array([-2.0]), np.array([0.0]))[0] == 2.0


def test_oracle_is_perfect():
    _, y = store_series(load_store(sample_path("google2011-derived")), "cpu", max_series=5)
    frame, _ = rolling_forecasts(build_model("oracle", 10), y, Origins.plan(y, 20, 50))
    s = score(frame)
    assert s["mae"] == 0 and s["coverage_68"] == 1
