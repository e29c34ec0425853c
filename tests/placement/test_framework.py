"""The placement framework: masks, normalisation, combination, greedy binding."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.placement import CycleState, Placer, build_placer
from reclaim.placement.framework import WeightedPlugin, min_max_normalize
from reclaim.placement.plugins.best_fit import BestFit
from reclaim.placement.plugins.first_fit import FirstFit

CAP = np.array([[8.0, 32.0], [8.0, 32.0], [8.0, 32.0]])


def test_best_fit_takes_the_host_with_least_free_dominant_resource():
    free = np.array([[6.0, 10.0], [2.0, 30.0], [4.0, 30.0]])
    # CPU-dominant request: host 1 has the least free CPU among those that fit.
    hosts = build_placer("best-fit").place(
        CAP, free.copy(), np.ones(3, bool), np.array([[2, 1]], np.float32)
    )
    assert hosts.tolist() == [1]
    # Memory-dominant request: host 0 has the least free memory and still fits.
    hosts = build_placer("best-fit").place(
        CAP, free.copy(), np.ones(3, bool), np.array([[1, 8]], np.float32)
    )
    assert hosts.tolist() == [0]


def test_down_hosts_and_full_hosts_are_filtered():
    free = np.array([[8.0, 32.0], [8.0, 32.0], [0.5, 32.0]])
    up = np.array([False, True, True])
    hosts = build_placer("first-fit").place(CAP, free, up, np.array([[1, 1]] * 2, np.float32))
    assert hosts.tolist() == [1, 1]


def test_all_or_nothing_restores_free_capacity():
    free = CAP.copy()
    req = np.array([[8, 1], [8, 1], [8, 1], [8, 1]], np.float32)
    hosts = build_placer("best-fit").place(CAP, free, np.ones(3, bool), req, all_or_nothing=True)
    assert hosts.tolist() == [-1] * 4
    assert np.array_equal(free, CAP)


def test_min_max_normalize_maps_feasible_scores_to_0_100():
    raw = np.array([[1.0, 3.0, 2.0, 99.0]])
    feasible = np.array([[True, True, True, False]])
    assert min_max_normalize(raw, feasible).tolist() == [[0.0, 100.0, 50.0, 0.0]]


def test_lexicographic_lets_the_first_plugin_decide_and_the_second_break_ties():
    free = np.array([[4.0, 32.0], [4.0, 8.0], [2.0, 32.0]])
    state = CycleState(CAP, free, np.ones(3, bool), np.array([[1, 1]], np.float32))
    # first-fit first: host 0 wins outright.
    lex = Placer([WeightedPlugin(FirstFit()), WeightedPlugin(BestFit())], "lexicographic")
    assert lex.host_order(state)[0] == 0
    # best-fit first: CPU is dominant (1/8 > 1/32); hosts 0 and 1 tie... host 2 has least CPU.
    lex = Placer([WeightedPlugin(BestFit()), WeightedPlugin(FirstFit())], "lexicographic")
    assert lex.host_order(state).tolist() == [2, 0, 1]


class OneByOne:
    """best-fit declared non-monotone: the framework then rescoring after every bind."""

    monotone = False
    filter = BestFit.filter
    score = BestFit.score
    normalize = staticmethod(min_max_normalize)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 16), st.integers(0, 64)), min_size=1, max_size=6),
    st.lists(
        st.tuples(st.sampled_from([0.5, 1, 2, 3]), st.sampled_from([1, 2, 8])),
        min_size=1,
        max_size=30,
    ),
)
def test_filling_a_monotone_score_equals_binding_one_at_a_time(free_rows, requests):
    free = np.array(free_rows, np.float64)
    cap = np.full_like(free, 64.0)
    req = np.array(sorted(requests), np.float32)  # runs of identical requests
    fast, slow = free.copy(), free.copy()
    up = np.ones(len(free), bool)
    a = Placer([WeightedPlugin(BestFit())]).place(cap, fast, up, req)
    b = Placer([WeightedPlugin(OneByOne())]).place(cap, slow, up, req)
    assert a.tolist() == b.tolist()
    assert np.allclose(fast, slow)
    assert np.all(fast >= -1e-6)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 16), st.integers(0, 64), st.booleans()), min_size=1, max_size=6
    ),
    st.lists(
        st.tuples(st.sampled_from([0.5, 1, 2, 3]), st.sampled_from([1, 2, 8])),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["best-fit", "first-fit"]),
    st.booleans(),
)
def test_compiled_binding_equals_the_reference_framework(hosts, requests, name, all_or_nothing):
    free = np.array([h[:2] for h in hosts], np.float64)
    up = np.array([h[2] for h in hosts])
    cap = np.full_like(free, 64.0)
    req = np.array(requests, np.float32)  # unsorted: runs of one, as well as longer runs
    compiled, reference = build_placer(name), build_placer(name)
    reference.compiled = False
    fast, slow = free.copy(), free.copy()
    a = compiled.place(cap, fast, up, req, all_or_nothing)
    b = reference.place(cap, slow, up, req, all_or_nothing)
    assert a.tolist() == b.tolist()
    assert np.allclose(fast, slow)
