"""Resource axes, dtypes and status codes shared by every module."""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from reclaim.errors import ReclaimError

#: Resource axes of every (N, R) array, in this order. Units: cores, GiB.
RESOURCES: tuple[str, ...] = ("cpu", "mem")
CPU, MEM = 0, 1
R = len(RESOURCES)
#: The axes of pools with accelerators (the LAVA replay): cores, GiB, GPUs.
RESOURCES_GPU: tuple[str, ...] = (*RESOURCES, "gpu")

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


def _empty(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    out = np.empty(shape, dtype)
    out.flags.writeable = False
    return out


# Columns a decision leaves out share these read-only empty arrays. Speed trick: a simulator
# tick builds one or two Decisions, and converting every absent column cost 3 us a decision
# (bench_simulate.py, 35,000 ticks).
_NO_ROWS = _empty(0, I32)
_NO_LIMITS = _empty((0, R), F32)
_NO_AMOUNTS = _empty((0, R), F64)


def _i32(values: object = ()) -> np.ndarray:
    if isinstance(values, tuple) and not values:
        return _NO_ROWS
    return np.asarray(values, dtype=I32).reshape(-1)


def _rows_and_hosts(what: str, rows: object, hosts: object) -> tuple[np.ndarray, np.ndarray]:
    rows = _i32(rows)
    if np.ndim(hosts) == 0:  # one host for every row
        hosts = np.full(len(rows), hosts, I32)
    hosts = _i32(hosts)
    if len(rows) != len(hosts):
        raise ValueError(f"{what} rows and hosts differ in length")
    return rows, hosts


class Decisions:
    """What a controller wants done, columnar; rows index the workload table of the state it read.

    resize: rows (n,) int32 and their new limits (n, R) float32 (cores, GiB);
    evict: rows (m,) int32 to preempt (their work is lost);
    bind: rows (b,) int32 of waiting workloads to start on hosts (b,) int32;
    migrate: rows (k,) int32 to move live to hosts (k,) int32, -1 where the placer is to choose
    (LAVA's defragmentation names the VMs to move off the hosts it drains, not where they go);
    lend: rows (l,) int32 and the amounts (l, A) float64 of their allocation each offers to
    others for the coming window (CORP's provisioners; float64 like the ledgers they feed).

    A single host given as a scalar goes with every row of bind or migrate.
    """

    __slots__ = (
        "bind_hosts",
        "bind_rows",
        "evict",
        "lend_amount",
        "lend_rows",
        "migrate_hosts",
        "migrate_rows",
        "resize_limit",
        "resize_rows",
    )

    def __init__(
        self,
        resize_rows=(),
        resize_limit=None,
        evict=(),
        *,
        bind_rows=(),
        bind_hosts=(),
        migrate_rows=(),
        migrate_hosts=(),
        lend_rows=(),
        lend_amount=None,
    ) -> None:
        self.resize_rows = _i32(resize_rows)
        if resize_limit is None:
            self.resize_limit = _NO_LIMITS
        else:
            self.resize_limit = np.asarray(resize_limit, dtype=F32).reshape(-1, R)
        self.evict = _i32(evict)
        if len(self.resize_rows) != len(self.resize_limit):
            raise ValueError("resize rows and limits differ in length")
        self.bind_rows, self.bind_hosts = _rows_and_hosts("bind", bind_rows, bind_hosts)
        self.migrate_rows, self.migrate_hosts = _rows_and_hosts(
            "migrate", migrate_rows, migrate_hosts
        )
        self.lend_rows = _i32(lend_rows)
        self.lend_amount = _NO_AMOUNTS if lend_amount is None else np.asarray(lend_amount, F64)
        if self.lend_amount.ndim != 2 or len(self.lend_rows) != len(self.lend_amount):
            raise ValueError("lend rows and amounts (rows, resources) differ in length")

    def require(self, kinds: tuple[str, ...], who: str) -> None:
        """Raise a ReclaimError if rows of a kind other than ``kinds`` (of "resize", "evict",
        "bind", "migrate", "lend") are present: ``who`` cannot carry them out, and a decision
        dropped without a word would look carried out."""
        present = {
            "resize": self.resize_rows,
            "evict": self.evict,
            "bind": self.bind_rows,
            "migrate": self.migrate_rows,
            "lend": self.lend_rows,
        }
        extra = [kind for kind, rows in present.items() if len(rows) and kind not in kinds]
        if extra:
            raise ReclaimError(
                f"{who} carries out {' and '.join(kinds)} decisions, not {', '.join(extra)}"
            )

    def __len__(self) -> int:
        return (
            len(self.resize_rows)
            + len(self.evict)
            + len(self.bind_rows)
            + len(self.migrate_rows)
            + len(self.lend_rows)
        )
