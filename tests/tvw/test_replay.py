"""The replay on hand-built sequences: views, binds, waiting, departures, the recorded usage."""

from __future__ import annotations

import numpy as np
import pytest
from hand_sequences import SEQ, sequence

from reclaim.core.types import Decisions
from reclaim.errors import ReclaimError
from reclaim.tvw._kernels import background_units
from reclaim.tvw.replay import Replay


def test_current_view_sees_usage_now_and_records_every_step():
    r = Replay(SEQ, machines=2, units=4, view="current").reset()
    assert r.queue == [0, 1]
    assert r.demand([0, 1]).tolist() == [[2, 1], [1, 1]]
    r.bind(0, 0)
    r.bind(1, 0)
    assert r.free().tolist() == [[1, 2], [4, 4]]
    assert r.advance() and r.now == 1 and r.queue == [2]
    assert r.free().tolist() == [[1, 3], [4, 4]]  # workload 1 has left, 0 uses (3, 1) now
    assert r.host_usage(3)[:, 0].tolist() == [[0, 0], [3, 2], [3, 1]]
    r.bind(2, 1)
    assert not r.advance() and r.done
    res = r.result()
    assert res.usage.tolist() == [[[3, 2], [0, 0]], [[3, 1], [4, 4]], [[0, 0], [4, 4]]]
    assert res.active.tolist() == [[True, False], [True, True], [False, True]]
    assert res.host.tolist() == [0, 0, 1] and res.start.tolist() == [0, 0, 1]


def test_peak_view_reserves_peaks_and_waits_for_departures():
    r = Replay(SEQ, machines=1, units=4, view="peak").reset()
    assert r.demand([0, 1, 2]).tolist() == [[3, 1], [1, 1], [4, 4]]
    r.bind(0, 0)
    r.bind(1, 0)
    assert r.free().tolist() == [[0, 2]]
    r.advance()  # to the arrival of 2; workload 1 leaves at the same step
    assert (r.now, r.queue, r.free().tolist()) == (1, [2], [[1, 3]])
    r.advance()  # nothing fits until the next departure: straight to step 2
    assert r.now == 2 and r.free().tolist() == [[4, 4]]
    r.bind(2, 0)
    assert not r.advance()
    assert r.result().start.tolist() == [0, 0, 2]


def test_current_view_retries_every_step():
    r = Replay(SEQ, machines=1, units=4).reset()
    r.bind(0, 0)
    r.bind(1, 0)
    r.advance()
    assert r.free().tolist() == [[1, 3]]
    r.advance()
    assert r.now == 2 and r.free().tolist() == [[4, 4]]


def test_waiting_past_the_first_horizon_grows_the_record():
    seq = sequence([[[4, 1]] * 5, [[1, 4]] * 5], [0, 0])
    r = Replay(seq, machines=1, units=4, view="peak").reset()
    r.bind(0, 0)
    while r.queue and r.free()[0, 1] < 4:
        r.advance()
    assert r.now == 5
    r.bind(1, 0)
    assert not r.advance()
    usage = r.result().usage
    assert len(usage) == 10 and usage[9, 0].tolist() == [1, 4]


def test_bad_actions_and_oversized_workloads_are_refused():
    r = Replay(SEQ, machines=2, units=4).reset()
    with pytest.raises(ReclaimError, match="not waiting"):
        r.bind(2, 0)
    with pytest.raises(ReclaimError, match="no machine 5"):
        r.bind(0, 5)
    with pytest.raises(ReclaimError, match="still to place"):
        r.result()
    with pytest.raises(ReclaimError, match="peaks above"):
        Replay(SEQ, machines=2, units=3).reset()
    with pytest.raises(ReclaimError, match="view"):
        Replay(SEQ, machines=2, units=4, view="future")


def test_record_bind_kernel_is_its_numpy_reference():
    import numpy as np

    from reclaim.tvw._kernels import record_bind

    rng = np.random.default_rng(0)
    data = rng.integers(0, 5, (30, 2)).astype(np.int16)
    usage = rng.integers(0, 9, (40, 3, 2)).astype(np.int32)
    count = rng.integers(0, 3, (40, 3)).astype(np.int32)
    reserved = rng.integers(0, 9, (3, 2)).astype(np.float64)
    expect = usage.copy(), count.copy(), reserved.copy()
    now, host, lo, hi, peak = 7, 2, 4, 19, data[4:19].max(axis=0)
    expect[0][now : now + hi - lo, host] += data[lo:hi]
    expect[1][now : now + hi - lo, host] += 1
    expect[2][host] += peak
    record_bind(usage, count, reserved, now, host, data, lo, hi, peak)
    for got, want in zip((usage, count, reserved), expect, strict=True):
        assert got.tobytes() == want.tobytes()


def test_a_background_process_is_in_the_usage_but_in_no_reservation_or_count():
    quiet, noisy = (Replay(SEQ, 2, 4, "current", b).reset() for b in (0, 2))
    key = SEQ.noise_key
    steps = len(noisy._usage)
    below = np.array(
        [[[background_units(key, t, m, r, 2) for r in range(2)] for m in range(2)]
         for t in range(steps)]
    )  # fmt: skip
    assert np.array_equal(noisy._usage, below) and below.max() > 0
    assert noisy.free().tolist() == (4 - below[0]).tolist()  # the current view sees it now
    for r in (quiet, noisy):
        r.bind(0, 1)
        r.bind(1, 1)
        while r.advance():
            if r.queue:
                r.bind(r.queue[0], 0)
    loud = Replay(SEQ, 2, 4, "peak", 2).reset()
    assert loud.free().tolist() == [[4, 4], [4, 4]]  # nor does any reservation hold it
    a, b = quiet.result(), noisy.result()
    assert np.array_equal(b.usage - a.usage, below[: len(a.usage)])
    assert np.array_equal(a.active, b.active) and np.array_equal(a.host, b.host)


def test_background_units_are_uniform_keyed_and_zero_without_noise():
    draws = np.array([background_units(99, t, m, r, 3) for t in range(2000) for m in range(3)
                      for r in range(2)])  # fmt: skip
    counts = np.bincount(draws, minlength=4)
    assert len(counts) == 4 and np.all(np.abs(counts / len(draws) - 0.25) < 0.02)
    again = [background_units(99, t, 1, 0, 3) for t in range(50)]
    other = [background_units(98, t, 1, 0, 3) for t in range(50)]
    assert again == [background_units(99, t, 1, 0, 3) for t in range(50)] and again != other
    assert background_units(99, 5, 1, 0, 0) == 0


def test_a_placers_answer_is_applied_as_bind_decisions():
    r = Replay(SEQ, machines=2, units=4, view="current").reset()
    r.apply(Decisions(bind_rows=[0, 1], bind_hosts=[0, 1]))
    assert r.host_[:2].tolist() == [0, 1] and r.queue == []
    assert r.free().tolist() == [[2, 3], [3, 3]]
    with pytest.raises(ReclaimError, match="carries out bind decisions, not evict"):
        r.apply(Decisions(evict=[0]))


def test_the_peak_view_reserves_in_the_machines_host_table():
    r = Replay(SEQ, machines=1, units=4, view="peak").reset()
    r.bind(0, 0)
    assert r.hosts.allocated.tolist() == [[3, 1]] and r.hosts.axes == ("cpu", "mem")
    assert r.free().tolist() == r.hosts.room.tolist() == [[1, 3]]
