"""corp: the batched HMM kernel against the per-series path, the window-level reading of the
symbol thresholds and correction, and the batched predictor against per-series calls."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
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


def _tasks(statistic="level", extremes="slots", n_series=150):
    """Kernel arguments for every series at its end and two earlier origins (more than a chunk)."""
    flat = _Flat.of(_series(n_series, seed=2))
    model = UnusedPredictor(statistic=statistic, hmm_extremes=extremes)
    starts = np.repeat(flat.indptr[:-1], 3)
    ends = starts + np.maximum(np.repeat(flat.lengths, 3) - np.tile([0, 6, 30], n_series), 0)
    return model, flat, starts, ends


def _kernel(flat, starts, ends, model, tol=1e-2):
    from reclaim.forecast._corp_kernels import hmm_corrections

    return hmm_corrections(
        1.0 - flat.u, starts, ends, model.horizon, model.hmm_history, model.min_symbols,
        int(model.statistic == "range"), int(model.hmm_extremes == "windows"), model.hmm_iter, tol,
    )  # fmt: skip


@pytest.mark.parametrize("statistic", ["level", "range"])
@pytest.mark.parametrize("extremes", ["slots", "windows"])
def test_batched_kernel_is_bit_for_bit_a_serial_reference(statistic, extremes):
    """Thresholds, symbols and corrections against plain sequential Python (the kernel's sums
    run in the same order), the HMM by the per-series kernel entry point: equal, not close."""
    from reclaim.forecast._corp_kernels import next_symbol_probs
    from reclaim.forecast.corp import counted_hmm

    model, flat, starts, ends = _tasks(statistic, extremes)
    sym, corr = _kernel(flat, starts, ends, model)
    big_l, windows = model.horizon, extremes == "windows"
    for k, (a, b) in enumerate(zip(starts, ends, strict=True)):
        n_obs = min(model.hmm_history, (b - a) // big_l)
        hist = [1.0 - x for x in flat.u[b - n_obs * big_l : b].tolist()]
        blocks = [hist[j * big_l : (j + 1) * big_l] for j in range(n_obs)]
        if n_obs < model.min_symbols or max(hist) - min(hist) == 0.0:
            assert (sym[k], corr[k]) == (CENTER, 0.0)
            continue
        means = [_seq_sum(x) / big_l for x in blocks]
        ref = means if windows else hist
        lo_v, hi_v, mean = min(ref), max(ref), _seq_sum(ref) / len(ref)
        lo, hi = lo_v + 0.5 * (mean - lo_v), mean + 0.5 * (hi_v - mean)
        value = means if statistic == "level" else [max(x) - min(x) for x in blocks]
        s = np.array([VALLEY if v <= lo else CENTER for v in value], np.int64)
        if hi_v > lo_v:
            s[np.array(value) >= hi] = PEAK
        else:
            s[:] = CENTER
        _, p, _, _ = next_symbol_probs(s, *counted_hmm(s, s), model.hmm_iter, 1e-2)
        nxt = CENTER if p[CENTER] >= p.max() else int(np.argmax(p))
        size = min(hi_v - mean, mean - lo_v)
        assert sym[k] == nxt
        assert corr[k] == {PEAK: size, VALLEY: -size, CENTER: 0.0}[nxt]
    assert (sym != CENTER).any()


def _seq_sum(xs):
    total = 0.0
    for x in xs:
        total += x
    return total


def test_batched_kernel_does_not_depend_on_order_chunks_or_the_stopping_shortcut():
    """Each task alone, the batch reversed and the whole batch agree bit for bit (the workspace
    carries nothing from one task to the next); tol=NaN takes the exact log-likelihood path at
    every iteration and never stops, as tol=-inf does through the running products."""
    model, flat, starts, ends = _tasks()
    sym, corr = _kernel(flat, starts, ends, model)
    rev = _kernel(flat, starts[::-1].copy(), ends[::-1].copy(), model)
    np.testing.assert_array_equal(rev[0][::-1], sym)
    np.testing.assert_array_equal(rev[1][::-1], corr)
    for k in range(0, len(starts), 37):
        one = _kernel(flat, starts[k : k + 1], ends[k : k + 1], model)
        assert (one[0][0], one[1][0]) == (sym[k], corr[k])
    never = _kernel(flat, starts, ends, model, tol=-np.inf)
    exact = _kernel(flat, starts, ends, model, tol=np.nan)
    np.testing.assert_array_equal(never[0], exact[0])
    np.testing.assert_array_equal(never[1], exact[1])


def test_predict_reads_only_the_tail_it_needs(monkeypatch):
    """Dividing only the last ``_reach()`` slots by the request changes no output bit."""
    util = _series(30, seed=3)
    usage = GroupedArray.from_series([np.concatenate([u, u, u]) for u in util])
    model = UnusedPredictor(**TINY).fit(usage)
    assert usage.lengths.max() > model._reach()  # some series are cut
    fast = model.predict(usage)
    monkeypatch.setattr(UnusedPredictor, "_reach", lambda self: 10**9)
    slow = model.predict(usage)
    for field in ("dnn", "corrected", "lower", "sigma", "symbol", "unlock", "fallback"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field))
