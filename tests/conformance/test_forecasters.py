"""Every registered forecaster passes the same checks (reclaim.testing.forecasters)."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim import registry
from reclaim.forecast.base import Forecast
from reclaim.forecast.naive import Naive
from reclaim.testing.forecasters import check_forecaster


@pytest.mark.parametrize("name", registry.names("forecaster"))
def test_registered_forecaster_conforms(name):
    check_forecaster(name)


class SilentOnShortSeries(Naive):
    """Answers series shorter than 3 with NaN instead of a flagged fallback."""

    def predict(self, h=1):
        fc = super().predict(h)
        mean = np.where((self.y_.lengths < 3)[:, None], np.nan, fc.mean)
        return Forecast(mean, fc.std, fc.fallback)


def test_the_suite_catches_a_silent_wrong_number():
    with pytest.raises(AssertionError, match="non-finite mean"):
        check_forecaster("silent", SilentOnShortSeries)
