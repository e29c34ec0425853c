"""``ets``: the batched state update and forecast against plain references and statsforecast,
state carried between calls, reselection every k calls, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.forecast import _online_kernels
from reclaim.forecast.base import ForecastError, gaussian_quantile
from reclaim.forecast.ets import AutoEts
from reclaim.registry import build


def class1_variance(alpha, beta, phi, sigma2, h, trend, damped):
    """Closed forms of Hyndman et al. (2008) table 6.1 for ANN, AAN, AAdN."""
    k = np.arange(1, h + 1)
    if not trend:
        return sigma2 * (1 + alpha**2 * (k - 1))
    if not damped:
        return sigma2 * (
            1 + (k - 1) * (alpha**2 + alpha * beta * k + beta**2 * k * (2 * k - 1) / 6)
        )
    return sigma2 * (
        1
        + alpha**2 * (k - 1)
        + beta * phi * k / (1 - phi) ** 2 * (2 * alpha * (1 - phi) + beta * phi)
        - beta
        * phi
        * (1 - phi**k)
        / ((1 - phi) ** 2 * (1 - phi**2))
        * (2 * alpha * (1 - phi**2) + beta * phi * (1 + 2 * phi - phi**k))
    )


def ets_reference(y_new, level, trend, alpha, beta, phi, sigma2, mult, h):
    for value in y_new:
        q = level + phi * trend
        level, trend = q + alpha * (value - q), phi * trend + beta * (value - q)
    damp = np.cumsum(phi ** np.arange(1, h + 1))
    mean = level + damp * trend
    c2 = (alpha + beta * damp) ** 2
    if not mult:
        return mean, np.r_[0.0, np.cumsum(c2)[:-1]] * sigma2 + sigma2
    theta = np.empty(h)
    for k in range(h):
        theta[k] = mean[k] ** 2 + sigma2 * sum(c2[j] * theta[k - 1 - j] for j in range(k))
    return mean, (1 + sigma2) * theta - mean**2


@pytest.mark.parametrize("seed", range(12))
def test_kernels_equal_plain_references(seed):
    rng = np.random.default_rng(seed)
    trend, damped, mult = rng.random(3) < 0.5
    alpha = rng.uniform(0.05, 0.95)
    beta = rng.uniform(0.01, alpha) if trend else 0.0
    phi = (rng.uniform(0.8, 0.98) if damped else 1.0) if trend else 0.0
    level, slope, sigma2 = 10 + rng.normal(), rng.normal() * trend, rng.uniform(0.01, 0.5)
    y = 10 + rng.normal(size=int(rng.integers(1, 6)))
    h = int(rng.integers(1, 12))
    col = lambda v: np.array([v], np.float64)  # noqa: E731
    lev, tr, worst = col(level), col(slope), np.zeros(1)
    _online_kernels.ets_advance(
        y, np.array([0, len(y)]), np.array([0]), np.array([len(y)]), lev, tr,
        col(alpha), col(beta), col(phi), worst,
    )  # fmt: skip
    mean, var = np.zeros((1, h)), np.zeros((1, h))
    _online_kernels.ets_forecast(
        np.array([0]), lev, tr, col(alpha), col(beta), col(phi), col(sigma2),
        np.array([mult]), h, mean, var,
    )  # fmt: skip
    ref_mean, ref_var = ets_reference(y, level, slope, alpha, beta, phi, sigma2, mult, h)
    np.testing.assert_allclose(mean[0], ref_mean, rtol=1e-12)
    np.testing.assert_allclose(var[0], ref_var, rtol=1e-10)
    if not mult:  # the kernel's sum against the book's closed forms
        closed = class1_variance(alpha, beta, phi, sigma2, h, trend, damped)
        np.testing.assert_allclose(var[0], closed, rtol=1e-10)


@pytest.fixture(scope="module")
def windows():
    from reclaim.forecast.series import store_series
    from reclaim.traces import load_store, sample_path

    _, y = store_series(load_store(sample_path("google2011-derived")), "mem", max_series=3)
    return y


def statsforecast_fit(x, **settings):
    from statsforecast.models import AutoETS

    return AutoETS(**settings).fit(x)


def statsforecast_std(model, h):
    out = model.predict(h, level=[80])
    return out["mean"], (out["hi-80"] - out["lo-80"]) / (2 * gaussian_quantile(0.9))


@pytest.mark.parametrize(
    "form,damped", [("ANN", None), ("AAN", False), ("MNN", None), ("MAN", False)]
)
def test_forecast_equals_statsforecast(windows, form, damped):
    series = [windows[i][:40] for i in range(3)]
    f = AutoEts(model=form, damped=damped)
    fc = f.forecast(GroupedArray.from_series(series), h=6)
    assert not fc.fallback.any()
    for i, x in enumerate(series):
        mean, std = statsforecast_std(statsforecast_fit(x, model=form, damped=damped), 6)
        np.testing.assert_allclose(fc.mean[i], mean, rtol=1e-12)
        np.testing.assert_allclose(fc.std[i], std, rtol=1e-9)


@pytest.mark.parametrize("form", ["AAN", "MAN"])
def test_damped_trend_uses_the_textbook_sum(windows, form):
    # statsforecast 2.1.1 damps step 2 with 2 phi; the first step and the state agree
    x = windows[0][:40]
    f = AutoEts(model=form, damped=True)
    fc = f.forecast(GroupedArray.from_series([x]), h=5)
    model = statsforecast_fit(x, model=form, damped=True).model_
    level, slope = model["states"][-1][:2]
    phi = model["par"][3]
    np.testing.assert_allclose(fc.mean[0], level + np.cumsum(phi ** np.arange(1, 6)) * slope)
    mean, std = statsforecast_std(statsforecast_fit(x, model=form, damped=True), 5)
    np.testing.assert_allclose(fc.mean[0, 0], mean[0], rtol=1e-12)
    np.testing.assert_allclose(fc.std[0, 0], std[0], rtol=1e-9)


@pytest.mark.parametrize("form", ["ANN", "AAN", "MAN"])
def test_carried_state_equals_statsforecast_forward(windows, form):
    from statsforecast.ets import forecast_ets, forward_ets

    series = windows[1]
    f = AutoEts(model=form, damped=False, reselect=10)
    f.fit(GroupedArray.from_series([series[:40]]), keys=[5])
    fitted = statsforecast_fit(series[:40], model=form, damped=False).model_
    for end in (41, 42, 45):  # grows by one, by one, by three
        fc = f.forecast(GroupedArray.from_series([series[:end]]), h=4, keys=[5])
        assert not f.selected_.any()
    # statsforecast reruns the fitted weights over the longer series from the same start; its
    # forward also re-estimates sigma2 from the longer residuals, which we keep from the fit
    forward = forward_ets(fitted, series[:45])
    forward["sigma2"] = fitted["sigma2"]
    out = forecast_ets(forward, 4, level=[80])
    np.testing.assert_allclose(fc.mean[0], out["mean"], rtol=1e-10)
    std = (out["hi-80"] - out["lo-80"]) / (2 * gaussian_quantile(0.9))
    np.testing.assert_allclose(fc.std[0], std, rtol=1e-8)


def test_a_capped_window_slid_by_one_continues_and_a_break_reselects(windows):
    s = windows[2]
    f = AutoEts(window=30, reselect=100)
    f.fit(GroupedArray.from_series([s[:30]]), keys=[1])
    for start in (1, 2, 3):  # the caller keeps 30 observations, one newer each call
        f.fit(GroupedArray.from_series([s[start : start + 30]]), keys=[1])
        assert not f.selected_.any()
    f.fit(GroupedArray.from_series([s[10:40]]), keys=[1])  # skipped 6 steps: not a continuation
    assert f.selected_.all()
    f.fit(GroupedArray.from_series([s[11:25]]), keys=[1])  # shorter and elsewhere
    assert f.selected_.all()
    assert f.selections_ == 3


def test_seasonal_forms_are_selected_every_call():
    t = np.arange(44)
    x = 20 + 4 * np.sin(2 * np.pi * t / 4) + np.random.default_rng(3).normal(0, 0.2, 44)
    f = AutoEts(season_length=4, model="ANA", reselect=10)
    for end in (40, 41, 42):
        fc = f.forecast(GroupedArray.from_series([x[:end]]), h=5, keys=[0])
        assert f.selected_.all() and f.forms_[0] == "ANAN"
    mean, std = statsforecast_std(statsforecast_fit(x[2:42], season_length=4, model="ANA"), 5)
    np.testing.assert_allclose(fc.mean[0], mean, rtol=1e-12)
    np.testing.assert_allclose(fc.std[0], std, rtol=1e-9)


def test_keys_reselect_every_k_calls_and_keep_the_form(windows):
    f = AutoEts(reselect=4)
    counts, forms = [], []
    for call in range(9):
        y = GroupedArray.from_series([windows[i][call : call + 40] for i in range(3)])
        fc = f.forecast(y, h=3, keys=[7, 8, 9])
        counts.append(int(f.selected_.sum()))
        forms.append(f.forms_.copy())
        assert not fc.fallback.any() and (fc.std > 0).all()
    assert counts == [3, 0, 0, 0, 3, 0, 0, 0, 3]
    for call in (1, 2, 3, 5, 6, 7):
        np.testing.assert_array_equal(forms[call], forms[call - 1])


def test_short_and_invalid_series():
    y = GroupedArray.from_series([np.array([2.0]), np.arange(1.0, 9.0), np.linspace(1, 3, 12)])
    fc = AutoEts(min_length=9).forecast(y, h=2)
    np.testing.assert_array_equal(fc.fallback, [True, True, False])
    np.testing.assert_array_equal(fc.mean[:2, 0], [2.0, 8.0])
    with pytest.raises(ForecastError):
        AutoEts(min_length=5).forecast(y)
    with pytest.raises(ForecastError):
        AutoEts().forecast(GroupedArray.from_series([np.array([1.0, np.nan] * 6)]))


def test_constant_window_zero_std_until_the_data_moves():
    flat = np.full(20, 3.0)
    f = AutoEts(window=20)
    fc = f.forecast(GroupedArray.from_series([flat]), 3, keys=[4])
    np.testing.assert_allclose(fc.mean, 3.0)
    assert (fc.std < 1e-4).all()
    f.forecast(GroupedArray.from_series([np.r_[flat, 3.0]]), 3, keys=[4])
    assert not f.selected_.any()
    fc = f.forecast(GroupedArray.from_series([np.r_[flat, 3.0, 5.0]]), 3, keys=[4])
    assert f.selected_.all() and (fc.std > 0.1).all()


def test_deterministic_fit_then_predict_equals_forecast_and_registered(windows):
    y = GroupedArray.from_series([windows[i][50:90] for i in range(3)])
    a = AutoEts().fit(y).predict(4)
    b = build("forecaster", "ets").forecast(y, 4)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.std, b.std)
    f = AutoEts(window=30, reselect=7)
    assert AutoEts(**f.get_params()).get_params() == f.get_params()


def test_copies_take_a_series_numbers_only_where_its_growth_matches(monkeypatch):
    """Two keys with the same window and state are copies only if their series grew alike: one
    that grew by a break (new values reaching back past the window) or by more values is run
    apart, with the bits of fitting each alone."""
    import reclaim.forecast.arima as reselecting

    x = np.cumsum(np.random.default_rng(0).normal(size=40)) + 10
    jump = np.concatenate([np.random.default_rng(1).normal(size=40) + 50, x[11:31]])
    seasonal = np.tile([1.0, 2.0, 3.0, 5.0], 12) + np.random.default_rng(2).normal(0, 0.01, 48)
    calls = [
        ([x[:30], x[:30], seasonal[:30], seasonal[:30]], [1, 2, 3, 4]),
        ([x[:31], jump, seasonal[:31], seasonal[4:35]], [1, 2, 3, 4]),
        ([x[:32], x[:32], seasonal[:32], seasonal[:32]], [5, 6, 7, 8]),
    ]

    def run():
        model, out = AutoEts(window=20, reselect=100), []
        for series, keys in calls:
            fc = model.forecast(GroupedArray.from_series(series), 2, keys=keys)
            out.append((fc.mean, fc.std, fc.fallback, model.selected_, model.status_,
                         *model.state_.arrays.values()))  # fmt: skip
        return out, model

    shared, model = run()
    apart_only = lambda data, indptr, state: np.arange(len(state))  # noqa: E731
    monkeypatch.setattr(reselecting, "first_copies", apart_only)
    apart, _ = run()
    assert model.same_as_.tolist() == [0, 0, 2, 2]
    for got, want in zip(shared, apart, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
