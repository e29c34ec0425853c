"""Upstream's own test vectors, held against our VPA.

Each test restates one test of kubernetes/autoscaler's vertical-pod-autoscaler/pkg/recommender
(named in its comment) with upstream's numbers, through our histograms, estimator and controller.
Upstream tests that have no counterpart here (checkpoints, container policies, stale OOM events:
we record an OOM at the tick that sees it) are left out. Where we depart from upstream on
purpose, the test says so and asserts our number.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_vpa import View, plain, table, tick

from reclaim.core.types import CPU
from reclaim.shaping.vpa import GIB
from reclaim.shaping.vpa_recommender import (
    LOWER_CONFIDENCE,
    UPPER_CONFIDENCE,
    DecayingHistograms,
    confidence_multiplier,
    estimate,
    find_bucket,
)

HOUR = 3600.0
DAY = 86400.0
MB = 1 / 1024  # GiB
EPS = 1e-15  # histogram_test.go's weightEpsilon
START = 1234567890.0  # decaying_histogram_test.go's startTime (s)
LOW, TARGET, UP = 0, 1, 2


def linear(top: float, size: float, qs, half_life: float = HOUR) -> DecayingHistograms:
    """One histogram with upstream's linear test options (``top``, bucket ``size``)."""
    return DecayingHistograms(1, size, 1.0, top, half_life, EPS, np.asarray(qs, np.float64))


def add(h: DecayingHistograms, value: float, weight: float, t: float | None = None) -> None:
    """AddSample(value, weight, t): the weight decayed to ``t`` (no decay if None)."""
    factor = 1.0 if t is None else float(h.factor(t))
    h.add(np.zeros(1, np.int64), np.array([value]), np.array([weight * factor]))


def sub(h: DecayingHistograms, value: float, weight: float) -> None:
    h.remove(np.zeros(1, np.int64), np.array([value]), np.array([weight]))


def pct(h: DecayingHistograms) -> np.ndarray:
    return h.percentiles(np.zeros(1, np.int64))[0]


def cpu_weights(ctrl, key: int, values) -> np.ndarray:
    """The CPU histogram weights of aggregate ``key`` in the buckets of ``values`` (cores)."""
    h = ctrl.cpu_
    return h.weight[ctrl.slot_of_[key], find_bucket(np.asarray(values), h.first, h.ratio, 176)]


def mem_weights(ctrl, key: int, values) -> np.ndarray:
    h = ctrl.mem_
    return h.weight[ctrl.slot_of_[key], find_bucket(np.asarray(values), h.first, h.ratio, 176)]


# --------------------------------------------------------------------------- util/histogram_test.go
def test_empty_histogram_has_no_percentile():
    # histogram_test.go TestPercentilesEmptyHistogram and decaying_histogram_test.go
    # TestPercentilesEmptyDecayingHistogram: upstream returns 0.0; we return NaN, which the
    # controller reads as "no recommendation" (upstream skips empty aggregates instead).
    h = linear(10.0, 1.0, [-0.5, 0.0, 0.5, 1.0, 1.5])
    assert np.isnan(pct(h)).all()


QS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
WANT = [2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 5]


def test_percentiles_are_bucket_ends():
    # histogram_test.go TestPercentiles: {1: 1, 2: 2, 3: 3, 4: 4} in unit buckets
    h = linear(10.0, 1.0, QS)
    for i in range(1, 5):
        add(h, i, i)
    assert pct(h) == pytest.approx(WANT, rel=1e-15)


def test_percentiles_out_of_bounds():
    # histogram_test.go TestPercentileOutOfBounds: below 0 the first non-empty bucket's end,
    # above 1 the last one's; the last bucket is open, so its start.
    h = linear(1.0, 0.1, [-0.1, 1.1])
    add(h, 0.1, 0.1)
    add(h, 0.2, 0.2)
    assert pct(h) == pytest.approx([0.2, 0.3], rel=1e-15)
    add(h, 0.0, 0.1)
    add(h, 1.0, 0.2)
    assert pct(h) == pytest.approx([0.1, 1.0], rel=1e-15)


def test_subtracting_to_below_epsilon_empties():
    # histogram_test.go TestEmptyHistogram
    h = linear(1.0, 0.1, [0.5])
    add(h, 0.1, EPS * 2.5)
    assert not np.isnan(pct(h)).any()
    sub(h, 0.1, EPS)  # 1.5 epsilon left
    assert not np.isnan(pct(h)).any()
    sub(h, 0.1, EPS)  # 0.5 epsilon left: the bucket is emptied
    assert np.isnan(pct(h)).all() and h.total[0] == 0.0


def test_tiny_additions_keep_a_histogram_non_empty():
    # histogram_test.go TestNonEmptyOnEpsilonAddition
    h = linear(1.0, 0.1, [0.5, 1.0])
    add(h, 9.9, EPS * 3)
    assert not np.isnan(pct(h)).any()
    add(h, 0.1, EPS * 0.3)
    add(h, 999.9, EPS * 0.3)
    assert not np.isnan(pct(h)).any()
    assert pct(h)[1] == 1.0  # 9.9 and 999.9 fall in the last (open) bucket, starting at 1.0


def test_pooled_aggregate_is_the_merge_of_its_containers():
    # histogram_test.go TestHistogramMerge ({1, 2} merged with {2, 3} is {1, 2, 2, 3}) and
    # decaying_histogram_test.go TestDecayingHistogramMerge: we never merge histograms; an
    # application's aggregate (aggregate="app") takes its components' samples directly.
    apart, pooled = plain(), plain(aggregate="app")
    for ctrl in (apart, pooled):
        view = View(table([[8.0, 8.0], [8.0, 8.0]], apps=[0, 0]))
        tick(ctrl, view, 0.0, used=[[1.0, 1.0], [2.0, 1.0]])
        tick(ctrl, view, HOUR, used=[[2.0, 1.0], [3.0, 1.0]])
        tick(ctrl, view, 2 * HOUR)
    merged = apart.cpu_.weight[apart.slot_of_[0]] + apart.cpu_.weight[apart.slot_of_[1]]
    assert np.allclose(pooled.cpu_.weight[pooled.slot_of_[0]], merged, rtol=1e-14)
    w = cpu_weights(pooled, 0, [1.0, 2.0, 3.0])
    assert w / w[0] == pytest.approx([1.0, 1.0 + 2 ** (1 / 24), 2 ** (1 / 24)])
    assert pooled.agg_count_[pooled.slot_of_[0]] == 4


# ------------------------------------------------------------------ util/decaying_histogram_test.go
def test_simple_decay():
    # decaying_histogram_test.go TestSimpleDecay: 20 half-lives later, a weight-1 sample
    # outweighs a weight-1000 one over a thousand times
    h = linear(10.0, 1.0, [0.999, 1.0])
    add(h, 2, 1000, START)
    add(h, 1, 1, START + 20 * HOUR)
    assert pct(h) == pytest.approx([2, 3], rel=1e-15)


def test_longterm_decay():
    # decaying_histogram_test.go TestLongtermDecay: past 2^100 the weights are renormalised
    h = linear(10.0, 1.0, [1.0])
    add(h, 2, 1, START)
    add(h, 1, 1, START + 101 * HOUR)
    assert pct(h) == pytest.approx([2], rel=1e-15)
    assert h.weight[0, 2] < 1e-30  # what is left of the first sample


def test_decaying_percentiles():
    # decaying_histogram_test.go TestDecayingHistogramPercentiles: values and weights 1..4,
    # one half-life apart: relative weights 1/8, 2/4, 3/2, 4
    h = linear(10.0, 1.0, [0.0, 0.02, 0.03, 0.10, 0.11, 0.34, 0.35, 1.0])
    for i in range(1, 5):
        add(h, i, i, START + (i - 1) * HOUR)
    assert pct(h) == pytest.approx([2, 2, 3, 3, 4, 4, 5, 5], rel=1e-15)


def test_no_decay_at_a_fixed_time():
    # decaying_histogram_test.go TestNoDecay: as TestPercentiles
    h = linear(10.0, 1.0, QS)
    for i in range(1, 5):
        add(h, i, i, START)
    assert pct(h) == pytest.approx(WANT, rel=1e-15)


# -------------------------------------------------------------------------- logic/estimator_test.go
@pytest.mark.parametrize("cpu_first", [0.01, 0.001])  # upstream has shipped both
def test_percentile_estimator(cpu_first):
    # estimator_test.go TestPercentileEstimator: p20 of {1, 2, 3} cores is ~1 core, p50 of
    # {1e9, 2e9, 3e9} bytes ~2e9, within 5 % (bucket rounding)
    cpu = DecayingHistograms(1, cpu_first, 1.05, 1000.0, DAY, 1e-4, np.array([0.2]))
    mem = DecayingHistograms(1, 1e7 / GIB, 1.05, 1e12 / GIB, DAY, 1e-4, np.array([0.5]))
    for v in (1.0, 2.0, 3.0):
        add(cpu, v, 1.0)
        add(mem, v * 1e9 / GIB, 1.0)
    assert pct(cpu)[0] == pytest.approx(1.0, rel=0.05)
    assert pct(mem)[0] * GIB == pytest.approx(2e9, rel=0.05)
    assert pct(cpu)[0] > 1.0  # the bucket's end, above the sample


def test_confidence_multiplier():
    # estimator_test.go TestConfidenceMultiplier
    # No history: (1, +1) gives the largest amount (upstream caps it at 1e14; we keep inf and
    # cap at maxAllowed later), (1, -1) gives zero.
    assert confidence_multiplier(0.0, 1.0, 1.0) == np.inf
    assert confidence_multiplier(0.0, 1.0, -1.0) == 0.0
    # 9 samples 2 minutes apart, counted as upstream counts them (one a minute): confidence
    # min(16 min, 9 min) / 1 day = 0.00625, and 3.14 * (1 + 0.1 / 0.00625)^2 = 907.46
    confidence = min(16 * 60, 9 * 60) / DAY
    assert confidence == 0.00625
    mult = confidence_multiplier(confidence, 0.1, 2.0)
    assert 3.14 * mult == pytest.approx(907.46, rel=1e-12)
    assert 3.14e9 * mult == pytest.approx(9.0746e11, rel=1e-12)


def test_confidence_counts_seconds_observed_not_samples():
    # estimator_test.go TestConfidenceMultiplier's confidence, through our controller: we count
    # the seconds each sample covers (module docstring), so the same 9 samples 2 minutes apart
    # are 18 minutes observed and the lifespan, 16 minutes, binds: 0.0111 where upstream has
    # 0.00625. At upstream's own rate, one sample a minute, the two agree.
    for step, want in ((120.0, 16 * 60 / DAY), (60.0, 8 * 60 / DAY)):
        ctrl = plain(pod_lifetime_threshold_s=np.inf)
        view = View(table([[4.0, 4.0]]))
        for k in range(10):
            tick(ctrl, view, k * step, used=[[1.0, 1.0]])
        s = ctrl.slot_of_[0]
        assert ctrl.agg_count_[s] == 9
        got = min(ctrl.agg_last_[s] - ctrl.agg_first_[s], ctrl.agg_observed_[s]) / DAY
        assert got == pytest.approx(want, rel=1e-12)
        upper = ctrl.recommendation([0])[0, UP, CPU] / ctrl.recommendation([0])[0, TARGET, CPU]
        assert upper == pytest.approx(confidence_multiplier(want, *UPPER_CONFIDENCE))


def test_confidence_multiplier_with_custom_interval():
    # estimator_test.go TestConfidenceMultiplierWithCustomInterval: an 18-minute interval,
    # confidence 9/18 = 0.5, 3.14 * 1.2^2 = 4.5216 (upstream rounds CPU down to whole
    # millicores, 4.521; we keep fractions of millicores) and 3.14e9 * 1.44 bytes
    mult = confidence_multiplier(0.5, 0.1, 2.0)
    assert 3.14 * mult == pytest.approx(4.5216, rel=1e-12)
    assert 3.14e9 * mult == pytest.approx(4.5216e9, rel=1e-12)
    # through the controller the interval is confidence_interval_s; the same samples give
    # min(16, 18) / 18 there (seconds observed, as above)
    ctrl = plain(confidence_interval_s=18 * 60.0, pod_lifetime_threshold_s=np.inf)
    view = View(table([[4.0, 4.0]]))
    for k in range(10):
        tick(ctrl, view, k * 120.0, used=[[1.0, 1.0]])
    rec = ctrl.recommendation([0])[0]
    assert rec[UP, CPU] / rec[TARGET, CPU] == pytest.approx(1.0 + 18 / 16)


def test_confidence_multiplier_no_history():
    # estimator_test.go TestConfidenceMultiplierNoHistory
    assert confidence_multiplier(0.0, 0.1, 2.0) == np.inf
    est = estimate(np.full((1, 3, 2), 3.14), np.zeros(1), 0.0, np.zeros(2))
    assert est[0, UP].tolist() == [np.inf, np.inf] and est[0, LOW].tolist() == [0.0, 0.0]
    assert LOWER_CONFIDENCE == (0.001, -2.0) and UPPER_CONFIDENCE == (1.0, 1.0)


def test_margin_estimator():
    # estimator_test.go TestMarginEstimator: a 10 % margin on 3.14 cores and 3.14e9 bytes
    base = np.array([3.14, 3.14e9 / GIB])
    est = estimate(np.broadcast_to(base, (1, 3, 2)), np.full(1, 7.0), 0.1, np.zeros(2))
    assert est[0, TARGET] * [1.0, GIB] == pytest.approx([3.14 * 1.1, 3.14e9 * 1.1], rel=1e-12)


def test_min_resources_estimator():
    # estimator_test.go TestMinResourcesEstimator: 3.14 cores over a 0.2-core minimum, 4e8
    # bytes over 2e7; and (ours) a minimum that binds
    minimums = np.array([0.2, 2e7 / GIB])
    est = estimate(np.broadcast_to([3.14, 4e8 / GIB], (1, 3, 2)), np.ones(1), 0.0, minimums)
    assert est[0, TARGET] * [1.0, GIB] == pytest.approx([3.14, 4e8], rel=1e-12)
    est = estimate(np.broadcast_to([0.1, 1e7 / GIB], (1, 3, 2)), np.ones(1), 0.0, minimums)
    assert est[0, TARGET] * [1.0, GIB] == pytest.approx([0.2, 2e7], rel=1e-12)


# -------------------------------------------------------------------------- model/container_test.go
def test_aggregate_container_usage_samples():
    # container_test.go TestAggregateContainerUsageSamples: CPU 3.14, 6.28, 1.57 cores half an
    # interval apart each weigh minSampleWeight (not the 2.3-core request); memory 5 then 10 in
    # the first interval (10 replaces 5, stamped at the interval's end), 2 opens the next one.
    ctrl = plain(pod_lifetime_threshold_s=np.inf)
    view = View(table([[8.0, 8.0]]))
    view.workloads.limit[0, CPU] = 2.3
    tick(ctrl, view, 0.0, used=[[3.14, 0.5]])
    tick(ctrl, view, DAY / 2, used=[[6.28, 1.0]])
    tick(ctrl, view, DAY, used=[[1.57, 0.2]])
    tick(ctrl, view, DAY + 300.0)
    assert ctrl.cpu_.ref == 0.0
    assert cpu_weights(ctrl, 0, [3.14, 6.28, 1.57]) == pytest.approx([0.1, 0.1 * 2**0.5, 0.2])
    assert ctrl.mem_.ref == DAY
    assert mem_weights(ctrl, 0, [0.5, 1.0, 0.2]) == pytest.approx([0.0, 1.0, 2.0])
    assert ctrl.win_end_[0] == 2 * DAY and ctrl.mem_peak_[0] == pytest.approx(0.2)


def record_ooms(demands, *, request=8.0, usage=0.0, **settings):
    """A component with one memory sample ``usage`` (GiB) at 0, then killed at 300 s and
    waiting to restart, one OOM per tick with memory ``demands`` (GiB) as the OOM's basis
    (upstream's RecordOOM argument). Returns the controller."""
    ctrl = plain(oom_basis="demand", **settings)
    view = View(table([[2.0, request]]))
    tick(ctrl, view, 0.0, used=[[1.0, usage]])
    tick(ctrl, view, 300.0)
    view.workloads.host[0] = -1
    for k, demand in enumerate(demands):
        view.recent_ooms = (np.array([0]), np.array([demand], np.float32))
        tick(ctrl, view, 600.0 + 300.0 * k)
    return ctrl


@pytest.mark.parametrize(
    "upstream, demand, ratio, min_bump, max_allowed, want",
    [
        ("TestRecordOOMIncreasedByBumpUp", 1000, 1.2, 100, 8192, 1200),
        ("TestRecordOOMIncreasedByMin", 1, 1.2, 100, 8192, 101),
        ("TestRecordOOMCapsAtMaxMemory", 1000, 2.0, 0, 1000, 1000),
        ("TestRecordOOMWithoutMaxMemory", 1000, 2.0, 0, 8192, 2000),
        ("TestRecordOOMBelowMaxMemoryNotCapped", 1000, 1.2, 0, 3000, 1200),
        ("TestRecordOOMAtMaxMemoryBoundary", 1000, 1.0, 0, 1000, 1000),
    ],
)
def test_record_oom(upstream, demand, ratio, min_bump, max_allowed, want):
    # container_test.go (see the id): memory needed = max(m * ratio, m + min bump), at most
    # maxAllowed (for us the original request), m in MB
    ctrl = record_ooms(
        [demand * MB], request=max_allowed * MB, oom_bump_ratio=ratio, oom_min_bump=min_bump * MB
    )
    assert ctrl.oom_peak_[0] == pytest.approx(want * MB, rel=1e-6)
    assert mem_weights(ctrl, 0, [want * MB]) == pytest.approx([1.0])  # the only peak
    assert ctrl.mem_.total[0] == pytest.approx(1.0)


def test_record_oom_dont_run_away():
    # container_test.go TestRecordOOMDontRunAway: 1000 MB -> 1200; smaller OOMs (999 MB ->
    # 1198.8) leave the peak; 2000 MB -> 2400 replaces it
    ctrl = record_ooms([1000 * MB, 999 * MB, 999 * MB])
    assert ctrl.oom_peak_[0] == pytest.approx(1200 * MB)
    ctrl = record_ooms([1000 * MB, 999 * MB, 999 * MB, 2000 * MB])
    assert ctrl.oom_peak_[0] == pytest.approx(2400 * MB)
    assert mem_weights(ctrl, 0, [1200 * MB, 2400 * MB]) == pytest.approx([0.0, 1.0])


def test_record_oom_maxed_with_known_sample():
    # container_test.go TestRecordOOMMaxedWithKnownSample: a 3000 MB usage peak beats the
    # 1000 MB request: 3600 MB replaces the 3000 MB peak
    ctrl = record_ooms([1000 * MB], usage=3000 * MB)
    assert ctrl.oom_peak_[0] == pytest.approx(3600 * MB)
    assert mem_weights(ctrl, 0, [3000 * MB, 3600 * MB]) == pytest.approx([0.0, 1.0])


@pytest.mark.parametrize("interval", [DAY, HOUR])
def test_record_oom_in_new_window(interval):
    # container_test.go TestRecordOOMInNewWindow and ...WithCustomInterval: a 2000 MB peak,
    # then an OOM (request 1000 MB) two intervals later: 2400 MB in the interval ending at 3
    ctrl = plain(oom_basis="demand", mem_interval_s=interval)
    view = View(table([[2.0, 8.0]]))
    tick(ctrl, view, 0.0, used=[[1.0, 2000 * MB]])
    tick(ctrl, view, 300.0)
    tick(ctrl, view, 2 * interval)
    view.workloads.host[0] = -1
    view.recent_ooms = (np.array([0]), np.array([1000 * MB], np.float32))
    tick(ctrl, view, 2 * interval + 300.0)  # the OOM happened at the tick of 2 intervals
    assert ctrl.win_end_[0] == 3 * interval
    assert ctrl.oom_peak_[0] == pytest.approx(2400 * MB)
    w = mem_weights(ctrl, 0, [2000 * MB, 2400 * MB])
    assert w / w[0] == pytest.approx([1.0, 2 ** (2 * interval / DAY)])


@pytest.mark.parametrize("interval, count", [(HOUR, 8), (DAY, 16)])
def test_memory_samples_in_separate_intervals(interval, count):
    # container_test.go TestMemorySamplesWithCustomAggregationInterval (1 h) and
    # ...IntervalCount (16): samples two intervals apart are two peaks, stamped at 1 and 3
    ctrl = plain(mem_interval_s=interval, mem_interval_count=count)
    view = View(table([[2.0, 8.0]]))
    tick(ctrl, view, 0.0, used=[[1.0, 0.5]])
    tick(ctrl, view, 2 * interval, used=[[1.0, 1.0]])
    tick(ctrl, view, 2 * interval + 300.0)
    assert ctrl.win_end_[0] == 3 * interval
    w = mem_weights(ctrl, 0, [0.5, 1.0])
    assert w / w[0] == pytest.approx([1.0, 2 ** (2 * interval / DAY)])
    assert np.count_nonzero(ctrl.mem_.weight[ctrl.slot_of_[0]]) == 2


def test_memory_peak_update_within_interval():
    # container_test.go TestMemoryPeakUpdateWithinCustomInterval: 30 minutes into a 1 h
    # interval a larger sample replaces the peak
    ctrl = plain(mem_interval_s=HOUR)
    view = View(table([[2.0, 8.0]]))
    tick(ctrl, view, 0.0, used=[[1.0, 0.5]])
    tick(ctrl, view, 1800.0, used=[[1.0, 1.0]])
    tick(ctrl, view, 2100.0)
    assert ctrl.win_end_[0] == HOUR and ctrl.mem_peak_[0] == 1.0
    assert np.count_nonzero(ctrl.mem_.weight[ctrl.slot_of_[0]]) == 1
    assert mem_weights(ctrl, 0, [1.0])[0] == pytest.approx(float(ctrl.mem_.factor(HOUR)))


# ---------------------------------------------------------- model/aggregate_container_state_test.go
def test_aggregate_state_by_container_name():
    # aggregate_container_state_test.go TestAggregateStateByContainerName: containers A, B
    # (pod 1) and A, C (pod 2); the two A's pool their samples, one memory peak each
    ctrl = plain(aggregate="app")
    view = View(table([[8.0, 16.0]] * 4, apps=[0, 1, 0, 2]))
    used = [[1.0, 2e9 / GIB], [5.0, 10e9 / GIB], [3.0, 4e9 / GIB], [5.0, 10e9 / GIB]]
    tick(ctrl, view, 0.0, used=used)
    tick(ctrl, view, 300.0)
    assert ctrl.agg_count_[ctrl.slot_of_[[0, 1, 2]]].tolist() == [2, 1, 1]
    assert cpu_weights(ctrl, 0, [1.0, 3.0]) == pytest.approx([0.1, 0.1])
    assert ctrl.cpu_.total[ctrl.slot_of_[0]] == pytest.approx(0.2)
    mem = mem_weights(ctrl, 0, [2e9 / GIB, 4e9 / GIB])
    assert mem == pytest.approx([1.0, 1.0]) and ctrl.mem_.total[ctrl.slot_of_[0]] == 2.0


@pytest.mark.parametrize("count", [8, 4])
def test_aggregate_expires_after_the_memory_window(count):
    # aggregate_container_state_test.go TestAggregateContainerStateIsExpired (8 x 24 h) and
    # ...WithCustomIntervalCount (4): kept an hour before the window ends, gone at its end.
    # We count from the last tick the aggregate ran (here 300 s), upstream from its last sample.
    ctrl = plain(mem_interval_count=count)
    view = View(table([[4.0, 4.0], [4.0, 4.0]], apps=[0, 1]), apps=2)
    tick(ctrl, view, 0.0, used=[[1.0, 1.0], [1.0, 1.0]])
    tick(ctrl, view, 300.0)
    view.workloads.host[1] = -1
    view.recent_ooms = (np.array([1]), np.array([5.0], np.float32))  # waits to restart
    tick(ctrl, view, 600.0)
    view.recent_ooms = (np.empty(0, np.int64), np.empty(0, np.float32))
    window = count * DAY
    tick(ctrl, view, 300.0 + window - HOUR)
    assert not np.isnan(ctrl.recommendation([1])).any()
    tick(ctrl, view, 300.0 + window)
    assert np.isnan(ctrl.recommendation([1])).all()
    assert not np.isnan(ctrl.recommendation([0])).any()
