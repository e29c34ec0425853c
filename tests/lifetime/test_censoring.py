"""Kaplan–Meier estimate and restricted-mean imputation of right-censored lifetimes."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.lifetime.censoring import KaplanMeierPredictor, impute_censored, kaplan_meier

# times 1..5, deaths at 1, 3, 4; censored at 2 and 5 (tau = 5)
T = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
CENS = np.array([False, True, False, False, True])


def test_km_by_hand():
    km = kaplan_meier(T, ~CENS)
    # S: 1 -> 4/5 at t=1, * 2/3 at t=3 (3 at risk), * 1/2 at t=4 (2 at risk)
    np.testing.assert_allclose(km.times, [1, 3, 4])
    np.testing.assert_allclose(km.survival, [0.8, 0.8 * 2 / 3, 0.8 / 3])
    np.testing.assert_allclose(km([0.5, 1.0, 2.9, 3.0, 10.0]), [1, 0.8, 0.8, 1.6 / 3, 0.8 / 3])
    # area under S on [0, 5]: 1 + 2 * 0.8 + 1.6/3 + 0.8/3 = 3.4
    assert km.integral(5.0)[()] == pytest.approx(3.4)
    assert km.integral(100.0)[()] == pytest.approx(3.4)  # restricted to tau


def test_restricted_conditional_mean_by_hand():
    # censored at 2: S(2) = 0.8, integral_2^5 S = 0.8 + 1.6/3 + 0.8/3 = 1.6 -> 2 + 1.6/0.8 = 4
    # censored at 5 = tau: nothing known beyond, stays 5
    np.testing.assert_allclose(impute_censored(T, CENS), [1, 4, 3, 4, 5])
    km = kaplan_meier(T, ~CENS)
    np.testing.assert_allclose(
        KaplanMeierPredictor(km).remaining(np.arange(2), [0.0, 2.0]), [3.4, 2]
    )


def test_no_censoring_is_identity_and_strata_fit_apart():
    np.testing.assert_array_equal(impute_censored(T, np.zeros(5, bool)), T)
    t = np.concatenate([T, T * 10])
    cens = np.concatenate([CENS, CENS])
    strata = np.array(["a"] * 5 + ["b"] * 5)
    out = impute_censored(t, cens, strata, min_stratum=5)
    np.testing.assert_allclose(out, [1, 4, 3, 4, 5, 10, 40, 30, 40, 50])
    # too small strata fall back to the pooled curve
    pooled = impute_censored(t, cens)
    np.testing.assert_allclose(impute_censored(t, cens, strata, min_stratum=6), pooled)
    assert pooled[1] != out[1]
