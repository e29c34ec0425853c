"""first-fit: the feasible host with the lowest index."""

from __future__ import annotations

import numpy as np

from reclaim.placement import build_placer


def test_takes_the_lowest_index_that_is_up_and_fits_and_fills_it_first():
    capacity = np.full((4, 2), 8.0)
    free = np.array([[8.0, 8.0], [1.0, 8.0], [8.0, 8.0], [8.0, 8.0]])
    up = np.array([False, True, True, True])
    request = np.array([[3, 3], [3, 3], [3, 3]], np.float32)
    hosts = build_placer("first-fit").place(capacity, free, up, request)
    # Host 0 is down, host 1 lacks CPU; host 2 takes two, host 3 the third.
    assert hosts.tolist() == [2, 2, 3]
    assert free[2].tolist() == [2.0, 2.0]
