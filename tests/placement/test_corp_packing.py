"""corp-packing: CORP's complementary pairs and most matched VM (section III-B, Figure 5).

The figure's job demands are not in the paper's text; the demands here are chosen to reproduce
every number the text gives: deviations 25 (jobs 3, 4) and 16 (jobs 3, 5), jobs 3 and 6
CPU-dominant and 4 and 5 storage-dominant, C' = <25, 2, 30>, volumes 0.867, 1.233, 2.8 and 1.183,
and the choices: (3, 4) to VM2, (5, 6) to VM4. Resources: CPU, MEM, storage.
"""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.placement import CycleState, build_placer
from reclaim.placement.plugins.corp_packing import CorpPacking, complementary_pairs, deviation

JOBS = np.array([[6, 0.25, 2], [1, 0.25, 7], [2, 0.25, 6], [5, 0.25, 1]], np.float32)  # 3, 4, 5, 6
CAPACITY = np.array([[10, 1, 30], [15, 2, 20], [25, 2, 30], [20, 2, 10]], np.float64)
UNUSED = np.array([[5, 0, 20], [10, 1, 10], [20, 2, 30], [10, 1, 8.5]], np.float64)


def test_deviations_of_the_worked_example():
    assert deviation(JOBS[0], JOBS[1]) == pytest.approx(25)
    assert deviation(JOBS[0], JOBS[2]) == pytest.approx(16)


def test_jobs_pair_with_the_most_deviating_job_of_another_dominant_resource():
    assert complementary_pairs(JOBS, CAPACITY.max(axis=0)).tolist() == [0, 0, 1, 1]


def test_unused_resource_volumes_of_the_worked_example():
    state = CycleState(CAPACITY, UNUSED, np.ones(4, bool), JOBS)
    volume = -CorpPacking().score(state, np.ones((4, 4), bool))[0]
    assert volume == pytest.approx([0.867, 1.233, 2.8, 1.183], abs=5e-4)


def test_figure_5_pairs_go_to_vm2_and_vm4():
    free = UNUSED.copy()
    hosts = build_placer("corp-packing").place(CAPACITY, free, np.ones(4, bool), JOBS)
    assert hosts.tolist() == [1, 1, 3, 3]
    assert free[1] == pytest.approx([3, 0.5, 1])
    assert free[3] == pytest.approx([3, 0.5, 1.5])


def test_a_job_without_a_complementary_partner_is_an_entity_alone():
    cpu_heavy = np.array([[4, 1], [3, 1], [1, 5]], np.float32)
    # Jobs 0 and 1 are CPU-dominant: 0 takes the memory job 2, 1 stays alone.
    assert complementary_pairs(cpu_heavy, np.array([8.0, 8.0])).tolist() == [0, 1, 0]


def test_a_pair_that_fits_no_host_is_placed_one_by_one():
    capacity = np.full((2, 2), 8.0)
    request = np.array([[6, 3], [3, 6]], np.float32)  # together (9, 9): more than a host
    hosts = build_placer("corp-packing").place(capacity, capacity.copy(), np.ones(2, bool), request)
    assert sorted(hosts.tolist()) == [0, 1]
    together = build_placer("corp-packing").place(
        capacity, np.array([[8.0, 8.0], [1.0, 1.0]]), np.ones(2, bool), request, True
    )
    assert together.tolist() == [-1, -1]
