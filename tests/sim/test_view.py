"""The simulator's view and actuator: what a controller reads, and how its decisions land."""

from __future__ import annotations

import numpy as np

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.tables import HostTable
from reclaim.core.types import Decisions, Status
from reclaim.placement import build_placer
from reclaim.sim.simulator import SimRules, Simulator
from tiny_workloads import tiny_workload


class Probe:
    """At the third tick, hands the view and actuator to ``check`` and returns no decisions."""

    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def __init__(self, check) -> None:
        self.check = check
        self.ticks = 0

    def decide(self, view, forecast):
        self.ticks += 1
        if self.ticks == 3:
            self.check(view, self.actuator)
        return Decisions()


def probe(check, apps, shapes=None, rules=SimRules()):  # noqa: B008 - frozen
    controller = Probe(check)
    sim = Simulator(
        tiny_workload(apps, shapes),
        HostTable.parse("1x4c8g"),
        controller,
        build_placer("best-fit"),
        horizon=1200,
        rules=rules,
    )
    controller.actuator = sim.actuator
    sim.run()
    assert controller.ticks >= 3


def test_a_resize_that_would_overflow_its_host_is_refused_and_changes_nothing():
    seen = {}

    def check(view, actuator):
        rows = view.running
        before = view.hosts.allocated.copy()
        grow = Decisions(rows[:1], [[3.5, 1.0]])  # the other component holds 1 core of 4
        seen["grow"] = actuator.apply(grow).tolist()
        seen["unchanged"] = np.array_equal(view.hosts.allocated, before)
        shrink = Decisions(rows[:1], [[0.5, 1.0]])
        seen["shrink"] = actuator.apply(shrink).tolist()
        seen["allocated"] = view.hosts.allocated[0].tolist()
        seen["limit"] = view.workloads.limit[rows[0]].tolist()
        free_row = int(np.flatnonzero(view.workloads.host < 0)[0])
        seen["free"] = actuator.apply(Decisions([free_row], [[1.0, 1.0]])).tolist()

    probe(check, [(0.0, [(1, 2, 5000, True, 0, 0), (1, 2, 5000, True, 0, 0)])])
    assert seen["grow"] == [Status.UNSCHEDULABLE] and seen["unchanged"]
    assert seen["shrink"] == [Status.OK]
    assert seen["allocated"] == [1.5, 3.0] and seen["limit"] == [0.5, 1.0]
    assert seen["free"] == [Status.UNSCHEDULABLE]  # a row no component holds


def test_a_raise_refused_per_resource_keeps_the_raise_that_fits():
    seen = {}

    def check(view, actuator):
        rows = view.running
        # CPU to 3.5 overflows the 4-core host (the other component holds 1); memory to 3 fits
        seen["status"] = actuator.apply(Decisions(rows[:1], [[3.5, 3.0]])).tolist()
        seen["limit"] = view.workloads.limit[rows[0]].tolist()
        seen["allocated"] = view.hosts.allocated[0].tolist()

    two = [(0.0, [(1, 2, 5000, True, 0, 0), (1, 2, 5000, True, 0, 0)])]
    probe(check, two, rules=SimRules(refuse_whole_resize=False))
    assert seen["status"] == [Status.UNSCHEDULABLE]  # not all of it was done
    assert seen["limit"] == [1.0, 3.0] and seen["allocated"] == [2.0, 5.0]
    probe(check, two)  # reclaim's rule: the whole raise is refused
    assert seen["limit"] == [1.0, 2.0] and seen["allocated"] == [2.0, 4.0]


def test_an_eviction_frees_the_row_and_its_room():
    seen = {}

    def check(view, actuator):
        rows = view.running.copy()
        seen["status"] = actuator.apply(Decisions(evict=rows[1:])).tolist()
        seen["running"] = view.running.tolist()
        seen["allocated"] = view.hosts.allocated[0].tolist()

    probe(check, [(0.0, [(1, 2, 5000, True, 0, 0)]), (0.0, [(1, 2, 5000, False, 0, 0)])])
    assert seen["status"] == [Status.OK]
    assert seen["running"] == [0] and seen["allocated"] == [1.0, 2.0]


def test_usage_history_is_the_demand_since_start_oldest_first_at_most_window():
    seen = {}

    def check(view, actuator):
        rows = view.running
        seen["all"] = view.usage_history(rows, 10)
        seen["last"] = view.usage_history(rows, 1)

    shape = [[[0.25, 0.5], [0.5, 0.5], [0.75, 0.5]]]
    probe(check, [(0.0, [(2, 4, 5000, True, 0, 0)])], shapes=shape)
    # third tick (t = 600 s): the samples of the intervals at 0 s and 300 s
    assert seen["all"].lengths.tolist() == [2]
    assert seen["all"].data.tolist() == [[0.5, 2.0], [1.0, 2.0]]
    assert seen["last"].data.tolist() == [[1.0, 2.0]]
