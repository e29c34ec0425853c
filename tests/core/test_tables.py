from __future__ import annotations

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
