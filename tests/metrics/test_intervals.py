"""95 % t-intervals on numbers worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.metrics.intervals import t_half_width, t_interval


def test_t_interval_on_hand_numbers():
    # mean 2.5, sample std 1.2910, t(0.975, 3 dof) = 3.1824: half-width 2.0543
    got = t_interval([1.0, 2.0, 3.0, 4.0, None])
    assert (got.mean, got.n) == (2.5, 4)
    assert got.lo == pytest.approx(0.44574, abs=1e-5) and got.hi == pytest.approx(4.55426, abs=1e-5)
    # two seeds: std sqrt(2), t(0.975, 1 dof) = 12.706, so the half-width is 12.706
    two = t_interval([1.0, 3.0])
    assert two.hi - two.mean == pytest.approx(12.7062, abs=1e-3)
    # one seed has a mean but no interval; none has nothing
    assert t_interval([5.0]) == t_interval([5.0, float("nan")])
    assert (t_interval([5.0]).lo, t_interval([5.0]).hi, t_interval([5.0]).n) == (None, None, 1)
    assert t_interval([]).mean is None
    # cut at the bounds a metric cannot leave
    assert t_interval([0.0, 0.1], (0.0, 1.0)).lo == 0.0
    half = t_half_width(np.array([1.0, 1.0]), np.array([1, 2]))
    assert np.isnan(half[0]) and half[1] == pytest.approx(12.7062 / 2**0.5, abs=1e-3)
