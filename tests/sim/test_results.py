"""A run's results: the policies' own figures reach the summary by their declaration."""

from __future__ import annotations

import pytest

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.tables import HostTable
from reclaim.core.types import Decisions
from reclaim.placement import build_placer
from reclaim.sim.results import SimResult
from reclaim.sim.simulator import Simulator
from tiny_workloads import tiny_workload


class Tally:
    """Decides nothing; declares that it reports, and reports how often it was asked."""

    __capabilities__ = ControllerCapabilities(needs_forecast=False, reports=True)
    failure_target = 0.1  # a shaper's setting: only the declaration makes a policy report

    def __init__(self) -> None:
        self.calls = 0

    def decide(self, view, forecast):
        self.calls += 1
        return Decisions()

    def run_summary(self) -> dict[str, float]:
        return {"tally_calls": float(self.calls)}


class Undeclared(Tally):
    __capabilities__ = ControllerCapabilities(needs_forecast=False)


class ReportsNothing:
    __capabilities__ = ControllerCapabilities(needs_forecast=False, reports=True)

    def decide(self, view, forecast):
        return Decisions()


def summary(controller) -> dict[str, float]:
    workload = tiny_workload([(0.0, [(1, 1, 900, True, 0, 0)])])
    sim = Simulator(workload, HostTable.parse("1x4c8g"), controller, build_placer("best-fit"))
    return SimResult.from_simulator(sim.run(), {}).summary


def test_a_policy_that_declares_reports_adds_its_figures_and_others_add_none():
    tally = Tally()
    assert summary(tally)["tally_calls"] == tally.calls > 0
    quiet = summary(Undeclared())
    assert "tally_calls" not in quiet and "failure_target" not in quiet


def test_a_declared_report_that_is_missing_is_an_error():
    with pytest.raises(AttributeError, match="run_summary"):
        summary(ReportsNothing())
