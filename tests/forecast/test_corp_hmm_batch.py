"""corp: the batched HMM kernel against the per-series path, the window-level reading of the
symbol thresholds and correction, and the batched predictor against per-series calls."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.forecast.base import ForecastError
from reclaim.forecast.corp import (
    CENTER,
    PEAK,
    VALLEY,
    UnusedPredictor,
    _Flat,
    correction,
    symbols,
)
from reclaim.state.grouped import GroupedArray

TINY = {"hidden_layer_sizes": (8, 8), "max_iter": 60}


def _series(n_series=120, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 400, n_series)
    return [
        np.clip(0.5 + 0.3 * np.sin(np.arange(n) / 7) + 0.2 * rng.standard_normal(n), 0, 1)
        for n in lengths
    ]


@pytest.mark.parametrize("statistic", ["level", "range"])
@pytest.mark.parametrize("extremes", ["slots", "windows"])
def test_batched_kernel_matches_the_per_series_path(statistic, extremes):
    util = _series()
    model = UnusedPredictor(statistic=statistic, hmm_extremes=extremes)
    flat = _Flat.of(util)
    # every series at its end and at a few earlier origins
    starts = np.repeat(flat.indptr[:-1], 3)
    lengths = np.repeat(flat.lengths, 3)
    ends = starts + np.maximum(lengths - np.tile([0, 6, 30], len(util)), 0)
    sym, corr = model._hmm_batch(flat, starts, ends)
    ref = [model._hmm_correction(1.0 - flat.u[a:b]) for a, b in zip(starts, ends, strict=True)]
    assert sym.tolist() == [r[0] for r in ref]
    np.testing.assert_allclose(corr, [r[1] for r in ref], atol=1e-12)
    assert (sym != CENTER).any()  # the comparison covers corrections, not only centers


def test_window_thresholds_and_correction_use_window_means():
    u = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 0.5, 0.9, 0.9, 0.1, 0.1])  # L = 2: means .5 .5 .5 .9 .1
    sym_s, _, (lo_s, hi_s) = symbols(u, 2, over="slots")
    sym_w, _, (lo_w, hi_w) = symbols(u, 2, over="windows")
    assert (lo_s, hi_s) == pytest.approx((0.25, 0.75))  # slot min 0, mean .5, max 1
    assert (lo_w, hi_w) == pytest.approx((0.3, 0.7))  # window means: min .1, mean .5, max .9
    assert sym_s.tolist() == [CENTER, CENTER, CENTER, PEAK, VALLEY]
    assert sym_w.tolist() == sym_s.tolist()
    # the correction: min(h - m, m - l) over slots is 0.5, over window means 0.4
    assert correction(u, [PEAK])[0] == pytest.approx(0.5)
    assert correction(u, [VALLEY], window=2)[0] == pytest.approx(-0.4)
    with pytest.raises(ForecastError, match="hmm_extremes"):
        UnusedPredictor(hmm_extremes="x")._extremes_window()


def test_batched_predict_equals_one_series_at_a_time():
    util = _series(40, seed=1)
    req = np.linspace(1.0, 3.0, len(util))
    usage = GroupedArray.from_series([u * r for u, r in zip(util, req, strict=True)])
    model = UnusedPredictor(**TINY).fit(usage, req)
    batch = model.predict(usage, req)
    for i in (0, 7, 23, 39):
        one = model.predict(GroupedArray.from_series([usage[i]]), req[i : i + 1])
        for field in ("dnn", "corrected", "lower", "sigma"):
            assert getattr(batch, field)[i] == pytest.approx(getattr(one, field)[0], abs=1e-9)
        assert batch.symbol[i] == one.symbol[0] and batch.unlock[i] == one.unlock[0]
    # the hmmlearn backend (per series) gives the same symbols and corrections
    slow = UnusedPredictor(**TINY, hmm_backend="hmmlearn").fit(usage, req)
    ref = slow.predict(GroupedArray.from_series([usage[i] for i in range(8)]), req[:8])
    np.testing.assert_array_equal(ref.symbol, batch.symbol[:8])
    np.testing.assert_allclose(ref.corrected, batch.corrected[:8], atol=1e-6)
