"""naive: last value, RMS of recent one-step changes, random-walk growth."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.naive import Naive


def test_hand_computed_forecast():
    y = GroupedArray.from_series(
        [np.array([1.0, 2.0, 4.0, 3.0]), np.array([5.0]), np.array([2.0, 2.0])]
    )
    fc = Naive(history=2).forecast(y, 2)
    assert fc.mean.tolist() == [[3.0, 3.0], [5.0, 5.0], [2.0, 2.0]]
    rms = np.sqrt((2.0**2 + 1.0**2) / 2)  # the last two changes of series 0: +2, -1
    assert fc.std[0].tolist() == pytest.approx([rms, rms * np.sqrt(2)])
    # a single observation has no change to measure: infinite std, flagged
    assert np.isinf(fc.std[1]).all() and fc.fallback.tolist() == [False, True, False]
    assert fc.std[2].tolist() == [0.0, 0.0]  # a flat series is honestly certain
