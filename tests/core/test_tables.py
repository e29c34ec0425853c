from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.errors import ReclaimError


def test_parse_hosts_spec_and_pools():
    hosts = HostTable.parse("2x32c128g+1x8c16.5g")
    assert hosts.capacity.tolist() == [[32, 128], [32, 128], [8, 16.5]]
    hosts.allocated[0] = [30, 100]
    hosts.up[1] = False
    assert hosts.free.tolist() == [[2, 28], [0, 0], [8, 16.5]]


@pytest.mark.parametrize("spec", ["", "250", "250x32c", "0x32c128g", "x32c128g", "2x-1c4g"])
def test_bad_hosts_spec_is_a_user_error(spec):
    with pytest.raises(ReclaimError, match="COUNTxCORES|positive"):
        HostTable.parse(spec)


def test_grown_workload_table_keeps_rows_and_frees_new_ones():
    table = WorkloadTable.empty(2)
    table.host[:] = [3, 4]
    table.limit[1] = [1.5, 2.5]
    bigger = table.grown(5)
    assert bigger.host.tolist() == [3, 4, -1, -1, -1]
    assert bigger.limit[1].tolist() == [1.5, 2.5]
    assert len(bigger) == 5


def test_a_host_table_on_other_axes_keeps_its_ledger():
    hosts = HostTable(np.array([[8.0, 32.0, 1.0], [4.0, 16.0, 0.0]]), ("cpu", "mem", "gpu"))
    hosts.take(0, np.array([2.0, 8.0, 1.0]))
    hosts.take(0, np.array([1.0, 4.0, 0.0]))
    hosts.give(0, np.array([2.0, 8.0, 1.0]))
    hosts.up[1] = False
    assert hosts.room.tolist() == [[7, 28, 1], [4, 16, 0]]  # every host, up or not
    assert hosts.free.tolist() == [[7, 28, 1], [0, 0, 0]]  # only the hosts open to placement


def test_capacity_must_have_one_column_per_axis():
    with pytest.raises(ValueError, match="axes cpu, mem"):
        HostTable(np.ones((3, 3)))
    with pytest.raises(ValueError, match="axes"):
        HostTable(np.ones(3))
