"""CORP's evaluation metrics (Liu, Shen and Chen, section II eq. 1-4 and section IV): pure functions.

Every function takes arrays and returns numbers; none reads simulator state. Resource axes are the
last axis (R,), in :data:`reclaim.core.types.RESOURCES` order (cpu, mem).

Weights. The paper weighs CPU, memory and storage 0.4, 0.4, 0.2 (section IV, eq. 2). The traces we
replay carry no storage usage, so the storage axis is absent and :func:`paper_weights` renormalises
the remaining weights to sum to 1: 0.4 / 0.4 -> 0.5 / 0.5.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.types import RESOURCES
from reclaim.errors import ReclaimError

#: Eq. 2 weights of the paper, per resource type (section IV: "0.4, 0.4 and 0.2").
PAPER_WEIGHTS: dict[str, float] = {"cpu": 0.4, "mem": 0.4, "storage": 0.2}


def paper_weights(resources: tuple[str, ...] = RESOURCES) -> NDArray[np.float64]:
    """(R,) the paper's eq. 2 weights of ``resources``, renormalised to sum to 1.

    With (cpu, mem) the storage weight 0.2 has no axis to go to: 0.4 / 0.4 become 0.5 / 0.5.
    """
    missing = [r for r in resources if r not in PAPER_WEIGHTS]
    if missing:
        raise ReclaimError(f"the paper gives no eq. 2 weight for {', '.join(missing)}")
    w = np.array([PAPER_WEIGHTS[r] for r in resources], np.float64)
    return w / w.sum()


def _check_weights(weights: ArrayLike, n: int) -> NDArray[np.float64]:
    w = np.asarray(weights, np.float64).reshape(-1)
    if len(w) != n or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ReclaimError(f"weights must be {n} non-negative numbers summing to 1, got {w}")
    return w


def _sums(demand: ArrayLike, allocation: ArrayLike) -> tuple[NDArray, NDArray]:
    d = np.asarray(demand, np.float64)
    r = np.asarray(allocation, np.float64)
    if d.shape != r.shape or d.ndim < 1:
        raise ReclaimError(
            f"demand {d.shape} and allocation {r.shape} must have one shape (..., R)"
        )
    axes = tuple(range(d.ndim - 1))
    return d.sum(axis=axes), r.sum(axis=axes)


def utilisation(demand: ArrayLike, allocation: ArrayLike) -> NDArray[np.float64]:
    """Eq. 1 per resource: ``sum d / sum r`` over every leading axis (jobs, slots).

    demand, allocation: (..., R), same units per resource (cores, GiB). Returns (R,); NaN where
    nothing was allocated.
    """
    d, r = _sums(demand, allocation)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, d / np.where(r > 0, r, 1.0), np.nan)


def overall_utilisation(demand: ArrayLike, allocation: ArrayLike, weights: ArrayLike) -> float:
    """Eq. 2: ``sum_j w_j sum d_j / sum_j w_j sum r_j``; demand, allocation (..., R), weights (R,)."""
    d, r = _sums(demand, allocation)
    w = _check_weights(weights, len(d))
    den = float(w @ r)
    return float(w @ d) / den if den > 0 else float("nan")


def wastage(demand: ArrayLike, allocation: ArrayLike) -> NDArray[np.float64]:
    """Eq. 3 per resource: ``sum (r - d) / sum r``, (R,); NaN where nothing was allocated."""
    d, r = _sums(demand, allocation)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, (r - d) / np.where(r > 0, r, 1.0), np.nan)


def overall_wastage(demand: ArrayLike, allocation: ArrayLike, weights: ArrayLike) -> float:
    """Eq. 4: ``sum_j w_j sum (r_j - d_j) / sum_j w_j sum r_j``."""
    d, r = _sums(demand, allocation)
    w = _check_weights(weights, len(d))
    den = float(w @ r)
    return float(w @ (r - d)) / den if den > 0 else float("nan")


def slo_violation_rate(response: ArrayLike, threshold: ArrayLike) -> float:
    """Share of jobs whose response time is above their threshold (same units); NaN if no job.

    A job that never finished has response ``inf`` and counts as a violation.
    """
    resp = np.asarray(response, np.float64)
    thr = np.asarray(threshold, np.float64)
    if resp.shape != thr.shape:
        raise ReclaimError(f"{resp.shape} response times but {thr.shape} thresholds")
    return float(np.mean(resp > thr)) if resp.size else float("nan")


def correctly_predicted(error: ArrayLike, epsilon: ArrayLike) -> NDArray[np.bool_]:
    """Section IV's "correctly predicted" test per job: ``0 <= error < epsilon``.

    error: (N,) actual unused - predicted unused (eq. 20 sign); epsilon: tolerance, same units,
    broadcastable. A NaN error (no prediction) is not correct.
    """
    e = np.asarray(error, np.float64)
    with np.errstate(invalid="ignore"):
        return (e >= 0) & (e < np.asarray(epsilon, np.float64))


def prediction_error_rate(error: ArrayLike, epsilon: ArrayLike) -> float:
    """Share of jobs **not** correctly predicted (see :func:`correctly_predicted`), over the jobs
    with a prediction (finite error); NaN if there is none.

    The paper (section IV) defines its "prediction error rate" as the ratio of correctly predicted
    jobs to all jobs, yet ranks methods CORP < RCCR < ... on it and calls lower better; we report
    the complement here, which agrees with that ranking, and the literal ratio as
    ``1 - prediction_error_rate`` (the simulator's ``prediction_correct_rate``).
    """
    e = np.asarray(error, np.float64)
    has = np.isfinite(e)
    if not has.any():
        return float("nan")
    eps = np.broadcast_to(np.asarray(epsilon, np.float64), e.shape)
    return 1.0 - float(np.mean(correctly_predicted(e[has], eps[has])))
