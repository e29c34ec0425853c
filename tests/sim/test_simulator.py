"""Hand-computed scenarios, model properties and determinism of the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.tables import HostTable
from reclaim.core.types import Decisions
from reclaim.placement import build_placer
from reclaim.shaping.reservation import Reservation
from reclaim.sim.results import SimResult
from reclaim.sim.simulator import SimRules, Simulator
from tiny_workloads import tiny_workload


def run(workload, hosts="2x4c8g", placement="best-fit", horizon=None, controller=None, **kw):
    sim = Simulator(
        workload,
        HostTable.parse(hosts),
        controller or Reservation(),
        build_placer(placement),
        horizon=horizon,
        **kw,
    ).run()
    return sim, SimResult.from_simulator(sim, {})


def column(result, name):
    return result.apps[name].to_list()


def test_two_hosts_three_apps_exact_turnaround_and_slack():
    # Host 0 takes app 0's two halves; app 1 fills host 1; app 2 must wait for app 0 (t=100).
    wl = tiny_workload(
        [
            (0.0, [(2, 4, 100, True, 0, 0), (2, 4, 100, True, 0, 0)]),
            (10.0, [(4, 8, 1000, True, 0, 0)]),
            (20.0, [(1, 1, 50, True, 0, 0)]),
        ]
    )
    sim, res = run(wl)
    assert column(res, "turnaround") == [100.0, 1000.0, 130.0]
    assert column(res, "queue_time") == [0.0, 0.0, 80.0]
    assert column(res, "state") == ["done"] * 3
    # Every component uses half its request: slack is exactly 50 % at every tick.
    assert res.timeline["slack_cpu"].drop_nulls().to_list() == [0.5] * 4
    assert res.summary["slack_mem_weighted"] == 0.5
    # Per application, over the ticks it was running at: apps 0 and 2 end between ticks.
    assert column(res, "slack_cpu") == [0.5, 0.5, None]
    # Ticks at 0, 300, 600, 900; the run ends at 1010 with app 1.
    assert res.timeline["time"].to_list() == [0.0, 300.0, 600.0, 900.0]
    assert res.timeline["allocated_cpu"].to_list() == [4.0, 4.0, 4.0, 4.0]


def test_strict_fifo_nothing_overtakes_a_blocked_head():
    wl = tiny_workload(
        [
            (0.0, [(4, 8, 500, True, 0, 0)]),
            (1.0, [(8, 8, 100, True, 0, 0)]),  # needs a whole 8-core host: waits for app 0
            (2.0, [(1, 1, 10, True, 0, 0)]),  # would fit at once, but must queue behind app 1
        ]
    )
    _, res = run(wl, hosts="1x8c16g")
    assert column(res, "first_start") == [0.0, 500.0, 600.0]


def test_cpu_throttling_slows_progress():
    # Demand is twice the request all the time: progress at half speed, 100 s of work take 200 s.
    wl = tiny_workload([(0.0, [(1, 1, 100, True, 0, 0)])], shapes=[[[2.0, 0.5]]])
    _, res = run(wl)
    assert column(res, "run_time") == [200.0]
    assert res.timeline["used_cpu"].to_list() == [1.0]  # usage is capped at the allocation


def test_without_throttling_cpu_overuse_neither_slows_nor_is_capped():
    # The shaping paper's rule: progress ignores CPU (demand twice the request from a tick on).
    wl = tiny_workload([(0.0, [(1, 1, 100, True, 0, 0)])], shapes=[[[2.0, 0.5]]])
    _, res = run(wl, rules=SimRules(throttle_cpu=False))
    assert column(res, "run_time") == [100.0]
    assert res.timeline["used_cpu"].to_list() == [2.0]


def test_rigid_admission_waits_for_every_component():
    # One core and one elastic component of 4 cores on one 4-core host: flexible admission
    # starts the core one at once and the elastic one after it; rigid admission never fits both
    # at once, so the application is rejected.
    wl = tiny_workload([(0.0, [(4, 1, 100, True, 0, 0), (4, 1, 100, False, 0, 0)])])
    _, flexible = run(wl, hosts="1x4c8g")
    _, rigid = run(wl, hosts="1x4c8g", rules=SimRules(rigid_admission=True))
    assert column(flexible, "state") == ["done"] and column(flexible, "turnaround") == [200.0]
    assert column(rigid, "state") == ["rejected"]


def test_throttling_changes_at_a_tick():
    # Half speed in the first interval (300 s -> 150 s of work), full speed after: 1000 s of
    # work end at 300 + 850 = 1150.
    shape = [[2.0, 0.1]] + [[1.0, 0.1]] * 4
    _, res = run(tiny_workload([(0.0, [(1, 1, 1000, True, 0, 0)])], shapes=[shape]))
    assert column(res, "run_time") == pytest.approx([1150.0])
    # Shapes wrap around: with two samples, half speed returns every other interval:
    # 150 + 300 + 150 + 300 s of work by t=1200, the last 100 s at half speed -> 1400.
    two = [[2.0, 0.1], [1.0, 0.1]]
    _, res = run(tiny_workload([(0.0, [(1, 1, 1000, True, 0, 0)])], shapes=[two]))
    assert column(res, "run_time") == pytest.approx([1400.0])


def test_memory_above_allocation_fails_and_requeues_with_lost_work():
    # Memory demand exceeds the request in the shape's second sample: the application fails at
    # every second tick (300, 600, 900), loses 300 s of work each time and restarts at once.
    wl = tiny_workload([(0.0, [(1, 1, 1000, True, 0, 0)])], shapes=[[[0.5, 0.5], [0.5, 1.5]]])
    sim, res = run(wl, horizon=1000.0)
    assert column(res, "failures") == [3]
    assert column(res, "work_lost") == [900.0]
    # weighted by the request (1 core, 1 GiB): core-seconds and GiB-seconds
    assert column(res, "work_lost_cpu") == column(res, "work_lost_mem") == [900.0]
    assert res.summary["work_lost_core_h"] == res.summary["work_lost_gib_h"] == 0.25
    assert res.summary["failure_rate"] == res.summary["core_oom_rate"] == 1.0
    assert res.summary["resubmissions"] == 3
    assert column(res, "state") == ["running"]
    assert sim.state.app_start[0] == 900.0


def test_elastic_component_waits_then_runs_and_its_loss_is_partial():
    # 1 core + 2 elastic of 2 cores on a 4-core host: one elastic waits for the other to end.
    comps = [(2, 1, 100, True, 0, 0), (2, 1, 100, False, 0, 0), (2, 1, 100, False, 0, 0)]
    _, res = run(tiny_workload([(0.0, comps)]), hosts="1x4c8g")
    assert column(res, "run_time") == [200.0]
    # Now the second elastic component's memory spikes at its second tick: it alone is lost.
    shapes = [[[0.5, 0.5]], [[0.5, 0.5], [0.5, 2.0]]]
    comps = [(1, 1, 1000, True, 0, 0), (1, 1, 1000, False, 0, 0), (1, 1, 1000, False, 1, 0)]
    _, res = run(tiny_workload([(0.0, comps)], shapes=shapes), hosts="1x4c8g", horizon=700)
    assert column(res, "failures") == [0]
    assert column(res, "component_losses") == [2]  # at 300 and again at 600
    assert column(res, "work_lost") == [600.0]
    # An elastic loss fails the application in the paper's count, but sends nothing back
    # to the queue.
    assert res.summary["failure_rate"] == res.summary["elastic_loss_rate"] == 1.0
    assert res.summary["core_oom_rate"] == 0.0 and res.summary["resubmissions"] == 0


def test_never_fitting_application_is_rejected_not_blocking():
    wl = tiny_workload([(0.0, [(64, 1, 10, True, 0, 0)]), (1.0, [(1, 1, 10, True, 0, 0)])])
    _, res = run(wl)
    assert column(res, "state") == ["rejected", "done"]


def test_controller_resize_and_evict_through_apply():
    class ShrinkThenEvict:
        __capabilities__ = ControllerCapabilities(needs_forecast=False)

        def decide(self, view, forecast):
            rows = view.running
            if view.now == 0.0:
                return Decisions(rows, view.workloads.request[rows] * 0.5)
            return Decisions(evict=rows) if view.now == 300.0 else Decisions()

    wl = tiny_workload([(0.0, [(2, 2, 500, True, 0, 0)])], shapes=[[[0.25, 0.25]]])
    _, res = run(wl, controller=ShrinkThenEvict(), horizon=400)
    assert res.timeline["allocated_cpu"].to_list()[0] == 1.0
    assert column(res, "preemptions") == [1]
    assert column(res, "work_lost") == [300.0]
    assert column(res, "work_lost_cpu") == [600.0]  # 300 s of a 2-core component
    # Over its first attempt (0-300 s) it held half its request and used a quarter: the
    # paper's slack is 50 % - 25 % of the request; a half of what it held sat idle.
    assert column(res, "slack_cpu") == [0.25]
    assert column(res, "idle_cpu") == [0.5]
    assert res.summary["failure_rate"] == res.summary["preempted_rate"] == 1.0


def test_first_fit_and_best_fit_choose_differently():
    # Host 1 is tighter after app 0; best-fit puts app 1 there, first-fit on host 0.
    apps = [
        (0.0, [(3, 1, 1000, True, 0, 0)]),  # both choose host 0 (tie -> lowest index)
        (0.0, [(3, 1, 1000, True, 0, 0)]),  # host 0 is full for it; goes to host 1
        (0.0, [(1, 1, 1000, True, 0, 0)]),  # best-fit and first-fit: host 0 has 1 core left
    ]
    for placement in ("best-fit", "first-fit"):
        sim, _ = run(tiny_workload(apps), hosts="2x4c8g", placement=placement, horizon=1)
        assert sim.state.hosts.allocated[:, 0].tolist() == [4.0, 3.0]


def small_workloads():
    comp = st.tuples(
        st.sampled_from([0.5, 1.0, 2.0, 3.0]),
        st.sampled_from([0.5, 1.0, 4.0, 8.0]),
        st.integers(1, 2000),
        st.booleans(),
        st.just(0),
        st.integers(0, 3),
    )
    app = st.tuples(st.integers(0, 3000).map(float), st.lists(comp, min_size=1, max_size=4))
    shape = st.lists(
        st.tuples(st.floats(0, 1, width=32), st.floats(0, 1, width=32)), min_size=1, max_size=5
    )
    return st.tuples(st.lists(app, min_size=1, max_size=8), shape)


@settings(max_examples=60, deadline=None)
@given(small_workloads(), st.sampled_from(["best-fit", "first-fit"]))
def test_baseline_never_overcommits_and_every_application_ends(case, placement):
    apps, shape = case
    apps = sorted(apps, key=lambda a: a[0])
    for _, comps in apps:  # core components first, as the Workload contract says
        comps.sort(key=lambda c: not c[3])
    wl = tiny_workload(apps, shapes=[shape])
    overcommitted = []

    def check(sim):
        overcommitted.append(np.any(sim.state.hosts.allocated > sim.state.hosts.capacity + 1e-6))

    sim, res = run(wl, hosts="2x4c8g", placement=placement, on_tick=check)
    assert not any(overcommitted)
    # Usage never exceeds the request here, so the baseline never fails anything.
    assert set(column(res, "state")) <= {"done", "rejected"}
    assert sum(column(res, "failures")) == 0
    done = res.apps.filter(res.apps["state"] == "done")
    assert (done["turnaround"] >= done["run_time"]).all()
    # Work conservation: a finished application ran at least as long as its longest component.
    longest = [max(c[2] for c in comps) for _, comps in apps]
    for row in done.iter_rows(named=True):
        assert row["run_time"] >= longest[row["app"]] - 1e-6


@settings(max_examples=25, deadline=None)
@given(small_workloads())
def test_every_application_is_accounted_for_at_any_horizon(case):
    apps, shape = case
    apps = sorted(apps, key=lambda a: a[0])
    for _, comps in apps:
        comps.sort(key=lambda c: not c[3])
    _, res = run(tiny_workload(apps, shapes=[shape]), horizon=1500.0)
    assert len(res.apps) == len(apps)
    assert set(column(res, "state")) <= {"done", "rejected", "running", "queued", "not_arrived"}


def test_head_that_cannot_be_packed_even_on_an_empty_cluster_is_rejected():
    # 8 cores of core components fit the cluster's 8 cores in total, but 3 + 3 + 2 cannot be
    # packed into two hosts of 4: strict FIFO would wait forever behind it.
    comps = [(3, 1, 10, True, 0, 0), (3, 1, 10, True, 0, 0), (2, 1, 10, True, 0, 0)]
    wl = tiny_workload(
        [(0.0, [(1, 1, 50, True, 0, 0)]), (1.0, comps), (2.0, [(1, 1, 5, True, 0, 0)])]
    )
    _, res = run(wl, hosts="2x4c8g")
    assert column(res, "state") == ["done", "rejected", "done"]
    assert column(res, "first_start") == [0.0, None, 50.0]


def test_an_elastic_component_outgrowing_its_forecast_is_shaped_no_more_after_max_failures():
    """Its memory jumps from 1 to 3 GiB at its third sample, beyond the naive forecast (last
    value) + 5 % of 4 GiB. Each rerun replays the same usage, so each shaped attempt dies at the
    same age; after ``max_failures`` deaths it keeps its request and finishes."""
    from reclaim.forecast.naive import Naive
    from reclaim.shaping.pessimistic import Pessimistic

    shapes = [[[0.5, 0.25]], [[0.5, 0.25]] * 2 + [[0.5, 0.75]] * 20]
    comps = [(1, 1, 5000, True, 0, 0), (1, 4, 2000, False, 1, 0)]
    wl = tiny_workload([(0.0, comps)], shapes=shapes)
    controller = Pessimistic(grace_s=0.0, max_failures=2)
    sim, res = run(wl, hosts="1x4c8g", controller=controller, forecaster=Naive(), horizon=5e4)
    assert column(res, "component_ooms") == [2]
    assert column(res, "state") == ["done"]
    assert sim.state.comp_ooms.tolist() == [0, 2]


def test_with_soft_memory_limits_the_same_growth_kills_nothing_while_the_host_has_room():
    """The component above, under pessimistic shaping with soft memory limits (as the live agent
    writes them): its rise above forecast + buffer is no OOM while the host has memory left, so
    it finishes first time."""
    from reclaim.forecast.naive import Naive
    from reclaim.shaping.pessimistic import Pessimistic

    shapes = [[[0.5, 0.25]], [[0.5, 0.25]] * 2 + [[0.5, 0.75]] * 20]
    comps = [(1, 1, 5000, True, 0, 0), (1, 4, 2000, False, 1, 0)]
    wl = tiny_workload([(0.0, comps)], shapes=shapes)
    controller = Pessimistic(grace_s=0.0, max_failures=2, soft_memory_limits=True)
    sim, res = run(wl, hosts="1x4c8g", controller=controller, forecaster=Naive(), horizon=5e4)
    assert column(res, "component_ooms") == [0]
    assert column(res, "state") == ["done"]
    assert sim.state.comp_ooms.tolist() == [0, 0]


@pytest.mark.parametrize(("soft", "ooms"), [(True, 0), (False, 2)])
def test_optimistic_limits_are_soft_by_default_and_hard_as_in_the_papers_simulator(soft, ooms):
    """The growth above, under optimistic shaping: soft limits (reclaim's default) absorb it
    while the host has memory; hard ones (the paper's) stop the component at its rise, twice,
    after which it is shaped no more."""
    from reclaim.forecast.naive import Naive
    from reclaim.shaping.optimistic import Optimistic

    shapes = [[[0.5, 0.25]], [[0.5, 0.25]] * 2 + [[0.5, 0.75]] * 20]
    comps = [(1, 1, 5000, True, 0, 0), (1, 4, 2000, False, 1, 0)]
    wl = tiny_workload([(0.0, comps)], shapes=shapes)
    controller = Optimistic(grace_s=0.0, max_failures=2, soft_memory_limits=soft)
    sim, res = run(wl, hosts="1x4c8g", controller=controller, forecaster=Naive(), horizon=5e4)
    assert column(res, "state") == ["done"]
    assert sim.state.comp_ooms.tolist() == [0, ooms]


def test_the_oracle_shortcut_gives_what_the_forecasting_path_gives():
    from reclaim.forecast.oracle import Oracle
    from reclaim.shaping.pessimistic import Pessimistic

    class Plain(Oracle):  # not the Oracle itself: forecast through history and batch
        pass

    shape = [[0.3, 0.9], [0.6, 0.4], [0.9, 0.7], [0.2, 1.0]]
    wl = tiny_workload(
        [
            (float(10 * i), [(1, 2, 2000, True, 0, i % 4), (1, 2, 1500, False, 0, 1)])
            for i in range(6)
        ],
        shapes=[shape],
    )
    results = []
    for forecaster in (Oracle(), Plain()):
        sim, res = run(wl, controller=Pessimistic(k1=0.0, grace_s=0.0), forecaster=forecaster)
        results.append((res.apps, sim.stats.forecasts))
    (apps, n), (plain_apps, plain_n) = results
    assert apps.equals(plain_apps) and n == plain_n > 0
