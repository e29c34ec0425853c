"""Whole runs on the shipped real-trace sample: determinism and the baseline's invariants."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.placement.framework import FIT_TOLERANCE
from reclaim.sim.run import RunSettings, replay
from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores


def sample_workload(seed: int, apps: int = 120):
    jobs, shapes = default_stores()
    spec = WorkloadSpec(n_apps=apps, seed=seed, horizon=apps * 60.0)
    return build_workload(spec, jobs, shapes)[0]


@pytest.fixture(scope="module")
def baseline():
    return replay(sample_workload(1), RunSettings(hosts="40x32c128g"))


def test_same_seed_gives_identical_results_bit_for_bit(baseline):
    again = replay(sample_workload(1), RunSettings(hosts="40x32c128g"))
    assert again.apps.equals(baseline.apps)
    assert again.timeline.equals(baseline.timeline)


def test_another_seed_gives_another_run(baseline):
    other = replay(sample_workload(2), RunSettings(hosts="40x32c128g"))
    assert not other.apps.equals(baseline.apps)


def test_reservation_baseline_on_real_usage(baseline):
    s = baseline.summary
    # Usage never exceeds the (clipped) request: the baseline neither fails nor preempts.
    assert s["failures"] == 0 and s["preemptions"] == 0 and s["component_losses"] == 0
    assert s["apps_done"] + s.get("apps_rejected", 0) == s["apps"]
    # Real components use far less than they reserve.
    assert 0.3 < s["slack_cpu_weighted"] < 1.0
    t = baseline.timeline
    # A host fits within FIT_TOLERANCE of its capacity (allocations are sums of float32 requests).
    assert np.all(t["allocated_cpu"].to_numpy() <= 40 * (32 + FIT_TOLERANCE))
    assert np.all(t["used_cpu"].to_numpy() <= t["allocated_cpu"].to_numpy() + 1e-6)


def test_first_fit_differs_from_best_fit_on_the_same_workload(baseline):
    ff = replay(sample_workload(1), RunSettings(hosts="40x32c128g", placement="first-fit"))
    assert ff.summary["apps"] == baseline.summary["apps"]
    assert not ff.apps.equals(baseline.apps)
