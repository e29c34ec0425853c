"""Usage ratios measured on tasks with their own limits, and shapes calibrated to them."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_stores import write_store

from reclaim.core.grouped import GroupedArray
from reclaim.errors import TraceError
from reclaim.workload.builder import (
    WorkloadSpec,
    build_workload,
    default_pairing_store,
    default_stores,
)
from reclaim.workload.pairing import calibrate_shapes, measure_ratios

NORMALISED = {"cpu": "normalised", "mem": "normalised", "time": "s"}


def limits_store(path, tasks):
    """``tasks``: id -> (cpu_limit, mem_limit, [(cpu, mem), ...]) in normalised units."""
    workloads = [
        {"id": i, "instances": 1, "cpu_request": c, "mem_request": m}
        for i, (c, m, _) in tasks.items()
    ]
    usage = [
        (i, 300.0 * k, cu, mu)
        for i, (_, _, rows) in tasks.items()
        for k, (cu, mu) in enumerate(rows)
    ]
    return write_store(path, NORMALISED, workloads, usage)


def test_ratios_are_mean_and_peak_over_each_tasks_own_limit(tmp_path):
    store = limits_store(
        tmp_path / "g",
        {
            "a": (0.1, 0.2, [(0.02, 0.15), (0.06, 0.17), (0.04, 0.16)]),
            "b": (0.5, 0.1, [(0.25, 0.09)]),
            "c": (0.0, 0.1, [(0.01, 0.05)]),  # no CPU limit: no ratio
        },
    )
    ratios = measure_ratios(store)
    assert ratios.skipped_no_request == 1
    np.testing.assert_allclose(ratios.mean, [[0.4, 0.8], [0.5, 0.9]])
    np.testing.assert_allclose(ratios.peak, [[0.6, 0.85], [0.5, 0.9]])


def test_percent_stores_cannot_pair(tmp_path):
    units = {"cpu": "percent", "mem": "percent", "time": "s"}
    store = write_store(tmp_path / "p", units, [{"id": "a", "instances": 1}], [("a", 0, 1, 1)])
    with pytest.raises(TraceError, match="percent"):
        measure_ratios(store)


def test_calibration_moves_mean_and_peak_and_keeps_the_pattern(tmp_path):
    # One task: CPU mean 0.4 peak 0.9; memory mean 0.8, peak 1.2 (above its limit: lowered to 1).
    store = limits_store(tmp_path / "g", {"a": (1.0, 1.0, [(0.2, 0.4), (0.9, 1.2), (0.1, 0.8)])})
    ratios = measure_ratios(store)
    shape = np.array([[0.1, 0.1], [0.3, 0.1], [0.2, 0.1], [0.0, 0.1]], np.float32)
    shapes = GroupedArray(shape, np.array([0, 4]))
    out, report = calibrate_shapes(shapes, ratios, np.random.default_rng(0))
    cpu, mem = out.data[:, 0].astype(float), out.data[:, 1].astype(float)
    # CPU: mean 0.15 -> 0.4, max 0.3 -> 0.9, gain (0.9 - 0.4) / 0.15; the dip to 0 would go to
    # 0.4 - 0.5 and is raised to 0.
    gain = 0.5 / 0.15
    np.testing.assert_allclose(cpu, [0.4 - 0.05 * gain, 0.9, 0.4 + 0.05 * gain, 0.0], atol=1e-6)
    assert report.samples_raised == (1, 0)
    # A constant memory shape becomes the task's mean.
    np.testing.assert_allclose(mem, [0.8] * 4, atol=1e-6)
    assert report.peaks_lowered == (0, 1)
    assert np.argmax(cpu) == 1 and np.argmin(cpu) == 3  # same order in time


def test_builder_pairs_with_the_shipped_google2019_tasks_deterministically():
    jobs, shapes = default_stores()
    spec = WorkloadSpec(n_apps=30, seed=4)
    a, report = build_workload(spec, jobs, shapes, default_pairing_store())
    b, _ = build_workload(spec, jobs, shapes, default_pairing_store())
    plain, _ = build_workload(spec, jobs, shapes)
    assert np.array_equal(a.shapes.data, b.shapes.data)
    # Pairing changes the shapes' levels only: the same jobs, arrivals and shape draws.
    assert np.array_equal(a.arrival, plain.arrival) and np.array_equal(a.shape, plain.shape)
    cal = report.calibration
    assert cal is not None and len(cal.ratios.mean) >= 30
    # Real long-running tasks use far more of their memory limit than the raw shapes do.
    raw_mem = plain.shapes.data[:, 1].mean()
    assert cal.mean_share[1] > 0.6 > raw_mem
    assert 0.2 < cal.mean_share[0] < 0.6
