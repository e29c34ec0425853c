"""conformal: the bound is exceeded as often as the user asked, on real series."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.conformal import Conformal
from reclaim.forecast.evaluate import Origins, build_model, rolling_forecasts, score
from reclaim.forecast.series import store_series
from reclaim.traces import load_store, sample_path


@pytest.mark.parametrize("resource", ["mem", "cpu"])
def test_conformal_meets_its_coverage_on_real_series(resource):
    """Asked for 99 %, the conformal wrapper's one-sided bound is exceeded 1 % +- 0.5 % of the
    time on the shipped Google series, where the base model alone misses 3-6 %."""
    _, y = store_series(load_store(sample_path("google2011-derived")), resource)
    plan = Origins.plan(y, 20, 200)
    base, _ = rolling_forecasts(build_model("naive", 10), y, plan)
    model = build_model("conformal", 10, {"base": "naive", "coverage": 0.99})
    calibrated, _ = rolling_forecasts(model, y, plan)
    assert score(base)["upper_99_miss"] > 0.025
    assert score(calibrated)["upper_99_miss"] == pytest.approx(0.01, abs=0.005)
    assert model.miss_rate_ == pytest.approx(0.01, abs=0.005)


def test_misses_widen_the_bound_and_hits_narrow_it():
    """A jump above every bound raises q; a run of values at the mean lowers it again."""
    model = Conformal(base="naive", coverage=0.9, gamma=0.05, min_scores=1)
    keys = np.arange(3)
    flat = GroupedArray.from_series([np.array([0.0, 1.0, 0.0, 1.0])] * 3)
    model.forecast(flat, 1, keys=keys)
    before = model.q_
    jumped = GroupedArray.from_series([np.array([1.0, 0.0, 1.0, 9.0])] * 3)
    model.forecast(jumped, 1, keys=keys)
    assert model.alpha_ < 0.1 and model.q_ > before
    assert model.miss_rate_ == 1.0


def test_without_keys_nothing_is_scored():
    model = Conformal(base="naive")
    y = GroupedArray.from_series([np.arange(10.0)])
    model.forecast(y, 1)
    model.forecast(y, 1)
    assert model.calls_ == 0 and np.isnan(model.miss_rate_)
