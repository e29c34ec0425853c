"""The checks every registered forecaster must pass (``check_forecaster``), on real series.

Shapes, monotone quantiles, ``fit`` + ``predict`` equal to ``forecast``, same input same output,
clear errors for empty and NaN series, flagged fallbacks (never NaN) for too-short series, and the
online protocol (keys, windows sliding by one) running without surprises.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from reclaim import registry
from reclaim.core.capabilities import ForecasterCapabilities, capabilities
from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import Forecast, Forecaster, ForecastError
from reclaim.forecast.series import store_series
from reclaim.traces.store import load_store, sample_path

HORIZON = 3


def real_windows(
    n_series: int = 6, length: int = 48, short: int = 2
) -> tuple[GroupedArray, np.ndarray, np.ndarray]:
    """Windows cut from the shipped Bitbrains memory series: ``n_series`` of ``length`` and one of
    ``short`` observations; returns (windows, the HORIZON values after each, the full series)."""
    _, y = store_series(load_store(sample_path("bitbrains")), "mem", max_series=n_series + 1)
    lengths = [length] * n_series + [short]
    starts = [1000 + 37 * i for i in range(len(lengths))]
    windows = [y[i][s : s + n] for i, (s, n) in enumerate(zip(starts, lengths, strict=True))]
    future = np.stack(
        [
            y[i][s + n : s + n + HORIZON]
            for i, (s, n) in enumerate(zip(starts, lengths, strict=True))
        ]
    )
    full = [y[i][s:] for i, s in enumerate(starts)]
    return GroupedArray.from_series(windows), future, full


def _future_kw(model: Forecaster, future: np.ndarray) -> dict:
    needs = capabilities(model, ForecasterCapabilities).needs_future
    return {"future": future} if needs else {}


def _same(a: Forecast, b: Forecast) -> bool:
    return (
        np.array_equal(a.mean, b.mean)
        and np.array_equal(a.std, b.std)
        and np.array_equal(a.fallback, b.fallback)
    )


def check_forecaster(name: str, build: Callable[[], Forecaster] | None = None) -> None:
    """Raise AssertionError naming the first broken promise of forecaster ``name``.

    ``build`` makes a fresh instance (default: the registry's ``name`` with default settings).
    """
    y, future, full = real_windows()
    if build is None:
        build = partial(registry.build, "forecaster", name)
    model = build()
    kw = _future_kw(model, future)

    fc = model.forecast(y, HORIZON, **kw)
    assert fc.mean.shape == fc.std.shape == (len(y), HORIZON), f"{name}: shapes {fc.mean.shape}"
    assert fc.fallback.shape == (len(y),), f"{name}: fallback shape"
    assert np.all(np.isfinite(fc.mean)), f"{name}: non-finite mean"
    assert np.all(fc.std >= 0), f"{name}: negative std"
    if not capabilities(model, ForecasterCapabilities).spread:
        assert not np.any(fc.std), f"{name}: declares no spread but gives a std"

    q = fc.quantile([0.01, 0.1, 0.5, 0.9, 0.99])
    assert np.all(np.diff(q, axis=0) >= 0), f"{name}: quantiles not monotone"

    again = build().fit(y, **kw).predict(HORIZON)
    assert _same(fc, again), f"{name}: fit + predict differs from forecast"
    assert _same(fc, build().forecast(y, HORIZON, **kw)), f"{name}: not deterministic"

    if name != "oracle":  # the short window (2 observations) is below every model's minimum
        short = fc.fallback[-1] or np.isfinite(fc.std[-1]).all()
        assert short, f"{name}: a 2-observation series is neither modelled nor flagged"

    for bad, why in (
        (GroupedArray.from_series([y[0], np.array([])]), "empty"),
        (GroupedArray.from_series([np.array([1.0, np.nan, 2.0] * 5)]), "NaN"),
    ):
        try:
            build().forecast(bad, 1, **_future_kw(model, future[: len(bad)]))
        except ForecastError:
            pass
        else:
            raise AssertionError(f"{name}: a {why} series did not raise ForecastError")

    online, keys = build(), np.arange(len(full) - 1) * 7 + 3
    for step in range(5):  # windows of the long series sliding by one, as monitor ticks ask
        batch = GroupedArray.from_series([s[step : step + 48] for s in full[:-1]])
        nxt = np.stack([s[step + 48 : step + 48 + 1] for s in full[:-1]])
        out = online.forecast(batch, 1, keys=keys, **_future_kw(online, nxt))
        assert out.mean.shape == (len(keys), 1), f"{name}: online shape"
        assert np.all(np.isfinite(out.mean)), f"{name}: online non-finite mean"
