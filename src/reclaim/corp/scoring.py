"""The paper's Fig. 6 scored on predictions: each method's predicted unused CPU against what
really stayed unused, on the same jobs and windows for every method.

Section IV: "We first calculated the prediction error of CPU by subtracting the predicted amount
of unused resource from the actual amount of unused resource for each job. Then we calculated the
ratio of the correctly predicted jobs (the jobs whose prediction errors are within [0, eps)) to
the number of jobs". What is scored is the *prediction*, not what was lent (a method that lends
nothing still predicts), so :func:`score_predictions` replays every job's own demand profile,
independently of where the simulation placed it or whether it lent:

* **Origins.** Job ``i`` is predicted at ``t = L, 2L, ...`` slots into its run (the simulator's
  refresh every L slots), from its first ``t`` slots of demand, for the window ``(t, t + L]``
  (cut at the job's end). Its actual unused amount there is ``request - mean demand``.
* **The same jobs and windows for every method.** Only origins with at least ``score_from``
  slots of history count (default 12: CORP's DNN input Delta; RCCR needs 10, CloudScale 12, DRA
  1, so every compared method predicts at every scored origin). A job too short for any scored
  origin is *young*: counted apart (``young_jobs``), never scored as an error of 0.
* **Per job**, the error is the mean over its scored origins of ``actual - predicted`` (eq. 20's
  sign), for the point prediction and separately for the conservative one (eq. 19's lower bound;
  :class:`~reclaim.corp.provisioning.UnusedEstimate`).
* The rate is the share of scored jobs outside ``[0, eps x request)``; the paper's literal
  "ratio of the correctly predicted jobs" is its complement (see
  :func:`reclaim.corp.metrics.prediction_error_rate`). Each method is also scored on every origin
  where it predicts at all (``_own``), with the jobs it never predicts counted
  (``unpredicted_jobs``), so a method that can predict earlier is not hidden.

Rates at each tolerance of :data:`EPSILONS` come with every run, so that the sensitivity table can
read Fig. 6 at each epsilon from the same predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.corp import metrics
from reclaim.corp.provisioning import Provisioner

#: Tolerances of the sensitivity table, fractions of the request (the paper gives none).
EPSILONS = (0.05, 0.1, 0.2)
#: Fig. 6's scored origins start here (slots of history): CORP's Delta, the longest minimum
#: history among the compared methods.
SCORE_FROM = 12


@dataclass(frozen=True)
class PredictionScores:
    """Fig. 6 errors per job, CPU, in the request's units.

    point, lower: (N,) mean error ``actual - predicted`` over the job's scored origins (NaN: no
    scored origin, or the method predicted at none of them). point_own, lower_own: (N,) the same
    over every origin where the method predicts. scored: (N,) bool, the job has a scored origin.
    request: (N,) CPU requests. origins: scored origins in all, predicted: of them, with a
    prediction.
    """

    point: NDArray[np.float64]
    lower: NDArray[np.float64]
    point_own: NDArray[np.float64]
    lower_own: NDArray[np.float64]
    scored: NDArray[np.bool_]
    request: NDArray[np.float64]
    origins: int
    predicted: int

    def summary(self, epsilon: float) -> dict[str, float]:
        """``prediction_error_rate`` (point) and ``prediction_error_rate_lower`` at ``epsilon`` on
        the scored jobs, the ``_own`` pair on each method's own predicted jobs, the rates at every
        tolerance of :data:`EPSILONS` (``..._eps05``), the job counts, and the mean error and mean
        absolute error of the point prediction as fractions of the request (the bias the
        [0, eps) test rewards or punishes)."""
        out: dict[str, float] = {}
        rate = metrics.prediction_error_rate
        eps = self.request
        out["prediction_error_rate"] = rate(self.point, epsilon * eps)
        out["prediction_error_rate_lower"] = rate(self.lower, epsilon * eps)
        out["prediction_correct_rate"] = 1.0 - out["prediction_error_rate"]
        out["prediction_error_rate_own"] = rate(self.point_own, epsilon * eps)
        out["prediction_error_rate_lower_own"] = rate(self.lower_own, epsilon * eps)
        for e in EPSILONS:
            tag = f"eps{round(100 * e):02d}"
            out[f"prediction_error_rate_{tag}"] = rate(self.point, e * eps)
            out[f"prediction_error_rate_lower_{tag}"] = rate(self.lower, e * eps)
        n = len(self.scored)
        out["scored_jobs"] = float(np.isfinite(self.point).sum())
        out["young_jobs"] = float(n - self.scored.sum())
        out["unpredicted_jobs"] = float(n - np.isfinite(self.point_own).sum())
        out["unpredicted_origins"] = float(self.origins - self.predicted)
        share = self.point / np.where(self.request > 0, self.request, np.nan)
        has = np.isfinite(share)
        out["prediction_mean_error"] = float(share[has].mean()) if has.any() else float("nan")
        out["prediction_mae"] = float(np.abs(share[has]).mean()) if has.any() else float("nan")
        return out


def origins(duration: NDArray[np.integer], window: int) -> tuple[NDArray, NDArray, NDArray]:
    """(job (K,), origin t (K,), window end (K,)) of every prediction: ``t = L, 2L, ...`` below
    the job's duration, its window ``(t, min(t + L, duration)]``, in slots of work."""
    dur = np.asarray(duration, np.int64)
    count = np.maximum((dur - 1) // window, 0)
    job = np.repeat(np.arange(len(dur)), count)
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    t = (np.arange(count.sum()) - np.repeat(first, count) + 1) * window
    return job, t, np.minimum(t + window, dur[job])


def score_predictions(
    demand: GroupedArray,
    request: NDArray[np.float64],
    provisioner: Provisioner,
    window: int,
    score_from: int = SCORE_FROM,
) -> PredictionScores:
    """Fig. 6 errors of a fitted ``provisioner`` (one resource) on jobs whose demand per slot of
    work is ``demand`` (N series, one resource) and whose allocations are ``request`` (N,).

    Every origin of every job goes to the provisioner in one batch (its ``estimate``)."""
    req = np.asarray(request, np.float64).reshape(-1)
    n = len(req)
    job, t, end = origins(demand.lengths, window)
    data = np.asarray(demand.data, np.float64)
    starts = demand.indptr[:-1][job]
    cs = np.concatenate([[0.0], np.cumsum(data)])
    actual = req[job] - (cs[starts + end] - cs[starts + t]) / (end - t)
    hist_ptr = np.concatenate([[0], np.cumsum(t)]).astype(np.int64)
    rows = np.repeat(starts - hist_ptr[:-1], t) + np.arange(hist_ptr[-1])
    est = provisioner.estimate(GroupedArray(data[rows], hist_ptr), req[job], window)
    scored = t >= score_from
    valid = np.asarray(est.valid, bool)

    def per_job(pred: NDArray[np.float64], keep: NDArray[np.bool_]) -> NDArray[np.float64]:
        err = actual - pred
        total = np.bincount(job[keep], weights=err[keep], minlength=n)
        k = np.bincount(job[keep], minlength=n)
        return np.divide(total, k, out=np.full(n, np.nan), where=k > 0)

    both = scored & valid
    return PredictionScores(
        point=per_job(est.point, both),
        lower=per_job(est.lower, both),
        point_own=per_job(est.point, valid),
        lower_own=per_job(est.lower, valid),
        scored=np.bincount(job[scored], minlength=n) > 0,
        request=req,
        origins=int(scored.sum()),
        predicted=int(both.sum()),
    )
