"""The compiled batch binding of corp-packing (``group_kernel``) against the reference framework.

The reference is :class:`Placer` with ``compiled = False`` (``_place_groups`` / ``_place_run``:
numpy ranking per entity). Both must give the same host for every job and the same free capacity
to the bit, on random batches (runs of identical requests, ties, hosts down or full, pairs that fit
nowhere, weights that round levels together) and on the CORP scenario.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reclaim.corp.simulator as corp_simulator
from reclaim.core.capabilities import ProvisionerCapabilities
from reclaim.corp.provisioning import UnusedEstimate
from reclaim.corp.scenario import build_scenario
from reclaim.corp.simulator import WALL_TIME_KEYS, simulate
from reclaim.placement import Placer, build_placer
from reclaim.placement._kernels import fits_nowhere
from reclaim.placement.framework import CycleState, WeightedPlugin, fits
from reclaim.placement.plugins.corp_packing import (
    CorpPacking,
    complementary_pairs,
    pairs_reference,
)
from reclaim.placement.plugins.random_fit import RandomFit

AMOUNTS = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.5]


def both(weight: float = 1.0) -> tuple[Placer, Placer]:
    fast = Placer([WeightedPlugin(CorpPacking(), weight)])
    slow = Placer([WeightedPlugin(CorpPacking(), weight)])
    slow.compiled = False
    return fast, slow


def assert_same(capacity, free, up, request, all_or_nothing=False, weight=1.0):
    fast, slow = both(weight)
    assert fast._group_kernel is not None and slow._group_kernel is not None
    a_free, b_free = free.copy(), free.copy()
    a = fast.place(capacity, a_free, up, request, all_or_nothing)
    b = slow.place(capacity, b_free, up, request, all_or_nothing)
    assert a.tolist() == b.tolist()
    assert np.array_equal(a_free, b_free)  # bit for bit: the same sums in the same order
    return a


@st.composite
def batches(draw, resources=(1, 2, 3)):
    n_res = draw(st.sampled_from(resources))
    n_hosts = draw(st.integers(1, 8))
    cap = np.array(
        draw(
            st.lists(
                st.sampled_from([4.0, 8.0, 16.0]),
                min_size=n_hosts * n_res,
                max_size=n_hosts * n_res,
            )
        ),
    ).reshape(n_hosts, n_res)
    share = np.array(
        draw(
            st.lists(
                st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.9, 1.0]),
                min_size=n_hosts * n_res,
                max_size=n_hosts * n_res,
            )
        ),
    ).reshape(n_hosts, n_res)
    up = np.array(draw(st.lists(st.booleans(), min_size=n_hosts, max_size=n_hosts)))
    shapes = draw(
        st.lists(
            st.lists(st.sampled_from(AMOUNTS), min_size=n_res, max_size=n_res),
            min_size=1,
            max_size=4,
        )
    )
    rows = draw(st.lists(st.integers(0, len(shapes) - 1), min_size=1, max_size=30))
    request = np.array([shapes[i] for i in rows], np.float32)
    return cap, cap * share, up, request


@settings(max_examples=300, deadline=None)
@given(batches(), st.booleans(), st.sampled_from([1.0, 0.3, 2.5]))
def test_compiled_batches_equal_the_reference(batch, all_or_nothing, weight):
    assert_same(*batch, all_or_nothing=all_or_nothing, weight=weight)


@settings(max_examples=40, deadline=None)
@given(batches(resources=(8, 9, 17)))
def test_compiled_volume_sums_eight_or_more_resources_as_numpy_does(batch):
    assert_same(*batch)


def test_a_batch_that_pairs_nothing_fills_runs_as_the_reference():
    capacity = np.full((4, 2), 8.0)
    request = np.array([[2, 1]] * 7 + [[3, 1]] * 3, np.float32)  # all CPU-dominant: no pairs
    hosts = assert_same(
        capacity, capacity * [[1.0], [0.5], [0.75], [0.25]], np.ones(4, bool), request
    )
    assert hosts.tolist() == [3, 1, 1, 2, 2, 2, 0, 0, 0, -1]  # fullest first; 23 cores > 20


def test_hosts_that_normalising_ties_go_by_index_as_in_the_reference():
    # Host 1 has one ulp less unused volume than host 0 (a higher raw score), but min-max
    # normalisation rounds both to 100: the reference then takes the lower index.
    free = np.array([[3.25308095680109], [3.2530809568010897], [7.302044618221774]])
    hosts = assert_same(np.full((3, 1), 8.0), free, np.ones(3, bool), np.ones((1, 1), np.float32))
    assert hosts.tolist() == [0]


def test_float64_requests_bind_as_the_reference():
    rng = np.random.default_rng(3)
    capacity = np.full((20, 2), 10.0)
    request = rng.random((50, 2)) * 3  # not float32: rooms are tested on the float32 values
    assert_same(capacity, capacity * rng.random((20, 2)), rng.random(20) > 0.2, request)


def test_pairs_kernel_equals_the_numpy_reference():
    rng = np.random.default_rng(0)
    for n_res in (1, 2, 3, 7):
        for _ in range(100):
            n = int(rng.integers(1, 50))
            request = rng.random((n, n_res)) * rng.choice([0.0, 1.0, 3.0], size=(n, n_res))
            request = np.round(request, int(rng.integers(0, 3))).astype(np.float32)
            largest = rng.choice([1.0, 2.0, 5.0], size=n_res)
            expected = pairs_reference(request, largest)
            assert complementary_pairs(request, largest).tolist() == expected.tolist()


def test_fits_nowhere_is_the_framework_room_test():
    rng = np.random.default_rng(1)
    free = np.round(rng.random((30, 2)) * 4, 1)
    up = rng.random(30) > 0.3
    request = np.round(rng.random((40, 2)) * 5, 1).astype(np.float32)
    expected = ~fits(CycleState(free, free, up, request)).any(axis=1)
    assert fits_nowhere(free, up, request.astype(np.float64)).tolist() == expected.tolist()


def test_a_placer_of_more_than_corp_packing_keeps_the_reference_path():
    assert build_placer("corp-packing").compiled
    assert build_placer("corp-packing")._group_kernel is not None
    assert build_placer("corp-packing,best-fit")._group_kernel is None
    assert build_placer("best-fit")._group_kernel is None


@pytest.fixture(scope="module")
def scenario():
    return build_scenario(n_jobs=300, n_vms=200, n_pms=40, seed=0)


def test_the_scenario_batch_binds_as_the_reference(scenario):
    """The benchmark's batch: all 300 jobs against unlent scraps (mostly pairs that fit nowhere),
    then against free VMs partly taken."""
    rng = np.random.default_rng(0)
    capacity = scenario.vm_capacity
    request = scenario.jobs.request.astype(np.float32)
    up = np.ones(len(capacity), bool)
    assert_same(capacity, capacity * rng.random(capacity.shape) * 0.3, up, request)
    assert_same(capacity, capacity * rng.random(capacity.shape), up, request)
    assert_same(capacity, capacity.copy(), up, request)


class HalfLender:
    """Lends half of each request once the job has run a slot; learns nothing."""

    __capabilities__ = ProvisionerCapabilities()

    def lendable(self, history, request, horizon):
        return self.estimate(history, request, horizon).lower

    def estimate(self, history, request, horizon):
        valid = history.lengths >= 1
        amount = np.where(valid, 0.5 * np.asarray(request, np.float64), 0.0)
        return UnusedEstimate(amount, amount, valid)


def test_the_corp_simulation_is_unchanged(monkeypatch):
    sc = build_scenario(n_jobs=120, n_vms=40, n_pms=10, seed=1)
    run = dict(placement="corp-packing", window=6, provisioners=[HalfLender(), HalfLender()])
    fast = simulate(sc, "half", **run)

    def reference_placer(spec, seed):
        placer = make(spec, seed)
        placer.compiled = False
        return placer

    make = corp_simulator._make_placer
    monkeypatch.setattr(corp_simulator, "_make_placer", reference_placer)
    slow = simulate(sc, "half", **run)
    assert np.array_equal(fast.host, slow.host)
    assert np.array_equal(fast.start, slow.start)
    a, b = fast.summary(), slow.summary()
    assert {k: v for k, v in a.items() if k not in WALL_TIME_KEYS} == {
        k: v for k, v in b.items() if k not in WALL_TIME_KEYS
    }


@settings(max_examples=150, deadline=None)
@given(batches(), st.booleans(), st.sampled_from([1.0, 0.3]), st.integers(0, 3))
def test_random_fit_binds_as_the_reference(batch, all_or_nothing, weight, seed):
    """random-fit draws in Python either way; the compiled path only ranks the draws."""
    cap, free, up, request = batch
    fast = Placer([WeightedPlugin(RandomFit(seed), weight)])
    slow = Placer([WeightedPlugin(RandomFit(seed), weight)])
    slow.compiled = False
    assert fast._lean_scorer is not None
    a_free, b_free = free.copy(), free.copy()
    a = fast.place(cap, a_free, up, request, all_or_nothing)
    b = slow.place(cap, b_free, up, request, all_or_nothing)
    assert a.tolist() == b.tolist()
    assert np.array_equal(a_free, b_free)


def test_the_random_fit_simulation_is_unchanged(monkeypatch):
    sc = build_scenario(n_jobs=80, n_vms=40, n_pms=10, seed=2)
    run = dict(placement="random-fit", window=6, provisioners=[HalfLender(), HalfLender()])
    fast = simulate(sc, "half", **run)

    def reference_placer(spec, seed):
        placer = make(spec, seed)
        placer.compiled = False
        return placer

    make = corp_simulator._make_placer
    monkeypatch.setattr(corp_simulator, "_make_placer", reference_placer)
    slow = simulate(sc, "half", **run)
    assert np.array_equal(fast.host, slow.host)
    assert np.array_equal(fast.start, slow.start)
