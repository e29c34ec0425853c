"""Fig. 6 on predictions: the same origins for every method, young jobs counted apart."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.corp.provisioning import UnusedEstimate
from reclaim.corp.scenario import build_scenario
from reclaim.corp.scoring import EPSILONS, SCORE_FROM, origins, score_predictions
from reclaim.corp.simulator import fit_provisioners


class Fixed:
    """Predicts ``point`` and ``lower`` (fractions of the request) once ``after`` slots are seen."""

    def __init__(self, point: float, lower: float, after: int = 1) -> None:
        self.point, self.lower, self.after = point, lower, after
        self.asked: list[int] = []

    def estimate(self, history, request, horizon):
        self.asked += history.lengths.tolist()
        req = np.asarray(request, np.float64)
        valid = history.lengths >= self.after
        return UnusedEstimate(
            np.where(valid, self.point * req, 0.0), np.where(valid, self.lower * req, 0.0), valid
        )


def test_origins_every_window_of_a_jobs_own_life():
    job, t, end = origins(np.array([5, 6, 7, 13]), 6)
    assert job.tolist() == [2, 3, 3]
    assert t.tolist() == [6, 6, 12]
    assert end.tolist() == [7, 12, 13]


def test_errors_are_actual_unused_minus_prediction_per_job_from_score_from_on():
    # job 0: request 2, uses 1.0 for 12 slots then 0.5 for 6 (unused 1.5 there); job 1 is 8
    # slots long: too young to score from 12 slots of history
    demand = GroupedArray.from_series([np.array([1.0] * 12 + [0.5] * 6), np.full(8, 0.3)])
    method = Fixed(point=0.7, lower=0.5)
    sc = score_predictions(demand, np.array([2.0, 1.0]), method, window=6, score_from=12)
    assert sorted(method.asked) == [6, 6, 12]  # every origin asked once, in one batch
    # at t = 12: actual unused 1.5, point 1.4 -> +0.1, lower 1.0 -> +0.5
    assert sc.point[0] == pytest.approx(0.1) and sc.lower[0] == pytest.approx(0.5)
    assert np.isnan(sc.point[1]) and not sc.scored[1]
    # on every origin the method predicts: t = 6 of job 0 (unused 1.0 - 1.4 = -0.4) counts too
    assert sc.point_own[0] == pytest.approx((-0.4 + 0.1) / 2)
    assert sc.point_own[1] == pytest.approx(0.7 - 0.7)
    s = sc.summary(0.1)
    assert s["young_jobs"] == 1.0 and s["scored_jobs"] == 1.0
    # +0.1 is outside [0, 0.1 x 2) no; inside: 0.1 < 0.2 -> correct; the lower bound's 0.5 not
    assert s["prediction_error_rate"] == 0.0 and s["prediction_error_rate_lower"] == 1.0
    assert s["prediction_error_rate_eps05"] == 1.0  # 0.1 >= 0.05 x 2
    assert s["unpredicted_jobs"] == 0.0 and s["unpredicted_origins"] == 0.0
    assert {f"prediction_error_rate_eps{round(100 * e):02d}" for e in EPSILONS} <= set(s)


def test_a_method_that_cannot_predict_yet_is_counted_not_scored_zero():
    demand = GroupedArray.from_series([np.full(20, 0.5)])
    s = score_predictions(demand, np.ones(1), Fixed(0.5, 0.5, after=99), 6).summary(0.1)
    assert np.isnan(s["prediction_error_rate"]) and s["unpredicted_jobs"] == 1.0
    assert s["unpredicted_origins"] == 2.0  # origins 12 and 18


@pytest.fixture(scope="module")
def scenario():
    return build_scenario(
        n_jobs=40,
        n_train=150,
        n_vms=12,
        n_pms=3,
        seed=2,
        horizon_s=450,
        usage_stores=["sample:google2019-usage"],
        resample="window-hold",
    )


@pytest.mark.parametrize("name", ["corp", "rccr", "cloudscale", "dra"])
def test_every_compared_method_predicts_at_every_scored_origin(scenario, name):
    params = {"hidden_layer_sizes": (16, 16), "max_iter": 40} if name == "corp" else {}
    cpu = fit_provisioners(scenario.train, name, params, epsilon=0.1)[0]
    jobs = scenario.jobs
    scores = score_predictions(jobs.usage(0), jobs.request[:, 0], cpu, 6)
    s = scores.summary(0.1)
    assert scores.origins > 0 and s["unpredicted_origins"] == 0.0
    assert s["scored_jobs"] == (jobs.duration > SCORE_FROM).sum()
    # a prediction, not a lending decision: never 1.0 by construction
    assert 0.0 < s["prediction_error_rate"] < 1.0
