"""tetris: the alignment of demand and free resources, both as shares of the host's capacity."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.placement import CycleState, build_placer
from reclaim.placement.plugins.tetris import Tetris


def test_alignment_is_the_dot_product_of_capacity_shares():
    capacity = np.array([[8.0, 8.0], [16.0, 16.0], [8.0, 16.0]])
    free = np.array([[4.0, 8.0], [16.0, 2.0], [8.0, 4.0]])
    request = np.array([[2, 1]], np.float32)
    raw = Tetris().score(CycleState(capacity, free, np.ones(3, bool), request), None)
    # host 0: 2/8 * 4/8 + 1/8 * 8/8; host 1: 2/16 * 16/16 + 1/16 * 2/16; host 2: 2/8 + 1/16 * 4/16
    assert raw[0] == pytest.approx([0.25, 0.1328125, 0.265625])
    hosts = build_placer("tetris").place(capacity, free, np.ones(3, bool), request)
    assert hosts.tolist() == [2]


def test_tetris_spreads_where_best_fit_packs():
    # Alignment falls as a host fills, so the second workload goes to the emptier host.
    capacity = np.full((2, 2), 8.0)
    request = np.array([[2, 2], [2, 2]], np.float32)
    up = np.ones(2, bool)
    assert build_placer("tetris").place(capacity, capacity.copy(), up, request).tolist() == [0, 1]
    assert build_placer("best-fit").place(capacity, capacity.copy(), up, request).tolist() == [0, 0]
