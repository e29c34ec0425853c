"""The compiled selection of one host against a plain-Python reference, NaN and infinities included."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.placement._kernels import FIT_TOLERANCE, fill_run


def select_reference(free, up, req, raw):
    """Feasible host of highest raw score; NaN ranks last; ties to the lower index."""
    feasible = [
        h
        for h in range(len(free))
        if up[h] and all(free[h, r] + FIT_TOLERANCE >= req[r] for r in range(len(req)))
    ]
    if not feasible:
        return -1
    return min(feasible, key=lambda h: (math.isnan(raw[h]), -raw[h] if raw[h] == raw[h] else 0, h))


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 4),
            st.booleans(),
            st.sampled_from([0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan]),
        ),
        min_size=1,
        max_size=12,
    ),
    st.tuples(st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([0.0, 1.0, 3.0])),
)
def test_one_copy_takes_the_host_the_reference_selects(hosts, req):
    free = np.array([h[:2] for h in hosts], np.float64)
    up = np.array([h[2] for h in hosts])
    raw = np.array([h[3] for h in hosts])
    out = np.empty(1, np.int32)
    expected = select_reference(free, up, req, raw)
    placed = fill_run(free, up, req, raw, out)
    assert (out[0] if placed else -1) == expected
    # And a run of one goes where the first of a longer run goes.
    longer = np.empty(3, np.int32)
    if fill_run(np.array([h[:2] for h in hosts], np.float64), up, req, raw, longer):
        assert longer[0] == expected


def fill_reference(free, up, req, raw, count):
    """Fill hosts one at a time in :func:`select_reference`'s order, each with as many copies as
    fit, until ``count`` are placed: what fill_run promises, scan or sort."""
    free, hosts, taken = free.copy(), [], set()
    order = sorted(
        (h for h in range(len(free)) if up[h] and all(free[h] + FIT_TOLERANCE >= req)),
        key=lambda h: (math.isnan(raw[h]), -raw[h] if raw[h] == raw[h] else 0, h),
    )
    for h in order:
        if len(hosts) == count:
            break
        most = count - len(hosts)
        for r in range(len(req)):
            if req[r] > 0:
                most = min(most, int(np.floor((free[h, r] + FIT_TOLERANCE) / req[r])))
        hosts += [h] * most
        free[h] -= most * np.asarray(req)
        taken.add(h)
    return hosts, free


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 6),
            st.integers(0, 6),
            st.booleans(),
            st.sampled_from([0.0, 1.0, -1.0, 2.5, 3.0, np.inf, -np.inf, np.nan]),
        ),
        min_size=1,
        max_size=40,
    ),
    st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.sampled_from([0.0, 1.0, 3.0])),
    st.integers(2, 60),
)
def test_a_run_fills_hosts_in_the_reference_order_however_many(hosts, req, count):
    # Runs that fill more than a few hosts switch from scans to one sort: same hosts, same order.
    free = np.array([h[:2] for h in hosts], np.float64)
    up = np.array([h[2] for h in hosts])
    raw = np.array([h[3] for h in hosts])
    expected, expected_free = fill_reference(free, up, np.array(req), raw, count)
    out = np.full(count, -1, np.int32)
    placed = fill_run(free, up, req, raw, out)
    assert out[:placed].tolist() == expected
    assert np.array_equal(free, expected_free)
