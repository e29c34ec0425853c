"""Sequences drawn from the shipped real records: the paper's mix, windows of real usage, seeds."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.traces.store import sample_path
from reclaim.tvw.pool import load_pool
from reclaim.tvw.scenario import ScenarioSpec, load_pools, sample_sequence

SPEC = ScenarioSpec(jobs=40)


@pytest.fixture(scope="module")
def pool():
    return load_pool(sample_path("google2011-derived"))


def draw(pool, load=0.5, seed=0, spec=SPEC):
    rng = np.random.default_rng
    return sample_sequence(pool, spec, load, rng([seed]), rng([seed, int(load * 100)]))


def test_half_long_running_and_cpu_and_memory_intensive_in_equal_numbers(pool):
    seq = draw(pool)
    assert len(seq) == 40
    for long in (True, False):
        assert (seq.long == long).sum() == 20
        assert (seq.cpu_intensive & (seq.long == long)).sum() == 10
    hours = seq.usage.lengths * pool.period_s / 3600
    assert np.all(hours[seq.long] > 30) and np.all(hours[seq.long] <= 120)
    assert np.all(hours[~seq.long] >= 1) and np.all(hours[~seq.long] <= 30)


def test_each_workload_is_a_window_of_its_real_record(pool):
    seq = draw(pool)
    for j in range(len(seq)):
        record = pool.units[int(seq.record[j])]
        window = record[seq.offset[j] : seq.offset[j] + seq.usage.lengths[j]]
        assert np.array_equal(seq.usage[j], window)
        assert pool.cpu_intensive[seq.record[j]] == seq.cpu_intensive[j]


def test_the_arrival_rate_offers_the_target_load(pool):
    seq = draw(pool, load=0.8)
    offered = seq.rate * seq.work.mean(axis=0) / (SPEC.machines * SPEC.units)
    assert offered.mean() == pytest.approx(0.8)
    assert seq.arrival[0] == 0 and np.all(np.diff(seq.arrival) >= 0)


def test_same_seed_same_sequence_and_loads_share_the_workloads(pool):
    a, b = draw(pool), draw(pool)
    assert np.array_equal(a.usage.data, b.usage.data) and np.array_equal(a.arrival, b.arrival)
    c = draw(pool, load=0.3)
    assert np.array_equal(a.usage.data, c.usage.data) and not np.array_equal(a.arrival, c.arrival)
    assert not np.array_equal(a.usage.data, draw(pool, seed=1).usage.data)


def test_too_few_long_records_is_a_clear_error(pool):
    spec = ScenarioSpec(jobs=4, long_hours=300, max_hours=400)
    with pytest.raises(ReclaimError, match="long-running CPU-intensive record"):
        draw(pool, spec=spec)


def test_impossible_settings_are_refused():
    with pytest.raises(ReclaimError, match="max_units"):
        ScenarioSpec(units=4, max_units=6).check()
    with pytest.raises(ReclaimError, match="background must be in"):
        ScenarioSpec(background=9).check()
    with pytest.raises(ReclaimError, match="jitter must be in"):
        ScenarioSpec(jitter=6).check()


def test_jitter_moves_every_step_by_at_most_its_units_and_keeps_the_arrivals(pool):
    plain, noisy = draw(pool), draw(pool, spec=ScenarioSpec(jobs=40, jitter=1))
    moved = noisy.usage.data.astype(np.int64) - plain.usage.data
    assert np.abs(moved).max() == 1 and (moved != 0).mean() > 0.3
    assert noisy.usage.data.min() >= 1 and noisy.usage.data.max() <= SPEC.max_units
    assert np.array_equal(noisy.usage.indptr, plain.usage.indptr)
    assert np.array_equal(noisy.arrival, plain.arrival) and noisy.rate == plain.rate
    assert noisy.noise_key == plain.noise_key  # keyed by the workloads, not their units
    again = draw(pool, spec=ScenarioSpec(jobs=40, jitter=1))
    assert np.array_equal(again.usage.data, noisy.usage.data)
    assert draw(pool, seed=1).noise_key != plain.noise_key


def constant_share(pool, spec, sequences=10, seed=1000):
    """Share of the workloads of ``rl eval``'s first test sequences whose units never change."""
    from reclaim.tvw.pool import constant_records

    flat = []
    for k in range(sequences):
        rng = np.random.default_rng([seed, k])
        flat.append(constant_records(sample_sequence(pool, spec, 0.5, rng, rng).usage))
    return float(np.concatenate(flat).mean())


@pytest.mark.parametrize("name", ["bitbrains", "google2011-derived", "google2019-usage"])
def test_most_drawn_workloads_vary_at_the_default_quantisation(name):
    spec = ScenarioSpec()
    (pool,) = load_pools([sample_path(name)], spec)
    assert constant_share(pool, spec) < 0.5


def test_bitbrains_at_the_legacy_peak_scale_is_mostly_flat():
    # Why the default changed (docs/rl.md): half of the records never reach a sixth of the store's
    # 90th-percentile peak, so most windows sit at one unit from start to end.
    spec = ScenarioSpec(scale="peak")
    (pool,) = load_pools([sample_path("bitbrains")], spec)
    assert pool.report.rule == "peak" and constant_share(pool, spec) > 0.5
    assert (pool.units.data[:, 0] == 1).mean() > 0.85


def test_both_strata_draw_windows_of_google2019_long_running_tasks():
    spec = ScenarioSpec(jobs=200)
    (pool,) = load_pools([sample_path("google2019-usage")], spec)
    seq = draw(pool, spec=spec)
    hours = seq.usage.lengths * pool.period_s / 3600
    records = pool.lengths[seq.record] * pool.period_s / 3600
    assert np.all(records > 30)  # every workload is a window of a task that ran more than 30 h
    assert np.all(hours[~seq.long] <= 30) and np.all(hours[seq.long] > 30)
    for long in (True, False):
        assert (seq.cpu_intensive & (seq.long == long)).sum() == 50


def test_load_pools_reads_stores_with_the_specs_scale():
    path = sample_path("google2019-usage")
    assert [p.report.rule for p in load_pools([path], ScenarioSpec())] == ["limit"]
    assert [p.report.rule for p in load_pools([path], ScenarioSpec(scale="peak"))] == ["peak"]
    with pytest.raises(ReclaimError, match="scale must be auto, limit, peak"):
        load_pools([path], ScenarioSpec(scale="own"))
