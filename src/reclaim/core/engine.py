"""The event engine: a heap of (time, priority, seq, kind, idx) and nothing else.

Events carry integer indices into tables, never objects; ``seq`` breaks ties so that events of
equal time and priority run in the order they were scheduled. Domain logic lives in the handlers.

Every loop of reclaim runs on it: the shaping simulator, the LAVA pool replay, the TVW replay,
the CORP slot simulator and the live agent. Without a clock, time is the events' own and the
engine never waits (simulation); with one (:mod:`reclaim.core.clock`), it waits on the clock until
each event is due, as SimPy's real-time environment does by overriding only its step, and stops
early once ``stop`` is set (the live agent on a :class:`~reclaim.core.clock.WallClock`).
"""

from __future__ import annotations

import heapq
import math
import threading
from collections.abc import Callable, Iterable


class Engine:
    """Pops events in time order and hands them to ``handlers[kind](time, idx)``."""

    def __init__(
        self,
        handlers: dict[int, Callable[[float, int], None]],
        clock=None,
        stop: threading.Event | None = None,
    ) -> None:
        self.handlers = handlers
        self.clock = clock
        self.stop = stop if stop is not None else threading.Event()
        self.now = 0.0 if clock is None else clock.now()
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0

    def schedule(self, time: float, priority: int, kind: int, idx: int) -> None:
        heapq.heappush(self._heap, (time, priority, self._seq, kind, idx))
        self._seq += 1

    def schedule_many(self, events: Iterable[tuple[float, int, int, int]]) -> None:
        """Bulk insert of (time, priority, kind, idx); cheaper than one push each."""
        for time, priority, kind, idx in events:
            self._heap.append((time, priority, self._seq, kind, idx))
            self._seq += 1
        heapq.heapify(self._heap)

    def __getstate__(self) -> dict:
        """The queue and clock, for a checkpoint; the stop flag is made anew when loaded."""
        return self.__dict__ | {"stop": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.stop = threading.Event()

    def __len__(self) -> int:
        return len(self._heap)

    def next_time(self) -> float:
        """Time of the next event (inf when none is scheduled)."""
        return self._heap[0][0] if self._heap else math.inf

    def run(self, until: float = math.inf) -> None:
        """Process events up to and including time ``until``."""
        heap, handlers = self._heap, self.handlers
        if self.clock is None:
            while heap and heap[0][0] <= until:
                time, _, _, kind, idx = heapq.heappop(heap)
                self.now = time
                handlers[kind](time, idx)
            return
        clock, stop = self.clock, self.stop
        while heap and heap[0][0] <= until and not stop.is_set():
            clock.sleep_until(heap[0][0], stop)
            if stop.is_set():
                return
            time, _, _, kind, idx = heapq.heappop(heap)
            self.now = time
            handlers[kind](time, idx)
