"""The safe-guard buffer and who gets shaped."""

from __future__ import annotations

import numpy as np
import pytest
from hand_views import exact_forecast, hand_view

from reclaim.shaping.shaper import Shaper


def test_target_is_mean_plus_k1_request_plus_k2_std_clipped_to_the_request():
    view = hand_view([(0, 0, True, 0.0, (2.0, 4.0)), (0, 0, True, 0.0, (2.0, 4.0))])
    fc = exact_forecast(view, [[0.5, 1.0], [1.9, 3.9]], std=[[0.1, 0.2], [0.1, 0.2]])
    target, shaped = Shaper(k1=0.05, k2=3.0).targets(view, fc)
    assert shaped.all()
    assert target[0] == pytest.approx([0.5 + 0.1 + 0.3, 1.0 + 0.2 + 0.6], rel=1e-6)
    assert target[1].tolist() == [2.0, 4.0]  # clipped: never more than the reservation


def test_grace_period_missing_forecast_and_repeated_failures_keep_the_request():
    view = hand_view(
        [
            (0, 0, True, 3300.0, (2.0, 4.0)),  # started 5 minutes ago: in its grace period
            (1, 0, True, 0.0, (2.0, 4.0)),  # no forecast yet
            (2, 1, True, 0.0, (2.0, 4.0)),  # its application failed 3 times
            (3, 1, True, 0.0, (2.0, 4.0)),  # shaped
        ],
        failures=[0, 0, 3, 2],
    )
    fc = exact_forecast(view, [[1.0, 1.0], [np.nan, np.nan], [1.0, 1.0], [1.0, 1.0]])
    target, shaped = Shaper(k1=0.0, k2=0.0).targets(view, fc)
    assert shaped.tolist() == [False, False, False, True]
    assert target[:3].tolist() == [[2.0, 4.0]] * 3 and target[3].tolist() == [1.0, 1.0]


def test_a_component_out_of_memory_max_failures_times_keeps_its_request():
    view = hand_view([(0, 0, False, 0.0, (2.0, 4.0)), (0, 1, False, 0.0, (2.0, 4.0))], ooms=[3, 2])
    fc = exact_forecast(view, [[1.0, 1.0], [1.0, 1.0]])
    target, shaped = Shaper(k1=0.0, k2=0.0, max_failures=3).targets(view, fc)
    assert shaped.tolist() == [False, True]
    assert target.tolist() == [[2.0, 4.0], [1.0, 1.0]]
