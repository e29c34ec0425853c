"""The one control step: forecast only when needed, decide, guard, apply; failures caught or not."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.control import UsageForecast, control_step
from reclaim.core.types import Decisions, Status


class View:
    def __init__(self, rows) -> None:
        self.running = np.asarray(rows, np.int64)


class Halver:
    """Resizes every row to half its forecast; counts its calls."""

    __capabilities__ = ControllerCapabilities()

    def __init__(self) -> None:
        self.calls = 0

    def decide(self, view, forecast):
        self.calls += 1
        return Decisions(forecast.rows, forecast.mean / 2)


class Recorder:
    def __init__(self) -> None:
        self.applied: list[Decisions] = []

    def apply(self, decisions):
        self.applied.append(decisions)
        return np.full(len(decisions), Status.OK, np.int8)


def forecast(rows):
    n = len(rows)
    return UsageForecast(rows, np.full((n, 2), 4.0), np.ones((n, 2)), np.zeros(n, bool))


def broken(rows):
    raise RuntimeError("model diverged")


def test_decisions_reach_the_actuator_and_their_status_comes_back():
    controller, actuator = Halver(), Recorder()
    step = control_step(View([3, 5]), controller, forecast, actuator)
    assert step.rows.tolist() == [3, 5] and step.failure is None
    assert actuator.applied[0].resize_limit.tolist() == [[2, 2], [2, 2]]
    assert step.status.tolist() == [Status.OK, Status.OK]
    assert set(step.seconds) == {"forecast", "decide", "apply"}


def test_nothing_runs_without_rows():
    controller, actuator = Halver(), Recorder()
    step = control_step(View([]), controller, broken, actuator)
    assert controller.calls == 0 and actuator.applied == [] and len(step.status) == 0


def test_a_caught_failure_leaves_the_guard_to_decide():
    controller, actuator = Halver(), Recorder()
    seen = []

    def guard(rows, decisions, predicted, failure):
        seen.append((len(decisions), predicted, failure[0], str(failure[1])))
        return Decisions(evict=rows[:1])

    step = control_step(View([1, 2]), controller, broken, actuator, guard, catch=True)
    assert controller.calls == 0  # no forecast, no decision
    assert seen == [(0, None, "forecaster", "model diverged")]
    assert actuator.applied[0].evict.tolist() == [1] and step.failure[0] == "forecaster"


def test_an_uncaught_failure_propagates():
    with pytest.raises(RuntimeError, match="diverged"):
        control_step(View([1]), Halver(), broken, Recorder())
