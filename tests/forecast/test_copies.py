"""``forecast._copies``: which series of a batch repeat an earlier one, values and state."""

from __future__ import annotations

import numpy as np

from reclaim.forecast._copies import first_copies


def test_copies_need_the_same_values_length_and_state_bit_for_bit():
    series = [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0], [0.0], [-0.0], [1.0, 2.0]]
    state = np.array([[0.0], [0.0], [0.0], [np.nan], [0.0], [0.0], [np.nan]])
    indptr = np.concatenate([[0], np.cumsum([len(x) for x in series])])
    same = first_copies(np.concatenate(series), indptr, state)
    # 1 copies 0; 2 is longer; 3 has another state, and 6 copies it; -0.0 is not 0.0
    assert same.tolist() == [0, 0, 2, 3, 4, 5, 3]


def test_a_batch_twice_over_points_each_copy_at_its_first():
    rng = np.random.default_rng(0)
    data = rng.random(4000)
    indptr = np.arange(0, 4001, 4)
    same = first_copies(np.tile(data, 2), np.concatenate([indptr, indptr[1:] + 4000]),
                        np.zeros((2000, 0)))  # fmt: skip
    assert same.tolist() == list(range(1000)) + list(range(1000))
