"""The event engine: a heap of (time, priority, seq, kind, idx) and nothing else.

Events carry integer indices into tables, never objects; ``seq`` breaks ties so that events of
equal time and priority run in the order they were scheduled. Domain logic lives in the handlers.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable


class Engine:
    """Pops events in time order and hands them to ``handlers[kind](time, idx)``."""

    def __init__(self, handlers: dict[int, Callable[[float, int], None]]) -> None:
        self.handlers = handlers
        self.now = 0.0
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

    def __len__(self) -> int:
        return len(self._heap)

    def run(self, until: float = float("inf")) -> None:
        """Process events up to and including time ``until``."""
        heap, handlers = self._heap, self.handlers
        while heap and heap[0][0] <= until:
            time, _, _, kind, idx = heapq.heappop(heap)
            self.now = time
            handlers[kind](time, idx)
