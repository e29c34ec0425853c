from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray


def test_from_series_index_and_lengths():
    ga = GroupedArray.from_series([np.array([1.0, 2.0]), np.array([]), np.array([3.0])])
    assert len(ga) == 3
    assert ga.lengths.tolist() == [2, 0, 1]
    assert ga[0].tolist() == [1.0, 2.0] and ga[1].tolist() == [] and ga[2].tolist() == [3.0]


def test_tails_keeps_the_last_observations_of_each_series():
    ga = GroupedArray.from_series([np.arange(5.0), np.arange(2.0), np.arange(3.0) + 10])
    tails = ga.tails(3)
    assert [tails[i].tolist() for i in range(3)] == [[2, 3, 4], [0, 1], [10, 11, 12]]


def test_take_reorders_series():
    ga = GroupedArray.from_series([np.array([1.0]), np.array([2.0, 3.0])])
    assert ga.take(np.array([1, 0])).data.tolist() == [2.0, 3.0, 1.0]


def test_bad_indptr_is_refused():
    with pytest.raises(ValueError):
        GroupedArray(np.arange(3.0), np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError):
        GroupedArray(np.arange(3.0), np.array([0, 2]))
