"""A failure target in place of a hand-tuned K2: the update rule, outcome tracking, a simulation."""

from __future__ import annotations

import numpy as np
import pytest
from hand_views import exact_forecast, hand_view

from reclaim import registry
from reclaim.core.tables import HostTable
from reclaim.forecast.naive import Naive
from reclaim.placement import build_placer
from reclaim.shaping.pessimistic import Pessimistic
from reclaim.shaping.shaper import Shaper, track_quantile
from reclaim.sim.results import SimResult
from reclaim.sim.simulator import Simulator
from tiny_workloads import tiny_workload


def test_k2_rises_after_a_failure_and_falls_after_a_clean_finish():
    assert track_quantile(1.0, np.array([True]), 0.01, 0.5) == pytest.approx(1.0 + 0.5 * 0.99)
    assert track_quantile(1.0, np.array([False]), 0.01, 0.5) == pytest.approx(1.0 - 0.5 * 0.01)
    assert track_quantile(1.0, np.zeros(0, bool), 0.01, 0.5) == 1.0


def test_k2_never_goes_below_zero_and_rises_again_from_there():
    k2 = track_quantile(0.3, np.zeros(100, bool), 0.1, 0.5)  # would reach -4.7 unfloored
    assert k2 == 0.0
    assert track_quantile(k2, np.array([True]), 0.1, 0.5) == pytest.approx(0.45)


def test_k2_is_stationary_when_the_failure_rate_equals_the_target():
    failed = np.tile([True, False, False, False], 25)  # 25 % failed, target 25 %
    k2 = 2.0
    for cycle in failed.reshape(-1, 4):
        k2 = track_quantile(k2, cycle, 0.25, 0.5)
        assert k2 == pytest.approx(2.0)


def test_realised_rate_exceeds_the_target_by_at_most_the_k2_drift():
    """The long-run guarantee, for any sequence: rate - target <= (K2_T - K2_0) / (step T)."""
    rng = np.random.default_rng(3)
    for p in (0.0, 0.005, 0.05, 0.3):
        failed = rng.random(2000) < p
        k2 = track_quantile(1.0, failed, 0.01, 0.5)
        assert failed.mean() - 0.01 <= (k2 - 1.0) / (0.5 * len(failed)) + 1e-12


# ---------------------------------------------------------------- outcomes seen through views
def views():
    """Rows: 0 app 0 core, 1 app 0 elastic, 2 app 1 core, 3 app 2 core (row i runs component i)."""
    rows = [
        (0, 0, True, 0.0, (1.0, 1.0)),
        (0, 1, False, 0.0, (1.0, 1.0)),
        (1, 0, True, 0.0, (1.0, 1.0)),
        (2, 1, True, 0.0, (1.0, 1.0)),
    ]
    return hand_view(rows)


def at(view, running, failures=(0, 0, 0), ooms=(0, 0, 0, 0)):
    view.running = np.asarray(running, np.int64)
    view.app_failures = np.asarray(failures, np.int32)
    view.component_ooms = np.asarray(ooms, np.uint8)
    view.now += 300.0
    return view


def step(ctrl, view):
    ctrl.targets(view, exact_forecast(view, np.ones((len(view.running), 2))))
    return ctrl.outcomes_, ctrl.failed_


def test_each_application_counts_once_with_its_first_outcome():
    ctrl = Shaper(k2=1.0, failure_target=0.1, failure_step=0.5, grace_s=0.0)
    view = views()
    assert step(ctrl, at(view, [0, 1, 2, 3])) == (0, 0)
    # app 0's elastic component ran out of memory and waits; app 0 is still running
    assert step(ctrl, at(view, [0, 2, 3], ooms=(0, 1, 0, 0))) == (0, 0)
    # app 1 finished cleanly; app 2's core failed out of memory and it already runs again
    assert step(ctrl, at(view, [0, 1, 3], failures=(0, 0, 1), ooms=(0, 1, 0, 1))) == (2, 1)
    assert ctrl.k2_ == pytest.approx(1.0 - 0.05 + 0.45)
    # app 0 finishes: its elastic component was stopped before, so it failed
    assert step(ctrl, at(view, [3], failures=(0, 0, 1), ooms=(0, 1, 0, 1))) == (3, 2)
    # app 2 fails again, then finishes: already counted, K2 stays where it was
    k2 = ctrl.k2_
    assert step(ctrl, at(view, [3], failures=(0, 0, 2), ooms=(0, 1, 0, 2))) == (3, 2)
    assert step(ctrl, at(view, [], failures=(0, 0, 2), ooms=(0, 1, 0, 2))) == (3, 2)
    assert ctrl.k2_ == k2 == pytest.approx(1.0 - 0.05 + 0.45 + 0.45)


def test_the_controllers_own_evictions_fail_their_applications():
    """Algorithm 1 preempts an elastic row of app 1 and app 2 whole; neither is an OOM."""
    view = hand_view(
        [
            (0, 0, True, 0.0, (4.0, 1.0)),
            (1, 1, True, 0.0, (1.0, 1.0)),
            (1, 0, False, 0.0, (2.0, 1.0)),
            (2, 0, True, 0.0, (4.0, 1.0)),
        ]
    )
    ctrl = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0, failure_target=0.01, failure_step=1.0)

    def decide(running, mean):
        view.running, view.now = np.asarray(running, np.int64), view.now + 300.0
        return ctrl.decide(view, exact_forecast(view, mean))

    d = decide([0, 1, 2, 3], [[3.0, 1.0], [1.0, 1.0], [2.0, 1.0], [2.0, 1.0]])
    assert sorted(d.evict.tolist()) == [2, 3]  # host 0 has 4 cores and app 0 takes 3
    assert (ctrl.outcomes_, ctrl.failed_) == (0, 0)
    decide([0, 1], [[3.0, 1.0], [1.0, 1.0]])  # applied: app 2 left, app 1's elastic row waits
    assert (ctrl.outcomes_, ctrl.failed_) == (1, 1)  # app 2 failed; app 1 still runs
    decide([0], [[3.0, 1.0]])
    assert (ctrl.outcomes_, ctrl.failed_) == (2, 2)  # app 1 ends: it lost a component
    decide([], np.zeros((0, 2)))
    assert (ctrl.outcomes_, ctrl.failed_) == (3, 2)  # app 0 ends cleanly
    assert ctrl.k2_ == pytest.approx(0.99 + 0.99 - 0.01)


def test_a_preempted_application_requeued_at_once_still_counts_as_failed():
    view = hand_view([(0, 0, True, 0.0, (4.0, 1.0)), (1, 0, True, 0.0, (4.0, 1.0))])
    ctrl = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0, failure_target=0.01)
    d = ctrl.decide(view, exact_forecast(view, [[3.0, 1.0], [2.0, 1.0]]))
    assert d.evict.tolist() == [1]
    view.now += 300.0  # app 1 was admitted again by the next call: same rows running
    ctrl.decide(view, exact_forecast(view, [[1.0, 1.0], [1.0, 1.0]]))
    assert (ctrl.outcomes_, ctrl.failed_) == (1, 1)


def test_without_a_target_k2_is_fixed_and_nothing_is_learned():
    view = views()
    fc = exact_forecast(view, np.ones((4, 2)), std=0.1)
    fixed = Shaper(k1=0.0, k2=2.0, grace_s=0.0)
    adaptive = Shaper(k1=0.0, k2=2.0, grace_s=0.0, failure_target=0.5)
    np.testing.assert_array_equal(fixed.targets(view, fc)[0], adaptive.targets(view, fc)[0])
    assert not hasattr(fixed, "k2_") and adaptive.k2_ == 2.0


def test_k2_zero_keeps_the_request_of_a_row_without_a_spread():
    """A one-sample forecast has std inf; at K2 = 0 (which a target may reach) 0 * inf is NaN."""
    view = hand_view([(0, 0, True, 0.0, (2.0, 4.0))])
    target, shaped = Shaper(k1=0.0, k2=0.0, grace_s=0.0).targets(
        view, exact_forecast(view, [[1.0, 1.0]], std=np.inf)
    )
    assert target.tolist() == [[2.0, 4.0]] and not shaped.any()


@pytest.mark.parametrize("target, step", [(0.0, 0.5), (1.0, 0.5), (0.01, 0.0)])
def test_bad_settings_fail_at_first_use(target, step):
    ctrl = Shaper(failure_target=target, failure_step=step)  # constructors only store settings
    view = views()
    with pytest.raises(ValueError):
        ctrl.targets(view, exact_forecast(view, np.ones((4, 2))))


def test_get_params_round_trips_through_the_registry():
    ctrl = Pessimistic(k1=0.1, k2=1.5, failure_target=0.02, failure_step=0.25)
    params = ctrl.get_params()
    assert params["failure_target"] == 0.02 and params["failure_step"] == 0.25
    assert registry.build("controller", "pessimistic", **params).get_params() == params
    assert Pessimistic().get_params()["failure_target"] is None


# ---------------------------------------------------------------- end to end
def spiky():
    """One core component of 4 GiB whose memory alternates 1 and 2 GiB every 300 s: the naive
    forecast (last value, std 1 GiB) at K2 = 0 allocates 1 GiB before each 2 GiB sample."""
    shapes = [[[0.5, 0.25], [0.5, 0.5]] * 10]
    return tiny_workload([(0.0, [(1, 4, 3000, True, 0, 0)])], shapes=shapes)


def simulate(controller):
    sim = Simulator(
        spiky(), HostTable.parse("1x4c8g"), controller, build_placer("best-fit"), Naive()
    ).run()
    return sim, SimResult.from_simulator(sim, {})


def test_a_failure_raises_k2_and_the_rerun_survives_where_fixed_k2_keeps_failing():
    fixed = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0, max_failures=3)
    _, res = simulate(fixed)
    assert res.apps["failures"].to_list() == [3]  # fails until it is shaped no more
    adaptive = Pessimistic(
        k1=0.0, k2=0.0, grace_s=0.0, max_failures=3, failure_target=0.01, failure_step=2.0
    )
    sim, res = simulate(adaptive)
    assert res.apps["failures"].to_list() == [1]  # K2 = 1.98 covers the next 2 GiB sample
    assert res.apps["state"].to_list() == ["done"]
    assert adaptive.k2_ == pytest.approx(2.0 * 0.99)  # its clean rerun does not count again
    assert (adaptive.outcomes_, adaptive.failed_) == (1, 1)
    assert res.summary["failure_target"] == 0.01
    assert res.summary["adapted_k2"] == pytest.approx(1.98)
    assert (res.summary["target_outcomes"], res.summary["target_failed"]) == (1.0, 1.0)
    assert res.summary["target_failure_rate"] == 1.0
    assert "adapted_k2" not in simulate(Pessimistic(k1=0.0, k2=0.0, grace_s=0.0))[1].summary


def test_same_settings_same_run():
    def once():
        ctrl = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0, failure_target=0.01, failure_step=2.0)
        _, res = simulate(ctrl)
        return res.summary, ctrl.k2_, res.apps

    (s1, k1, a1), (s2, k2, a2) = once(), once()
    assert s1 == s2 and k1 == k2 and a1.equals(a2)
