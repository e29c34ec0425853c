"""best-fit: the feasible host with the least free units of the workload's dominant resource."""

from __future__ import annotations

import numpy as np

from reclaim.placement import CycleState, build_placer
from reclaim.placement.plugins.best_fit import BestFit


def test_dominant_resource_is_measured_against_the_largest_host():
    # Largest host: 16 cores, 32 GiB. Request (2, 6): shares 2/16 = 0.125 < 6/32 = 0.19 -> memory.
    capacity = np.array([[16.0, 32.0], [8.0, 16.0], [8.0, 16.0]])
    free = np.array([[2.0, 30.0], [8.0, 7.0], [3.0, 6.5]])
    state = CycleState(capacity, free, np.ones(3, bool), np.array([[2, 6]], np.float32))
    assert BestFit().score(state, np.ones((1, 3), bool)).tolist() == [[-30.0, -7.0, -6.5]]
    # Host 2 has the least free memory and fits (3 >= 2 cores, 6.5 >= 6 GiB).
    hosts = build_placer("best-fit").place(capacity, free, np.ones(3, bool), state.request)
    assert hosts.tolist() == [2]
    assert free[2].tolist() == [1.0, 0.5]


def test_hosts_that_do_not_fit_are_passed_over_and_ties_go_to_the_lower_index():
    capacity = np.full((4, 2), 8.0)
    free = np.array([[1.0, 8.0], [4.0, 8.0], [4.0, 0.5], [4.0, 8.0]])
    # CPU-dominant (3/8 > 1/8): host 0 has too little CPU, host 2 too little memory; 1 and 3 tie.
    hosts = build_placer("best-fit").place(
        capacity, free, np.ones(4, bool), np.array([[3, 1], [3, 1]], np.float32)
    )
    assert hosts.tolist() == [1, 3]


def test_nothing_fits_leaves_the_workload_unplaced_and_free_unchanged():
    capacity = np.full((2, 2), 8.0)
    free = np.array([[1.0, 1.0], [8.0, 8.0]])
    up = np.array([True, False])
    hosts = build_placer("best-fit").place(capacity, free, up, np.array([[2, 2]], np.float32))
    assert hosts.tolist() == [-1]
    assert free.tolist() == [[1.0, 1.0], [8.0, 8.0]]


def test_a_resource_no_host_has_never_dominates_and_scores_stay_finite():
    # A pool without GPUs: the GPU axis has zero capacity; memory dominates the (2, 6, 0) request.
    capacity = np.array([[16.0, 32.0, 0.0], [8.0, 16.0, 0.0]])
    free = np.array([[2.0, 30.0, 0.0], [8.0, 7.0, 0.0]])
    request = np.array([[2, 6, 0]], np.float32)
    state = CycleState(capacity, free, np.ones(2, bool), request)
    assert BestFit().score(state, np.ones((1, 2), bool)).tolist() == [[-30.0, -7.0]]
    placer = build_placer("best-fit")
    assert placer.place(capacity, free.copy(), np.ones(2, bool), request).tolist() == [1]
    placer.compiled = False
    assert placer.place(capacity, free.copy(), np.ones(2, bool), request).tolist() == [1]
