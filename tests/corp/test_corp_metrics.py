"""Eq. 1-4, the SLO violation rate and the prediction error rate, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.corp import metrics
from reclaim.errors import ReclaimError

# two jobs (or slots) x (cpu, mem)
DEMAND = np.array([[1.0, 2.0], [3.0, 4.0]])
ALLOC = np.array([[2.0, 4.0], [4.0, 4.0]])


def test_paper_weights_renormalise_without_storage():
    assert np.allclose(metrics.paper_weights(), [0.5, 0.5])
    assert np.allclose(metrics.paper_weights(("cpu", "mem", "storage")), [0.4, 0.4, 0.2])
    with pytest.raises(ReclaimError, match="no eq. 2 weight"):
        metrics.paper_weights(("gpu",))


def test_eq1_utilisation_per_resource():
    assert np.allclose(metrics.utilisation(DEMAND, ALLOC), [4 / 6, 6 / 8])


def test_eq2_overall_utilisation_is_weighted_ratio_of_sums():
    assert metrics.overall_utilisation(DEMAND, ALLOC, [0.5, 0.5]) == pytest.approx(10 / 14)
    # weights 0.8 / 0.2: (0.8*4 + 0.2*6) / (0.8*6 + 0.2*8)
    assert metrics.overall_utilisation(DEMAND, ALLOC, [0.8, 0.2]) == pytest.approx(4.4 / 6.4)


def test_eq3_eq4_wastage():
    assert np.allclose(metrics.wastage(DEMAND, ALLOC), [2 / 6, 2 / 8])
    assert metrics.overall_wastage(DEMAND, ALLOC, [0.5, 0.5]) == pytest.approx(4 / 14)


def test_sums_run_over_every_leading_axis():
    three_d = np.stack([DEMAND, DEMAND])  # (slots, jobs, R)
    assert np.allclose(metrics.utilisation(three_d, np.stack([ALLOC, ALLOC])), [4 / 6, 6 / 8])


def test_nothing_allocated_gives_nan_and_bad_weights_raise():
    assert np.isnan(metrics.utilisation(np.zeros((1, 2)), np.zeros((1, 2)))).all()
    with pytest.raises(ReclaimError, match="summing to 1"):
        metrics.overall_utilisation(DEMAND, ALLOC, [0.5, 0.6])
    with pytest.raises(ReclaimError, match="one shape"):
        metrics.utilisation(DEMAND, ALLOC[:1])


def test_slo_violation_rate_counts_unfinished_jobs():
    resp = np.array([10.0, 13.0, np.inf, 12.0])
    assert metrics.slo_violation_rate(resp, np.full(4, 12.0)) == pytest.approx(0.5)


def test_prediction_error_rate_is_share_outside_zero_to_epsilon():
    err = np.array([-0.1, 0.05, 0.2, 0.0, np.nan])
    assert metrics.correctly_predicted(err, 0.1).tolist() == [False, True, False, True, False]
    # jobs without a prediction (NaN) are left out: 2 of 4 wrong
    assert metrics.prediction_error_rate(err, 0.1) == pytest.approx(0.5)
    assert np.isnan(metrics.prediction_error_rate([np.nan], 0.1))
