"""``arima``: the batched update against a numpy reference and statsforecast, selection every k
calls, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import solve_discrete_lyapunov

from reclaim.forecast import _online_kernels
from reclaim.forecast.arima import AutoArima
from reclaim.forecast.base import ForecastError
from reclaim.registry import build
from reclaim.state.grouped import GroupedArray


def kalman_reference(x, phi, theta, delta, mu, drift, sigma2, h):
    """Dense textbook Kalman filter and forecast of the ARIMA in Harvey form, the stationary start
    from scipy's Lyapunov solver and the diffuse levels at variance 1e6."""
    p, q, nd = len(phi), len(theta), len(delta)
    r = max(p, q + 1)
    rd = r + nd
    T = np.zeros((rd, rd))
    T[:p, 0] = phi
    T[np.arange(r - 1), np.arange(1, r)] = 1.0
    Z = np.r_[1.0, np.zeros(r - 1), delta]
    if nd:
        T[r] = Z
        T[np.arange(r + 1, rd), np.arange(r, rd - 1)] = 1.0
    R = np.r_[1.0, theta, np.zeros(r - 1 - q + nd)]
    V = np.outer(R, R)
    P = np.zeros((rd, rd))
    P[:r, :r] = solve_discrete_lyapunov(T[:r, :r], V[:r, :r])
    P[r:, r:] = 1e6 * np.eye(nd)
    a = np.zeros(rd)
    for t, value in enumerate(x):
        a = T @ a
        if t:
            P = T @ P @ T.T + V
        v = value - mu - drift * (t + 1) - Z @ a
        F = Z @ P @ Z
        gain = P @ Z / F
        a = a + gain * v
        P = P - np.outer(gain, gain) * F
    mean, var = np.empty(h), np.empty(h)
    for k in range(h):
        a = T @ a
        P = T @ P @ T.T + V
        mean[k] = Z @ a + mu + drift * (len(x) + k + 1)
        var[k] = sigma2 * Z @ P @ Z
    return mean, var


def random_arma(rng, p, q):
    """A stationary AR polynomial (roots outside the unit circle) and an MA one of any kind."""
    roots = rng.uniform(1.2, 3.0, p) * rng.choice([-1.0, 1.0], p)
    phi = -np.polynomial.polynomial.polyfromroots(roots)[1:] / np.prod(-roots) if p else np.zeros(0)
    return phi, rng.uniform(-1.0, 1.0, q)


@pytest.mark.parametrize("seed", range(12))
def test_kernel_equals_dense_kalman_reference(seed):
    rng = np.random.default_rng(seed)
    p, q, d = int(rng.integers(0, 4)), int(rng.integers(0, 3)), int(rng.integers(0, 3))
    phi, theta = random_arma(rng, p, q)
    delta = -np.polynomial.polynomial.polypow([1.0, -1.0], d)[1:]
    mu = rng.normal() * 5 if d == 0 else 0.0
    drift = rng.normal() if d == 1 else 0.0
    h, n = int(rng.integers(1, 9)), int(rng.integers(d + 1, 50))
    x = np.cumsum(rng.normal(size=n)) + 10
    mean, var = np.zeros((1, h)), np.zeros((1, h))
    _online_kernels.arima_forecast(
        x,
        np.array([0, n]),
        np.array([0]),
        np.pad(phi, (0, 5 - p))[None],
        np.array([p]),
        np.pad(theta, (0, 5 - q))[None],
        np.array([q]),
        np.pad(delta, (0, 2 - d))[None],
        np.array([d]),
        np.array([mu]),
        np.array([drift]),
        np.array([0.7]),
        h,
        mean,
        var,
        np.zeros(1),
    )
    ref_mean, ref_var = kalman_reference(x, phi, theta, delta, mu, drift, 0.7, h)
    np.testing.assert_allclose(mean[0], ref_mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(var[0], ref_var, rtol=1e-8)


@pytest.mark.parametrize("seed", range(6))
def test_stationary_start_equals_statsforecast_getQ0(seed):
    from statsforecast.arima import getQ0

    rng = np.random.default_rng(seed)
    p, q = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    phi, theta = random_arma(rng, p, q)
    r = max(p, q + 1)
    ours = _online_kernels.stationary_cov(phi, p, theta, q, r)
    np.testing.assert_allclose(ours, getQ0(phi, theta), rtol=1e-9, atol=1e-12)


def ar2_series(seed, n=40, integrated=False):
    rng = np.random.default_rng(seed)
    x = np.zeros(n + 50)
    for t in range(2, n + 50):
        x[t] = 0.6 * x[t - 1] - 0.3 * x[t - 2] + rng.normal()
    x = x[50:]
    return np.cumsum(x) + 20 if integrated else x + 5


@pytest.fixture(scope="module")
def real_windows():
    """Four real windows of 40: Google CPU ones (MA and differenced fits) and two Bitbrains CPU
    ones where statsforecast selects ARMA(1,1) with a non-invertible MA (theta = -1)."""
    from reclaim.forecast.series import store_series
    from reclaim.traces import load_store, sample_path

    _, google = store_series(load_store(sample_path("google2011-derived")), "cpu", max_series=2)
    _, bitbrains = store_series(load_store(sample_path("bitbrains")), "cpu", max_series=11)
    return [google[0][100:140], google[1][100:140], bitbrains[9][100:140], bitbrains[10][100:140]]


def selection_then_update(forecaster, series, h):
    """The statsforecast forecast (selection call) and the batched update's forecast (a second
    call on the same data, within ``reselect``) of the same fitted models."""
    y = GroupedArray.from_series(series)
    keys = np.arange(len(series))
    first = forecaster.forecast(y, h, keys)
    assert forecaster.selected_.all()
    second = forecaster.forecast(y, h, keys)
    assert not forecaster.selected_.any()
    return first, second


def test_update_equals_statsforecast_for_ar_ma_and_differenced_models(real_windows):
    # real windows give MA and differenced models (among them statsforecast's non-invertible
    # MA(1) fits), max_q=0 on AR(2) data pure AR ones; the kernel is the same filter
    f = AutoArima()
    series = [*real_windows, ar2_series(1), ar2_series(2, integrated=True)]
    first, second = selection_then_update(f, series, h=6)
    assert (f.orders_[:, 2] > 0).any() and (f.orders_[:, 1] > 0).any()
    np.testing.assert_allclose(second.mean, first.mean, rtol=1e-9, atol=1e-9 * first.std.max())
    np.testing.assert_allclose(second.std, first.std, rtol=1e-7)
    assert not first.fallback.any() and not second.fallback.any()


def test_seasonal_orders_run_in_the_kernel():
    rng = np.random.default_rng(5)
    t = np.arange(48)
    x = 10 + 3 * np.sin(2 * np.pi * t / 4) + np.cumsum(rng.normal(0, 0.3, 48))
    f = AutoArima(window=48, season_length=4)
    first, second = selection_then_update(f, [x], h=8)
    np.testing.assert_allclose(second.mean, first.mean, rtol=1e-9)
    np.testing.assert_allclose(second.std, first.std, rtol=1e-7)


def test_std_positive_and_growing_for_an_integrated_model():
    f = AutoArima(max_q=0)
    first, second = selection_then_update(f, [ar2_series(7, integrated=True)], h=8)
    assert f.orders_[0, 1] >= 1
    for fc in (first, second):
        assert (fc.std > 0).all() and (np.diff(fc.std[0]) > 0).all()


def test_short_series_are_answered_by_naive_and_flagged():
    y = GroupedArray.from_series([np.array([3.0]), np.array([1.0, 2.0, 4.0]), np.arange(9.0)])
    fc = AutoArima(min_length=10).forecast(y, h=2)
    assert fc.fallback.all()
    np.testing.assert_array_equal(fc.mean[:, 0], [3.0, 4.0, 8.0])
    assert np.isinf(fc.std[0]).all() and np.isfinite(fc.std[1:]).all()


class Failing(AutoArima):
    """AutoArima whose statsforecast fit raises for series starting at a negative value."""

    def _new_model(self):
        model = super()._new_model()
        fit = model.fit

        def failing_fit(x):
            if x[0] < 0:
                raise ValueError("no suitable ARIMA model found")
            return fit(x)

        model.fit = failing_fit
        return model


def test_a_failing_fit_falls_back_for_that_series_only_until_reselection():
    good, bad = ar2_series(11), -ar2_series(12) - 20
    y = GroupedArray.from_series([good, bad])
    f = Failing(reselect=3, max_q=0)
    fc = f.forecast(y, h=3, keys=[1, 2])
    np.testing.assert_array_equal(fc.fallback, [False, True])
    np.testing.assert_array_equal(fc.mean[1], bad[-1])
    np.testing.assert_array_equal(f.orders_[1], [-1, -1, -1])
    for _ in range(2):  # the failed key waits for its reselection like the others
        fc = f.forecast(y, h=3, keys=[1, 2])
        np.testing.assert_array_equal(fc.fallback, [False, True])
    assert f.selections_ == 2
    f.forecast(y, h=3, keys=[1, 2])
    assert f.selections_ == 4


@pytest.mark.parametrize(
    "series", [[np.array([1.0, np.nan] * 10)], [np.array([]), np.ones(12)], [np.array([np.inf])]]
)
def test_nan_inf_and_empty_series_raise(series):
    with pytest.raises(ForecastError):
        AutoArima().forecast(GroupedArray.from_series(series))


def test_keys_keep_their_orders_between_reselections():
    stream = [ar2_series(21, n=60), ar2_series(22, n=60, integrated=True)]
    f = AutoArima(window=30, reselect=3, max_q=0)
    counts, orders = [], []
    for call in range(7):
        y = GroupedArray.from_series([s[call : call + 30] for s in stream])
        f.fit(y, keys=[10, 20])
        counts.append(int(f.selected_.sum()))
        orders.append(f.orders_.copy())
        fc = f.predict(2)
        assert not fc.fallback.any()
    assert counts == [2, 0, 0, 2, 0, 0, 2]
    assert f.selections_ == 6
    for call in (1, 2, 4, 5):
        np.testing.assert_array_equal(orders[call], orders[call - 1])
    # a new key is selected at once, an absent key is forgotten
    y = GroupedArray.from_series([stream[0][7:37]])
    f.fit(y, keys=[30])
    assert f.selected_.all() and list(f.state_.keys) == [30]


def test_deterministic_and_fit_then_predict_equals_forecast():
    y = GroupedArray.from_series([ar2_series(31, n=20), ar2_series(32, n=25, integrated=True)])
    a = AutoArima().fit(y).predict(4)
    b = AutoArima().forecast(y, 4)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.std, b.std)
    np.testing.assert_array_equal(a.fallback, b.fallback)


def test_constant_window_zero_std_until_the_data_moves():
    flat = np.full(20, 2.5)
    f = AutoArima(window=20)
    fc = f.forecast(GroupedArray.from_series([flat]), 3, keys=[7])
    np.testing.assert_array_equal(fc.mean, 2.5)
    np.testing.assert_array_equal(fc.std, 0.0)
    fc = f.forecast(GroupedArray.from_series([flat]), 3, keys=[7])  # still flat: kept, exact
    assert not f.selected_.any()
    np.testing.assert_array_equal(fc.mean, 2.5)
    np.testing.assert_array_equal(fc.std, 0.0)
    moved = np.r_[flat[1:], 4.0]
    fc = f.forecast(GroupedArray.from_series([moved]), 3, keys=[7])  # no longer exact: reselect
    assert f.selected_.all()
    assert (fc.std > 0).all()


def test_registered_and_settings_round_trip():
    f = build("forecaster", "arima", window=30, reselect=10)
    assert isinstance(f, AutoArima)
    assert AutoArima(**f.get_params()).get_params() == f.get_params()
    with pytest.raises(ForecastError):
        AutoArima(window=5, min_length=10).forecast(GroupedArray.from_series([np.ones(12)]))
    with pytest.raises(ForecastError):
        AutoArima().predict(1)
