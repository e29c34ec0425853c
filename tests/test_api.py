"""reclaim.simulate and Sample: names or objects in, the simulator's results out, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import reclaim
from reclaim.errors import ReclaimError

SMALL = {"hosts": "6x32c128g", "sample": reclaim.Sample(apps=40, seed=3)}


def test_names_and_objects_give_the_same_run():
    by_name = reclaim.simulate("pessimistic", "naive", **SMALL)
    controller = reclaim.build("controller", "pessimistic")
    by_object = reclaim.simulate(controller, reclaim.build("forecaster", "naive"), **SMALL)
    assert by_name.summary == by_object.summary
    assert by_name.settings["controller_params"]["k2"] == 3.0
    assert by_name.settings["workload"]["n_apps"] == 40


def test_a_given_workload_is_replayed_as_it_is():
    workload, *_ = SMALL["sample"].build(SMALL["hosts"])
    again = reclaim.simulate("reservation", hosts=SMALL["hosts"], workload=workload)
    assert again.summary == reclaim.simulate("reservation", **SMALL).summary
    assert "workload" not in again.settings


class KeepTheRequest(reclaim.Component):
    """An unregistered controller: every running row back to its request."""

    __capabilities__ = reclaim.ControllerCapabilities(needs_forecast=False)

    def decide(self, view, forecast):
        rows = view.running
        return reclaim.Decisions(rows, view.workloads.request[rows])


def test_an_unregistered_controller_runs_and_is_named_by_its_class():
    mine = reclaim.simulate(KeepTheRequest(), **SMALL)
    base = reclaim.simulate("reservation", **SMALL)
    assert mine.settings["controller"] == "KeepTheRequest"
    assert np.isclose(mine.summary["slack_cpu_mean"], base.summary["slack_cpu_mean"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: reclaim.simulate("pessimistic", **SMALL), "needs a forecaster"),
        (lambda: reclaim.simulate("reservation", "naive", **SMALL), "uses no forecaster"),
        (lambda: reclaim.simulate("nope", **SMALL), "unknown controller 'nope'"),
        (lambda: reclaim.simulate(hosts="bad", sample=SMALL["sample"]), "COUNTxCORESgMEMg"),
        (
            lambda: reclaim.simulate(hosts="6x32c128g", sample=reclaim.Sample(apps=0)),
            "apps: expected",
        ),
        (
            lambda: reclaim.simulate(hosts="6x32c128g", sample=reclaim.Sample(arrival_days=-1)),
            "arrival_days",
        ),
    ],
)
def test_bad_calls_are_one_clear_error(call, message):
    with pytest.raises(ReclaimError, match=message):
        call()
