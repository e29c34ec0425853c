"""The Forecast container, input validation and per-key state."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import Forecast, ForecastError, KeyedState, check_keys, validate_series


def test_quantiles_are_gaussian_and_an_infinite_std_keeps_the_median_at_the_mean():
    fc = Forecast(np.array([[1.0], [2.0]]), np.array([[2.0], [np.inf]]))
    assert fc.quantile(0.5).tolist() == [[1.0], [2.0]]
    assert fc.quantile(0.975)[0, 0] == pytest.approx(1.0 + 1.959964 * 2.0, rel=1e-6)
    assert fc.quantile(0.975)[1, 0] == np.inf
    lo, hi = fc.interval(0.9545)
    assert hi[0, 0] - lo[0, 0] == pytest.approx(8.0, rel=1e-3)  # +-2 sigma
    assert fc.quantile([0.1, 0.9]).shape == (2, 2, 1)
    with pytest.raises(ForecastError, match="quantile levels"):
        fc.quantile(1.0)


def test_forecast_rejects_negative_or_nan_std():
    with pytest.raises(ValueError, match="std"):
        Forecast(np.zeros((1, 1)), np.array([[-1.0]]))
    with pytest.raises(ValueError, match="std"):
        Forecast(np.zeros((1, 1)), np.array([[np.nan]]))


@pytest.mark.parametrize(
    ("series", "message"),
    [
        ([np.array([1.0, 2.0]), np.array([])], "series 1 is empty"),
        ([np.array([1.0, 2.0]), np.array([3.0, np.inf])], "series 1, observation 1 is inf"),
        ([np.array([np.nan])], "series 0, observation 0 is nan"),
    ],
)
def test_bad_series_are_named(series, message):
    with pytest.raises(ForecastError, match=message):
        validate_series(GroupedArray.from_series(series), "test")


def test_keys_must_match_the_batch_and_be_unique():
    assert check_keys(None, 3) is None
    with pytest.raises(ForecastError, match="2 series but 3 keys"):
        check_keys([1, 2, 3], 2)
    with pytest.raises(ForecastError, match="once"):
        check_keys([4, 4], 2)


def test_keyed_state_carries_known_keys_and_forgets_absent_ones():
    state = KeyedState(level=np.nan, age=0.0)
    got, new = state.align(np.array([5, 9]))
    assert new.tolist() == [True, True] and np.isnan(got["level"]).all()
    state.store(np.array([9, 5]), {"level": np.array([90.0, 50.0]), "age": np.array([1.0, 2.0])})
    got, new = state.align(np.array([5, 7, 9]))
    assert new.tolist() == [False, True, False]
    assert got["level"][[0, 2]].tolist() == [50.0, 90.0] and got["age"][1] == 0.0
    state.store(np.array([7]), {"level": np.array([70.0]), "age": np.array([0.0])})
    got, new = state.align(np.array([5, 7]))
    assert new.tolist() == [True, False]  # 5 was absent from the last call: forgotten


def test_the_key_check_finds_repeats_as_numpy_unique_does():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 7, 1000, 40000):
        for keys in (rng.permutation(n) * 4096, rng.integers(0, max(n, 1) * 3, n)):
            distinct = len(np.unique(keys)) == n
            if distinct:
                assert np.array_equal(check_keys(keys, n), keys)
            else:
                with pytest.raises(ForecastError, match="each series once"):
                    check_keys(keys, n)
