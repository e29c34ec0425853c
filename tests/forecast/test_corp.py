"""corp: symbols and states, HMM (kernel vs hmmlearn), correction, eq. 18-19 bound, eq. 21 rule,
the batched predictor (units, fallbacks, determinism) and the registered adapter."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import ForecastError
from reclaim.forecast.corp import (
    CENTER,
    NORMAL,
    OVER,
    PEAK,
    UNDER,
    VALLEY,
    Corp,
    UnusedPredictor,
    confidence_z,
    correction,
    counted_hmm,
    hmm_next_symbol,
    lower_bound,
    symbols,
    unlockable,
)
from reclaim.testing.forecasters import check_forecaster, real_windows

TINY = {"hidden_layer_sizes": (8, 8), "max_iter": 60}


def test_symbols_on_a_hand_made_series():
    # windows of L = 3; a leading partial window (the 7.0) is dropped
    u = np.array([7.0, 0, 0, 0, 10, 10, 10, 4, 5, 6, 2, 2, 2, 8, 8, 8])
    sym, states, (lo, hi) = symbols(u, 3)
    m = u.mean()  # 5.125 over all slots, as the paper's m
    assert lo == pytest.approx(0 + (m - 0) / 2) and hi == pytest.approx(m + (10 - m) / 2)
    # window means 0, 10, 5, 2, 8 against lo = 2.5625, hi = 7.5625
    assert sym.tolist() == [VALLEY, PEAK, CENTER, VALLEY, PEAK]
    # states are labelled by the symbol they emit: peak <-> over-provisioning
    assert states.tolist() == [UNDER, OVER, NORMAL, UNDER, OVER]
    # the literal Delta_j (max - min inside the window): 0, 0, 2, 0, 0 -> spreads below lo
    sym_r, _, _ = symbols(u, 3, statistic="range")
    assert sym_r.tolist() == [VALLEY] * 5
    # a flat history has no peak or valley
    assert symbols(np.full(9, 3.0), 3)[0].tolist() == [CENTER] * 3
    assert len(symbols(np.ones(2), 3)[0]) == 0
    with pytest.raises(ForecastError):
        symbols(u, 3, statistic="median")


def test_counted_matrices():
    sym = np.array([PEAK, PEAK, CENTER, VALLEY])
    pi, a, b = counted_hmm(sym, sym, pseudocount=1.0)
    assert pi.tolist() == pytest.approx([2 / 4, 1 / 4, 1 / 4])
    assert a[PEAK].tolist() == pytest.approx([2 / 5, 2 / 5, 1 / 5])  # P->P, P->C
    assert a[VALLEY].tolist() == pytest.approx([1 / 3] * 3)  # never left: the pseudocounts
    assert b[PEAK].tolist() == pytest.approx([3 / 5, 1 / 5, 1 / 5])
    assert np.allclose(a.sum(1), 1) and np.allclose(b.sum(1), 1)


def test_kernel_matches_hmmlearn():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(18, 240))
        u = rng.random(n) if trial % 2 else np.sin(np.arange(n) / 5.0) + 0.3 * rng.random(n)
        sym, states, _ = symbols(u, 6)
        fast = hmm_next_symbol(sym, states, backend="numba")
        ref = hmm_next_symbol(sym, states, backend="hmmlearn")
        assert fast[:2] == ref[:2]
        np.testing.assert_allclose(fast[2], ref[2], atol=1e-10)
    with pytest.raises(ForecastError):
        hmm_next_symbol(sym, states, backend="torch")


def test_hmm_follows_a_regular_cycle():
    # unused amount cycling valley -> center -> peak: after a peak the model expects a valley
    cycle = np.repeat([[0.0, 5.0, 10.0]], 12, axis=0).ravel()
    u = np.repeat(cycle, 6)
    sym, states, _ = symbols(u, 6)
    assert sym[-3:].tolist() == [VALLEY, CENTER, PEAK]
    assert hmm_next_symbol(sym, states)[0] == VALLEY


def test_correction_formula():
    hist = np.array([[0.0, 2.0, 4.0, 10.0], [0.0, 2.0, 4.0, 10.0], [1.0, 1.0, 1.0, 9.0]])
    # m = 4: min(h - m, m - l) = min(6, 4) = 4; row 3: m = 3, min(6, 2) = 2
    out = correction(hist, [PEAK, VALLEY, CENTER])
    assert out.tolist() == [4.0, -4.0, 0.0]
    assert correction(hist[2], VALLEY).tolist() == [-2.0]


def test_confidence_bound():
    assert confidence_z(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert confidence_z(0.9) == pytest.approx(1.644854, abs=1e-6)
    out = lower_bound([0.5, 0.1], [0.1, 0.1], 0.95)
    assert out.tolist() == pytest.approx([0.5 - 0.1959964, 0.0], abs=1e-7)  # clipped at 0
    with pytest.raises(ForecastError):
        confidence_z(1.0)


def test_unlock_rule():
    # delta ~ N(0.2, 0.05^2): Pr(0 <= delta < 0.4) = Phi(4) - Phi(-4) = 0.99994
    assert unlockable(0.05, 0.4, 0.95, mean=0.2).tolist() is True
    # Pr(0 <= delta < 0.1) with mean 0: Phi(2) - 0.5 = 0.477
    assert unlockable(0.05, 0.1, 0.95).tolist() is False
    assert unlockable(0.05, 0.1, 0.4).tolist() is True
    # exact errors (sigma 0) and unknown ones (inf)
    assert unlockable(
        [0.0, 0.0, 0.0, np.inf], 0.1, 0.95, mean=[0.05, 0.1, -0.01, 0.0]
    ).tolist() == [
        True,
        False,
        False,
        False,
    ]
    # with the eq. 19 bound at eta, Pr(delta >= 0) = 1 - theta / 2: below eta = 0.9 P_th = 0.95
    # is out of reach whatever eps; eta = 0.95 unlocks a precise enough prediction
    z89, z95 = confidence_z(0.89), confidence_z(0.95)
    assert not unlockable(0.01, 100.0, 0.95, mean=z89 * 0.01)
    assert unlockable(0.01, 0.1, 0.95, mean=z95 * 0.01)


def _batch(n_series=5, length=120, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    series = [
        np.clip(2.0 + np.sin(t / (4 + i)) + 0.2 * rng.standard_normal(length), 0.1, None)
        for i in range(n_series)
    ]
    return GroupedArray.from_series([*series, np.array([1.0, 2.0])])


def test_predictor_units_fallback_and_determinism():
    y = _batch()
    request = np.full(len(y), 4.0)
    out = UnusedPredictor(**TINY).fit(y, request).predict()
    again = UnusedPredictor(**TINY).fit(y, request).predict()
    for name in ("dnn", "corrected", "lower", "sigma", "symbol", "unlock", "fallback"):
        assert np.array_equal(getattr(out, name), getattr(again, name)), name
    assert out.fallback.tolist() == [False] * 5 + [True]
    assert out.lower[-1] == 0.0 and not out.unlock[-1]
    assert out.dnn[-1] == pytest.approx(4.0 - 1.5)  # the short series' mean unused amount
    assert np.all((out.lower <= out.corrected) & (out.corrected <= request))
    assert np.all(out.sigma > 0)
    # one network for all sizes: doubling usage and request doubles every amount
    y2 = GroupedArray(y.data * 2.0, y.indptr)
    out2 = UnusedPredictor(**TINY).fit(y2, request * 2.0).predict()
    np.testing.assert_allclose(out2.corrected, 2.0 * out.corrected, rtol=1e-12)
    np.testing.assert_allclose(out2.sigma, 2.0 * out.sigma, rtol=1e-12)
    # new histories through the trained network; the same histories give the same answer
    model = UnusedPredictor(**TINY).fit(y, request)
    fresh = model.predict(y, request)
    assert np.array_equal(fresh.corrected, out.corrected)
    with pytest.raises(ForecastError):
        UnusedPredictor().predict()
    with pytest.raises(ForecastError):
        UnusedPredictor(**TINY).fit(y, request[:2])


def test_hmm_switch_and_statistic():
    y = _batch()
    base = UnusedPredictor(**TINY, hmm=False).fit(y).predict()
    assert np.array_equal(base.dnn, base.corrected)
    assert np.all(base.symbol == CENTER)
    full = UnusedPredictor(**TINY).fit(y).predict()
    assert np.array_equal(full.dnn, base.dnn)  # the HMM never touches the network
    assert UnusedPredictor(**TINY).get_params()["window"] == 12


def test_registered_adapter_conforms():
    check_forecaster("corp", lambda: Corp(**TINY))
    y, _, _ = real_windows()
    fc = Corp(**TINY).forecast(y, 4)
    inner = UnusedPredictor(**TINY).fit(y).predict()
    assert np.array_equal(
        fc.mean[:, 0], np.where(inner.fallback, fc.mean[:, 0], inner.request - inner.corrected)
    )
    assert np.all(fc.mean == fc.mean[:, :1]) and np.array_equal(fc.std[:, 0], inner.sigma)
