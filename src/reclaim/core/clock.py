"""Clocks: the one thing a simulated and a live run of the same loop do differently.

Both answer ``now()`` and ``sleep_until(t, wake)``; a loop written against them runs unchanged
in simulated time (tests, benchmarks, replays) and on real hosts.
"""

from __future__ import annotations

import threading
import time


class SimClock:
    """Simulated time: waiting jumps straight to the time waited for."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = float(t)

    def now(self) -> float:
        return self.t

    def sleep_until(self, t: float, wake: threading.Event) -> None:
        self.t = max(self.t, t)


class WallClock:
    """Real time, seconds since the epoch; waiting really waits."""

    def now(self) -> float:
        return time.time()

    def sleep_until(self, t: float, wake: threading.Event) -> None:
        """Wait until ``t`` or until ``wake`` is set, whichever comes first."""
        delay = t - time.time()
        if delay > 0:
            wake.wait(delay)
