"""The compiled event loop (``Simulator.compiled``) against the engine and the Python handlers:
the same run, bit for bit, whatever the workload, placement, controller and horizon."""

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
from reclaim.sim.simulator import Simulator
from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores
from tiny_workloads import tiny_workload

PER_APP = (
    "app_state",
    "app_first_start",
    "app_start",
    "app_end",
    "app_failures",
    "app_preemptions",
    "app_component_losses",
    "app_component_ooms",
    "app_work_lost",
    "app_work_lost_res",
    "app_requested",
    "app_allocated",
    "app_used",
    "comp_state",
    "comp_ooms",
)


def both(workload, hosts, placement="best-fit", controller=Reservation, **kw):
    """The same run with the compiled event loop and with the Python handlers."""
    runs = []
    for compiled in (True, False):
        sim = Simulator(
            workload, HostTable.parse(hosts), controller(), build_placer(placement), **kw
        )
        sim.compiled = compiled
        runs.append(sim.run())
    return runs


def assert_same(fast, slow):
    assert fast._binding is not None and slow._binding is None  # the loop ran in one only
    for name in PER_APP:
        assert np.array_equal(
            getattr(fast.state, name), getattr(slow.state, name), equal_nan=True
        ), name
    assert np.array_equal(fast.timeline, slow.timeline)
    assert fast.state.now == slow.state.now
    assert fast.state.finished == slow.state.finished
    assert (fast.stats.events, fast.stats.ticks) == (slow.stats.events, slow.stats.ticks)
    assert fast.stats.component_ticks == slow.stats.component_ticks
    a = SimResult.from_simulator(fast, {})
    b = SimResult.from_simulator(slow, {})
    assert a.apps.equals(b.apps) and a.timeline.equals(b.timeline)


class RandomEvictions:
    """Evicts a few running rows and halves a few limits at random ticks (seeded): kills of core
    and elastic components, requeued applications, returned components, shrunk allocations."""

    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, view, forecast):
        rows = view.running
        if len(rows) == 0 or self.rng.random() < 0.5:
            return Decisions()
        evict = rows[self.rng.random(len(rows)) < 0.15]
        shrink = rows[self.rng.random(len(rows)) < 0.2]
        shrink = shrink[~np.isin(shrink, evict)]
        return Decisions(shrink, view.workloads.request[shrink] * 0.5, evict=evict)


def workloads():
    comp = st.tuples(
        st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]),
        st.sampled_from([0.5, 1.0, 4.0, 8.0]),
        st.integers(1, 3000),
        st.booleans(),
        st.integers(0, 1),
        st.integers(0, 3),
    )
    app = st.tuples(st.integers(0, 3000).map(float), st.lists(comp, min_size=1, max_size=12))
    sample = st.tuples(st.floats(0, 1.5, width=32), st.floats(0, 1.5, width=32))
    shape = st.lists(sample, min_size=1, max_size=5)
    return st.tuples(st.lists(app, min_size=1, max_size=10), shape, shape)


def build(case):
    apps, shape0, shape1 = case
    apps = sorted(apps, key=lambda a: a[0])
    for _, comps in apps:  # core components first, as the Workload contract says
        comps.sort(key=lambda c: not c[3])
    return tiny_workload(apps, shapes=[shape0, shape1])


@settings(max_examples=80, deadline=None)
@given(
    workloads(),
    st.sampled_from(["best-fit", "first-fit", "random-fit", "random-fit:0.5"]),
    st.sampled_from([700.0, 2500.0, 20000.0]),
    st.sampled_from(["2x4c8g", "1x8c16g", "3x2c4g+1x8c8g"]),
)
def test_loop_equals_the_handlers_under_the_baseline(case, placement, horizon, hosts):
    # Usage up to 1.5x the request: memory above it fails components (kills, requeues, losses),
    # some of them forever, hence a horizon.
    assert_same(*both(build(case), hosts, placement, horizon=horizon))


@settings(max_examples=60, deadline=None)
@given(workloads(), st.integers(0, 2**16), st.sampled_from([2000.0, 20000.0]))
def test_loop_equals_the_handlers_under_evictions_and_resizes(case, seed, horizon):
    controller = lambda: RandomEvictions(seed)  # noqa: E731
    assert_same(*both(build(case), "2x4c8g", controller=controller, horizon=horizon))


def test_loop_grows_the_workload_table_where_the_handlers_do():
    # 3000 small components at once: the 1024 rows the table starts with are outgrown twice, in
    # the middle of an admission pass, and the rows handed out must be the same.
    comps = [(0.01, 0.01, 600, i < 500, 0, 0) for i in range(3000)]
    wl = tiny_workload([(0.0, comps), (10.0, comps[:1500]), (20.0, [(1, 1, 50, True, 0, 0)])])
    fast, slow = both(wl, "2x64c256g")
    assert len(fast.state.wt) == len(slow.state.wt) > 3000
    assert_same(fast, slow)


def test_loop_equals_the_handlers_on_real_usage():
    jobs, shapes = default_stores()
    wl = build_workload(WorkloadSpec(n_apps=300, seed=3, horizon=300 * 120.0), jobs, shapes)[0]
    for placement in ("best-fit", "first-fit", "random-fit"):
        assert_same(*both(wl, "4x32c128g", placement))


@pytest.mark.parametrize("placement", ["tetris", "best-fit:1,first-fit:1", "best-fit>first-fit"])
def test_placers_without_one_score_kernel_run_the_handlers(placement):
    wl = tiny_workload([(0.0, [(1, 1, 100, True, 0, 0)])])
    sim = Simulator(wl, HostTable.parse("2x4c8g"), Reservation(), build_placer(placement)).run()
    assert sim._binding is None and sim.state.app_state.tolist() == [2]
