"""The shaping paper's own workload: its inputs, its generator's rules and its usage curves."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.workload import _usage_walk
from reclaim.workload.paper_world import (
    DAY,
    PAPER_DIR,
    PaperInputs,
    PaperWorldSpec,
    build_paper_world,
    read_init_cluster_state,
    read_ratio_histogram,
    trace_shapes,
)


@pytest.fixture(scope="module")
def inputs():
    return PaperInputs.load()


@pytest.fixture(scope="module")
def world(inputs):
    return build_paper_world(PaperWorldSpec(n_apps=500, seed=4), inputs)


def test_the_papers_inputs_read_as_its_simulator_reads_them():
    cpu, mem = read_init_cluster_state(PAPER_DIR / "init-cluster-state.log")
    # 3,979 jobs at t = 0, of which batch (not production with class 2 or 3): 2,549
    assert len(cpu) == len(mem) == 2549
    # x 0.7 and capped as the generator does, the medians the shared note states
    kept_cpu = 0.7 * cpu[(0.7 * cpu > 0) & (0.7 * cpu < 32 / 15)]
    kept_mem = 0.7 * mem[(0.7 * mem > 0) & (0.7 * mem < 64 / 5)]
    assert np.median(kept_cpu) == pytest.approx(0.209, abs=0.002)
    assert np.median(kept_mem) == pytest.approx(0.58, abs=0.01)
    ratios = read_ratio_histogram(PAPER_DIR / "memory_slack.log")
    assert len(ratios) == 1656 and ratios.min() >= 0 and ratios.max() <= 1.0  # batch records


def test_applications_come_in_draws_of_fifty_elastic_and_rigid(world):
    cp = world.comp_indptr
    sizes, n_core = np.diff(cp), np.add.reduceat(world.core.astype(np.int64), cp[:-1])
    elastic = sizes > n_core
    # draws of 50 share a submission time; 80 % of draws are elastic
    _, per_time = np.unique(world.arrival, return_counts=True)
    assert set(per_time.tolist()) <= {50, 100} and world.n_apps == 500
    assert elastic.sum() == 400
    # elastic: 1-4 core components and 10 per task; rigid: every component core
    assert n_core[elastic].min() >= 1 and n_core[elastic].max() <= 4
    assert np.all((sizes[elastic] - n_core[elastic]) % 10 == 0)
    # every component of an application has its request, runtime and curve (from its start)
    first = cp[:-1]
    assert np.all(world.request == np.repeat(world.request[first], sizes, axis=0))
    assert np.all(world.shape == np.repeat(np.arange(500), sizes)) and not world.shape_offset.any()


def test_requests_runtimes_and_arrivals_keep_the_generators_bounds(world):
    assert world.request[:, 0].max() < 32 / 15 and world.request[:, 1].max() < 64 / 5
    assert world.request.min() > 0
    assert world.work.min() > 0 and world.work.max() < 9 * DAY
    # the generator's gaps are stretched by 150,000 / n_apps so the arrivals span the paper's days
    assert world.arrival.max() < 9 * DAY
    usage = world.shapes.data
    assert usage.min() >= 0 and usage.max() <= 1.0
    # one peak per 60 s of the runtime
    seconds = np.maximum(world.work[world.comp_indptr[:-1]].astype(np.int64), 1)
    assert np.array_equal(world.shapes.lengths, -(-seconds // 60))


def test_the_same_seed_gives_the_same_world_and_another_seed_another(inputs, world):
    again = build_paper_world(PaperWorldSpec(n_apps=500, seed=4), inputs)
    assert np.array_equal(again.shapes.data, world.shapes.data)
    assert np.array_equal(again.arrival, world.arrival)
    other = build_paper_world(PaperWorldSpec(n_apps=500, seed=5), inputs)
    assert not np.array_equal(other.arrival, world.arrival)


def test_spread_arrivals_span_the_days_asked(inputs):
    spread = build_paper_world(PaperWorldSpec(n_apps=500, spread_days=90.0), inputs)
    assert spread.arrival.max() == pytest.approx(90 * DAY)


def test_a_curve_has_the_target_mean_and_its_peaks_bound_every_second():
    rng = np.random.default_rng(0)
    out = np.empty(20_000)
    for target in (0.05, 0.3, 0.8):
        _usage_walk._curve(rng, len(out), target, out)
        assert abs(out.mean() - target) <= 0.0015  # the paper's 0.001 on the rounded means
        assert out.min() >= 0 and out.max() <= 1
    peaks = np.empty((2, 1))
    _usage_walk.peak_curves(
        np.random.default_rng(1), np.array([119.0]), np.array([[0.4]]), 60, np.array([0, 2]), peaks
    )
    assert peaks.min() >= 0 and peaks.max() <= 1


def test_real_usage_shapes_hold_each_five_minute_sample_for_five_minutes(inputs):
    from reclaim.workload.builder import default_pairing_store, default_stores

    _, stores = default_stores()
    held = trace_shapes(stores, default_pairing_store(), 60.0, seed=0)
    assert np.all(held.lengths % 5 == 0)
    first = held[0]
    assert np.all(first[0] == first[4]) and held.data.max() <= 1.0
    world = build_paper_world(PaperWorldSpec(n_apps=100, usage="traces"), inputs, held)
    assert world.shape.max() < len(held)


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"n_apps": 10}, "apps_per_draw"),
        ({"elastic_share": 1.5}, "elastic_share"),
        ({"gap_scale": float("nan")}, "gap_scale"),
        ({"period": 0.5}, "period"),
        ({"usage": "mine"}, "usage"),
        ({"spread_days": -1.0}, "spread_days"),
    ],
)
def test_settings_out_of_range_are_refused(inputs, settings, problem):
    with pytest.raises(ReclaimError, match=problem):
        build_paper_world(PaperWorldSpec(**settings), inputs)
