"""The control step's compiled parts against the numpy they replace, bit for bit, and a real run
of the paper's world with every compiled part swapped for its numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.types import R, Status
from reclaim.shaping import _kernels as shaping_kernels
from reclaim.sim import _step_kernels
from tiny_workloads import tiny_paper_world


@settings(max_examples=60)
@given(st.integers(0, 60), st.booleans(), st.sampled_from([0.0, 600.0]), st.integers(0, 2**32 - 1))
def test_oracle_forecast_equals_numpy(n, subset, grace, seed):
    rng = np.random.default_rng(seed)
    running = np.sort(rng.choice(100, n, replace=False)).astype(np.int64)
    rows = running[rng.random(n) < 0.6] if subset else running
    demand = (rng.random((n, R)) * 3).astype(np.float32)
    start = rng.choice([0.0, 400.0, 560.0, 600.0, 1000.0], 100)
    args = (rows, running, demand, 1000.0, 60.0, grace, start)
    got, expected = (
        _step_kernels.oracle_forecast(*args),
        _step_kernels.oracle_forecast_reference(*args),
    )
    for a, b in zip(got[:3], expected[:3], strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    assert got[3] == expected[3]


@settings(max_examples=80)
@given(st.integers(0, 150), st.booleans(), st.integers(0, 2**32 - 1))
def test_apply_resizes_equals_numpy(n, refuse_whole, seed):
    # many rows on few hosts (summed per host) or few (one by one); dead and repeated rows;
    # raises that overflow their host on one resource or both
    rng = np.random.default_rng(seed)
    host = rng.integers(-1, 4, 200).astype(np.int32)
    wt_limit = (rng.random((200, R)) * 2).astype(np.float32)
    rows = rng.integers(0, 200, n).astype(np.int64)
    limit = (wt_limit[rows] * rng.choice([0.5, 1.0, 1.5, 3.0], (n, R))).astype(np.float32)
    capacity = np.full((4, R), 8.0)
    allocated = rng.random((4, R)) * 8
    states = []
    for apply in (_step_kernels.apply_resizes, _step_kernels.apply_resizes_reference):
        a, w = allocated.copy(), wt_limit.copy()
        status = np.full(n + 3, Status.OK, np.int8)
        shrank = apply(rows, limit, host, w, a, capacity, refuse_whole, status)
        states.append((a, w, status, shrank))
    (a, w, status, shrank), (ea, ew, estatus, eshrank) = states
    assert np.array_equal(a, ea) and np.array_equal(w, ew)
    assert np.array_equal(status, estatus) and shrank == eshrank


@pytest.mark.parametrize("label", ["optimistic/oracle", "pessimistic/oracle"])
def test_a_paper_world_run_is_the_same_with_the_numpy_references(label, monkeypatch):
    from reclaim.sim.run import replay

    workload, run_settings = tiny_paper_world(label)
    compiled = replay(workload, run_settings)
    monkeypatch.setattr(_step_kernels, "oracle_forecast", _step_kernels.oracle_forecast_reference)
    monkeypatch.setattr(_step_kernels, "apply_resizes", _step_kernels.apply_resizes_reference)
    monkeypatch.setattr(
        "reclaim.shaping.shaper.shaped_targets", shaping_kernels.shaped_targets_reference
    )
    monkeypatch.setattr(
        "reclaim.shaping.shaper.changed_limits", shaping_kernels.changed_limits_reference
    )
    monkeypatch.setattr("reclaim.shaping.pessimistic.fifo_fit", shaping_kernels.fifo_fit_reference)
    reference = replay(workload, run_settings)
    assert compiled.stats.ticks > 1000 and compiled.stats.forecasts > 0
    assert compiled.apps.equals(reference.apps)
    assert compiled.timeline.equals(reference.timeline)
    assert compiled.summary == reference.summary
