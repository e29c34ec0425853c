"""How fast VPA follows a step rise in CPU demand after it has shrunk a component.

A component requests 4 cores and uses 0.2 for a while; VPA shrinks it within two hours. Then its
demand steps up. We count the hours from the step to the first tick at which the allocation
covers the new demand, and compare them with what upstream's formulas give: every CPU sample
weighs the same (aggregate_container_state.go since kubernetes/autoscaler issue #7818), weights
halve every 24 h (decaying_histogram.go), the target is 1.15 x the end of the bucket holding the
90th percentile (histogram.go, recommender.go), and a pod older than 12 h is updated once the
target moves by 10 % (pkg/updater/priority).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_vpa import View, table, tick

from reclaim.core.types import CPU
from reclaim.shaping.vpa import VerticalPodAutoscaler
from reclaim.shaping.vpa_recommender import bucket_ends, bucket_starts, find_bucket

DAY = 86400.0
TICK = 300.0
REQUEST = 4.0
R = 2.0 ** (-TICK / DAY)  # one tick's decay


def hours_to_cover(low_days, low, high, *, throttled, **settings):
    """Hours from the step (after ``low_days`` of ``low`` cores) to the first tick whose CPU
    allocation is at least ``high``. Usage is the demand, capped at the allocation if
    ``throttled`` (our simulator, where the allocation is a hard limit) or not (Kubernetes,
    where VPA sets requests and a container may use more)."""
    ctrl = VerticalPodAutoscaler(**settings)
    view = View(table([[REQUEST, 4.0]]))
    limit = view.workloads.limit
    step = round(low_days * DAY / TICK)
    for k in range(step + 2000):
        demand = low if k < step else high
        tick(ctrl, view, k * TICK)
        if k >= step and limit[0, CPU] >= demand:
            return (k - step) * TICK / 3600
        used = min(demand, float(limit[0, CPU])) if throttled else demand
        view.workloads.used[0] = [used, 1.0]
    return math.inf


def ticks_to_move_p90(before: int) -> int:
    """Ticks after which samples in a new, higher bucket hold more than 10 % of the weight
    (the 90th percentile moves there), with ``before`` samples already in lower buckets: the
    first n with (1 - R^n) > 0.1 (1 - R^(before + n)), every sample weighing the same."""
    n = 1
    while not 1.0 - R**n > 0.1 * (1.0 - R ** (before + n)):
        n += 1
    return n


def bucket_end(v: float) -> float:
    """End of the VPA CPU bucket holding ``v`` cores (histogram_options.go's formula)."""
    starts = bucket_starts(0.01, 1.05, 1000.0)
    return float(bucket_ends(starts)[find_bucket(np.array([v]), 0.01, 1.05, len(starts))][0])


@pytest.mark.parametrize("low_days", [0.5, 1.0, 8.0])
def test_unthrottled_rise_is_covered_when_upstream_covers_it(low_days):
    # Usage seen in full (no CPU limit): one move of the 90th percentile covers the rise
    # (1.15 x its bucket end > 1 core), after ticks_to_move_p90 ticks, whatever the allocation
    # was: 1.2 h after half a day of low usage, 3.7 h after a long one.
    before = round(low_days * DAY / TICK)
    want = ticks_to_move_p90(before) * TICK / 3600
    got = hours_to_cover(low_days, 0.2, 1.0, throttled=False)
    assert got == pytest.approx(want)
    assert want == pytest.approx({0.5: 14, 1.0: 23, 8.0: 44}[low_days] * TICK / 3600)
    # Weighing samples by the allocation makes the samples taken before the shrink (at 4
    # cores) count 16 x those after it (at 0.25): the rise waits for them to decay.
    slow = hours_to_cover(low_days, 0.2, 1.0, throttled=False, cpu_sample_weight="request")
    if low_days < 8:
        assert slow > 1.5 * want
    else:  # after 8 days the pre-shrink samples have decayed 256-fold: no difference left
        assert slow == pytest.approx(want)


@pytest.mark.parametrize("low, high", [(0.2, 1.0), (0.5, 2.0)])
def test_throttled_rise_climbs_one_bucket_per_percentile_move(low, high):
    # Usage capped at the allocation: samples pile up at the current allocation, and each time
    # they hold 10 % of the weight the target moves one rung, 1.15 x the end of their bucket.
    # After a long low period every rung takes the same ticks_to_move_p90 (3.7 h).
    low_days = 8.0
    before = round(low_days * DAY / TICK)
    allocation = float(np.float32(1.15 * bucket_end(low)))
    ticks = 0
    while allocation < high:
        ticks += ticks_to_move_p90(before + ticks)
        allocation = float(np.float32(min(1.15 * bucket_end(allocation), REQUEST)))
    got = hours_to_cover(low_days, low, high, throttled=True)
    assert got == pytest.approx(ticks * TICK / 3600)
    assert got == pytest.approx({1.0: 33.0, 2.0: 25.0 + 2 / 3}[high])
    # Request weighting climbs faster here: each rung's samples weigh more than the last
    # (the allocation grows), so they reach 10 % sooner. The cost of following upstream.
    faster = hours_to_cover(low_days, low, high, throttled=True, cpu_sample_weight="request")
    assert faster < 0.75 * got
