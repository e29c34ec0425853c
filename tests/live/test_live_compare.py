"""Live against simulated: the replay uses the live run's settings, and the table pairs each
application with itself."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reclaim.live.compare import (
    median_change,
    replay_settings,
    seed_changes,
    side_by_side,
    summary_rows,
)
from reclaim.live.scenario import LiveScenario


def test_replay_settings_match_the_live_modes():
    sc = LiveScenario()
    base = replay_settings(sc, "reservation")
    assert (base.controller, base.forecaster, base.hosts) == ("reservation", None, "1x8c64g")
    shaped = replay_settings(sc, "shaped")
    assert shaped.controller == "pessimistic" and shaped.forecaster == "gp-exp"
    assert shaped.controller_params == {
        "k1": 0.05,
        "k2": 3.0,
        "grace_s": 600.0,
        "soft_memory_limits": True,  # the agent writes soft limits
    }


def _apps(turnaround, state=("done", "done", "done"), slack=None):
    n = len(turnaround)
    return pl.DataFrame(
        {
            "app": np.arange(n, dtype=np.int32),
            "state": list(state),
            "turnaround": np.asarray(turnaround, float),
            "slack_mem": np.full(n, 0.2) if slack is None else np.asarray(slack, float),
        }
    )


def test_side_by_side_pairs_applications():
    live = _apps([100.0, 200.0, 400.0])
    sim = _apps([90.0, 210.0, 300.0], state=("done", "done", "running"))
    table = side_by_side(live, sim, "shaped")
    assert table["turnaround_diff"].to_list() == [10.0, -10.0, 100.0]
    rows = summary_rows(table).filter(pl.col("metric") == "turnaround").row(0, named=True)
    # the third application did not finish in the simulator: compared over the first two
    assert rows["apps"] == 2
    assert rows["live_median"] == 150.0 and rows["sim_median"] == 150.0
    assert rows["diff_median"] == 0.0


def test_median_change_and_its_interval():
    base = _apps([100.0, 200.0, 300.0], slack=[0.2, 0.4, 0.6])
    half = _apps([100.0, 200.0, 300.0], slack=[0.1, 0.2, 0.3])
    change, low, high = median_change(base, half, "slack_mem")
    assert change == pytest.approx(-0.5)
    assert low == pytest.approx(-0.5) and high == pytest.approx(-0.5)  # exactly halved, always
    same = median_change(base, base, "turnaround")
    assert same == (0.0, 0.0, 0.0)


def test_seed_changes_are_deterministic():
    sc = LiveScenario(n_apps=30)
    first = seed_changes(sc, 2)
    assert first["seed"].to_list() == [0, 1]
    assert np.isfinite(first["slack_mem"].to_numpy()).all()
    assert first.equals(seed_changes(sc, 2))
