"""The CORP scenario: resampling, the short-job filter, the train/test split, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.grouped import GroupedArray
from reclaim.corp.scenario import build_scenario, resample_hold, resample_linear, split_pms
from reclaim.errors import ReclaimError
from reclaim.workload.builder import default_stores, load_jobs


def test_resampling_is_linear_between_samples():
    # two series sampled every 30 s; (n, K=2)
    a = np.array([[0.0, 1.0], [3.0, 1.0], [6.0, 0.0], [3.0, 0.0]])
    b = np.array([[10.0, 0.0], [20.0, 0.0]])
    values = GroupedArray.from_series([a, b])
    out = resample_linear(values, np.array([0, 1]), np.array([10.0, 0.0]), np.array([5, 4]), 30, 10)
    assert out.lengths.tolist() == [5, 4]
    # series 0 at 10, 20, 30, 40, 50 s
    assert np.allclose(out[0][:, 0], [1, 2, 3, 4, 5])
    assert np.allclose(out[0][:, 1], [1, 1, 1, 2 / 3, 1 / 3])
    # series 1 at 0, 10, 20, 30 s: exactly the samples at 0 and 30, no overshoot
    assert np.allclose(out[1][:, 0], [10, 10 + 10 / 3, 10 + 20 / 3, 20])


def test_resampling_never_extrapolates():
    values = GroupedArray.from_series([np.zeros((3, 1))])
    with pytest.raises(ReclaimError, match="outside series 0"):
        resample_linear(values, np.array([0]), np.array([30.0]), np.array([5]), 30, 10)


def test_hold_keeps_each_interval_mean_over_its_interval():
    # samples every 30 s are interval means: [0, 30) -> 1, [30, 60) -> 4, [60, 90) -> 2
    a = np.array([[1.0, 0.0], [4.0, 1.0], [2.0, 1.0]])
    values = GroupedArray.from_series([a, a])
    out = resample_hold(values, np.array([0, 1]), np.array([0.0, 25.0]), np.array([9, 6]), 30, 10)
    assert out.lengths.tolist() == [9, 6]
    # aligned slots: the interval's value, held; jumps at the boundaries, no ramp
    assert out[0][:, 0].tolist() == [1, 1, 1, 4, 4, 4, 2, 2, 2]
    assert out[0][:, 1].tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 1]
    # slots [25, 35) and [55, 65) straddle a boundary: the overlap-weighted mean of the two
    assert np.allclose(out[1][:, 0], [1 * 0.5 + 4 * 0.5, 4, 4, 4 * 0.5 + 2 * 0.5, 2, 2])
    # a window may run to the end of the last interval (85 + 10 = 90 s), not beyond
    last = resample_hold(values, np.array([0]), np.array([80.0]), np.array([1]), 30, 10)
    assert last.data[:, 0].tolist() == [2.0]
    with pytest.raises(ReclaimError, match="outside series 0"):
        resample_hold(values, np.array([0]), np.array([81.0]), np.array([1]), 30, 10)
    with pytest.raises(ReclaimError, match="slot_s <= period_s"):
        resample_hold(values, np.array([0]), np.array([0.0]), np.array([1]), 30, 60)


def test_hold_mean_over_an_interval_is_its_sample():
    # whatever the offset, hold preserves the mean: no usage is invented or lost
    rng = np.random.default_rng(0)
    values = GroupedArray.from_series([rng.random((20, 2))])
    out = resample_hold(values, np.array([0]), np.array([7.0]), np.array([120]), 300, 10)
    v = values.data
    # slots 0..119 span [7, 1207) s: their integral is the step function's over that span
    total = out.data.sum(axis=0) * 10
    expected = v[0] * (300 - 7) + v[1:4].sum(axis=0) * 300 + v[4] * 7
    assert np.allclose(total, expected)
    assert np.all(out.data <= v[:5].max(axis=0)) and np.all(out.data >= v[:5].min(axis=0))


def test_scenario_demand_is_held_by_default_and_linear_on_request():
    held = build_scenario(n_jobs=40, n_train=10, n_vms=100, n_pms=30, seed=2, max_duration_s=600)
    lin = build_scenario(
        n_jobs=40, n_train=10, n_vms=100, n_pms=30, seed=2, max_duration_s=600, resample="linear"
    )
    # held demand moves only at a 5-minute boundary, at most twice per boundary (into the
    # straddling slot's mix, then to the next sample); D slots of 10 s cross at most D // 30 + 1
    changes = [np.count_nonzero(np.diff(held.jobs.demand[i][:, 0])) for i in range(40)]
    assert all(c <= 2 * (d // 30 + 1) for c, d in zip(changes, held.jobs.duration, strict=True))
    long = int(np.argmax(lin.jobs.duration))
    assert np.count_nonzero(np.diff(lin.jobs.demand[long][:, 0])) > 2 * (
        lin.jobs.duration[long] // 30 + 1
    )
    with pytest.raises(ReclaimError, match="resample must be one of"):
        build_scenario(n_jobs=5, n_train=5, seed=2, resample="cubic")


def test_even_split_of_pms_into_vms():
    cap, vm_pm, pm = split_pms(200, 40)
    assert cap.shape == (200, 2) and np.allclose(cap, [3.2, 12.8])
    assert np.bincount(vm_pm).tolist() == [5] * 40
    assert np.allclose(cap.sum(0), pm.sum(0))
    with pytest.raises(ReclaimError, match="one VM per PM"):
        split_pms(10, 20)


@pytest.fixture(scope="module")
def short():
    return build_scenario(n_jobs=60, n_train=40, n_vms=100, n_pms=30, seed=3, max_duration_s=60)


def test_long_jobs_are_dropped_and_counted(short):
    jobs_store, _ = default_stores()
    table = load_jobs(jobs_store, 64.0)
    rep = short.report
    assert rep.dropped_long == int((table.work > 60).sum()) > 0
    assert rep.tasks_total == len(table.work)
    assert rep.tasks_kept + rep.dropped_long + rep.dropped_too_big == rep.tasks_total
    assert short.jobs.duration.max() <= 6 and short.train.duration.max() <= 6


def test_jobs_are_columnar_and_within_their_request(short):
    jobs = short.jobs
    assert len(jobs) == 60 and len(short.train) == 40
    assert jobs.demand.lengths.tolist() == jobs.duration.tolist()
    per_slot_request = np.repeat(jobs.request, jobs.duration, axis=0)
    assert np.all(jobs.demand.data >= 0) and np.all(jobs.demand.data <= per_slot_request + 1e-12)
    assert np.allclose(jobs.threshold, jobs.duration * 1.2)
    assert np.all(np.diff(jobs.submit_s) >= 0) and jobs.submit_s[-1] == pytest.approx(1800.0)
    # every job fits a VM
    assert np.all((jobs.request <= short.vm_capacity.max(0)).all(axis=1))


def test_train_and_test_series_are_disjoint(short):
    assert not set(short.jobs.shape.tolist()) & set(short.train.shape.tolist())
    assert short.report.series_train + short.report.series_test + short.report.series_too_short == (
        sum(s.series for s in short.report.shape_sources)
    )


def test_same_seed_same_scenario_bit_for_bit(short):
    again = build_scenario(n_jobs=60, n_train=40, n_vms=100, n_pms=30, seed=3, max_duration_s=60)
    for name in ("submit_s", "duration", "request", "threshold", "task", "shape"):
        assert np.array_equal(getattr(short.jobs, name), getattr(again.jobs, name))
    assert np.array_equal(short.jobs.demand.data, again.jobs.demand.data)
    assert np.array_equal(short.train.demand.data, again.train.demand.data)
    other = build_scenario(n_jobs=60, n_train=40, n_vms=100, n_pms=30, seed=4, max_duration_s=60)
    assert not np.array_equal(short.jobs.task, other.jobs.task)


def test_training_jobs_do_not_depend_on_how_many_jobs_are_replayed():
    # a fitted provisioner is reused across numbers of jobs: its training slots must be the same
    kw = dict(n_train=30, n_vms=12, n_pms=3, seed=4, usage_stores=["sample:google2019-usage"])
    few = build_scenario(n_jobs=10, resample="calibrated", **kw)
    many = build_scenario(n_jobs=60, resample="calibrated", **kw)
    assert np.array_equal(few.train.demand.data, many.train.demand.data)
