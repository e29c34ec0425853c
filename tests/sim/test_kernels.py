"""The simulator's compiled kernels against plain numpy references, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.core.tables import HostTable
from reclaim.core.types import CPU, MEM, R
from reclaim.placement import build_placer
from reclaim.sim import _kernels


def add_allocation_reference(allocated, hosts, amount, sign):
    if len(hosts) < 64:
        np.add.at(allocated, hosts, sign * amount.astype(np.float64))
        return
    for r in range(R):
        allocated[:, r] += sign * np.bincount(hosts, amount[:, r], minlength=len(allocated))


@settings(max_examples=40)
@given(st.integers(0, 200), st.sampled_from([1, -1]), st.integers(0, 2**32 - 1))
def test_add_allocation_equals_scatter_add_and_bincount(n, sign, seed):
    rng = np.random.default_rng(seed)
    allocated = rng.random((7, R)) * 30
    hosts = rng.integers(0, 7, n).astype(np.int32)
    amount = (rng.random((n, R)) * 4).astype(np.float32)
    expected = allocated.copy()
    add_allocation_reference(expected, hosts, amount, sign)
    _kernels.add_allocation(allocated, hosts, amount, sign)
    assert np.array_equal(allocated, expected)


def set_rates_reference(rows, demand_cpu, limit_cpu, t, period, remaining, rate, epoch):
    throttled = demand_cpu > limit_cpu
    new_rate = np.divide(limit_cpu, demand_cpu, out=np.ones(len(rows)), where=throttled)
    with np.errstate(divide="ignore", invalid="ignore"):
        finish = t + remaining[rows] / new_rate
    rate[rows] = new_rate
    epoch[rows] += 1
    soon = finish < (np.floor(t / period) + 1) * period
    if not soon.any():
        return []
    rows, finish = rows[soon], finish[soon]
    order = np.argsort(finish, kind="stable")
    rows, finish = rows[order], finish[order]
    times, first = np.unique(finish, return_index=True)
    return [
        (when, group, epoch[group])
        for when, group in zip(times, np.split(rows, first[1:]), strict=True)
    ]


@settings(max_examples=60)
@given(st.integers(0, 40), st.floats(0, 5000), st.integers(0, 2**32 - 1))
def test_set_rates_equals_numpy(n, t, seed):
    rng = np.random.default_rng(seed)
    rows = rng.permutation(60)[:n].astype(np.int64)
    # Few distinct values, so that ties in finish time and zero limits (never finishing) occur.
    demand_cpu = rng.choice([0.0, 0.5, 1.0, 2.0], n).astype(np.float32)
    limit_cpu = rng.choice([0.0, 0.5, 1.0, 3.0], n).astype(np.float32)
    remaining = rng.choice([0.0, 10.0, 100.0, 290.0, 1e4], 60)
    rate, epoch = np.zeros(60), rng.integers(0, 5, 60)
    rate_ref, epoch_ref = rate.copy(), epoch.copy()
    expected = set_rates_reference(
        rows, demand_cpu, limit_cpu, t, 300.0, remaining, rate_ref, epoch_ref
    )
    got_rows, got_epochs, finish, starts = _kernels.set_rates(
        rows, demand_cpu, limit_cpu, t, 300.0, remaining, rate, epoch
    )
    assert np.array_equal(rate, rate_ref) and np.array_equal(epoch, epoch_ref)
    assert len(starts) - 1 == len(expected)
    for (when, group, epochs), i, j in zip(expected, starts[:-1], starts[1:], strict=True):
        assert np.all(finish[i:j] == when)
        assert np.array_equal(got_rows[i:j], group) and np.array_equal(got_epochs[i:j], epochs)


def shape_rows(seed, n_rows=50):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 6, 8)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = (rng.random((indptr[-1], R)) * 2).astype(np.float32)
    shape = rng.integers(0, 8, n_rows)
    base, length = indptr[shape], lengths[shape].astype(np.int64)
    offset = rng.integers(0, 10, n_rows).astype(np.int64)
    start = rng.integers(0, 20, n_rows) * 300.0 + rng.choice([0.0, 0.1, 299.9], n_rows)
    request = (rng.random((n_rows, R)) * 4).astype(np.float32)
    return rng, data, base, length, offset, start, request


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1))
def test_demand_equals_numpy(seed):
    rng, data, base, length, offset, start, request = shape_rows(seed)
    rows = rng.permutation(50)[:30].astype(np.int64)
    t = 6000.0
    lag = ((t - start[rows]) // 300.0).astype(np.int64)
    expected = data[base[rows] + (offset[rows] + lag) % length[rows]] * request[rows]
    got = _kernels.demand(rows, t, 300.0, start, request, base, length, offset, data)
    assert got.dtype == np.float32 and np.array_equal(got, expected)


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1))
def test_advance_equals_numpy(seed):
    rng = np.random.default_rng(seed)
    rows = rng.permutation(40)[:25].astype(np.int64)
    remaining, since = rng.random(40) * 500, rng.random(40) * 100
    rate = rng.choice([0.0, 0.25, 1.0], 40)
    expected_remaining, expected_since = remaining.copy(), since.copy()
    done = rate[rows] * (300.0 - since[rows])
    expected_remaining[rows] = np.maximum(remaining[rows] - done, 0.0)
    expected_since[rows] = 300.0
    _kernels.advance(rows, 300.0, remaining, since, rate)
    assert np.array_equal(remaining, expected_remaining) and np.array_equal(since, expected_since)


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1))
def test_recount_equals_bincount(seed):
    rng = np.random.default_rng(seed)
    host = rng.integers(-1, 6, 80).astype(np.int32)
    rows = np.flatnonzero(host >= 0)
    limit = (rng.random((80, R)) * 4).astype(np.float32)
    used = (rng.random((80, R)) * 4).astype(np.float32)
    allocated, host_used = np.full((6, R), 7.0), np.full((6, R), 7.0)
    _kernels.recount(rows, host, limit, used, allocated, host_used)
    for r in range(R):
        assert np.array_equal(allocated[:, r], np.bincount(host[rows], limit[rows, r], minlength=6))
        assert np.array_equal(host_used[:, r], np.bincount(host[rows], used[rows, r], minlength=6))


def test_complete_finishes_live_rows_and_skips_stale_ones():
    # Rows 0-3 run components 0-3; app 0 owns components 0-1, app 1 components 2-4.
    host = np.array([0, 1, 1, 0, -1], np.int32)
    app = np.array([0, 0, 1, 1, -1], np.int32)
    component = np.array([0, 1, 2, 3, -1], np.int32)
    limit = np.array([[1, 2], [2, 1], [1, 1], [3, 3], [0, 0]], np.float32)
    row_epoch = np.array([1, 1, 2, 1, 0])
    allocated = np.array([[4.0, 5.0], [3.0, 2.0]])
    free_rows, top = np.array([4, 0, 0, 0, 0]), 1
    comp_state = np.full(5, 2, np.int8)
    app_done, app_size = np.array([0, 0]), np.array([2, 3])
    # Row 2's batch is stale (its epoch moved on); row 4 is free.
    batch, epochs = np.array([0, 1, 2, 4]), np.array([1, 1, 1, 0])
    n, top, finished = _kernels.complete(
        batch, epochs, row_epoch, host, app, component, limit, allocated, free_rows, top,
        comp_state, app_done, app_size,
    )  # fmt: skip
    assert n == 2 and top == 3 and finished.tolist() == [0]
    assert free_rows[:top].tolist() == [4, 0, 1]
    assert host.tolist() == [-1, -1, 1, 0, -1] and app.tolist() == [-1, -1, 1, 1, -1]
    assert comp_state.tolist() == [3, 3, 2, 2, 2] and app_done.tolist() == [2, 0]
    assert allocated.tolist() == [[3.0, 3.0], [1.0, 1.0]]


def elastic_stop_reference(free, smallest, first, end):
    if not np.any(np.all(free + 1e-6 >= smallest, axis=1)):
        return -1
    with np.errstate(divide="ignore", invalid="ignore"):
        most = np.floor(free.sum(0) / smallest).min()
    return end if not np.isfinite(most) else min(end, first + int(most) + 1)


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 3.0]), st.sampled_from([0.0, 1.0, 9.0])),
        min_size=1,
        max_size=5,
    ),
    st.tuples(st.sampled_from([0.0, 1.0, 2.5]), st.sampled_from([0.0, 2.0, np.inf])),
    st.integers(0, 20),
)
def test_elastic_stop_equals_numpy(free_rows, smallest, first):
    free, smallest = np.array(free_rows), np.array(smallest, np.float32)
    expected = elastic_stop_reference(free, smallest, first, first + 10)
    assert _kernels.elastic_stop(free, smallest, first, first + 10) == expected


@settings(max_examples=60)
@given(st.lists(st.integers(-1, 3), max_size=12), st.integers(0, 12))
def test_elastic_outcome_equals_numpy(where, n_returned):
    where = np.array(where, np.int32)
    n_returned = min(n_returned, len(where))
    waiting = np.concatenate([[90 + i for i in range(n_returned)], 10 + np.arange(12)])
    waiting = waiting[: len(where)].astype(np.int64)
    placed = where >= 0
    still = waiting[:n_returned][~placed[:n_returned]].tolist()
    fresh, placed_fresh = waiting[n_returned:], placed[n_returned:]
    after = -1
    if placed_fresh.any():
        last = int(np.flatnonzero(placed_fresh)[-1])
        still += fresh[:last][~placed_fresh[:last]].tolist()
        after = fresh[last] + 1
    n_placed, got_still, got_after = _kernels.elastic_outcome(waiting, where, n_returned)
    assert n_placed == placed.sum() and got_still.tolist() == still and got_after == after


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1))
def test_free_capacity_and_total_covers_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    hosts = HostTable(rng.random((9, R)) * 40)
    hosts.allocated[:] = hosts.capacity * rng.random((9, R))
    hosts.up[:] = rng.random(9) < 0.8
    free = _kernels.free_capacity(hosts.capacity, hosts.allocated, hosts.up, np.empty((9, R)))
    assert np.array_equal(free, hosts.free)
    need = (free.sum(0) * rng.choice([0.5, 1.0, 2.0], R)).astype(np.float32)
    assert _kernels.total_covers(free, need) == (not np.any(need > free.sum(0) + 1e-6))


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(st.integers(0, 16), st.integers(0, 64), st.booleans()), min_size=1, max_size=6
    ),
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1, 2, 3]), st.sampled_from([0, 1, 2, 8])),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["best-fit", "first-fit"]),
)
def test_may_fit_never_rules_out_a_batch_the_placer_places(hosts, requests, name):
    free = np.array([h[:2] for h in hosts], np.float64)
    up = np.array([h[2] for h in hosts])
    request = np.array(sorted(requests), np.float32)
    for compiled in (True, False):
        placer = build_placer(name)
        placer.compiled = compiled
        where = placer.place(np.full_like(free, 64.0), free.copy(), up, request, True)
        if where[0] >= 0:
            assert _kernels.may_fit(free, up, request)


def test_start_fills_rows_and_completes_the_fast_ones():
    request = np.array([[1, 2], [2, 2], [4, 1]], np.float32)
    work = np.array([100.0, 1000.0, 50.0], np.float32)
    data = np.array([[0.5, 0.5], [2.0, 1.0]], np.float32)  # one shape of two samples
    n_rows = 4
    wt = {
        "component": np.full(n_rows, -1, np.int32),
        "app": np.full(n_rows, -1, np.int32),
        "host": np.full(n_rows, -1, np.int32),
        "request": np.zeros((n_rows, R), np.float32),
        "limit": np.zeros((n_rows, R), np.float32),
        "core": np.zeros(n_rows, bool),
        "start": np.zeros(n_rows),
    }
    remaining, since, rate = np.zeros(n_rows), np.zeros(n_rows), np.ones(n_rows)
    base, length, offset = (np.zeros(n_rows, np.int64) for _ in range(3))
    epoch = np.zeros(n_rows, np.int64)
    comp_state, allocated = np.full(3, 1, np.int8), np.zeros((2, R))
    free_rows = np.array([3, 2, 1, 0])
    comps, where = np.array([0, 1, 2]), np.array([1, -1, 0], np.int32)  # component 1 not placed
    workload = _kernels.WorkloadColumns(
        request, work, np.array([True, False, False]), np.zeros(3, np.int32),
        np.array([0, 0, 1], np.int32), np.array([0, 2]), data,
    )  # fmt: skip
    columns = _kernels.RowColumns(*wt.values(), remaining, since, rate, epoch, base, length, offset)
    top, still, after, rows, epochs, finish, starts = _kernels.start(
        free_rows, 4, comps, where, 0, 7, 600.0, workload, columns, comp_state, allocated, 300.0
    )
    # Rows are popped from the top of the stack: component 0 in row 1, component 2 in row 0.
    assert top == 2 and still.tolist() == [1] and after == 3
    assert wt["component"].tolist() == [2, 0, -1, -1] and wt["host"].tolist() == [0, 1, -1, -1]
    assert wt["app"].tolist() == [7, 7, -1, -1] and wt["core"].tolist() == [
        False,
        True,
        False,
        False,
    ]
    assert np.array_equal(wt["limit"][[1, 0]], request[[0, 2]])
    assert offset.tolist() == [1, 0, 0, 0] and comp_state.tolist() == [2, 1, 2]
    assert allocated.tolist() == [[4.0, 1.0], [1.0, 2.0]]
    # Component 2 starts on its second sample (demand 8 cores of 4): half speed, 50 s of work take
    # 100 s; component 0 runs at full speed. Both end at 700, before the tick at 900: one group.
    assert rate[[1, 0]].tolist() == [1.0, 0.5]
    assert rows.tolist() == [1, 0] and finish.tolist() == [700.0, 700.0]
    assert starts.tolist() == [0, 2] and epochs.tolist() == [1, 1]


def test_periods_since_is_floor_division_even_next_to_whole_periods():
    rng = np.random.default_rng(5)
    exact = np.arange(0, 5000) * 300.0
    xs = np.concatenate(
        [
            rng.random(20000) * 1e7,
            exact,
            np.nextafter(exact, np.inf),
            np.nextafter(exact, 0),
            np.cumsum(np.full(5000, 300.0)) - 0.1 + 0.1,  # accumulated tick times
        ]
    )
    for period in (300.0, 0.1, 7.3):
        got = [_kernels.periods_since(x, period) for x in xs]
        assert got == [int(x // period) for x in xs]


@settings(max_examples=60)
@given(st.integers(0, 3000), st.integers(0, 2**32 - 1))
def test_stable_argsort_is_numpy_mergesort(n, seed):
    rng = np.random.default_rng(seed)
    # Keys as finish times: a period's worth above a large t, with many ties (and zeros).
    keys = 1e6 + np.round(rng.random(n) * 300, int(rng.integers(0, 3)))
    keys[rng.random(n) < 0.1] = 0.0
    assert np.array_equal(_kernels.stable_argsort(keys), np.argsort(keys, kind="mergesort"))


def tick_state(seed, n_rows=60, n_hosts=5, n_apps=7):
    rng = np.random.default_rng(seed)
    host = rng.integers(-1, n_hosts, n_rows).astype(np.int32)
    return {
        "rows": np.flatnonzero(host >= 0),
        "host": host,
        "app": rng.integers(0, n_apps, n_rows).astype(np.int32),
        "request": (rng.random((n_rows, R)) * 4).astype(np.float32),
        "limit": (rng.random((n_rows, R)) * 4).astype(np.float32),
        "used": np.zeros((n_rows, R), np.float32),
        "allocated": np.full((n_hosts, R), 9.0),
        "host_used": np.full((n_hosts, R), 9.0),
        "app_requested": rng.random((n_apps, R)),
        "app_allocated": rng.random((n_apps, R)),
        "app_used": rng.random((n_apps, R)),
        "remaining": rng.choice([0.0, 10.0, 250.0, 1e4], n_rows),
        "rate": np.ones(n_rows),
        "epoch": rng.integers(0, 3, n_rows),
    }, rng


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_observe_does_what_the_kernels_it_replaces_do(seed, throttle):
    s, rng = tick_state(seed)
    rows = s["rows"]
    demand = (rng.random((len(rows), R)) * 4).astype(np.float32)
    ref = {k: v.copy() for k, v in s.items()}
    ref["used"][rows] = demand
    # without throttling CPU is used as demanded and progress runs at full speed
    cpu_cap = ref["limit"][rows, CPU] if throttle else demand[:, CPU]
    ref["used"][rows, CPU] = np.minimum(demand[:, CPU], cpu_cap)
    _kernels.recount(
        rows, ref["host"], ref["limit"], ref["used"], ref["allocated"], ref["host_used"]
    )
    _kernels.accumulate_by_app(
        rows, ref["app"], ref["request"], ref["limit"], ref["used"], 300.0,
        ref["app_requested"], ref["app_allocated"], ref["app_used"],
    )  # fmt: skip
    expected = _kernels.set_rates(
        rows, demand[:, CPU], cpu_cap, 900.0, 300.0,
        ref["remaining"], ref["rate"], ref["epoch"],
    )  # fmt: skip
    totals = np.empty(2 * R)
    got = _kernels.observe(
        rows, demand, 900.0, 300.0, s["host"], s["app"], s["request"], s["limit"], s["used"],
        s["allocated"], s["host_used"], s["app_requested"], s["app_allocated"], s["app_used"],
        s["remaining"], s["rate"], s["epoch"], totals, throttle,
    )  # fmt: skip
    if not throttle:
        assert np.all(s["rate"][rows] == 1.0)
    for name in s:
        assert np.array_equal(s[name], ref[name]), name
    for a, b in zip(got, expected, strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(
        totals, np.concatenate([ref["allocated"].sum(0), ref["host_used"].sum(0)])
    )


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1))
def test_over_limit_is_the_numpy_memory_test(seed):
    rng, data, base, length, offset, start, request = shape_rows(seed)
    rows = rng.permutation(50)[:30].astype(np.int64)
    limit = request * rng.choice([0.5, 1.0, 2.0], (50, 1)).astype(np.float32)
    demand = _kernels.demand(rows, 6000.0, 300.0, start, request, base, length, offset, data)
    over = _kernels.over_limit(rows, demand, limit)
    assert np.array_equal(over, demand[:, MEM] > limit[rows, MEM] * (1 + 1e-6))


def row_table(n_rows, n_apps):
    return {
        "component": np.full(n_rows, -1, np.int32),
        "app": np.full(n_rows, -1, np.int32),
        "host": np.full(n_rows, -1, np.int32),
        "request": np.zeros((n_rows, R), np.float32),
        "limit": np.zeros((n_rows, R), np.float32),
        "core": np.zeros(n_rows, bool),
        "start": np.zeros(n_rows),
        "remaining": np.zeros(n_rows),
        "since": np.zeros(n_rows),
        "base": np.zeros(n_rows, np.int64),
        "length": np.zeros(n_rows, np.int64),
        "offset": np.zeros(n_rows, np.int64),
        "rate": np.ones(n_rows),
        "epoch": np.zeros(n_rows, np.int64),
        "allocated": np.zeros((3, R)),
        "free_rows": np.arange(n_rows - 1, -1, -1),
        "comp_state": np.zeros(n_apps, np.int8),
    }


def marks(n_hosts):
    """Scratch for the hosts whose allocation a kernel changes: flags, list, loop state."""
    return (
        np.zeros(n_hosts, np.bool_),
        np.empty(n_hosts, np.int64),
        np.zeros(_kernels.I_SIZE, np.int64),
    )


@settings(max_examples=40)
@given(st.integers(1, 120), st.integers(0, 2**32 - 1))
def test_start_into_is_start_then_one_event_per_group(m, seed):
    # m components (the first few returned), some placed, started in rows of a 150-row table;
    # > 64 of them sums the allocation per host first, as add_allocation does.
    rng = np.random.default_rng(seed)
    n_comps, n_rows = 130, 150
    request = (rng.choice([0.5, 1.0, 2.0], (n_comps, R))).astype(np.float32)
    work = rng.choice([10.0, 100.0, 700.0, 5000.0], n_comps).astype(np.float32)
    core = rng.random(n_comps) < 0.3
    shape = rng.integers(0, 2, n_comps).astype(np.int32)
    offset = rng.integers(0, 3, n_comps).astype(np.int32)
    indptr = np.array([0, 3, 7])
    data = rng.choice([0.5, 1.0, 2.0], (7, R)).astype(np.float32)
    comps = rng.permutation(n_comps)[:m].astype(np.int64)
    where = rng.choice([-1, 0, 1, 2], m).astype(np.int32)
    n_ret = int(rng.integers(0, m + 1))
    t = 600.0 + float(rng.choice([0.0, 17.5]))
    wl = (request, work, core, shape, offset, indptr, data)
    ref, got = row_table(n_rows, n_comps), row_table(n_rows, n_comps)

    def row_args(s):
        return (
            s["component"], s["app"], s["host"], s["request"], s["limit"], s["core"],
            s["start"], s["remaining"], s["since"], s["base"], s["length"], s["offset"],
            s["comp_state"], s["allocated"], 300.0, s["rate"], s["epoch"],
        )  # fmt: skip

    columns = _kernels.RowColumns(
        *(ref[k] for k in ("component", "app", "host", "request", "limit", "core", "start")),
        *(ref[k] for k in ("remaining", "since", "rate", "epoch", "base", "length", "offset")),
    )
    top, still, after, rows, epochs, finish, starts = _kernels.start(
        ref["free_rows"], n_rows, comps, where, n_ret, 4, t, _kernels.WorkloadColumns(*wl),
        columns, ref["comp_state"], ref["allocated"], 300.0,
    )  # fmt: skip
    heap = _kernels.CompletionHeap(8)
    heap.reserve(m)
    still_out = np.empty(m, np.int64)
    keys, order = np.empty((2, m)), np.empty((2, m), np.int64)
    got_top, n_still, got_after = _kernels._start_into(
        got["free_rows"], n_rows, comps, where, n_ret, 4, t, *wl, *row_args(got),
        heap.time, heap.seq, heap.off, heap.len, heap.rows, heap.epoch, heap.state,
        still_out, np.empty((3, R)), keys[0], order[0], keys[1], order[1], *marks(3),
    )  # fmt: skip
    assert (got_top, got_after) == (top, after)
    assert still_out[:n_still].tolist() == still.tolist()
    for name in ref:
        assert np.array_equal(got[name], ref[name]), name
    events = []  # the heap's events, earliest first, against set_rates' groups in order
    while len(heap):
        off, ln = _kernels._heap_pop(heap.time, heap.seq, heap.off, heap.len, heap.state)
        events.append((heap.rows[off : off + ln].tolist(), heap.epoch[off : off + ln].tolist()))
    groups = [
        (rows[i:j].tolist(), epochs[i:j].tolist())
        for i, j in zip(starts[:-1], starts[1:], strict=True)
    ]
    assert events == groups


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1))
def test_complete_into_is_complete_and_the_application_bookkeeping(seed):
    rng = np.random.default_rng(seed)
    n_rows, n_apps = 90, 6
    host = rng.integers(-1, 3, n_rows).astype(np.int32)
    app = np.where(host >= 0, rng.integers(0, n_apps, n_rows), -1).astype(np.int32)
    component = np.arange(n_rows, dtype=np.int32)
    limit = (rng.random((n_rows, R)) * 3).astype(np.float32)
    row_epoch = rng.integers(0, 3, n_rows)
    batch = rng.permutation(n_rows)[: rng.integers(0, n_rows)]
    epoch = np.where(rng.random(len(batch)) < 0.8, row_epoch[batch], -1)  # some stale
    app_size = np.bincount(app[app >= 0], minlength=n_apps) + rng.integers(0, 2, n_apps)
    done = rng.integers(0, 1, n_apps)

    def state():
        return [
            host.copy(), app.copy(), component, limit, np.full((3, R), 50.0),
            np.arange(n_rows), n_rows - len(batch) - 1, np.zeros(n_rows, np.int8),
            done.copy(), app_size,
        ]  # fmt: skip

    ref = state()
    n, top, finished = _kernels.complete(batch.copy(), epoch, row_epoch, *ref)
    got = state()
    app_state, app_end = np.full(n_apps, 1, np.int8), np.full(n_apps, np.nan)
    dirty, dirty_list, ist = marks(3)
    n2, top2, k = _kernels._complete_into(
        batch.copy(), epoch, row_epoch, *got, app_state, app_end, 42.0, np.empty((3, R)),
        dirty, dirty_list, ist,
    )  # fmt: skip
    assert (n2, top2, k) == (n, top, len(finished))
    for a, b in zip(got, ref, strict=True):
        assert np.array_equal(a, b)
    assert np.flatnonzero(app_state == 2).tolist() == sorted(finished.tolist())
    assert np.array_equal(np.flatnonzero(app_end == 42.0), np.sort(finished))
    # the hosts of the rows finished are marked for the next free-capacity refresh
    released = np.unique(host[batch[(host[batch] >= 0) & (row_epoch[batch] == epoch)]])
    assert sorted(dirty_list[: ist[_kernels.I_NDIRTY]].tolist()) == released.tolist()
    assert np.flatnonzero(dirty).tolist() == released.tolist()
