"""The shapers' compiled kernels against the numpy they replace, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.types import R
from reclaim.shaping._kernels import (
    changed_limits,
    changed_limits_reference,
    fifo_fit,
    fifo_fit_reference,
    fifo_order,
    shaped_targets,
    shaped_targets_reference,
)


def random_forecast_inputs(rng, n, w=80):
    """Targets' inputs with every case the rule tells apart: grace, NaN and inf forecasts,
    fallbacks, failures and OOMs at the limit, forecasts above the request and below zero."""
    rows = np.sort(rng.choice(w, n, replace=False)).astype(np.int64)
    start = rng.choice([0.0, 400.0, 590.0, 600.0, 900.0], w)
    request = (rng.random((w, R)) * 4).astype(np.float32)
    request[rng.random((w, R)) < 0.1] = 0.0
    app = rng.integers(0, 10, w).astype(np.int32)
    component = rng.integers(0, 30, w).astype(np.int64)
    failures = rng.integers(0, 4, 10).astype(np.int32)
    ooms = rng.integers(0, 4, 30).astype(np.uint8)
    mean = rng.normal(1.0, 2.0, (n, R))
    std = rng.random((n, R))
    mean[rng.random((n, R)) < 0.1] = np.nan
    std[rng.random((n, R)) < 0.1] = np.inf
    fallback = rng.random(n) < 0.2
    return rows, start, request, app, component, failures, ooms, mean, std, fallback


@settings(max_examples=60)
@given(
    st.integers(0, 60),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 0.05]),
    st.sampled_from([0.0, 1.0, 3.0]),
    st.booleans(),
)
def test_shaped_targets_equal_numpy(n, seed, k1, k2, on_fallback):
    rng = np.random.default_rng(seed)
    rows, start, request, app, comp, failures, ooms, mean, std, fallback = random_forecast_inputs(
        rng, n
    )
    args = (rows, 1000.0, start, request, app, comp, failures, ooms, mean, std, fallback,
            600.0, k1, k2, 3.0, on_fallback)  # fmt: skip
    target, shaped = shaped_targets(*args)
    expected, expected_shaped = shaped_targets_reference(*args)
    assert np.array_equal(shaped, expected_shaped)
    assert target.dtype == expected.dtype and np.array_equal(target, expected)


@settings(max_examples=40)
@given(st.integers(0, 50), st.integers(0, 2**32 - 1))
def test_changed_limits_are_the_numpy_comparison(n, seed):
    rng = np.random.default_rng(seed)
    limit = rng.integers(0, 3, (70, R)).astype(np.float32)
    rows = rng.choice(70, n, replace=False).astype(np.int64)
    target = limit[rows].astype(np.float64)
    target[rng.random((n, R)) < 0.3] += 1e-9  # lost in float32: still equal
    target[rng.random((n, R)) < 0.2] += 0.5
    keep = rng.random(n) < 0.8
    got, expected = (
        changed_limits(rows, limit, target, keep),
        changed_limits_reference(rows, limit, target, keep),
    )
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@settings(max_examples=60)
@given(
    st.integers(0, 400),
    st.integers(1, 60),
    st.sampled_from([[0, 1], [1]]),
    st.integers(0, 2**32 - 1),
)
def test_fifo_fit_is_lexsort_then_algorithm_1(n, n_apps, axes, seed):
    rng = np.random.default_rng(seed)
    w = n + 10
    rows = np.sort(rng.choice(w, n, replace=False)).astype(np.int64)
    host = rng.integers(0, 4, w).astype(np.int32)
    app = rng.integers(0, n_apps, w).astype(np.int32)
    core = rng.random(w) < 0.3
    start = rng.integers(0, 20, w) * 60.0
    target = (rng.random((n, R)) * 3).astype(np.float32).astype(np.float64)
    capacity = np.full((4, R), 16.0)
    args = (rows, target, host, app, core, start, capacity, np.array(axes, np.int64))
    for a, b in zip(fifo_fit(*args), fifo_fit_reference(*args), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("n", [0, 1, 255, 256, 3000])
@pytest.mark.parametrize("top", [1, 2047, 2048, 2**22, 2**40])
def test_fifo_order_is_lexsort_for_wide_application_ids(n, top):
    # int64 ids of up to four radix digits, where the property test's stay below two
    rng = np.random.default_rng(n + top)
    app = rng.integers(0, top + 1, n).astype(np.int64)
    core = rng.random(n) < 0.3
    start = rng.integers(0, 20, n) * 60.0
    assert np.array_equal(fifo_order(app, core, start), np.lexsort((start, ~core, app)))


@settings(max_examples=60)
@given(st.integers(0, 3000), st.integers(1, 5000), st.integers(0, 2**32 - 1))
def test_fifo_order_is_lexsort(n, n_apps, seed):
    # few applications make long groups (the merge sort), many make short ones; starts repeat
    rng = np.random.default_rng(seed)
    app = rng.integers(0, n_apps, n).astype(np.int32)
    core = rng.random(n) < 0.3
    start = rng.integers(0, 20, n) * 60.0
    expected = np.lexsort((start, ~core, app))
    assert np.array_equal(fifo_order(app, core, start), expected)
