from __future__ import annotations

import polars as pl
import pytest

from reclaim.traces.readers.azure2019 import NO_VM
from reclaim.traces.validate import REPEATED_TIME

AO6 = "AO6n08ImK3pDHNzMytZ+TnBj8IQzsA3aDmNmP2i2iYrlv1qXZk9GPGKzuBDFvEka"
AHL = "AHLllP4vjsZ5okcCEA9GQ8ND+sjUlTaIcrK343h6+rIjp0QxqD5WimE+zWf8GMwD"
XZQ = "xzQ++JF1UAkh70CDhmzkiOo+DQn+E2TLErCFKEmSswv1plXUxMIY6LUBGGvHU6et"


def test_vms_sized_by_bucket_and_readings_sorted_into_cores(fixtures, imported):
    store = imported("azure2019", fixtures / "azure2019")
    vms = store.workloads().collect()
    assert vms["id"].to_list() == [XZQ, AHL, AO6]  # vmtable order
    xzq = vms.row(0, named=True)
    assert (xzq["cpu_request"], xzq["mem_request"], xzq["category"]) == (2.0, 4.0, "Interactive")
    assert xzq["job_id"].startswith("7aCQS6fPUw9rwCPiqvghk")  # the deployment
    assert (xzq["submit_time"], xzq["start_time"], xzq["end_time"]) == (0.0, 0.0, 2591400.0)
    # the readings come grouped by timestamp; the store has them by VM, then time
    usage = store.usage().collect()
    assert usage.select("id", "time").rows() == [(AHL, 0.0), (AO6, 0.0), (AO6, 300.0), (XZQ, 0.0)]
    ao6 = usage.filter(pl.col("id") == AO6)["cpu"].to_list()
    assert ao6 == pytest.approx([8.861638238194589 / 100 * 2, 11.325422213016177 / 100 * 2])
    assert usage["mem"].is_null().all()  # CPU-only trace


def test_readings_of_vms_missing_from_the_vmtable_are_counted(fixtures, imported):
    store = imported("azure2019", fixtures / "azure2019")
    # 20 readings of 14 VMs; 3 of them are in the fixture's vmtable
    assert store.meta["filtered"] == {"usage": {NO_VM: 16, REPEATED_TIME: 0}}


def test_official_headerless_vmtable_with_open_top_buckets(fixtures, tmp_path, ungz, gz, imported):
    row = ungz(fixtures / "azure2019" / "vmtable_deep_study_vms.csv.gz").splitlines()[1]
    fields = row.split(",")[:11]  # the official file has no header and no duration column
    fields[9:11] = [">24", ">64"]
    gz(tmp_path / "src" / "vmtable.csv.gz", ",".join(fields) + "\n")
    vm = imported("azure2019", tmp_path / "src").workloads().collect().row(0, named=True)
    assert (vm["id"], vm["cpu_request"], vm["mem_request"]) == (XZQ, 24.0, 64.0)


def test_dev_extract_imports_every_reading(shared_traces, imported):
    store = imported("azure2019", shared_traces / "azure-public-dataset-v2-2019")
    assert store.meta["rows"] == {"workloads": 364, "usage": 120_865}
    counts = store.usage().group_by("id").len().collect()["len"]
    assert counts.len() == 14 and counts.min() >= 8621 and counts.max() <= 8639
