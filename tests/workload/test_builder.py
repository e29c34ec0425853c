"""Workloads built from tiny stores of real Alibaba 2017 tasks, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_stores import ALIBABA_UNITS, GOOGLE_UNITS, alibaba_tasks, write_store

from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.schema import META_FILE
from reclaim.workload.builder import (
    WorkloadSpec,
    build_workload,
    default_stores,
    load_jobs,
)

# Real batch_task rows (create, end, job, task, instances, status, plan_cpu, plan_mem).
USABLE = """
1835,1838,219,1285,7,Terminated,50,0.008184713
1835,1838,219,1284,1,Terminated,50,0.016338364
13814,13821,577,3094,1,Terminated,50,0.004079414
13813,13824,577,3095,1,Terminated,50,0.004089768
5416,5416,2366,13599,1,Terminated,50,0.004079414
"""
NOT_TERMINATED = """
6036,6046,4,7,393,Waiting,,
6036,6046,4,6,452,Waiting,,
16341,16391,28,153,407,Failed,50,0.016007041
16199,0,698,3528,1,Running,100,0.002754122
"""
# Real rows with one field blanked (the dev subset has no Terminated task with such a hole).
ALTERED = """
13786,13787,576,3092,1,Terminated,50,0.004079414
13786,13787,576,3093,1,Terminated,50,
13786,,900,3093,1,Terminated,50,0.004079414
13786,13787,901,3093,0,Terminated,50,0.004079414
"""
MEM_GIB = 128.0
JOB219 = [[0.5, 0.016338364 * MEM_GIB]] + [[0.5, 0.008184713 * MEM_GIB]] * 7
JOB577 = [[0.5, 0.004089768 * MEM_GIB], [0.5, 0.004079414 * MEM_GIB]]
JOB2366 = [[0.5, 0.004079414 * MEM_GIB]]


@pytest.fixture
def shapes(tmp_path):
    """Two shapes cut from Google-derived vm_259235987_1 lines 259-263 (percent): all, first 3."""
    rows = [(10.1, 29.88), (10.27, 29.69), (38.35, 118.46), (10.66, 29.44), (12.06, 29.35)]
    usage = [("a", 300.0 * k, c, m) for k, (c, m) in enumerate(rows)]
    usage += [("b", 300.0 * k, c, m) for k, (c, m) in enumerate(rows[:3])]
    workloads = [{"id": "a", "instances": 1}, {"id": "b", "instances": 1}]
    return [write_store(tmp_path / "gcd", GOOGLE_UNITS, workloads, usage)]


def jobs_store(path, rows=USABLE + NOT_TERMINATED + ALTERED):
    return write_store(path, ALIBABA_UNITS, alibaba_tasks(rows))


def test_jobs_are_filtered_by_reason_and_tasks_ordered_by_create_time(tmp_path):
    jobs = load_jobs(jobs_store(tmp_path / "ali"), MEM_GIB)
    assert jobs.jobs_total == 9
    assert jobs.excluded == {
        "not_terminated": 3,
        "missing_request": 1,
        "missing_time": 1,
        "no_instances": 1,
    }
    # Jobs by first create time: 219 (1835 s), 2366 (5416 s), 577 (13813 s).
    assert jobs.task_indptr.tolist() == [0, 2, 3, 5]
    np.testing.assert_allclose(jobs.request, JOB219[:2] + JOB2366 + JOB577, rtol=1e-6)
    assert jobs.instances.tolist() == [1, 7, 1, 1, 1]
    assert jobs.work.tolist() == [3, 3, 1, 11, 7]  # 2366 ends the second it starts: raised to 1 s
    assert jobs.work_raised == 1
    firsts = [1835, 5416, 6036, 13786, 13786, 13786, 13813, 16199, 16341]  # job 900 has one too
    assert jobs.first_submit.tolist() == firsts


def test_components_are_the_instances_of_the_job_tasks(tmp_path, shapes):
    store = jobs_store(tmp_path / "ali", "\n".join(USABLE.split("\n")[:3]) + NOT_TERMINATED)
    spec = WorkloadSpec(n_apps=5, seed=3)
    workload, report = build_workload(spec, store, shapes)
    assert workload.comp_indptr.tolist() == [0, 8, 16, 24, 32, 40]
    np.testing.assert_allclose(workload.request, JOB219 * 5, rtol=1e-6)
    assert workload.request.dtype == workload.work.dtype == np.float32
    assert workload.work.tolist() == [3.0] * 40
    assert (report.jobs_used, report.n_components, report.elastic_apps) == (1, 40, 3)
    assert report.offered_core_seconds == pytest.approx(5 * 8 * 0.5 * 3)
    mem = (0.016338364 + 7 * 0.008184713) * MEM_GIB * 3 * 5
    assert report.offered_gib_seconds == pytest.approx(mem)


def test_sampled_apps_are_whole_jobs_and_core_comes_first(tmp_path, shapes):
    workload, report = build_workload(
        WorkloadSpec(n_apps=300, seed=1), jobs_store(tmp_path / "ali"), shapes
    )
    patterns = {8: (JOB219, [3.0] * 8), 2: (JOB577, [11.0, 7.0]), 1: (JOB2366, [1.0])}
    ptr = workload.comp_indptr
    for a in range(workload.n_apps):
        request, work = patterns[ptr[a + 1] - ptr[a]]
        np.testing.assert_allclose(workload.request[ptr[a] : ptr[a + 1]], request, rtol=1e-6)
        assert workload.work[ptr[a] : ptr[a + 1]].tolist() == work
        core = workload.core[ptr[a] : ptr[a + 1]]
        assert core[0] and (core.all() or (core[:3].all() and not core[3:].any()))
    sizes = np.diff(ptr)
    assert set(sizes.tolist()) == {1, 2, 8}
    # Only job 219 has more than 3 components, so the 60% share falls short of 180 apps.
    assert report.elastic_apps == (sizes == 8).sum() < 180


def test_max_components_keeps_the_first_instances(tmp_path, shapes):
    spec = WorkloadSpec(n_apps=100, seed=2, max_components_per_app=3)
    workload, report = build_workload(spec, jobs_store(tmp_path / "ali"), shapes)
    sizes = np.diff(workload.comp_indptr)
    assert sizes.max() == 3
    first = workload.comp_indptr[:-1][sizes == 3]
    np.testing.assert_allclose(workload.request[first], [JOB219[0]] * len(first), rtol=1e-6)
    np.testing.assert_allclose(workload.request[first + 2], [JOB219[1]] * len(first), rtol=1e-6)
    assert report.components_truncated == 5 * len(first)


def test_same_seed_same_arrays_bit_for_bit_other_seed_differs(tmp_path, shapes):
    store = jobs_store(tmp_path / "ali")
    a, _ = build_workload(WorkloadSpec(n_apps=200, seed=5, horizon=1e5), store, shapes)
    b, _ = build_workload(WorkloadSpec(n_apps=200, seed=5, horizon=1e5), store, shapes)
    c, _ = build_workload(WorkloadSpec(n_apps=200, seed=6, horizon=1e5), store, shapes)
    fields = ["arrival", "comp_indptr", "request", "work", "core", "shape", "shape_offset"]
    for name in fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert not np.array_equal(a.arrival, c.arrival)
    assert not np.array_equal(a.comp_indptr, c.comp_indptr)
    # Each draw has its own stream: other roles leave the sampled jobs and arrivals alone.
    spec = WorkloadSpec(n_apps=200, seed=5, horizon=1e5, elastic_share=0.1)
    d, _ = build_workload(spec, store, shapes)
    assert np.array_equal(a.comp_indptr, d.comp_indptr) and np.array_equal(a.arrival, d.arrival)
    assert not np.array_equal(a.core, d.core)


def test_arrivals_use_real_gaps_and_span_the_horizon(tmp_path, shapes):
    store = jobs_store(tmp_path / "ali")
    gaps = np.diff([1835, 5416, 6036, 13786, 13786, 13786, 13813, 16199, 16341])
    free, report = build_workload(WorkloadSpec(n_apps=400, seed=0), store, shapes)
    assert free.arrival[0] == 0 and report.arrival_scale == 1.0
    assert np.isin(np.diff(free.arrival), gaps).all()
    assert np.isin([0, 3581], np.diff(free.arrival)).all()  # bursts and pauses both drawn
    spec = WorkloadSpec(n_apps=400, seed=0, horizon=7 * 86400.0)
    scaled, report = build_workload(spec, store, shapes)
    assert scaled.arrival[0] == 0 and scaled.arrival[-1] == pytest.approx(7 * 86400.0)
    assert report.arrival_scale == pytest.approx(7 * 86400.0 / free.arrival[-1])
    np.testing.assert_allclose(scaled.arrival, free.arrival * report.arrival_scale)


def test_shapes_are_drawn_uniformly_with_offsets_inside(tmp_path, shapes):
    workload, report = build_workload(
        WorkloadSpec(n_apps=2000, seed=0), jobs_store(tmp_path / "ali"), shapes
    )
    lengths = workload.shapes.lengths
    assert lengths.tolist() == [5, 3] and workload.shape.dtype == np.int32
    assert np.all(workload.shape_offset < lengths[workload.shape])
    assert np.bincount(workload.shape_offset[workload.shape == 0]).size == 5
    share = (workload.shape == 0).mean()
    assert 0.45 < share < 0.55
    assert report.clipped == (0, 2) and report.shape_samples == 8  # 118.46% twice


def test_stores_in_unexpected_units_or_settings_are_refused(tmp_path, shapes):
    bad_units = write_store(tmp_path / "pct", GOOGLE_UNITS, alibaba_tasks(USABLE))
    with pytest.raises(TraceError, match="cores"):
        build_workload(WorkloadSpec(n_apps=2), bad_units, shapes)
    with pytest.raises(ReclaimError, match="n_apps"):
        build_workload(WorkloadSpec(n_apps=0), jobs_store(tmp_path / "ali"), shapes)
    with pytest.raises(TraceError, match="no job qualifies"):
        build_workload(WorkloadSpec(n_apps=2), jobs_store(tmp_path / "x", NOT_TERMINATED), shapes)


SAMPLES = default_stores()
SAMPLES_PRESENT = all((p / META_FILE).is_file() for p in [SAMPLES[0], *SAMPLES[1]])


@pytest.mark.skipif(not SAMPLES_PRESENT, reason="shipped sample stores not present")
def test_shipped_samples_build_a_valid_workload():
    jobs, shape_stores = SAMPLES
    spec = WorkloadSpec(n_apps=300, seed=0, horizon=86400.0, max_components_per_app=200)
    workload, report = build_workload(spec, jobs, shape_stores)
    workload.validate()
    assert report.jobs_used > 0 and report.n_components == workload.n_components
    assert workload.arrival[-1] == pytest.approx(86400.0)
    assert workload.request[:, 0].min() >= 0 and workload.request[:, 0].max() <= 64
    assert workload.shapes.data.max() <= 1.0
