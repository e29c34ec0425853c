"""The operational-excellence metrics on a tiny trace computed by hand.

Three machines of 4 units per resource, four steps:

    step  machine 0   machine 1   machine 2
    0     (2, 1)      -           -
    1     (3, 2)      (1, 4)      -
    2     (5, 2)      (2, 3)      -
    3     -           -           -          ("-": no workload running)
"""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.metrics.placement import (
    fragmentation,
    machines_used,
    operational_summary,
    overshoot,
    utilisation,
)

USAGE = np.zeros((4, 3, 2), np.int32)
USAGE[0, 0] = (2, 1)
USAGE[1, 0], USAGE[1, 1] = (3, 2), (1, 4)
USAGE[2, 0], USAGE[2, 1] = (5, 2), (2, 3)
ACTIVE = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 0], [0, 0, 0]], bool)
CAPACITY = np.array([4, 4])


def test_utilisation_is_normalised_by_the_most_machines_ever_active():
    # CPU 2+3+1+5+2 = 13, memory 1+2+4+2+3 = 12, over T=4 x max A(t)=2 x C=4.
    assert utilisation(USAGE, ACTIVE, CAPACITY) == pytest.approx([13 / 32, 12 / 32])


def test_fragmentation_is_one_minus_the_mean_share_of_the_largest_unused_block():
    # CPU unused on active machines: {2}, {1, 3}, {0 (overshot), 2}, none -> 1, 3/4, 1, 1.
    # Memory: {3}, {2, 0}, {2, 1}, none -> 1, 1, 2/3, 1.
    frag = fragmentation(USAGE, ACTIVE, CAPACITY)
    assert frag == pytest.approx([1 - 3.75 / 4, 1 - (11 / 3) / 4])


def test_overshoot_sums_the_units_short_over_cluster_capacity_and_time():
    # Machine 0 is 1 CPU unit short at step 2: 100 x 1 / (T=4 x M=3 x C=4).
    assert overshoot(USAGE, CAPACITY) == pytest.approx([100 / 48, 0.0])


def test_machines_used_counts_machines_that_ever_ran_a_workload():
    assert machines_used(ACTIVE) == 2


def test_summary_adds_the_wait_and_the_paper_overshoot():
    arrival, start = np.array([0, 1, 1, 2]), np.array([0, 1, 2, -1])
    s = operational_summary(USAGE, ACTIVE, CAPACITY, arrival, start, step_s=300.0)
    assert s["overshoot_pct"] == pytest.approx(100 / 48)
    assert s["machines_used"] == 2
    assert s["wait_mean_h"] == pytest.approx((300 / 3600) / 3)
    assert s["wait_max_h"] == pytest.approx(300 / 3600)
    assert s["unplaced"] == 1
    assert s["util_cpu"] == pytest.approx(13 / 32)


def test_an_idle_cluster_has_no_utilisation_and_nothing_fragmented():
    idle = np.zeros((3, 2, 2), np.int32)
    none = np.zeros((3, 2), bool)
    assert utilisation(idle, none, CAPACITY).tolist() == [0.0, 0.0]
    assert fragmentation(idle, none, CAPACITY).tolist() == [0.0, 0.0]
    assert overshoot(idle, CAPACITY).tolist() == [0.0, 0.0]
