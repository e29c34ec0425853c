"""Penalties on hand-built windows, worked by hand."""

from __future__ import annotations

import numpy as np

from reclaim.rl import rewards


def test_contention_is_the_pairwise_inner_product():
    # One machine, one resource, two steps; residents use (2, 3) and (1, 4): <a, b> = 2 + 12.
    a, b = np.array([2, 3]), np.array([1, 4])
    total = (a + b).reshape(2, 1, 1)
    squares = (a**2 + b**2).reshape(2, 1, 1)
    assert rewards.contention(total, squares, 0.1) == 0.1 * 14


def test_under_utilisation_counts_used_machines_only():
    total = np.array([[[5, 8], [0, 0]]])  # (T=1, H=2, R=2): machine 1 is empty
    residents = np.array([[1, 0]])
    assert rewards.under_utilisation(total, residents, 8, 3.0) == 3**3 + 0


def test_first_overshoot_counts_once_per_workload_and_resource():
    total = np.array([[[9, 2]], [[10, 9]]])  # (T=2, H=1, R=2)
    host, start, end = np.array([0, 0, -1]), np.array([0, 1, -1]), np.array([5, 5, -1])
    seen = np.zeros((3, 2), bool)
    # Workload 0 overshoots cpu at step 0 and mem at step 1; workload 1 (from step 1) both.
    assert rewards.first_overshoots(total, 8, 0, host, start, end, seen) == 4
    assert rewards.first_overshoots(total, 8, 0, host, start, end, seen) == 0


def test_waiting_sums_queue_lengths_per_step():
    arrival = np.array([0, 0, 2])
    start = np.array([1, -1, 2])
    # step 0: two wait; step 1: one (workload 1); step 2: one (workload 1).
    assert rewards.waiting(arrival, start, 0, 3) == 4
