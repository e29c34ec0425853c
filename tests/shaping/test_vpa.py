from __future__ import annotations

import math

import numpy as np
import pytest

from reclaim import registry
from reclaim.core.capabilities import ControllerCapabilities, capabilities
from reclaim.core.tables import WorkloadTable
from reclaim.core.types import CPU, MEM
from reclaim.shaping.vpa import VerticalPodAutoscaler
from reclaim.shaping.vpa_recommender import (
    DecayingHistograms,
    bucket_ends,
    bucket_starts,
    find_bucket,
    percentiles_reference,
    recommend_and_update,
    update_rule,
)

DAY = 86400.0
GIB = 2.0**30
LOW, TARGET, UP = 0, 1, 2


def cpu_end(v: float) -> float:
    """End of the VPA CPU bucket holding ``v`` cores, by hand: first 0.01 core, 5 % growth."""
    n = math.floor(math.log(v * 0.05 / 0.01 + 1) / math.log(1.05))
    return 0.01 * (1.05 ** (n + 1) - 1) / 0.05


def mem_end(v: float) -> float:
    """End of the VPA memory bucket holding ``v`` GiB: first bucket 1e7 bytes, 5 % growth."""
    first = 1e7 / GIB
    n = math.floor(math.log(v * 0.05 / first + 1) / math.log(1.05))
    return first * (1.05 ** (n + 1) - 1) / 0.05


class View:
    """The smallest ClusterView the controller reads (``apps``: how many applications, default
    those the table names; no failures yet)."""

    def __init__(self, wt: WorkloadTable, apps: int = 0) -> None:
        self.workloads = wt
        self.now = 0.0
        self.recent_ooms = (np.empty(0, np.int64), np.empty(0, np.float32))
        self.app_failures = np.zeros(apps or int(wt.app.max()) + 1, np.int32)
        self.component_ooms = np.zeros(len(wt), np.uint8)

    @property
    def running(self):
        return np.flatnonzero(self.workloads.host >= 0)


def table(request, comps=None, apps=None) -> WorkloadTable:
    request = np.asarray(request, np.float32).reshape(-1, 2)
    n = len(request)
    wt = WorkloadTable.empty(n + 2)
    wt.host[:n] = 0
    wt.component[:n] = np.arange(n) if comps is None else comps
    wt.app[:n] = 0 if apps is None else apps
    wt.request[:n] = request
    wt.limit[:n] = request
    return wt


def tick(ctrl, view, t, used=None):
    """One monitor tick at ``t``: the controller decides, the decisions are applied; ``used``
    (n, R) is then what the tick observed (the next call learns it)."""
    view.now = t
    decisions = ctrl.decide(view)
    wt = view.workloads
    wt.limit[decisions.resize_rows] = decisions.resize_limit
    if used is not None:
        wt.used[: len(np.atleast_2d(used))] = used
    return decisions


def plain(**settings) -> VerticalPodAutoscaler:
    """No margin and no minimums, so that recommendations are the raw percentiles."""
    return VerticalPodAutoscaler(safety_margin=0.0, min_cpu=0.0, min_mem=0.0, **settings)


# ---------------------------------------------------------------------------- histograms
def test_buckets_follow_vpa_options():
    cpu = bucket_starts(0.01, 1.05, 1000.0)
    mem = bucket_starts(1e7 / GIB, 1.05, 1e12 / GIB)
    assert len(cpu) == len(mem) == 176  # ceil(log_1.05(1000 * 0.05 / 0.01 + 1)) + 1
    assert cpu[0] == 0.0 and cpu[1] == pytest.approx(0.01) and cpu[2] == pytest.approx(0.0205)
    assert cpu[-2] < 1000.0 <= cpu[-1]
    inner = cpu[1:] * (1 + 1e-9)
    assert np.array_equal(find_bucket(inner, 0.01, 1.05, 176), np.arange(1, 176))
    assert find_bucket(np.array([0.0, 0.005, 1e6]), 0.01, 1.05, 176).tolist() == [0, 0, 175]
    ends = bucket_ends(cpu)
    assert ends[0] == cpu[1] and ends[-1] == cpu[-1]  # the last bucket is open: its start
    assert ends[find_bucket(np.array([1.0]), 0.01, 1.05, 176)][0] == pytest.approx(cpu_end(1.0))


def test_percentile_is_the_end_of_the_first_bucket_reaching_it():
    h = DecayingHistograms(2, 0.01, 1.05, 1000.0, DAY, 1e-4, np.array([0.2, 0.25, 0.26, 1.0]))
    h.add(np.array([0, 0]), np.array([0.5, 2.0]), np.array([1.0, 3.0]))
    p = h.percentiles(np.array([0, 1]))
    # cumulative weight 1 of 4 at 0.5 cores: p20 and p25 (exactly reached) there, p26 beyond
    assert p[0] == pytest.approx([cpu_end(0.5), cpu_end(0.5), cpu_end(2.0), cpu_end(2.0)])
    assert np.isnan(p[1]).all()  # an empty histogram has no percentile


def test_incremental_percentiles_match_a_full_scan():
    rng = np.random.default_rng(0)
    qs = np.array([0.5, 0.9, 0.95, 0.3])
    for _ in range(30):
        h = DecayingHistograms(5, 0.01, 1.05, 1000.0, DAY, 1e-4, qs)
        added = []
        for _ in range(40):
            if added and rng.random() < 0.3:
                s, v, w = added.pop(int(rng.integers(len(added))))
                h.remove(np.array([s]), np.array([v]), np.array([w]))
            else:
                n = int(rng.integers(1, 6))
                s, v = rng.integers(0, 5, n), np.exp(rng.normal(0.0, 1.5, n))
                w = rng.uniform(0.1, 3.0, n)
                h.add(s, v, w)
                added += list(zip(s, v, w, strict=True))
            got = h.percentiles(np.arange(5))
            want = percentiles_reference(h.weight, np.arange(5), qs, h.ends)
            assert np.array_equal(got, want, equal_nan=True)
            assert np.allclose(h.total, h.weight.sum(axis=1))


def test_removing_every_sample_empties_the_histogram():
    h = DecayingHistograms(1, 0.01, 1.05, 1000.0, DAY, 1e-4, np.array([0.5]))
    h.add(np.array([0]), np.array([1.0]), np.array([0.3]))
    h.remove(np.array([0]), np.array([1.0]), np.array([0.3]))
    assert h.total[0] == 0.0 and not h.weight.any()
    assert np.isnan(h.percentiles(np.array([0])))[0, 0]


def test_reference_time_moves_without_changing_percentiles():
    h = DecayingHistograms(1, 0.01, 1.05, 1000.0, DAY, 1e-4, np.array([0.5, 0.9]))
    h.add(np.array([0, 0]), np.array([1.0, 3.0]), h.factor(np.array([0.0, DAY])))
    before, ref = h.percentiles(np.array([0])), h.ref
    w = h.factor(200 * DAY)  # past 2^100: the weights are rescaled by an exact power of two
    assert h.ref == 200 * DAY and w == 1.0
    assert np.array_equal(h.percentiles(np.array([0])), before)
    assert h.weight.sum() == pytest.approx(3.0 * 2.0 ** ((ref - 200 * DAY) / DAY))


# ---------------------------------------------------------------------------- the recommender
def test_no_recommendation_before_the_first_sample():
    ctrl, view = plain(), View(table([[2.0, 4.0]]))
    tick(ctrl, view, 0.0, used=[[1.0, 1.0]])
    assert np.isnan(ctrl.recommendation([0])).all()
    tick(ctrl, view, 300.0)
    assert not np.isnan(ctrl.recommendation([0])).any()


def test_samples_a_day_older_count_half():
    # CPU samples 0.2 cores at t=0 and 1.0 core at t=1 day weigh 1 : 2. Memory
    # peaks (0.5 GiB, then 2 GiB the next day) are stamped at their intervals' ends, also a
    # day apart: 1 : 2 as well. With weights 1 : 2 the 40th percentile (threshold 1.2) is past
    # the older sample; were they equal (threshold 0.8) it would be the older one.
    ctrl = plain(
        lower_percentile=0.3,
        target_percentile=0.4,
        upper_percentile=0.95,
        pod_lifetime_threshold_s=np.inf,
    )
    view = View(table([[2.0, 4.0]]))
    tick(ctrl, view, 0.0, used=[[0.2, 0.5]])
    tick(ctrl, view, DAY, used=[[1.0, 2.0]])  # learns the sample taken at 0
    tick(ctrl, view, DAY + 300.0)  # learns the one taken at 1 day
    rec = ctrl.recommendation([0])[0]
    # confidence: min(history 1 day, 2 samples covering 1 day + 300 s) = 1 day
    assert rec[TARGET] == pytest.approx([cpu_end(1.0), mem_end(2.0)])
    assert rec[LOW] == pytest.approx([cpu_end(0.2), mem_end(0.5)] / np.float64(1.001**2))
    assert rec[UP] == pytest.approx(np.array([cpu_end(1.0), mem_end(2.0)]) * 2.0)


def test_memory_keeps_one_peak_per_interval():
    ctrl = plain(lower_percentile=0.5, target_percentile=0.9)
    view = View(table([[2.0, 8.0]]))
    tick(ctrl, view, 0.0, used=[[1.0, 1.0]])
    tick(ctrl, view, 300.0, used=[[1.0, 3.0]])
    tick(ctrl, view, 600.0, used=[[1.0, 2.0]])
    tick(ctrl, view, 900.0)
    slot = ctrl.slot_of_[0]
    hist = ctrl.mem_.weight[slot]
    assert np.count_nonzero(hist) == 1  # 1, then 3 replacing it, then 2 below the peak
    assert ctrl.recommendation([0])[0, TARGET, MEM] == pytest.approx(mem_end(3.0))
    # a sample a day later opens the next interval: a second peak, weighing twice the first
    tick(ctrl, view, DAY, used=[[1.0, 1.0]])
    tick(ctrl, view, DAY + 300.0)
    assert np.count_nonzero(ctrl.mem_.weight[slot]) == 2
    rec = ctrl.recommendation([0])[0]
    assert rec[TARGET, MEM] == pytest.approx(mem_end(3.0))  # threshold 2.7 of 3: past 1 GiB
    assert rec[LOW, MEM] == pytest.approx(mem_end(1.0), rel=0.01)  # 1.5 of 3: at 1 GiB


def test_margin_and_minimums():
    ctrl = VerticalPodAutoscaler()
    view = View(table([[4.0, 8.0], [4.0, 8.0], [0.01, 0.1]]))
    tick(ctrl, view, 0.0, used=[[1.0, 2.0], [0.001, 0.001], [0.001, 0.001]])
    tick(ctrl, view, 300.0)
    rec = ctrl.recommendation([0, 1, 2])
    assert rec[0, TARGET] == pytest.approx([1.15 * cpu_end(1.0), 1.15 * mem_end(2.0)])
    assert rec[1, TARGET] == pytest.approx([0.025, 250 / 1024])  # VPA's minimums
    assert rec[1, LOW] == pytest.approx([0.025, 250 / 1024])  # bounds too
    assert rec[1, UP].tolist() == [np.inf, np.inf]  # one sample: confidence 0


def test_cpu_samples_weigh_the_same_whatever_the_allocation():
    # upstream since issue #7818: every CPU sample weighs minSampleWeight (0.1)
    ctrl = plain(target_percentile=0.5)
    view = View(table([[4.0, 8.0]]))
    wt = view.workloads
    wt.limit[0] = [0.05, 8.0]
    tick(ctrl, view, 0.0, used=[[0.05, 1.0]])
    tick(ctrl, view, 1.0)
    wt.limit[0] = [3.0, 8.0]  # a request-weighted sample would weigh 3.0
    wt.used[0] = [0.3, 1.0]
    tick(ctrl, view, 2.0)
    w = ctrl.cpu_.weight[ctrl.slot_of_[0]]
    buckets = find_bucket(np.array([0.05, 0.3]), 0.01, 1.05, 176)
    assert w[buckets] == pytest.approx([0.1, 0.1], rel=1e-4)  # decay over 1 s: ~1e-5
    assert w.sum() == pytest.approx(0.2, rel=1e-4)


def test_request_weighting_weighs_cpu_samples_by_allocation_at_least_min_weight():
    ctrl = plain(target_percentile=0.5, cpu_sample_weight="request")
    view = View(table([[4.0, 8.0]]))
    wt = view.workloads
    wt.limit[0] = [0.05, 8.0]  # the sample observed at 0 weighs max(0.05, 0.1) = 0.1
    tick(ctrl, view, 0.0, used=[[0.05, 1.0]])
    tick(ctrl, view, 1.0)
    wt.limit[0] = [0.3, 8.0]  # resized after the call, before the tick observes: weight 0.3
    wt.used[0] = [0.3, 1.0]
    tick(ctrl, view, 2.0)
    w = ctrl.cpu_.weight[ctrl.slot_of_[0]]
    buckets = find_bucket(np.array([0.05, 0.3]), 0.01, 1.05, 176)
    assert w[buckets] == pytest.approx([0.1, 0.3], rel=1e-4)  # decay over 1 s: ~1e-5


def test_oom_adds_a_bumped_peak():
    ctrl = plain()
    view = View(table([[2.0, 4.0], [2.0, 4.0], [2.0, 4.0]]))
    view.workloads.limit[:3, MEM] = [1.0, 0.3, 3.9]
    tick(ctrl, view, 0.0, used=[[1.0, 0.5], [1.0, 0.2], [1.0, 0.5]])
    tick(ctrl, view, 300.0)
    view.workloads.host[:3] = -1  # all three out of memory at the tick of 300
    view.recent_ooms = (np.array([0, 1, 2]), np.array([1.5, 2.0, 4.0], np.float32))
    tick(ctrl, view, 600.0)
    mem = ctrl.recommendation([0, 1, 2])[:, TARGET, MEM]
    # max(m + 100 MiB, 1.2 m), m = the allocation at the kill; at most the request
    assert mem == pytest.approx([mem_end(1.2), mem_end(0.3 + 100 / 1024), mem_end(4.0)])


def test_oom_basis_demand_uses_the_demand():
    ctrl = plain(oom_basis="demand")
    view = View(table([[2.0, 4.0]]))
    view.workloads.limit[0, MEM] = 1.0
    tick(ctrl, view, 0.0, used=[[1.0, 0.5]])
    tick(ctrl, view, 300.0)
    view.workloads.host[0] = -1
    view.recent_ooms = (np.array([0]), np.array([2.0], np.float32))
    tick(ctrl, view, 600.0)
    assert ctrl.recommendation([0])[0, TARGET, MEM] == pytest.approx(mem_end(2.4))


def test_an_oom_counts_even_after_a_zero_memory_sample():
    ctrl = plain()
    view = View(table([[2.0, 4.0]]))
    view.workloads.limit[0, MEM] = 1.0
    tick(ctrl, view, 0.0, used=[[1.0, 0.0]])
    tick(ctrl, view, 300.0)
    view.workloads.host[0] = -1
    view.recent_ooms = (np.array([0]), np.array([4.0], np.float32))
    tick(ctrl, view, 600.0)
    assert ctrl.recommendation([0])[0, TARGET, MEM] == pytest.approx(mem_end(1.2))


# ---------------------------------------------------------------------------- the updater
def day_of_history(ctrl, view):
    """Samples of (1 core, 1 GiB) at 0 and at 1 day: confidence 1 day."""
    tick(ctrl, view, 0.0, used=[[1.0, 1.0]])
    none = tick(ctrl, view, DAY, used=[[1.0, 1.0]])
    assert len(none) == 0  # one sample: bounds [0, inf), the request is inside
    return ctrl


def test_resize_only_when_outside_the_bounds():
    ctrl = VerticalPodAutoscaler(pod_lifetime_threshold_s=np.inf)
    view = View(table([[4.0, 4.0]]))
    wt = view.workloads
    day_of_history(ctrl, view)
    wt.limit[0] = [2.0, 2.0]  # inside [1.15 * p50 / 1.001^2, 2 * 1.15 * p95] for both
    assert len(tick(ctrl, view, DAY + 300.0, used=[[1.0, 1.0]])) == 0
    target = ctrl.recommendation([0])[0, TARGET]
    assert target == pytest.approx([1.15 * cpu_end(1.0), 1.15 * mem_end(1.0)])
    wt.limit[0] = [2.5, 2.0]  # CPU above the upper bound: both resources go to the target
    d = tick(ctrl, view, DAY + 600.0, used=[[1.0, 1.0]])
    assert d.resize_rows.tolist() == [0]
    assert d.resize_limit[0] == pytest.approx(ctrl.recommendation([0])[0, TARGET], rel=1e-6)
    wt.limit[0] = [2.0, 1.0]  # memory below the lower bound
    d = tick(ctrl, view, DAY + 900.0, used=[[1.0, 1.0]])
    assert d.resize_rows.tolist() == [0] and d.resize_limit[0, MEM] > 1.0
    wt.limit[0] = [4.0, 4.0]  # the request, above the upper bound: shrunk
    d = tick(ctrl, view, DAY + 1200.0)
    assert d.resize_limit[0] == pytest.approx(ctrl.recommendation([0])[0, TARGET], rel=1e-6)


def test_targets_are_capped_at_the_request():
    ctrl = VerticalPodAutoscaler(pod_lifetime_threshold_s=np.inf)
    view = View(table([[1.05, 8.0]]))
    day_of_history(ctrl, view)  # CPU target 1.15 * 1.016 > request 1.05
    view.workloads.limit[0] = [0.5, 8.0]  # below the (capped) lower bound
    d = tick(ctrl, view, DAY + 300.0)
    assert d.resize_limit[0, CPU] == pytest.approx(1.05)


def test_pods_older_than_12h_follow_a_10_percent_change():
    ctrl = VerticalPodAutoscaler()
    view = View(table([[4.0, 4.0], [4.0, 4.0]]))
    wt = view.workloads
    tick(ctrl, view, 0.0, used=[[1.0, 1.0], [1.0, 1.0]])
    tick(ctrl, view, DAY, used=[[1.0, 1.0], [1.0, 1.0]])
    target = ctrl.recommendation([0])[0, TARGET]
    wt.limit[0] = target * 1.3  # inside the bounds, 60 % off in all
    wt.limit[1] = target * np.array([1.04, 1.04])  # 8 % off: kept
    d = tick(ctrl, view, DAY + 300.0)
    assert d.resize_rows.tolist() == [0]


def test_a_restarted_component_is_admitted_at_its_target():
    ctrl = VerticalPodAutoscaler()
    view = View(table([[4.0, 4.0], [4.0, 4.0]], apps=[0, 1]), apps=2)
    wt = view.workloads
    tick(ctrl, view, 0.0, used=[[1.0, 1.0], [1.0, 1.0]])
    assert len(tick(ctrl, view, 300.0, used=[[1.0, 1.0], [1.0, 1.0]])) == 0
    assert len(tick(ctrl, view, 600.0)) == 0  # two samples: bounds still wide open
    # application 0 fails and its component restarts; component 1 completes
    view.app_failures[0] += 1
    wt.start[0] = 900.0
    wt.host[1] = -1
    d = tick(ctrl, view, 900.0)
    assert d.resize_rows.tolist() == [0]
    assert d.resize_limit[0] == pytest.approx(ctrl.recommendation([0])[0, TARGET], rel=1e-6)
    assert np.isnan(ctrl.recommendation([1])).all()  # a completed component is forgotten


def test_min_samples_delays_the_first_decision():
    ctrl = VerticalPodAutoscaler(min_samples=3, max_failures=None)
    view = View(table([[4.0, 4.0]], apps=[0]), apps=1)
    wt = view.workloads
    tick(ctrl, view, 0.0, used=[[1.0, 1.0]])
    tick(ctrl, view, 300.0, used=[[1.0, 1.0]])
    tick(ctrl, view, 600.0, used=[[1.0, 1.0]])  # learns the second sample
    view.app_failures[0] += 1  # restarts with 2 samples: kept at the request
    wt.start[0] = 900.0
    assert len(tick(ctrl, view, 900.0, used=[[1.0, 1.0]])) == 0
    assert np.isnan(ctrl.recommendation([0])).all()
    assert len(tick(ctrl, view, 1200.0)) == 0  # a third sample, bounds still wide open
    view.app_failures[0] += 1  # restarts with 3: admitted at the target
    wt.start[0] = 1500.0
    assert len(tick(ctrl, view, 1500.0)) == 1


def test_after_max_failures_it_gives_up_and_restores_the_request():
    ctrl = VerticalPodAutoscaler(max_failures=2)
    view = View(table([[4.0, 4.0], [4.0, 4.0]], apps=[0, 1]), apps=2)
    view.component_ooms = np.zeros(2, np.uint8)
    wt = view.workloads
    for t in range(0, 3600 * 25, 300):  # a day of steady usage: both get their targets
        tick(ctrl, view, float(t), used=[[1.0, 1.0], [1.0, 1.0]])
    assert np.all(wt.limit[:2] < wt.request[:2])
    view.component_ooms[1] = 2  # component 1 ran out of memory twice
    d = tick(ctrl, view, 3600.0 * 25, used=[[1.0, 1.0], [1.0, 1.0]])
    assert d.resize_rows.tolist() == [1]
    assert d.resize_limit.tolist() == [[4.0, 4.0]]
    assert len(tick(ctrl, view, 3600.0 * 25 + 300)) == 0  # and leaves it there
    view.app_failures[0] = 2
    assert tick(ctrl, view, 3600.0 * 25 + 600).resize_rows.tolist() == [0]


def test_app_aggregates_pool_their_components():
    ctrl = plain(aggregate="app", target_percentile=0.5)
    view = View(table([[4.0, 4.0], [4.0, 4.0], [4.0, 4.0]], apps=[0, 0, 1]))
    tick(ctrl, view, 0.0, used=[[1.0, 1.0], [3.0, 1.0], [2.0, 1.0]])
    tick(ctrl, view, 300.0)
    rec = ctrl.recommendation([0, 1])
    assert rec[0, TARGET, CPU] == pytest.approx(cpu_end(1.0))  # weights 4 and 4: p50 at 1
    assert rec[1, TARGET, CPU] == pytest.approx(cpu_end(2.0))


def test_fused_kernel_matches_the_numpy_rule():
    rng = np.random.default_rng(3)
    n = 400
    ctrl = VerticalPodAutoscaler(pod_lifetime_threshold_s=3000.0)
    request = rng.uniform(0.1, 8.0, (n, 2))
    view = View(table(request, apps=np.arange(n)), apps=n)
    wt = view.workloads
    for k in range(12):
        used = request * rng.uniform(0.0, 1.0, (n, 2))
        tick(ctrl, view, 600.0 * k, used=used)
        wt.limit[:n] = np.minimum(request, wt.limit[:n] * rng.uniform(0.5, 1.5, (n, 2)))
    rows = np.arange(n)
    slots = ctrl.slot_of_[rows]
    new = rng.random(n) < 0.1
    age = rng.uniform(0.0, 6000.0, n)
    limit = wt.limit[:n].astype(np.float64)
    s = ctrl
    got_update, got_target = recommend_and_update(
        slots,
        s.cpu_.idx,
        s.cpu_.ends,
        s.mem_.idx,
        s.mem_.ends,
        s.agg_first_,
        s.agg_last_,
        s.agg_observed_,
        request,
        limit,
        new,
        age,
        s.safety_margin,
        s.confidence_interval_s,
        s.min_cpu,
        s.min_mem,
        s.update_threshold,
        s.pod_lifetime_threshold_s,
    )
    want_update, want_target = update_rule(
        ctrl._estimate(slots), request, limit, new, age, 0.1, 3000.0
    )
    assert np.array_equal(got_update, want_update)
    assert 0 < got_update.sum() < n
    assert np.allclose(got_target, want_target, rtol=1e-6)


# ---------------------------------------------------------------------------- plumbing
def test_registered_and_params_round_trip():
    ctrl = registry.build("controller", "vpa", safety_margin=0.2)
    assert isinstance(ctrl, VerticalPodAutoscaler)
    assert not capabilities(ctrl, ControllerCapabilities).needs_forecast
    params = ctrl.get_params()
    assert params["safety_margin"] == 0.2 and params["min_cpu"] == 0.025
    assert params["cpu_sample_weight"] == "constant"
    assert VerticalPodAutoscaler(**params).get_params() == params
    other = registry.build("controller", "vpa", cpu_sample_weight="request")
    assert other.get_params()["cpu_sample_weight"] == "request"


@pytest.mark.parametrize(
    "setting", [{"cpu_sample_weight": "allocation"}, {"bucket_growth": 0.0}, {"oom_basis": "x"}]
)
def test_bad_settings_fail_at_the_first_decision(setting):
    ctrl = VerticalPodAutoscaler(**setting)  # constructors only store settings
    with pytest.raises(ValueError, match=next(iter(setting))):
        ctrl.decide(View(table([[1.0, 1.0]])))


def test_a_second_call_at_the_same_time_learns_nothing_new():
    ctrl = plain()
    view = View(table([[2.0, 4.0]]))
    tick(ctrl, view, 0.0, used=[[1.0, 1.0]])
    tick(ctrl, view, 300.0)
    before = ctrl.cpu_.weight.copy()
    tick(ctrl, view, 300.0)
    assert np.array_equal(ctrl.cpu_.weight, before)


def test_end_to_end_on_the_shipped_sample():
    from reclaim.sim.run import RunSettings, replay
    from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores

    jobs, shapes = default_stores()
    spec = WorkloadSpec(n_apps=120, seed=1, horizon=120 * 60.0)
    wl = build_workload(spec, jobs, shapes)[0]
    vpa = replay(wl, RunSettings(hosts="40x32c128g", controller="vpa"))
    base = replay(wl, RunSettings(hosts="40x32c128g", controller="reservation"))
    assert vpa.summary["slack_mem_weighted"] < base.summary["slack_mem_weighted"]
    assert vpa.summary["apps"] == 120 and len(vpa.apps) == 120
    assert vpa.summary["apps_done"] + vpa.summary["apps_rejected"] == 120


def test_a_view_without_failure_counts_is_an_error_not_a_silent_default():
    view = View(table([[4.0, 4.0]]))
    del view.component_ooms
    with pytest.raises(AttributeError, match="component_ooms"):
        tick(VerticalPodAutoscaler(), view, 0.0)
