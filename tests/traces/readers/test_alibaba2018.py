from __future__ import annotations

import pytest

from reclaim.errors import TraceError
from reclaim.traces import import_trace
from reclaim.traces.readers.alibaba2018 import NO_META
from reclaim.traces.validate import REPEATED_TIME


def test_machine_usage_in_cores_and_meta_as_hosts(fixtures, imported):
    store = imported("alibaba2018", fixtures / "alibaba2018")
    usage = store.usage().collect()
    # m_1932,386640,41,92,...: 41 % of 96 cores, 92 % of a machine with mem_size 100
    assert usage.row(0) == ("m_1932", 386640.0, pytest.approx(41 / 100 * 96), 92.0)
    assert usage["id"].to_list() == ["m_1932"] * 3 + ["m_1935"] * 2
    assert usage["cpu"][3] == pytest.approx(13 / 100 * 96)
    machines = (
        store.workloads()
        .collect()
        .select("id", "start_time", "end_time", "cpu_request", "mem_request", "instances")
    )
    assert machines.rows() == [
        ("m_1932", 386640.0, 386690.0, 96.0, 100.0, 1),
        ("m_1935", 160.0, 340.0, 96.0, 100.0, 1),
    ]
    hosts = store.hosts().collect()
    assert hosts.height == 15
    assert hosts.row(0) == ("m_1932", 0.0, 96.0, 100.0, "USING")
    assert store.units == {"time": "s", "cpu": "cores", "mem": "percent of largest machine"}


def test_usage_of_a_machine_without_meta_is_counted(fixtures, imported):
    store = imported("alibaba2018", fixtures / "alibaba2018")
    assert store.meta["filtered"] == {"usage": {REPEATED_TIME: 0, NO_META: 1}}  # m_1936
    assert store.meta["rows"] == {"workloads": 2, "usage": 5, "hosts": 15}


def test_time_going_backwards_within_a_machine_is_an_error(fixtures, tmp_path, ungz, gz):
    lines = ungz(fixtures / "alibaba2018" / "machine_usage_head_subset.csv.gz").splitlines(True)
    lines[1], lines[2] = lines[2], lines[1]
    src = tmp_path / "src"
    (src).mkdir()
    (src / "machine_meta.csv.gz").write_bytes(
        (fixtures / "alibaba2018" / "machine_meta.csv.gz").read_bytes()
    )
    usage = gz(src / "machine_usage.csv.gz", "".join(lines))
    with pytest.raises(TraceError) as err:
        import_trace("alibaba2018", src, tmp_path / "store")
    assert str(err.value) == (
        f"{usage}, line 3: time goes backwards in series 'm_1932': 386670 after 386690"
    )
