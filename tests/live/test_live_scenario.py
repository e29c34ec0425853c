"""The live scenario: the paper's section-5 settings on the shipped traces, shapes held to the
agent's period without changing any component's usage."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.live.scenario import LiveScenario, build, hold
from tiny_workloads import tiny_workload


@pytest.fixture(scope="module")
def built():
    return build(LiveScenario())


def test_the_paper_settings(built):
    workload, _ = built
    assert workload.n_apps == 100
    gaps = np.diff(workload.arrival)
    assert np.all(gaps > 0)
    assert 105 < gaps.mean() < 135 and 25 < gaps.std() < 55  # Normal(120 s, 40 s)
    assert np.diff(workload.comp_indptr).max() <= 8
    assert workload.period == 60.0
    # one testbed server fits every application
    assert not workload.never_fits(np.array([[8.0, 64.0]])).any()


def test_build_is_deterministic(built):
    again, _ = build(LiveScenario())
    for field in ("arrival", "request", "work", "core", "shape_offset"):
        np.testing.assert_array_equal(getattr(built[0], field), getattr(again, field))


def test_hold_keeps_usage_at_every_time():
    shape = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], np.float32)
    wl = tiny_workload([(0.0, [(1, 1, 900, True, 0, 1)])], [shape], period=300.0)
    held = hold(wl, 60.0)
    for t in np.arange(0, 1800, 30.0):
        k_old = (wl.shape_offset[0] + int(t // 300)) % 3
        k_new = (held.shape_offset[0] + int(t // 60)) % 15
        np.testing.assert_array_equal(wl.shapes.data[k_old], held.shapes.data[k_new])


def test_hold_needs_a_divisor():
    wl = tiny_workload([(0.0, [(1, 1, 900, True, 0, 0)])], period=300.0)
    with pytest.raises(ReclaimError, match="must divide"):
        hold(wl, 70.0)


def test_scale_maps_the_host_to_the_machine():
    sc = LiveScenario(live_cores=1.6, live_mem_gib=8.0)
    np.testing.assert_allclose(sc.scale, [0.2, 0.125])
    assert sc.hosts == "1x8c64g"
    with pytest.raises(ReclaimError, match="time_factor"):
        LiveScenario(time_factor=0).check()
