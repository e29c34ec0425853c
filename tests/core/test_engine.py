"""The engine: time order, ties in scheduling order, and waiting on a clock until stopped."""

from __future__ import annotations

import math
import threading

from reclaim.core.clock import SimClock, WallClock
from reclaim.core.engine import Engine


def recording_engine(**kw):
    seen: list[tuple[float, int, int]] = []
    handlers = {k: (lambda t, i, k=k: seen.append((t, k, i))) for k in range(3)}
    return Engine(handlers, **kw), seen


def test_events_run_in_time_then_priority_then_scheduling_order():
    engine, seen = recording_engine()
    engine.schedule(2.0, 0, 0, 7)
    engine.schedule_many([(1.0, 1, 1, 1), (1.0, 0, 2, 2), (1.0, 1, 0, 3)])
    assert engine.next_time() == 1.0 and len(engine) == 4
    engine.run(until=1.0)
    assert seen == [(1.0, 2, 2), (1.0, 1, 1), (1.0, 0, 3)]
    engine.run()
    assert seen[-1] == (2.0, 0, 7) and engine.now == 2.0
    assert engine.next_time() == math.inf


def test_a_handler_may_schedule_the_next_event():
    ticks = []

    def tick(t, i):
        ticks.append(i)
        if i < 4:
            engine.schedule(t + 10.0, 0, 0, i + 1)

    engine = Engine({0: tick})
    engine.schedule(0.0, 0, 0, 0)
    engine.run()
    assert ticks == [0, 1, 2, 3, 4] and engine.now == 40.0


def test_on_a_sim_clock_time_jumps_to_each_event():
    clock = SimClock(100.0)
    engine, seen = recording_engine(clock=clock)
    assert engine.now == 100.0
    engine.schedule_many([(160.0, 0, 0, 0), (130.0, 0, 1, 1)])
    engine.run()
    assert [t for t, _, _ in seen] == [130.0, 160.0] and clock.now() == 160.0


def test_on_the_wall_clock_it_waits_and_stops_when_told():
    stop = threading.Event()
    clock = WallClock()
    engine, seen = recording_engine(clock=clock, stop=stop)
    start = clock.now()
    engine.schedule(start + 0.05, 0, 0, 0)
    engine.schedule(start + 3600.0, 0, 1, 1)  # an hour away: the stop ends the wait
    threading.Timer(0.2, stop.set).start()
    engine.run()
    assert [k for _, k, _ in seen] == [0]
    assert 0.05 <= clock.now() - start < 5.0  # waited for the first, not for the second
    assert len(engine) == 1
