"""The placement framework: masks, normalisation, combination, greedy binding."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.capabilities import PlacementCapabilities
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

    __capabilities__ = PlacementCapabilities()
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


class Fixed:
    """Scores host ``h`` with ``values[h]`` for every workload."""

    __capabilities__ = PlacementCapabilities()
    normalize = staticmethod(min_max_normalize)

    def __init__(self, values):
        self.values = np.asarray(values, np.float64)

    def score(self, state, feasible):
        return np.broadcast_to(self.values, feasible.shape)


def test_lexicographic_order_matches_a_hand_sorted_case():
    a, b, c = [1, 3, 3, 2, 3, 1], [5, 1, 1, 9, 2, 5], [0, 2, 1, 0, 0, 7]
    # By a (higher first), then b, then c, then index:
    # a=3: hosts 1, 2, 4 -> b: 4 (2) before 1, 2 (1) -> c: 1 (2) before 2 (1); a=2: host 3;
    # a=1: hosts 0, 5 tie on b (5) -> c: 5 (7) before 0 (0).
    cap = np.full((6, 2), 8.0)
    state = CycleState(cap, cap.copy(), np.ones(6, bool), np.array([[1, 1]], np.float32))
    lex = Placer([WeightedPlugin(Fixed(v)) for v in (a, b, c)], "lexicographic")
    assert lex.host_order(state).tolist() == [4, 1, 2, 3, 5, 0]
    # Weighted, b dominates: normalised b is 0..100 over (1, 9); a adds 0.01 x 0..100.
    weighted = Placer([WeightedPlugin(Fixed(a), 0.01), WeightedPlugin(Fixed(b))])
    assert weighted.host_order(state).tolist()[:3] == [3, 0, 5]


def test_plus_joins_a_weighted_spec_like_a_comma():
    a, b = build_placer("best-fit:1+first-fit:0.5"), build_placer("best-fit:1,first-fit:0.5")
    assert [(type(w.plugin), w.weight) for w in a.plugins] == [
        (type(w.plugin), w.weight) for w in b.plugins
    ]
    assert a.combine == b.combine == "weighted"


def test_a_request_that_fits_nowhere_does_not_stop_the_rest():
    cap = np.full((2, 2), 8.0)
    request = np.array([[9, 1], [2, 2]], np.float32)
    for spec in ("tetris", "best-fit>first-fit"):
        free = cap.copy()
        assert build_placer(spec).place(cap, free, np.ones(2, bool), request).tolist() == [-1, 0]
        free = cap.copy()
        together = build_placer(spec).place(cap, free, np.ones(2, bool), request, True)
        assert together.tolist() == [-1, -1] and np.array_equal(free, cap)


class Pairs(OneByOne):
    """Groups the batch two by two."""

    __capabilities__ = PlacementCapabilities(groups=True)

    def prepare(self, state):
        return np.arange(len(state.request)) // 2


def test_a_group_is_bound_to_one_host_and_all_or_nothing_restores_free():
    cap = np.full((3, 2), 8.0)
    free = np.array([[3.0, 3.0], [8.0, 8.0], [8.0, 8.0]])
    request = np.array([[2, 2], [2, 2], [5, 5]], np.float32)
    placer = Placer([WeightedPlugin(Pairs())])
    # The pair (4, 4) fits host 1 (best-fit: host 0 lacks room), the third alone goes to host 2.
    assert placer.place(cap, free.copy(), np.ones(3, bool), request).tolist() == [1, 1, 2]
    request = np.array([[2, 2], [2, 2], [9, 9]], np.float32)
    kept = free.copy()
    assert placer.place(cap, kept, np.ones(3, bool), request, True).tolist() == [-1, -1, -1]
    assert np.array_equal(kept, free)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 16), st.integers(0, 64), st.booleans()), min_size=1, max_size=8
    ),
    st.tuples(st.sampled_from([0.5, 1, 2, 3, 16]), st.sampled_from([1, 2, 8, 64])),
    st.sampled_from(["best-fit", "first-fit"]),
)
def test_one_workload_compiled_equals_the_reference_framework(hosts, request, name):
    free = np.array([h[:2] for h in hosts], np.float64)
    up = np.array([h[2] for h in hosts])
    cap = np.full_like(free, 64.0)
    req = np.array([request], np.float32)
    reference = build_placer(name)
    reference.compiled = False
    fast, slow = free.copy(), free.copy()
    assert (
        build_placer(name).place(cap, fast, up, req).tolist()
        == reference.place(cap, slow, up, req).tolist()
    )
    assert np.array_equal(fast, slow)
