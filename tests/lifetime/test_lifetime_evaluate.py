"""Honest time-split evaluation on a tiny table; metric helpers by hand; the plots.

(Named test_lifetime_evaluate.py: tests/ has no __init__.py files, so basenames must be unique
and tests/forecast/test_evaluate.py exists.)"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reclaim.lifetime.eval_plots import plot_lifetime_eval
from reclaim.lifetime.evaluate import (
    SEVEN_DAYS,
    binary_metrics,
    censor_at,
    evaluate_lifetime,
    pr_curve,
    recall_at_precision,
)
from reclaim.lifetime.model import LifetimeModel
from reclaim.lifetime.vms import VmTable

DAY = 86400.0


def _table(seed: int = 0, n: int = 600) -> VmTable:
    """Arrivals over 40 days; kind 'long' lives ~20 days, 'short' ~1 hour; window ends at day 40
    so late long VMs are right-censored; the first 10 VMs are left-censored."""
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0, 40 * DAY, n))
    kind = rng.choice(["long", "short"], n, p=[0.3, 0.7])
    life = np.where(kind == "long", 20 * DAY, 3600.0) * rng.uniform(0.5, 1.5, n)
    end = 40 * DAY
    exit_ = arrival + life
    right = exit_ > end
    left = np.zeros(n, bool)
    left[:10] = True
    arrival[:10] = 0.0
    return VmTable(
        id=np.array([f"vm{i}" for i in range(n)]),
        family=np.array(["A"] * n),
        arrival=arrival,
        exit=np.where(right, np.inf, exit_),
        left_censored=left,
        right_censored=right,
        request=np.ones((n, 3), np.float32),
        features=pl.DataFrame({"kind": kind, "cpu": rng.integers(1, 4, n).astype(np.float32)}),
        window=(0.0, end),
    )


def test_metric_helpers_by_hand():
    pred = np.array([True, True, False, False, True])
    label = np.array([True, False, True, False, True])
    m = binary_metrics(pred, label)
    assert (m["precision"], m["recall"], m["accuracy"]) == pytest.approx((2 / 3, 2 / 3, 0.6))
    assert m["f1"] == pytest.approx(2 / 3)
    curve = pr_curve(np.array([5.0, 4.0, 4.0, 1.0]), np.array([True, True, False, False]))
    assert curve["precision"].to_list() == pytest.approx([1.0, 2 / 3, 0.5])
    assert curve["recall"].to_list() == pytest.approx([0.5, 1.0, 1.0])
    assert recall_at_precision(curve, 0.99) == 0.5
    assert recall_at_precision(curve, 0.6) == 1.0


def test_censor_at_cut():
    vms = _table()
    seen = censor_at(vms, 20 * DAY)
    assert seen.window == (0.0, 20 * DAY)
    before = vms.arrival < 20 * DAY
    assert np.all(seen.observed[before] <= 20 * DAY - vms.arrival[before] + 1e-9)
    assert np.all(seen.right_censored[vms.exit > 20 * DAY])


def test_evaluate_tiny_table(tmp_path):
    vms = _table()
    r = evaluate_lifetime(
        vms, LifetimeModel(n_estimators=20, learning_rate=0.3, min_child_samples=5)
    )
    usable = ~vms.left_censored
    test = usable & (vms.arrival >= r.cut)
    unknown = test & vms.right_censored & (vms.observed <= SEVEN_DAYS)
    assert r.n_left_censored == 10
    assert r.n_unknown == unknown.sum() > 0
    assert r.n_test == test.sum() - unknown.sum()
    assert r.n_train == (usable & (vms.arrival < r.cut)).sum()
    assert r.n_train_censored > 0  # long VMs alive at the cut
    at = {row["predictor"]: row for row in r.at_threshold.iter_rows(named=True)}
    assert at["oracle"]["f1"] == 1.0
    assert at["model"]["f1"] > 0.9  # the feature 'kind' separates the classes
    assert r.recall_at_precision is not None and r.recall_at_precision > 0.9
    assert r.by_quantile.height == 3 * 20
    assert set(r.by_week["week"].to_list()) <= {0, 1, 2}
    assert r.creation.height == r.n_test
    paths = plot_lifetime_eval(r, tmp_path)
    assert [p.name for p in paths] == [
        "lifetime_pr.png",
        "lifetime_f1_uptime.png",
        "lifetime_weeks.png",
    ]
    assert all(p.stat().st_size > 0 for p in paths)
