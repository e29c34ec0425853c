"""The simulator's state: one object that the simulator, its view and its actuator share."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.tables import HostTable
from reclaim.core.types import Decisions, R
from reclaim.placement import build_placer
from reclaim.sim.simulator import Simulator
from reclaim.sim.state import FIRST_ROWS, QUEUED, WAITING, SimState, app_totals
from tiny_workloads import tiny_workload

TWO_APPS = [
    (0.0, [(1, 2, 900, True, 0, 0), (1, 1, 900, False, 0, 0)]),
    (60.0, [(2, 2, 600, True, 0, 0)]),
]


def fresh_state() -> SimState:
    state = SimState(tiny_workload(TWO_APPS), HostTable.parse("2x4c8g"))
    state.reset()
    return state


def test_reset_is_time_zero_with_nothing_arrived_and_every_row_free():
    state = SimState(tiny_workload(TWO_APPS), HostTable.parse("2x4c8g"))
    state.hosts.allocated[:] = 3.0  # a previous run's ledger is cleared
    state.reset()
    assert state.now == 0.0 and state.period == 300.0
    assert state.app_state.tolist() == [WAITING, WAITING]
    assert state.n_core.tolist() == [1, 1] and state.next_elastic.tolist() == [1, 3]
    assert state.core_total.tolist() == [[1.0, 2.0], [2.0, 2.0]]
    assert np.isinf(state.min_elastic[1]).all() and state.min_elastic[0].tolist() == [1.0, 1.0]
    assert len(state.wt) == FIRST_ROWS and state.cluster_empty()
    assert not state.hosts.allocated.any() and len(state.running_rows()) == 0
    assert not state.queue and QUEUED not in state.app_state


def test_grow_keeps_every_row_and_frees_the_new_ones_on_top_of_the_stack():
    state = fresh_state()
    taken = state.free_rows[state.free_top - 3 : state.free_top][::-1].copy()  # pop three
    state.free_top -= 3
    state.wt.host[taken] = 1
    state.remaining[taken] = [5.0, 6.0, 7.0]
    state.shape_len[taken] = 9
    before = state.free_rows[: state.free_top].copy()
    state.grow(10)
    assert len(state.wt) == 2 * FIRST_ROWS
    for name in ("remaining", "since", "rate", "epoch", "shape_base", "shape_len", "shape_offset"):
        assert len(getattr(state, name)) == 2 * FIRST_ROWS, name
    assert (
        state.remaining[taken].tolist() == [5.0, 6.0, 7.0] and (state.shape_len[taken] == 9).all()
    )
    assert state.wt.host[taken].tolist() == [1, 1, 1]
    free = state.free_rows[: state.free_top]
    assert np.array_equal(free[: len(before)], before)  # the old stack, then the new rows
    assert sorted(free.tolist()) == sorted(set(range(2 * FIRST_ROWS)) - set(taken.tolist()))
    assert free[-1] == FIRST_ROWS  # the lowest new row is popped first
    assert not state.cluster_empty()


def test_running_rows_are_cached_until_rows_move():
    state = fresh_state()
    state.wt.host[[4, 2]] = 0
    first = state.running_rows()
    assert first.tolist() == [2, 4] and state.running_rows() is first
    state.wt.host[7] = 1
    assert state.running_rows() is first  # not re-read: nothing said rows moved
    state.rows_moved()
    assert state.running_rows().tolist() == [2, 4, 7]


class Watch:
    """A controller that, at its first tick, checks that its view reads the simulator's own state
    object, and evicts one row (the actuator's work lands in that state)."""

    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def __init__(self) -> None:
        self.sim: Simulator | None = None
        self.seen: dict = {}

    def decide(self, view, forecast):
        if self.seen:
            return Decisions()
        state = self.sim.state
        self.seen["same"] = (
            view.workloads is state.wt and view.hosts is state.hosts and view.now == state.now
        )
        self.seen["running"] = view.running.tolist()
        return Decisions(evict=view.running[:1])


def test_view_and_actuator_share_the_simulators_state_and_evictions_reach_it():
    controller = Watch()
    sim = Simulator(
        tiny_workload(TWO_APPS), HostTable.parse("2x4c8g"), controller, build_placer("best-fit")
    )
    controller.sim = sim
    sim.run()
    assert controller.seen["same"]
    assert controller.seen["running"]  # a running row was evicted
    assert sim.state.app_preemptions[0] == 1  # the core row failed its application once
    assert sim.state.app_state.tolist() == [2, 2]  # and both finished in the end
    assert sim.state.finished == 2 and sim.state.cluster_empty()


@settings(max_examples=40)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1), st.integers(1, 50))
def test_app_totals_block_by_block_equal_whole_workload_numpy(n_apps, seed, block):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, int(rng.choice([3, 40, 400])), n_apps)
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    core = rng.random(indptr[-1]) < rng.random()
    request = (rng.random((indptr[-1], R)) * rng.choice([1.0, 1000.0])).astype(np.float32)
    expected = (
        np.add.reduceat(core.astype(np.int64), indptr[:-1]),
        np.add.reduceat(request * core[:, None], indptr[:-1], axis=0),
        np.minimum.reduceat(np.where(core[:, None], np.inf, request), indptr[:-1], axis=0),
    )
    for got, want in zip(app_totals(indptr, core, request, block), expected, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
