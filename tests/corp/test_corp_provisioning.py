"""Per-resource provisioners as one controller: their answers become ``lend`` decisions."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.capabilities import ProvisionerCapabilities
from reclaim.core.grouped import GroupedArray
from reclaim.corp.provisioning import lend_decisions
from reclaim.errors import ReclaimError


class Fixed:
    """Answers ``values`` whatever it is asked."""

    __capabilities__ = ProvisionerCapabilities()

    def __init__(self, values) -> None:
        self.values = values

    def fit(self, usage, request):
        return self

    def lendable(self, history, request, horizon):
        return np.asarray(self.values, np.float64)


def history(r: int) -> GroupedArray:
    return GroupedArray.from_series([np.ones(3), np.ones(2)])


def test_each_resource_answers_its_column_clipped_to_the_request():
    request = np.array([[1.0, 4.0], [2.0, 8.0]])
    d = lend_decisions(
        [Fixed([0.5, 5.0]), Fixed([-1.0, 1.0 / 3.0])], np.array([7, 9]), history, request, horizon=6
    )
    assert d.lend_rows.tolist() == [7, 9] and len(d) == 2
    assert d.lend_amount.tolist() == [[0.5, 0.0], [2.0, 1.0 / 3.0]]


@pytest.mark.parametrize("values", [[1.0], [1.0, np.nan]])
def test_a_wrong_answer_names_its_shape(values):
    with pytest.raises(ReclaimError, match="lendable amounts for 2 jobs"):
        lend_decisions([Fixed(values)], np.array([0, 1]), history, np.ones((2, 1)), horizon=6)
