"""Sequences drawn from the shipped real records: the paper's mix, windows of real usage, seeds."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.traces.store import sample_path
from reclaim.tvw.pool import load_pool
from reclaim.tvw.scenario import ScenarioSpec, sample_sequence

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
