from __future__ import annotations

import numpy as np

from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.shaping.reservation import Reservation


class View:
    def __init__(self, workloads):
        self.now = 0.0
        self.hosts = HostTable.parse("1x8c8g")
        self.workloads = workloads

    @property
    def running(self):
        return np.flatnonzero(self.workloads.host >= 0)


def test_reservation_restores_requests_and_leaves_the_rest_alone():
    wt = WorkloadTable.empty(4)
    wt.host[:3] = 0
    wt.request[:3] = [[1, 2], [2, 2], [3, 3]]
    wt.limit[:3] = [[1, 2], [1, 1], [3, 3]]
    wt.limit[3] = [9, 9]  # free row: ignored
    decisions = Reservation().decide(View(wt))
    assert decisions.resize_rows.tolist() == [1]
    assert decisions.resize_limit.tolist() == [[2, 2]]
    assert len(decisions.evict) == 0
