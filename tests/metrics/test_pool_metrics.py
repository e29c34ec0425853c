"""Stranding by inflation, checked by hand on tiny pools."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.metrics.pool import fill_best_fit, inflate, representative_mix, stranding


def test_one_host_one_shape():
    # 4 cores, 8 GiB free; VMs of 2 cores, 2 GiB: two fit, 4 GiB are left that no VM can use.
    cap = np.array([[4.0, 8.0]])
    assert inflate(cap, cap, np.array([[2.0, 2.0]]), np.array([1.0])).tolist() == [[0.0, 4.0]]
    assert stranding(cap, cap, np.array([[2.0, 2.0]]), np.array([1.0])).tolist() == [0.0, 50.0]


def test_two_hosts_two_shapes_by_hand():
    cap = np.array([[8.0, 16.0], [8.0, 16.0]])
    free = np.array([[3.0, 16.0], [8.0, 1.0]])  # host 1 has cores but no memory left
    shapes = np.array([[2.0, 4.0], [1.0, 1.0]])
    # host 0 takes one (2, 4) and one (1, 1): (0, 11) left; host 1 takes one (1, 1): (7, 0)
    left = inflate(free, cap, shapes, np.array([0.5, 0.5]))
    assert left.tolist() == [[0.0, 11.0], [7.0, 0.0]]
    assert stranding(free, cap, shapes, np.array([0.5, 0.5])) == pytest.approx(
        [100 * 7 / 16, 100 * 11 / 32]
    )
    assert free.tolist() == [[3.0, 16.0], [8.0, 1.0]]  # inflation does not touch its input


def test_best_fit_fill_takes_the_least_free_host_first():
    free = np.array([[4.0, 8.0], [2.0, 8.0], [3.0, 8.0]])
    assert fill_best_fit(free, np.array([1.0, 1.0]), 3, np.array([4.0, 8.0])) == 3
    assert free.tolist() == [[4.0, 8.0], [0.0, 6.0], [2.0, 7.0]]


def test_a_resource_the_pool_lacks_is_not_stranded():
    cap = np.array([[4.0, 8.0, 0.0]])
    assert stranding(cap, cap, np.array([[4.0, 8.0, 0.0]]), np.array([1.0])).tolist() == [0, 0, 0]


def test_representative_mix_is_by_frequency_then_shape():
    req = np.array([[2, 4, 0], [1, 1, 0], [2, 4, 0], [1, 1, 0], [4, 8, 0], [0, 0, 0]], np.float32)
    shapes, weights = representative_mix(req, size=2)
    assert shapes.tolist() == [[1, 1, 0], [2, 4, 0]]
    assert weights.tolist() == [0.5, 0.5]
