"""Usage shapes from tiny stores of real Bitbrains and Google-derived rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny_stores import BITBRAINS_UNITS, GOOGLE_UNITS, bitbrains_vm, write_store

from reclaim.errors import TraceError
from reclaim.traces.schema import META_FILE
from reclaim.traces.store import STORE_VERSION
from reclaim.workload.shapes import load_shapes

# Bitbrains Rnd VM 123, 2013-9 rows 6522-6527: the third uses 100.2% of its provisioned CPU.
VM123 = """
1379956373;4;10399.99722;8782.79765229;84.45;1.670144E7;1275067.2
1379956673;4;10399.99722;10264.79725614;98.7;1.670144E7;1319806.4
1379956973;4;10399.99722;10420.79721444;100.2;1.670144E7;1509948.0
1379957273;4;10399.99722;10240.530595959997;98.46666666666665;1.670144E7;1498763.2
1379957573;4;10399.99722;10209.330604299998;98.16666666666666;1.670144E7;1666535.2
1379957873;4;10399.99722;10207.59727143;98.15;1.670144E7;1532317.6
"""
# The same VM across the ~24 h gap between its 2013-8 and 2013-9 files.
VM123_GAP = """
1377899601;4;10399.995992;202.79992184399998;1.95;6942720.0;167772.0
1377899901;4;10399.995992;201.06658917866665;1.9333333333333333;6942720.0;301989.6
1377986608;4;10399.995992;223.59991382799998;2.15;6942720.0;167772.0
1377986908;4;10399.995992;239.19990781599998;2.3;6942720.0;257250.4
"""
# Google 2011 derived vm_259235987_1, lines 259-263 (cpu %, mem %): memory reaches 118.46%.
GCD = [(10.1, 29.88), (10.27, 29.69), (38.35, 118.46), (10.66, 29.44), (12.06, 29.35)]


def bitbrains_store(path, rows=VM123, vm="123", **request):
    workload, usage = bitbrains_vm(vm, rows)
    return write_store(path, BITBRAINS_UNITS, [workload | request], usage)


def google_store(path, step=300.0, rows=GCD):
    usage = [("vm_259235987_1", k * step, c, m) for k, (c, m) in enumerate(rows)]
    return write_store(path, GOOGLE_UNITS, [{"id": "vm_259235987_1", "instances": 1}], usage)


def test_bitbrains_shape_is_usage_over_provisioned_with_clips_counted(tmp_path):
    shapes, (source,) = load_shapes([bitbrains_store(tmp_path / "bb")], 300.0)
    cpu_mhz = [8782.79765229, 10264.79725614, 10420.79721444, 10240.530595959997]
    cpu_mhz += [10209.330604299998, 10207.59727143]
    mem_kb = [1275067.2, 1319806.4, 1509948.0, 1498763.2, 1666535.2, 1532317.6]
    expected = np.column_stack([np.minimum(np.array(cpu_mhz) / 10399.99722, 1.0), mem_kb])
    expected[:, 1] /= 1.670144e7
    assert shapes.data.dtype == np.float32 and shapes.data.shape == (6, 2)
    np.testing.assert_allclose(shapes.data, expected, rtol=1e-6)
    assert shapes.indptr.tolist() == [0, 6]
    assert (source.series, source.samples, source.clipped) == (1, 6, (1, 0))
    assert source.clipped_share == (1 / 6, 0.0)


def test_google_percent_read_as_fraction_and_mem_over_100_clipped(tmp_path):
    shapes, (source,) = load_shapes([google_store(tmp_path / "gcd")], 300.0)
    expected = np.minimum(np.array(GCD) / 100.0, 1.0)
    np.testing.assert_allclose(shapes.data, expected, rtol=1e-6)
    assert source.clipped == (0, 1)


def test_monthly_gap_is_concatenated_in_time_order(tmp_path):
    shapes, _ = load_shapes([bitbrains_store(tmp_path / "bb", VM123_GAP)], 300.0)
    cpu = np.array([202.79992184399998, 201.06658917866665, 223.59991382799998])
    cpu = np.append(cpu, 239.19990781599998) / 10399.995992
    np.testing.assert_allclose(shapes.data[:, 0], cpu, rtol=1e-6)


def test_stores_are_stacked_in_order(tmp_path):
    stores = [bitbrains_store(tmp_path / "bb"), google_store(tmp_path / "gcd")]
    shapes, sources = load_shapes(stores, 300.0)
    assert shapes.lengths.tolist() == [6, 5]
    assert [s.clipped for s in sources] == [(1, 0), (0, 1)]


def test_series_without_a_positive_request_are_skipped_and_counted(tmp_path):
    stores = [bitbrains_store(tmp_path / "bb", mem_request=0.0), google_store(tmp_path / "gcd")]
    shapes, sources = load_shapes(stores, 300.0)
    assert len(shapes) == 1 and sources[0].skipped_no_request == 1 and sources[0].series == 0


def test_other_period_is_refused_not_resampled(tmp_path):
    with pytest.raises(TraceError, match="600 s apart"):
        load_shapes([google_store(tmp_path / "gcd", step=600.0)], 300.0)


@pytest.mark.parametrize("bad", [float("nan"), -1.0])
def test_nan_or_negative_usage_is_an_error(tmp_path, bad):
    with pytest.raises(TraceError, match="vm_259235987_1"):
        load_shapes([google_store(tmp_path / "gcd", rows=[*GCD, (bad, 10.0)])], 300.0)


def test_store_without_units_is_an_error(tmp_path):
    store = google_store(tmp_path / "gcd")
    (store / META_FILE).write_text(json.dumps({"store_version": STORE_VERSION}))
    with pytest.raises(TraceError, match="no unit"):
        load_shapes([store], 300.0)
