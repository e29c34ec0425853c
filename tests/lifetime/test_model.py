"""LifetimeModel: uptime augmentation, censoring, determinism, E[T_r | T_u] on a bimodal
population, the oracle."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reclaim.lifetime.model import LifetimeModel, OraclePredictor, augment
from reclaim.lifetime.vms import VmTable

DAY = 86400.0


def _table(life, *, arrival=None, right=None, left=None, features=None, end=None) -> VmTable:
    life = np.asarray(life, np.float64)
    n = len(life)
    arrival = np.zeros(n) if arrival is None else np.asarray(arrival, np.float64)
    right = np.zeros(n, bool) if right is None else np.asarray(right, bool)
    end = float(np.max(arrival + life)) if end is None else end
    return VmTable(
        id=np.array([f"vm{i}" for i in range(n)]),
        family=np.array(["A"] * n),
        arrival=arrival,
        exit=np.where(right, np.inf, arrival + life),
        left_censored=np.zeros(n, bool) if left is None else np.asarray(left, bool),
        right_censored=right,
        request=np.ones((n, 3), np.float32),
        features=pl.DataFrame({"x": np.zeros(n, np.float32)}) if features is None else features,
        window=(0.0, end),
    )


def test_augment_counts_and_labels_exact():
    rows, uptime, label = augment(np.array([800.0, 16.0]), (0, 0.125, 0.5, 0.875))
    np.testing.assert_array_equal(rows, [0, 0, 0, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(uptime, [0, 100, 400, 700, 0, 2, 8, 14])
    np.testing.assert_array_equal(label, [800, 700, 400, 100, 16, 14, 8, 2])


def test_fit_counts_censored_vms():
    life = np.arange(1, 61, dtype=float) * 3600
    left = np.zeros(60, bool)
    left[:5] = True
    right = np.zeros(60, bool)
    right[-3:] = True
    vms = _table(life, left=left, right=right, end=float(life.max()))
    mask = np.ones(60, bool)
    mask[5:10] = False
    m = LifetimeModel(n_estimators=5, min_child_samples=2).fit(vms, mask)
    assert m.n_left_censored_ == 5  # left out of training, counted
    assert m.n_train_ == 50
    assert m.n_examples_ == 50 * 8
    assert m.n_right_censored_ == 3
    assert m.forest_.n_trees == 5


def test_same_seed_same_predictions_bit_for_bit():
    rng = np.random.default_rng(0)
    n = 400
    feats = pl.DataFrame(
        {"cat": rng.choice(["a", "b", "c"], n), "cpu": rng.integers(1, 9, n).astype(np.float32)}
    )
    life = rng.exponential(np.where(feats["cat"] == "a", 3600.0, 5 * DAY))
    vms = _table(life, features=feats)
    up = rng.exponential(DAY, n)
    a = LifetimeModel(n_estimators=20, seed=3).fit(vms).predictor(vms).remaining(np.arange(n), up)
    b = LifetimeModel(n_estimators=20, seed=3).fit(vms).predictor(vms).remaining(np.arange(n), up)
    np.testing.assert_array_equal(a, b)


def test_remaining_rises_after_short_mode_passes():
    """Bimodal lifetimes with identical features (LAVA Figure 2): half live ~1 day, half ~10
    days. At creation the expected remaining lifetime is a mix; once a VM has been up 3 days it
    must be one of the long ones and expects ~7 more days."""
    rng = np.random.default_rng(0)
    n = 2000
    long_ = rng.random(n) < 0.5
    life = np.where(long_, 10 * DAY, 1 * DAY) * rng.uniform(0.8, 1.2, n)
    vms = _table(life)
    m = LifetimeModel(n_estimators=60, uptime_fractions=[i / 16 for i in range(16)]).fit(vms)
    pred = m.predictor(vms)
    r0, r3 = pred.remaining(np.array([0, 0]), np.array([0.0, 3 * DAY]))
    assert r0 < 5.5 * DAY
    assert r3 > r0
    assert r3 == pytest.approx(7 * DAY, rel=0.25)


def test_params_round_trip_and_validation():
    m = LifetimeModel(n_estimators=7, target="raw")
    assert LifetimeModel(**m.get_params()).get_params() == m.get_params()
    assert m.set_params(num_leaves=5).num_leaves == 5
    with pytest.raises(ValueError):
        m.set_params(bogus=1)
    with pytest.raises(ValueError):
        LifetimeModel(target="median").fit(_table([1.0, 2.0]))


def test_oracle_is_observed_minus_uptime():
    vms = _table([100.0, 50.0], arrival=[0.0, 80.0], right=[False, True], end=100.0)
    out = OraclePredictor(vms).remaining(np.array([0, 1, 1]), np.array([30.0, 5.0, 50.0]))
    np.testing.assert_array_equal(out, [70.0, 15.0, 0.0])  # censored VM: to the window end
