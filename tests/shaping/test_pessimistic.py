"""Algorithm 1: core before elastic, whole applications preempted, youngest elastic first."""

from __future__ import annotations

import numpy as np
import pytest
from hand_views import exact_forecast, hand_view

from reclaim.core.types import Status
from reclaim.shaping._kernels import pessimistic_fit, pessimistic_fit_reference
from reclaim.shaping.pessimistic import Pessimistic, resource_axes


def decide(view, mean):
    return Pessimistic(k1=0.0, k2=0.0, grace_s=0.0).decide(view, exact_forecast(view, mean))


def test_an_application_whose_core_no_longer_fits_is_preempted_whole():
    # host 0 has 4 cores: app 0 (first in FIFO order) now needs 3, app 1's core needs 2 -> out
    view = hand_view(
        [
            (0, 0, True, 0.0, (4.0, 2.0)),
            (1, 0, True, 0.0, (4.0, 2.0)),
            (1, 1, False, 0.0, (1.0, 1.0)),  # app 1's elastic row on another host goes too
        ]
    )
    d = decide(view, [[3.0, 1.0], [2.0, 1.0], [0.5, 0.5]])
    assert sorted(d.evict.tolist()) == [1, 2]
    assert d.resize_rows.tolist() == [0] and d.resize_limit.tolist() == [[3.0, 1.0]]


def test_elastic_components_are_preempted_youngest_first():
    view = hand_view(
        [
            (0, 0, True, 0.0, (1.0, 1.0)),
            (0, 0, False, 100.0, (2.0, 1.0)),  # oldest elastic
            (0, 0, False, 300.0, (2.0, 1.0)),  # youngest elastic
            (0, 0, False, 200.0, (2.0, 1.0)),
        ]
    )
    # 4 cores: core takes 1, elastic rows 1.4 each: the two oldest fit (3.8), the youngest not
    d = decide(view, [[1.0, 1.0], [1.4, 1.0], [1.4, 1.0], [1.4, 1.0]])
    assert d.evict.tolist() == [2]
    assert sorted(d.resize_rows.tolist()) == [1, 3]  # row 0 keeps its limit, which fits


def test_on_memory_alone_a_cpu_overflow_preempts_nothing():
    # the paper's simulator tests memory only: two cores of 3 on a 4-core host both stay
    view = hand_view([(0, 0, True, 0.0, (4.0, 2.0)), (1, 0, True, 0.0, (4.0, 2.0))])
    forecast = exact_forecast(view, [[3.0, 1.0], [3.0, 1.0]])
    both = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0).decide(view, forecast)
    memory = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0, fit_on="mem").decide(view, forecast)
    assert both.evict.tolist() == [1]
    assert memory.evict.tolist() == [] and sorted(memory.resize_rows.tolist()) == [0, 1]


def test_fit_on_names_resources_or_fails():
    assert resource_axes("mem") == [1] and resource_axes(" cpu , mem") == [0, 1]
    with pytest.raises(ValueError, match="gpu"):
        resource_axes("mem,gpu")


def test_fifo_order_decides_who_stays():
    view = hand_view([(1, 0, True, 0.0, (3.0, 1.0)), (0, 0, True, 500.0, (3.0, 1.0))])
    d = decide(view, [[3.0, 1.0], [3.0, 1.0]])
    assert d.evict.tolist() == [0]  # app 1 arrived later: it goes, although it started earlier


def test_compiled_pass_matches_the_reference_on_random_states():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, hosts = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        app = np.sort(rng.integers(0, 8, n))
        core = np.zeros(n, bool)
        for a in np.unique(app):  # core rows first within each application
            rows = np.flatnonzero(app == a)
            core[rows[: int(rng.integers(0, len(rows) + 1))]] = True
        host = rng.integers(0, hosts, n).astype(np.int32)
        need = rng.uniform(0, 3, (n, 2)).astype(np.float32).astype(np.float64)
        capacity = np.tile([8.0, 16.0], (hosts, 1))
        got = pessimistic_fit(host, app, core, need, capacity)
        want = pessimistic_fit_reference(host, app, core, need, capacity)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_with_an_oracle_pessimistic_never_fails_where_optimistic_does(make_workload):
    """Two hosts of 8 GiB. Each application's single core component asks 4 GiB and uses 0.5 GiB
    for its first hour, then 3.5 GiB. Shaped small, more of them are admitted than the hosts can
    hold once they grow; then optimistic lets the OOM killer fail applications, pessimistic
    preempts them before they fail."""
    from reclaim.sim.run import RunSettings, replay

    shape = np.array([[0.1, 1 / 8]] * 12 + [[0.1, 7 / 8]] * 36, np.float32)
    apps = [(0.0, [(1.0, 4.0, 4 * 3600.0, True, 0, 0)]) for _ in range(8)]
    wl = make_workload(apps, shapes=[shape])
    runs = {
        c: replay(wl, RunSettings(hosts="2x8c8g", controller=c, forecaster="oracle"))
        for c in ("optimistic", "pessimistic")
    }
    assert runs["pessimistic"].summary["failures"] == 0
    assert runs["pessimistic"].summary["preemptions"] > 0
    assert runs["optimistic"].summary["failures"] > 0
    for r in runs.values():
        assert r.summary["apps_done"] == 8
    assert Status.OOM  # the failure the optimistic run counts
