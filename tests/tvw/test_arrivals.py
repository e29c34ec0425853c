"""Poisson arrivals at a target load."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.tvw.arrivals import poisson_arrivals, rate_for_load


def test_rate_makes_the_offered_load_the_target():
    # Workloads use 100 and 300 unit-steps of CPU and memory on average: mean 200 over resources.
    work = np.array([[50, 250], [150, 350]])
    rate = rate_for_load(work, machines=10, units=8, load=0.5)
    assert rate == pytest.approx(0.5 * 80 / 200)
    offered = rate * work.mean(axis=0) / 80
    assert offered.mean() == pytest.approx(0.5)


def test_arrivals_are_poisson_steps_from_zero():
    a = poisson_arrivals(20_000, 0.25, np.random.default_rng(3))
    assert a[0] == 0 and np.all(np.diff(a) >= 0) and a.dtype == np.int64
    assert len(a) / a[-1] == pytest.approx(0.25, rel=0.03)
    assert np.array_equal(a, poisson_arrivals(20_000, 0.25, np.random.default_rng(3)))


def test_a_load_that_is_not_positive_is_refused():
    with pytest.raises(ReclaimError, match="load"):
        rate_for_load(np.ones((2, 2)), 10, 8, 0.0)
