"""Placement in compiled code (``placement.compiled``) against :meth:`Placer.place`'s reference
path: the same hosts and the same free capacity, bit for bit, and the placers it takes on."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.types import R
from reclaim.placement import build_placer
from reclaim.placement.compiled import (
    RANDOM_FIT,
    compiled_binding,
    message_buffer,
    place,
    random_fit_scores,
)
from reclaim.placement.framework import CycleState
from reclaim.placement.plugins.random_fit import RandomFit

AMOUNTS = [0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0]


def compiled_place(placer, capacity, free, up, request, all_or_nothing):
    n_hosts, n = len(free), len(request)
    hosts = np.empty(n, np.int32)
    place(
        compiled_binding(placer), capacity, free, up, request, all_or_nothing, hosts,
        np.empty(n_hosts), np.empty_like(free), np.empty(R), np.empty(n_hosts, np.bool_),
        np.empty(n + 1, np.int64), message_buffer(n_hosts, R), np.empty(n_hosts),
    )  # fmt: skip
    return hosts


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(AMOUNTS), st.sampled_from(AMOUNTS), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.tuples(st.sampled_from(AMOUNTS), st.sampled_from(AMOUNTS)), max_size=12),
    st.sampled_from(["best-fit", "first-fit", "random-fit", "random-fit:0.5"]),
    st.booleans(),
    st.integers(0, 3),
)
def test_compiled_binding_places_as_the_reference(hosts, requests, name, whole, seed):
    free = np.array([h[:2] for h in hosts], np.float64)
    up = np.array([h[2] for h in hosts])
    request = np.array(sorted(requests), np.float32).reshape(-1, R)
    capacity = np.full_like(free, 8.0)
    placer, reference = build_placer(name), build_placer(name)
    for p in (placer, reference):
        if isinstance(p.plugins[0].plugin, RandomFit):
            p.plugins[0].plugin.seed = seed
    reference.compiled = False
    a_free, b_free = free.copy(), free.copy()
    a = compiled_place(placer, capacity, a_free, up, request, whole)
    b = reference.place(capacity, b_free, up, request, whole)
    assert a.tolist() == b.tolist()
    assert np.array_equal(a_free, b_free)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(0, 2**40))
def test_random_fit_scores_are_the_plugins_draws(state_seed, n_hosts, seed):
    rng = np.random.default_rng(state_seed)
    free = rng.random((n_hosts, R)) * 32
    up = rng.random(n_hosts) < 0.8
    req = tuple(float(v) for v in rng.random(R).astype(np.float32))
    out = np.empty(n_hosts)
    random_fit_scores(
        free,
        up,
        req,
        np.asarray(compiled_binding(_random(seed)).seed),
        message_buffer(n_hosts, R),
        out,
    )
    state = CycleState(free, free, up, np.array([req], np.float32))
    assert np.array_equal(out, RandomFit(seed).score(state, np.ones((1, n_hosts), bool))[0])


def test_random_fit_scores_with_one_buffer_follow_the_free_capacity():
    # the buffer resumes the last hash: a change anywhere in the state must still show
    rng = np.random.default_rng(3)
    free, up, message = rng.random((40, R)) * 32, np.ones(40, bool), message_buffer(40, R)
    seed = np.asarray(compiled_binding(_random(5)).seed)
    for host in [39, 0, 17, 17, 5]:
        free[host] -= 0.5
        up[host] = not up[host]
        req = tuple(float(v) for v in rng.random(R).astype(np.float32))
        out = np.empty(40)
        random_fit_scores(free, up, req, seed, message, out)
        state = CycleState(free, free, up, np.array([req], np.float32))
        assert np.array_equal(out, RandomFit(5).score(state, np.ones((1, 40), bool))[0])


def _random(seed):
    placer = build_placer("random-fit")
    placer.plugins[0].plugin.seed = seed
    return placer


@pytest.mark.parametrize(
    "name", ["tetris", "best-fit:1,first-fit:1", "best-fit>first-fit", "random-fit,first-fit"]
)
def test_placers_without_a_compiled_binding(name):
    assert compiled_binding(build_placer(name)) is None


def test_switching_compiled_off_drops_the_binding():
    placer = build_placer("random-fit")
    assert compiled_binding(placer).kind == RANDOM_FIT
    placer.compiled = False
    assert compiled_binding(placer) is None
