"""Resource axes, dtypes and status codes shared by every module."""

from __future__ import annotations

from enum import IntEnum

import numpy as np

#: Resource axes of every (N, R) array, in this order. Units: cores, GiB.
RESOURCES: tuple[str, ...] = ("cpu", "mem")
CPU, MEM = 0, 1
R = len(RESOURCES)

F32 = np.float32
F64 = np.float64
I32 = np.int32
I64 = np.int64


class Status(IntEnum):
    """Outcome of one row of a decision or the state of one component (int8 in arrays)."""

    OK = 0
    PENDING = 1
    RUNNING = 2
    DONE = 3
    KILLED = 4  # preempted by a controller, work lost
    OOM = 5  # memory usage above allocation, work lost
    UNSCHEDULABLE = 6
    QUEUED = 7  # application waiting in the scheduler queue


def _i32(values: object = ()) -> np.ndarray:
    return np.asarray(values, dtype=I32).reshape(-1)


class Decisions:
    """What a controller wants done, columnar; rows index the view's workload table.

    resize: rows (n,) int32 and their new limits (n, R) float32 (cores, GiB);
    evict: rows (m,) int32 to preempt (their work is lost).
    """

    __slots__ = ("evict", "resize_limit", "resize_rows")

    def __init__(self, resize_rows=(), resize_limit=None, evict=()) -> None:
        self.resize_rows = _i32(resize_rows)
        limit = np.zeros((0, R)) if resize_limit is None else resize_limit
        self.resize_limit = np.asarray(limit, dtype=F32).reshape(-1, R)
        self.evict = _i32(evict)
        if len(self.resize_rows) != len(self.resize_limit):
            raise ValueError("resize rows and limits differ in length")

    def __len__(self) -> int:
        return len(self.resize_rows) + len(self.evict)
