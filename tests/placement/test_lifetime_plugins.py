"""LA-Binary, LAS and LAVA: bucketing, host classes, LAVA's state machine, the view contract."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lifetime_pools import HOUR, Guess, vm_table
from reclaim.errors import ReclaimError
from reclaim.lifetime.replay import PoolView
from reclaim.placement import CycleState, Placer, build_placer
from reclaim.placement.framework import WeightedPlugin
from reclaim.placement.plugins.best_fit import BestFit
from reclaim.placement.plugins.lifetime import (
    EMPTY,
    LAS,
    OPEN,
    RECYCLING,
    LABinary,
    Lava,
    lifetime_class,
    temporal_cost,
)

MIN = 60.0


def test_temporal_cost_buckets_are_closed_on_the_left():
    minutes = [-5, 0, 29, 30, 59, 60, 70, 90, 119, 120, 180, 240, 360, 720, 1440, 10079]
    assert temporal_cost(np.array(minutes) * MIN).tolist() == [
        0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9, 9,
    ]  # fmt: skip
    assert temporal_cost(np.array([70 * MIN]))[0] == 2  # the paper's example
    assert temporal_cost(np.array([168 * HOUR, 5000 * HOUR, np.inf])).tolist() == [10, 10, 10]


def test_lifetime_classes():
    hours = [0, 0.99, 1, 9.99, 10, 99, 100, 999, 1000, 5000, np.inf]
    assert lifetime_class(np.array(hours) * HOUR).tolist() == [1, 1, 2, 2, 3, 3, 4, 4, 4, 4, 4]


def _state(view, items):
    """The CycleState of placing ``items`` now, on cores and memory (the pools have no GPU)."""
    items = np.asarray(items, np.int64)
    return CycleState(
        view.capacity[:, :2], view.free[:, :2], view.up, view.vms.request[items, :2], view, items
    )


@pytest.mark.parametrize("plugin", [LABinary(), LAS(), Lava()])
def test_plugins_without_a_view_raise_a_clear_error(plugin):
    cap = np.array([[8.0, 32.0]])
    state = CycleState(cap, cap.copy(), np.ones(1, bool), np.array([[1, 1]], np.float32))
    with pytest.raises(ReclaimError, match="pool's state"):
        plugin.score(state, np.ones((1, 1), bool))
    with pytest.raises(ReclaimError, match="pool's state"):
        Placer([WeightedPlugin(plugin)]).place(cap, cap.copy(), np.ones(1, bool), state.request)


def test_no_compiled_kernel_for_a_plugin_that_needs_the_view():
    class ViewBestFit(BestFit):
        __capabilities__ = replace(BestFit.__capabilities__, needs_view=True)

    assert Placer([WeightedPlugin(BestFit())])._kernel is not None
    assert Placer([WeightedPlugin(ViewBestFit())])._kernel is None


CAP4 = np.tile([10.0, 100.0, 0.0], (4, 1))


def test_la_binary_classes_hosts_by_initial_predictions():
    now = 20 * HOUR
    # host 0: predicted 10 h, up 1 h -> 9 h left: long. host 1: predicted 10 h but up 11 h, past
    # its predicted exit -> 0 left: short (one-shot: never repredicted). host 2: 1 h VM up 10 min:
    # short. host 3: empty. Rows 3 (30 min) and 4 (5 h) arrive now.
    arrival = [now - HOUR, now - 11 * HOUR, now - 10 * MIN, now, now]
    vms = vm_table(arrival, [np.inf] * 5, cpu=1, window=(0.0, 100 * HOUR))
    guess = Guess([10 * HOUR, 10 * HOUR, HOUR, 30 * MIN, 5 * HOUR], later=[1e9] * 5)
    view = PoolView.with_placements(vms, CAP4, np.array([0, 1, 2, -1, -1]), now, guess)
    plugin = LABinary()
    raw = plugin.score(_state(view, [3, 4]), np.ones((2, 4), bool))
    assert raw.tolist() == [[1, 2, 2, 0], [2, 1, 1, 0]]
    order = build_placer("la-binary>best-fit").host_order(_state(view, [4]))
    assert order.tolist() == [0, 1, 2, 3]


def test_las_uses_repredicted_host_exits():
    now = 10 * HOUR
    # host 0: VM with 10 h left; host 1: VM first predicted 30 min, repredicted at its uptime to
    # 1 h more; host 2: empty. The new VM lives 2 h 10 min.
    vms = vm_table([now - HOUR, now - HOUR, now], [np.inf] * 3, cpu=1, window=(0.0, 99 * HOUR))
    guess = Guess([11 * HOUR, 30 * MIN, 130 * MIN], later=[10 * HOUR, HOUR, 0])
    view = PoolView.with_placements(vms, CAP4[:3], np.array([0, 1, -1]), now, guess)
    raw = LAS().score(_state(view, [2]), np.ones((1, 3), bool))
    # dT: host 0 exits later -> 0; host 1: 130 - 60 = 70 min -> 2; empty: 130 min -> 4
    assert raw.tolist() == [[0, -2, -4]]
    assert build_placer("las>best-fit").host_order(_state(view, [2])).tolist() == [0, 1, 2]


def test_las_only_repredicts_vms_on_feasible_hosts():
    now = HOUR
    vms = vm_table([0, 0, now], [np.inf] * 3, cpu=[9, 1, 2], window=(0.0, 9 * HOUR))
    calls = []

    class Spy(Guess):
        def remaining(self, v, u):
            calls.append(sorted(np.asarray(v).tolist()))
            return super().remaining(v, u)

    view = PoolView.with_placements(vms, CAP4[:2], np.array([0, 1, -1]), now, Spy([5 * HOUR] * 3))
    state = _state(view, [2])
    feasible = np.array([[False, True]])  # host 0 has 1 core left
    LAS().score(state, feasible)
    assert [1] in calls and all(0 not in c for c in calls)


class Lifecycle:
    """Drives LAVA by hand: place = the placer's choice, bound in the view, then the hooks."""

    def __init__(self, vms, guess, n_hosts=2) -> None:
        self.view = PoolView(vms, np.tile([10.0, 100.0, 0.0], (n_hosts, 1)), guess)
        self.placer = build_placer("lava>las>best-fit")
        self.lava = self.placer.plugins[0].plugin

    def at(self, t):
        self.view.now = t
        return self

    def place(self, vm):
        view = self.view
        host = self.placer.place(
            view.capacity[:, :2], view.free[:, :2].copy(), view.up, view.vms.request[[vm], :2],
            view=view, items=np.array([vm]),
        )[0]  # fmt: skip
        view.bind(vm, int(host))
        self.placer.on_bind(view, vm, int(host))
        return int(host)

    def leave(self, vm):
        for h in self.view.release(vm):
            self.placer.on_exit(self.view, vm, h)

    def host(self, h):
        st = self.lava.hosts(self.view)
        return int(st.state[h]), int(st.cls[h]), float(st.deadline[h]), int(st.residual[h])


def test_lava_state_machine():
    # a, b: predicted 5 h and 8 h (LC2), 5 cores each; c: predicted 30 min (LC1), actually
    # outlives it (a misprediction LAVA must survive); d: 2 h (LC2), e: 30 min (LC1).
    vms = vm_table([0, 0, HOUR, 0, 0], [np.inf] * 5, cpu=[5, 5, 5, 1, 1], window=(0.0, 99 * HOUR))
    guess = Guess([5 * HOUR, 8 * HOUR, 30 * MIN, 2 * HOUR, 30 * MIN])
    run = Lifecycle(vms, guess)
    assert run.at(0).place(0) == 0
    assert run.host(0) == (OPEN, 2, pytest.approx(11 * HOUR), 0)  # deadline 1.1 x 10 h
    assert run.host(1)[:2] == (EMPTY, 0)
    assert run.place(1) == 0  # open host of the VM's class beats the empty one
    assert run.host(0)[0] == RECYCLING and run.host(0)[3] == 2  # 100 % CPU > 90 %: a, b residual
    run.at(HOUR).leave(0)
    assert run.host(0)[3] == 1
    assert run.place(2) == 0  # LC1 goes to the recycling LC2 host
    assert run.host(0)[3] == 1  # c is not residual
    run.at(8 * HOUR).leave(1)  # the last residual VM leaves: class down, c becomes residual
    assert run.host(0) == (RECYCLING, 1, pytest.approx(8 * HOUR + 1.1 * HOUR), 1)
    # c outlives its prediction: past the deadline (9.1 h) the class goes back up.
    run.at(10 * HOUR)
    assert run.host(0) == (RECYCLING, 2, pytest.approx(9.1 * HOUR + 11 * HOUR), 1)
    run.leave(2)
    assert run.host(0) == (EMPTY, 0, np.inf, 0)


def test_lava_tiers():
    # host 0 recycling LC3, host 1 open LC1, host 2 recycling LC2, host 3 empty.
    vms = vm_table([0] * 6, [np.inf] * 6, cpu=[9.5, 1, 9.5, 1, 0.1, 0.1], window=(0.0, 1e7))
    guess = Guess([50 * HOUR, 30 * MIN, 5 * HOUR, 5 * HOUR, 30 * MIN, 500 * HOUR])
    run = Lifecycle(vms, guess, n_hosts=4)
    view = run.view
    for vm, host in [(0, 0), (1, 1), (2, 2)]:
        view.bind(vm, host)
        run.placer.on_bind(view, vm, host)
    assert [run.host(h)[:2] for h in range(4)] == [
        (RECYCLING, 3),
        (OPEN, 1),
        (RECYCLING, 2),
        (0, 0),
    ]
    lava = run.lava
    raw = lava.score(_state(view, [3, 4, 5]), np.ones((3, 4), bool))
    # LC2 VM: recycling LC3 (gap 1) best; LC1 VM: recycling LC2 (gap 1) > recycling LC3 (gap 2)
    # > open LC1; LC4 VM: no tier above "any non-empty"; empty host last for all.
    assert raw.tolist() == [[9, 2, 2, 0], [8, 5, 9, 0], [2, 2, 2, 0]]


def test_lava_state_is_rebuilt_from_a_view_with_running_vms():
    vms = vm_table([0, 0], [np.inf] * 2, cpu=[5, 5], window=(0.0, 1e6))
    view = PoolView.with_placements(
        vms, np.tile([10.0, 100.0, 0.0], (2, 1)), np.array([0, 0]), HOUR, Guess([HOUR * 5] * 2)
    )
    st = Lava().hosts(view)
    assert st.state.tolist() == [RECYCLING, EMPTY] and st.residual.tolist() == [2, 0]
