"""Every registered controller passes the same checks (reclaim.testing.controllers)."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim import registry
from reclaim.core.types import Decisions
from reclaim.testing.controllers import check_controller


@pytest.mark.parametrize("name", registry.names("controller"))
def test_registered_controller_conforms(name):
    check_controller(name)


class EvictsIdleRows(registry.factory("controller", "reservation")):
    """Evicts every running row, including ones it also resizes."""

    def decide(self, view, forecast=None):
        rows = view.running
        return Decisions(rows, view.workloads.request[rows], rows)


class RemembersTheClock(registry.factory("controller", "reservation")):
    """Decides from a counter kept in the class: two instances disagree."""

    calls = 0

    def decide(self, view, forecast=None):
        type(self).calls += 1
        rows = view.running[: type(self).calls % 3]
        return Decisions(rows, np.ones((len(rows), 2)))


class LendsItsSlack(registry.factory("controller", "reservation")):
    """Offers every running row's request for lending, which no shaping actuator carries out."""

    def decide(self, view, forecast=None):
        rows = view.running
        return Decisions(lend_rows=rows, lend_amount=view.workloads.request[rows])


@pytest.mark.parametrize(
    ("controller", "message"),
    [
        (EvictsIdleRows, "resizes and evicts"),
        (RemembersTheClock, "decides otherwise"),
        (LendsItsSlack, "lend rows"),
    ],
)
def test_the_suite_catches_a_broken_controller(controller, message):
    with pytest.raises(AssertionError, match=message):
        check_controller("broken", controller)
