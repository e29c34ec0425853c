"""The Workload container's own questions."""

from __future__ import annotations

from reclaim.core.tables import HostTable
from tiny_workloads import tiny_workload


def test_never_fits_mirrors_the_simulators_rejection_rule():
    wl = tiny_workload(
        [
            (0.0, [(2, 4, 10, True, 0, 0)]),  # fits one host
            (1.0, [(8, 4, 10, True, 0, 0)]),  # one component larger than any host
            (2.0, [(3, 4, 10, True, 0, 0)] * 3),  # core total 9 cores > 8 in the cluster
            (3.0, [(3, 4, 10, True, 0, 0), (3, 4, 10, False, 0, 0), (3, 4, 10, False, 0, 0)]),
        ]
    )
    capacity = HostTable.parse("2x4c8g").capacity
    # the last app's elastic components may wait: only its core component must fit at once
    assert wl.never_fits(capacity).tolist() == [False, True, True, False]
